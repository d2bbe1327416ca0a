"""python3 -m bench.bisect_accuracy --json: the numbers behind its tables, for programs.

One real run on its smallest configuration (one history of 2 commits with a 3% step in the
minikernel's hot path, cachegrind's cg_cost: deterministic, ~30 s), whose JSON must say what its
table (on stderr) says; and the summary and JSON builders on hand-made rows of the shapes that
run does not produce (two-step pairs, a null history, an older engine beside, an oracle that
cannot reach its power)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from conftest import ROOT, script

acc = script("bench/bisect_accuracy.py")


def test_the_smallest_run_prints_every_number_of_its_table_as_json(tmp_path):
    p = subprocess.run([sys.executable, "-m", "bench.bisect_accuracy", "--histories", "1", "--null", "0",
                        "--regression-pct", "3", "--commits", "2", "--workdir", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)  # stdout is the JSON and nothing else; the tables went to stderr
    assert d["settings"]["regression_pct"] == [3.0] and d["settings"]["commits"] == 2
    assert d["settings"]["metric"] == "cg_cost" and d["settings"]["before"] is None and d["settings"]["thorough"] is False
    (row,) = d["rows"]
    lb, sl = row["layoutbench"], row["single_layout"]
    assert (row["kind"], row["size"], row["commits"], len(row["regressions"])) == ("step", 3.0, 2, 1)
    assert lb["culprit"] == row["regressions"][0] and lb["named"] == [lb["culprit"]]
    assert (lb["status"], lb["right"], lb["wrong"]) == ("found", True, False)
    assert lb["runs"] > sl["runs"] >= 2 and row["oracle"]["runs"] >= 4
    # the history's line of the table holds the same numbers
    line = next(x for x in p.stderr.splitlines() if x.split()[:1] == [str(row["seed"])]).split()
    assert line[-12:-4] == [str(lb["builds"]), str(lb["runs"]), f"#{sl['culprit']}", str(sl["builds"]),
                            str(sl["runs"]), f"{row['effect_pct']:+.2f}%", f"{row['layout_noise_pct']:.2f}%",
                            str(row["oracle"]["runs"])]
    assert line[1:3] == [f"#{row['regressions'][0]}", "3%"] and line[-13] == f"#{lb['culprit']}"
    # --plan's likely cost beside the runs spent, and the same bisection with --first-only beside
    assert line[-4:] == [str(row["plan_runs"]), f"{row['plan_runs'] / lb['runs']:.2f}", str(row["first_only_runs"]),
                         f"{lb['runs'] / row['first_only_runs']:.2f}"]
    assert row["plan_runs"] > 0 and 0 < row["first_only_runs"] <= lb["runs"]
    assert f"plan / actual runs (--plan's likely cost over the runs the bisection spent): median " \
           f"{row['plan_runs'] / lb['runs']:.2f}" in p.stderr
    assert 2.5 < row["effect_pct"] < 3.5 and 0 < row["layout_noise_pct"] < 2
    # the summary: one line per engine, each as the table prints it
    assert [(s["key"], s["kind"], s["size"], s["histories"]) for s in d["summary"]] == [
        ("ours", "step", 3.0, 1), ("oracle", "step", 3.0, 1), ("theirs", "step", 3.0, 1)]
    ours, oracle, theirs = d["summary"]
    assert (ours["runs"], ours["right"], ours["wrong"]) == (lb["runs"], 1, 0)
    assert oracle["runs"] == row["oracle"]["runs"] and "right" not in oracle
    assert (theirs["runs"], theirs["right"]) == (sl["runs"], int(sl["right"]))
    for s in d["summary"]:
        assert acc.summary_line(s) in p.stderr.splitlines()


def row(seed, pct, ours, theirs, runs, before=None, oracle=40, status="found"):
    """A row as bisect_accuracy's main builds it: pct a size, a pair or 0.0 (null); ours, theirs
    and before (culprit index or None, right, wrong[, first]), named = ours' change points."""
    two, planted = isinstance(pct, tuple), pct != 0.0
    r = {"seed": seed, "planted": planted, "pct": pct, "two": two, "commits": 16, "layout_only": [2, 5],
         "regressions": [4, 11] if two else [4] if planted else [], "status": status, "effect": 1.03, "noise": 0.005,
         "oracle": {"runs": oracle}, "both": two and ours[3] == 2, "cost": {"builds": 6, "runs": runs},
         "plan": runs, "first_only": runs,
         "single": {"builds": 5, "runs": 5},
         "index": {"ours": ours[0], "theirs": theirs[0], "named": [4, 11] if two and ours[3] == 2 else [ours[0]]}}
    for key, v in (("ours", ours), ("theirs", theirs)) + ((("before", before),) if before else ()):
        r[key + "_ok"], r[key + "_wrong"] = v[1], v[2]
        if two:
            r[key + "_first"] = v[0] == 4
    if before:
        r["before"], r["before_status"], r["index"]["before"] = {"builds": 7, "runs": 2 * runs}, "found", before[0]
    return r


ENGINES = [("after", "ours"), ("before", "before"), ("oracle", "oracle"), ("single", "theirs")]


