"""layoutbench.bisect's own parts, with exact expectations: its settings and their checks, the log as
`bisect log` prints it and `bisect replay` reads it back, the verdict as text, and the paths of a
bisection run again -- resumed as it was, with a decision flag added, continued without GOOD..BAD,
replaced when the target's configuration or the metric changed -- on one small real history
(two commits after GOOD: a layout-only commit, then a 3% regression), built for real and
measured under cachegrind (deterministic), with two runs per layout (repetition 1 too).

Fast enough for the mutation runner (``python3 -m bench.mutate --module bisect``): one bisection of two
commits, every other path read from its store or on its first look."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from conftest import script
from layoutbench import bisect, costs, decide, forecast, profile, symdiff, verdict
from layoutbench import build as buildmod
from layoutbench import source
from layoutbench.errors import BuildFailed, LayoutbenchError
from layoutbench.store import Store
from layoutbench.verdict import record
from layoutbench.verdict import text as vtext

make_history = script("kernels/minikernel/make_history.py").make_history

ARGS = "iterations=300"


def _run(*a, **k) -> dict:
    """bisect.run's record as its JSON (what --json prints and the store keeps)."""
    return bisect.run(*a, **k).to_dict()


def _text(d: dict) -> str:
    """The terminal text of a bisection's JSON, read back typed."""
    return vtext.text(record.read(d))


def _summary(d: dict) -> str:
    return vtext.summary_line(record.read(d))


def _ci_label(conf, d: dict) -> str:
    return vtext.ci_label(conf, record.read(d))


@pytest.fixture(scope="module")
def hist(tmp_path_factory, workdir):
    d = tmp_path_factory.mktemp("bhist")
    return make_history(d / "repo", 2, seed=11, regression_at=2, regression_pct=3.0, layout_only=[1])


@pytest.fixture(scope="module")
def prof():
    return profile.load("minikernel")


def settings(hist, **kw) -> bisect.Settings:
    return bisect.Settings(**{"kernel": "minikernel", "repo": hist["repo"], "target": "cachegrind", "args": ARGS,
                              "runs": 2, **kw})


def sha(hist, i):
    return hist["commits"][i]["sha"]


@pytest.fixture(scope="module")
def first(hist, prof, tmp_path_factory):
    """The bisection of GOOD..BAD, once: its verdict, its store and what it said."""
    path = tmp_path_factory.mktemp("bstore") / "r.sqlite"
    said: list[str] = []
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist), hist["good"], hist["bad"], say=said.append)
    return {"v": v, "store": path, "said": said}


# -- the log: printed, replayed ------------------------------------------------------------------

def test_replay_reads_options_flags_and_skips_and_names_a_bad_line(hist, prof, tmp_path):
    g, b1, c1 = hist["good"], hist["bad"], sha(hist, 1)
    text = "\n".join([
        "# a comment",
        f"git bisect start minikernel {b1} {g} --repo {hist['repo']} --target cachegrind --runs 3 --layouts 5 "
        "--seed 7 --confidence 0.9 --min-effect 0.02 --no-shadow --prove-null --thorough --paired --budget 99",
        "",
        f"layoutbench bisect skip {c1} --kernel minikernel --why 'by hand, twice'",
    ])
    with closing(Store(tmp_path / "r.sqlite")) as store:
        r = bisect.replay(store, text, profile.load)
        s = r.s
        assert (s.runs, s.layouts, s.seed, s.confidence, s.min_effect, s.budget) == (3, 5, 7, 0.9, 0.02, 99)
        assert (s.shadow, s.first_only, s.prove_null, s.thorough, s.repo) == (False, False, True, True, hist["repo"])
        assert s.plan().thorough is True and bisect.Settings(kernel="k").plan().thorough is False
        assert s.plan().paired is True and bisect.Settings(kernel="k").plan().paired is False
        assert [(e["verb"], e["commit"], e.get("why")) for e in r.log[1:]] == [("skip", c1, "by hand, twice")]
        assert r.marks()[c1]["note"] == "by hand, twice"
        line = s.start_line(b1, g)
        assert line.endswith("--min-effect 2% --no-shadow --prove-null --thorough --paired --budget 99")
        assert f"--layouts 5 --max-layouts {s.max_layouts} --runs 3 --max-runs 3 --seed 7 --confidence 0.9" in line
        for bad, msg in [
            ("start minikernel --runs x", "replay line 1: --runs 'x' is not a number"),
            ("start", "replay line 1: start needs a kernel"),
            (f"good {c1}", "replay line 1: good before start; a log begins with a start line"),
            (f"start minikernel {b1} {g} --repo {hist['repo']}\nfrobnicate {c1}",
             "replay line 2: unknown verb 'frobnicate'; expected start, good, bad or skip"),
            ("# only comments\n\n", "the log holds no start line; nothing replayed"),
            ("start minikernel --repo", "replay line 1: option --repo has no value"),
            ("# x\nstart 'minikernel", "replay line 2: No closing quotation; is this a log printed by `bisect log`?"),
        ]:
            with pytest.raises(LayoutbenchError) as e:
                bisect.replay(store, bad, profile.load)
            assert str(e.value) == msg


def test_a_profile_that_pairs_by_default_starts_paired_unless_the_log_or_the_settings_say_no(hist, prof, tmp_path):
    """A profile with `[bisect] paired = true` (bisect_paired): a bisection started without a word pairs; a
    log line with --no-paired, or settings that give paired=False, do not; the log of an unpaired one says
    --no-paired, so that its replay is unpaired again (and the log of a profile without the default does not)."""
    pairing = dataclasses.replace(prof, bisect_paired=True)
    g, b1 = hist["good"], hist["bad"]
    head = f"start minikernel {b1} {g} --repo {hist['repo']} --target cachegrind"
    with closing(Store(tmp_path / "r.sqlite")) as store:
        assert bisect.replay(store, head, lambda _: pairing).s.paired is True
        b = bisect.replay(store, head + " --no-paired", lambda _: pairing)
        assert b.s.paired is False
        line = b.text(pairing).splitlines()[1]
        assert line.endswith("--no-paired"), line
        assert bisect.replay(store, line, lambda _: pairing).s.paired is False
        assert "--no-paired" not in b.text(prof)
        given = dataclasses.replace(settings(hist), paired=False, given=("paired",))
        assert bisect.start(store, pairing, given, b1, g).s.paired is False
        assert bisect.start(store, pairing, settings(hist), b1, g).s.paired is True
        assert bisect.start(store, prof, settings(hist), b1, g).s.paired is False


def test_marks_by_hand_return_what_they_marked_and_show_in_the_log(hist, prof, tmp_path):
    with closing(Store(tmp_path / "r.sqlite")) as store:
        b = bisect.start(store, prof, settings(hist), hist["bad"], hist["good"])
        assert bisect.mark(store, prof, b, "bad", ["HEAD~0"]) == [hist["bad"]]
        assert bisect.mark(store, prof, b, "skip", [sha(hist, 1)], why="flaky") == [sha(hist, 1)]
        b.log.append({"verb": "place", "commit": "", "note": "lab/one reserved", "by": "measured"})
        b.log.append({"verb": "good", "commit": sha(hist, 2), "note": "seen", "by": "measured", "segment": "x..y",
                      "subject": "s"})
        b.log.append({"verb": "bad", "commit": sha(hist, 2), "note": "n", "by": "measured", "place": "lab/two",
                      "subject": "t"})
        log = b.text(prof).splitlines()
        assert f"# bad: [{hist['bad']}] {hist['commits'][2]['subject']} -- marked by hand" in log
        assert f"layoutbench bisect bad {hist['bad']} --kernel minikernel --repo {hist['repo']}" in log
        assert f"layoutbench bisect skip {sha(hist, 1)} --kernel minikernel --repo {hist['repo']} --why flaky" in log
        assert "# place: lab/one reserved" in log
        assert f"# good in x..y: [{sha(hist, 2)}] s -- seen" in log
        assert f"# bad on lab/two: [{sha(hist, 2)}] t -- n" in log
        # a sub-range's mark is not a mark of the whole range; the engine's journal keeps them apart
        assert b.marks()[sha(hist, 2)]["verb"] == "bad" and "segment" not in b.marks()[sha(hist, 2)]
        j = bisect.Journal(b, prof)
        assert set(j.marks(None)) == {hist["bad"], sha(hist, 1), sha(hist, 2)}
        assert {c: e["verb"] for c, e in j.marks("x..y").items()} == {sha(hist, 2): "good"}
        # the bisection the verbs act on
        assert bisect.current(store).key == b.key
        assert bisect.current(store, "minikernel", hist["repo"], profile=prof).key == b.key
        # the repository as given is resolved first: another spelling of the same path finds it
        other = f"{hist['repo']}/../{Path(hist['repo']).name}"
        assert bisect.current(store, "minikernel", other, profile=prof).key == b.key
        with pytest.raises(LayoutbenchError, match=r"^no bisection of minikernel in progress for /nonexistent; "):
            bisect.current(store, "minikernel", "/nonexistent")
        assert [x.key for x in bisect.stored(store)] == [b.key]
        b.reset()
        assert bisect.stored(store) == []
        with pytest.raises(LayoutbenchError, match="^no bisection in progress; start one with"):
            bisect.current(store)


def test_the_log_ends_with_what_was_concluded(tmp_path):
    with closing(Store(tmp_path / "r.sqlite")) as store:
        b = bisect.Bisection(store, bisect.Settings(kernel="k"))
        ends = {"uncertain": {"status": "uncertain", "candidate": "c" * 40},
                "range": {"status": "range", "range": ["a" * 40, "b" * 40]},
                "noise": {"status": "noise"}, "not-shown": {"status": "not-shown"},
                "budget": {"status": "budget", "culprit": "d" * 40, "culprit_subject": "s",
                           "candidates": [{"commit": "d" * 40, "probability": 1.0}]},
                "budget-note": {"status": "budget", "budget_note": "not decided at this budget (8 of 10 runs spent)"},
                "budget-no-note": {"status": "budget"}}
        want = {"not-shown": "# no change shown between GOOD and BAD: no commit is blamed (and none is cleared)",
                "budget": f"# first bad commit: [{'d' * 40}] s (the budget ended before the ranges beside it were "
                          "searched out)",
                "uncertain": f"# uncertain: points at [{'c' * 40}], not confirmed on fresh layouts",
                "range": f"# only skipped commits left to test; the first bad commit is one of: {'a' * 12} {'b' * 12}",
                "noise": "# GOOD and BAD do not differ beyond layout noise: nothing to bisect",
                "budget-note": "# not decided at this budget (8 of 10 runs spent)",
                "budget-no-note": "# not decided at this budget"}
        for status, result in ends.items():
            b.result = result
            assert b.text().splitlines()[-1] == want[status]
        assert b.text().splitlines()[0] == "# layoutbench bisect log: k repo (profile source), metric None"
        assert b.text().endswith("\n") and not b.text().endswith("\n\n")  # a file `bisect replay` reads back


# -- settings ------------------------------------------------------------------------------------

