"""Layout-aware bisection on generated histories, with real builds and real
cachegrind runs (deterministic and layout-sensitive, so these tests do not flake).

One history serves most tests: 10 commits, a 3% regression in the hot path at commit 4,
commits 3..4 broken (fixed by commit 5) and repaired by a quirk, layout-only commits
around them.  The session's work directory caches the objects, so each commit is
compiled once per configuration; each test has its own store.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import git, lb, script
from layoutbench import costs

ARGS = "iterations=300"
CG = ["--target", "cachegrind", "--args", ARGS]


make_history = script("kernels/minikernel/make_history.py").make_history


@pytest.fixture(scope="module")
def hist(tmp_path_factory, workdir):
    """History A: regression at 4, broken 3..4 (fixed at 5), quirk file beside it."""
    d = tmp_path_factory.mktemp("hist")
    return make_history(d / "repo", 10, seed=11, regression_at=4, regression_pct=3.0, layout_only=[1, 2, 6, 8, 9],
                        broken_range=(3, 5))


def sha(m, i):
    return m["commits"][i]["sha"]


def bisect_json(m, store, *extra, quirks=True, check=True):
    env = {"LAYOUTBENCH_QUIRKS": m["quirks"] if quirks and m["quirks"] else "/nonexistent/quirks.toml"}
    p = lb("bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], *CG, "--store", str(store),
           "--json", *extra, env=env, check=check)
    return json.loads(p.stdout) if p.returncode == 0 else p


def marks(v_or_store, kernel="minikernel"):
    with sqlite3.connect(v_or_store) as c:
        rows = c.execute("SELECT key, value FROM state WHERE key LIKE 'bisect:minikernel:%'").fetchall()
    assert len(rows) == 1
    log = json.loads(rows[0][1])["log"]
    return [(e["verb"], e["commit"]) for e in log if e["verb"] in ("good", "bad", "skip")]


def test_bisect_finds_the_planted_regression_through_a_range_repaired_by_its_quirk(hist, tmp_path):
    v = bisect_json(hist, tmp_path / "r.sqlite")
    assert v["status"] == "found", v["message"]
    assert v["culprit"] == hist["regression"]
    e = v["effect"]
    assert e["verdict"] == "slower" and 1.015 < e["ratio"] < 1.05 and e["ci_low"] > 1.0, e
    assert v["last_good"] == sha(hist, 3)
    # the broken commit 3 was probed, built with its quirk (recorded with the build), and judged
    assert ("good", sha(hist, 3)) in marks(tmp_path / "r.sqlite")
    with sqlite3.connect(tmp_path / "r.sqlite") as c:
        q = c.execute("SELECT DISTINCT quirks FROM builds WHERE commit_sha=?", (sha(hist, 3),)).fetchall()
    assert q == [('["unused-variable"]',)]
    assert v["cost"]["builds"] >= 4 and v["cost"]["runs"] >= 4 * v["cost"]["builds"]
    sl = v["single_layout"]
    assert sl["runs"] == sl["builds"] and sl["agrees"] is (sl["culprit"] == v["culprit"]), sl
    # the text verdict names the commit, the effect, the noise and the cost
    t = lb("bisect", "minikernel", "--repo", hist["repo"], "--store", str(tmp_path / "r.sqlite"),
           env={"LAYOUTBENCH_QUIRKS": hist["quirks"]}).stdout
    for word in ("first bad commit " + hist["regression"], "effect:", "layout noise there", "cost:",
                 "single-layout bisection"):
        assert word in t, t


def test_without_the_quirk_the_broken_commits_are_skipped_and_the_range_reported(hist, tmp_path):
    v = bisect_json(hist, tmp_path / "r.sqlite", "--no-shadow", quirks=False)
    assert v["status"] == "range", v["message"]
    assert v["range"] == [sha(hist, 3), sha(hist, 4), sha(hist, 5)]
    assert {s["commit"] for s in v["skipped"]} == {sha(hist, 3), sha(hist, 4)}
    assert all(s["why"] == "build" and "unused variable" in s["note"] for s in v["skipped"])
    assert v["cost"]["failed_builds"] == 2
    log = lb("bisect", "log", "--store", str(tmp_path / "r.sqlite")).stdout
    assert f"layoutbench bisect skip {sha(hist, 3)}" in log and "--why build" in log


def test_a_history_of_layout_only_commits_blames_nobody_and_claims_no_equivalence(tmp_path, workdir):
    m = make_history(tmp_path / "repo", 8, seed=5, regression=False, layout_only=[1, 2, 3, 5, 6, 8])
    assert m["regression"] is None
    v = bisect_json(m, tmp_path / "r.sqlite")
    assert v["culprit"] is None, v
    ends = v["endpoints"]
    assert ends["ci_low"] <= 1.0 <= ends["ci_high"]
    # it stopped at the endpoints and probed nothing else; without --prove-null it says what was
    # not shown, never "within layout noise"
    assert v["status"] == ends["status"] and v["status"] in ("noise", "not-shown") and v["cost"]["builds"] == 2, v
    if v["status"] == "noise":  # an equivalence test passed on the way: its interval is inside +-0.5%
        assert "within layout noise (a change of 0.5" in v["message"] and "or more is ruled out)" in v["message"]
        assert 1 / 1.005 < ends["ci_low"] and ends["ci_high"] < 1.005, ends
    else:
        assert "no change of at least 0.5% shown" in v["message"] and "within layout noise" not in v["message"]
    # "no change shown" says the smallest change its test would have shown; an equivalence needs no such line
    if v["status"] == "not-shown":
        (u,) = v["not_ruled_out"]
        assert (u["test"], u["good"], u["bad"], u["layouts"]) == ("endpoints", m["good"], m["bad"], ends["layouts"])
        assert u["below"] == ends["shows"] and 0.005 < u["below"] < 0.1, u
    else:
        assert v["not_ruled_out"] == []
    # a single-layout bisection always blames somebody: here a commit that only moved code
    sl = v["single_layout"]
    assert sl["culprit"] in m["layout_only"] + [c["sha"] for c in m["commits"] if c["kind"] == "ordinary"]
    assert sl["agrees"] is False


def test_no_change_shown_says_the_smallest_change_its_test_would_have_shown(tmp_path, workdir):
    """Commits that only add unused code, tested against a 0.1% minimum effect with at most 12
    layouts a side: no change shown and no equivalence either (a 0.1% band is too narrow for 12
    layouts), and the verdict says the smallest change its endpoints' test would have shown 9
    times in 10 -- above the minimum effect -- in the text and in --json, the same number."""
    m = make_history(tmp_path / "repo", 3, seed=5, regression=False, layout_only=[1, 2, 3])
    store = tmp_path / "r.sqlite"
    v = bisect_json(m, store, "--no-shadow", "--min-effect", "0.1", "--max-layouts", "12")
    ends = v["endpoints"]
    assert v["status"] == "not-shown" and ends["layouts"] == 12, v["message"]
    (u,) = v["not_ruled_out"]
    assert (u["test"], u["good"], u["bad"], u["layouts"]) == ("endpoints", m["good"], m["bad"], 12)
    assert u["below"] == ends["shows"] and 0.001 < u["below"] < 0.05, u
    text = lb("bisect", "minikernel", "--repo", m["repo"], "--store", str(store)).stdout.splitlines()
    assert [ln for ln in text if ln.startswith("not ruled out:")] == [
        f"not ruled out: a change below {100 * u['below']:.2f}% in {m['good'][:12]}..{m['bad'][:12]} (the smallest "
        "this test, stopped at 12 layouts a side, shows 9 times in 10 at this noise)"], text


def test_a_probe_between_two_steps_is_marked_bad_and_both_steps_are_named(tmp_path, workdir):
    # two 2% steps (#1, #3): commit 2 differs from GOOD and from BAD ("between"); on real builds it
    # was marked as a skipped build and the verdict was a range of all three commits
    m = make_history(tmp_path / "repo", 4, seed=100, regression_at=[1, 3], regression_pct=[2.0, 2.0], layout_only=[4])
    store = tmp_path / "r.sqlite"
    v = bisect_json(m, store, "--no-shadow")
    assert v["status"] == "found" and v["culprit"] == sha(m, 1), v["message"]
    assert [st["culprit"] for st in v["steps"] if st["status"] == "found"] == [sha(m, 1), sha(m, 3)]
    assert v["cost"]["failed_builds"] == 0
    verbs = marks(store)
    assert ("bad", sha(m, 2)) in verbs and not [x for x in verbs if x[0] == "skip"], verbs
    # `git bisect run` with judge: the commit between the steps is bad (exit 1; it was a KeyError)
    p = lb("judge", "minikernel", "--repo", m["repo"], "--good", m["good"], "--bad", m["bad"], *CG, "--store", str(store),
           "--commit", sha(m, 2), "--json", check=False)
    assert p.returncode == 1 and json.loads(p.stdout)["verdict"] == "between", (p.stdout, p.stderr)
    # with the single-layout bisection beside it (the verdict re-decided from the store): naming either
    # step is agreeing on one of them; the headline names both steps, each with its own size
    w = bisect_json(m, store, "--shadow")
    named = [sha(m, 1), sha(m, 3)]
    assert w["single_layout"]["agrees"] == (w["single_layout"]["culprit"] in named), w["single_layout"]
    assert w["headline"].startswith("2 change points (cg_cost): first bad commit ") and all(
        c[:12] in w["headline"] for c in named), w["headline"]


def test_an_interrupted_bisection_resumes_without_repeating_probes(hist, tmp_path):
    store = tmp_path / "r.sqlite"
    cmd = [sys.executable, "-m", "layoutbench.cli", "bisect", "minikernel", f"{hist['good']}..{hist['bad']}",
           "--repo", hist["repo"], "--target", "cachegrind", "--args", "iterations=301", "--store", str(store),
           "--no-shadow", "--json"]
    env = {**os.environ, "LAYOUTBENCH_QUIRKS": hist["quirks"]}
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    first = []
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
        if store.exists():
            try:
                first = marks(store)
            except (AssertionError, sqlite3.OperationalError):
                continue
            if len(first) >= 1:
                break
    assert p.poll() is None, "the bisection ended before it could be interrupted"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    first = marks(store)
    assert 0 < len(first) < 4, f"killed after the first marks, before the last: {first}"
    with sqlite3.connect(store) as c:
        runs_before = c.execute("SELECT count(*) FROM runs").fetchone()[0]
    v = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
    after = marks(store)
    assert after[:len(first)] == first  # what was decided stays decided
    assert len({c for _, c in after}) == len(after)  # no commit probed twice
    assert v["status"] == "found" and v["culprit"] == hist["regression"]
    assert v["cost"]["ran_now"] < v["cost"]["runs"] and runs_before > 0
    with sqlite3.connect(store) as c:
        assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == v["cost"]["runs"]
    # what the verdict says does not depend on the interruption: the same bisection run through
    # in one go (another store) says the same, with the same counts
    once = cmd[:cmd.index("--store") + 1] + [str(tmp_path / "once.sqlite")] + cmd[cmd.index("--store") + 2:]
    u = json.loads(subprocess.run(once, env=env, capture_output=True, text=True, check=True).stdout)
    for key in ("status", "culprit", "share", "probes", "rounds", "several"):
        assert v.get(key) == u.get(key), key
    assert v["cost"]["runs"] == u["cost"]["runs"] and v["cost"]["builds"] == u["cost"]["builds"]


def test_log_replay_and_the_git_shaped_verbs(hist, tmp_path):
    store = str(tmp_path / "r.sqlite")
    env = {"LAYOUTBENCH_QUIRKS": hist["quirks"]}
    lb("bisect", "start", "minikernel", hist["bad"], hist["good"], "--repo", hist["repo"], *CG, "--store", store,
       "--budget", "2h30m", env=env)
    out = lb("bisect", "good", sha(hist, 2), "--store", store, env=env).stdout
    assert f"good: {sha(hist, 2)}" in out and "next to test" in out
    out = lb("bisect", "bad", sha(hist, 5), "--store", store, env=env).stdout
    assert "next to test" in out and "(2 left)" in out
    lb("bisect", "skip", sha(hist, 3), "--why", "by hand", "--store", store, env=env)
    log = lb("bisect", "log", "--store", store).stdout
    assert log.splitlines()[1].startswith(f"layoutbench bisect start minikernel {hist['bad']} {hist['good']}")
    assert log.splitlines()[1].endswith(" --budget 2h30m")  # a budget in time is kept as it was given
    assert f"layoutbench bisect bad {sha(hist, 5)}" in log
    logfile = tmp_path / "bisect.log"
    logfile.write_text(log)
    lb("bisect", "reset", "--store", store)
    assert "no bisection" in lb("bisect", "log", "--store", store, check=False).stderr
    lb("bisect", "replay", str(logfile), "--store", store, env=env)
    assert lb("bisect", "log", "--store", store).stdout == log
    # continue automatically from the replayed marks: only commit 4 is left to probe; as 3 was
    # skipped by hand, the first bad commit is 3 or 4
    v = json.loads(lb("bisect", "minikernel", "--repo", hist["repo"], "--store", store, "--json", "--no-shadow",
                      env=env).stdout)
    assert v["status"] == "range" and v["range"] == [sha(hist, 3), sha(hist, 4)]
    assert v["skipped"][0]["why"] == "by hand"
    probed = [c for verb, c in marks(Path(store)) if verb != "skip"]
    assert probed == [sha(hist, 2), sha(hist, 5), sha(hist, 4)]


def _bisect_run(hist, clone: Path, *judge_args: str) -> str:
    git(clone, "bisect", "start", hist["bad"], hist["good"])
    try:
        p = subprocess.run(["git", "bisect", "run", sys.executable, "-m", "layoutbench.cli", "judge", "minikernel",
                            "--repo", str(clone), "--good", hist["good"], "--bad", hist["bad"], *CG, *judge_args],
                           cwd=clone, capture_output=True, text=True, timeout=900,
                           env={**os.environ, "LAYOUTBENCH_QUIRKS": hist["quirks"]})
        return p.stdout + p.stderr
    finally:
        git(clone, "bisect", "reset")


def test_judge_works_as_a_git_bisect_run_script(hist, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", hist["repo"], str(clone)], check=True)
    # the checked-out commit as it is (quirks do not touch a working tree): 3 and 4 do not build
    out = _bisect_run(hist, clone)
    assert "The first bad commit could be any of" in out, out
    assert hist["regression"] in out
    # the checked-out commit by name: its quirk repairs it, and git names the culprit
    out = _bisect_run(hist, clone, "--commit", "HEAD")
    assert f"{hist['regression']} is the first bad commit" in out, out


def test_judge_exit_codes(hist, tmp_path):
    base = ["judge", "minikernel", "--repo", hist["repo"], "--good", hist["good"], "--bad", hist["bad"], *CG]
    env = {"LAYOUTBENCH_QUIRKS": hist["quirks"]}
    assert lb(*base, "--commit", sha(hist, 2), env=env, check=False).returncode == 0
    assert lb(*base, "--commit", sha(hist, 5), env=env, check=False).returncode == 1
    p = lb(*base, "--commit", sha(hist, 3), env={"LAYOUTBENCH_QUIRKS": "/nonexistent"}, check=False)
    assert p.returncode == 125 and "skip" in p.stdout
    # references that do not differ stop `git bisect run` (exit >= 128) instead of marking bad
    p = lb("judge", "minikernel", "--repo", hist["repo"], "--good", hist["good"], "--bad", hist["good"], *CG,
           "--commit", sha(hist, 2), env=env, check=False)
    assert p.returncode == 128 and "GOOD and BAD do not differ beyond layout noise" in p.stderr, p.stderr
    # a farm's list of targets is for `bisect`; judge measures one checkout on one machine
    p = lb("judge", "minikernel", "--repo", hist["repo"], "--good", hist["good"], "--bad", hist["bad"], "--target",
           "cachegrind,local", "--args", ARGS, "--commit", sha(hist, 2), env=env, check=False)
    assert p.returncode == 128 and "give one --target" in p.stderr and "Traceback" not in p.stderr


def test_plan_prints_the_likely_cost_before_any_probe(hist, tmp_path, workdir):
    """`bisect run --plan`: the endpoints' first look only (2 commits built), then the likely
    cost at the noise and change it measured, and what the probes' compiles may add (one a probe at
    most, each at the median of this kernel's compiles in the work folder); nothing is probed."""
    import statistics

    v = bisect_json(hist, tmp_path / "p.sqlite", "--plan")
    assert v["status"] == "plan" and v["plan"]["runs"] > 0 and v["plan"]["probes"] >= 1, v
    assert "likely cost" in v["message"] and v["ratio"] > 1.0
    secs = [json.loads(r.read_text()) for r in (workdir / "objects" / "minikernel").glob("*/build.json")]
    secs = [i["seconds"] for i in secs if not i.get("reused_from") and i["commit"] != "worktree"]
    c = v["compiles"]
    assert len(secs) >= 2 and (c["seconds_each"], c["of"]) == (statistics.median(secs), len(secs)), c
    assert c["at_most"] == min(v["plan"]["probes"], len(hist["commits"]) - 2), c  # 9 commits between GOOD and BAD
    assert f"compiles: at most {c['at_most']} more (one a probe" in v["message"]
    with sqlite3.connect(tmp_path / "p.sqlite") as c:
        assert c.execute("select count(distinct commit_sha) from builds").fetchone()[0] == 2


