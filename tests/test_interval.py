"""The interval printed beside a decision is the one the decision used, and the minimum effect is
tested (the null |effect| <= min_effect), not read off a point estimate.

Fixed RNG seeds; the decision code (layoutbench.decide) runs unchanged against synthetic probers
(bench/simulate.py's, and a two-commit one here)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


class _Pair:
    """Two commits, GOOD ``g`` and ``b`` = g + ``step`` (log scale): each layout's effect drawn
    apart for each commit (the step's code moved everything), sd ``sigma_l``, run noise
    ``sigma_r``; the same call gives the same values."""

    higher_is_better = False

    def __init__(self, step: float, key: int, sigma_l: float = 0.01, sigma_r: float = 0.003):
        self.step, self.key, self.sigma_l, self.sigma_r = step, key, sigma_l, sigma_r

    def _value(self, commit: str, seed: int, r: int) -> list:
        g = np.random.default_rng((self.key, int.from_bytes(commit.encode(), "little"), seed))
        lvl = (self.step if commit == "b" else 0.0) + g.normal(0.0, self.sigma_l)
        return list(np.exp(lvl + g.normal(0.0, self.sigma_r, r)))

    def groups_after(self, commit: str, first: int, k: int, r: int) -> dict:
        return {f"random:{s}": self._value(commit, s, r) for s in range(first + 1, first + k + 1)}

    def groups(self, commit: str, k: int, r: int) -> dict:
        return self.groups_after(commit, 0, k, r)


def test_the_interval_is_the_tests_own_one_or_two_sided():
    """ZTest.interval: est -+ the group-sequential boundary through the t quantile; one-sided
    (an infinite end) when the test was; its bound clears 0 exactly when ``crosses`` rejects."""
    ns = (4, 6, 9, 14, 21, 32, 40)
    t = decide.ZTest(0.01, 0.004, 50, 20, 20)
    c1, c2 = decide.gs_boundary(ns, 0.03, one_sided=True), decide.gs_boundary(ns, 0.03)
    assert t.interval(ns, 0.03, +1) == (pytest.approx(0.01 - t.tost_half(c1)), math.inf)
    assert t.interval(ns, 0.03, -1) == (-math.inf, pytest.approx(0.01 + t.tost_half(c1)))
    assert t.interval(ns, 0.03) == (pytest.approx(0.01 - t.tost_half(c2)), pytest.approx(0.01 + t.tost_half(c2)))
    for est in np.linspace(-0.02, 0.02, 81):
        tt = decide.ZTest(float(est), 0.004, 50, 20, 20)
        assert (tt.interval(ns, 0.03, +1)[0] > 0) == tt.crosses(ns, 0.03, +1)
        lo, hi = tt.interval(ns, 0.03)
        assert (lo > 0 or hi < 0) == tt.crosses(ns, 0.03)


def test_every_confirmed_step_prints_an_interval_that_excludes_the_minimum_effect():
    """40 histories of 16 commits with a 1 sigma_L step: every confirmed step's printed interval
    is one-sided in the direction of the range's change, at its confirmation's level, and lies
    beyond the whole band +-min_effect (so it never contains 1.0); the endpoints' interval beside
    "differs" excludes 1.0."""
    plan = decide.Plan()
    m = plan.min_effect
    found = 0
    for i in range(40):
        sc = sim.Scenario("step", "step", 1.0, sigma_r=0.003, commits=16)
        p = sim.SimProber(sc, np.random.default_rng(7_000 + i))
        out = decide.bisect_range(p, p.names, plan, decide.MemoryJournal())
        e = out.ends.comparison
        if out.ends.status == "differs":
            assert e.ci_low > 1.0 or e.ci_high < 1.0, (i, e.ci_low, e.ci_high)
        for st in out.steps:
            c = st.confirmation
            if st.status != "found":
                continue
            found += 1
            assert c.sided == 1 and c.ci_high == math.inf, (i, c.sided, c.ci_low, c.ci_high)
            assert c.ci_low > 1.0 + m, (i, c.ratio, c.ci_low)
            assert c.confidence >= 1.0 - decide.confirm_level(plan.alpha, 1) - 1e-12
            if len(out.steps) == 1:  # the bisection's one confirmation: its first, at the first's level
                assert c.confidence == pytest.approx(1.0 - decide.confirm_level(plan.alpha, 1)), (i, c.confidence)
    assert found >= 20, found


@pytest.mark.parametrize("step", [0.003, 0.0045])
def test_a_step_below_the_minimum_effect_is_confirmed_at_most_at_the_tests_level(step):
    """A true step of 0.3% or 0.45% (below the 0.5% minimum effect) confirmed on fresh layouts,
    300 pairs at the first confirmation's level (4%): confirmed at most at that level (a
    point estimate of at least 0.5% is not enough), while a 1.5% step is confirmed in >= 95% (no
    share bound: these pairs spent nothing before their confirmation, which would bound it at 40)."""
    plan = decide.Plan(confirm_share=1.0)
    level = decide.confirm_level(plan.alpha, 1)
    n = 300
    named = 0
    for i in range(n):
        c, _, _ = decide.confirm(_Pair(step, 100 + i), "g", "b", plan, used=4, level=level, sign=1)
        named += c is not None and c.significant
    assert named / n <= level, named
    big = sum(decide.confirm(_Pair(0.015, 900 + i), "g", "b", plan, used=4, level=level, sign=1)[0].significant
              for i in range(60))
    assert big >= 57, big


class _Outlier(_Pair):
    """A null pair (``b`` like ``g``), one run per layout, and one run of ``b`` 20% slower on the
    first fresh seed after 40."""

    def _value(self, commit: str, seed: int, r: int) -> list:
        v = super()._value(commit, seed, r)
        if commit == "b" and seed == 41:
            v[0] *= 1.2
        return v


def test_one_outlier_run_on_a_fresh_layout_does_not_confirm_a_null_step():
    """R=1: the outlier run is its layout's value, which no rule inside a layout can clip.  Five
    commits measured at 40 layouts (the layout noise known), then the confirmation of the null
    pair on seeds 41..: never confirmed (20 pairs); without the rule across layouts every one
    is, at its first look."""
    plan = decide.Plan()
    named = 0
    for i in range(20):
        tr = decide.Tracked(_Outlier(0.0, 500 + i, sigma_r=0.0))
        for c in ("g", "x1", "x2", "x3", "b"):
            decide.tracked.measure_at(tr, c, 40, 1)
        c, _, _ = decide.confirm(tr, "g", "b", plan, used=40, level=decide.confirm_level(plan.alpha, 1), sign=1)
        named += c.significant
    assert named == 0, named


def test_step_power_warns_where_a_step_of_twice_the_minimum_effect_is_likely_missed():
    """decide.step_power (for `bisect run --plan`): a 1% step (twice the 0.5% minimum effect) at
    the simulated layout noise (1.04%) is likely named; at 4% layout noise it is likely missed,
    with the layouts a side that would name it beyond the furthest look; a step no larger than
    the minimum effect is never shown beyond it (no number of layouts)."""
    plan = decide.Plan()
    quiet, noisy = decide.step_power(0.01, 0.0104, plan), decide.step_power(0.01, 0.04, plan)
    assert not quiet["likely_missed"] and quiet["power"] >= 0.8
    assert noisy["likely_missed"] and noisy["needed"] > noisy["layouts"]
    at_m = decide.step_power(plan.min_effect, 0.0104, plan)
    assert at_m["needed"] is None and at_m["likely_missed"]


def test_shows_at_is_the_step_a_test_that_stopped_shows_nine_times_in_ten():
    """decide.shows_at (a test that showed no change: the step below which one may have been
    missed): at the layouts a side it was judged at, a step of that size ends "differs" -- z beyond
    the design's boundary and the estimate at least the minimum effect -- 9 times in 10, whichever
    of the two binds (the boundary at 4 layouts a side, the minimum effect at 400)."""
    rng = np.random.default_rng(7)
    pool = decide.Pool()
    for c in ("a", "b"):
        pool.add(c, {f"random:{i}": [math.exp(x)] for i, x in enumerate(rng.normal(0.0, 0.01, 30))})
    s2, _ = pool.var()
    m, lv = math.log1p(0.005), 0.0304
    ns = tuple(decide.schedule(4, 64))
    c = decide.gs_boundary(ns, lv)
    for n, binds in ((4, "boundary"), (400, "minimum effect")):
        se = math.sqrt(2 * s2 / n)
        d = decide.shows_at(pool, ns, lv, n, n, m)
        assert (c * se > m) == (binds == "boundary")
        est = rng.normal(d, se, 40_000)
        shown = float(np.mean((est / se >= c) & (est >= m)))
        assert shown == pytest.approx(0.9, abs=0.01), (n, shown)
        # at another power (a side test's reach: FUTILITY_POWER at its cap) the same two limits hold
        r = decide.shows_at(pool, ns, lv, n, n, m, decide.FUTILITY_POWER)
        est = rng.normal(r, se, 40_000)
        shown = float(np.mean((est / se >= c) & (est >= m)))
        assert r < d and shown == pytest.approx(decide.FUTILITY_POWER, abs=0.02), (n, shown)
    assert math.isnan(decide.shows_at(decide.Pool(), ns, lv, 4, 4, m))