def test_settings_are_checked_before_anything_runs():
    for kw, msg in [
        ({"mode": "relink"}, "bisect runs in mode rerun or reboot, not 'relink'"),
        ({"layouts": 1}, "--layouts must be at least 2 (the layout noise needs two layouts)"),
        ({"runs": 0}, "--runs must be at least 1"),
        ({"confidence": 0.5}, "--confidence 0.5 is not allowed: give a finite number > 0.5 and <= 0.9999, e.g. 0.95"),
        ({"target": "a, b,a"}, "--target a, b,a names a target twice; give each machine once"),
    ]:
        with pytest.raises(LayoutbenchError) as e:
            bisect.Settings(kernel="k", **kw).check()
        assert str(e.value) == msg, kw
    bisect.Settings(kernel="k", layouts=2).check()  # two layouts are the fewest that show layout noise
    # --budget: a whole number of runs above 0, or a duration above 0 (the one line names the option)
    for kw, shown in [({"budget": 0}, "0"), ({"budget": True}, "True"), ({"budget": 2.5}, "2.5"),
                      ({"budget_time": 0.0}, "'0.0s'")]:
        with pytest.raises(LayoutbenchError) as e:
            bisect.Settings(kernel="k", **kw).check()
        assert str(e.value).startswith(f"--budget {shown} is not allowed: give a number of runs above 0"), kw
    bisect.Settings(kernel="k", budget=1).check()
    bisect.Settings(kernel="k", budget_time=60.0).check()
    # a minimum effect kept as a fraction (a replayed log, a stored state): above 0, at most 0.5
    for bad in (0.0, 0.6, math.nan):
        with pytest.raises(LayoutbenchError, match=rf"^min_effect {bad} is not allowed: give a finite number > 0"):
            bisect.Settings(kernel="k", min_effect=bad).check()
    bisect.Settings(kernel="k", min_effect=0.5).check()
    from layoutbench.validate import MAX_SEED
    # every seed a bisection may use (4 x its last look of 10 layouts) fits the store's 64-bit column
    bisect.Settings(kernel="k", layouts=4, max_layouts=10, seed=MAX_SEED - 39).check()
    with pytest.raises(LayoutbenchError, match=rf"^--seed {MAX_SEED - 38}: with 40 layouts the last seed passes"):
        bisect.Settings(kernel="k", layouts=4, max_layouts=10, seed=MAX_SEED - 38).check()
    s = bisect.Settings(kernel="k", layouts=6, max_layouts=3, runs=2, max_runs=1, confidence=0.51)
    s.check()
    assert (s.max_layouts, s.max_runs) == (6, 2)  # the last look is never below the first
    assert bisect.Settings(kernel="k", target=" a , b ,").targets == ["a", "b"]
    assert bisect.Settings(kernel="k", target=" , ").targets == [None]
    assert bisect.Settings(kernel="k").targets == [None]
    assert bisect.state_key("k", "/r", None) == "bisect:k:/r:" and bisect.state_key("k", None, "s") == "bisect:k::s"
    p = bisect.Settings(kernel="k", min_effect=None, budget=40.0).plan()
    assert p.min_effect == decide.DEFAULT_MIN_EFFECT and p.budget == 40 and isinstance(p.budget, int)
    assert bisect.Settings(kernel="k").plan().budget is None
    old = {**bisect.Settings(kernel="k").to_dict(), "gone": 1}
    assert bisect.Settings.from_dict(old) == bisect.Settings(kernel="k")  # a field of another version is dropped


def test_a_farm_costs_a_commit_built_for_two_machines_once(prof):
    ps = []
    for name in ("cachegrind", "local"):
        p = bisect.Prober(prof, bisect.Settings(kernel="minikernel", target=name), None)
        ps.append(p)
    a, b = ps
    a.used = {("layouts", "c1"): {("random", 1, 0), ("random", 2, 0), ("random", 1, 1)},
              ("single", "c1"): {("default", 0, 0)}}
    b.used = {("layouts", "c1"): {("random", 1, 0)}, ("layouts", "c2"): {("random", 1, 0), ("random", 2, 0)}}
    b.failed = {("layouts", "c3"), ("single", "c4"), ("single", "c5")}
    assert a.cost() == {"builds": 1, "failed_builds": 0, "images": 2, "runs": 3}
    assert a.cost("single") == {"builds": 1, "failed_builds": 0, "images": 1, "runs": 1}
    assert b.cost() == {"builds": 3, "failed_builds": 1, "images": 3, "runs": 3}  # its own purpose's failures only
    assert b.cost("single") == {"builds": 2, "failed_builds": 2, "images": 0, "runs": 0}
    assert bisect.farm_cost(ps) == {"builds": 3, "failed_builds": 1, "images": 5, "runs": 6}
    assert bisect.farm_cost(ps, "single") == {"builds": 3, "failed_builds": 2, "images": 1, "runs": 1}
    assert a.name == "cachegrind"


# -- a real bisection, two runs per layout -------------------------------------------------------

def test_two_runs_per_layout_find_the_regression_and_are_counted_as_runs(hist, first):
    assert "" not in first["said"]  # no budget given: no (empty) budget line
    assert any(m.startswith("target ") and m.endswith("; 2 commit(s) in range; 4 layouts x 2 run(s) per probe (up to "
                                                      f"{decide.Plan.max_layouts} x 2)") for m in first["said"])
    v = first["v"]
    assert v["unit"] == "events"  # cg_cost's unit (cg_ir's is instructions, cg_i1_misses' misses)
    assert v["status"] == "found" and v["culprit"] == hist["regression"] == sha(hist, 2), v["message"]
    assert v["last_good"] == sha(hist, 1) and v["commits"] == 2 and v["range"] == []
    c = v["cost"]
    assert c["builds"] == 3 and c["failed_builds"] == 0 and c["runs"] == 2 * c["images"] and c["ran_now"] > 0
    with sqlite3.connect(first["store"]) as db:
        q = "SELECT {} FROM runs JOIN builds ON builds.id = runs.build_id WHERE builds.layout {} 'default'"
        reps = dict(db.execute(q.format("rep, count(*)", "!=") + " GROUP BY rep"))
        single = db.execute(q.format("count(*), max(rep)", "=")).fetchone()
    assert reps == {0: c["images"], 1: c["images"]}  # every layout's repetition 0 and 1, nothing more
    sl = v["single_layout"]
    assert single == (sl["runs"], 0) and sl["runs"] == sl["builds"] == 3  # one run of the default link each
    assert sl["agrees"] is (sl["culprit"] == v["culprit"])
    assert (sl["ran_now"], sl["compiled_now"]) == (3, 0)  # its runs, on the objects the bisection compiled
    # the probe of commit 1 was judged on K layouts x 2 runs, and the log says so
    with closing(Store(first["store"])) as store:
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
    probes = [e for e in b.log if e["verb"] in ("good", "bad", "skip")]
    assert [(e["verb"], e["commit"], e["by"]) for e in probes] == [("good", sha(hist, 1), "measured")]
    assert probes[0]["runs"] == 2 and probes[0]["layouts"] >= decide.MIN_LAYOUTS
    assert probes[0]["subject"] == hist["commits"][1]["subject"]
    assert b.result.culprit == v["culprit"]  # the verdict is kept with the log


def test_the_code_evidence_is_symdiff_of_the_culprit_and_its_parent(hist, prof, first):
    code = first["v"]["code"]
    assert (code["parent"], code["culprit"], code["layout"]) == (sha(hist, 1), sha(hist, 2), "sorted:0")
    sides = []
    for c in (sha(hist, 1), sha(hist, 2)):
        objs = buildmod.compile_objects(prof, source.resolve(prof, c, hist["repo"]))
        sides.append(buildmod.link_variant(objs, prof.image().name, "sorted", 0).elf)
    d = symdiff.diff_files(*sides)
    funcs = [x for x in d.symbols if x.kind == "func"]
    changed = sorted(x.name for x in funcs if x.status in ("changed", "resized", "added", "removed"))
    assert code["changed_functions"] == len(changed) and "cksum_fold" in changed
    assert code["moved_functions"] == sum(1 for x in funcs if x.status == "moved") > 0
    assert sorted(t["name"] for t in code["top"]) == changed[:5]
    grew = [abs(t["new_size"] - t["old_size"]) for t in code["top"]]
    assert grew == sorted(grew, reverse=True) and all(g > 0 for g in grew)
    # from GOOD: the layout-only commit added a function (553 bytes); the largest change comes first
    ev = bisect.code_evidence(prof, settings(hist), hist["good"], sha(hist, 2), top=2)
    objs = buildmod.compile_objects(prof, source.resolve(prof, hist["good"], hist["repo"]))
    d = symdiff.diff_files(buildmod.link_variant(objs, prof.image().name, "sorted", 0).elf, sides[1])
    grown = [(abs((x.new_size or 0) - (x.old_size or 0)), x.name, x.status) for x in d.symbols
             if x.kind == "func" and x.status in ("changed", "resized", "added", "removed")]
    assert ev["changed_functions"] == len(grown) > len(changed) and len({g for g, _, _ in grown}) > 1
    assert [(abs((t["new_size"] or 0) - (t["old_size"] or 0)), t["name"], t["status"]) for t in ev["top"]] == sorted(
        grown, key=lambda g: -g[0])[:2]
    assert ev["top"][0]["status"] == "added" and ev["top"][0]["old_size"] is None  # the new function: all of it
    text = _text(first["v"])
    assert f"code:    {len(changed)} function(s) changed code between the parent and the culprit (symdiff, layout " \
           "sorted:0): " in text and "cksum_fold (resized, " in text
    only_moved = {**first["v"], "code": {**code, "changed_functions": 0, "top": []}}
    assert f"no function's code changed between the parent and the culprit (symdiff, layout sorted:0; " \
           f"{code['moved_functions']} moved)" in _text(only_moved)
    broken = {**first["v"], "code": {"error": "no such object"}}
    assert "code:    symdiff could not compare the parent and the culprit: no such object" in _text(broken)


def test_code_evidence_that_cannot_be_had_is_an_error_in_the_record_not_a_lost_verdict(hist, prof):
    gone = "0" * 40  # no such commit: the parent cannot be resolved, so no symdiff
    ev = bisect.code_evidence(prof, settings(hist), gone, sha(hist, 2))
    assert set(ev) == {"error"} and gone[:12] in ev["error"], ev


def test_a_commit_that_does_not_build_is_skipped_and_counted_a_failed_build_of_its_purpose(hist, prof, tmp_path):
    with closing(Store(tmp_path / "r.sqlite")) as store:
        p = bisect.Prober(prof, settings(hist), store)
        co = p.checkout(sha(hist, 1))
        p._objs[co.commit] = BuildFailed(f"commit {co.short} does not compile")  # as objects() keeps a failure
        with pytest.raises(decide.Skip, match=f"commit {co.short} does not compile"):
            p.groups(co, 3, 2)
        with pytest.raises(decide.Skip):
            p.single(co)
        assert store.runs() == []
    assert p.cost() == {"builds": 1, "failed_builds": 1, "images": 0, "runs": 0}
    assert p.cost("single") == {"builds": 1, "failed_builds": 1, "images": 0, "runs": 0}


def test_the_verdict_as_text(hist, first):
    v = first["v"]
    lines = _text(v).splitlines()
    e, c = v["effect"], v["cost"]
    assert lines[0] == f"bisect minikernel {hist['good'][:12]}..{hist['bad'][:12]} (2 commits), metric cg_cost on " \
                       "cachegrind"
    assert lines[2:4] == [f"verdict: first bad commit {v['culprit']}", f"         {v['culprit_subject']}"]
    assert lines[4].startswith(f"effect:  cg_cost x{e['ratio']:.4f} vs {sha(hist, 1)[:12]} (")
    # the confirmation's own test, the one that showed the step: one-sided, paired over the fresh seeds or
    # pooled over the fresh layouts of each side
    test = (f"one-sided, paired over {e['layouts']}" if e["paired"] else
            f"one-sided, pooled over {e['layouts']} vs {e['layouts_b']}")
    assert f"{test} fresh layouts); share of the endpoints' change" in lines[4]
    # the confirmation's interval is at the level its test spends (96.96%), never printed as such: "CI", and
    # one line saying what it is; an interval at the level asked is "95% CI"
    assert e["confidence"] != 0.95
    assert f"(CI {vtext.interval(e['ci_low'], e['ci_high'])}, {e['verdict']}, {test}" in lines[4]
    assert not any(re.search(r"\d\.\d{3,}% CI", ln) for ln in lines), lines
    # the size over every layout is an estimate: the minimum effect is tested by the fresh-layout interval
    assert lines[5] == (f"size:    x{e['step_ratio']:.4f} over every layout measured on the pair (an estimate; the "
                        "minimum effect 0.50% is tested by the interval above, on fresh layouts only)")
    assert "levels:  each CI above is the one its test decided on, at the level that test spends of the " \
           "bisection's overall 95% (the error budget shared over its tests and looks)" in lines
    asked = {**v, "effect": {**e, "confidence": 0.95}, "endpoints": {**v["endpoints"], "confidence": 0.95},
             "sides": []}
    assert f"(95% CI {e['ci_low']:.4f}" in _text(asked) and "levels:" not in _text(asked)
    assert [ln for ln in lines if ln.startswith("bound:")] == ([f"bound:   {v['bound']}"] if v["bound"] else [])
    assert not any(ln.startswith("bound:") for ln in _text({**v, "bound": None}).splitlines())
    assert "bound:   x" in _text({**v, "bound": "x"}).splitlines()
    assert f"cost:    3 builds (0 failed), {c['images']} images, {c['runs']} runs ({c['compiled_now']} compiled and " \
           f"{c['ran_now']} run by this command)" in lines
    sl = v["single_layout"]
    assert lines[-1].startswith("single-layout bisection (default link, 1 run per probe, as asv find) "
                                + ("agrees" if sl["agrees"] else "DIFFERS") + ": it blames ")
    assert lines[-1].endswith(f"; it took {sl['builds']} builds, {sl['runs']} runs")
    assert v["message"] == _summary(v)
    assert v["message"].startswith(f"first bad commit {v['culprit'][:12]} {v['culprit_subject']}: cg_cost x")
    # a bisection over labgrid places: its places' lines (verdict.text.place_lines) follow the cost lines
    assert not any(ln.startswith("places:") for ln in lines) and "places" not in v
    pl = {"per_place": {"lab/b": {"probes": 1, "commits": ["c"]}, "lab/a": {"probes": 2, "commits": ["a", "b"]}},
          "lost": {"lab/c": "its exporter went away"}, "slots": 3, "slots_at_end": 2}
    farm = _text({**v, "places": pl, "probes": 3, "rounds": 2}).splitlines()
    at = farm.index("places:  3 probes in 2 rounds over labgrid places (lab/a 2 probe(s), lab/b 1 probe(s)); each "
                    "probe judged against GOOD and BAD on its own place")
    assert farm[at + 1] == "         lost lab/c: its exporter went away" and farm[:at] == lines[:at]
    assert farm[at - 1].startswith(("cost:", "costs:"))


