"""``layoutbench history``: a sweep over a generated minikernel history (real builds, the
cachegrind target), drill-down with --refine, the plain-text summary, and a killed sweep
that resumes without losing or repeating a run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import _history_repo as H


N_VARIANTS = 5  # sorted, aligned, random:3
METRICS = {"cg_cost", "cg_ir", "cg_i1_misses"}


@pytest.fixture(scope="session")
def hist(tmp_path_factory):
    return H.swept(tmp_path_factory.getbasetemp() / "history")


def _db(path):
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    return db


def test_sweep_measures_every_step_and_stores_the_samples(hist):
    m, sweep = hist["manifest"], hist["sweep"]["sweep"]
    points = [H.sha(m, i) for i in (0, 2, 4, 6, 8)]
    assert sweep["measured"] == points and sweep["new"] == points
    assert sweep["ran"] == len(points) * N_VARIANTS and sweep["skipped"] == 0 and sweep["failed_runs"] == 0
    # the broken commit 2 was built thanks to the quirk, and says so
    series = hist["sweep"]["history"]["series"]
    assert series["points"][H.sha(m, 2)]["quirks"] == ["unused-variable"]
    assert all(p["status"] == "ok" for p in series["points"].values())
    db = _db(hist["store"])
    per_commit = {r["commit_sha"]: r["n"] for r in db.execute(
        "SELECT builds.commit_sha, COUNT(*) AS n FROM runs JOIN builds ON builds.id=runs.build_id "
        "WHERE runs.status='ok' AND builds.layout IN ('sorted','aligned','random') AND builds.seed <= 3 "
        "GROUP BY builds.commit_sha")}  # the history's layouts (a bisection in the same store adds others)
    for c in points:
        assert per_commit[c] == N_VARIANTS  # no --runs: one run a layout, cachegrind's counts being exact
    assert series["runs"] == 1
    metrics = {r[0] for r in db.execute("SELECT DISTINCT metric FROM samples")}
    assert METRICS <= metrics
    assert db.execute("SELECT value FROM state WHERE key LIKE 'history:minikernel:%'").fetchone() is not None


def test_step_sweep_sees_the_regression_between_points(hist):
    m = hist["manifest"]
    changes = hist["sweep"]["history"]["changes"]
    code = [c for c in changes if c["kind"] == "code change" and c["metric"] == "cg_cost"]
    assert [c["commit"] for c in code] == [H.sha(m, 6)]  # the regression is at 5, between points 4 and 6
    assert code[0]["commits_between"] == 2 and code[0]["ratio"] > 1.02


def test_refine_adds_only_the_missing_commits(hist):
    m = hist["manifest"]
    r = hist["refine"]["sweep"]
    assert r["new"] == [H.sha(m, 5)] and r["measured"] == [H.sha(m, 5)]
    assert r["ran"] == N_VARIANTS and r["skipped"] == 0
    again = hist["refine_again"]["sweep"]
    assert again["new"] == [] and again["ran"] == 0
    pts = [p["commit"] for p in hist["refine"]["history"]["points"]]
    assert pts == [H.sha(m, i) for i in (0, 2, 4, 5, 6, 8)]


def test_refined_history_names_the_planted_regression_and_only_it(hist):
    m = hist["manifest"]
    changes = hist["refine"]["history"]["changes"]
    code = [c for c in changes if c["kind"] == "code change"]
    assert {c["commit"] for c in code} == {m["regression"]}
    cost = next(c for c in code if c["metric"] == "cg_cost")
    assert cost["commits_between"] == 1 and cost["ci_low"] > 1.0
    assert abs(100 * (cost["ratio"] - 1) - m["regression_pct"]) < 0.5 * m["regression_pct"]
    # layout-only commits may move single layouts, never as a code change
    assert not any(c["commit"] in m["layout_only"] and c["kind"] == "code change" for c in changes)


def test_summary_is_plain_text(hist):
    m, text = hist["manifest"], hist["summary"]
    assert "\x1b[" not in text
    assert "changes (minimum effect 0.5%; confidence 95% over the history's " in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(m["regression"][:12]) and "cg_cost" in ln)
    assert "code change" in line
    assert "unused-variable" in text  # the quirk
    for i in (0, 2, 4, 5, 6, 8):
        assert H.sha(m, i)[:12] in text


def test_killed_sweep_resumes_without_losing_or_repeating_runs(hist, tmp_path):
    m = hist["manifest"]
    e = {**os.environ, **hist["env"]}  # same object cache: the compiles are reused
    store = tmp_path / "killed.sqlite"
    args = H.sweep_args(m, store, "--step", "4", "--json")
    total = 3 * N_VARIANTS
    p = subprocess.Popen([sys.executable, "-m", "layoutbench", *args], env=e, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        n = 0
        while time.monotonic() < deadline and p.poll() is None:
            if store.exists():
                try:
                    n = _db(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                except sqlite3.OperationalError:
                    n = 0
                if n >= 4:
                    break
            time.sleep(0.2)
        assert p.poll() is None, "the sweep ended before it could be killed"
        os.killpg(p.pid, signal.SIGKILL)  # the sweep and its valgrind child
        p.wait()
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    before = [dict(r) for r in _db(store).execute("SELECT * FROM runs ORDER BY id")]
    assert 4 <= len(before) < total
    samples_before = _db(store).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert samples_before == len(before) * len(METRICS)

    out = H.as_json(H.lb(args, e))["sweep"]
    assert out["skipped"] == len(before) and out["ran"] == total - len(before)
    after = {r["id"]: dict(r) for r in _db(store).execute("SELECT * FROM runs")}
    assert len(after) == total
    for r in before:  # nothing stored before the kill was lost or run again
        assert after[r["id"]] == r
    assert _db(store).execute("SELECT COUNT(*) FROM samples").fetchone()[0] == total * len(METRICS)
    keys = {(r["build_id"], r["rep"]) for r in after.values()}
    assert len(keys) == total


def test_a_target_configured_otherwise_is_not_mixed_into_the_history(hist, tmp_path):
    """The same target name with a smaller I1 cache is another configuration."""
    m = hist["manifest"]
    store = tmp_path / "store.sqlite"  # a copy: the other tests keep the session's store as it was
    with sqlite3.connect(hist["store"]) as src, sqlite3.connect(store) as dst:
        src.backup(dst)
    toml = tmp_path / "profile" / "kernel.toml"
    toml.parent.mkdir()
    text = (H.ROOT / "kernels" / "minikernel" / "kernel.toml").read_text()
    assert 'i1 = "4096,2,64"' in text
    toml.write_text(text.replace('i1 = "4096,2,64"', 'i1 = "1024,1,64"').replace('repo = "../.."', f'repo = "{H.ROOT}"'))
    e = {**os.environ, **hist["env"], "COLUMNS": "200"}

    refused = H.lb(["history", str(toml), "--repo", m["repo"], "--refine", f"{H.sha(m, 6)}..{H.sha(m, 8)}",
                    "--store", str(store)], e, check=False)
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1
    assert "configured otherwise" in refused.stderr and "sweep the range again" in refused.stderr

    a, b = H.sha(m, 6), H.sha(m, 8)
    again = H.as_json(H.lb(["history", str(toml), f"{a}..{b}", "--repo", m["repo"], "--target", "cachegrind",
                            "--layouts", H.LAYOUTS, "--runs", "1", "--args", H.ARGS, "--store", str(store),
                            "--json"], e))
    # the points were measured before under the other cache: measured again, nothing reused
    assert again["sweep"]["measured"] == [a, H.sha(m, 7), b]
    assert again["sweep"]["ran"] == 3 * N_VARIANTS and again["sweep"]["skipped"] == 0
    assert set(again["history"]["series"]["points"]) == {a, H.sha(m, 7), b}


def test_a_sweep_runs_each_layout_once_where_the_counts_are_exact_and_twice_where_runs_are_timed():
    """--runs not given: 1 on cachegrind and on the cache model (every metric they print is a count
    that a second run repeats), 2 on a timed target (local, QEMU), whose runs differ."""
    from layoutbench import profile, targets
    from layoutbench.history.sweeping import default_runs

    prof = profile.load("minikernel")
    assert {n: default_runs(targets.make(prof, n)) for n in ("cachegrind", "qemu-icache", "local", "qemu")} == {
        "cachegrind": 1, "qemu-icache": 1, "local": 2, "qemu": 2}
