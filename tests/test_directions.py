"""Every direction is one case: a comparison or a bisection's verdict of an increase or a decrease,
of a lower- or a higher-is-better metric, with any interval shape the tests make (two-sided,
one-sided either way, an open end, exact), is rendered as text, JSON, a headline and an exit
code without error, and its words agree with its sign.

The property-based tests draw those products (hypothesis); the real bisections of each direction
are in tests/test_bisect_directions.py.
"""

from __future__ import annotations

import json
import math
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutbench import stats, verdict
from layoutbench.verdict import record
from layoutbench.verdict import text as vtext

NOISE = stats.noise_split({f"random:{i}": [100.0 + i * 0.3, 100.1 + i * 0.3] for i in range(4)})
ME = 0.005


@st.composite
def comparisons(draw):
    """A comparison as the decisions make them: an estimate either way, a metric either way, an
    interval two-sided, one-sided in either direction, exact (zero width) or not known, at a level
    of its own, with the verdict the interval gives (the band test's or the estimate's)."""
    est = draw(st.sampled_from([0.0, 1e-4, -1e-4, 0.003, -0.003, 0.0069, -0.0069, 0.03, -0.03, 0.2, -0.2])
               | st.floats(-0.5, 0.5, allow_nan=False))
    hib = draw(st.booleans())
    shape = draw(st.sampled_from(["two", "up", "down", "exact", "unknown"]))
    half = draw(st.floats(1e-4, 0.05)) if shape not in ("exact", "unknown") else 0.0
    lo, hi = est - half, est + half
    sided = 0
    if shape == "up":
        hi, sided = math.inf, 1
    elif shape == "down":
        lo, sided = -math.inf, -1
    if shape == "unknown":
        lo = hi = math.nan
    band = draw(st.booleans())
    from layoutbench.decide.model import band_verdict
    if math.isnan(lo):
        v, reason = "n/a", "too little data"
    else:
        v, reason = band_verdict(lo, hi, est, ME, hib, band)
    paired = draw(st.booleans())
    conf = draw(st.sampled_from([0.95, 0.9696036449, 0.99]))
    return stats.Comparison(
        ratio=math.exp(est), ci_low=math.exp(lo), ci_high=math.exp(hi), confidence=conf,
        p_value=draw(st.sampled_from([2.5e-6, 0.001, 0.04, 0.3, 1.0])), verdict=v, higher_is_better=hib,
        paired=paired, n_layouts_a=4, n_layouts_b=draw(st.sampled_from([4, 6])), n_runs_a=8, n_runs_b=8,
        center_a=100.0, center_b=100.0 * math.exp(est), layout_noise=0.004, explained_by_layout=0.01,
        per_layout_ratios={"random:1": math.exp(est)}, df=7.0, noise_a=NOISE, noise_b=NOISE, min_effect=ME,
        method="" if paired else "pooled-variance group-sequential test (7 df), 4 vs 6 layouts", reason=reason,
        n_pairs=4 if paired else 0, log_ratio=est, se=0.002, sided=sided)


def _words_agree(c: stats.Comparison, text: str) -> None:
    """The words of ``text`` (a comparison's describe or claim) say the direction its numbers show."""
    up = c.ratio >= 1.0
    word = "slower" if up != c.higher_is_better else "faster"
    other = "faster" if word == "slower" else "slower"
    if c.verdict in ("slower", "faster"):
        assert c.verdict == word, (c.verdict, c.ratio, c.higher_is_better)
        assert word in text and other not in text, text
        factor = float(re.search(r"B is ([0-9.]+)", text).group(1)) if text.startswith("B is") else None
        if factor is not None:
            assert factor >= 1.0 - 5e-4, text  # a claimed change is printed as a factor >= 1, either way
    elif _shown(c):
        assert c.shown == _shown(c)
        shown_word = "slower" if (c.shown > 0) != c.higher_is_better else "faster"
        assert f"shown {shown_word}" in text and "not shown to exceed" in text and "no difference" not in text, text
    else:
        assert c.shown == 0 and "slower" not in text and "faster" not in text, text


def _shown(c: stats.Comparison) -> int:
    """The direction an interval shows, read here apart from the code under test: +1 above 1, -1
    below 1 (strictly: an exact interval at 1 shows nothing), 0 otherwise or unknown."""
    if c.verdict == "n/a" or math.isnan(c.ci_low) or math.isnan(c.ci_high):
        return 0
    return 1 if c.ci_low > 1 else -1 if c.ci_high < 1 else 0


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comparisons())
def test_a_comparison_of_any_direction_and_shape_is_described_with_words_that_agree(c):
    line = c.describe()
    _words_agree(c, line)
    _words_agree(c, c.claim())
    assert "nan" not in vtext.interval(c.ci_low, c.ci_high)
    if c.sided > 0 and c.verdict != "n/a":
        assert vtext.interval(c.ci_low, c.ci_high).endswith("…∞")
    if c.sided < 0 and c.verdict != "n/a":
        assert vtext.interval(c.ci_low, c.ci_high).startswith("0…")
    if c.verdict != "n/a":  # the test the p and the interval belong to, said
        assert ("pooled over" in line) != c.paired and ("one-sided" in line) == bool(c.sided), line
    rec = record.Effect.of(c).to_dict()
    json.dumps(rec, allow_nan=True)  # a record of plain values
    assert rec["claim"] == c.claim()
    assert rec["shown"] == ("beyond" if c.verdict in ("slower", "faster") else "change" if _shown(c) else "none")