def test_the_verdicts_that_name_no_single_commit_as_text(hist, first):
    v = first["v"]
    c1, c2 = sha(hist, 1), sha(hist, 2)
    none = {"shown": "none", "verdict": "no difference", "claim": "no difference"}
    u = {**v, "status": "uncertain", "culprit": None, "candidate": c2, "effect": {**v["effect"], **none}}
    t = _text(u).splitlines()
    assert t[2:5] == [f"verdict: uncertain: the bisection points at {c2}", f"         {v['culprit_subject']}",
                      "         but its confirmation (last good vs it, fresh layouts) did not show a change"]
    assert _summary(u).startswith(f"uncertain: the bisection points at {c2[:12]} {v['culprit_subject']} "
                                             "but the confirmation on fresh layouts did not show the change: cg_cost x")
    # a confirmation whose interval excludes 1 but not the band of the minimum effect says exactly that
    near = {**u, "effect": {**v["effect"], "shown": "change", "verdict": "no difference",
                            "claim": "shown slower but not shown to exceed the 0.50% minimum effect"}}
    t = _text(near).splitlines()
    assert t[4] == ("         but its confirmation (last good vs it, fresh layouts) showed a change but not one "
                    "beyond the 0.50% minimum effect")
    assert "shown slower but not shown to exceed the 0.50% minimum effect" in t[5] and "no difference" not in t[5]
    assert "no difference" not in _summary(near)
    r = {**v, "status": "range", "culprit": None, "range": [c1, c2], "effect": None,
         "skipped": [{"commit": c1, "why": "build", "note": "y" * 150}]}
    t = _text(r).splitlines()
    assert t[2:5] == ["verdict: the first bad commit is one of these 2 (the others could not be judged):",
                      f"         {c1[:12]}  skipped (build): {'y' * 100}", f"         {c2[:12]}"]
    assert _summary(r) == f"the first bad commit is one of 2: {c1[:12]} {c2[:12]} (skipped: 1)"
    spent = {**v, "status": "budget", "culprit": None, "candidate": None, "effect": None,
             "budget_note": "not decided at this budget (30 runs)"}
    assert _summary(spent) == "not decided at this budget (30 runs)"
    assert _text(spent).splitlines()[2] == "verdict: not decided at this budget (30 runs)"
    # the budget ended after the culprit was confirmed: the verdict names it once, and says what was left
    named = {**v, "status": "budget", "budget_note": "not decided at this budget: the step is among "
             f"{v['culprit'][:12]} (100%)", "candidates": [{"commit": v["culprit"], "probability": 1.0}]}
    t = _text(named).splitlines()
    assert t[2:5] == [f"verdict: first bad commit {v['culprit']}", f"         {v['culprit_subject']}",
                      "         (confirmed; the budget ended before the ranges beside it were searched out)"]
    assert not any("not decided" in ln or "among" in ln for ln in t), t
    assert _summary(named).startswith(f"first bad commit {v['culprit'][:12]} ")
    other = {**named, "candidates": [{"commit": c1, "probability": 0.75}, {"commit": v["culprit"], "probability": 0.25}]}
    assert _text(other).splitlines()[4] == f"         (confirmed; the budget ended while another step was " \
                                                 f"searched: among {c1[:12]} (75%))"
    # a budget in runs is said once: "40 runs; 12 spent", not "40 runs = 40 runs"
    bd = {"runs": 40, "duration": None, "duration_text": None, "spent": 12, "seconds_per_run": None}
    assert "budget:  40 runs; 12 spent" in _text({**v, "budget": bd}).splitlines()
    assert "budget:  8h = 40 runs; 12 spent" in _text({**v, "budget": {**bd, "duration_text": "8h"}}).splitlines()
    several = {**v, "several": True, "settings": {**v["settings"], "first_only": True},
               "residual": [{"good": c1, "bad": c2, "ratio": 1.0123}]}
    t = _text(several)
    assert "several changes or a drift: the step found explains " in t
    assert f"  step at {c2[:12]} {v['culprit_subject']} (found; x{v['effect']['ratio']:.4f}, share " in t
    assert f"  another change between {c1[:12]} and {c2[:12]} (x1.0123), not located" in t
    assert "  (--first-only: stopped after one; without it every change point is searched)" in t
    # a range beside the step whose own step was then found is that step, not "another change"
    located = {**several, "residual": [{"good": c1, "bad": c2, "ratio": 1.0123, "unlocated": False}],
               "steps": [{**v["steps"][0], "share": 0.3}, {**v["steps"][0], "culprit": c1, "subject": "second",
                                                            "share": 0.68}],
               "single_layout": {**v["single_layout"], "culprit": c1, "agrees": True}}
    t = _text(located)
    assert "another change" not in t and "the 2 steps found explain 98.00% of the endpoints' change together" in t
    # the naive bisection named the second step: it agrees on one of them, it does not differ
    assert f"as asv find) agrees on one of the 2 steps: it blames {c1[:12]}" in t
    head = verdict.Verdict.of_bisection(located).headline()
    assert head.startswith("2 change points (cg_cost): first bad commit ") and c1[:12] in head, head
    assert f"{v['culprit'][:12]} x{v['effect']['ratio']:.4f}" in head, head
    assert _summary(several).endswith("; several changes or a drift")
    assert "several" not in _text(v)


def test_the_verdict_says_what_the_tests_beside_a_step_showed(first):
    """A range beside a found step whose test did not show a change is an estimate with its
    interval, not a flat range; without --thorough the verdict says what that search misses."""
    v = first["v"]
    g, c = v["last_good"], v["culprit"]
    quiet = {"good": g, "bad": c, "status": "not-shown", "ratio": 1.0021, "ci_low": 0.9912, "ci_high": 1.0131,
             "layouts": 6, "level": 0.0304}
    shown = {**quiet, "status": "differs"}
    t = _text({**v, "sides": [quiet, shown]}).splitlines()
    beside = [ln for ln in t if ln.startswith("beside:")]
    # a side test's interval at its spent level (97%): "CI", the one "levels:" line says what it is
    assert beside == [f"beside:  {g[:12]}..{c[:12]} x1.0021 (CI 0.9912…1.0131, 6 layouts a side): no other change "
                      "shown there, none ruled out"]
    assert any(ln.startswith("levels:  each CI above is the one its test decided on") for ln in t)
    i = t.index(beside[0])
    assert t[i + 1].startswith("         (beside a larger step, a second step of twice the minimum effect was missed ")
    th = _text({**v, "sides": [quiet], "settings": {**v["settings"], "thorough": True}}).splitlines()
    assert [ln for ln in th if ln.startswith("beside:")] == beside and "--thorough: " not in "\n".join(th)
    assert not any(ln.startswith("beside:") for ln in _text({**v, "sides": [shown]}).splitlines())
    flat = {**quiet, "status": "noise", "ratio": 1.0004, "ci_low": 0.9971, "ci_high": 1.0037, "confidence": 0.9392}
    t = _text({**v, "sides": [flat]}).splitlines()
    assert [ln for ln in t if ln.startswith("beside:")] == [
        f"beside:  {g[:12]}..{c[:12]} x1.0004 (CI 0.9971…1.0037, 6 layouts a side): within layout noise there "
        "(an equivalence test passed: a change of the minimum effect is ruled out)"]
    assert "--thorough: " not in "\n".join(t)  # nothing was missed where a change is ruled out
    assert isinstance(v["sides"], list)  # the bisection's own verdict carries them (JSON too)
    # a side test stopped by the futility rule says what its cap could have shown
    futile = {**quiet, "layouts": 4, "cap": 64, "futile": True, "reach": 0.0147}
    t = _text({**v, "sides": [futile]}).splitlines()
    assert [ln for ln in t if ln.startswith("beside:")] == [
        f"beside:  {g[:12]}..{c[:12]} x1.0021 (CI 0.9912…1.0131, 4 layouts a side): no other change shown "
        "there; stopped because at this noise even 64 layouts a side would show only a step of 1.47% or more "
        "(80% power)"]


def test_the_verdict_says_the_step_each_test_that_showed_no_change_could_have_missed(hist, first):
    """Each test that did not show a change -- a side test beside a found step, the endpoints of a
    "no change shown" verdict -- gives one "not ruled out" line with the step its record says it
    shows 9 times in 10 (``shows``), and the --json verdict the same number with its meaning;
    a side test that showed a change or an equivalence gives none, nor does a record without it."""
    v = first["v"]
    g, c, c1 = v["last_good"], v["culprit"], sha(hist, 1)
    quiet = {"good": g, "bad": c, "status": "not-shown", "ratio": 1.0021, "ci_low": 0.9912, "ci_high": 1.0131,
             "layouts": 24, "level": 0.0304, "shows": 0.00912}
    others = [{**quiet, "status": "differs", "shows": None}, {**quiet, "status": "noise"},
              {**quiet, "good": hist["good"], "bad": c1, "shows": None}]
    rec = {**v, "sides": [quiet, *others]}
    line = (f"not ruled out: a step below 0.91% in {g[:12]}..{c[:12]} (the smallest this side test, stopped at 24 "
            "layouts a side, shows 9 times in 10 at this noise)")
    t = _text(rec).splitlines()
    assert [ln for ln in t if ln.startswith("not ruled out:")] == [line]
    assert t.index(line) > max(i for i, ln in enumerate(t) if ln.startswith("beside:"))
    j = verdict.Verdict.of_bisection(rec).to_json()
    assert [(u["test"], u["good"], u["bad"], u["below"], u["layouts"], u["power"]) for u in j["not_ruled_out"]] == [
        ("side", g, c, 0.00912, 24, decide.NOISE_POWER)]
    assert j["not_ruled_out"][0]["meaning"].startswith(f"a change smaller than 0.912% between {g[:12]} and {c[:12]} "
                                                       "may have been missed: the side test stopped at 24 layouts")
    # no change shown: the endpoints' test says the smallest change it would have shown
    none = {**v, "status": "not-shown", "culprit": None, "effect": None, "steps": [], "sides": [], "code": None,
            "endpoints": {**v["endpoints"], "status": "not-shown", "layouts": 40, "shows": 0.0123},
            "message": "no change of at least 0.5% shown"}
    t = _text(none).splitlines()
    assert [ln for ln in t if ln.startswith("not ruled out:")] == [
        f"not ruled out: a change below 1.23% in {hist['good'][:12]}..{hist['bad'][:12]} (the smallest this test, "
        "stopped at 40 layouts a side, shows 9 times in 10 at this noise)"]
    assert [u["below"] for u in verdict.Verdict.of_bisection(none).to_json()["not_ruled_out"]] == [0.0123]
    # the bisection's own record: a side that showed no change carries the number, above zero
    for sd in v.get("sides") or []:
        assert sd["status"] != "not-shown" or sd["shows"] > 0, sd


# -- run again: resumed, continued, flags added, replaced ----------------------------------------

