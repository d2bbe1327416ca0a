"""One verdict, rendered four ways: the terminal text, --json, the report and the exit code of a
bisection agree for every status (found, several, not-shown, noise, uncertain, range of skipped
commits, budget); the exit-code table; --min-effect in percent everywhere; the small verbs.

One real bisection (a layout-only commit, then a 3% regression, cachegrind) and a history sweep of
the same range fill a real store.  Each status is then the stored verdict of that bisection (its
record rewritten as the engine writes that status), printed again by the real command from the
store -- nothing is measured again -- and drawn by the real report."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing

import pytest

import _chromium
from conftest import lb, require, script
from layoutbench import bisect, verdict
from layoutbench.store import Store

make_history = script("kernels/minikernel/make_history.py").make_history
ARGS = "iterations=300"


@pytest.fixture(scope="module")
def world(tmp_path_factory, workdir):
    d = tmp_path_factory.mktemp("verdict")
    m = make_history(d / "repo", 2, seed=11, regression_at=2, regression_pct=3.0, layout_only=[1])
    store = d / "r.sqlite"
    common = ["--repo", m["repo"], "--target", "cachegrind", "--args", ARGS, "--store", str(store)]
    v = json.loads(lb("bisect", "minikernel", f"{m['good']}..{m['bad']}", *common, "--runs", "2", "--json").stdout)
    lb("history", "minikernel", f"{m['good']}..{m['bad']}", *common, "--layouts", "sorted,random:2", "--runs", "1")
    return {"m": m, "store": store, "v": v, "common": common, "dir": d}


def c(w, i):
    return w["m"]["commits"][i]["sha"]


def variants(w) -> dict[str, tuple[dict, int, str]]:
    """status → (the record as the engine writes it, the exit code of the table, the verdict line)."""
    v, c1, c2 = w["v"], c(w, 1), c(w, 2)
    culprit, subj = v["culprit"], v["culprit_subject"]
    none = {"culprit": None, "effect": None, "steps": [], "code": None, "range": [], "several": False}
    return {
        "found": (v, verdict.CHANGE, f"verdict: first bad commit {culprit}"),
        "several": ({**v, "several": True, "residual": [{"good": c1, "bad": c2, "ratio": 1.01}]}, verdict.CHANGE,
                    f"verdict: first bad commit {culprit}"),
        "not-shown": ({**v, **none, "status": "not-shown", "message": "no change of at least 0.5% shown"},
                      verdict.OK, "verdict: no change shown; no commit is blamed (and none is cleared)"),
        "noise": ({**v, **none, "status": "noise", "message": "within layout noise"}, verdict.OK,
                  "verdict: within layout noise (an equivalence test passed); no commit is blamed"),
        "uncertain": ({**v, "status": "uncertain", "culprit": None, "candidate": c2,
                       "steps": [{**st, "status": "uncertain"} for st in v["steps"]]}, verdict.UNDECIDED,
                      f"verdict: uncertain: the bisection points at {c2}"),
        "range": ({**v, **none, "status": "range", "range": [c1, c2],
                   "skipped": [{"commit": c1, "why": "build", "note": "does not build"}]}, verdict.UNDECIDED,
                  "verdict: the first bad commit is one of these 2 (the others could not be judged):"),
        "budget": ({**v, **none, "status": "budget", "candidate": None,
                    "candidates": [{"commit": c2, "probability": 0.7}, {"commit": c1, "probability": 0.3}],
                    "budget_note": f"not decided at this budget: the step is among {c2[:12]} (70%), {c1[:12]} (30%)"},
                   verdict.BUDGET, f"verdict: not decided at this budget: the step is among {c2[:12]} (70%)"),
        "budget-after-culprit": ({**v, "status": "budget", "candidates": [{"commit": culprit, "probability": 1.0}],
                                  "budget_note": f"not decided at this budget: the step is among {culprit[:12]} (100%)"},
                                 verdict.CHANGE, f"verdict: first bad commit {culprit}"),
    } | {"_subject": (subj, 0, "")}


def _shadowed(record: dict) -> dict:
    """The record with its single-layout shadow's agreement as bisect.run sets it for its status."""
    sl = record["single_layout"]
    st, said = record["status"], sl["culprit"]
    if st in ("noise", "not-shown"):
        agrees = said is None
    elif st == "range":
        agrees = said in record["range"]
    else:
        ours = record.get("culprit") or record.get("candidate") or max(
            record.get("candidates") or [{"commit": None, "probability": 0}], key=lambda c: c["probability"])["commit"]
        agrees = said == ours
    return {**record, "single_layout": {**sl, "agrees": agrees}}