# -- a bisection's verdict over every status, direction and number of culprits ----------------------

G, B = "a" * 40, "b" * 40
C1, C2 = "c" * 40, "d" * 40


def _record(status: str, n_culprits: int, ends: stats.Comparison, eff: stats.Comparison, single: bool) -> dict:
    """A bisection's record (bisect.run's) of ``status`` with ``n_culprits`` named steps."""
    e = record.Effect.of(eff).to_dict()
    culprits = [C1, C2][:n_culprits]
    rec = {"kernel": "k", "repo": "/r", "metric": "m", "unit": "", "target": "cachegrind", "targets": ["cachegrind"],
           "rounds": 3, "probes": 3, "args": [], "good": G, "bad": B, "commits": 8,
           "settings": {"confidence": 0.95, "min_effect": ME, "thorough": False, "first_only": False},
           "endpoints": {**record.Effect.of(ends).to_dict(), "status": "differs", "look_level": 0.05},
           "cost": {"builds": 5, "failed_builds": 0, "images": 20, "runs": 40, "compiled_now": 5, "ran_now": 40},
           "budget": {}, "runs_per_layout": None, "costs": {}, "status": status, "range": [], "skipped": [],
           "several": n_culprits > 1, "share": 0.6 if n_culprits > 1 else 1.0, "residual": [], "sides": [],
           "bound": "a bound", "steps": []}
    if status in ("noise", "not-shown"):
        rec["endpoints"]["status"] = status
        rec["endpoints"]["shows"] = 0.01
        rec["message"] = f"{status}: no commit is blamed"
        return rec
    if status == "range":
        rec["range"] = [C1, C2]
        rec["skipped"] = [{"commit": C1, "why": "build", "note": "does not build"}]
    for i, c in enumerate(culprits):  # the first step is the status's own; any later one was found
        first = "range" if status == "range" else "uncertain" if status == "uncertain" else "found"
        rec["steps"].append({"status": first if i == 0 else "found", "last_good": G,
                             "culprit": None if i == 0 and status == "range" else c, "subject": f"step {i}",
                             "share": 0.5, "range": [C1] if i == 0 and status == "range" else [], "effect": e})
    if status in ("found", "budget", "uncertain") and culprits:
        rec.update(culprit=C1 if status != "uncertain" else None, candidate=C1, culprit_subject="step 0",
                   last_good=G, effect={**e, "fresh_layouts": 4, "step_ratio": eff.ratio})
    if status == "budget" and not culprits:
        rec.update(budget_note="not decided at this budget", candidates=[{"commit": C1, "probability": 0.7}])
    if single:
        rec["single_layout"] = {"culprit": C2, "agrees": False, "builds": 4, "runs": 4, "note": ""}
    rec["message"] = vtext.summary_line(record.read(rec))
    return rec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["found", "noise", "not-shown", "uncertain", "budget", "range"]), st.integers(0, 2),
       comparisons(), comparisons(), st.booleans())
def test_a_verdict_of_any_status_direction_and_culprits_renders_four_ways_that_agree(status, n, ends, eff, single):
    if status in ("found", "uncertain") and n == 0:  # each names a commit (confirmed, or not)
        n = 1
    rec = _record(status, n, ends, eff, single)
    v = verdict.Verdict.of_bisection(record.read(rec))
    text = v.text()
    head = v.headline()
    data = json.loads(json.dumps(v.to_json(), default=str))
    code = v.exit_code()
    assert data["verdict_exit_code"] == data["exit_code"] == code and data["verdict_status"] == v.status and data["headline"] == head
    assert code in (verdict.OK, verdict.CHANGE, verdict.UNDECIDED, verdict.BUDGET)
    # the exit code is the status's: a confirmed culprit is 1, whatever the direction of its change
    named = [s["culprit"] for s in rec["steps"] if s["status"] == "found"]
    if named:  # a confirmed first bad commit, of a change either way: 1, and it is named
        assert code == verdict.CHANGE and named[0][:12] in head and all(c[:12] in text for c in named)
    elif status in ("noise", "not-shown"):
        assert code == verdict.OK and "no commit is blamed" in text
    elif status in ("uncertain", "range"):
        assert code == verdict.UNDECIDED
    elif status == "budget":
        assert code == verdict.BUDGET
    if "effect" in rec:  # the effect line's words are its comparison's
        assert (rec["effect"]["claim"] or rec["effect"]["verdict"]) in text
        if eff.verdict in ("slower", "faster"):
            assert eff.verdict in rec["message"]
        elif eff.shown and status == "uncertain":
            assert "not one beyond the" in text and "did not show the change" not in text