def test_the_same_bisection_again_resumes_from_the_store_and_runs_nothing(hist, prof, first, tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    said: list[str] = []
    with closing(Store(path)) as store:
        before = len(bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None)).log)
        v = _run(store, prof, settings(hist), hist["good"], hist["bad"], say=said.append)
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
    n = len([e for e in b.log])
    marks = sum(1 for e in b.log if e["verb"] in ("good", "bad", "skip"))
    assert before > 1 and said[0] == (f"resuming the bisection of minikernel {hist['good'][:12]}..{hist['bad'][:12]} "
                                      f"({before - 1} log entries: {marks} mark(s) and the endpoints' test)")
    assert v["culprit"] == first["v"]["culprit"] and v["cost"]["ran_now"] == 0 and v["cost"]["compiled_now"] == 0
    assert {k: v["cost"][k] for k in ("builds", "images", "runs")} == \
        {k: first["v"]["cost"][k] for k in ("builds", "images", "runs")}
    assert v["single_layout"]["ran_now"] == 0 and v["single_layout"]["runs"] == first["v"]["single_layout"]["runs"]
    assert [e["verb"] for e in b.log].count("start") == 1 and n == len(b.log)
    # finished: its verdict is printed from the store, nothing built or measured again
    assert said[1] == "the bisection is finished: its verdict, from the store (no run measured)" and v["reprinted"]
    assert _text(v).splitlines()[:-1] == _text({**first["v"], "cost": v["cost"]}).splitlines()[:-1]
    # with no GOOD..BAD: the bisection in progress goes on; a decision flag given now applies to it
    said.clear()
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, first_only=True, prove_null=True), say=said.append)
        b = bisect.Bisection.load(store, b.key)
    assert said[0] == "applying --first-only, --prove-null to the resumed bisection"
    assert said[1] == f"continuing the bisection of minikernel {hist['good'][:12]}..{hist['bad'][:12]}"
    assert b.s.first_only is True and b.s.prove_null is True and b.s.runs == 2 and v["cost"]["ran_now"] == 0
    assert v["settings"]["first_only"] is True and v["settings"]["prove_null"] is True