def restate(w, record: dict) -> None:
    """Make ``record`` the finished verdict of the stored bisection (and the one kept for the report)."""
    with closing(Store(w["store"])) as store:
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", w["m"]["repo"], None))
        b.result = {**_shadowed(record), "settings": b.s.to_dict()}
        b.save()
        bisect.keep(store, b)


def test_every_status_reads_the_same_in_text_json_report_and_exit_code(world):
    w = world
    assert w["v"]["status"] == "found" and w["v"]["culprit"] == w["m"]["regression"], w["v"]["message"]
    runs = sqlite3.connect(w["store"]).execute("SELECT count(*) FROM runs").fetchone()[0]
    cases = variants(w)
    cases.pop("_subject")
    expect_status = {"budget-after-culprit": "budget"}
    for status, (record, code, line) in cases.items():
        restate(w, record)
        base = ["bisect", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"])]
        p = lb(*base, "--exit-code", check=False)
        assert p.returncode == code, (status, p.returncode, p.stderr)
        text = p.stdout.splitlines()
        assert line in text or any(ln.startswith(line) for ln in text), (status, text)
        j = json.loads(lb(*base, "--json").stdout)  # without --exit-code: 0 whenever a verdict is printed
        assert j["verdict_status"] == expect_status.get(status, status) and j["verdict_exit_code"] == code, (status, j)
        assert j["exit_code"] == 0, (status, j)  # the process's own code: it exited 0 without --exit-code
        v = verdict.Verdict.of_bisection(j)
        assert j["headline"] == v.headline()
        assert j["culprits"] == ([record["culprit"]] if record.get("culprit") else [])
        # the report: layoutbench's verdict line is the headline; the single-layout answer is apart
        site = w["dir"] / f"site-{status}"
        lb("report", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"]), "-o", str(site))
        index = (site / "index.html").read_text()
        mine = re.findall(r'<li class="bisect-verdict" data-kind="verdict" data-status="([^"]+)"[^>]*>.*?'
                          r'<span class="verdict-text">([^<]*)</span>', index, re.S)
        assert len(mine) == 1, (status, mine)
        assert mine[0][0] == j["verdict_status"] and mine[0][1].endswith(": " + j["headline"].replace("'", "&#39;")), \
            (status, mine, j["headline"])
        svg = (site / "plots" / "cg_cost.svg").read_text()
        red = set(re.findall(r'<g class="bisect" data-commit="([0-9a-f]+)" data-kind="verdict">', svg))
        assert red == set(j["culprits"]), (status, red)
        shadow = j["single_layout"]["culprit"]
        assert f'<g class="bisect-shadow" data-commit="{shadow}" data-kind="shadow">' in svg
        assert 'class="bisect-shadow" data-kind="shadow"' in index and "naive, not a verdict:" in index
        # the history's summary says the same
        summary = lb("history", "minikernel", "--repo", w["m"]["repo"], "--summary", "--store",
                     str(w["store"])).stdout
        assert f": {j['headline']}" in summary and "naive: a naive single-layout bisection" in summary, summary
    # printing a finished verdict again measured nothing
    assert sqlite3.connect(w["store"]).execute("SELECT count(*) FROM runs").fetchone()[0] == runs


def test_the_budget_verdict_names_its_culprit_once_and_the_shadow_agrees(world):
    w = world
    record, _, _ = variants(w)["budget-after-culprit"]
    restate(w, record)
    t = lb("bisect", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"])).stdout
    assert "not decided" not in t and "among" not in t and "DIFFERS" not in t, t
    assert t.count(f"first bad commit {record['culprit']}") == 1
    # a verdict that blames nobody is not "contradicted" by the single layout: it would blame what we do not
    restate(w, variants(w)["not-shown"][0])  # (its shadow blames a commit: agrees False, as the engine sets it)
    t = lb("bisect", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"])).stdout
    assert "single-layout bisection (default link, 1 run per probe, as asv find) would blame what this bisection " \
           "does not: it blames" in t, t


def test_the_report_keeps_every_bisection_by_range_and_metric_and_shows_it_in_chromium(world, tmp_path):
    w = world
    restate(w, w["v"])
    # another metric of the same range: started again ("replacing" the state), both verdicts kept
    other = json.loads(lb("bisect", "minikernel", f"{w['m']['good']}..{w['m']['bad']}", *w["common"], "--runs", "2",
                          "--metric", "cg_ir", "--no-shadow", "--json").stdout)
    assert other["metric"] == "cg_ir" and other["status"] == "found"
    with closing(Store(w["store"])) as store:
        kept = {k for k, _ in bisect.kept(store)}
    assert len(kept) == 2 and any(k.endswith(":cg_ir") for k in kept) and any(k.endswith(":cg_cost") for k in kept)
    site = tmp_path / "site"
    lb("report", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"]), "-o", str(site))
    index = (site / "index.html").read_text()
    assert index.count('<li class="bisect-verdict" data-kind="verdict"') == 2
    assert 'data-metric="cg_ir"' in index and 'data-metric="cg_cost"' in index
    # each plot draws the verdict of its own metric
    assert f'<g class="bisect" data-commit="{other["culprit"]}" data-kind="verdict">' in \
        (site / "plots" / "cg_ir.svg").read_text()
    exe = _chromium.find()
    if exe is None:
        require("chromium is not installed")
    b = _chromium.Browser(exe, tmp_path / "profile")
    try:
        r = b.load((site / "index.html").as_uri())
        assert r["errors"] == []
        lines = b.eval("[...document.querySelectorAll('#bisect li.bisect-verdict')].map(li => li.innerText.trim())")
        heads = sorted(f"layoutbench bisect {w['m']['good'][:12]}..{w['m']['bad'][:12]}: "
                       + verdict.Verdict.of_bisection(x).headline() for x in (w["v"], other))
        assert sorted(ln.split(" ", 1)[1].rsplit(" (", 1)[0] for ln in lines) == heads, lines
        naive = b.eval("[...document.querySelectorAll('#bisect li.bisect-shadow')].map(li => li.innerText.trim())")
        assert len(naive) == 1 and naive[0].startswith("naive, not a verdict:"), naive
        label = b.eval("[...document.querySelectorAll('svg[data-metric=\"cg_cost\"] g.bisect text')]"
                       ".map(t => t.textContent)")
        # a lone culprit's label carries its own step size
        e = w["v"]["effect"]["ratio"]
        assert label == [f"layoutbench: first bad, x{e:.4f}"], label
    finally:
        b.close()


def test_the_report_and_the_summary_say_what_the_tests_could_not_see_as_the_text_does(world, tmp_path):
    """The stored verdict with a side test that showed no change (24 layouts a side, a step of 0.91%
    or more shown 9 times in 10) and one that showed an equivalence: the report's verdict block
    and the history's summary print the one "not ruled out" line the terminal text prints, after
    that bisection's verdict line; nothing for the equivalence.  (Another bisection kept in the
    store, of another metric, may add lines of its own.)"""
    w = world
    c1, c2 = c(w, 1), c(w, 2)
    side = {"good": w["m"]["good"], "bad": c1, "status": "not-shown", "ratio": 1.0021, "ci_low": 0.9912,
            "ci_high": 1.0131, "confidence": 0.9696, "layouts": 24, "level": 0.0304, "cap": 64, "futile": False,
            "reach": 0.0031, "shows": 0.00912}
    flat = {**side, "good": c1, "bad": c2, "status": "noise", "shows": None}
    restate(w, {**w["v"], "sides": [side, flat]})
    base = ["bisect", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"])]
    text = [ln for ln in lb(*base).stdout.splitlines() if ln.startswith("not ruled out:")]
    assert text == [f"not ruled out: a step below 0.91% in {w['m']['good'][:12]}..{c1[:12]} (the smallest this side "
                    "test, stopped at 24 layouts a side, shows 9 times in 10 at this noise)"], text
    assert [u["below"] for u in json.loads(lb(*base, "--json").stdout)["not_ruled_out"]] == [0.00912]
    site = tmp_path / "site"
    lb("report", "minikernel", "--repo", w["m"]["repo"], "--store", str(w["store"]), "-o", str(site))
    index = (site / "index.html").read_text()
    shown = re.findall(r'<li class="bisect-unseen" data-kind="unseen" data-range="([^"]+)" data-metric="cg_cost">'
                       r'([^<]*)</li>', index)
    span = f"{w['m']['good'][:12]}..{w['m']['bad'][:12]}"
    assert (span, text[0]) in shown and not [u for _, u in shown if c1[:12] in u and c2[:12] in u], shown
    # after that bisection's verdict line
    assert index.index(text[0]) > index.index('<li class="bisect-verdict" data-kind="verdict"')
    summary = lb("history", "minikernel", "--repo", w["m"]["repo"], "--summary", "--store", str(w["store"])).stdout
    assert text[0] in [ln.strip() for ln in summary.splitlines()], summary


def test_the_exit_code_table_is_in_help_readme_and_docs():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for args in (["--help"], ["bisect", "run", "--help"], ["compare", "--help"], ["judge", "--help"]):
        h = lb(*args).stdout
        assert "Exit codes" in h and all(re.search(rf"^\s+{code}\s", h, re.M) for code, _ in verdict.EXIT_TABLE), args
    for doc in (root / "README.md", root / "docs" / "guide" / "reading-output.md"):
        t = doc.read_text()
        rows = [ln for ln in t.splitlines() if re.match(r"\| \d+ \| ", ln)]
        assert rows == [f"| {code} | {what} |" for code, what in verdict.EXIT_TABLE], doc
    # every code a signal ends a command with is a row of its own (a closed terminal or ssh session: 129)
    assert {128 + s for s in (1, 2, 15)} <= {code for code, _ in verdict.EXIT_TABLE}


def test_min_effect_is_a_percent_everywhere_and_a_unit_mistake_is_one_line(world, tmp_path):
    w = world
    st = ["--store", str(tmp_path / "s.sqlite")]
    for cmd in (["bisect", "minikernel", "A..B"], ["judge", "minikernel"], ["compare", "minikernel"],
                ["history", "minikernel", "--summary"], ["report", "minikernel", "-o", str(tmp_path / "o")]):
        p = lb(*cmd, "--min-effect", "50", *st, check=False)
        assert p.returncode in (2, 128) and p.stderr.strip().splitlines() == [
            "layoutbench: error: --min-effect '50' is refused: it is a percent, so this asks for a change of 50% "
            "or more; give e.g. 0.5 for 0.5% (below 50)"], (cmd, p.stderr)
    # 2% and "2" are the same setting: the bisection's log prints it with its sign, replay reads it back
    with closing(Store(tmp_path / "r.sqlite")) as store:
        from layoutbench import profile
        from layoutbench.commands import Percent
        from layoutbench.commands.bisecting import BisectChoice, bisect_settings
        pct = Percent(positive=True)  # the option's type: a percent on the command line, a fraction after it
        assert pct.convert("2%", None, None) == pytest.approx(0.02) == pct.convert("2", None, None)
        s = bisect_settings("minikernel", BisectChoice(repo=w["m"]["repo"], min_effect=pct.convert("2%", None, None)))
        assert s.min_effect == pytest.approx(0.02)
        b = bisect.start(store, profile.load("minikernel"), s, w["m"]["bad"], w["m"]["good"])
        line = b.text().splitlines()[1]
        assert "--min-effect 2% " in line + " "
        assert bisect.replay(store, line, profile.load).s.min_effect == pytest.approx(0.02)


def test_the_verbs_take_the_kernel_as_elsewhere_and_refuse_a_three_dot_range(world):
    w = world
    st = ["--store", str(w["store"])]
    log = lb("bisect", "log", "minikernel", "--repo", w["m"]["repo"], *st).stdout
    assert log.startswith("# layoutbench bisect log: minikernel")
    assert lb("bisect", "log", "--kernel", "minikernel", "--repo", w["m"]["repo"], *st).stdout == log
    p = lb("bisect", "minikernel", f"{w['m']['good']}...{w['m']['bad']}", "--repo", w["m"]["repo"], *st, check=False)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        f"layoutbench: error: range '{w['m']['good']}...{w['m']['bad']}': A...B (git's symmetric difference) has no "
        "single direction to bisect or sweep; give GOOD..BAD with two dots"], p.stderr
    # --layouts: a count, or compare's NAME:COUNT of one seeded layout; a list is one line
    p = lb("bisect", "minikernel", f"{w['m']['good']}..{w['m']['bad']}", "--layouts", "default,sorted", *st, check=False)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "layoutbench: error: --layouts 'default,sorted': a bisection measures K layouts of one seeded layout per "
        "probe; give a count (--layouts 8) or NAME:K of one of random, padded, shuffled (--layouts random:8), not a "
        "list"], p.stderr
    from layoutbench.commands.bisecting import BisectChoice, bisect_settings
    s = bisect_settings("minikernel", BisectChoice(layouts="shuffled:6"))
    assert (s.layout, s.layouts) == ("shuffled", 6)


def test_fixed_layouts_on_a_deterministic_target_compare_exactly_and_say_so(workdir, tmp_path):
    st = ["--store", str(tmp_path / "c.sqlite")]
    args = ["compare", "minikernel", "--target", "cachegrind", "--layouts", "default,aligned,random:2", "--runs", "1",
            "--args", ARGS, "--metric", "cg_ir", *st]
    j = json.loads(lb(*args, "--json").stdout)
    rows = {r["layout"]: r for r in j["metrics"][0]["rows"]}
    med = {k: r["summary"]["median"] for k, r in rows.items()}
    why = "the cachegrind target is deterministic"
    ratio = med["aligned"] / med["default"]
    assert rows["aligned"]["exact"] == {"ratio": ratio, "min": ratio, "max": ratio, "layouts": 1, "why": why}
    # two random layouts against the default: each layout's ratio is a fact, their geometric mean is shown
    per = sorted(v[0] / med["default"] for v in rows["random"]["values"].values())
    ex = rows["random"]["exact"]
    assert (ex["min"], ex["max"], ex["layouts"]) == (per[0], per[1], 2) and ex["ratio"] == pytest.approx(
        (per[0] * per[1]) ** 0.5, rel=1e-12)
    t = lb(*args).stdout
    line = next(ln for ln in t.splitlines() if ln.startswith("aligned"))
    assert f"{med['aligned'] / med['default']:.3f}  exact " in line + " ", t
    line = next(ln for ln in t.splitlines() if ln.startswith("random"))
    assert f"{ex['ratio']:.3f}  exact, per layout {per[0]:.3f} … {per[1]:.3f} (2 layouts)" in line, t
    assert f"  exact: {why}: a layout's one value is its value, no interval to draw" in t.splitlines(), t
    assert "n/a (1 sample)" not in t and "ratio of geometric means ± CI" in t, t


def test_a_target_is_deterministic_by_its_kind_or_by_identical_repeated_runs():
    from layoutbench.measure import deterministic

    same = {"default": {"default": [5.0, 5.0]}, "aligned": {"aligned": [7.0, 7.0, 7.0]}}
    assert deterministic("local", "t", same) == "every layout's repeated runs are identical"
    assert deterministic("local", "t", {**same, "sorted": {"sorted": [5.0, 5.1]}}) is None
    assert deterministic("local", "t", {"default": {"default": [5.0]}}) is None  # one run shows nothing
    assert deterministic("qemu-icache", "ic_cost", {}) == "the qemu-icache target is deterministic"
    assert deterministic("qemu-icache", "boot_ms", {"default": {"default": [1.0]}}) is None  # a timing


def test_judge_names_the_working_tree_by_its_head_commit(world):
    w = world
    p = lb("judge", "minikernel", "--repo", w["m"]["repo"], "--good", w["m"]["good"], "--bad", w["m"]["bad"],
           "--target", "cachegrind", "--args", ARGS, "--store", str(w["store"]), check=False)
    assert p.returncode == verdict.CHANGE, (p.stdout, p.stderr)  # the working tree is BAD's tree
    assert p.stdout.startswith(f"{w['m']['bad'][:12]} (the working tree at HEAD): "), p.stdout
    assert "worktree" not in p.stdout


@pytest.mark.parametrize("status, extra, code, culprits", [
    ("found", {"culprit": "c" * 40, "steps": [{"status": "found", "culprit": "c" * 40}]}, verdict.CHANGE, ["c" * 40]),
    ("found", {"culprit": "c" * 40, "several": True}, verdict.CHANGE, ["c" * 40]),
    ("not-shown", {}, verdict.OK, []),
    ("noise", {}, verdict.OK, []),
    ("uncertain", {"candidate": "d" * 40}, verdict.UNDECIDED, []),
    ("range", {"range": ["d" * 40, "e" * 40]}, verdict.UNDECIDED, []),
    ("budget", {"candidates": [{"commit": "d" * 40, "probability": 0.6}]}, verdict.BUDGET, []),
    ("budget", {"culprit": "c" * 40}, verdict.CHANGE, ["c" * 40]),
    ("plan", {}, verdict.OK, []),
])
def test_the_exit_code_of_each_status(status, extra, code, culprits):
    v = verdict.Verdict.of_bisection({"status": status, "metric": "m", "range": [], **extra})
    assert v.exit_code() == code and v.culprits == culprits
    assert v.to_json()["exit_code"] == code
    assert v.status == ("several" if extra.get("several") else status)


def test_the_exit_code_of_compare_and_judge():
    rep = {"a": "a" * 40, "b": "b" * 40, "min_effect": 0.005,
           "metrics": [{"metric": "x", "verdict": "no change shown"}, {"metric": "y", "verdict": "slower"}]}
    v = verdict.Verdict.of_compare(rep)
    assert (v.status, v.exit_code(), v.culprits) == ("slower", verdict.CHANGE, ["b" * 40])
    faster = {**rep, "metrics": [{"metric": "y", "verdict": "faster"}]}
    assert verdict.Verdict.of_compare(faster).exit_code() == verdict.OK  # a CI job fails on a regression only
    same = verdict.Verdict.of_compare({**rep, "metrics": [{"metric": "x", "verdict": "no change shown"}]})
    assert (same.status, same.exit_code(), same.not_shown) == ("not-shown", verdict.OK, ["a change of x of at least 0.5%"])
    for st, code in (("good", 0), ("bad", 1), ("between", 1), ("uncertain", 125), ("skip", 125)):
        assert verdict.Verdict.of_judgement({"verdict": st, "commit": "f" * 40}).exit_code() == code == \
            bisect.JUDGE_EXIT[st]