# -- a budget in time, runs per layout from the costs ----------------------------------------------

@pytest.fixture(scope="module")
def costed(tmp_path_factory):
    """The minikernel profile with the costs a kernel lab would state: on the cachegrind target a
    layout 3 s, a run 1 s; on the local (timed) target a layout 30 s (a reboot), a run 1 s."""
    from conftest import MINI_TOML, ROOT

    d = tmp_path_factory.mktemp("profiles")
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    text = text.replace('miss_weight = 20\n\n[targets.qemu-icache]',
                        'miss_weight = 20\nlayout_cost = 3\nrun_cost = 1\n\n[targets.qemu-icache]')
    text = text.replace('args = ["iterations=100000"]\n', 'args = ["iterations=100000"]\nlayout_cost = 30\nrun_cost = 1\n')
    assert text.count("_cost = ") == 4
    (d / "minikernel").mkdir()
    (d / "minikernel" / "kernel.toml").write_text(text)
    return d


def costed_bisect(m, profiles, store, *extra):
    p = lb("bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--store", str(store), "--json",
           "--no-shadow", *extra, env={"LAYOUTBENCH_QUIRKS": m["quirks"], "LAYOUTBENCH_PROFILES": str(profiles)})
    return json.loads(p.stdout), p.stderr


def test_a_duration_budget_becomes_runs_and_ends_with_the_best_honest_verdict(hist, costed, tmp_path):
    """A duration budget at the target's stated costs (a run 1 s and a layout 3 s / 1 run a layout:
    3 s a run where the next layout links beside a run, on two cores or more, else 4 s) is 15 runs;
    the bisection stops within them and names the candidates left, the progress lines say the runs
    spent of the budget and the time left.  A budget of 7 runs' time does not pay for the endpoints'
    first look (8 runs: 4 layouts x 1 run a side, R = 1 at once on a target whose runs repeat
    exactly): refused in one line before anything runs, as a budget of 7 runs is."""
    beside = (os.cpu_count() or 1) >= 2  # cachegrind's counts: measure links the next image beside a run
    per, word = (3.0, "beside") if beside else (4.0, "+")
    given = costs.duration_text(15 * per)
    v, err = costed_bisect(hist, costed, tmp_path / "a.sqlite", *CG, "--budget", given)
    bd = v["budget"]
    assert (bd["duration"], bd["duration_text"], bd["runs"], bd["seconds_per_run"]) == (15 * per, given, 15, per), bd
    assert f"run_cost 1 s {word} layout_cost 3 s / 1 run(s) per layout" in bd["seconds_per_run_from"]
    assert (v["runs_per_layout"]["runs"], v["runs_per_layout"]["look_runs"]) == (1, 1)  # cachegrind: exact runs
    assert bd["spent"] <= 15 and bd["time_spent_estimate"] == per * bd["spent"]
    assert v["status"] == "budget" and "not decided at this budget" in v["message"], v["message"]
    cands = [c["commit"] for c in v["candidates"]]
    assert hist["regression"] in cands and abs(sum(c["probability"] for c in v["candidates"]) - 1) < 1e-9
    assert f"budget {given}: 15 runs at {per:g} s a run" in err
    probes = [ln for ln in err.splitlines() if "· probe " in ln]
    assert probes and all("runs spent of 15" in ln and re.search(r"left: \d+ runs? at 1 s(?: two at a time)? (?:\+|beside) \d+ links? at 3 s \(", ln)
                          for ln in probes), err
    env = {"LAYOUTBENCH_QUIRKS": hist["quirks"], "LAYOUTBENCH_PROFILES": str(costed)}
    short = costs.duration_text(7 * per)
    for budget in (short, "7"):
        p = lb("bisect", "minikernel", f"{hist['good']}..{hist['bad']}", "--repo", hist["repo"], "--store",
               str(tmp_path / "b.sqlite"), "--no-shadow", *CG, "--budget", budget, env=env, check=False)
        said = f"--budget {short} (7 run(s) at {per:g} s a run)" if budget == short else "--budget 7 runs"
        assert p.returncode == 2 and p.stderr.splitlines()[-1].startswith(
            f"layoutbench: error: {said} does not pay for the endpoints' first look (8 runs: 4 layouts x 1 run(s) a "
            f"side)"), p.stderr
        assert (f"give --budget {costs.duration_text(8 * per)} or more" if budget == short
                else "give --budget 8 or more") in p.stderr
        assert "nothing was run" in p.stderr and "Traceback" not in p.stderr
    with sqlite3.connect(tmp_path / "b.sqlite") as c:
        assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_runs_per_layout_from_the_costs_and_the_measured_noise_split(hist, costed, tmp_path):
    """The local (timed) target states a layout at 30 s and a run at 1 s: --plan measures GOOD and
    BAD at 3 layouts x 2 runs, splits the noise (its numbers are the one-way ANOVA of those stored
    runs), chooses R = sqrt(30/1 x sR^2/sL^2) rounded within 1..16, prints it, and takes the
    first look at R runs a layout."""
    import numpy as np

    from layoutbench import costs

    store = tmp_path / "p.sqlite"
    v, err = costed_bisect(hist, costed, store, "--target", "local", "--args", "iterations=3000", "--layouts", "3",
                           "--plan", "--budget", "8h")
    ch = v["runs_per_layout"]
    r = ch["runs"]
    assert r == costs.runs_per_layout(30, 1, ch["run_noise"] ** 2, ch["layout_noise"] ** 2)[0]
    assert v["settings"]["runs"] == r and 1 <= r <= 16
    # the split, recomputed here from the stored samples of the 2-run look
    with sqlite3.connect(store) as c:
        rows = c.execute("SELECT b.commit_sha, b.seed, r.rep, s.value FROM samples s JOIN runs r ON r.id = s.run_id "
                         "JOIN builds b ON b.id = r.build_id WHERE s.metric = 'cycles_per_packet' AND r.rep < 2 "
                         "AND b.layout = 'random' AND b.seed <= 3").fetchall()
    cells: dict = {}
    for sha_, seed, rep, val in rows:
        cells.setdefault(sha_, {}).setdefault(seed, []).append(math.log(val))
    assert set(cells) == {hist["good"], hist["bad"]} and all(len(x) == 2 for g in cells.values() for x in g.values())
    within = np.mean([np.var(x, ddof=1) for g in cells.values() for x in g.values()])
    between = np.mean([np.var([np.mean(x) for x in g.values()], ddof=1) for g in cells.values()])
    assert ch["run_noise"] == pytest.approx(math.sqrt(within), rel=1e-6)
    assert ch["layout_noise"] == pytest.approx(math.sqrt(max(0.0, between - within / 2)), rel=1e-6, abs=1e-12)
    assert f"runs per layout: {r} = sqrt((layout_cost 30 s / run_cost 1 s) x (run noise" in v["message"]
    # the first look of the plan took R runs a layout; the time a run takes follows from R
    with sqlite3.connect(store) as c:
        reps = c.execute("SELECT max(r.rep) + 1 FROM runs r JOIN builds b ON b.id = r.build_id WHERE b.commit_sha = ? "
                         "AND b.layout = 'random'", (hist["good"],)).fetchone()[0]
    assert reps == max(2, r)
    assert v["budget"]["seconds_per_run"] == pytest.approx(1 + 30 / r)
    assert f"at {1 + 30 / r:.3g} s a run" in v["message"] and "budget 8h: " in v["message"]