def test_another_target_configuration_or_metric_starts_the_bisection_again(hist, prof, first, tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    key = bisect.state_key("minikernel", hist["repo"], None)
    with closing(Store(path)) as store:
        old = bisect.Bisection.load(store, key)
        # the same cachegrind with another miss weight: another configuration, its runs stored apart
        t = prof.targets["cachegrind"]
        other = dataclasses.replace(prof, targets={**prof.targets, "cachegrind": dataclasses.replace(
            t, settings={**t.settings, "miss_weight": 21})})
        said: list[str] = []
        v = _run(store, other, settings(hist, runs=1), hist["good"], hist["bad"], say=said.append,
                       plan_only=True)
        b = bisect.Bisection.load(store, key)
    assert said[0] == (f"replacing the earlier bisection of minikernel ({hist['good'][:12]}..{hist['bad'][:12]} "
                       "in cg_cost)")
    assert v["status"] == "plan" and v["plan"]["runs"] > 0 and v["ratio"] > 1.01 and v["commits"] == 2
    assert v["budget"]["spent"] == 8  # the first look, 4 layouts x 1 run a side: no choice, nothing else charged
    assert v["message"].startswith(f"plan: BAD/GOOD = {v['ratio']:.4f} at the first look (4 layouts a side), layout "
                                   "noise ") and f"about {v['plan']['runs']} runs (1 run(s) per layout); " in v["message"]
    assert 0 < v["noise"] < 0.1 and f"layout noise {100 * v['noise']:.2f}% (a step of " \
        f"{v['plan']['step_in_noise_units']:.1f} x the noise)" in v["message"]  # noise as a percentage
    # the steps dearest to confirm, priced at the noise measured: 2x and 1.2x the minimum effect
    near = v["near_steps"]
    assert [x["times"] for x in near] == [2.0, 1.2] and all(x["runs"] > 0 for x in near)
    assert (f"at this noise, near the minimum effect: a step of 2x it (1%) about {near[0]['runs']} runs (the "
            f"confirmation {near[0]['phase_runs']['confirmation']}), named in {near[0]['named']} of 9 simulated; a step "
            f"of 1.2x it (0.6%) about {near[1]['runs']} runs") in v["message"]
    assert b.s.target_config != old.s.target_config and b.s.runs == 1
    assert [e["verb"] for e in b.log] == ["start"]  # the marks measured under the old configuration are gone
    with sqlite3.connect(path) as db:
        configs = db.execute("SELECT count(DISTINCT config) FROM runs").fetchone()[0]
    assert configs == 2
    # another metric of the same runs: started again too, and nothing is run for its first look
    said.clear()
    with closing(Store(path)) as store:
        v = _run(store, other, settings(hist, runs=1, metric="cg_ir"), hist["good"], hist["bad"],
                       say=said.append, plan_only=True)
    assert said[0].startswith("keeping the earlier bisection of minikernel")  # another metric: kept beside it
    assert v["status"] == "plan" and v["settings"]["metric"] == "cg_ir"
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(DISTINCT config) FROM runs").fetchone()[0] == 2


def test_a_bisection_of_another_range_keeps_the_earlier_one_which_its_range_takes_back(hist, prof, first, tmp_path):
    """A bisection per range and metric: starting one of another range puts the finished one aside
    (settings, log and verdict, all kept: the history and the report show its marks), and the
    command with its range takes it back and reprints its verdict, measuring nothing."""
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    good, bad, mid = hist["good"], hist["bad"], sha(hist, 1)
    said: list[str] = []
    with closing(Store(path)) as store:
        before = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
        other = _run(store, prof, settings(hist, shadow=False), good, mid, say=said.append)
        assert said[0] == (f"keeping the earlier bisection of minikernel ({good[:12]}..{bad[:12]} in cg_cost); the "
                           "same command with its range takes it back")
        assert other["bad"] == mid and other["status"] in ("noise", "not-shown")
        kept = {(b.good, b.bad): b for b in bisect.stored(store)}
        assert set(kept) == {(good, bad), (good, mid)}
        assert kept[good, bad].log == before.log and kept[good, bad].result.culprit == first["v"]["culprit"]
        assert {(v.good, v.bad) for _, v in bisect.kept(store)} == {(good, bad), (good, mid)}
        said.clear()
        again = _run(store, prof, settings(hist), good, bad, say=said.append)
        assert said[0].startswith(f"resuming the bisection of minikernel {good[:12]}..{bad[:12]} in cg_cost, kept "
                                  "beside the other")
        assert "the bisection is finished: its verdict, from the store (no run measured)" in said
        assert again["reprinted"] and again["culprit"] == first["v"]["culprit"]
        assert (again["cost"]["compiled_now"], again["cost"]["ran_now"]) == (0, 0)
        assert bisect.current(store).bad == bad  # the git-shaped verbs act on it again
        assert {(b.good, b.bad) for b in bisect.stored(store)} == {(good, bad), (good, mid)}


def test_an_unknown_metric_is_one_line_naming_the_metrics_printed(hist, prof, first, tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    with closing(Store(path)) as store, pytest.raises(LayoutbenchError) as e:
        _run(store, prof, settings(hist, metric="nope"), hist["good"], hist["bad"])
    assert str(e.value) == ("--metric 'nope': target cachegrind (cachegrind) of minikernel prints no such metric; "
                            "it prints cg_cost, cg_i1_misses, cg_ir; pass --metric cg_cost")


def test_the_log_prints_like_git_bisect_log_and_replays_to_the_same_log(hist, prof, first, tmp_path):
    with closing(Store(first["store"])) as store:
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
        log = b.text(prof)
    lines = log.splitlines()
    assert lines[0] == f"# layoutbench bisect log: minikernel repo {hist['repo']}, metric cg_cost"
    assert lines[1].startswith(f"layoutbench bisect start minikernel {hist['bad']} {hist['good']} --repo "
                               f"{hist['repo']} --metric cg_cost --target cachegrind --args iterations=300 --mode rerun --layout "
                               "random --layouts 4 ")
    assert lines[1].endswith(" --runs 2 --max-runs 2 --seed 1 --confidence 0.95 --min-effect 0.5%")
    assert lines[2].startswith("# endpoints: BAD is ") and " slower than GOOD (" in lines[2] and " A " not in lines[2]
    j = next(i for i, ln in enumerate(lines) if ln.startswith("# good: "))
    assert lines[j].startswith(f"# good: [{sha(hist, 1)}] {hist['commits'][1]['subject']} -- good (p vs GOOD=")
    assert lines[j + 1] == f"layoutbench bisect good {sha(hist, 1)} --kernel minikernel --repo {hist['repo']}"
    assert lines[-1] == f"# first bad commit: [{hist['regression']}] {first['v']['culprit_subject']}"
    # replayed into another store: the same settings and marks, without the measured notes
    with closing(Store(tmp_path / "other.sqlite")) as other:
        r = bisect.replay(other, log, profile.load)
        assert r.s.runs == 2 and r.s.args == ARGS and r.s.target == "cachegrind" and r.s.shadow is True
        assert (r.good, r.bad) == (hist["good"], hist["bad"])
        assert [(e["verb"], e["commit"], e["by"]) for e in r.log] == [("start", "", "user"),
                                                                       ("good", sha(hist, 1), "user")]
        assert r.window(r.commits(prof)) == (1, 2, [])
        again = r.text(prof).splitlines()
        assert again[1] == lines[1]
        assert again[-1] == lines[j + 1]
        assert bisect.current(other).key == r.key  # the verbs act on the replayed one


def test_judge_answers_git_bisect_run_with_its_exit_codes(hist, prof, first, tmp_path):
    """`judge` on a clone (same commits: the stored runs serve): 0 like GOOD, 1 like BAD, 125 (skip)
    for a working tree that does not build."""
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", hist["repo"], str(clone)], check=True)
    s = settings(hist, repo=str(clone))
    with closing(Store(path)) as store:
        code, j, det = bisect.judge(store, prof, s, sha(hist, 1), hist["good"], hist["bad"])
        assert (code, j.verdict, det["exit"], det["commit"]) == (0, "good", 0, sha(hist, 1))
        code, j, _ = bisect.judge(store, prof, settings(hist, repo=str(clone)), hist["bad"], hist["good"], hist["bad"])
        assert (code, j.verdict) == (1, "bad")
        (clone / "dev" / "ring.c").write_text("this does not compile\n")
        code, j, det = bisect.judge(store, prof, settings(hist, repo=str(clone)), None, hist["good"], hist["bad"])
        assert (code, j.verdict) == (125, "skip") and "ring.c" in j.note


def test_a_bisection_with_only_one_end_marked_says_what_to_mark(hist, prof, tmp_path):
    with closing(Store(tmp_path / "r.sqlite")) as store:
        bisect.start(store, prof, settings(hist), hist["bad"])  # `bisect start BAD`, GOOD not given yet
        with pytest.raises(LayoutbenchError, match=r"^the bisection needs a good and a bad commit; mark them with "
                                                   r"`layoutbench bisect good REV`"):
            _run(store, prof, settings(hist))
        assert store.runs() == []  # refused before anything was built or measured


def test_the_verdict_text_says_the_runs_per_layout_chosen(first):
    v = {**first["v"], "runs_per_layout": {"text": "runs per layout: 3 = sqrt(...)"}}
    assert "runs:    runs per layout: 3 = sqrt(...)" in _text(v).splitlines()
    assert not any(ln.startswith("runs:") for ln in _text({**first["v"], "runs_per_layout": None}).splitlines())
    # --runs given: no choice; the verdict still says where the costs of a layout and a run came from
    v = first["v"]
    assert v["runs_per_layout"] is None and (v["costs"]["layout_from"], v["costs"]["run_from"]) == ("measured",) * 2
    said = [ln for ln in _text(v).splitlines() if ln.startswith("costs:")]
    assert said == [f"costs:   a layout and a run, {v['costs']['text']}"] and " runs " in said[0], said
    assert not any(ln.startswith("costs:") for ln in _text({**v, "runs_per_layout": {"text": "x"}}).splitlines())


def test_the_progress_says_runs_spent_of_planned_and_the_time_left(hist, prof, first, tmp_path):
    """Without a budget: spent/planned (the plan's likely cost) and the time left at the costs
    measured in the store (each run's median duration, and a link's median for each new image
    at the share of new images this command had to link so far: all of them before any); with
    one: the time left only (the engine's line says the rest); nothing before a likely cost is known."""
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    with closing(Store(path)) as store:
        s = bisect.normalize(prof, settings(hist))
        p = bisect.Prober(prof, s, store)
        # cachegrind links the next image beside a run (its counts are its own) on a machine with two cores
        assert p.links_beside_runs == ((os.cpu_count() or 1) >= 2)
        p.links_beside_runs = False  # first the time of a target whose links and runs take turns
        ledger = decide.tracked._Ledger()
        clock = bisect.Clock(p, s, ledger)
        assert clock.progress() == ""  # no plan, no budget: nothing to say
        sec, why = clock.per_run()
        assert sec is not None and sec > 0 and "; measured: median of " in why, why
        links, runs = store.link_seconds("minikernel", "hosted"), store.run_seconds(
            "minikernel", "cachegrind", "rerun", " ".join(s.args.split()))
        assert links and runs
        assert sec == pytest.approx(float(np.median([r["duration"] for r in runs])) + float(np.median(links)) / 2)
        run, link = float(np.median([r["duration"] for r in runs])), float(np.median(links))

        def left(n: int, linked: int) -> str:
            return (f"about {costs.duration_text(n * run + linked * link)} left: {n} runs at {run:.3g} s + {linked} "
                    f"links at {link:.3g} s")

        ledger.spent, clock.likely = 10, 50
        assert clock.progress() == (f"; 10/50 runs spent/planned (the plan's likely cost); {left(40, 20)} (this command "
                                    "has measured no new image yet) (estimated; compiles not counted)")
        p.images_new, p.links_now = 8, 2  # a quarter of the new images needed a link: a quarter of the 20 to come
        assert clock.progress().endswith(f"; {left(40, 5)} (2 of the 8 new images this command measured were "
                                         "linked) (estimated; compiles not counted)"), clock.progress()
        assert clock.left(40)[0] == pytest.approx(40 * run + 5 * link)
        p.links_beside_runs = True  # the links beside the runs: the longer of the two, said "beside"
        t_left, text = clock.left(40)
        assert t_left == pytest.approx(max(40 * run, 5 * link))
        assert text.startswith(f"about {costs.duration_text(max(40 * run, 5 * link))} left: 40 runs at {run:.3g} s "
                               f"beside 5 links at {link:.3g} s (2 of the 8 new images"), text
        p.links_beside_runs = False
        p.images_new, p.links_now = 0, 0
        ledger.spent = 60  # beyond the plan, with no plan made again: said so, and no time left is guessed
        assert clock.progress() == ("; 60/50 runs spent/planned (beyond the plan's likely cost, at the noise measured "
                                    "so far too: the step may be near the minimum effect; --budget bounds it)")
        clock.replan = lambda: 55  # a plan made again that is beyond too: the same
        assert clock.progress().startswith("; 60/50 runs spent/planned (beyond the plan's likely cost")
        clock.replan = lambda: 80  # made again at the noise measured now: the new plan and the time left
        assert clock.progress() == (f"; 60/80 runs spent/planned (the plan's likely cost, made again at the noise "
                                    f"measured so far); {left(20, 10)} (this command has measured no new image yet) "
                                    "(estimated; compiles not counted)")
        assert clock.likely == 80
        clock.replan, clock.likely, clock.replanned = None, 50, False
        ledger.spent = 10
        ledger.budget = 30
        assert clock.progress() == (f"; {left(20, 10)} (this command has measured no new image yet) (estimated; "
                                    "compiles not counted)")
        got = clock.summary()  # the verdict's JSON: the same numbers
        assert {k: got[k] for k in ("runs", "spent", "likely_runs", "duration", "duration_text")} == \
            {"runs": 30, "spent": 10, "likely_runs": 50, "duration": None, "duration_text": None}
        assert (got["seconds_per_run"], got["time_spent_estimate"], got["time_left_estimate"]) == \
            (sec, pytest.approx(10 * sec), pytest.approx(20 * sec))
        ledger.spent = 35  # past the budget (a last probe's runs): no time left, not a negative one
        assert clock.summary()["time_left_estimate"] == 0
        # --budget 1h: the runs it pays for at that time a run, set as soon as the clock is made
        timed = dataclasses.replace(s, budget_time=3600.0)
        ledger = decide.tracked._Ledger()
        clock = bisect.Clock(p, timed, ledger)
        assert ledger.budget == int(3600 // sec) > 0
        assert clock.assumes() == f"budget 1h: {ledger.budget} runs at {sec:.3g} s a run ({why})"
        assert clock.summary()["duration_text"] == "1h"


def test_a_probe_line_says_the_runs_spent_of_the_likely_cost_and_the_time_left(first, hist):
    """Once the endpoints' test decided they differ, the likely cost of the whole bisection is made again
    at the noise and change that test measured: each probe's progress line says the runs spent of it
    and the time left."""
    likely = first["v"]["budget"]["likely_runs"]
    assert isinstance(likely, int) and likely > 0
    probes = [m for m in first["said"] if m.startswith("probe ")]
    assert len(probes) == 1, first["said"]
    got = re.fullmatch(rf"probe {sha(hist, 1)[:12]} \(1 commit\(s\) left to test; (\d+) runs spent\); (\d+)/(\d+) runs "
                       r"spent/planned \(the likely cost once the endpoints' test decided\); about [\w.]+ left: \d+ runs at [0-9.e+-]+ s "
                       r"(?:\+|beside) \d+ links at [0-9.e+-]+ s \(\d+ of the \d+ new images this command measured were linked\); "
                       r"the naive bisection's \d+ runs included \(estimated; compiles not counted\)",
                       probes[0])
    assert got is not None, probes[0]
    assert got[1] == got[2] and int(got[3]) == likely


def test_the_runs_the_endpoints_still_need_when_a_budget_ends_before_them():
    """'about N more runs would be needed': before a layout is measured, the first look; once both
    ends have values, the look at which their test likely decides (forecast.expected_cost) at the
    noise and change measured; never below one run; the runs already measured count."""
    import math
    from types import SimpleNamespace

    eng = decide.Tracked(SimpleNamespace(higher_is_better=False))
    ends = SimpleNamespace(good="g" * 40, bad="b" * 40)
    s = bisect.Settings(kernel="k", layouts=4, runs=2)
    commits = [f"{i:x}" * 40 for i in range(9)]
    first_look = 2 * max(decide.MIN_LAYOUTS, 4) * 2
    assert bisect.budget._ends_unspent(eng, ends, s, s.plan(), commits) == first_look
    eng.have = {ends.good: {1: 2, 2: 2}, ends.bad: {1: 2}}
    assert bisect.budget._ends_unspent(eng, ends, s, s.plan(), commits) == first_look - 6
    eng.have = {ends.good: {i: 2 for i in range(1, 9)}, ends.bad: {i: 2 for i in range(1, 9)}}
    assert bisect.budget._ends_unspent(eng, ends, s, s.plan(), commits) == 1  # all spent: one run, not zero
    eng.have = {ends.good: {i: 2 for i in range(1, 5)}, ends.bad: {i: 2 for i in range(1, 5)}}
    eng.pool.add(ends.good, {1: [100.0], 2: [101.0], 3: [99.0], 4: [100.5]})
    eng.pool.add(ends.bad, {1: [100.6], 2: [101.2], 3: [99.9], 4: [100.9]})
    s2, _ = eng.pool.var()
    d = float(eng.pool.y[ends.bad].mean() - eng.pool.y[ends.good].mean())
    c = forecast.expected_cost(len(commits), math.exp(d), math.sqrt(s2), s.plan())
    want = max(1, 2 * c["endpoint_layouts"] * 2 - 16)
    assert c["endpoint_layouts"] > 8 and bisect.budget._ends_unspent(eng, ends, s, s.plan(), commits) == want


# -- runs per layout from the costs, the budget's clock, the farm's first prober -------------------

def _copy_without_state(first, hist, tmp_path, name="r.sqlite"):
    """The first bisection's store (its runs: 2 a layout on the endpoints' seeds) without its
    bisection state: a bisection started on it chooses anew and reads its runs, measuring nothing."""
    path = tmp_path / name
    path.write_bytes(first["store"].read_bytes())
    with closing(Store(path)) as store:
        if (b := bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))) is not None:
            b.reset()
    return path


def _costed(prof, target="cachegrind", **stated):
    t = prof.targets[target]
    return dataclasses.replace(prof, targets={**prof.targets, target: dataclasses.replace(
        t, settings={**t.settings, **stated})})


@pytest.fixture(scope="module")
def timed(hist, prof, first, tmp_path_factory):
    """The first bisection's store without its state, plus GOOD and BAD timed on the local target
    (the hosted images cachegrind ran: no link) at the endpoints' 4 seeds x 2 runs: a store where a
    choice of R on a timed target reads every run it needs."""
    path = _copy_without_state(first, hist, tmp_path_factory.mktemp("timed"))
    with closing(Store(path)) as store:
        p = bisect.Prober(prof, bisect.normalize(prof, settings(hist, target="local")), store)
        for c in (hist["good"], hist["bad"]):
            p.groups(p.checkout(c), 4, 2)
    return {**first, "store": path}


def test_an_exact_target_is_said_so_in_the_settings_and_a_timed_one_is_not(hist, prof):
    """normalize records why the followed metric is exact on the target: cachegrind's counts and the
    cache model's ic_* counts are; a timed run is not."""
    def exact(**kw):
        return bisect.normalize(prof, settings(hist, **kw)).exact

    assert exact() == "the cachegrind target is deterministic"
    assert exact(target="qemu-icache", metric="ic_cost") == "the qemu-icache target is deterministic"
    assert exact(target="local") == ""
    assert exact(target="cachegrind,local") == ""  # a farm: exact only where every machine is


def test_an_exact_target_takes_one_run_a_layout_whatever_the_costs(hist, prof, first, tmp_path):
    """--runs not given on cachegrind, whose runs repeat exactly, with layout_cost 30 s and run_cost
    1 s stated (a layout far dearer than a run): R = 1 at once, the first look at 1 run a layout (no
    second run to split a noise that is not there), and said so; --budget 7 is refused in one line
    for the 8 runs of that look, --budget 8 pays for it."""
    path = _copy_without_state(first, hist, tmp_path)
    before = _nruns(path)
    said: list[str] = []
    costed = _costed(prof, layout_cost=30, run_cost=1)
    with closing(Store(path)) as store:
        v = _run(store, costed, settings(hist, runs=1, runs_auto=True, budget=40), hist["good"], hist["bad"],
                 say=said.append, plan_only=True)
        with pytest.raises(LayoutbenchError) as e:
            _run(store, costed, settings(hist, runs=1, runs_auto=True, budget=7), hist["good"], hist["bad"],
                 plan_only=True)
        assert str(e.value).startswith("--budget 7 runs does not pay for the endpoints' first look (8 runs: 4 "
                                       "layouts x 1 run(s) a side), the least"), str(e.value)
        assert _run(store, costed, settings(hist, runs=1, runs_auto=True, budget=8), hist["good"], hist["bad"],
                    plan_only=True)["status"] == "plan"
    ch = v["runs_per_layout"]
    assert (ch["runs"], ch["look_runs"], ch["exact"], v["settings"]["runs"]) == (
        1, 1, "the cachegrind target is deterministic", 1), ch
    assert (ch["layout_cost"], ch["run_cost"]) == (30, 1)
    assert ch["text"] == ("runs per layout: 1: the cachegrind target is deterministic (a second run of an image "
                          "prints what the first did), so no run is spent splitting the noise")
    look = f"the endpoints' first look: 4 layouts x 1 run(s) of {hist['good'][:12]} and of {hist['bad'][:12]}"
    assert said.index(ch["text"]) + 1 == said.index(look)
    assert v["budget"]["spent"] == 8 and _nruns(path) == before  # the look is the plan's: nothing beyond it


def _nruns(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM runs").fetchone()[0]


def test_a_bisection_kept_from_before_its_target_was_known_exact_learns_it_when_resumed(hist, prof, first, tmp_path):
    """A bisection started and stored without the target's exactness (its settings say '', as a state
    written before it was recorded does) and resumed with the same range: R = 1 at once from the
    1-run look, as a new one on cachegrind does."""
    path = _copy_without_state(first, hist, tmp_path)
    with closing(Store(path)) as store:
        b = bisect.start(store, prof, settings(hist, runs=1, runs_auto=True), hist["bad"], hist["good"])
        b.s.exact = ""
        b.save()
        assert bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None)).s.exact == ""
        v = _run(store, prof, settings(hist, runs=1, runs_auto=True), hist["good"], hist["bad"], plan_only=True)
    ch = v["runs_per_layout"]
    assert (ch["runs"], ch["look_runs"], ch["exact"]) == (1, 1, "the cachegrind target is deterministic"), ch
    assert v["budget"]["spent"] == 8


