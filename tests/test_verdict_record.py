"""A bisection's verdict is one typed record (layoutbench.verdict.record), and every way it is shown
is a function of it: for every status, with one and with two culprits, for an increase and a
decrease, with and without the single-layout shadow, the terminal text, the ``--json`` record (read
back into the same record), the report's markers (history.bisect_verdicts: what the plots draw and
the history's rows print), ``bisect log`` and the exit code say the same thing.  The records are
built here from the dataclasses; the expectations are written here apart from the code under test."""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from contextlib import closing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutbench import bisect, history, verdict
from layoutbench.history.sweeping import Series
from layoutbench.store import Store
from layoutbench.verdict import record as R
from layoutbench.verdict.text import summary_line

G, B = "a" * 40, "b" * 40
C1, C2, C3 = "c" * 40, "d" * 40, "e" * 40
COMMITS = [G, "1" * 40, C1, "2" * 40, C2, C3, B]
ME = 0.005

#: status -> the exit code of the table, written here apart from verdict.Verdict.exit_code
CODES = {"found": verdict.CHANGE, "budget-after": verdict.CHANGE, "not-shown": verdict.OK, "noise": verdict.OK,
         "uncertain": verdict.UNDECIDED, "range": verdict.UNDECIDED, "budget": verdict.BUDGET}


def effect(ratio: float, **more) -> R.Effect:
    lo, hi = (ratio * 0.995, ratio * 1.005)
    word = "slower" if ratio > 1 else "faster"
    cls = R.Confirmation if more else R.Effect
    return cls(ratio=ratio, ci_low=lo, ci_high=hi, confidence=0.95, verdict=word, layouts=6, layouts_b=6,
               noise="layout noise 0.3%", min_effect=ME, explained_by_layout=0.01, describe=f"B/A = {ratio:.4f}",
               claim=f"{word} by at least 0.50%", shown="beyond", **more)


def build(status: str, n: int, sign: int, shadow: str | None) -> R.BisectionRecord:
    """A record of ``status`` with ``n`` culprits (the second a later step), each step of its own size
    in the direction ``sign``; ``shadow``: the commit a single-layout bisection blames ("" none)."""
    sizes = [1 + sign * 0.031, 1 + sign * 0.0093]
    ends = R.Endpoints(**{**effect(sizes[0] * sizes[1]).to_dict(), "status": "differs", "look_level": 0.05})
    head = dict(kernel="k", metric="cg_cost", target="cachegrind", targets=["cachegrind"], good=G, bad=B,
                commits=len(COMMITS) - 1, settings={"confidence": 0.95, "min_effect": ME}, endpoints=ends,
                cost=R.Cost(builds=5, images=20, runs=40, compiled_now=5, ran_now=40), bound="a bound")
    if status in ("noise", "not-shown"):
        ends = R.Endpoints(**{**effect(1.0005).to_dict(), "status": status, "look_level": 0.05, "shows": 0.012})
        rec = R.BisectionRecord(**{**head, "endpoints": ends}, status=status, message=f"{status}: no commit is blamed")
    else:
        culprits = [C1, C2][:n]
        first = {"found": "found", "budget-after": "found", "uncertain": "uncertain", "range": "range",
                 "budget": "uncertain"}[status]
        steps = [R.Step(status=first if i == 0 else "found", last_good=G, culprit=None if first == "range" and i == 0
                        else c, subject=f"step {i}", share=0.5, effect=effect(sizes[i]),
                        range=[C1, C2] if first == "range" and i == 0 else [])
                 for i, c in enumerate(culprits)]
        rec = R.BisectionRecord(
            **head, status="budget" if status.startswith("budget") else status, steps=steps, several=n > 1,
            share=0.7, residual=[], sides=[R.Side(good=C2, bad=B, status="not-shown", ratio=1.001, ci_low=0.99,
                                                  ci_high=1.01, confidence=0.95, layouts=6, shows=0.011)],
            culprit=C1 if first == "found" else None, candidate=C1 if first != "range" else None,
            culprit_subject="step 0" if first != "range" else None, last_good=G,
            effect=effect(sizes[0], fresh_layouts=6, step_ratio=sizes[0]) if first != "range" else None,
            range=[C1, C2] if first == "range" else [],
            skipped=[{"commit": C2, "why": "build", "note": "does not build"}] if first == "range" else [],
            budget_note="not decided at this budget" if status.startswith("budget") else None,
            candidates=[R.Candidate(C1, 0.7), R.Candidate(C3, 0.3)] if status.startswith("budget") else None)
    if shadow is not None:
        rec = dataclasses.replace(rec, single_layout=R.Shadow(culprit=shadow or None, builds=4, runs=4, note="",
                                                              agrees=agrees(status, n, shadow or None)))
    return dataclasses.replace(rec, message=rec.message or summary_line(rec))