# -- the layout and run costs measured when the profile states none ----------------------------------

def _median(xs):
    import numpy as np

    return float(np.median(xs))


def test_measured_costs_on_qemu_a_link_is_cheaper_than_a_boot_so_one_run_a_layout(hist, tmp_path):
    """No cost stated: --plan on real TCG boots of the minikernel records each image's link time
    and each boot+run's duration in the store; the costs are their medians (recomputed here from
    the store), a new layout (a link) costs less than a rerun (a boot) on QEMU, so R = 1 without a
    second run on any layout, and the plan, the JSON and the budget say where the costs came from."""
    store = tmp_path / "q.sqlite"
    p = lb("bisect", "minikernel", f"{hist['good']}..{hist['bad']}", "--repo", hist["repo"], "--target", "qemu",
           "--args", "iterations=2000", "--layouts", "3", "--store", str(store), "--plan", "--budget", "1h", "--json",
           env={"LAYOUTBENCH_QUIRKS": hist["quirks"], "LAYOUTBENCH_ACCEL": "tcg"})
    v = json.loads(p.stdout)
    with sqlite3.connect(store) as c:
        links = [r[0] for r in c.execute("SELECT link_seconds FROM builds WHERE image = 'kernel'")]
        runs = c.execute("SELECT r.duration, r.boot_seconds, r.deploy_seconds, r.rep, r.accelerator FROM runs r "
                         "JOIN builds b ON b.id = r.build_id WHERE r.status = 'ok'").fetchall()
    assert len(links) == 6 and all(x is not None and 0 < x < 60 for x in links), links
    assert len(runs) == 6 and {r[3] for r in runs} == {0} and {r[4] for r in runs} == {"tcg"}, runs
    assert all(r[1] is None and r[2] is None for r in runs)  # a QEMU boot is in the run's duration
    link, boot = _median(links), _median([r[0] for r in runs])
    assert link < boot, (link, boot)
    ch = v["runs_per_layout"]
    assert (ch["runs"], ch["look_runs"], v["settings"]["runs"]) == (1, 1, 1), ch
    assert ch["layout_cost"] == pytest.approx(link) and ch["run_cost"] == pytest.approx(boot)
    assert (ch["costs"]["layout_from"], ch["costs"]["run_from"]) == ("measured", "measured")
    said = f"measured: median of 6 link(s) {link:.3g} s, 6 boots+runs {boot:.3g} s"
    assert ch["costs"]["text"] == said and v["costs"] is None  # one cost figure: the choice's
    assert "runs per layout: 1: a new layout" in v["message"] and said in v["message"], v["message"]
    assert v["budget"]["seconds_per_run"] == pytest.approx(boot + link)
    assert said in v["budget"]["seconds_per_run_from"] and "at " in v["message"]


