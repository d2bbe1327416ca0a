"""A bisection whose probes are spread over several machines.

Three throw-away sshd servers on 127.0.0.1 are three ssh targets; each runs the hosted
minikernel under valgrind's cachegrind (the same simulated I1 cache and cost as the
``cachegrind`` target, so the metric is deterministic and layout-sensitive).  Over a
generated history with a planted regression, a bisection over the three targets and one
over a single target name the same culprit; the three-target one takes fewer rounds, every
mark names the machine that judged it, and that machine measured GOOD and BAD too: no
comparison pairs samples of two machines.  The engine's (k+1)-ary split, its alpha and its
rounds are also checked in simulation (bench/simulate.py's synthetic prober).
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bench.labs import sshd as _sshd
from bench.labs.remote import ARGS, farm_profile
from conftest import lb, require, require_module, script

from layoutbench import decide


def _make_history():
    return script("kernels/minikernel/make_history.py").make_history


def rows(db: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchall()


@pytest.fixture
def lab(tmp_path):
    lab = _sshd.Lab(tmp_path / "lab", 3)
    yield lab
    lab.stop()


def bisect(toml, m, store, targets):
    p = lb("bisect", str(toml), f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--target", targets,
           "--metric", "cg_cost", "--args", ARGS, "--no-shadow", "--store", str(store), "--json")
    return json.loads(p.stdout)


def _simulate():
    return script("bench/simulate.py")


class Named:
    """A simulated machine: a copy of one synthetic history, under a name."""

    def __init__(self, prober, name):
        self.prober, self.name = prober, name

    @property
    def higher_is_better(self):
        return self.prober.higher_is_better

    def groups(self, commit, k, r):
        return self.prober.groups(commit, k, r)


def test_k_ary_split_and_its_alpha():
    assert decide.split(0, 16, list(range(1, 16)), 3) == [4, 8, 12]
    assert decide.split(0, 16, list(range(1, 16)), 1) == [8]
    assert decide.split(3, 6, [4, 5], 3) == [4, 5]  # fewer candidates than machines: each once
    assert decide.split(0, 8, [1, 2, 3, 5, 6, 7], 1) == [3]  # nearest the middle, ties: the earlier
    assert decide.planned_probes(17, 1) == 4 and decide.planned_probes(17, 3) == 3 * 2
    assert decide.planned_probes(65, 3) == 3 * 3 and decide.planned_probes(66, 3) == 3 * 4


def test_the_engine_over_three_simulated_machines_takes_fewer_rounds():
    sim = _simulate()
    sc = sim.Scenario("s", "step", 6.0, commits=32)
    base = sim.SimProber(sc, np.random.default_rng(5))
    true = base.names[base.steps[0]]
    one = decide.bisect_range(copy.deepcopy(base), base.names, decide.Plan(), decide.MemoryJournal())
    journal = decide.MemoryJournal()
    three = decide.bisect_range([Named(copy.deepcopy(base), f"m{i}") for i in range(3)], base.names,
                                decide.Plan(), journal)
    assert one.culprit == three.culprit == true, (one.culprit, three.culprit, true)
    assert one.rounds == one.probes and 0 < three.rounds < one.rounds, (one.rounds, three.rounds)
    assert {e["target"] for e in journal.log} <= {"m0", "m1", "m2"} and len({e["target"] for e in journal.log}) > 1
    assert "3 probes per round" in three.bound() and "probes per round" not in one.bound()


def test_three_machines_find_the_same_culprit_in_fewer_rounds_never_mixing_hosts(workdir, tmp_path, lab):
    require(_sshd.available())
    require_module("asyncssh")
    m = _make_history()(tmp_path / "repo", 8, seed=11, regression_at=3, regression_pct=3.0, layout_only=[1, 5, 7])
    toml = farm_profile(lab, tmp_path)
    one = bisect(toml, m, tmp_path / "one.sqlite", "m0")
    three = bisect(toml, m, tmp_path / "three.sqlite", "m0,m1,m2")
    assert one["status"] == "found" and one["culprit"] == m["regression"], one["message"]
    assert three["status"] == "found" and three["culprit"] == m["regression"], three["message"]
    assert three["targets"] == ["m0", "m1", "m2"] and one["targets"] == ["m0"]
    assert 0 < three["rounds"] < one["rounds"], (three["rounds"], one["rounds"])
    assert three["probes"] >= three["rounds"]
    assert "3 probes per round" in three["bound"]

    # every mark names the machine that judged it; at least two machines judged probes
    db = tmp_path / "three.sqlite"
    log = json.loads(rows(db, "SELECT value FROM state WHERE key LIKE 'bisect:%:%'")[0][0])["log"]
    marks = [e for e in log if e["verb"] in ("good", "bad", "skip")]
    assert marks and all(e.get("target") in ("m0", "m1", "m2") for e in marks), marks
    assert len({e["target"] for e in marks}) >= 2, marks

    # each target's runs carry its own host ...
    hosts = {f"m{i}": f"root@127.0.0.1:{s.port}" for i, s in enumerate(lab.servers)}
    assert set(rows(db, "SELECT DISTINCT target, host FROM runs")) <= set(hosts.items())
    # ... and the machine that judged a probe measured GOOD and BAD itself, on the same layouts
    for e in marks:
        for sha in (e["commit"], m["good"], m["bad"]):
            seeds = {s for (s,) in rows(db, "SELECT DISTINCT b.seed FROM runs r JOIN builds b ON b.id = r.build_id "
                                            "WHERE b.commit_sha = ? AND r.target = ? AND r.host = ? AND "
                                            "b.layout = 'random'", sha, e["target"], hosts[e["target"]])}
            assert len(seeds) >= e["layouts"], (e, sha, seeds)
    t = lb("bisect", str(toml), "--repo", m["repo"], "--store", str(db)).stdout
    assert "rounds over 3 machines" in t, t