def named(status: str, n: int) -> list[str]:
    """The confirmed culprits of a record ``build`` makes: written here from the status."""
    if status in ("found", "budget-after"):
        return [C1, C2][:n]
    if status in ("uncertain", "budget") and n == 2:
        return [C2]  # a later step confirmed beside an unconfirmed first one
    return []


def agrees(status: str, n: int, shadow: str | None) -> bool:
    """Whether the single-layout bisection agrees, as the runner decides it: it blames the culprit (or the
    candidate where none is confirmed) or any confirmed step; nothing where nothing is blamed; a commit of the range."""
    if status in ("noise", "not-shown"):
        return shadow is None
    if status == "range":
        return shadow in (C1, C2)
    return shadow == C1 or shadow in named(status, n)


def markers(rec: R.BisectionRecord) -> list[dict]:
    """What the report draws and the history's rows print for ``rec`` kept in a store."""
    with tempfile.TemporaryDirectory() as d, closing(Store(Path(d) / "s.sqlite")) as store:
        b = bisect.Bisection(store, bisect.Settings(kernel="k", metric="cg_cost"),
                             [{"verb": "start", "commit": "", "good": G, "bad": B}], rec)
        bisect.keep(store, b)
        series = Series("k", "", "", G, B, COMMITS, "cachegrind", "h", "img", "run", "", [], 1)
        return [m.to_dict() for m in history.bisect_verdicts(store, series)]


def log_end(rec: R.BisectionRecord) -> list[str]:
    with tempfile.TemporaryDirectory() as d, closing(Store(Path(d) / "s.sqlite")) as store:
        b = bisect.Bisection(store, bisect.Settings(kernel="k"), [], rec)
        return [ln for ln in b.text().splitlines() if ln.startswith("# ") and "bisect log" not in ln]


