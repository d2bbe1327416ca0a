"""Calibration: the error rates layoutbench prints are the ones it has (issue 12).

Fixed RNG seeds, so deterministic; statistical properties only, no timing.  Data model:
per-layout log value = code effect + layout effect (sd sigma_L, drawn again when code
moves) + run noise (sd sigma_R) -- see bench/simulate.py, whose synthetic prober drives
the real decision code (layoutbench.decide) here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import script

from layoutbench import decide, stats


sim = script("bench/simulate.py")


def _pair(rng, k, r, effect, sigma_l=0.01, sigma_r=0.0, shared=False):
    """Two commits over the same k seeds; layouts redrawn between them unless ``shared``."""
    la = rng.normal(0.0, sigma_l, k)
    lb = la if shared else rng.normal(0.0, sigma_l, k)
    a = {f"random:{i}": list(np.exp(la[i] + rng.normal(0.0, sigma_r, r))) for i in range(k)}
    b = {f"random:{i}": list(np.exp(effect + lb[i] + rng.normal(0.0, sigma_r, r))) for i in range(k)}
    return a, b


@pytest.mark.parametrize("k", [3, 4, 8])
@pytest.mark.parametrize("r,sigma_r", [(1, 0.0), (3, 0.01)])
def test_interval_coverage_and_null_error_rate(k, r, sigma_r):
    """95% intervals cover the true ratio >= 93% of the time; on null data "faster"/"slower"
    is said <= 6% of the time (even with min_effect 0); p and interval agree."""
    rng = np.random.default_rng(1000 * k + r)
    n = 1000
    cover = 0
    for _ in range(n):
        effect = rng.normal(0.0, 0.02)
        a, b = _pair(rng, k, r, effect, sigma_r=sigma_r)
        c = stats.compare(a, b, False, min_effect=0.0, rank_test=False)
        cover += c.ci_low <= math.exp(effect) <= c.ci_high
        assert (c.p_value < 0.05) == (c.ci_low > 1.0 or c.ci_high < 1.0)
    assert cover / n >= 0.93, cover / n
    n0, false = 2000, 0
    for _ in range(n0):
        a, b = _pair(rng, k, r, 0.0, sigma_r=sigma_r)
        c0 = stats.compare(a, b, False, min_effect=0.0, rank_test=False)
        false += c0.verdict in ("faster", "slower")
        assert (c0.p_value < 0.05) == (c0.ci_low > 1.0 or c0.ci_high < 1.0)
    assert false / n0 <= 0.06, false / n0


def test_unpaired_welch_is_calibrated_too():
    rng = np.random.default_rng(77)
    n, false = 400, 0
    for _ in range(n):
        a, b = _pair(rng, 4, 2, 0.0, sigma_r=0.005)
        b = {k.replace("random", "other"): v for k, v in b.items()}  # no common ids: unpaired
        c = stats.compare(a, b, True, min_effect=0.0)
        assert not c.paired
        false += c.significant
    assert false / n <= 0.06


def test_one_layout_one_run_never_gives_a_verdict():
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = _pair(rng, 1, 1, rng.normal(0, 0.05))
        assert stats.compare(a, b, False).verdict == "n/a"


def test_alpha_spending_levels_sum_to_alpha():
    for spending in decide.SPENDING:
        plan = decide.Plan(spending=spending)
        lv = plan.levels()
        assert len(lv) == len(plan.looks()) and sum(lv) <= plan.alpha + 1e-9 and min(lv) > 0


def test_whole_bisection_false_blame_on_null_histories():
    """>= 400 simulated histories without a code change (layout-only commits redraw the layout
    effects; half of them also shift the mean by 0.1%), default plan: blame <= 5%."""
    blamed = 0
    n = 400
    for i in range(n):
        sc = sim.Scenario("null", "null", shift=0.001 if i % 2 else 0.0)
        blamed += sim.one(sc, decide.Plan(), seed=10_000 + i)["blame"]
    assert blamed / n <= 0.05, blamed / n


def test_bisection_finds_a_2_sigma_step_and_flags_two_steps():
    """A single step of 2 sigma_L: the right culprit in >= 90% of 100 histories (the docs
    table shows the rate over more); two steps: both found or "several" said in >= 80%."""
    right = sum(sim.one(sim.Scenario("s", "step", 2.0), decide.Plan(), seed=20_000 + i)["right"] for i in range(100))
    assert right >= 90, right
    two = [sim.one(sim.Scenario("t", "two", 3.0), decide.Plan(), seed=30_000 + i) for i in range(60)]
    told = sum(1 for t in two if t["several"] or t["both"] or t["uncertain"])
    assert told / len(two) >= 0.8, told


def test_all_changes_finds_both_steps():
    """--all-changes bisects both sides of a found step: with two steps of 3 and 6 sigma_L
    both are found (and confirmed) in most histories."""
    both = 0
    for i in range(30):
        p = sim.SimProber(sim.Scenario("t", "two", 6.0), np.random.default_rng(40_000 + i))
        out = decide.bisect_range(p, p.names, decide.Plan(all_changes=True), decide.MemoryJournal())
        found = {s.culprit for s in out.steps if s.status == "found"}
        both += {p.names[j] for j in p.steps} <= found
        assert out.several or len(found) < 2
    assert both >= 24, both


def test_a_resumed_bisection_repeats_no_probe_and_reaches_the_same_verdict():
    """The engine continues from the marks of an interrupted run (as bisect.py's log keeps them)."""
    sc = sim.Scenario("s", "step", 3.0, commits=16)
    full = decide.MemoryJournal()
    p = sim.SimProber(sc, np.random.default_rng(7))
    first = decide.bisect_range(p, p.names, decide.Plan(), full)
    assert len(full.log) >= 3
    part = decide.MemoryJournal()
    part.log = full.log[:2]  # killed after two probes
    p2 = sim.SimProber(sc, np.random.default_rng(7))  # the same history; the store gives the same values
    p2._layout, p2._noise = dict(p._layout), dict(p._noise)
    again = decide.bisect_range(p2, p2.names, decide.Plan(), part)
    assert again.culprit == first.culprit and again.status == first.status
    probed = [e["commit"] for e in part.log]
    assert len(probed) == len(set(probed)) and probed[:2] == [e["commit"] for e in full.log[:2]]


def test_a_step_of_the_minimum_effect_is_named_no_less_often_than_by_a_single_layout():
    """The hardest step of the sweep: 0.5 sigma_L = the 0.5% minimum effect.  On the same 100
    histories (their values do not depend on the order they are asked in) layoutbench names
    the right commit at least as often as the single-layout bisection, and never a wrong one."""
    rows = [sim.one(sim.Scenario("s", "step", 0.5), decide.Plan(), seed=50_000 + i) for i in range(100)]
    ours, theirs = sum(r["right"] for r in rows), sum(r["sl_right"] for r in rows)
    assert ours >= theirs, (ours, theirs)
    assert not any(r["wrong"] for r in rows)
    assert sum(r["sl_wrong"] for r in rows) > 20  # the baseline names a wrong commit often


def test_several_is_not_said_of_a_single_step():
    """"Several changes or a drift" is a claim too (residual tests and the share test share
    alpha): said of <= 5% of single-step histories."""
    rows = [sim.one(sim.Scenario("s", "step", 2.0), decide.Plan(), seed=60_000 + i) for i in range(100)]
    assert sum(r["several"] for r in rows) <= 5


def test_within_layout_noise_is_an_equivalence_test_at_the_looks_level():
    """Endpoints that truly differ by exactly the minimum effect are called "within layout
    noise" (interval inside +-min_effect) in <= 5% of the cases over all looks."""
    plan = decide.Plan()
    m = math.log1p(plan.min_effect)
    noise = 0
    n = 200
    for i in range(n):
        rng = np.random.default_rng(70_000 + i)
        la, lb = rng.normal(0.0, 0.01, plan.max_layouts), rng.normal(0.0, 0.01, plan.max_layouts)

        class Two:
            higher_is_better = False

            def groups(self, commit, k, r):
                base = (0.0, la) if commit == "g" else (m, lb)
                return {f"random:{s}": [math.exp(base[0] + base[1][s])] for s in range(k)}

        noise += decide.endpoints(Two(), "g", "b", plan).status == "noise"
    assert noise / n <= 0.05, noise / n


def test_share_test_tells_a_part_from_the_whole():
    """one_sided_t and share_test: a step of a third of the change is told apart from a step
    that is all of it."""
    assert stats.one_sided_t([-1.0, -2.0, -1.5]) < 0.05 < 0.95 < stats.one_sided_t([1.0, 2.0, 1.5])
    assert math.isnan(stats.one_sided_t([1.0]))

    def prober(code):
        rng = np.random.default_rng(5)
        lay = {(c, s): rng.normal(0.0, 0.003) for c in code for s in range(16)}

        class P:
            higher_is_better = False
            kmax = {c: 16 for c in code}

            def groups(self, commit, k, r):
                return {f"random:{s}": [math.exp(code[commit] + lay[(commit, s)])] for s in range(k)}
        return P()

    part = prober({"g": 0.0, "lg": 0.02, "c": 0.03, "b": 0.03})  # the step lg->c is a third
    whole = prober({"g": 0.0, "lg": 0.0, "c": 0.03, "b": 0.03})
    assert decide.share_test(part, ("g", "lg", "c", "b"), 0.7, 1) < 0.01
    assert decide.share_test(whole, ("g", "lg", "c", "b"), 0.7, 1) > 0.5