# -- an unexpected error is never a verdict -----------------------------------------------------------

FAULT = """
import sys
from layoutbench import layout
class Broken(dict):
    def items(self):
        return 1 / 0
layout.REGISTRY = Broken()
from layoutbench.cli import main
main(args=sys.argv[1:], prog_name="layoutbench")
"""


def test_an_unexpected_exception_is_one_line_exit_2_and_its_traceback_in_a_file(tmp_path):
    """A fault of layoutbench itself (here: a ZeroDivisionError where the layouts are listed) ends
    with one line naming it and the file that holds its traceback in the work folder, exit 2 --
    never Python's exit 1, which --exit-code documents as "a change shown"."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "LAYOUTBENCH_DIR": str(tmp_path / "work")}
    p = subprocess.run([sys.executable, "-c", FAULT, "layouts"], capture_output=True, text=True, env=env, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("layoutbench: internal error: ZeroDivisionError: division by zero (its traceback is in ")
    path = re.search(r"its traceback is in (\S+)\)", lines[0]).group(1)
    assert path.startswith(str(tmp_path / "work" / "errors"))
    kept = open(path).read()
    assert "Traceback (most recent call last)" in kept and "in items\nZeroDivisionError" in kept and "layouts" in kept.splitlines()[0]
    assert "the same command resumes" in lines[0]


# -- the p printed is the deciding test's -------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.floats(-0.05, 0.05), st.floats(1e-4, 0.02), st.sampled_from([3, 6, 20, 2000]),
       st.sampled_from([(4,), (4, 6, 9), (4, 6, 9, 14, 21)]), st.sampled_from([0.05, 0.0304, 0.01]),
       st.sampled_from([-1, 0, 1]), st.sampled_from([0.0, 0.005]))
def test_the_repeated_p_is_at_most_the_level_exactly_when_the_interval_excludes_the_null(est, se, df, ns, level,
                                                                                          sign, margin):
    """ZTest.gs_p (the p printed beside a decision's interval) and ZTest.interval are one test:
    p <= level exactly when the interval at that level lies beyond the null (0, or the band
    +-margin; one-sided in the direction ``sign``), up to the simulation's resolution."""
    from layoutbench.decide.model import ZTest

    t = ZTest(est, se, df, 8, 8)
    lo, hi = t.interval(ns, level, sign)
    excludes = (lo > margin) if sign > 0 else (hi < -margin) if sign < 0 else (lo > margin or hi < -margin)
    p = t.gs_p(ns, sign, margin)
    near = abs(p - level) < 2e-3  # the boundary and p come from the same 400,000 simulated paths
    assert near or (p <= level) == excludes, (p, level, lo, hi)


# -- a two-commit compare: an exact interval inside the band rules the change out ----------------------

def _two_commit_report(step: float, min_effect: float, hib: bool = False) -> dict:
    """compare --commits' record of two commits whose every layout differs by exactly ``step`` (a
    deterministic count: the per-layout ratios are identical), compared by the real stats.compare."""
    from layoutbench import compare

    a = {f"random:{i}": [1000.0 + 37 * i] for i in range(6)}
    b = {k: [v[0] * (1 + step)] for k, v in a.items()}
    c = stats.compare(a, b, hib, paired=True, min_effect=min_effect)
    row = {"metric": "cg_ir", "unit": "instructions", "better": "higher" if hib else "lower", "layouts_paired": 6,
           "effect": {**c.to_dict(), "claim": c.claim()}, "verdict": compare.row_verdict(c),
           "layout_noise": c.layout_noise, "single": None}
    return {"kernel": "k", "a": G, "b": B, "target": "cachegrind", "host": "h", "layouts": 6, "runs": 1,
            "mode": "rerun", "config": "c", "min_effect": min_effect, "metrics": [row], "warnings": []}


@given(st.sampled_from([0.0093, -0.0093, 0.003, -0.003, 0.02, -0.02]), st.sampled_from([0.005, 0.01]),
       st.booleans())
@settings(max_examples=60, deadline=None)
def test_an_exact_interval_inside_the_minimum_effect_rules_the_change_out(step, min_effect, hib):
    """On a deterministic count, B/A = 1.0093 exactly: with a 1% minimum effect the change is ruled
    out (never "none ruled out"), with 0.5% it is a change in its direction; text, JSON and exit
    code say the same."""
    from layoutbench import compare

    rep = _two_commit_report(step, min_effect, hib)
    v = verdict.Verdict.of_compare(rep)
    text = compare.commits_text_of(rep)
    row = rep["metrics"][0]
    if abs(step) < min_effect:
        assert row["verdict"] == compare.WITHIN and v.status == "within" and v.exit_code() == verdict.OK
        assert "is ruled out" in text and "none ruled out" not in text and not v.not_shown
    else:
        word = "slower" if (step > 0) != hib else "faster"
        assert row["verdict"] == word and v.status == word
        assert v.exit_code() == (verdict.CHANGE if word == "slower" else verdict.OK)
    assert json.loads(json.dumps(v.to_json()))["verdict_status"] == v.status