@pytest.fixture(scope="module")
def layout_stated(tmp_path_factory):
    """The minikernel profile whose local (timed) target states only a layout's cost (30 s: a reboot)."""
    from conftest import MINI_TOML, ROOT

    d = tmp_path_factory.mktemp("profiles")
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    text = text.replace('args = ["iterations=100000"]\n', 'args = ["iterations=100000"]\nlayout_cost = 30\n')
    assert text.count("_cost = ") == 1
    (d / "minikernel").mkdir()
    (d / "minikernel" / "kernel.toml").write_text(text)
    return d


def test_runs_per_layout_from_a_stated_layout_cost_and_a_measured_run_cost(hist, layout_stated, tmp_path):
    """The local target states a layout at 30 s and no run cost: the run cost is measured (the
    median duration of the endpoints' first runs, as the store holds them), a layout costs more,
    so GOOD and BAD get a second run a layout and R = sqrt(30 / run x sR^2/sL^2); the text says
    which cost was stated and which measured.  Under a budget the plan stays at its first look (a plan
    without one may go on with the endpoints' test, whose runs would join the first look's here)."""
    from layoutbench import costs

    store = tmp_path / "l.sqlite"
    v, err = costed_bisect(hist, layout_stated, store, "--target", "local", "--args", "iterations=3000",
                           "--layouts", "3", "--plan", "--budget", "100000")
    ch = v["runs_per_layout"]
    with sqlite3.connect(store) as c:
        first = [r[0] for r in c.execute("SELECT duration FROM runs WHERE status = 'ok' AND rep = 0")]
        second = c.execute("SELECT count(*) FROM runs WHERE rep = 1").fetchone()[0]
    assert len(first) == 6 and second == 6 and ch["look_runs"] == 2
    assert ch["layout_cost"] == 30 and ch["run_cost"] == pytest.approx(_median(first))
    assert (ch["costs"]["layout_from"], ch["costs"]["run_from"]) == ("stated", "measured")
    assert ch["runs"] == costs.runs_per_layout(30, ch["run_cost"], ch["run_noise"] ** 2, ch["layout_noise"] ** 2)[0]
    assert f"layout_cost 30 s stated, a run measured: median of 6 runs {_median(first):.3g} s" in ch["text"]
    assert ch["text"].startswith(f"runs per layout: {ch['runs']} = sqrt((a layout 30 s / a run ") and \
        ch["text"] in v["message"]