CASES = st.one_of(
    st.tuples(st.sampled_from(["found", "budget-after", "uncertain", "budget"]), st.integers(1, 2)),
    st.tuples(st.sampled_from(["noise", "not-shown", "range"]), st.just(1)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES, st.sampled_from([1, -1]), st.sampled_from([None, "", C1, C2, C3]))
def test_text_json_report_log_and_exit_code_of_one_record_agree(case, sign, shadow):
    status, n = case
    rec = build(status, n, sign, shadow)
    v = verdict.Verdict.of_bisection(rec)
    blamed = named(status, n)
    text, code = v.text(), verdict.CHANGE if blamed else CODES[status]
    # the exit code, and the JSON's, are the status's (a confirmed culprit, even one step of several, is 1
    # in either direction)
    assert v.exit_code() == code
    data = json.loads(json.dumps(v.to_json(exits=True), default=str))
    assert data["verdict_exit_code"] == data["exit_code"] == code and data["headline"] == v.headline()
    assert data["culprits"] == v.culprits == blamed
    # the JSON reads back into the same record, and writes the same JSON again
    assert R.read(json.loads(json.dumps(rec.to_dict()))) == rec
    assert R.read(rec.to_dict()).to_dict() == rec.to_dict()
    # the text names every culprit, each with its own size in its direction
    for i, c in enumerate(blamed):
        size = rec.step_effect(c).ratio
        assert (size > 1) == (sign > 0)
        assert c[:12] in text and c[:12] in v.headline() and f"x{size:.4f}" in text
    if not blamed and status in ("noise", "not-shown"):
        assert "no commit is blamed" in text and code == verdict.OK
    # bisect log: its closing lines name each confirmed culprit, and only those
    end = log_end(rec)
    firsts = [ln for ln in end if ln.startswith("# first bad commit")]
    assert [ln.split("[")[1][:40] for ln in firsts] == blamed, end
    # the report's markers and the history's rows: one verdict marker per culprit, each with its own size
    ms = markers(rec)
    mine = [m for m in ms if m["kind"] == "verdict" and m["commit"]]
    assert [m["commit"] for m in mine] == blamed
    for m in mine:
        assert math.isclose(m["effect"]["ratio"], rec.step_effect(m["commit"]).ratio)
        assert f"x{m['effect']['ratio']:.4f}" in m["label"] and m["headline"] == v.headline()
    if not blamed:  # nothing blamed: one verdict line without a commit, the headline's
        (line,) = [m for m in ms if m["kind"] == "verdict"]
        assert line["commit"] is None and line["text"].endswith(v.headline())
    shown = [m for m in ms if m["kind"] == "shadow"]
    assert [m["commit"] for m in shown] == ([shadow] if shadow else [])
    for m in shown:  # agreeing with layoutbench's verdict: one of its culprits, or (none) the one it points at
        assert m["agrees"] == (shadow in blamed or (not blamed and agrees(status, n, shadow)))
        assert ("layoutbench does not" in m["text"]) == (not m["agrees"])


def test_a_record_written_by_another_version_reads_back_and_writes_its_json_as_it_was():
    """A key this version does not know is kept beside the record and written again; a key a verdict
    does not have (no effect where nothing was confirmed) is left out of its JSON, not written as null."""
    rec = build("not-shown", 1, 1, None)
    d = rec.to_dict()
    assert {"effect", "steps", "candidate", "code", "single_layout", "candidates"}.isdisjoint(d)
    assert {"status", "culprit", "range", "endpoints", "cost", "message", "settings"} <= set(d)
    assert d["culprit"] is None and d["range"] == [] and d["endpoints"]["shows"] == 0.012
    found = build("found", 2, -1, C3).to_dict()
    assert {"effect", "steps", "candidate", "culprit_subject", "single_layout"} <= set(found)
    assert found["single_layout"]["culprit"] == C3 and "culprit_subject" not in found["single_layout"]
    later = {**found, "a_later_key": {"x": 1}, "single_layout": {**found["single_layout"], "seconds": 3}}
    back = R.read(later)
    assert back.to_dict() == later and back.extra == {"a_later_key": {"x": 1}}
    assert back.single_layout.extra == {"seconds": 3} and back.steps[1].effect.ratio < 1


def test_a_stored_verdict_that_does_not_read_is_not_reused_nor_shown(tmp_path):
    """A finished verdict stored in another shape (here its cost a string): the bisection holds no
    verdict (it decides again from its log and the store) and the report shows none of it."""
    with closing(Store(tmp_path / "s.sqlite")) as store:
        start = [{"verb": "start", "commit": "", "good": G, "bad": B}]
        b = bisect.Bisection(store, bisect.Settings(kernel="k"), start, build("found", 1, 1, None))
        b.save()
        bisect.keep(store, b)
        assert bisect.Bisection.load(store, b.key).result == b.result and len(bisect.kept(store)) == 1
        bad = {**b.result.to_dict(), "cost": "12 runs"}
        store.set_state(b.key, {"settings": b.s.to_dict(), "log": start, "result": bad})
        store.set_state(bisect.kept_key(b), {"settings": b.s.to_dict(), "result": bad, "key": b.key})
        assert bisect.Bisection.load(store, b.key).result is None
        assert bisect.kept(store) == []


def test_a_side_test_stored_with_its_level_only_prints_its_interval_at_one_minus_that_level():
    """A side test's record may carry the level its test spent and no confidence: its interval is then
    the one at 1 - level (what the 'beside' line and the levels line print)."""
    side = R.Side.from_dict({"good": "g" * 40, "bad": "b" * 40, "status": "not-shown", "ratio": 1.001,
                             "ci_low": 0.99, "ci_high": 1.01, "layouts": 4, "level": 0.0125})
    assert side.confidence is None and side.conf == 0.9875
    assert R.Side.from_dict({**side.to_dict(), "confidence": 0.9}).conf == 0.9  # a stated confidence wins


def test_the_lines_a_budget_a_residual_and_a_shadow_without_culprit_print():
    """What is left when the budget ends (every other candidate with its probability), a change beside
    a step that was not located (both ends by their 12-digit names) and a single-layout bisection that
    names nothing (its note in parentheses): each line is whole."""
    from layoutbench.verdict import text

    a, b, c, d = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
    v = R.BisectionRecord(status="budget", culprit=a, candidates=[R.Candidate(commit=a, probability=0.9),
                                                                  R.Candidate(commit=b, probability=0.6),
                                                                  R.Candidate(commit=c, probability=0.4)])
    assert text.budget_after(v) == (f"the budget ended while another step was searched: among {b[:12]} (60%), "
                                    f"{c[:12]} (40%)")
    r = R.BisectionRecord(status="found", culprit=a, several=True,
                          residual=[R.Residual(good=c, bad=d, ratio=1.02, unlocated=True)])
    assert f"  another change between {c[:12]} and {d[:12]} (x1.0200), not located" in text.several_lines(r)
    s = R.BisectionRecord(status="found", culprit=a, single_layout=R.Shadow(note="the endpoints do not differ"))
    assert any("no culprit (the endpoints do not differ)" in ln for ln in text.shadow_lines(s)), text.shadow_lines(s)