def test_the_summary_and_the_json_of_two_step_and_null_rows():
    rows = [  # three 1+3 histories: both steps named / the second only / both; the single layout names the
        # second, then #7, then the first
        row(200, (1.0, 3.0), (4, True, False, 2), (11, True, False), 30, before=(11, True, False), oracle=math.inf),
        row(201, (1.0, 3.0), (11, True, False, 1), (7, False, True), 50, before=(7, False, True), oracle=60),
        row(202, (1.0, 3.0), (4, True, False, 2), (4, True, False), 100, before=(4, True, False), oracle=60),
        # a null history: layoutbench blames nothing, the single layout blames #3, the older revision nothing
        row(1200, 0.0, (None, True, False), (3, False, False), 42, before=(None, True, False), status="noise"),
    ]
    s = acc.summarize(rows, ENGINES, [3.0], [(1.0, 3.0)])  # no single-step row of 3%: no line for it
    assert [(x["key"], x["kind"]) for x in s] == [(k, "two-step") for _, k in ENGINES] + [(k, "null") for _, k in ENGINES]
    ours, before, oracle, theirs = s[:4]
    assert (ours["histories"], ours["right"], ours["wrong"], ours["both"], ours["first"], ours["runs"]) == (3, 3, 0, 2, 2, 60)
    assert (before["right"], before["wrong"], before["first"], before["runs"]) == (2, 1, 1, 120) and "both" not in before
    assert (theirs["right"], theirs["wrong"], theirs["first"], theirs["runs"]) == (2, 1, 1, 5)
    assert oracle["runs"] == math.inf and oracle.keys() == {"engine", "key", "kind", "size", "histories", "runs"}
    assert ours["size"] == [1.0, 3.0]
    n_ours, n_before, n_oracle, n_theirs = s[4:]
    assert (n_ours["right"], n_ours["wrong"], n_theirs["right"], n_theirs["wrong"]) == (1, 0, 0, 1)
    assert (n_before["right"], n_before["wrong"], n_oracle["runs"], n_ours["size"]) == (1, 0, 40, None)
    assert acc.summary_line(ours) == f"{'after':<38}   1+3%   3/3   (100%)    2/3     0/3        60.0  (the earliest step: 2/3)"
    assert acc.summary_line(theirs) == f"{'single':<38}   1+3%   2/3   ( 67%)       -    1/3         5.0  (the earliest step: 1/3)"
    assert acc.summary_line(n_theirs) == f"{'single':<38}   null   0/1   nothing blamed                       5.0"
    assert acc.summary_line(oracle) == f"{'oracle':<38}   1+3% {'(computed: the runs only)':<30}       inf"
    one = row(100, 3.0, (4, True, False), (6, False, True), 19)
    step = acc.summarize([one], ENGINES[2:], [3.0], [])
    assert acc.summary_line(step[1]) == f"{'single':<38}     3%   0/1   (  0%)            1/1         5.0"

    d = json.loads(json.dumps(acc.result_json({"seed": 200}, rows + [one], s, 12.34), allow_nan=False))
    assert d["settings"] == {"seed": 200} and d["wall_s"] == 12.3
    a, b, _, n, o = d["rows"]
    assert (a["kind"], a["size"], a["regressions"], a["oracle"]["runs"]) == ("two-step", [1.0, 3.0], [4, 11], None)
    assert a["layoutbench"] == {"culprit": 4, "right": True, "wrong": False, "first": True, "both": True, "builds": 6,
                                "runs": 30, "status": "found", "named": [4, 11]}
    assert b["layoutbench"]["named"] == [11] and b["layoutbench"]["both"] is False and b["layoutbench"]["first"] is False
    assert b["single_layout"] == {"culprit": 7, "right": False, "wrong": True, "first": False, "builds": 5, "runs": 5}
    assert b["before"] == {"culprit": 7, "right": False, "wrong": True, "first": False, "builds": 7, "runs": 100,
                           "status": "found"}
    assert (n["kind"], n["size"], n["regressions"], n["oracle"]["runs"]) == ("null", None, [], 40)
    assert n["single_layout"]["wrong"] is True and n["layoutbench"]["wrong"] is False and "first" not in n["layoutbench"]
    assert n["layoutbench"]["status"] == "noise" and "both" not in n["layoutbench"]
    assert (n["effect_pct"], n["layout_noise_pct"]) == (pytest.approx(3.0), 0.5)
    assert (o["kind"], o["size"], o["regressions"], o["layoutbench"]["named"]) == ("step", 3.0, [4], [4])
    assert o["single_layout"] == {"culprit": 6, "right": False, "wrong": True, "builds": 5, "runs": 5}
    assert "first" not in o["layoutbench"] and "both" not in o["layoutbench"]
    assert d["summary"][2]["runs"] is None and d["summary"][0] == ours  # infinity is null, the rest as summarize gave


def test_an_older_revision_runs_beside_on_images_this_tree_linked(tmp_path):
    """--before REV bisects the same smallest history with the layoutbench of git revision REV
    (9319707 here) too: it reads no image record this tree wrote (its own images, the object
    cache shared), so it finishes and its row says what it found, instead of failing on a field
    of this tree's records it does not know (``link_seconds``)."""
    p = subprocess.run([sys.executable, "-m", "bench.bisect_accuracy", "--histories", "1", "--null", "0",
                        "--regression-pct", "3", "--commits", "2", "--workdir", str(tmp_path), "--before", "9319707",
                        "--json"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    (row,) = d["rows"]
    assert d["settings"]["before"] == "9319707"
    assert (row["before"]["status"], row["before"]["culprit"]) == ("found", row["regressions"][0])
    assert row["before"]["right"] and not row["before"]["wrong"] and row["before"]["runs"] > 2
    assert (tmp_path / "work-before" / "objects").resolve() == (tmp_path / "work" / "objects").resolve()
    old = list((tmp_path / "work-before" / "images").rglob("variant.json"))
    assert old and all("link_seconds" not in json.loads(f.read_text()) for f in old)  # the older code's own records
    assert [s["key"] for s in d["summary"]] == ["ours", "before", "oracle", "theirs"]