def test_bisect_run_timeout_kills_a_hanging_benchmark_and_skips_its_commit(hist, tmp_path):
    """--timeout on `bisect run`: a benchmark that hangs at one commit (a real ``sleep 300``) is killed
    at the timeout (30 s: far above a healthy run's second or so, even on a loaded machine, and far
    below the hang) with a one-line reason, stored as a timeout, and its commit is skipped as one that
    cannot be measured; the verdict is the range of candidates.  The benchmark elsewhere is the
    cachegrind cost of the image (valgrind run by a script: deterministic, layout-sensitive)."""
    from conftest import MINI_TOML, ROOT

    hang = sha(hist, 3)
    bench = tmp_path / "bench.sh"
    bench.write_text(
        "#!/bin/sh\n"
        f'case "$1" in */{hang[:12]}-*) exec sleep 300;; esac\n'
        'valgrind --tool=cachegrind --cache-sim=yes --I1=4096,2,64 --cachegrind-out-file=/dev/null "$1" '
        "iterations=300 quiet 2>&1 >/dev/null | awk '/ I +refs:/ {gsub(\",\",\"\",$4); ir=$4} "
        "/ I1 +misses:/ {gsub(\",\",\"\",$4); m=$4} END {print \"LAYOUTBENCH metric name=cost value=\" ir+20*m "
        "\" unit=events better=lower\"; print \"LAYOUTBENCH end status=ok\"}'\n")
    d = tmp_path / "profiles" / "minikernel"
    d.mkdir(parents=True)
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    (d / "kernel.toml").write_text(text.replace("[metrics]", f'[targets.hang]\nkind = "local"\nimage = "hosted"\n'
                                                f'timeout = 20\ncommand = ["sh", "{bench}", "{{image}}"]\n\n[metrics]'))
    store = tmp_path / "t.sqlite"
    p = lb("bisect", "minikernel", f"{sha(hist, 2)}..{sha(hist, 5)}", "--repo", hist["repo"], "--target", "hang",
           "--metric", "cost", "--runs", "1", "--no-shadow", "--first-only", "--timeout", "30", "--store", str(store),
           "--json", env={"LAYOUTBENCH_QUIRKS": hist["quirks"], "LAYOUTBENCH_PROFILES": str(tmp_path / "profiles")})
    v = json.loads(p.stdout)
    lines = [ln for ln in p.stderr.splitlines() if ": timeout: " in ln]
    assert lines and all("no end after 30s: killed" in ln for ln in lines), p.stderr
    assert ("skip", hang) in marks(store) and "Traceback" not in p.stderr
    with sqlite3.connect(store) as c:
        st = c.execute("SELECT DISTINCT r.status, r.message FROM runs r JOIN builds b ON b.id = r.build_id "
                       "WHERE b.commit_sha = ?", (hang,)).fetchall()
    assert st == [("timeout", "no end after 30s: killed")], st
    assert v["status"] == "range" and set(v["range"]) == {hang, hist["regression"]}, v["message"]


