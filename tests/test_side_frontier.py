"""bench/side_frontier.py: the per-phase split of a simulated bisection's runs accounts for every
run, charges the side tests (and only them) to "sides", leaves layoutbench.decide as it was, and
Wald's expected sample size it prints is that of the test it describes."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
from conftest import ROOT, script

from layoutbench import decide

sf = script("bench/side_frontier.py")
FIVE = sf.S.Scenario("step 5σL", "step", 5, sigma_r=0.003)


def test_every_run_is_charged_to_one_phase_and_thorough_moves_only_the_sides():
    originals = (decide.endpoints, decide.judge_probe, decide.confirm)
    d = sf.rows(FIVE, decide.Plan(), 6, seed0=300)
    t = sf.rows(FIVE, decide.Plan(thorough=True), 6, seed0=300)
    assert (decide.endpoints, decide.judge_probe, decide.confirm) == originals  # put back
    for r in d + t:
        # the prober's own count of values measured, not the ledger the meter reads
        assert sum(r[p] for p in sf.PHASES) == r["runs"] and r["other"] == 0
        assert r["right"] and r["endpoints"] > 0 and r["probes"] > 0 and r["confirmation"] > 0
        assert r["side_tests"] == 2  # a 5σL step in the middle third: a sub-range on each side
    for a, b in zip(d, t):
        # the endpoints' test runs before any side test: --thorough cannot change it
        assert a["endpoints"] == b["endpoints"]
        assert b["sides"] >= a["sides"]
    assert sum(b["sides"] for b in t) > sum(a["sides"] for a in d) + 6 * 5  # first look 8, not 3
    assert all(b["sides"] > 0 for b in t)


def test_a_null_range_has_no_side_tests_and_a_setting_is_put_back():
    null = sf.S.Scenario("null", "null", sigma_r=0.003)
    for r in sf.rows(null, decide.Plan(), 4, seed0=300):
        assert r["sides"] == 0 and r["side_tests"] == 0 and not r["blame"]
        assert r["endpoints"] > 0 and sum(r[p] for p in sf.PHASES) == r["runs"]
    saved = decide.plan.THOROUGH_A, decide.plan.THOROUGH_FIRST  # where Plan.side_a / side_first read them
    with sf.setting(0.2, 6) as plan:
        assert plan.thorough and (plan.side_a, plan.side_first) == (0.2, 6)
    with sf.setting(decide.SIDE_A, decide.SIDE_FIRST) as plan:
        assert plan == decide.Plan()
    assert (decide.plan.THOROUGH_A, decide.plan.THOROUGH_FIRST) == saved
    assert (decide.Plan(thorough=True).side_a, decide.Plan(thorough=True).side_first) == saved


def test_wald_expected_sample_size_matches_a_simulated_sprt():
    """Wald's E0[N] (overshoot ignored) against Wald's test of 0 vs 1 sigma_L run on pairs of
    layouts (difference N(0, 2) under no step): the simulated mean is at least the approximation
    and not far above it."""
    alpha, beta = 0.025, 0.05
    e0, e1 = sf.wald(alpha, beta)
    assert e0 < sf.wald(alpha, 0.03)[0] and e1 > 0
    # no step and a step trade places with the errors: what one costs under its hypothesis, the other does
    assert math.isclose(e0, sf.wald(beta, alpha)[1]) and not math.isclose(e0, e1)
    lo, hi = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
    n, rejected = _sprt(np.random.default_rng(5), 0.0, lo, hi)
    assert e0 <= n.mean() <= 1.35 * e0
    assert rejected.mean() < alpha  # its level, for the record


def _sprt(rng, mean: float, lo: float, hi: float, paths: int = 4000):
    """Wald's SPRT of no step (0) against 1 sigma_L (1) on pairs of layouts whose difference is
    N(mean, 2), boundaries lo < 0 < hi: (each path's pairs, whether it rejected no step)."""
    x = rng.normal(mean, math.sqrt(2.0), (paths, 400))
    llr = np.cumsum((x - 0.5) / 2.0, axis=1)
    out = (llr <= lo) | (llr >= hi)
    assert out.any(axis=1).all()
    n = out.argmax(axis=1) + 1
    return n, llr[np.arange(paths), n - 1] >= hi


def test_the_script_prints_json():
    p = subprocess.run([sys.executable, "-m", "bench.side_frontier", "--histories", "2",
                        "--settings", f"{decide.SIDE_A:g}:{decide.SIDE_FIRST}", "--only", "frontier", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    row = d["frontier"][0]
    assert (row["side_a"], row["first"], row["thorough"]) == (decide.SIDE_A, decide.SIDE_FIRST, False)
    assert set(row["rows"]) == {"step 5σL", "step 2σL", "two steps 1+3σL", "two steps 3+1σL"}
    bad = subprocess.run([sys.executable, "-m", "bench.side_frontier", "--settings", "x"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode != 0 and "--settings" in bad.stderr and "Traceback" not in bad.stderr


def test_a_bisection_ends_as_one_outcome_and_the_outcomes_account_for_the_mean():
    """simulate.outcome names what a bisection ended as from its steps, one class each (an unconfirmed
    candidate beside the right step is its own class, a named commit without a step is a false blame
    whatever else was named), and section 5's shares sum to 1 and its per-outcome runs to the row's mean."""
    from types import SimpleNamespace as NS

    OUT = sf.S.OUTCOMES

    def out(status, *steps):
        return NS(status=status, steps=[NS(status=s) for s in steps])

    truth = {"c5"}
    assert sf.S.outcome(out("found", "found"), True, ["c5"], truth) == OUT[0]
    assert sf.S.outcome(out("found", "found", "uncertain"), True, ["c5"], truth) == OUT[1]
    assert sf.S.outcome(out("found", "range", "found"), True, ["c5"], truth) == OUT[1]
    assert sf.S.outcome(out("uncertain", "uncertain"), False, [], truth) == OUT[2]
    assert sf.S.outcome(out("not-shown"), False, [], truth) == OUT[3]
    assert sf.S.outcome(out("found", "found"), False, ["c5"], truth) == OUT[4]
    assert sf.S.outcome(out("found", "found", "found"), True, ["c5", "c2"], truth) == OUT[5]
    assert sf.S.outcome(out("found", "found"), False, ["c2"], set()) == OUT[5]
    p = subprocess.run([sys.executable, "-m", "bench.side_frontier", "--histories", "6", "--seed0", "40",
                        "--only", "outcomes", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["outcomes"]
    for name in ("step 1σL", "step 2σL"):
        mine = [r for r in rows if r["scenario"] == name]
        assert sum(r["histories"] for r in mine) == 6 and math.isclose(sum(r["share"] for r in mine), 1.0)
        mean = float(np.mean([x["runs"] for x in sf.rows(sf.singles()[0 if name == "step 1σL" else 1],
                                                            decide.Plan(), 6, 40)]))
        assert math.isclose(sum(r["adds"] for r in mine), mean, rel_tol=1e-9)
        assert all(r["share_lo"] - 1e-12 <= r["share"] <= r["share_hi"] + 1e-12 for r in mine)


def test_the_floor_is_what_the_best_sequential_test_spends():
    """d(p || q) / K: Wald's SPRT of a step of 1 sigma_L against none, on pairs of layouts, spends at least
    the bound at the errors it reached and not much more (it nearly attains it); a test told nothing
    (p = q) needs no observation, a surer one needs more."""
    assert sf.kl_coin(0.5, 0.5) == 0.0 and sf.kl_coin(0.9, 0.05) < sf.kl_coin(0.99, 0.05) < sf.kl_coin(0.99, 0.01)
    assert math.isclose(sf.kl_coin(1.0, 0.04), math.log(25.0))
    rng = np.random.default_rng(11)
    k = 0.25  # 1 sigma_L on a pair's difference N(d, 2)
    lo, hi = math.log(0.05 / 0.975), math.log(0.95 / 0.025)
    ends = []
    for mean in (1.0, 0.0):
        n, rejected = _sprt(rng, mean, lo, hi)
        ends.append((n.mean(), rejected.mean()))
    (n1, power), (_, level) = ends
    bound = sf.kl_coin(power, level) / k
    assert bound <= n1 <= 1.35 * bound


def test_the_floor_section_finds_the_true_pair_and_stays_below_the_engine():
    """Section 6 reads the engine's own errors from the histories (the endpoints' status, each probe's
    level, the confirmations of the step's own pair) and every floor lies below what the engine spent."""
    sc = sf.singles()[0]
    rs = sf.rows(sc, decide.Plan(), 6, seed0=50)
    for r in rs:
        steps = sf.S.SimProber(sc, np.random.default_rng(50 + rs.index(r))).steps
        assert r["truth"] == (f"c{steps[0] - 1}", f"c{steps[0]}")
        assert r["ends_status"][0] in ("differs", "not-shown", "noise")
        if r["ends_status"][0] == "differs":  # 16 commits: at least three probes, each below alpha
            assert len(r["probe_levels"]) >= 3 and all(0 < q < 0.05 for q in r["probe_levels"])
        else:
            assert not r["probe_levels"] and not r["confirms"]
    assert any((c[0], c[1]) == r["truth"] and c[3] == "beyond" for r in rs for c in r["confirms"])
    f = sf.floor_rows(sc, rs, decide.Plan())
    assert 0 < f["ends_power"] <= 1 and 0 < f["confirm_power"] <= 1 and 0 < f["confirm_level"] <= 0.04 + 1e-12
    assert f["probes_right"] + f["probes_misjudged"] <= f["probes_judged"] <= 6 * f["probes_per"]
    assert 0 < f["confirms_true"] <= 1
    for ph in ("endpoints", "probes", "confirmation"):
        assert 0 < f["floor"][ph] < f["engine"][ph], ph
    # a 1σL step is twice the minimum effect: the confirmation's pair carries a quarter of the endpoints' information
    assert f["floor"]["confirmation"] > 2 * f["floor"]["endpoints"]


def test_a_probe_is_misjudged_only_on_the_wrong_side_of_the_step_in_a_window_holding_it():
    r = {"truth": ("c5", "c6"), "probe_verdicts": [
        ("c8", "c0", "c16", "bad"),   # right
        ("c4", "c0", "c8", "bad"),    # before the step, called bad: misjudged
        ("c6", "c4", "c8", "good"),   # at the step, called good: misjudged
        ("c5", "c4", "c6", "uncertain"),  # neither
        ("c3", "c0", "c4", "bad"),    # a window without the step (a side search): not counted
    ]}
    assert sf.misjudged(r) == (4, 2, 1)


def test_a_row_is_measured_once_and_a_setting_is_a_row_of_its_own():
    """rows() keeps what it measured for the sections that read the same row, but two --thorough settings
    (the same Plan, other module constants) are two rows."""
    first = sf.rows(FIVE, decide.Plan(), 3, seed0=310)
    assert sf.rows(FIVE, decide.Plan(), 3, seed0=310) is first
    with sf.setting(0.4, 3) as plan:
        loose = sf.rows(FIVE, plan, 3, seed0=310)
    with sf.setting(decide.THOROUGH_A, decide.THOROUGH_FIRST) as plan:
        thorough = sf.rows(FIVE, plan, 3, seed0=310)
    assert sum(r["sides"] for r in thorough) > sum(r["sides"] for r in loose)  # first look 8 against 3
