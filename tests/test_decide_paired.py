"""The seed-paired test beside the pooled one (Plan.paired): its error rate on pairs without a change,
whatever the layouts' correlation, and the steps it shows where the pooled test cannot.

Fixed RNG seeds; the synthetic prober of bench/simulate.py (``layout_corr``: how much of a seed's
layout effect survives a commit) drives the real decision code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import script
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutbench import decide

sim = script("bench/simulate.py")


def _prober(seed: int, rho: float, step: float = 0.0, sigma_r: float = 0.003):
    """GOOD (c0) and BAD (c1) with a layout-only or code commit between them: BAD's layout effects are
    a new epoch, correlated ``rho`` with GOOD's seed by seed; BAD's mean is GOOD's + ``step`` (log)."""
    sc = sim.Scenario("p", "null", commits=1, sigma_r=sigma_r, layout_corr=rho)
    p = sim.SimProber(sc, np.random.default_rng(seed))
    p.code[1], p.epoch[1] = step, 1
    return p


def test_the_paired_test_is_its_per_seed_differences():
    pool = decide.Pool()
    pool.add("a", {f"random:{s}": [math.exp(v)] for s, v in enumerate([0.01, -0.02, 0.03, 0.0], 1)})
    pool.add("b", {f"random:{s}": [math.exp(v)] for s, v in enumerate([0.02, -0.01, 0.05, 0.01, 0.4], 1)})
    t = decide.paired(pool, "a", "b")
    d = np.array([0.01, 0.01, 0.02, 0.01])  # the fifth seed of b has no partner
    assert t.paired and t.df == 3 and t.na == t.nb == 4
    assert t.est == pytest.approx(d.mean())
    assert t.se == pytest.approx(d.std(ddof=1) / 2.0)


def test_fresh_layouts_pair_by_their_seeds():
    """A confirmation's fresh seeds beyond the first ones pair with the same seeds of the other commit."""
    pool = decide.Pool()
    pool.add("a", {f"random:{s}": [1.0 + s / 100] for s in (1, 2, 3)})
    pool.add("b", {f"random:{s}": [1.0 + s / 100] for s in (1, 2, 3, 4)})
    pool.add_fresh("a", 5, {f"random:{s}": [1.0 + s / 50] for s in (6, 7, 8)})
    assert list(pool.seeds["a"]) == [1, 2, 3, 6, 7, 8]
    assert list(pool.seeds["b"]) == [1, 2, 3, 4]
    assert decide.paired(pool, "a", "b").na == 3


def test_a_confirmations_fresh_layouts_pair_only_when_both_sides_hold_the_same_seeds_each_with_a_run():
    """decide.sequential.fresh_pairs: the paired test of a confirmation reads the per-seed differences
    only when both sides measured the same seeds, each with a run; else it has no data (never rejects)."""
    fp = decide.sequential.fresh_pairs
    ya, yb = np.array([0.0, 0.01, 0.02]), np.array([0.03, 0.05, 0.04])
    same = fp({"random:1": [1.0], "random:2": [1.0], "random:3": [1.0]},
              {"random:1": [1.0], "random:2": [1.0], "random:3": [1.0]}, ya, yb)
    assert same.na == 3 and same.est == pytest.approx(0.03)
    other = fp({"random:1": [1.0], "random:2": [1.0], "random:3": [1.0]},
               {"random:4": [1.0], "random:5": [1.0], "random:6": [1.0]}, ya, yb)
    empty = fp({"random:1": [1.0], "random:2": [], "random:3": [1.0]},
               {"random:1": [1.0], "random:2": [1.0], "random:3": [1.0]}, ya, yb)
    assert other.df == empty.df == 0 and not other.rejects(0.05) and not empty.rejects(0.05)


@pytest.mark.parametrize("rho", [0.0, 0.99])
def test_null_pairs_differ_at_most_alpha_with_the_paired_test_beside_the_pooled(rho):
    """400 pairs without a change, a layout-only commit between them (BAD's layouts a new epoch,
    correlated ``rho`` with GOOD's), minimum effect 0: the endpoints say "differs" at most their 5%
    level in all (each test at 2.5%), and the paired test decides at most its 2.5%."""
    differs = paired = 0
    for i in range(400):
        e = decide.endpoints(_prober(8_000 + i, rho), "c0", "c1", decide.Plan(min_effect=0.0, paired=True))
        differs += e.status == "differs"
        paired += e.status == "differs" and e.comparison.paired
    assert differs / 400 <= 0.075, differs / 400  # 5% + 2.3 sd of 400 draws
    assert paired / 400 <= 0.043, paired / 400  # 2.5% + 2.3 sd