def test_the_plan_holds_and_every_phase_says_its_runs_spent_of_it(tmp_path, workdir):
    """A history of the shape a user tries first: 12 commits, a 3% step in the hot path at commit 6,
    nine commits that only add unused code.  `bisect run --plan` (the endpoints' first look, then
    the median of bisections simulated at the noise and change it measured) foretells the runs the
    bisection then spends, every phase counted, within 30%; and the bisection says a line with the
    runs spent / planned in every phase: each look of the endpoints, each probe, the confirmation
    and each of its looks, each side test and each of its looks."""
    m = make_history(tmp_path / "repo", 12, seed=21, regression_at=6, regression_pct=3.0,
                     layout_only=[1, 2, 3, 4, 5, 7, 8, 10, 11])
    store = tmp_path / "r.sqlite"
    plan = bisect_json(m, store, "--plan")
    p = lb("bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], *CG, "--store", str(store),
           "--json", "--no-shadow")
    v = json.loads(p.stdout)
    assert v["status"] == "found" and v["culprit"] == sha(m, 6), v["message"]
    runs, planned = v["runs_spent"], plan["plan"]["runs"]
    assert 0.7 * runs <= planned <= 1.3 * runs, (planned, runs, plan["plan"])
    lines = [ln for ln in p.stderr.splitlines() if "runs spent/planned" in ln]
    # the endpoints' looks count against the plan --plan printed; once their test decided, the lines count
    # against the likely cost made again at the change and noise it measured (the JSON keeps the last figure)
    first = [ln for ln in lines if "· endpoints: " in ln]
    assert first and all(f"/{planned} runs spent/planned (the plan's likely cost)" in ln for ln in first[:-1]), first
    later = lines[lines.index(first[-1]) + 1:]
    odd = [ln for ln in later if "(the likely cost once the endpoints' test decided)" not in ln
           and "made again" not in ln and "beyond" not in ln]
    assert later and not odd, odd
    assert 0.7 * runs <= v["budget"]["likely_runs"] <= 1.3 * runs, (v["budget"], runs)
    for phase in ("· endpoints: ", "· probe ", "· confirmation ", "· side test "):
        assert [ln for ln in lines if phase in ln], (phase, p.stderr)
    assert [ln for ln in lines if "· confirmation " in ln and "fresh layouts a side" in ln]
    assert len([ln for ln in lines if "· side test " in ln and "(the range " in ln]) == len(v["sides"]) == 2


