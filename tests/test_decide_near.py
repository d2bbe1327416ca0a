"""Steps near the minimum effect: a confirmation's share of the runs is bounded, a candidate near the
minimum effect is said at once with the confirmation's forecast, and a change shown but not beyond the
minimum effect is its own state; the forecast once the endpoints' test has decided.
Synthetic probers with fixed values or fixed seeds (fast)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _probers import Offsets
from conftest import script

from layoutbench import decide, forecast
from layoutbench.bisect.settings import Settings
from layoutbench.validate import confirm_share_fraction
from layoutbench.decide.tracked import measure_at
from layoutbench.errors import LayoutbenchError

sim = script("bench/simulate.py")


def _step(off, plan, spent=100, higher_is_better=False):
    """GOOD and BAD adjacent, measured at 4 layouts (the search's estimate), ``spent`` runs spent before
    the confirmation: the step, the lines said, the prober."""
    p = Offsets(off, higher_is_better)
    tr = decide.Tracked(p)
    for c in ("g", "b"):
        measure_at(tr, c, 4, 1)
    tr.ledger.spent = spent
    said: list[str] = []
    st, _, _ = decide.rounds.k_step([tr], ["g", "b"], plan, decide.MemoryJournal(), None, said.append)
    return st, said, p


def test_share_layouts_is_the_share_of_the_runs_before_at_least_twice_the_quiet_cap():
    """share / (1 - share) x the runs spent before, in layouts a side (/ 2R), never below twice the
    plan's cap (80): a cheap search still gets a confirmation of that size; 100%: no bound."""
    plan = decide.Plan(confirm_share=0.6)
    assert decide.share_layouts(plan, 400) == 300  # 1.5 x 400 runs / 2
    assert decide.share_layouts(decide.Plan(confirm_share=0.6, runs=2), 400) == 150
    assert decide.share_layouts(plan, 10) == 2 * plan.cap == 80
    assert decide.share_layouts(decide.Plan(confirm_share=1.0), 400) is None


def test_a_confirmations_last_look_is_the_last_of_its_design_within_the_share_bound():
    """The design: K, 1.5K, ... to the cap (40), then x1.25 a look (CONFIRM_GROWTH) to CONFIRM_FAR x the
    cap (160); the last look taken is the design's
    last within the share bound of the runs spent before it (its boundary stays the whole design's).
    A share of 60%: 1.5 x the runs before it, at least 80 a side."""
    plan, s2, a = decide.Plan(confirm_share=0.6), 1e-4, decide.confirm_level(0.05, 1)
    design = (4, 6, 9, 14, 21, 32, 40, 50, 63, 79, 99, 124, 155, 160)
    assert decide.confirm_looks(plan, s2, a, 1) == (design, 160)
    assert decide.confirm_looks(plan, s2, a, 1, spent=160) == (design, 99)  # bound 120 a side
    assert decide.confirm_looks(plan, s2, a, 1, spent=200) == (design, 124)  # bound 150
    assert decide.confirm_looks(plan, s2, a, 1, spent=10) == (design, 79)  # bound 80: at least twice the cap
    assert decide.confirm_looks(plan, s2, a, 1, spent=400) == (design, 160)
    assert decide.confirm_looks(decide.Plan(confirm_share=1.0), s2, a, 1, spent=0) == (design, 160)


def test_a_step_near_the_minimum_effect_is_said_at_once_and_ends_at_the_bound_showing_a_change():
    """A 0.6% step (1.2x the minimum effect) at a layout sd of 0.7%, 100 runs spent before it, a share
    of 50% (a bound of 80 fresh layouts a side, the floor: the design's look 79): the candidate is said before
    its confirmation starts (its estimate within 1.5x the minimum effect), with the forecast of the
    confirmation (the runs it will likely take, its bound).  The confirmation stops at the bound
    uncertain: its one-sided interval excludes 1 (a change shown, slower), not the band; the reason
    says exactly that and names --confirm-share.  Without the bound it looks on (mutation: no bound)."""
    st, said, p = _step({"g": 0.0, "b": 0.006}, decide.Plan(confirm_share=0.5))
    near = [m for m in said if m.startswith("near the minimum effect")]
    assert len(near) == 1 and "b against g is x1.0060" in near[0] and "at most 158 runs: --confirm-share 50%" in near[0]
    assert "will likely take about" in near[0]
    assert said.index(near[0]) < next(i for i, m in enumerate(said) if m.startswith("confirmation "))
    fc = st.forecast
    assert fc is not None and fc["max_runs"] == 158 and fc["bounded"] and 8 <= fc["runs"] <= 158
    assert fc["estimate"] == pytest.approx(math.expm1(0.006))
    assert (st.status, st.shown, st.bounded, st.confirm_layouts) == ("uncertain", "change", True, 79)
    c = st.confirmation
    assert c.verdict == "no difference" and c.sided == 1 and 1.0 < c.ci_low < 1.005 and c.ci_high == math.inf
    assert c.reason.startswith("shown slower but not shown to exceed the 0.5% minimum effect")
    assert "--confirm-share" in c.reason and p.fresh["b"][-1] == (4, 79)
    free, _, _ = _step({"g": 0.0, "b": 0.006}, decide.Plan(confirm_share=1.0))
    assert free.confirm_layouts > 79 and not free.bounded
    # a 5% step is not near: no line, no forecast, confirmed at its first look
    big, said, _ = _step({"g": 0.0, "b": 0.05}, decide.Plan(confirm_share=0.5))
    assert big.forecast is None and not any(m.startswith("near the minimum effect") for m in said)
    assert (big.status, big.shown, big.confirm_layouts) == ("found", "beyond", 4)


@pytest.mark.parametrize("up", [True, False])
@pytest.mark.parametrize("higher_is_better", [False, True])
def test_a_change_shown_below_the_band_names_its_direction_for_either_way_and_metric(up, higher_is_better):
    """Direction x metric kind: a 0.6% step up or down of a lower- or higher-is-better metric ends in the
    same state ("change", at the bound), and the words agree with the sign: slower when the change is
    up for a cost or down for a throughput, else faster."""
    st, _, _ = _step({"g": 0.0, "b": 0.006 if up else -0.006}, decide.Plan(confirm_share=0.5),
                     higher_is_better=higher_is_better)
    word = "slower" if up != higher_is_better else "faster"
    assert (st.status, st.shown, st.bounded) == ("uncertain", "change", True)
    assert st.confirmation.reason.startswith(f"shown {word} but not shown")
    assert st.confirmation.sided == (1 if up else -1)


def test_confirm_forecast_prices_a_confirmation_and_keeps_its_level_at_the_band():
    """The forecast simulates the confirmation's own test: a step of 5x the minimum effect is shown at the
    first look; one of 2x (1σL at a layout sd of 1.04%) over the looks 4..160 in about 95% at a mean of
    ~140 runs; one exactly at the minimum effect (the null's edge) in at most the level (within the
    simulation's own error)."""
    a, m, s2 = decide.confirm_level(0.05, 1), math.log1p(0.005), 0.01 ** 2 + 0.003 ** 2
    ns = tuple(decide.extended(4, 40, 160))
    assert decide.confirm_forecast(2 * m, s2, ns, a, m, last=40)["max_runs"] == 80  # stopped at the bound
    big = decide.confirm_forecast(5 * m, s2, ns, a, m)
    two = decide.confirm_forecast(2 * m, s2, ns, a, m)
    edge = decide.confirm_forecast(m, s2, ns, a, m)
    assert big["p_beyond"] > 0.99 and big["runs"] == 8
    assert 0.92 < two["p_beyond"] < 0.98 and 120 < two["mean_runs"] < 160 and two["max_runs"] == 320
    assert edge["p_beyond"] <= a + 3 * math.sqrt(a * (1 - a) / 4000)  # (4,000 simulated paths)
    assert decide.confirm_forecast(2 * m, s2, ns, a, m) == two  # seeded: the same forecast again


def test_the_plan_prices_steps_of_2x_and_1_2x_the_minimum_effect():
    """--plan's near steps: the likely cost of a step of 2x and of 1.2x the minimum effect at the noise
    measured (forecast.expected_cost), in the direction measured; none without a noise."""
    plan = decide.Plan()
    near = forecast.near_steps(16, 0.004, plan)
    assert [x["times"] for x in near] == [2.0, 1.2]
    assert [x["step"] for x in near] == pytest.approx([0.01, 0.006])
    assert all(x["runs"] > 0 and 0 <= x["named"] <= x["histories"] for x in near)
    assert near[0]["runs"] == forecast.expected_cost(16, 1.01, 0.004, plan)["runs"]
    down = forecast.near_steps(16, 0.004, plan, sign=-1)
    assert down[0]["runs"] == forecast.expected_cost(16, 1 / 1.01, 0.004, plan)["runs"]
    assert forecast.near_steps(16, math.nan, plan) == []


def test_confirm_share_is_a_percent_and_bad_values_name_the_option():
    assert confirm_share_fraction("60", 0.9) == pytest.approx(0.6)
    assert confirm_share_fraction(" 75% ", 0.9) == pytest.approx(0.75)
    assert confirm_share_fraction("100", 0.9) == 1.0
    for bad in ("0", "-5", "150", "half", ""):
        with pytest.raises(LayoutbenchError, match=r"^--confirm-share .* percent above 0 and at most 100.*e.g. 90 \(the default\)"):
            confirm_share_fraction(bad, 0.9)
    s = Settings(kernel="k", confirm_share=0.4)
    assert s.plan().confirm_share == 0.4 and "--confirm-share 40%" in s.start_line("b", "g")
    assert "--confirm-share" not in Settings(kernel="k").start_line("b", "g")
    with pytest.raises(LayoutbenchError, match="--confirm-share"):
        Settings(kernel="k", confirm_share=0.0).check()


def test_the_forecast_after_the_endpoints_is_their_runs_when_they_show_nothing_else_the_phases_after_them():
    """forecast.after_endpoints: a test that showed no change ends the bisection (its runs are the cost);
    one that differs adds the median runs of the probes, the confirmation and the side tests of
    expected_cost at the change and noise it measured."""
    plan = decide.Plan()
    assert forecast.after_endpoints(17, "not-shown", 80, 1.001, 0.0104, plan)["runs"] == 80
    assert forecast.after_endpoints(17, "noise", 96, 1.0, 0.0104, plan)["runs"] == 96
    got = forecast.after_endpoints(17, "differs", 30, 1.02, 0.0104, plan)
    ph = forecast.expected_cost(17, 1.02, 0.0104, plan)["phase_runs"]
    assert got["after"] == ph["probes"] + ph["confirmation"] + ph["sides"] > 0
    assert got["runs"] == 30 + got["after"] and got["endpoints"] == 30


@pytest.mark.parametrize("which", ["after the endpoints", "plan"])
def test_the_forecasts_meet_the_runs_near_the_minimum_effect(which):
    """On simulate.py's histories of a 0.75% step (1.5x the minimum effect, sigma_L 1%: the dearest to
    name), 30 histories with fixed seeds (the median of 10 ratios spreads about +-0.2 around its value: too
    few to check a 30% bound): the median of actual runs / the forecast is within 30%, for the
    forecast once the endpoints' test decided and for --plan's (simulate.plan_forecast: forecast.plan_look
    on each history's own values, which goes on to that test where its first look cannot price the range)."""
    plan = decide.Plan()
    sc = sim.Scenario("s", "step", 0.75, sigma_r=0.003)
    seeds = range(61_000, 61_030)
    actual = [sim.one(sc, plan, s)["runs"] for s in seeds]
    fc = sim.ends_forecast if which == "after the endpoints" else sim.plan_forecast
    forecast_runs = [fc(sc, plan, s) for s in seeds]
    ratio = float(np.median([a / f for a, f in zip(actual, forecast_runs)]))
    assert 0.7 <= ratio <= 1.3, (ratio, actual, forecast_runs)


def _plan_look(step: float, seed: int, go_on: bool = True) -> tuple[dict, decide.Tracked]:
    """forecast.plan_look on a synthetic 17-commit history with a step of ``step`` (log) at commit 8,
    layout noise 1%: what --plan measures and forecasts."""
    p = forecast.Synthetic(17, step, 8, 0.01, seed)
    tr = decide.Tracked(p)
    return forecast.plan_look(tr, "c0", "c16", 17, decide.Plan(), (4, 1), go_on=go_on), tr


def test_the_plan_prices_from_its_first_look_when_that_settles_it():
    """A step of 5 sigma_L: the likely costs one standard error either side of the first look's estimate
    agree, so the plan is the first look's (8 runs measured) and its forecast expected_cost at it."""
    got, tr = _plan_look(0.05, 3)
    first = got["first"]
    assert got["by"] == "first look" and got["spent"] == tr.ledger.spent == 8 and got["ends"] is None
    assert forecast.settled(first["runs"], first["low"], first["high"]) and first["low"] <= first["high"]
    assert got["cost"] == forecast.expected_cost(17, first["ratio"], first["noise"], decide.Plan())


@pytest.mark.parametrize("step, seed", [(0.0075, 11), (0.0, 12), (-0.0075, 13)])
def test_a_plan_that_its_first_look_cannot_price_runs_the_endpoints_test_and_prices_the_rest(step, seed):
    """A step near the minimum effect, or none (either direction): the likely costs either side of the
    first look's estimate differ by more than SETTLED, so the endpoints' test goes on as the bisection runs
    it (the same runs, the same decision) and the plan is its runs plus, when it differs, the phases after
    it at the change it measured (forecast.after_endpoints); without go_on (a budget) the first look's."""
    got, tr = _plan_look(step, seed)
    first = got["first"]
    assert not forecast.settled(first["runs"], first["low"], first["high"]), first
    assert got["by"] == "endpoints' test" and got["spent"] == tr.ledger.spent > 8
    again = decide.Tracked(forecast.Synthetic(17, step, 8, 0.01, seed))
    ends = decide.endpoints(again, "c0", "c16", decide.Plan())
    assert (got["ends"], got["spent"], got["cost"]["endpoint_layouts"]) == (ends.status, again.ledger.spent, ends.layouts)
    want = forecast.after_endpoints(17, ends.status, again.ledger.spent, got["ratio"], got["noise"], decide.Plan())
    assert got["cost"]["runs"] == want["runs"] and got["cost"]["phase_runs"]["endpoints"] == got["spent"]
    if ends.status != "differs":
        assert got["cost"]["runs"] == got["spent"] and got["cost"]["probes"] == 0
    held, tr2 = _plan_look(step, seed, go_on=False)
    assert held["by"] == "budget" and held["spent"] == tr2.ledger.spent == 8 and held["first"] == first
