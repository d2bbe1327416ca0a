"""How a probe is judged: its looks (3 layouts, then one more each time, up to its cap; it stops at
the look that decides), the note of a bad probe, its cap from the pooled variance, the side tests' stop
rule, pooling across a resumed bisection.  Synthetic probers only."""

from __future__ import annotations

import math

import numpy as np
from _probers import Offsets, Same
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


def test_a_probe_looks_at_3_layouts_then_one_more_each_time_up_to_its_cap():
    """k -> min(cap, k + 1) from MIN_LAYOUTS = 3: the probe's tests (Wald's SPRT, the two mixture
    SPRTs) are valid whenever they are read, so each layout added is a look, and the last look is
    exactly the cap (twice the quiet cap of 40 here; max_layouts when smaller).  The endpoints are
    measured to the same layouts before each look of the probe."""
    p = Same()
    j = decide.judge_probe(p, "p", "g", "b", decide.Plan())
    looks = list(range(3, 81))
    assert [k for c, k in p.asked if c == "p"] == looks
    assert [k for c, k in p.asked if c == "g"] == [k for c, k in p.asked if c == "b"] == looks
    assert p.asked[:3] == [("g", 3), ("b", 3), ("p", 3)]
    assert (j.verdict, j.note, j.layouts, j.runs) == ("uncertain", "looks spent", 80, 1)
    p = Same()
    j = decide.judge_probe(p, "p", "g", "b", decide.Plan(max_layouts=20))
    assert [k for c, k in p.asked if c == "p"] == list(range(3, 21)) and j.layouts == 20


def test_a_probe_that_decides_stops_at_that_look():
    """A probe like BAD (a 5 sigma_L step before it) is called bad at its first look; one like GOOD
    (the step after it) good at the first layout at which its SPRT crosses (one layout a look)."""
    sc = sim.Scenario("s", "step", 5.0, commits=8, sigma_r=0.003)
    p = sim.SimProber(sc, np.random.default_rng(4))
    at = p.steps[0]
    good, bad = p.names[0], p.names[-1]
    asked = []
    plain = p.groups

    def groups(c, k, r):
        asked.append((c, k))
        return plain(c, k, r)
    p.groups = groups
    j = decide.judge_probe(p, p.names[at], good, bad, decide.Plan())
    assert j.verdict == "bad" and [k for c, k in asked if c == p.names[at]] == [3] and j.layouts == 3
    asked.clear()
    j = decide.judge_probe(p, p.names[at - 1], good, bad, decide.Plan())
    ks = [k for c, k in asked if c == p.names[at - 1]]
    assert j.verdict == "good" and ks == list(range(3, 3 + len(ks))) and j.layouts == ks[-1] > 3


def test_a_probe_like_bad_is_bad_without_the_between_note_and_one_between_has_it():
    """BAD 20% above GOOD (no noise but the shared layout effect): a probe equal to BAD differs from
    GOOD only -- "bad", no note; one 10% above GOOD differs from both -- "between" with the note."""
    p = Offsets({"g": 0.0, "b": 0.2, "p": 0.2, "q": 0.1})
    j = decide.judge_probe(p, "p", "g", "b", decide.Plan())
    assert (j.verdict, j.note) == ("bad", "") and "either side" not in j.describe()
    j = decide.judge_probe(p, "q", "g", "b", decide.Plan())
    assert (j.verdict, j.note) == ("between", "differs from both GOOD and BAD: a change on either side")


def test_a_probes_cap_comes_from_the_pooled_variance_measured_before_it():
    """With the endpoints already measured at a quiet benchmark (pooled variance ~5e-5 on 8 df) a
    never-deciding probe looks to twice the quiet cap (80), not on to max_layouts (256)."""
    p, plan = Same(), decide.Plan()
    tr = decide.Tracked(p)
    for c in ("g", "b"):
        decide.tracked.measure_at(tr, c, 5, 1)
    s2, df = tr.pool.var()
    assert 0 < s2 < 1e-4 and df == 8
    j = decide.judge_probe(tr, "p", "g", "b", plan)
    assert (j.verdict, j.note, j.layouts) == ("uncertain", "looks spent", 2 * plan.cap) and plan.max_layouts > 80