def test_runs_per_layout_from_stated_costs_and_the_two_run_look_charged_to_the_budget(hist, prof, timed, tmp_path):
    """--runs not given on the timed target, layout_cost 30 s and run_cost 1 s stated: GOOD and BAD
    are looked at with 2 runs a layout, R comes from the measured noise split (recomputed here from
    the same stored runs), the runs of that look beyond R count against --budget 400, the plan and
    the progress say the budget's time at 1 + 30 / R s a run; a plan does not keep the choice."""
    path = _copy_without_state(timed, hist, tmp_path)
    said: list[str] = []
    with closing(Store(path)) as store:
        v = _run(store, _costed(prof, "local", layout_cost=30, run_cost=1), settings(
            hist, target="local", runs=1, runs_auto=True, budget=400), hist["good"], hist["bad"], say=said.append,
            plan_only=True)
        kept = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
        p = bisect.Prober(prof, bisect.normalize(prof, settings(hist, target="local")), store)
        looked = [p.groups(p.checkout(c), 4, 2) for c in (hist["good"], hist["bad"])]
    assert v["commits"] == 2
    ch = v["runs_per_layout"]
    split = costs.noise_split(looked)
    r = costs.runs_per_layout(30, 1, split.var_run, split.var_layout)[0]
    assert (ch["runs"], ch["look_runs"], ch["layout_cost"], ch["run_cost"], v["settings"]["runs"]) == (r, 2, 30, 1, r)
    assert ch["layout_noise"] == pytest.approx(math.sqrt(split.var_layout))
    assert ch["run_noise"] == pytest.approx(math.sqrt(split.var_run)) and ch["run_noise"] > 0  # timed: runs differ
    assert ch["text"].startswith(f"runs per layout: {r} = sqrt((layout_cost 30 s / run_cost 1 s) x (run noise ") \
        and ch["text"].endswith("(costs stated: layout_cost 30 s, run_cost 1 s; noise measured on GOOD and BAD, "
                                "4 layouts x 2 runs)")
    assert ch["text"] in said and ch["text"] in v["message"].splitlines()
    # the budget: the look's runs beyond R (at R = 1, its second runs: 4 layouts x 2 ends) and the plan's
    # first look at R are the runs measured; each is charged once
    bd = v["budget"]
    sec = 1 + 30 / r
    assert (bd["runs"], bd["spent"], bd["likely_runs"]) == (400, 2 * 4 * max(2, r), v["plan"]["runs"])
    assert bd["seconds_per_run"] == pytest.approx(sec)
    assumes = f"budget 400 runs: 400 runs at {sec:.3g} s a run (run_cost 1 s + layout_cost 30 s / {r} run(s) per layout"
    assert any(ln.startswith(assumes) for ln in said), said
    assert f"at {sec:.3g} s a run" in v["message"]
    # a plan measures and says; the bisection it plans chooses again when it runs
    assert kept.s.runs_choice is None and kept.s.budget == 400


def test_runs_per_layout_from_measured_costs_split_the_noise_only_where_a_layout_costs_more(
        hist, prof, timed, tmp_path):
    """Nothing stated, on the timed target: the costs are the medians the store holds (here set to
    known values, so that no timing decides the test).  A link of 0.5 s against a run of 2 s: R = 1
    from the 1-run look, no second run; a link of 3 s against a run of 1 s: the 2-run look splits
    the noise."""
    for link, dur, look in [(0.5, 2.0, 1), (3.0, 1.0, 2)]:
        path = _copy_without_state(timed, hist, tmp_path, f"{link}.sqlite")
        with sqlite3.connect(path) as db:
            db.execute("UPDATE builds SET link_seconds = ? WHERE link_seconds IS NOT NULL", (link,))
            db.execute("UPDATE runs SET duration = ?, boot_seconds = NULL, deploy_seconds = NULL", (dur,))
        said: list[str] = []
        with closing(Store(path)) as store:
            nl = len(store.link_seconds("minikernel", "hosted"))
            nr = len(store.run_seconds("minikernel", "local", "rerun", ARGS))
            v = _run(store, prof, settings(hist, target="local", runs=1, runs_auto=True), hist["good"], hist["bad"],
                     say=said.append, plan_only=True)
        ch = v["runs_per_layout"]
        where = f"measured: median of {nl} link(s) {link:g} s, {nr} runs {dur:g} s"
        assert nr == 16 and (ch["runs"], ch["look_runs"], ch["costs"]["text"]) == (1 if look == 1 else ch["runs"], look,
                                                                                  where), ch
        r = ch["runs"]
        # what was measured: the choice's look (at R = 1 the plan's first look itself), and, where the plan could
        # not price the range from its first look, the endpoints' test it went on with (their runs are its own)
        went_on = v["plan"]["priced_by"] == "endpoints' test"
        if went_on:  # said as it happens, and in the plan's first line with what that test showed
            assert any(ln.startswith("plan: the first look cannot price the bisection: a step of x") for ln in said)
            assert (", so the endpoints' test went on: " in v["message"].splitlines()[0]
                    and v["plan"]["endpoints_status"] and v["plan"]["first_look"]["low"] <= v["plan"]["first_look"]["high"])
        if look == 1:
            assert ch["text"] == (f"runs per layout: 1: a new layout ({link:g} s) costs no more than a run ({dur:g} s), "
                                  f"so no run is spent splitting the noise (costs {where})")
            assert v["budget"]["spent"] == (v["plan"]["phase_runs"]["endpoints"] if went_on else 8)
        else:
            assert ch["text"].startswith(f"runs per layout: {r} = sqrt((a layout {link:g} s / a run {dur:g} s) x (run "
                                         "noise ") and ch["text"].endswith(
                f"(costs {where}; noise measured on GOOD and BAD, 4 layouts x 2 runs)")
            assert v["budget"]["spent"] == (v["plan"]["phase_runs"]["endpoints"] if went_on else 2 * 4 * max(2, r))
            assert v["budget"]["spent"] >= 2 * 4 * max(2, r)
        assert ch["text"] in said and ch["text"] in v["message"].splitlines()
        # (a look at R > 2 runs a layout, or the endpoints' test the plan went on with, timed new runs and
        # links: their real durations join the medians)
        with closing(Store(path)) as store:
            run = float(np.median([x["duration"] for x in store.run_seconds("minikernel", "local", "rerun", ARGS)]))
            linked = float(np.median(store.link_seconds("minikernel", "hosted")))
        assert v["budget"]["seconds_per_run"] == pytest.approx(run + linked / r)  # a link shared by R runs


def test_an_uncertain_culprit_is_what_the_single_layout_bisection_is_compared_with(hist, prof, first, tmp_path):
    """A minimum effect between the confirmation's fresh ratio and the endpoints' (both measured by
    the first bisection; at most 4 layouts, so every run is in its store): the endpoints differ by
    it, the culprit's fresh layouts do not -- "uncertain", its candidate BAD.  The single-layout
    bisection, which blames BAD too, agrees with that candidate."""
    ends, fresh = first["v"]["endpoints"]["ratio"], first["v"]["effect"]["ratio"]
    assert fresh < ends and first["v"]["endpoints"]["layouts"] == first["v"]["effect"]["layouts"] == 4  # premise
    path = _copy_without_state(first, hist, tmp_path)
    before = _nruns(path)
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, min_effect=(ends + fresh) / 2 - 1, max_layouts=4), hist["good"],
                       hist["bad"])
    assert (v["status"], v["candidate"], v.get("culprit")) == ("uncertain", hist["bad"], None), v["message"]
    sl = v["single_layout"]
    assert sl["culprit"] == hist["bad"] and sl["agrees"] is True and _nruns(path) == before
    assert _text(v).splitlines()[-1].startswith("single-layout bisection (default link, 1 run per probe, as "
                                                      "asv find) agrees: it blames ")


def test_the_choice_of_one_run_a_layout_where_a_layout_is_no_dearer_is_returned_and_kept(hist, prof, timed, tmp_path):
    """choose_runs returns the choice it made (the caller saves the bisection on it): on the timed
    target, a link of 0.5 s against a run of 2 s, R = 1 from the 1-run look, in the settings and
    returned."""
    path = _copy_without_state(timed, hist, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE builds SET link_seconds = 0.5 WHERE link_seconds IS NOT NULL")
        db.execute("UPDATE runs SET duration = 2.0, boot_seconds = NULL, deploy_seconds = NULL")
    before = _nruns(path)
    said: list[str] = []
    with closing(Store(path)) as store:
        s = bisect.normalize(prof, settings(hist, target="local", runs=3, runs_auto=True))
        b = bisect.start(store, prof, s, hist["bad"], hist["good"])
        p = bisect.Prober(prof, s, store)
        cos = {c: p.checkout(c) for c in b.commits(prof)}
        ch = bisect.choose_runs(p, b, s, cos, said.append)
    assert ch is not None and ch is s.runs_choice and (ch["runs"], ch["look_runs"], s.runs) == (1, 1, 1), ch
    assert ch["text"].startswith("runs per layout: 1: a new layout (0.5 s) costs no more than a run (2 s)")
    look = f"the endpoints' first look: 4 layouts x 1 run(s) of {hist['good'][:12]} and of {hist['bad'][:12]}"
    assert said == [look, ch["text"]] and _nruns(path) == before


def test_the_plan_states_the_layout_noise_in_percent_and_the_step_in_noise_units():
    """The plan's line from its first look, on a prober of known values (one run a layout, the logs
    of GOOD -0.03, +0.01, +0.05, -0.03 and BAD 0.10 + the same; no build): BAD/GOOD = e^0.1,
    the layout noise the pooled sd of the logs, written in percent with two decimals."""
    class Known:
        higher_is_better = False

        def groups(self, c, k, r):
            offs = [-0.03, 0.01, 0.05, -0.03, 0.0, 0.02][:k]
            return {f"random:{i + 1}": [math.exp(o + (0.1 if c == "B" else 0.0))] * r for i, o in enumerate(offs)}

    s = bisect.Settings(kernel="k", layouts=4, runs=1)
    b = bisect.Bisection(None, s, [{"verb": "start", "commit": "", "note": "", "by": "user", "good": "G", "bad": "B"}])
    said: list[str] = []
    v = bisect.budget.first_look_plan(decide.Tracked(Known()), b, s, s.plan(), ["G", "x", "B"], said.append).to_dict()
    y = np.array([-0.03, 0.01, 0.05, -0.03])
    noise = math.sqrt(2 * float(np.sum((y - y.mean()) ** 2)) / 6)  # pooled over both ends: 6 df
    assert v["noise"] == pytest.approx(noise) and v["ratio"] == pytest.approx(math.exp(0.1))
    assert v["message"].startswith(f"plan: BAD/GOOD = {math.exp(0.1):.4f} at the first look (4 layouts a side), "
                                   f"layout noise {100 * noise:.2f}% (a step of {0.1 / noise:.1f} x the noise); ")
    assert f"{100 * noise:.2f}" == "3.83"


def test_the_plan_warns_where_a_step_of_twice_the_minimum_effect_is_likely_missed():
    """The plan at a layout noise of 3.83% (the prober above): a step of 1% (twice the 0.5%
    minimum effect) is likely missed; the plan says so in two lines, with the layouts a side that
    would name it and a --min-effect at which a step of twice it is likely named, and --json holds
    the same numbers (forecast.missed_step).  At a noise of 0.1% it says nothing of it."""
    class Known:
        higher_is_better = False

        def __init__(self, scale):
            self.scale = scale

        def groups(self, c, k, r):
            offs = [-0.03, 0.01, 0.05, -0.03, 0.0, 0.02][:k]
            return {f"random:{i + 1}": [math.exp(self.scale * o + (0.1 if c == "B" else 0.0))] * r
                    for i, o in enumerate(offs)}

    s = bisect.Settings(kernel="k", layouts=4, runs=1)
    b = bisect.Bisection(None, s, [{"verb": "start", "commit": "", "note": "", "by": "user", "good": "G", "bad": "B"}])
    v = bisect.budget.first_look_plan(decide.Tracked(Known(1.0)), b, s, s.plan(), ["G", "x", "B"],
                                 lambda m: None).to_dict()
    m = v["missed_step"]
    assert m == forecast.missed_step(v["noise"], s.plan())
    assert m["likely_missed"] and m["step"] == 0.01 and m["power"] < 0.8 and m["needed"] > m["layouts"], m
    assert m["larger_min_effect"] > 0.005 and m["larger_min_effect_power"] >= 0.8
    lines = v["message"].splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("warning:"))
    assert lines[at] == (f"warning: at this noise a step of 1.00% (twice the 0.50% minimum effect) is likely missed: "
                         f"named with probability {m['power']:.2f} (its confirmation looks at most {m['layouts']} layouts a "
                         f"side); about {m['needed']} layouts a side ({2 * m['needed']} runs a test at 1 run(s) a "
                         "layout) would name it 9 times in 10")
    assert lines[at + 1] == (f"         what would fix it: --min-effect {100 * m['larger_min_effect']:g} (a step of "
                             f"{200 * m['larger_min_effect']:.2f}% is then named with probability "
                             f"{m['larger_min_effect_power']:.2f})")
    quiet = bisect.budget.first_look_plan(decide.Tracked(Known(0.025)), b, s, s.plan(), ["G", "x", "B"],
                                     lambda m: None).to_dict()
    assert not quiet["missed_step"]["likely_missed"] and quiet["missed_step"]["power"] >= 0.8
    assert "warning:" not in quiet["message"]