# -- what the tool could not see: the verdict's "not ruled out" lines, the plan's warning -----------

@pytest.fixture(scope="module")
def step_hist(tmp_path_factory, workdir):
    """12 commits, a 3% step in the hot path at commit 6, the others only add unused code."""
    d = tmp_path_factory.mktemp("step")
    return make_history(d / "repo", 12, seed=21, regression_at=6, regression_pct=3.0,
                        layout_only=[1, 2, 3, 4, 5, 7, 8, 10, 11])


@pytest.fixture(scope="module")
def noisy_profiles(tmp_path_factory):
    """The minikernel profile with a layout-noisy target beside the others: cachegrind with a
    direct-mapped 1 KiB I1 and misses weighted 200 (the layout noise of cg_cost about 1.4% on
    ``step_hist``'s endpoints at their first look, against 0.35% on the usual target)."""
    from conftest import MINI_TOML, ROOT

    d = tmp_path_factory.mktemp("noisy")
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    tiny = ('[targets.cachegrind-tiny]\nkind = "cachegrind"\nimage = "hosted"\ntimeout = 300\n'
            'args = ["iterations=2000", "quiet"]\ni1 = "1024,1,64"\nmiss_weight = 200\n\n')
    text = text.replace("[targets.qemu-icache]", tiny + "[targets.qemu-icache]", 1)
    (d / "minikernel").mkdir()
    (d / "minikernel" / "kernel.toml").write_text(text)
    return d