def test_a_side_test_asks_its_stop_rule_after_every_layout_and_decides_at_its_looks_only():
    """endpoints(..., go_on), as the residual tests beside a found step call it:
    go_on is asked after every layout added a side (3, 4, 5, ...), not only at the x1.5 looks, and
    "differs" is said only at a look (3, 5, 8, 12, 18, 27, cap): its boundary is the looks' design,
    and a crossing between them would spend a level the design did not count.  30 fixed pairs,
    a 0.8% shift at 1% layout noise: some differ, each at a look."""
    plan = decide.Plan(layouts=3)
    cap = 40
    looks = [k for k in decide.schedule(3, plan.cap) if k < cap] + [cap]
    differs = 0
    for i in range(30):
        p = sim.SimProber(sim.Scenario("e", "null", commits=1, sigma_l=0.01, sigma_r=0.001),
                          np.random.default_rng(35_000 + i))
        p.code[1], p.epoch[1] = math.log1p(0.008), 1
        asked: list[int] = []
        e = decide.endpoints(decide.Tracked(p), "c0", "c1", plan, level=0.05, cap=cap,
                             stop=decide.SideStop(go_on=lambda k, asked=asked: asked.append(k) or True))
        assert asked == list(range(3, 3 + len(asked))), asked
        assert asked[-1] >= e.layouts - 1 if asked else e.layouts == 3
        if e.status == "differs":
            differs += 1
            assert e.layouts in looks, (e.layouts, looks)
            assert e.look == looks.index(e.layouts)
    assert 5 <= differs < 30, differs


def _spent(spread: float, plan: decide.Plan) -> tuple[decide.Judgement, list[int], float]:
    """A never-deciding probe judged after the endpoints were measured at 5 layouts each with a
    layout effect of size ``spread``: its judgement, its looks, the pooled variance it started from."""
    p = Same(spread)
    tr = decide.Tracked(p)
    for c in ("g", "b"):
        decide.tracked.measure_at(tr, c, 5, 1)
    s2 = tr.pool.var()[0]
    j = decide.judge_probe(tr, "p", "g", "b", plan)
    return j, [k for c, k in p.asked if c == "p"], s2


def test_a_noisy_pool_lets_the_same_probe_look_further_than_a_quiet_one():
    """The same undecided probe (every commit alike, so neither side is ever shown): at a quiet
    pool (layout effect 1%) it stops at twice the quiet cap, 80 layouts; with the layout effect 3x
    as large (pooled variance 9x) it goes on along the same schedule to twice noise_cap -- 132
    with max_layouts 400 (noise_cap 66), past the quiet 80 -- and at a very noisy pool to twice
    noise_top (240), within max_layouts (256 by default), never further (max_layouts 128: 128)."""
    plan = decide.Plan(max_layouts=400)
    quiet, qlooks, qs2 = _spent(0.01, plan)
    assert (quiet.verdict, quiet.note, quiet.layouts) == ("uncertain", "looks spent", 80) and 2 * plan.cap == 80
    noisy, looks, s2 = _spent(0.03, plan)
    assert s2 > 8 * qs2
    cap = 2 * decide.noise_cap(plan, s2, decide.plan.top_looks(plan), plan.alpha)
    assert (noisy.verdict, noisy.note) == ("uncertain", "looks spent")
    assert noisy.layouts == looks[-1] == cap == 132 > quiet.layouts
    assert looks == qlooks + list(range(81, 133))  # the quiet looks to 80, then on (one layout a look)
    loud, looks, s2 = _spent(0.2, decide.Plan())
    assert 2 * decide.noise_cap(decide.Plan(), s2, decide.plan.top_looks(decide.Plan()), 0.05) == 240
    assert (loud.verdict, loud.layouts, looks[-1]) == ("uncertain", 240, 240)
    capped, looks, s2 = _spent(0.2, decide.Plan(max_layouts=128))
    assert (capped.verdict, capped.layouts, looks[-1]) == ("uncertain", 128, 128)


def test_a_resumed_bisection_pools_the_layouts_its_marks_were_judged_on():
    """An interrupted bisection resumes from its marks (the probes an earlier session judged are
    not judged again); their layouts go back into the pool (decide.rounds._reload, from the store: no run
    again), so the tests after them -- the confirmation's interval, the side tests' order, levels
    and intervals -- are the uninterrupted bisection's.  Before, the resumed pool lacked them: a
    real bisection printed other intervals and the two side tests in the other order (each at the
    other's level) when run again from its store.  Five single 5 sigma_L histories, each resumed
    after its first search."""
    differ = 0
    for i in range(5):
        sc = sim.Scenario("s", "step", 5.0, sigma_r=0.003)
        p1 = sim.SimProber(sc, np.random.default_rng(36_000 + i))
        j1 = decide.MemoryJournal()
        o1 = decide.bisect_range(p1, p1.names, decide.Plan(), j1)
        first = [e for e in j1.log if e.get("segment") is None]
        assert first and o1.status == "found"
        p2 = sim.SimProber(sc, np.random.default_rng(36_000 + i))  # a new process, the same history
        j2 = decide.MemoryJournal()
        j2.log = [dict(e) for e in first]
        o2 = decide.bisect_range(p2, p2.names, decide.Plan(), j2)
        assert [(s.culprit, s.effect) for s in o2.steps] == [(s.culprit, s.effect) for s in o1.steps]
        c1, c2 = o1.steps[0].confirmation, o2.steps[0].confirmation
        assert (c2.ci_low, c2.ci_high) == (c1.ci_low, c1.ci_high)
        assert o2.sides == o1.sides
        differ += o2.runs != o1.runs
    assert differ == 0