def test_the_window_of_a_bisection_ends_at_bad_until_a_bad_mark_is_nearer():
    """No bad mark: the window ends at BAD (the last commit), the candidates are the commits
    between; the next probe is the one nearest the middle (the lower of two)."""
    s = bisect.Settings(kernel="k")
    commits = ["g", "c1", "c2", "c3", "c4", "bad"]
    b = bisect.Bisection(None, s, [{"verb": "start", "commit": "", "note": "", "by": "user"}])
    assert b.window(commits) == (0, 5, [1, 2, 3, 4]) and b.next_probe(commits) == 2
    b.log.append({"verb": "good", "commit": "c2", "note": "", "by": "user"})
    assert b.window(commits) == (2, 5, [3, 4]) and b.next_probe(commits) == 3
    b.log.append({"verb": "bad", "commit": "c4", "note": "", "by": "user"})
    assert b.window(commits) == (2, 4, [3]) and b.next_probe(commits) == 3
    b.log.append({"verb": "skip", "commit": "c3", "note": "", "by": "user"})
    assert b.window(commits) == (2, 4, []) and b.next_probe(commits) is None


def test_a_bisection_in_a_new_store_chooses_runs_from_the_costs_its_first_look_measured(hist, prof, first, tmp_path):
    """Nothing stated, nothing measured yet: the endpoints' first look with 1 run a layout (3
    layouts a side) is what measures a link and a run; the choice says so."""
    path = tmp_path / "new.sqlite"
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, runs=1, layouts=2, runs_auto=True), hist["good"], hist["bad"],
                       plan_only=True)
    ch = v["runs_per_layout"]
    assert ch is not None and ch["costs"]["layout_from"] == ch["costs"]["run_from"] == "measured", v
    assert ch["costs"]["text"].startswith("measured: median of 6 link(s) ") and ", 6 runs " in ch["costs"]["text"]


def test_a_farm_measures_its_first_look_on_the_first_machine_and_names_the_others(hist, prof, first, tmp_path):
    """--target cachegrind,local: the plan's first look is measured by the first machine's prober
    (cachegrind: every run is in the store) and the other machine is named in one line."""
    path = _copy_without_state(first, hist, tmp_path)
    before = _nruns(path)
    said: list[str] = []
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, target="cachegrind,local"), hist["good"], hist["bad"],
                       say=said.append, plan_only=True)
        assert store.runs(target="local") == []
    assert v["status"] == "plan" and _nruns(path) == before
    also = [m for m in said if m.startswith("also target ")]
    assert len(also) == 1 and also[0].endswith(": 2 probes per round, one per machine"), said


def test_a_range_without_a_commit_or_a_judge_without_ends_is_one_line(hist, prof, tmp_path):
    with closing(Store(tmp_path / "r.sqlite")) as store:
        with pytest.raises(bisect.Abort) as e:  # no bisection in progress, no --good/--bad
            bisect.judge(store, prof, settings(hist), sha(hist, 1), None, None)
        assert str(e.value) == ("judge needs --good and --bad, or a bisection of this kernel and repository in "
                                "progress")
        bisect.start(store, prof, settings(hist), hist["bad"])  # one in progress, GOOD not marked yet
        with pytest.raises(bisect.Abort):
            bisect.judge(store, prof, settings(hist), sha(hist, 1), None, None)
        with pytest.raises(LayoutbenchError) as e:  # BAD before GOOD: nothing in GOOD..BAD
            _run(store, prof, settings(hist), hist["bad"], hist["good"])
        assert str(e.value) == f"{hist['bad'][:12]}..{hist['good'][:12]} holds no commit; is GOOD an ancestor of BAD?"
        assert store.runs() == []
    # `git bisect run` skips a commit on 125 and marks it bad on 1..127 otherwise: an uncertain probe is skipped
    assert bisect.JUDGE_EXIT == {"good": 0, "bad": 1, "between": 1, "uncertain": 125, "skip": 125}


def test_a_budget_spent_before_the_endpoints_decide_says_how_many_more_runs(hist, prof, first, tmp_path):
    """Not decided at this budget: the runs spent of it, and about how many more the endpoints
    need (their first look here: none measured yet), at the time a run takes."""
    from types import SimpleNamespace

    path = _copy_without_state(first, hist, tmp_path)
    with closing(Store(path)) as store:
        s = bisect.normalize(prof, settings(hist, budget=10))
        b = bisect.start(store, prof, s, hist["bad"], hist["good"])
        p = bisect.Prober(prof, s, store)
        ledger = decide.tracked._Ledger(10)
        ledger.spent = 8
        clock = bisect.Clock(p, s, ledger)
        sec, _ = clock.per_run()
        v = bisect.budget.budget_at_endpoints(decide.Tracked(SimpleNamespace(higher_is_better=False)), b, s,
                                        b.commits(prof), clock, prof, p).to_dict()
        kept = bisect.Bisection.load(store, b.key)
    assert sec is not None and v["status"] == "budget" and v["more_runs"] == 16  # 4 layouts x 2 runs x 2 ends
    assert v["message"] == (f"not decided at this budget (8 of 10 runs spent): the endpoints have not shown a change "
                            f"yet; about 16 more runs would be needed (about {costs.duration_text(16 * sec)} "
                            f"at {sec:.3g} s a run)")
    assert kept.result.message == v["message"] and v["budget"]["spent"] == 8
    with closing(Store(path)) as store:  # kept apart: another bisection started in its place does not lose it
        bisect.start(store, prof, s, sha(hist, 1), hist["good"])
        assert [k.message for _, k in bisect.state.kept(store)] == [v["message"]]
    assert v["commits"] == len(b.commits(prof)) - 1 == 2  # the commits after GOOD, as a finished verdict counts them
    assert _text(v).splitlines()[2] == f"verdict: {v['message']}"


def test_a_budget_spent_in_the_search_leaves_the_range_and_its_candidates(hist, prof, first, tmp_path):
    """The endpoints' first look (16 runs) decides; a budget of 17 ends at the first probe: the verdict
    names no commit, its range is every commit after GOOD, each a candidate, and nothing was measured
    (the first bisection's runs are in the store)."""
    path = _copy_without_state(first, hist, tmp_path)
    before = _nruns(path)
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, budget=17), hist["good"], hist["bad"])
    assert v["status"] == "budget" and v["culprit"] is None, v["message"]
    assert v["range"] == [sha(hist, 1), sha(hist, 2)]
    assert [(c["commit"], c["probability"]) for c in v["candidates"]] == [(sha(hist, 1), 0.5), (sha(hist, 2), 0.5)]
    assert v["budget"]["spent"] <= 17 and _nruns(path) == before
    assert _text(v).splitlines()[2].startswith(f"verdict: not decided at this budget: the step is among "
                                               f"{sha(hist, 1)[:12]} (50%), {sha(hist, 2)[:12]} (50%)")


def test_a_resumed_choice_reads_its_look_again_and_measures_nothing(hist, prof, first, tmp_path):
    """A bisection that chose R keeps the choice; resumed, its look is read again at the runs it
    was measured with (2 when an older choice does not say), never with more."""
    path = _copy_without_state(first, hist, tmp_path)
    before = _nruns(path)
    with closing(Store(path)) as store:
        s = bisect.normalize(prof, settings(hist, runs=1, runs_choice={"runs": 1, "text": "runs per layout: 1"}))
        b = bisect.start(store, prof, s, hist["bad"], hist["good"])
        p = bisect.Prober(prof, s, store)
        cos = {c: p.checkout(c) for c in b.commits(prof)}
        assert bisect.choose_runs(p, b, s, cos, lambda m: None) == s.runs_choice
        assert p.cost()["runs"] == 2 * 4 * 2  # the look: 4 layouts x 2 runs a side, read from the store
        assert (p.compiled_now, p.ran_now) == (0, 0)  # ... and nothing compiled or run for it
    assert _nruns(path) == before


def test_an_interval_prints_its_open_end_also_when_read_back_as_null():
    """A one-sided interval's open end is infinite in memory and null in the stored JSON: ∞ or 0."""
    assert vtext.interval(0.99123, 1.01314) == "0.9912…1.0131"
    assert vtext.interval(1.0051, math.inf) == vtext.interval(1.0051, None) == "1.0051…∞"
    assert vtext.interval(None, 0.995) == "0…0.9950"


def test_the_choice_of_runs_per_layout_is_kept_before_the_endpoints_are_tested(hist, prof, first, tmp_path):
    """The choice of runs per layout is saved as soon as it is made: a bisection stopped in its
    endpoints' test (before any mark is saved) resumes with the same R."""
    path = _copy_without_state(first, hist, tmp_path)

    class Stop(Exception):
        pass

    def say(m):
        if m.startswith("endpoints: "):
            raise Stop(m)

    with closing(Store(path)) as store:
        with pytest.raises(Stop):
            _run(store, prof, settings(hist, runs=3, runs_auto=True), hist["good"], hist["bad"], say=say)
        s = settings(hist)
        bisect.normalize(prof, s)
        b = bisect.Bisection.load(store, bisect.state_key(s.kernel, s.repo, s.subdir))
    assert b.s.runs_choice is not None and b.s.runs == b.s.runs_choice["runs"] != 3, b.s


def test_an_endpoints_test_that_shows_no_change_states_the_step_it_could_have_missed(hist, prof, first, tmp_path):
    """GOOD..the layout-only commit at a cap of 4 layouts: no change shown, no commit blamed, and
    the verdict states the smallest step those layouts could have missed (a finite ratio: JSON's
    ``endpoints.shows``)."""
    path = _copy_without_state(first, hist, tmp_path)
    with closing(Store(path)) as store:
        v = _run(store, prof, settings(hist, layouts=4, max_layouts=4), hist["good"], sha(hist, 1))
    assert v["status"] == "not-shown" and v["culprit"] is None, v["message"]
    assert (v["probes"], v["rounds"]) == (0, 0)  # no probe was measured
    shows = v["endpoints"]["shows"]
    assert shows is not None and 0 < shows < 1, v["endpoints"]


def test_the_subject_of_a_commit_that_cannot_be_read_is_empty(hist, prof):
    s = settings(hist)
    bisect.normalize(prof, s)
    assert bisect.state.subject_of(prof, s, "0" * 40) == ""
    assert bisect.state.subject_of(prof, s, hist["bad"]) == source.describe(
        source.resolve(prof, hist["bad"], s.repo, s.subdir))["subject"] != ""


def test_the_likely_cost_is_made_only_from_a_measured_noise():
    """The progress line's plan (the likely runs) needs both ends measured and a layout noise above
    zero: from a pool without spread (a benchmark that never varies) no plan is made."""
    from types import SimpleNamespace

    b = SimpleNamespace(good="g", bad="b")
    y = {"g": np.log([1.0, 1.01, 0.99]), "b": np.log([1.1, 1.11, 1.09])}
    commits = ["g", "c", "b"]
    def eng(s2):
        return SimpleNamespace(pool=SimpleNamespace(y=y, var=lambda: (s2, 4)))
    assert bisect.budget.likely_runs(eng(1e-4), b, decide.Plan(), commits) > 0
    assert bisect.budget.likely_runs(eng(0.0), b, decide.Plan(), commits) is None
    assert bisect.budget.likely_runs(eng(math.nan), b, decide.Plan(), commits) is None
    assert bisect.budget.likely_runs(SimpleNamespace(pool=SimpleNamespace(y={"g": y["g"]}, var=lambda: (1e-4, 4))),
                                      b, decide.Plan(), commits) is None


def test_a_prober_given_a_farms_settings_measures_on_the_first_machine(hist, prof, tmp_path):
    """`bisect judge` and the first prober of a farm take the bisection's settings as they are:
    with --target cachegrind,local the prober's target and name are the first machine's."""
    with closing(Store(tmp_path / "r.sqlite")) as store, bisect.Prober(
            prof, settings(hist, target="cachegrind,local"), store) as p:
        assert (p.s.target, p.name, p.target.spec.name) == ("cachegrind", "cachegrind", "cachegrind")


def test_the_engine_passes_the_metrics_direction_to_the_decision():
    """A metric where higher is better (a throughput): BAD 10% above GOOD is faster, not slower --
    the engine gives the decision the prober's direction."""
    from types import SimpleNamespace

    def groups(co, k, r, first=0):
        return {f"random:{s}": [(1.1 if co == "b" else 1.0) * (1 + 0.01 * math.sin(s))] * r
                for s in range(first + 1, first + k + 1)}

    for higher, word in ((True, "faster"), (False, "slower")):
        p = SimpleNamespace(name="m", higher_is_better=higher, groups=groups)
        ends = decide.endpoints(decide.Tracked(bisect.Engine(p, {"g": "g", "b": "b"})), "g", "b", decide.Plan())
        assert (ends.status, ends.comparison.verdict) == ("differs", word)


