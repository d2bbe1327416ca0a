"""A sub-range shown to differ where the search then found no step: recorded as unlocated, not as
several changes; located when its own search finds its step.  Synthetic probers only."""

from __future__ import annotations

import numpy as np
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


def _bisect(seed):
    """5 sigma_L step over 8 commits, run noise 0.3%, layout-only commits shifting the mean by
    +-0.4% (below the 0.5% minimum effect each, above it together)."""
    sc = sim.Scenario("s", "step", 5.0, commits=8, sigma_r=0.003, shift=0.004)
    p = sim.SimProber(sc, np.random.default_rng(seed))
    return p, decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())


def test_a_residual_range_that_differs_without_a_step_found_in_it_is_unlocated():
    p, out = _bisect(6)
    found = [s for s in out.steps if s.status == "found"]
    assert [(s.last_good, s.culprit) for s in found] == [("c3", "c4")] == [(p.names[p.steps[0] - 1], p.names[p.steps[0]])]
    (rec,) = out.residual  # after the step: c4..c8 differs (the shifts add up), its search confirms nothing
    assert (rec["good"], rec["bad"], rec["unlocated"]) == ("c4", "c8", True) and rec["ratio"] > 1.005
    assert [s.status for s in out.steps if s.status != "found"] == ["uncertain"]
    assert out.status == "found" and out.several  # one step named, and a change it does not explain


def test_residual_ranges_whose_searches_find_their_steps_are_located():
    """Two planted steps (2 then 4 sigma_L, 16 commits, no layout shifts): the first search ends
    uncertain at c11; both sides differ, and each side's search finds a step (c12 after, c3
    before): neither residual is unlocated, though a step was left unconfirmed on the way."""
    sc = sim.Scenario("t", "two", commits=16, sigma_r=0.003, sizes=(2.0, 4.0))
    p = sim.SimProber(sc, np.random.default_rng(8))
    out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
    assert [(r["good"], r["bad"], r["unlocated"]) for r in out.residual] == [("c11", "c16", False), ("c0", "c10", False)]
    assert [(s.culprit, s.status) for s in out.steps] == [("c3", "found"), ("c11", "uncertain"), ("c12", "found")]
    assert [p.names[i] for i in p.steps] == ["c3", "c12"] and out.culprit == "c3"
    assert out.several  # two steps found


def test_a_residual_range_whose_search_finds_the_only_step_is_not_several_changes():
    """The first search ends uncertain at c1; c1..c8 differs and its search finds c2, the planted
    step: located, and one change in all."""
    p, out = _bisect(3)
    (rec,) = out.residual
    assert (rec["good"], rec["bad"], rec["unlocated"]) == ("c1", "c8", False)
    assert [(s.culprit, s.status) for s in out.steps] == [("c1", "uncertain"), ("c2", "found")]
    assert p.names[p.steps[0]] == "c2" and out.culprit == "c2" and not out.several
