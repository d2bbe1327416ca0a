"""Calibration: the error rates layoutbench prints are the ones it has.

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


def test_family_and_probe_levels_sum_to_alpha():
    """Every probe counts (the planned ones and any number beyond), every confirmation and
    residual test too: their levels sum to at most alpha."""
    assert sum(decide.probe_level(0.05, j, 4) for j in range(1, 5000)) <= 0.05 + 1e-9
    assert sum(decide.family_level(0.05, i) for i in range(1, 5000)) <= 0.05 + 1e-9
    # the confirmations: the first takes CONFIRM_FIRST of alpha, the later ones share the rest
    assert decide.confirm_level(0.05, 1) == pytest.approx(decide.plan.CONFIRM_FIRST * 0.05)
    assert sum(decide.confirm_level(0.05, i) for i in range(1, 5000)) <= 0.05 + 1e-9
    assert decide.confirm_level(0.05, 3) < decide.confirm_level(0.05, 2) < decide.confirm_level(0.05, 1)
    assert decide.confirm_level(0.05, 2) == pytest.approx(decide.family_level((1 - decide.plan.CONFIRM_FIRST) * 0.05, 1))
    assert decide.probe_level(0.05, 5, 4) < decide.probe_level(0.05, 4, 4)  # beyond the plan: less


def test_group_sequential_boundary_keeps_its_level():
    """The pooled z test over the endpoints' looks rejects a true null <= alpha of the time
    (simulated with known variance, independent of the boundary's own simulation)."""
    ns = tuple(decide.schedule(4, 40))
    c = decide.gs_boundary(ns, 0.05)
    assert 1.96 < c < 3.0
    rng = np.random.default_rng(11)
    x = rng.standard_normal((20000, ns[-1]))
    z = np.stack([x[:, :n].sum(axis=1) / math.sqrt(n) for n in ns], axis=1)
    assert np.mean(np.abs(z).max(axis=1) >= c) <= 0.055


def test_endpoints_differ_on_null_pairs_at_most_alpha():
    """The endpoints' group-sequential pooled test alone: on 400 pairs without a change (layouts
    redrawn between them) "differs" about 5% (the confirmation is not part of this bound)."""
    differs = 0
    for i in range(400):
        p = sim.SimProber(sim.Scenario("n", "null", commits=1, sigma_r=0.003), np.random.default_rng(5_000 + i))
        p.epoch[1] = 1  # GOOD and BAD in different layout epochs: nothing cancels
        differs += decide.endpoints(p, "c0", "c1", decide.Plan(min_effect=0.0)).status == "differs"
    assert differs / 400 <= 0.075, differs / 400  # 5% + 2.3 sd of 400 draws (2,000 other pairs: 5.15%)


def test_a_probe_that_differs_from_good_is_never_called_good():
    """GOOD at 0, the probe at 6 sigma_L, BAD at 30 sigma_L: nearer GOOD (the SPRT's side) but
    shown to differ from it: bad or between, never good."""
    class Three:
        higher_is_better = False

        def groups(self, commit, k, r):
            lvl = {"g": 0.0, "p": 0.06, "b": 0.30}[commit]
            rng = np.random.default_rng({"g": 1, "p": 2, "b": 3}[commit])
            x = rng.normal(0.0, 0.01, 200)
            return {f"random:{s}": [math.exp(lvl + x[s])] for s in range(k)}
    j = decide.judge_probe(Three(), "p", "g", "b", decide.Plan(), level=0.01)
    assert j.verdict in ("bad", "between"), j


@pytest.mark.parametrize("paired", [True, False])
def test_whole_bisection_false_blame_on_null_histories(paired):
    """>= 400 simulated histories without a code change (layout-only commits redraw the layout
    effects; half of them also shift the mean by 0.1%), default plan and --paired: blame <= 5%.
    The pooled test alone (the default) says "not shown", never "within layout noise": at 16 layouts a side of 1%
    layout noise its equivalence interval cannot fit inside +-0.5%.  The paired test's can (6 of 400
    histories, 5 of them without a layout-only commit between the ends and without run noise: the
    same values on every seed), and it is true there: no history changes by a step."""
    blamed = noise = 0
    n = 400
    for i in range(n):
        sc = sim.Scenario("null", "null", commits=8, shift=0.001 if i % 2 else 0.0)
        p = sim.SimProber(sc, np.random.default_rng(10_000 + i))
        out = decide.bisect_range(p, p.names, decide.Plan(test_layouts=16, paired=paired), decide.MemoryJournal())
        blamed += out.culprit is not None
        noise += out.status == "noise"
    assert blamed / n <= 0.05, blamed / n
    assert noise == 0 or paired


def test_a_spent_budget_says_not_shown_and_what_would_rule_it_out():
    """A real 0.5% step (the minimum effect) the endpoints cannot show at 8 layouts: status
    not-shown with "no change of at least 0.5% shown" and the layouts that would rule a change out,
    never "within layout noise"; --prove-null on a truly null pair says noise only with an
    interval inside +-min_effect."""
    sc = sim.Scenario("s", "step", 0.5, commits=8)
    seen = 0
    for i in range(20):
        p = sim.SimProber(sc, np.random.default_rng(80_000 + i))
        # max_layouts 8: no further look at a noisy benchmark either (decide.noise_cap)
        e = decide.endpoints(p, p.names[0], p.names[-1], decide.Plan(test_layouts=8, max_layouts=8))
        assert e.status in ("differs", "not-shown")
        if e.status == "not-shown":
            seen += 1
            assert "no change of at least 0.5% shown after 8 layouts" in e.note
            assert e.more_layouts is None or e.more_layouts > 0
    assert seen >= 5
    proved = 0
    for i in range(5):
        p = sim.SimProber(sim.Scenario("n", "null", commits=2), np.random.default_rng(i))
        e = decide.endpoints(p, p.names[0], p.names[-1], decide.Plan(prove_null=True, min_effect=0.02))
        if e.status == "noise":
            proved += 1
            assert "ruled out" in e.note
            assert 1 / 1.02 < e.comparison.ci_low and e.comparison.ci_high < 1.02
    assert proved >= 4


def test_bisection_finds_a_2_sigma_step_and_both_of_two_steps():
    """A single step of 2 sigma_L: the right culprit in >= 90% of 60 histories and never a
    wrong one; two steps of 3 and 6 sigma_L: both named (every change point is the default)
    in >= 80% of 30, and no commit without a step named."""
    rows = [sim.one(sim.Scenario("s", "step", 2.0), decide.Plan(), seed=20_000 + i) for i in range(60)]
    assert sum(r["right"] for r in rows) >= 54, sum(r["right"] for r in rows)
    assert not any(r["wrong"] for r in rows)
    two = [sim.one(sim.Scenario("t", "two", sizes=(3.0, 6.0)), decide.Plan(), seed=30_000 + i) for i in range(30)]
    assert sum(t["both"] for t in two) >= 24, sum(t["both"] for t in two)
    assert not any(t["wrong"] for t in two)


def test_first_only_stops_after_one_step():
    p = sim.SimProber(sim.Scenario("t", "two", sizes=(6.0, 6.0)), np.random.default_rng(40_001))
    out = decide.bisect_range(p, p.names, decide.Plan(first_only=True), decide.MemoryJournal())
    assert len([s for s in out.steps if s.status == "found"]) == 1
    p = sim.SimProber(sim.Scenario("t", "two", sizes=(6.0, 6.0)), np.random.default_rng(40_002))
    out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
    assert [s.culprit for s in out.steps if s.status == "found"] == [p.names[i] for i in p.steps]
    assert out.culprit == p.names[p.steps[0]]  # the first bad commit is the earliest


def test_a_budget_stops_with_candidates_and_their_probabilities():
    """--budget: the runs never exceed it; stopped in the search, the verdict is "budget" with
    the candidates left and probabilities summing to 1, the true step among them mostly."""
    hit = 0
    for i in range(10):
        p = sim.SimProber(sim.Scenario("s", "step", 2.0), np.random.default_rng(90_000 + i))
        out = decide.bisect_range(p, p.names, decide.Plan(budget=40), decide.MemoryJournal())
        assert p.runs <= 40 and out.runs <= 40
        if out.status == "budget" and out.candidates:
            assert abs(sum(q for _, q in out.candidates) - 1) < 1e-9
            assert "not decided at this budget" in out.note and "more runs" in out.note
            hit += p.names[p.steps[0]] in [c for c, _ in out.candidates]
    assert hit >= 5


def test_a_resumed_bisection_repeats_no_probe_and_reaches_the_same_verdict():
    """The engine continues from the marks of an interrupted run (as layoutbench.bisect's log keeps them)."""
    sc = sim.Scenario("s", "step", 3.0, commits=16)
    full = decide.MemoryJournal()
    p = sim.SimProber(sc, np.random.default_rng(7))
    first = decide.bisect_range(p, p.names, decide.Plan(), full)
    assert len(full.log) >= 3
    part = decide.MemoryJournal()
    part.log = full.log[:2]  # killed after two probes
    p2 = sim.SimProber(sc, np.random.default_rng(7))  # the same history; the store gives the same values
    again = decide.bisect_range(p2, p2.names, decide.Plan(), part)
    assert again.culprit == first.culprit and again.status == first.status
    probed = [e["commit"] for e in part.log]
    assert len(probed) == len(set(probed)) and probed[:2] == [e["commit"] for e in full.log[:2]]


def test_a_step_of_the_minimum_effect_is_named_no_less_often_than_by_a_single_layout():
    """The hardest step: 0.5 sigma_L = the 0.5% minimum effect.  On the same 60 histories
    layoutbench never names a wrong commit (the baseline often does)."""
    rows = [sim.one(sim.Scenario("s", "step", 0.5, commits=8), decide.Plan(), seed=50_000 + i) for i in range(60)]
    assert not any(r["wrong"] for r in rows)
    assert sum(r["sl_wrong"] for r in rows) > 12


def test_both_of_two_unequal_steps_more_often_than_the_ends_alone_allowed():
    """1+3 and 3+1 sigma_L pairs, 40 histories each (fixed seeds): the residual test beside the
    found large step looks further while the commits measured in its sub-range (probes
    included) make a step of twice the minimum effect at least SIDE_A times as likely as none
    (decide.side_llr), asked after every layout added a side; the small step (1 sigma_L, twice the
    minimum effect) must then be shown beyond the minimum effect on fresh layouts, which takes up to
    ~170 layouts a side at a second confirmation's level: its looks go to CONFIRM_FAR x
    CONFIRM_LATER (256) and stop once twice the minimum effect would more likely be missed than
    shown.  Both named in 74 of 80, never a commit without a step.  A confirmation held to
    max_layouts (128) that stops at its cap once its estimate could not clear the band names both in
    42 of 80 (CONFIRM_FAR 3: 67).  The price: 60 single 5 sigma_L steps take 59.3 runs a bisection."""
    both = wrong = 0
    for sizes in ((1.0, 3.0), (3.0, 1.0)):
        for i in range(40):
            t = sim.one(sim.Scenario("t", "two", sizes=sizes, sigma_r=0.003), decide.Plan(), seed=31_000 + i)
            both += t["both"]
            wrong += t["wrong"]
    assert both >= 70, both
    assert wrong == 0
    runs = [sim.one(sim.Scenario("s", "step", 5.0, sigma_r=0.003), decide.Plan(), seed=32_000 + i)["runs"]
            for i in range(60)]
    assert float(np.mean(runs)) <= 66.0, float(np.mean(runs))


def test_thorough_names_both_of_two_unequal_steps_in_nine_of_ten_at_a_stated_price():
    """--thorough (Plan.thorough): the residual tests beside a found step look first at
    THOROUGH_FIRST layouts a side and go on while a step of twice the minimum effect is at least
    THOROUGH_A times as likely as none (asked after every layout added).  The same 80 histories
    as above: both named in 76 of 80 (default 74), never a commit without a step; and it is a
    price: 60 single 5 sigma_L steps take 78.4 runs a bisection instead of 59.3 (98.0 when the stop
    rule is asked at the x1.5 looks only)."""
    both = wrong = 0
    for sizes in ((1.0, 3.0), (3.0, 1.0)):
        for i in range(40):
            t = sim.one(sim.Scenario("t", "two", sizes=sizes, sigma_r=0.003), decide.Plan(thorough=True),
                        seed=31_000 + i)
            both += t["both"]
            wrong += t["wrong"]
    assert both >= 72, both
    assert wrong == 0
    runs = [sim.one(sim.Scenario("s", "step", 5.0, sigma_r=0.003), decide.Plan(thorough=True), seed=32_000 + i)["runs"]
            for i in range(60)]
    assert 70.0 <= float(np.mean(runs)) <= 88.0, float(np.mean(runs))


def _ends_at(shift: float, sigma_l: float, seed: int, plan) -> decide.Ends:
    p = sim.SimProber(sim.Scenario("e", "null", commits=1, sigma_l=sigma_l, sigma_r=0.001), np.random.default_rng(seed))
    p.code[1], p.epoch[1] = math.log1p(shift), 1  # BAD = GOOD shifted; its layouts drawn again
    return decide.endpoints(decide.Tracked(p), "c0", "c1", plan)


@pytest.mark.parametrize("paired,shown_at_least,layouts_at_most", [(False, 293, 23.5), (True, 289, 26.0)])
def test_the_equivalence_holds_its_level_and_is_shown_sooner_at_low_layout_noise(paired, shown_at_least,
                                                                                 layouts_at_most):
    """The endpoints' "within layout noise" (status noise) is two one-sided tests at the level,
    group-sequential over the looks (the one-sided boundary of the design, as a t quantile):
    300 fixed-seed pairs a row, layout noise 0.45% (the real builds' of bench/bisect_accuracy.py),
    minimum effect 0.5%.  The pooled test alone (the default): a true shift of exactly 0.5% is
    called noise in 6 of 300 (2%; the level is 5%); no shift is called noise in 296 of 300 at 22.2
    layouts a side on average (the always-valid mixture interval in its place: 270 of 300 at 31.2;
    the two-sided boundary: 291 at 25.9).  With --paired, the pooled and the paired test at 2.5% each
    (BAD's layouts drawn again: the paired test gains nothing here): 3 of 300 at 0.5%, and no shift
    called noise in 292 of 300 at 25.0 layouts a side."""
    plan = decide.Plan(paired=paired)
    at_m = [_ends_at(0.005, 0.0045, 70_000 + i, plan) for i in range(300)]
    assert sum(e.status == "noise" for e in at_m) <= 15  # 5% of 300
    null = [_ends_at(0.0, 0.0045, 70_000 + i, plan) for i in range(300)]
    shown = sum(e.status == "noise" for e in null)
    assert shown >= shown_at_least, shown
    assert float(np.mean([e.layouts for e in null])) <= layouts_at_most


def test_the_residual_tests_stop_soon_beside_a_single_large_step():
    """60 single 5 sigma_L steps (fixed seeds): both sub-ranges beside the step are null, and
    their tests stop as the layouts make a step of twice the minimum effect unlikely (Wald's
    lower boundary, SIDE_A 0.05, asked after every layout): 59.3 runs a bisection (SIDE_A 0.4
    asked at the looks only: 42.7; mutations: the likelihood ratio's
    drift term with its sign flipped 233.8, the stop rule's comparison flipped 151.2)."""
    runs = [sim.one(sim.Scenario("s", "step", 5.0, sigma_r=0.003), decide.Plan(), seed=32_000 + i)["runs"]
            for i in range(60)]
    assert float(np.mean(runs)) <= 66.0, float(np.mean(runs))


def test_the_plan_foretells_the_cost_within_30_percent():
    """forecast.expected_cost (what `bisect run --plan` prints: the median of bisections simulated on
    its own synthetic histories at the measured noise and change) against the median runs of 20
    bisections of bench/simulate.py's histories (16 commits, sigma_R 0.3%) of 2 and 5 sigma_L steps,
    by default, with --thorough and with --first-only."""
    from layoutbench import forecast
    for plan in (decide.Plan(), decide.Plan(thorough=True), decide.Plan(first_only=True)):
        for size in (2.0, 5.0):
            runs = [sim.one(sim.Scenario("s", "step", size, sigma_r=0.003), plan, 95_000 + i)["runs"]
                    for i in range(20)]
            cost = forecast.expected_cost(17, math.exp(size * 0.01), math.sqrt(0.01 ** 2 + 0.003 ** 2), plan)
            actual = float(np.median(runs))
            assert 0.7 * actual <= cost["runs"] <= 1.3 * actual, (plan, size, cost, actual)
    assert forecast.expected_cost(17, math.exp(0.05), 0.0104, decide.Plan(first_only=True))["side_layouts"] == 0


def test_an_outlier_run_does_not_move_a_layout():
    """A layout's value is a Huber-type mean of its runs' logs: one run 10x slower moves it by at
    most CLIP run-noise sd / R (the mean of logs: by log(10)/3 = 0.77); runs that agree give
    their value; one run is its log."""
    g = {"a": [1.0, 1.01, 10.0], "b": [2.0, 2.02, 1.98], "c": [3.0, 3.03, 3.0]}
    s = decide.run_scale([np.log(np.asarray(v)) for v in g.values()])
    assert 0.005 < s < 0.03
    y = decide.layout_values(g)
    assert abs(y[0] - math.log(1.01)) <= decide.CLIP * s / 3 + 1e-12 and abs(y[0] - math.log(1.01)) < 0.01
    assert decide.layout_values({"a": [2.0, 2.0, 2.0]})[0] == pytest.approx(math.log(2.0), abs=1e-15)
    assert decide.layout_values({"a": [5.0], "b": [7.0]}) == pytest.approx([math.log(5.0), math.log(7.0)])


def test_the_layout_value_is_nearly_as_efficient_as_the_mean_and_robust():
    """3 runs a layout, run noise 2%: at normal noise the layout values' variance is within 5% of
    the mean's (the median of 3: +34%); with 1% of runs 10x the run noise slow it is at most 0.85
    of the median's and 0.7 of the mean's (which the outliers spread)."""
    rng = np.random.default_rng(21)
    e = rng.normal(0.0, 0.02, (3000, 3))
    out = 10 * 0.02 * (rng.random((3000, 3)) < 0.01)
    for x, rel_mean, rel_med in ((e, 1.05, 0.85), (e + out, 0.7, 0.85)):
        v = decide.layout_values({i: np.exp(row) for i, row in enumerate(x)})
        assert v.var() <= rel_mean * x.mean(axis=1).var(), (v.var(), x.mean(axis=1).var())
        assert v.var() <= rel_med * np.median(x, axis=1).var(), (v.var(), np.median(x, axis=1).var())
    assert decide.run_scale(list(e[:300])) == pytest.approx(0.02, rel=0.1)


def test_confirm_on_an_unmeasurable_commit_confirms_nothing():
    """A Skip during the confirmation gives no comparison (not the last look's, undowngraded)."""
    sc = sim.Scenario("s", "step", 5.0, commits=4)
    p = sim.SimProber(sc, np.random.default_rng(1))

    class Breaks(sim.SimProber):
        def groups(self, commit, k, r):
            if k > 6:
                raise decide.Skip("does not build")
            return super().groups(commit, k, r)

        def groups_after(self, commit, first, k, r):  # the confirmation's fresh seeds
            if first + k > 6:
                raise decide.Skip("does not build")
            return super().groups_after(commit, first, k, r)
    b = Breaks(sc, np.random.default_rng(1))
    c, k, _ = decide.confirm(b, "c0", p.names[p.steps[0]], decide.Plan(), used=4)
    assert c is None


def test_a_noisy_benchmark_looks_further_and_names_a_1_sigma_step():
    """Run noise 2% (1% of runs 10x that), 3 runs a layout, a 1 sigma_L step (16 commits): the
    caps scale with the pooled noise (decide.noise_cap); the step is twice the minimum effect and
    its confirmation must show it beyond the minimum effect (the band test) at a layout value's
    sd of ~1.5%, looking on to CONFIRM_FAR x its noise cap: it is named in 32 of these 40 histories
    at 1505.5 runs a bisection (16 at 1356.5 runs with the confirmation held to 128 layouts and
    stopped at its cap once its estimate could not clear the band), never a wrong commit; at a
    quiet benchmark the caps stay at 40 (and 80 for a probe)."""
    sc = sim.Scenario("noisy", "step", 1.0, sigma_r=0.02, runs=3, outliers=0.01)
    r = sim.rates(sc, decide.Plan(runs=3, max_runs=3), 40, seed0=0)
    assert r["right"] >= 0.7 and r["wrong"] == 0, r
    plan = decide.Plan()
    top = decide.plan.top_looks(plan)
    assert top[:7] == (4, 6, 9, 14, 21, 32, 40) and top[-1] == plan.noise_top == 120
    assert decide.noise_cap(plan, 0.0104 ** 2, top, 0.05) == 40  # sigma_L 1%, sigma_R 0.3%
    assert 60 <= decide.noise_cap(plan, 0.016 ** 2, top, 0.05) <= 100
    assert decide.noise_cap(plan, 0.05 ** 2, top, 0.05) == 120 and decide.noise_cap(plan, math.nan, top, 0.05) == 40
    assert decide.noise_cap(decide.Plan(max_layouts=40), 0.05 ** 2, (4, 40), 0.05) == 40


def test_a_noisy_null_pair_differs_at_most_alpha_though_the_test_looks_further():
    """The endpoints at run noise 2% (outliers, 3 runs): the looks go on beyond 40 layouts
    (noise_cap; a 0.2% minimum effect: to 120) under the boundary of the whole design, so the
    level holds: "differs" on at most ~5% of 300 null pairs."""
    differs = far = 0
    sc = sim.Scenario("n", "null", commits=1, sigma_r=0.02, runs=3, outliers=0.01)
    for i in range(300):
        p = sim.SimProber(sc, np.random.default_rng(7_000 + i))
        p.epoch[1] = 1
        e = decide.endpoints(p, "c0", "c1", decide.Plan(runs=3, min_effect=0.002))
        differs += e.status == "differs"
        far += e.layouts > 40
    assert differs / 300 <= 0.075 and far >= 250, (differs / 300, far)


def test_a_noisy_null_pair_stops_once_the_minimum_effect_is_unlikely():
    """Beyond the quiet 40-layout cap the endpoints stop when the estimate is below min_effect
    by z(0.9) standard errors: of 40 null pairs at the noisy row's noise (noise cap ~90 layouts)
    about half say "not shown" at 40-60 layouts (without that stop: 3 of 40), each with an
    estimate well inside the minimum effect."""
    sc = sim.Scenario("n", "null", commits=1, sigma_r=0.02, runs=3, outliers=0.01)
    early = 0
    for i in range(40):
        p = sim.SimProber(sc, np.random.default_rng(9_000 + i))
        p.epoch[1] = 1
        e = decide.endpoints(p, "c0", "c1", decide.Plan(runs=3))
        if e.status == "not-shown" and 40 <= e.layouts < 90:
            early += 1
            assert abs(math.log(e.comparison.ratio)) < math.log1p(0.005), e.comparison.ratio
    assert early >= 10, early


def test_the_oracle_that_looks_for_every_change_pays_for_its_side_tests_on_a_single_step():
    """python3 -m bench.simulate --oracle-every: the floor of this design (knows sigma, fixed-size z tests)
    when it also tests the sub-ranges beside a found step for a second step of twice the minimum
    effect (90% power at 5%).  On the same 30 single 5 sigma_L histories it names the step as
    often as the plain oracle, give or take a side's false alarm at 5%, and costs far more (each side's ends get ~22 layouts: 2 (z.975 +
    z.9)^2 at a step of 1 sigma_L), but reuses what it measured: at most the four ends' layouts
    more; on a null range it finds nothing and costs the same.  (Mutations: dropping the side
    tests, or measuring the sides on fresh seeds, break the two runs bounds.)"""
    za, zb = 1.959964, 1.281552
    ns = math.ceil(2 * (math.sqrt(0.01 ** 2 + 0.003 ** 2) * (za + zb) / (decide.SIDE_STEP * math.log1p(0.005))) ** 2)
    extra, right = [], [0, 0]
    for i in range(30):
        sc = sim.Scenario("s", "step", 5.0, sigma_r=0.003)
        plain, every = sim.oracle(sc, 33_000 + i), sim.oracle(sc, 33_000 + i, every=True)
        right[0] += plain["right"]
        right[1] += every["right"]
        extra.append(every["runs"] - plain["runs"])
    assert right[0] >= 28 and right[1] >= right[0] - 3, right
    assert min(extra) >= 2 * ns, (min(extra), ns)  # both sides' far ends, at least
    assert float(np.mean(extra)) <= 4 * ns + 20, (float(np.mean(extra)), ns)  # a false side search at most
    for i in range(10):
        sc = sim.Scenario("n", "null", sigma_r=0.003)
        assert sim.oracle(sc, 34_000 + i, every=True)["runs"] == sim.oracle(sc, 34_000 + i)["runs"]


def test_a_side_test_stops_once_its_cap_could_no_longer_show_the_step_it_looks_for():
    """A layout-noisy target (sigma_L 2%, four times the minimum effect) with a 4 sigma_L step in 12
    commits, 12 fixed seeds: beside the step, a side test's cap (64 layouts a side) would show a step
    of twice the minimum effect with probability below FUTILITY, so it stops at its first look and
    says the step its cap could show (80% power: above the minimum effect); the bisection costs
    at most twice --first-only's runs (without the futility rule: 6.8x on these histories, side tests
    to 32-64 layouts a side)."""
    sc = sim.Scenario("noisy", "step", 4.0, sigma_l=0.02, commits=12)
    runs, first = [], []
    for i in range(12):
        p = sim.SimProber(sc, np.random.default_rng(41_000 + i))
        out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
        assert out.culprit == p.names[p.steps[0]]
        quiet = [sd for sd in out.sides if sd["status"] != "differs"]
        assert quiet and all(sd["futile"] for sd in quiet), out.sides
        assert all(sd["reach"] > decide.DEFAULT_MIN_EFFECT for sd in quiet)
        runs.append(p.runs)
        first.append(sim.one(sc, decide.Plan(first_only=True), 41_000 + i)["runs"])
    assert float(np.mean(runs)) <= 2.0 * float(np.mean(first)), (runs, first)


def test_the_futility_rule_lets_a_side_test_find_a_second_step_it_can_see(monkeypatch):
    """Two steps of 1 and 3 sigma_L (sigma_L 1%: the smaller one twice the minimum effect), 10 fixed
    seeds: the side test beside the larger step can see the smaller one within its cap, so its
    conditional power stays high and the futility stop costs no second step: both steps are named
    in the same histories as with the stop off (FUTILITY 0), 10 of 10 here (the smaller step must
    also be confirmed beyond the minimum effect on fresh layouts, which the confirmation's own
    futility stop at twice the minimum effect lets it do).  With the stop off the same histories
    cost more runs: the setting reached the code that reads it."""
    sc = sim.Scenario("two", "two", sizes=(1.0, 3.0), sigma_r=0.003)

    def named() -> tuple[list[bool], int]:
        out = [sim.one(sc, decide.Plan(), 43_000 + i) for i in range(10)]
        return [o["both"] for o in out], sum(o["runs"] for o in out)

    with_rule, runs_with = named()
    monkeypatch.setattr(decide.sequential, "FUTILITY", 0.0)  # read by the side tests and the confirmation
    without, runs_without = named()
    assert with_rule == without and sum(with_rule) >= 9, (with_rule, without)
    assert runs_without > runs_with, (runs_with, runs_without)  # the rule was off: it stops no test early


def test_conditional_power_at_the_cap_of_a_side_test():
    """The chance a test carried on to its cap ends beyond its boundary, given its estimate: high for
    a step its cap sees well, low for one it cannot, 0 at the cap, higher when the estimate points
    the step's way than against it."""
    pool = decide.Pool()
    rng = np.random.default_rng(5)
    pool.add("a", {i: [math.exp(x)] for i, x in enumerate(rng.normal(0.0, 0.01, 8))})
    pool.add("b", {i: [math.exp(x)] for i, x in enumerate(rng.normal(0.0, 0.01, 8))})
    ns = tuple(decide.schedule(4, 64))
    t = decide.ztest(pool, "a", "b")
    assert decide.conditional_power(t, pool, ns, 0.03, 0.01, 1.0) > 0.9
    assert decide.conditional_power(t, pool, ns, 0.03, 0.001, 1.0) < 0.1
    assert decide.conditional_power(t, pool, (4, 8), 0.03, 0.01, 1.0) == 0.0
    up = decide.ZTest(0.005, t.se, t.df, t.na, t.nb)
    down = decide.ZTest(-0.005, t.se, t.df, t.na, t.nb)
    assert decide.conditional_power(up, pool, ns, 0.03, 0.005, 1.0) > \
        decide.conditional_power(down, pool, ns, 0.03, 0.005, 1.0)


class _FreshOutlier(sim.SimProber):
    """A simulated history in which the first fresh layout a confirmation measures of ``target``
    (the first seed after those it was given) has one run 20% slow: with one run per layout that
    run is the layout's value, which no rule inside a layout can clip."""

    target = ""

    def groups_after(self, commit, first, k, r):
        out = super().groups_after(commit, first, k, r)
        if commit == self.target and first > 0:
            key = f"random:{first + 1}"
            out[key] = [out[key][0] * 1.2] + out[key][1:]
        return out


#: 1+3σL histories (16 commits, one run per layout) whose first search ends at a commit without a
#: step (between two commits at the same level, after the 1σL step): (seed, that commit)
_WRONG_ENDS = ((31003, "c5"), (31011, "c11"), (31021, "c9"), (31037, "c10"), (31039, "c8"), (31041, "c7"))


def _named_with_outlier(seed: int, target: str) -> tuple[list[str], set[str]]:
    p = _FreshOutlier(sim.Scenario("t", "two", sizes=(1.0, 3.0), sigma_r=0.003), np.random.default_rng(seed))
    p.target = target
    out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
    return [s.culprit for s in out.steps if s.status == "found"], {p.names[i] for i in p.steps}


def test_one_outlier_run_on_a_fresh_layout_names_no_wrong_commit(monkeypatch):
    """Six fixed histories whose first search ends at a commit without a step; that commit's first
    fresh layout gets one run 20% slow.  The confirmation pulls each fresh layout value to within
    CLIP_LAYOUT robust layout sd of its side's median, and the values enter the pooled variance so:
    the commit is never named and both true steps are.  Without the clipping (CLIP_LAYOUT inf) the
    outlier confirms the wrong commit in at least five of the six.  (The six: of the seeds 31000-31041
    whose first search ends at a commit without a step, 13, the ones where the unclipped outlier
    confirms it, 6; in the other 7 the clipped engine names the truth as well.)"""
    for seed, target in _WRONG_ENDS:
        named, truth = _named_with_outlier(seed, target)
        assert target not in named and set(named) == truth, (seed, named, truth)
    monkeypatch.setattr(decide.sequential, "CLIP_LAYOUT", math.inf)  # read by the confirmation
    wrong = [target in _named_with_outlier(seed, target)[0] for seed, target in _WRONG_ENDS]
    assert sum(wrong) >= 5, wrong


def test_a_search_that_ends_between_two_equal_commits_names_neither():
    """Two equal steps of 2σL (16 commits): a probe at the level between them is midway between GOOD
    and BAD, so the SPRT of "like GOOD" against "like BAD" may put it on GOOD's side at 3-4 layouts, and
    the search then ends between two commits at the same level (15 of the first 60 seeds).  That is
    bounded, not prevented: the confirmation on fresh layouts names such a pair only when it shows a
    step beyond the minimum effect, with probability <= its level; the side tests beside it then find
    both true steps.  Five such fixed seeds: the pair is never named, both steps are."""
    for seed in (8, 10, 19, 20, 53):
        p = sim.SimProber(sim.Scenario("t", "two", sizes=(2.0, 2.0), sigma_r=0.003), np.random.default_rng(seed))
        journal = decide.MemoryJournal()
        out = decide.bisect_range(p, p.names, decide.Plan(), journal)
        truth = {p.names[i] for i in p.steps}
        level = {c: p.code[int(c[1:])] for c in p.names}
        first = [e for e in journal.log if e.get("segment") is None]
        assert any(e["verb"] == "good" and e["layouts"] <= 4 and level[e["commit"]] > 0 for e in first), first
        wrong = [s for s in out.steps if s.culprit not in truth]
        assert len(wrong) == 1 and wrong[0].status == "uncertain", (seed, wrong)
        assert level[wrong[0].last_good] == level[wrong[0].culprit]
        assert {s.culprit for s in out.steps if s.status == "found"} == truth, (seed, out.steps)