def test_a_shift_of_the_minimum_effect_is_confirmed_at_most_alpha_at_high_correlation():
    """A commit that moved code and shifted the mean by exactly the minimum effect (0.5%) is the band
    null of the confirmation: at a layout correlation of 0.99, where the paired test sees the shift
    sharply, it is confirmed in at most 5% of 300 pairs."""
    plan = decide.Plan(paired=True)
    hits = 0
    for i in range(300):
        c = decide.confirm(_prober(9_000 + i, 0.99, math.log1p(0.005)), "c0", "c1", plan, used=4, sign=1)
        hits += c[0] is not None and c[0].verdict != "no difference"
    assert hits / 300 <= 0.078, hits / 300  # 5% + 2.3 sd of 300 draws


def test_pairing_shows_a_step_the_pooled_test_cannot_at_the_same_layouts():
    """A 1% step at a layout noise of 1% (run noise 0.1%), the seeds' layouts correlated 0.99 across
    the commit: with the paired test the endpoints differ at their first look (4 layouts a side) in
    nearly every pair, the pooled test alone on the same values in few; a confirmation shows the step
    beyond the 0.5% minimum effect on 8 fresh layouts a side or fewer, the pooled test alone does not."""
    on, off = decide.Plan(paired=True), decide.Plan()
    with_paired = pooled = 0
    for i in range(20):
        e = decide.endpoints(_prober(10_000 + i, 0.99, 0.01, 0.001), "c0", "c1", on, cap=4)
        e0 = decide.endpoints(_prober(10_000 + i, 0.99, 0.01, 0.001), "c0", "c1", off, cap=4)
        with_paired += e.status == "differs" and e.comparison.paired
        pooled += e0.status == "differs"
    assert with_paired >= 18 and pooled <= 8, (with_paired, pooled)
    c = decide.confirm(_prober(10_100, 0.99, 0.01, 0.001), "c0", "c1", on, used=4, sign=1)
    c0 = decide.confirm(_prober(10_100, 0.99, 0.01, 0.001), "c0", "c1", off, used=4, sign=1)
    assert c[0].verdict == "slower" and c[0].paired and c[1] <= 8, (c[0].verdict, c[1])
    assert c[0].test_text() == f"one-sided group-sequential test, paired over {c[1]} layouts"
    assert c0[1] > 8 or c0[0].verdict == "no difference", c0[1]


def test_without_paired_the_endpoints_say_when_the_seeds_agree_and_only_then():
    """No change, layout noise 1%, run noise 0.05%: at a correlation of 0.99 the pooled endpoints stop "not shown" and say
    (once in the progress, and in their message) that --paired would need fewer layouts; at 0 they
    say nothing of it; with --paired there is nothing to suggest."""
    said: list[str] = []
    e = decide.endpoints(_prober(12_000, 0.99, 0.0, 0.0005), "c0", "c1", decide.Plan(), cap=6, say=said.append)
    assert e.status == "not-shown" and "--paired reads that" in e.note, e.note
    assert sum("--paired reads that" in x for x in said) == 1, said
    quiet: list[str] = []
    e0 = decide.endpoints(_prober(12_000, 0.0, 0.0, 0.0005), "c0", "c1", decide.Plan(), cap=6, say=quiet.append)
    assert e0.status == "not-shown" and "--paired" not in e0.note and not any("--paired" in x for x in quiet)
    on = decide.endpoints(_prober(12_000, 0.99, 0.0, 0.0005), "c0", "c1", decide.Plan(paired=True), cap=6)
    assert "--paired" not in on.note


def test_without_correlation_the_pooled_test_decides_as_before():
    """At a layout correlation of 0 the per-seed differences carry both layouts' noise: a 2σL step's
    endpoints are shown by the pooled test (printed "pooled over N vs N")."""
    e = decide.endpoints(_prober(11_000, 0.0, 0.02), "c0", "c1", decide.Plan(paired=True))
    assert e.status == "differs" and not e.comparison.paired
    assert "pooled over" in e.comparison.test_text()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-0.2, 0.2), st.floats(-0.2, 0.2)), min_size=2, max_size=12),
       st.integers(0, 5))
