"""bench/seed_persistence.py on a tiny real store (SQLite through layoutbench.store) and a real
git repository: the same seed's values across commits, their variance ratio and correlation,
by commit distance, and what is left out (too few shared seeds, byte-identical images)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from conftest import ROOT, git, script
from layoutbench import layout, metrics
from layoutbench.build import Variant
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult

sp = script("bench/seed_persistence.py")
SEEDS = range(1, 21)


def _store(tmp_path, values: dict, twin: dict) -> Store:
    """A store holding values[(commit, seed)] as cg_cost of random layout ``seed``; a commit in
    ``twin`` gets the image hashes of the commit it names (a commit that changed no object)."""
    st = Store(tmp_path / "r.sqlite")
    key = RunKey("cachegrind", "h", "rerun", "iterations=300")
    for (c, seed), v in values.items():
        plan = layout.LayoutPlan("minikernel", "hosted", c, "random", seed, {"text": []})
        out = tmp_path / "img" / f"{c[:12]}-{seed}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "plan.json").write_text(plan.to_json())
        sha = f"{twin.get(c, c)[:20]}{seed}".ljust(64, "0")
        var = Variant("minikernel", c, "hosted", "random", seed, out / "image.elf", out / "plan.json", out / "link.ld",
                      sha, f"0x{plan.plan_id:07x}", True)
        res = RunResult("ok", 0, "", 0.3, "valgrind", "h", [metrics.Sample("cg_cost", v, "cost", False)])
        st.add_run(st.build_id(var, {}), key, 0, res, out / "log", 0.0)
    return st


def test_same_seed_correlation_falls_with_commit_distance_and_identical_images_are_left_out(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for i in range(11):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()  # position 0 (the root) .. 10
    rng = np.random.default_rng(7)
    x = {1: rng.normal(0, 0.01, len(SEEDS))}  # a layout effect per seed that drifts from commit to commit
    for c in range(2, 9):
        x[c] = x[c - 1] + rng.normal(0, 0.01, len(SEEDS))
    values = {(shas[c], s): float(1e6 * np.exp(x[c][i])) for c in x for i, s in enumerate(SEEDS)}
    values |= {(shas[9], s): values[(shas[8], s)] for s in SEEDS}  # commit 9: commit 8's images again
    values |= {(shas[10], s): 1e6 * (1 + s / 100) for s in (1, 2, 3)}  # 3 seeds: shares too few with any
    st = _store(tmp_path, values, {shas[9]: shas[8]})
    vals, images = sp.seed_values(st, "cg_cost", "random")
    assert len(vals) == 10 and vals[(shas[1], "hosted")][5] == np.log(values[(shas[1], 5)])
    ps, left = sp.pairs(vals, images, 6, sp.commit_order([str(repo)]))
    # 9 commits at 20 seeds: 36 pairs, one of them (8, 9) the same images; commit 10 with each of 9
    assert left == {"identical images": 1, "fewer shared seeds": 9} and len(ps) == 35
    one = next(p for p in ps if {p["a"], p["b"]} == {shas[1], shas[2]})
    a, b = x[1], x[2]
    assert one["distance"] == 1 and one["shared"] == 20
    assert np.isclose(one["ratio"], np.var(a - b, ddof=1) / (np.var(a, ddof=1) + np.var(b, ddof=1)), rtol=1e-6)
    assert np.isclose(one["corr"], np.corrcoef(a, b)[0, 1], rtol=1e-6)
    assert next(p for p in ps if {p["a"], p["b"]} == {shas[1], shas[9]})["distance"] == 8
    near, far = (sp.summary([p for p in ps if lo <= p["distance"] <= hi]) for lo, hi in ((1, 1), (5, 8)))
    assert near["corr_mean"] > 0.7 and far["corr_mean"] < near["corr_mean"] - 0.15
    assert near["ratio_median"] < 0.25 < 0.5 < far["ratio_median"]
    # the command: the same numbers as JSON, the table, one line for a store that is not there
    cmd = [sys.executable, "-m", "bench.seed_persistence"]
    run = [*cmd, str(tmp_path / "r.sqlite"), "--repo", str(repo)]
    d = json.loads(subprocess.run(run + ["--json"], capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    assert d["all"] == sp.summary(ps) and d["left_out"] == left and d["commits"] == 10
    assert [(b["lo"], b["pairs"]) for b in d["by_distance"]] == [(1, 7), (2, 13), (4, 14), (8, 1)]
    table = subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "35 pairs with >= 6 shared seeds" in table and "1 (identical images)" in table
    p = subprocess.run([*cmd, str(tmp_path / "none.sqlite")], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "no such store" in p.stderr
    assert not (tmp_path / "none.sqlite").exists()