def test_the_verdict_says_the_step_each_side_test_could_have_missed(step_hist, tmp_path):
    """A real bisection (cachegrind): each range beside the step whose test showed no change gets
    one "not ruled out" line in the text and the same number in --json ``not_ruled_out``: the
    step that test, stopped early at a few layouts a side, shows 9 times in 10 -- above the 0.5%
    minimum effect and above the step its cap of 64 layouts would show (``reach``)."""
    m, store = step_hist, tmp_path / "r.sqlite"
    v = bisect_json(m, store, "--no-shadow")
    assert v["status"] == "found" and v["culprit"] == sha(m, 6), v["message"]
    quiet = [sd for sd in v["sides"] if sd["status"] == "not-shown"]
    assert quiet, v["sides"]
    got = {(u["good"], u["bad"]): u for u in v["not_ruled_out"]}
    assert set(got) == {(sd["good"], sd["bad"]) for sd in quiet} and {u["test"] for u in got.values()} == {"side"}
    text = lb("bisect", "minikernel", "--repo", m["repo"], "--store", str(store)).stdout.splitlines()
    lines = [ln for ln in text if ln.startswith("not ruled out:")]
    assert len(lines) == len(quiet), text
    for sd in quiet:
        u = got[(sd["good"], sd["bad"])]
        assert u["below"] == sd["shows"] and u["layouts"] == sd["layouts"] and u["power"] == 0.9
        assert sd["layouts"] < sd["cap"]  # stopped early: what it could not see is larger than its cap's
        assert 0.005 < u["below"] < 0.1 and u["below"] > sd["reach"], sd
        assert (f"not ruled out: a step below {100 * u['below']:.2f}% in {sd['good'][:12]}..{sd['bad'][:12]} (the "
                f"smallest this side test, stopped at {sd['layouts']} layouts a side, shows 9 times in 10 at this "
                "noise)") in lines, lines
        assert u["meaning"].startswith(f"a change smaller than {100 * u['below']:.3g}% between {sd['good'][:12]} and "
                                       f"{sd['bad'][:12]} may have been missed")


def test_the_plan_warns_on_a_noisy_target_and_not_on_a_quiet_one(step_hist, noisy_profiles, tmp_path):
    """`bisect run --plan` on the same range: under the usual cachegrind target (layout noise about
    0.35%) a step of twice the minimum effect is likely named and the plan says nothing of it; on
    the layout-noisy target (about 1.4%) the confirmation needs about 250 fresh layouts a side: at
    the default --max-layouts (256) it is likely named and nothing is said, with --max-layouts 128
    it is likely missed, and the plan says so in two lines -- the chance, the layouts a side that
    would name it, a --max-layouts and a --min-effect that would -- with the same numbers in --json
    (``missed_step``).  Each plan under a --budget that pays for all of it: the plan then judges at the noise
    of its first look (without one it may go on with the endpoints' test and judge at the noise that test
    measured)."""
    m = step_hist
    env = {"LAYOUTBENCH_QUIRKS": m["quirks"] or "/nonexistent/quirks.toml", "LAYOUTBENCH_PROFILES": str(noisy_profiles)}

    def plan(target: str, *more: str) -> dict:
        p = lb("bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--target", target, "--args",
               ARGS, "--store", str(tmp_path / f"{target}.sqlite"), "--json", "--plan", "--budget", "100000", *more,
               env=env)
        return json.loads(p.stdout)

    quiet, noisy_far, noisy = plan("cachegrind"), plan("cachegrind-tiny"), plan("cachegrind-tiny", "--max-layouts", "128")
    assert quiet["noise"] < 0.006 < 0.01 < noisy["noise"], (quiet["noise"], noisy["noise"])
    for q in (quiet["missed_step"], noisy_far["missed_step"]):
        assert q["step"] == 0.01 and not q["likely_missed"] and q["power"] >= 0.8, q
    for said in (quiet["message"], noisy_far["message"]):
        assert "warning:" not in said and "what would fix it" not in said
    assert noisy_far["missed_step"]["layouts"] > 128
    n = noisy["missed_step"]
    assert n["step"] == 0.01 and n["likely_missed"] and n["power"] < 0.8 and n["needed"] > n["layouts"], n
    assert n["larger_min_effect"] > 0.005 and n["larger_min_effect_power"] >= 0.8, n
    lines = noisy["message"].splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("warning:"))
    assert lines[at].startswith("warning: at this noise a step of 1.00% (twice the 0.50% minimum effect) is likely "
                                f"missed: named with probability {n['power']:.2f} (its confirmation looks at most "
                                f"{n['layouts']} layouts a side); about {n['needed']} layouts a side"), lines
    assert lines[at + 1].startswith(f"         what would fix it: --max-layouts {n['needed']}, or --min-effect "
                                    f"{100 * n['larger_min_effect']:g} ("), lines