def test_an_interval_is_labelled_with_its_level_only_at_the_confidence_asked():
    ci = _ci_label
    assert ci(0.9, {"settings": {"confidence": 0.9}}) == "90% CI"  # --confidence 0.9
    assert ci(0.95, {"settings": {"confidence": 0.9}}) == "CI"
    assert ci(0.95, {}) == ci(0.95, {"settings": None}) == "95% CI"  # the default
    assert ci(0.969604, {"settings": {"confidence": 0.95}}) == ci(None, {}) == "CI"  # a test's own level


def test_a_refused_setting_names_only_the_options_given_in_the_command_to_start_anew(tmp_path, prof):
    """A continued bisection given --runs 3 (it measures with 2): the refusal names what it uses and
    a command with --runs 3 only -- not the settings left out (here --layouts, left at its default)."""
    with closing(Store(tmp_path / "r.sqlite")) as store:
        b = bisect.Bisection(store, bisect.Settings(kernel="minikernel", runs=2, layouts=6))
        now = bisect.Settings(kernel="minikernel", runs=3, given=("runs",))
        assert now.layouts != b.s.layouts
        with pytest.raises(LayoutbenchError) as e:
            bisect.runner._refuse_conflicts(b, now, prof)
    assert str(e.value).startswith("the bisection of minikernel in progress uses --runs 2 (")
    assert "`layoutbench bisect minikernel GOOD..BAD --runs 3` (it replaces" in str(e.value)
    bisect.runner._refuse_conflicts(b, bisect.Settings(kernel="minikernel", runs=2, given=("runs",)), prof)  # same: on
    # with its commits marked, the command names them as git abbreviates them (12 characters)
    with closing(Store(tmp_path / "r.sqlite")) as store:
        b = bisect.Bisection(store, bisect.Settings(kernel="minikernel", runs=2, layouts=6))
        b.mark("good", "a" * 40)
        b.mark("bad", "b" * 40)
        with pytest.raises(LayoutbenchError) as e:
            bisect.runner._refuse_conflicts(b, now, prof)
    assert f"`layoutbench bisect minikernel {'a' * 12}..{'b' * 12} --runs 3` (it replaces" in str(e.value)


def test_judge_of_references_within_layout_noise_stops_git_bisect_run(first, hist, prof):
    """`bisect judge` with GOOD and BAD the same commit: their test shows them equal within the
    minimum effect (status noise), and judge stops `git bisect run` (exit 128) with one line that says
    so and gives the ratio and its interval, instead of marking the probe; the probe is not measured."""
    with closing(Store(first["store"])) as store:
        probe_runs = lambda: [r for r in store.runs() if r["build_id"] in {b["id"] for b in store.builds(commit=sha(hist, 1))}]  # noqa: E731,E501
        before = len(probe_runs())
        with pytest.raises(bisect.Abort) as e:
            bisect.judge(store, prof, settings(hist), sha(hist, 1), hist["good"], hist["good"])
        assert e.value.exit_code == 128
        m = re.fullmatch(r"GOOD and BAD do not differ beyond layout noise \(BAD/GOOD 1\.0000, CI (\d\.\d{4})…(\d\.\d{4})\); "
                         r"there is nothing to bisect", str(e.value))
        assert m and 0.995 <= float(m[1]) < 1 < float(m[2]) <= 1.005, str(e.value)  # inside the ±0.5% minimum effect
        assert len(probe_runs()) == before


def test_decision_flags_made_in_code_apply_only_those_set():
    """Settings made in code (no command line, so nothing in ``given``): the decision flags set in
    them are the ones applied to the resumed bisection; its budget and its other flags stay."""
    import types

    saved = []
    b = types.SimpleNamespace(s=bisect.Settings(kernel="minikernel", budget=99, prove_null=True), result={"x": 1},
                              save=lambda: saved.append(1))
    said: list[str] = []
    s = bisect.runner._decision_flags(b, bisect.Settings(kernel="minikernel", thorough=True), said.append)
    assert (s.thorough, s.budget, s.prove_null, s.first_only, s.shadow) == (True, 99, True, False, True)
    assert said == ["applying --thorough to the resumed bisection"] and saved == [1] and b.result is None
    # nothing set: nothing applied, nothing saved
    b2 = types.SimpleNamespace(s=bisect.Settings(kernel="minikernel", budget=99), result={"x": 1},
                               save=lambda: saved.append(2))
    assert bisect.runner._decision_flags(b2, bisect.Settings(kernel="minikernel"), said.append).budget == 99
    assert saved == [1] and b2.result == {"x": 1} and len(said) == 1


def test_a_prober_without_a_target_named_is_named_by_the_profile_default(hist, prof, tmp_path):
    """Settings that name no target measure on the profile's default one, and the prober (the
    machine the marks name) takes that target's name; a named target gives its own name."""
    from layoutbench import targets

    default = targets.make(prof, None).spec.name
    assert default and default != "cachegrind"
    with closing(Store(tmp_path / "r.sqlite")) as store:
        assert bisect.Prober(prof, settings(hist, target=None), store).name == default
        assert bisect.Prober(prof, settings(hist), store).name == "cachegrind"


def test_a_finished_verdict_is_kept_apart_under_its_kernel_repository_range_and_metric(first, hist, prof):
    """The verdict of a finished bisection is written under its own key as well (so that a
    bisection started later, of another range or metric, does not lose it): kernel, repository,
    subdirectory (empty: none), GOOD..BAD and metric."""
    import types

    with closing(Store(first["store"])) as store:
        b = bisect.stored(store)[0]
        key = bisect.state.kept_key(b)
        assert key == f"bisect-verdict:minikernel:{b.s.repo}::{hist['good']}..{hist['bad']}:cg_cost"
        d = store.get_state(key)
    assert d["result"]["culprit"] == first["v"]["culprit"] == sha(hist, 2) and d["key"] == b.key
    sub = types.SimpleNamespace(s=dataclasses.replace(b.s, subdir="src"), good="g", bad="b")
    assert bisect.state.kept_key(sub) == f"bisect-verdict:minikernel:{b.s.repo}:src:g..b:cg_cost"


def test_a_bisection_stopped_before_its_verdict_counts_the_probes_it_measured_before(hist, prof, first, tmp_path):
    """Marks stored, verdict not (a run stopped between them): run again, it decides from its marks
    without measuring, and its cost still counts every run of the probes judged before -- read
    from the store -- so it is the cost of the bisection that ran to its end."""
    path = tmp_path / "r.sqlite"
    path.write_bytes(first["store"].read_bytes())
    with closing(Store(path)) as store:
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
        assert any(e.get("by") == "measured" and e["verb"] in ("good", "bad") for e in b.log)
        b.result = None
        b.save()
        v = _run(store, prof, settings(hist), hist["good"], hist["bad"])
    assert v["culprit"] == first["v"]["culprit"] and v["cost"]["ran_now"] == 0 and not v.get("reprinted")
    assert {k: v["cost"][k] for k in ("builds", "images", "runs")} == \
        {k: first["v"]["cost"][k] for k in ("builds", "images", "runs")}


def test_first_only_says_how_much_of_the_change_it_left_unexplained(first):
    """--first-only stops after one step: when that step explains 23% of the endpoints' change the
    text warns that 77% is unexplained, and the JSON's not_shown says so; at 98% it says nothing."""
    v = first["v"]
    part = {**v, "share": 0.23, "settings": {**v["settings"], "first_only": True}}
    t = _text(part)
    assert "warning: --first-only: the step found explains 23.00% of the endpoints' change; 77.00% is unexplained" in t
    assert any("--first-only searched one step" in x for x in verdict.Verdict.of_bisection(part).not_shown)
    whole = {**part, "share": 0.98}
    assert "--first-only:" not in _text(whole).replace("(--first-only: stopped", "")
    assert not any("first-only" in x for x in verdict.Verdict.of_bisection(whole).not_shown)
    assert "warning: --first-only" not in _text({**part, "settings": v["settings"]})


def test_the_log_replays_the_marks_of_a_second_step_and_names_every_culprit(hist, prof, first, tmp_path):
    """A mark in a range beside a found step is a command (``--segment A..B``), so that replay restores
    it; a probe judged "between" says why it is marked bad; the log ends with every culprit."""
    seg = f"{hist['good']}..{sha(hist, 1)}"
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(first["store"].read_bytes())
    with closing(Store(copy)) as store:
        b = bisect.Bisection.load(store, bisect.state_key("minikernel", hist["repo"], None))
        b.log = [e for e in b.log if e["verb"] in ("start", "endpoints")]
        b.mark("bad", sha(hist, 1), "x", "measured", subject="s", segment=seg, between=True)
    b.result = {"status": "found", "culprit": hist["regression"], "culprit_subject": "first",
                "steps": [{"status": "found", "culprit": hist["regression"], "subject": "first"},
                          {"status": "found", "culprit": sha(hist, 1), "subject": "second"}]}
    log = b.text(prof)
    lines = log.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("# bad in "))
    assert lines[i].startswith(f"# bad in {seg} (between: it differs from both ends")
    assert lines[i + 1] == (f"layoutbench bisect bad {sha(hist, 1)} --kernel minikernel --repo {hist['repo']} "
                            f"--segment {seg}")
    assert lines[-2:] == [f"# first bad commit: [{hist['regression']}] first",
                          f"# first bad commit of another step: [{sha(hist, 1)}] second"]
    with closing(Store(tmp_path / "other.sqlite")) as other:
        r = bisect.replay(other, log, profile.load)
        assert [(e["verb"], e["commit"], e.get("segment")) for e in r.log[1:]] == [("bad", sha(hist, 1), seg)]
        assert r.marks() == {}  # a mark of the range beside a step is not one of the main search
        with pytest.raises(LayoutbenchError, match="--segment 'nope': give the range beside a step as A..B"):
            bisect.mark(other, prof, r, "good", [sha(hist, 1)], segment="nope")


def test_the_run_after_a_plan_says_it_starts_from_the_plan(hist, prof, first, tmp_path):
    """After --plan the bisection's log holds only its start: the next run says it starts from the
    plan (what it measured is kept), never "resuming ... (0 entries)"."""
    path = _copy_without_state(first, hist, tmp_path)
    said: list[str] = []
    with closing(Store(path)) as store:
        _run(store, prof, settings(hist), hist["good"], hist["bad"], say=said.append, plan_only=True)
        said.clear()
        v = _run(store, prof, settings(hist), hist["good"], hist["bad"], say=said.append)
    assert said[0] == (f"starting the bisection of minikernel {hist['good'][:12]}..{hist['bad'][:12]} from its plan "
                       "(what --plan measured is in the store and is not measured again)")
    assert not any("(0 log entries)" in m or "(0 entries)" in m for m in said)
    assert v["culprit"] == first["v"]["culprit"]


def test_the_plan_counts_the_second_run_a_layout_that_chose_r():
    """The runs the endpoints' first look spends beyond K layouts x R (2 runs a layout while R is chosen
    from the costs) are added to the planned runs (the simulation measures at R): 4 layouts x (2 - 1) runs
    x 2 ends = 8 when R = 1 was chosen; none when R was given, or chosen at least 2."""
    from layoutbench.bisect.budget import look_extra
    chose = bisect.Settings(kernel="k", runs=1, runs_auto=True, runs_choice={"runs": 1, "look_runs": 2})
    assert look_extra(chose) == 8
    assert look_extra(dataclasses.replace(chose, layouts=6)) == 12
    assert look_extra(bisect.Settings(kernel="k", runs=1)) == 0
    assert look_extra(dataclasses.replace(chose, runs=3, runs_choice={"runs": 3, "look_runs": 2})) == 0
    assert look_extra(dataclasses.replace(chose, runs_choice={"runs": 1, "look_runs": 1})) == 0
    from types import SimpleNamespace

    from layoutbench.bisect.budget import likely_runs
    pool = decide.Pool()
    pool.add("a", {f"random:{i}": [1.0 + i / 100] for i in range(1, 5)})
    pool.add("b", {f"random:{i}": [1.0 + (5 - i) / 100] for i in range(1, 5)})
    eng, b = SimpleNamespace(pool=pool), SimpleNamespace(good="a", bad="b")
    base = likely_runs(eng, b, decide.Plan(), ["a", "x", "b"])
    assert base is not None and likely_runs(eng, b, decide.Plan(), ["a", "x", "b"], 8) == base + 8