def test_pairing_estimates_what_the_pooled_test_does(values, extra):
    """Over the same seeds the paired estimate is the pooled one (the difference of the means), and
    its interval excludes 0 exactly when it crosses its boundary, whatever the values; seeds one
    side has alone do not enter it."""
    ya = [a for a, _ in values]
    yb = [b for _, b in values] + [0.5] * extra
    pool = decide.Pool()
    pool.add("a", {f"random:{s}": [math.exp(v)] for s, v in enumerate(ya, 1)})
    pool.add("b", {f"random:{s}": [math.exp(v)] for s, v in enumerate(yb, 1)})
    t = decide.paired(pool, "a", "b")
    assert t.na == len(values) and t.df == len(values) - 1
    assert t.est == pytest.approx(float(np.mean(np.log(np.exp(yb[:len(ya)]))) - np.mean(np.log(np.exp(ya)))),
                                  abs=1e-12)
    if t.df >= 2 and t.se > 0:
        lo, hi = t.interval((3, 4), 0.05)
        assert (lo > 0 or hi < 0) == t.crosses((3, 4), 0.05)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_the_seed_correlation_is_read_from_the_stored_values(rho):
    """decide.seed_corr over 400 seeds of a pair (a layout-only commit between, correlation ``rho``,
    run noise 0.3% of a 1% layout noise) is rho within 0.1; it is 0 for a negative estimate, at most
    SEED_CORR_MAX when the seeds agree exactly, and NaN with one seed in common."""
    p = _prober(7, rho)
    pool = decide.Pool()
    for c in ("c0", "c1"):
        pool.add(c, p.groups(c, 400, 1))
    assert decide.seed_corr(pool, "c0", "c1") == pytest.approx(rho, abs=0.1)
    same = decide.Pool()
    for c, shift in (("a", 1.0), ("b", 1.05)):
        same.add(c, {f"random:{s}": [shift * (1 + s / 100)] for s in (1, 2, 3, 4)})
    assert decide.seed_corr(same, "a", "b") == decide.SEED_CORR_MAX
    apart = decide.Pool()
    apart.add("a", {f"random:{s}": [1 + s / 100] for s in (1, 2, 3, 4)})
    apart.add("b", {f"random:{s}": [1 + (5 - s) / 100] for s in (1, 2, 3, 4)})  # opposite orders: rho -1
    assert decide.seed_corr(apart, "a", "b") == 0.0
    one = decide.Pool()
    one.add("a", {"random:1": [1.0], "random:2": [1.1]})
    one.add("b", {"random:1": [1.0]})
    assert math.isnan(decide.seed_corr(one, "a", "b"))


def test_a_paired_plan_forecasts_fewer_runs_where_the_seeds_agree():
    """forecast.expected_cost of a 1.5 sigma_L step (16 commits): a --paired plan's runs fall as the
    seed correlation rises (0, 0.8, 0.99); a pooled plan's do not move with it (it cannot read it)."""
    from layoutbench import forecast
    paired = decide.Plan(paired=True)
    runs = [forecast.expected_cost(16, math.exp(0.015), 0.01, paired, rho)["runs"] for rho in (0.0, 0.8, 0.99)]
    assert runs[0] > runs[1] > runs[2], runs
    pooled = [forecast.expected_cost(16, math.exp(0.015), 0.01, decide.Plan(), rho) for rho in (0.0, 0.99)]
    assert pooled[0]["runs"] == pooled[1]["runs"] and pooled[1]["seed_corr"] == 0.0


def test_the_pairing_hint_names_both_commits_abbreviated_and_both_standard_errors():
    """decide.pairing_hint over two 40-hex commits whose 6 seeds agree up to a constant: the commits at 12
    characters, BAD first, the seed-paired se (0 up to rounding) and the pooled one."""
    good, bad = "a" * 40, "b" * 40
    pool = decide.Pool()
    pool.add(good, {f"random:{i}": [1.0 + i / 100] for i in range(1, 7)})
    pool.add(bad, {f"random:{i}": [1.02 * (1.0 + i / 100)] for i in range(1, 7)})
    t = decide.ztest(pool, good, bad)
    hint = decide.pairing_hint(pool, good, bad, t)
    head, _, rest = hint.partition(" (seed-paired se ")
    assert head == f"the same seeds agree across {'b' * 12} and {'a' * 12}", hint
    assert float(rest.split("%")[0]) < 1e-9 and rest.split("%", 1)[1] == (
        f" against the pooled {100 * t.se:.3g}%): --paired reads that and would need fewer layouts"), hint


def test_a_confirmations_paired_test_pairs_the_fresh_layouts_as_measured_not_as_clipped():
    """The fresh layouts of a confirmation are clipped to within CLIP_LAYOUT robust layout sd of each
    side's median for the pooled test; the seed-paired test must see them as measured.  Where the
    pool's robust scale is far below the fresh layouts' spread (a pool of commits whose first few
    layouts lie close, as seeds 1-3 of the Debian Linux history do), clipping both sides
    would leave every paired difference the same: a zero-width interval and a p at its floor.  A 10%
    step at 1% layout noise, the seeds' layouts correlated 0.99: the paired interval has the width of
    the measured differences' spread."""
    plan = decide.Plan(paired=True)
    tr = decide.Tracked(_prober(10_200, 0.99, 0.1, 0.001))
    tight = np.random.default_rng(7)
    for i in range(12):  # 48 values whose median deviation is about 0.02%: a clip of about 0.07%
        tr.pool.add(f"x{i}", {f"random:{s}": [math.exp(v)] for s, v in enumerate(tight.normal(0, 3e-4, 4), 1)})
    got = decide.confirm(tr, "c0", "c1", plan, used=4, sign=1)
    c, k = got[0], got[1]
    assert c is not None and c.paired and c.verdict == "slower", (c and c.verdict, k)
    assert c.ci_low < c.ratio * (1 - 1e-4), (c.ci_low, c.ratio)  # an interval, not a point
