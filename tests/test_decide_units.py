"""The decision engine's parts with exact expectations (layoutbench.decide), and a few whole
bisections on fixed simulated histories: fast (seconds), so that bench/mutate.py can run them
against every mutant of layoutbench/decide/.  The error rates themselves: tests/test_calibration.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import ndtr, stdtrit
from conftest import script

from layoutbench import decide, forecast

sim = script("bench/simulate.py")


def _groups(values, first=0):
    """{random:seed: [exp(v)]} for seeds first+1.. (one run a layout)."""
    return {f"random:{first + i + 1}": [math.exp(v)] for i, v in enumerate(values)}


# -- the pooled model -----------------------------------------------------------------------------

def test_pool_keeps_each_layout_once_and_fresh_layouts_beside_the_seeds():
    pool = decide.Pool()
    pool.add("a", _groups([0.1, 0.2]))
    pool.add("a", _groups([0.1]))  # fewer layouts than it has: kept
    assert pool.n("a") == 2 and pool.n("b") == 0
    pool.add_fresh("a", 1, _groups([0.2, 0.3, 0.4], first=1))  # seeds 2..4: seed 2 it has
    assert np.allclose(pool.y["a"], [0.1, 0.2, 0.3, 0.4])
    pool.add_fresh("a", 6, _groups([0.7], first=6))  # seed 7, beyond
    assert np.allclose(pool.y["a"], [0.1, 0.2, 0.3, 0.4, 0.7]) and pool.n("a") == 2
    pool.add("a", _groups([0.1, 0.2, 0.3, 0.4, 0.5]))  # seeds 1..5 now: seeds 2..4 are not counted twice
    assert np.allclose(pool.y["a"], [0.1, 0.2, 0.3, 0.4, 0.5, 0.7]) and pool.n("a") == 5
    pool.add("b", _groups([1.0, 1.2]))
    s2, df = pool.var()
    ss = np.sum((pool.y["a"] - pool.y["a"].mean()) ** 2) + 0.02
    assert df == 5 + 1 and s2 == pytest.approx(ss / 6)


def test_ztest_through_the_pooled_variance():
    pool = decide.Pool()
    pool.add("a", _groups([0.0, 0.2]))
    pool.add("b", _groups([1.0, 1.2, 1.1, 1.1]))
    t = decide.ztest(pool, "a", "b")
    s2 = (0.02 + 0.02) / 4
    assert t.est == pytest.approx(1.0) and t.df == 4 and (t.na, t.nb) == (2, 4)
    assert t.se == pytest.approx(math.sqrt(s2 * (1 / 2 + 1 / 4)))
    assert t.neff == pytest.approx(4 / 3)
    assert decide.ztest(pool, "b", "a").est == pytest.approx(-1.0)
    for ya, yb in ((np.empty(0), pool.y["a"]), (pool.y["a"], np.empty(0))):
        empty = decide.zvalues(pool, ya, yb)
        assert empty.df == 0 and math.isnan(empty.se) and empty.z == 0.0 and (empty.na, empty.nb) == (2, 2) or \
            (empty.na, empty.nb) in ((1, 2), (2, 1))
    assert decide.zvalues(decide.Pool(), pool.y["a"], pool.y["b"]).df == 0  # no variance yet: no test


def test_ztest_z_log_lr_and_interval():
    t = decide.ZTest(est=0.02, se=0.01, df=10_000, na=8, nb=8)
    assert t.z == pytest.approx(2.0)
    x = 4.0
    assert t.log_lr() == pytest.approx(-0.5 * math.log1p(x) + 4.0 * x / (2 * (1 + x)))
    assert t.log_lr(+1) > t.log_lr() > t.log_lr(-1)  # one-sided: more evidence on its side
    assert t.p_value() == pytest.approx(math.exp(-t.log_lr()))
    zb = math.sqrt((1 + x) / x * (2 * math.log(20) + math.log1p(x)))
    assert t.half_width(0.05) == pytest.approx(zb * 0.01)
    assert decide.ZTest(0.02, 0.01, 0, 2, 2).z == 0.0  # no degrees of freedom: no evidence
    assert decide.ZTest(0.02, 0.01, 1, 2, 2).half_width(0.05) == math.inf
    assert decide.ZTest(0.0, 0.0, 5, 2, 2).half_width(0.05) == 0.0
    assert decide.ZTest(0.1, 0.01, 2, 8, 8).p_value() < 1.0 == decide.ZTest(0.1, 0.01, 1, 8, 8).p_value()
    small = decide.ZTest(est=0.02, se=0.01, df=3, na=2, nb=2)
    assert 0 < small.z < 2.0  # through t with 3 degrees of freedom: less than est/se
    assert not decide.ZTest(0.5, 0.01, 1, 2, 2).rejects(0.5)  # < 2 degrees of freedom: never
    assert decide.ZTest(0.5, 0.01, 2, 8, 8).rejects(0.05)
    assert decide.ZTest(0.0, 0.0, 5, 4, 4).z == 0.0 and decide.ZTest(-1.0, 0.0, 5, 4, 4).z == -40.0
    ns = (4, 6, 9)
    c = decide.gs_boundary(ns, 0.05)
    assert decide.ZTest(c * 0.01 + 1e-6, 0.01, 10_000, 8, 8).crosses(ns, 0.05)
    assert not decide.ZTest(c * 0.01 - 1e-4, 0.01, 10_000, 8, 8).crosses(ns, 0.05)
    assert not decide.ZTest(-1.0, 0.01, 10_000, 8, 8).crosses(ns, 0.05, sign=+1)  # one-sided: the sign counts


def test_a_layout_is_the_median_of_its_runs_when_no_run_noise_is_measured():
    """One layout with runs (the others one run or none): no run noise to pull runs to, the median."""
    y = decide.layout_values({"a": [1.0, 1.01, 10.0], "b": [2.0], "c": []})
    assert np.allclose(y, [math.log(1.01), math.log(2.0)])


# -- schedules, levels, counts --------------------------------------------------------------------

def test_schedules_levels_and_probe_counts():
    assert decide.schedule(4, 40) == [4, 6, 9, 14, 21, 32, 40]
    assert decide.schedule(3, 4) == [3, 4] and decide.schedule(8, 5) == [5]
    assert decide.family_level(0.05, 2) == pytest.approx(0.05 * 6 / (math.pi ** 2 * 4))
    assert decide.probe_level(0.05, 4, 4) == pytest.approx(0.75 * 0.05 / 4)
    assert decide.probe_level(0.05, 5, 4) == pytest.approx(decide.family_level(0.0125, 1))
    assert decide.planned_probes(17) == 4 and decide.planned_probes(18) == 5 and decide.planned_probes(2) == 1
    assert decide.planned_probes(17, 3) == 6 and decide.rounds_needed(17, 3) == 2 and decide.rounds_needed(10, 2) == 2
    assert decide.split(0, 8, [1, 2, 3, 4, 5, 6, 7], 1) == [4]
    assert decide.split(0, 8, [1, 2, 3, 4, 5, 6, 7], 3) == [2, 4, 6]
    assert decide.split(0, 8, [3], 3) == [3]
    plan = decide.Plan()
    assert plan.cap == 40 and plan.looks()[0] == (4, 1) and plan.looks()[-1] == (40, 1)
    assert decide.Plan(prove_null=True).looks()[-1] == (256, 1)  # max_layouts
    with pytest.raises(ValueError):
        decide.Plan(spending="nope").check()


def test_expected_cost_counts_every_phase_of_the_simulated_bisections():
    """forecast.expected_cost runs the decision code on synthetic histories: a change never shown
    costs the endpoints' test to its quiet cap and nothing else; a 5 sigma step costs every phase
    (endpoints at their first look, four probes over 17 commits, a confirmation, the side tests),
    --first-only no side test, --thorough more side runs."""
    plan = decide.Plan()
    tiny = forecast.expected_cost(17, 1.0001, 0.01, plan)
    assert tiny["endpoint_layouts"] == plan.cap and tiny["runs"] == 2 * plan.cap == tiny["phase_runs"]["endpoints"]
    assert tiny["probes"] == 0 and tiny["phase_runs"]["sides"] == 0
    big = forecast.expected_cost(17, 1.05, 0.01, plan)
    assert big["endpoint_layouts"] == 4 and big["probes"] == 4
    assert all(big["phase_runs"][k] > 0 for k in ("endpoints", "probes", "confirmation", "sides")), big
    assert big["phase_runs"]["endpoints"] == 8 and big["confirm_layouts"] >= decide.MIN_LAYOUTS
    assert abs(sum(big["phase_runs"].values()) - big["runs"]) <= 0.3 * big["runs"]
    first = forecast.expected_cost(17, 1.05, 0.01, dataclasses.replace(plan, first_only=True))
    assert first["side_layouts"] == 0 and first["runs"] < big["runs"]
    assert forecast.expected_cost(17, 1.05, 0.01, dataclasses.replace(plan, thorough=True))["side_layouts"] > \
        big["side_layouts"]
    # a budget does not cap the plan: it says what the bisection needs (then whether that fits)
    assert forecast.expected_cost(17, 1.05, 0.01, dataclasses.replace(plan, budget=20))["runs"] == big["runs"]


def test_a_judgement_says_what_it_rests_on():
    j = decide.Judgement("good", 4, 1, 0.5, 0.01, 0.1, level=0.01)
    assert j.describe() == ("good (p vs GOOD=0.5, p vs BAD=0.01, position 0.10 between good=0 and bad=1; "
                            "4 layouts x 1 run(s); level 0.01)")
    assert decide.Judgement("skip", note="does not build").describe() == "skip: does not build"


def test_window_and_journal():
    commits = [f"c{i}" for i in range(6)]
    j = decide.MemoryJournal()
    j.record(None, "c2", decide.Judgement("good", 4, 1))
    j.record(None, "c4", decide.Judgement("between", 4, 1))
    j.record("s", "c3", decide.Judgement("bad", 4, 1))
    j.record(None, "c3", decide.Judgement("uncertain", 40, 1))
    marks = j.marks(None)
    assert marks["c4"]["verb"] == "bad" and marks["c3"]["verb"] == "skip" and marks["c3"]["why"] == "uncertain"
    assert decide.outcome.marked_window(commits, marks) == (2, 4, [])
    assert decide.outcome.marked_window(commits, j.marks("s")) == (0, 3, [1, 2])
    assert decide.outcome.marked_window(commits, {}) == (0, 5, [1, 2, 3, 4])


# -- the residual tests' evidence -----------------------------------------------------------------

def test_side_evidence_is_the_largest_split_z_in_the_direction():
    pool = decide.Pool()
    pool.add("a", _groups([0.0, 0.2]))
    pool.add("b", _groups([1.0, 1.2]))
    pool.add("c", _groups([1.0, 1.2]))
    s2 = 0.02 * 3 / 3
    se = math.sqrt(s2 * (1 / 2 + 1 / 4))
    side = ["a", "x", "b", "c"]  # x: not measured, left out
    assert decide.side_evidence(pool, side, +1.0) == pytest.approx(1.0 / se)  # a | b c
    assert decide.side_evidence(pool, side, -1.0) == pytest.approx(-0.5 / se)  # a b | c
    assert decide.side_evidence(pool, ["a", "x"], +1.0) == -math.inf


def test_side_llr_averages_the_splits_likelihood_ratios_of_a_step_of_d1():
    """Where a side test stops: log of the mean over the splits of exp((d d1 - d1^2/2) / se^2),
    d = mean after the split - mean before (in the direction), pooled variance."""
    pool = decide.Pool()
    pool.add("a", _groups([0.0, 0.2]))
    pool.add("b", _groups([1.0, 1.2]))
    pool.add("c", _groups([1.0, 1.2]))
    s2 = 0.02 * 3 / 3
    side = ["a", "x", "b", "c"]  # x: not measured, left out
    d1 = 0.5
    v1, v2 = s2 * (1 / 2 + 1 / 4), s2 * (1 / 4 + 1 / 2)  # a | b c, a b | c
    up = [(1.0 * d1 - d1 * d1 / 2) / v1, (0.5 * d1 - d1 * d1 / 2) / v2]
    assert decide.side_llr(pool, side, +1.0, d1) == pytest.approx(math.log((math.exp(up[0]) + math.exp(up[1])) / 2))
    down = [(-1.0 * d1 - d1 * d1 / 2) / v1, (-0.5 * d1 - d1 * d1 / 2) / v2]
    assert decide.side_llr(pool, side, -1.0, d1) == pytest.approx(math.log((math.exp(down[0]) + math.exp(down[1])) / 2))
    assert decide.side_llr(pool, ["a", "x"], +1.0, d1) == -math.inf
    # no step among equal commits: the more layouts, the less likely a step of d1 (Wald's drift)
    flat = decide.Pool()
    for c in "pq":
        flat.add(c, _groups([0.0, 0.1, -0.1, 0.05, -0.05]))
    few = decide.side_llr(flat, ["p", "q"], +1.0, 0.1)
    for c in "pq":
        flat.add(c, _groups([0.0, 0.1, -0.1, 0.05, -0.05] * 4))
    assert decide.side_llr(flat, ["p", "q"], +1.0, 0.1) < few < 0


def test_posterior_puts_the_step_where_the_probes_say():
    pool = decide.Pool()
    sub = ["g", "p1", "p2", "p3", "b"]
    for c, v in zip(sub, [0.0, 0.0, 1.0, 1.0, 1.0]):
        pool.add(c, _groups([v - 0.05, v + 0.05, v]))
    post = dict(decide.posterior(pool, sub, 0, 4))
    assert list(post) == ["p1", "p2", "p3", "b"] and sum(post.values()) == pytest.approx(1.0)
    assert post["p2"] > 0.99
    flat = decide.posterior(decide.Pool(), sub, 0, 4)
    assert flat == [(c, 0.25) for c in sub[1:]]


# -- the prober wrapper: runs counted once, fresh seeds only --------------------------------------

class _Counting:
    higher_is_better = False

    def __init__(self):
        self.asked = []

    def groups(self, commit, k, r):
        self.asked.append((commit, 0, k))
        return _groups([0.01 * s for s in range(1, k + 1)])


class _CountingAfter(_Counting):
    def groups_after(self, commit, first, k, r):
        self.asked.append((commit, first, k))
        return _groups([0.01 * s for s in range(first + 1, first + k + 1)], first)


def test_tracked_counts_each_run_once_and_measures_only_fresh_seeds():
    p = decide.Tracked(_CountingAfter())
    p.groups("a", 4, 1)
    p.groups("a", 6, 1)
    p.groups("a", 3, 1)
    assert p.ledger.spent == 6 and p.kmax["a"] == 6 and p.ledger.top == 6
    g = p.groups_after("a", 10, 3, 1)
    assert list(g) == ["random:11", "random:12", "random:13"] and p.ledger.spent == 9 and p.ledger.top == 13
    p.groups_after("a", 10, 3, 1)
    p.groups("a", 2, 2)  # a second run of seeds 1, 2
    assert p.ledger.spent == 11 and p.kmax["a"] == 6
    p.groups("a", 4, 1)  # one run of seeds that have two: nothing new
    assert p.ledger.spent == 11
    # without the prober's own groups_after: the same layouts, the seeds before paid too
    q = decide.Tracked(_Counting())
    assert q.groups_after("a", 10, 3, 1) == g and q.ledger.spent == 13 and q.kmax["a"] == 13
    assert decide.groups_after(_Counting(), "a", 10, 3, 1) == g == decide.groups_after(_CountingAfter(), "a", 10, 3, 1)
    b = decide.Tracked(_CountingAfter(), decide.tracked._Ledger(budget=5))
    b.groups("a", 5, 1)
    with pytest.raises(decide.OutOfBudget):
        b.groups_after("a", 5, 1, 1)
    assert b.ledger.spent == 5


def test_the_confirmation_measures_fresh_seeds_beyond_every_decision():
    """On a fixed simulated history: the confirmation's seeds start beyond every seed a decision
    measured on any commit, and the seeds between are never measured on its two commits."""
    sc = sim.Scenario("s", "step", 5.0, commits=16, sigma_r=0.003)
    p = sim.SimProber(sc, np.random.default_rng(3))
    calls = []
    plain, after = p.groups, p.groups_after

    def groups(commit, k, r):
        calls.append(("groups", commit, 0, k))
        return plain(commit, k, r)

    def groups_after(commit, first, k, r):
        out = after(commit, first, k, r)
        if first:
            calls.append(("fresh", commit, first, k))
            seen[:] = [set(p.asked)]  # what was measured when the confirmation ended
        return out
    seen: list = []
    p.groups, p.groups_after = groups, groups_after
    out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
    assert out.culprit == p.names[p.steps[0]]
    st = out.steps[0]
    fresh = [c for c in calls if c[0] == "fresh"]
    assert fresh and {c[1] for c in fresh} == {st.last_good, st.culprit}
    first = fresh[0][2]
    before = calls[:calls.index(fresh[0])]
    assert first >= max(k for _, _, _, k in before)
    for c in (st.last_good, st.culprit):
        seeds = {s for (i, s) in seen[0] if p.names[i] == c}
        k_dec = max([k for _, cc, _, k in before if cc == c] + [0])
        assert not any(k_dec < s <= first for s in seeds), (c, k_dec, first)
        assert {s for s in seeds if s > first} == set(range(first + 1, first + st.confirm_layouts + 1))
    assert out.runs == p.runs  # the ledger and the prober count the same runs


def test_confirm_with_and_without_the_probers_fresh_seeds_agrees():
    sc = sim.Scenario("s", "step", 3.0, commits=4, sigma_r=0.003)
    p = sim.SimProber(sc, np.random.default_rng(2))
    c = p.names[p.steps[0]]
    lg = p.names[p.steps[0] - 1]

    class NoAfter:
        higher_is_better = False

        def __init__(self):
            self.p = sim.SimProber(sc, np.random.default_rng(2))

        def groups(self, commit, k, r):
            return self.p.groups(commit, k, r)
    t1, t2 = decide.Tracked(p), decide.Tracked(NoAfter())
    plan = decide.Plan(confirm_share=1.0)  # (the looks of an unbounded confirmation: 4, 6, 9, ... 160)
    a = decide.confirm(t1, lg, c, plan, used=12, sign=1)
    b = decide.confirm(t2, lg, c, plan, used=12, sign=1)
    assert a[1] == b[1] == 9 and a[2] == pytest.approx(b[2]) and a[0].verdict == b[0].verdict == "slower"
    assert t1.ledger.spent == 2 * a[1] and t2.ledger.spent == 2 * (12 + a[1])


# -- whole bisections on fixed histories ----------------------------------------------------------

def test_fixed_histories_null_single_and_two_steps():
    null = sim.SimProber(sim.Scenario("n", "null", sigma_r=0.003), np.random.default_rng(1))
    out = decide.bisect_range(null, null.names, decide.Plan(), decide.MemoryJournal())
    assert out.culprit is None and out.status == "not-shown" and not out.steps
    assert out.probes == out.rounds == 0  # nothing to search: no probe, no round
    for seed in (4, 5):
        p = sim.SimProber(sim.Scenario("s", "step", 5.0, sigma_r=0.003), np.random.default_rng(seed))
        out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
        assert out.culprit == p.names[p.steps[0]] and out.status == "found" and not out.several
        assert out.rounds == out.probes > 0  # one prober: one probe a round
        assert out.steps[0].effect == pytest.approx(0.05, abs=0.015) and 0.5 < out.share < 2.0
    p = sim.SimProber(sim.Scenario("t", "two", sizes=(3.0, 1.0), sigma_r=0.003), np.random.default_rng(31_001))
    out = decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal())
    assert [s.culprit for s in out.steps if s.status == "found"] == [p.names[i] for i in p.steps]
    assert out.several and out.culprit == p.names[p.steps[0]]
    # --first-only: the same history ends at its first step, no range beside it is tested
    p = sim.SimProber(sim.Scenario("t", "two", sizes=(3.0, 1.0), sigma_r=0.003), np.random.default_rng(31_001))
    out = decide.bisect_range(p, p.names, decide.Plan(first_only=True), decide.MemoryJournal())
    assert [s.status for s in out.steps] == ["found"] and out.sides == [] and not out.several


def test_progress_names_the_machine_only_with_several():
    p = sim.SimProber(sim.Scenario("s", "step", 5.0, sigma_r=0.003), np.random.default_rng(4))
    p.name = "m1"
    said: list[str] = []
    decide.bisect_range(p, p.names, decide.Plan(), decide.MemoryJournal(), say=said.append)
    said = said[next(i for i, m in enumerate(said) if m.startswith("probe ")):]
    assert said[0].startswith("probe c8 (15 commit(s) left to test; ") and "runs spent)" in said[0]
    assert said[1].startswith("c8: ") and "layouts x 1 run(s)" in said[1]
    assert not any("m1" in m for m in said)


def test_every_phase_says_a_line_with_the_runs_so_far():
    """A bisection of a 5 sigma_L step says a line at each look of the endpoints, before each probe,
    before the confirmation and at each of its looks, before each side test and at each of its looks;
    each line is said when the runs before it are spent (a line per phase, none silent)."""
    p = sim.SimProber(sim.Scenario("s", "step", 5.0, sigma_r=0.003), np.random.default_rng(4))
    tr = decide.Tracked(p)
    said: list[tuple[str, int]] = []
    out = decide.bisect_range(tr, p.names, decide.Plan(), decide.MemoryJournal(),
                              say=lambda m: said.append((m, tr.ledger.spent)))
    heads = [m.split(" ")[0] for m, _ in said]
    assert heads[0] == "endpoints:" and said[0][1] == 2 * 4  # after the first look of 4 layouts a side
    assert "probe" in heads and "confirmation" in heads and "side" in heads, heads
    conf = [m for m, _ in said if m.startswith("confirmation ")]
    assert conf[0].endswith("on fresh layouts (" + conf[0].split("(")[-1]) and "fresh layouts a side" in conf[1]
    sides = [m for m, _ in said if m.startswith("side test ")]
    assert len([m for m in sides if "(the range " in m]) == len(out.sides) == 2
    assert all(any(m.startswith(f"side test {sd['good'][:12]}..{sd['bad'][:12]}: ") for m in sides)
               for sd in out.sides)
    assert said[-1][0].startswith("side test ") and said[-1][1] == out.runs  # no run after the last line
    for seed in range(5, 10):  # side tests that stop between two looks say their last layouts too
        p = sim.SimProber(sim.Scenario("s", "step", 5.0, sigma_r=0.003), np.random.default_rng(seed))
        tr = decide.Tracked(p)
        said = []
        out = decide.bisect_range(tr, p.names, decide.Plan(), decide.MemoryJournal(),
                                  say=lambda m: said.append((m, tr.ledger.spent)))
        assert said[-1][0].startswith("side test ") and said[-1][1] == out.runs, (seed, said[-1], out.runs)


def test_an_unbuildable_commit_in_the_way_leaves_a_range():
    sc = sim.Scenario("s", "step", 5.0, commits=8)
    truth = sim.SimProber(sc, np.random.default_rng(4))
    at = truth.names[truth.steps[0]]

    class Broken(sim.SimProber):
        def groups_after(self, commit, first, k, r):
            if commit == at:
                raise decide.Skip("does not build")
            return super().groups_after(commit, first, k, r)
    b = Broken(sc, np.random.default_rng(4))
    out = decide.bisect_range(b, b.names, decide.Plan(), decide.MemoryJournal())
    assert out.status == "range" and out.culprit is None
    st = out.steps[0]
    assert (at, st.last_good, st.range) == ("c5", "c4", ["c5", "c6"]) and st.skipped[0]["commit"] == "c5"


def test_the_single_layout_baseline():
    vals = {"c0": 1.0, "c1": 1.0, "c2": 1.1, "c3": 1.1}
    got = decide.single_layout(vals.get, list(vals))
    assert got["culprit"] == "c2" and got["change"] == pytest.approx(0.1) and got["values"] == 4
    flat = {"c0": 1.0, "c1": 1.0, "c2": 1.001, "c3": 1.001}
    got = decide.single_layout(flat.get, list(flat), threshold=0.005)
    assert got["culprit"] is None and got["note"] == "endpoints differ by less than 0.5%" and got["values"] == 2


def test_an_equivalence_shown_on_the_way_says_so():
    p = sim.SimProber(sim.Scenario("n", "null", sigma_l=0.0005), np.random.default_rng(1))
    e = decide.endpoints(p, p.names[0], p.names[-1], decide.Plan())
    assert e.status == "noise" and e.layouts == 4
    assert (e.comparison.verdict, e.comparison.reason) == ("no difference", "within ±0.5% (equivalence test)")
    assert e.comparison.sided == 0  # an interval on both sides of the estimate: the two one-sided tests together
    assert e.note == ("its 90% interval (two one-sided 5% tests over the looks) lies within ±0.5%: a change of 0.5% "
                      "or more is ruled out")
    # the interval shown is the equivalence test's: est +- the one-sided boundary of the design's looks, as a t quantile
    tr = decide.Tracked(p)
    for cm in (p.names[0], p.names[-1]):
        decide.tracked.measure_at(tr, cm, 4, 1)
    t = decide.ztest(tr.pool, p.names[0], p.names[-1])
    ns = tuple(decide.extended(4, 40, 120))
    h = t.tost_half(decide.gs_boundary(ns, 0.05, one_sided=True))
    c = e.comparison
    assert c.confidence == pytest.approx(0.90) and c.verdict == "no difference"
    assert (c.ci_low, c.ci_high) == (pytest.approx(math.exp(t.est - h)), pytest.approx(math.exp(t.est + h)))
    assert 0.995 < c.ci_low and c.ci_high < 1.005


def test_the_equivalence_half_width_and_the_layouts_it_would_need():
    t = decide.ZTest(0.001, 0.002, 5, 4, 4)
    assert t.tost_half(2.0) == pytest.approx(float(stdtrit(5, ndtr(2.0))) * 0.002)
    assert decide.ZTest(0.001, 0.002, 5000, 4, 4).tost_half(2.0) == pytest.approx(0.004)
    # the t quantile up to 999 degrees of freedom, the normal one from 1000 on (exactly, not approximately)
    assert decide.ZTest(0.0, 0.002, 999, 4, 4).tost_half(2.0) == float(stdtrit(999, ndtr(2.0))) * 0.002 != 0.004
    assert decide.ZTest(0.0, 0.002, 1000, 4, 4).tost_half(2.0) == 0.004
    assert decide.ZTest(0.0, 0.002, 1, 4, 4).tost_half(2.0) == math.inf
    # 0.1% measured at se 0.2% over 4 + 4 layouts (5 degrees of freedom in the pool): the interval
    # est +- q se' fits in +-0.5% once se' = 0.2% sqrt(4/n) is small enough, n a side, with the t
    # quantile q of the pool's degrees of freedom grown by the 2 (n - 4) layouts added
    n = decide.layouts_to_rule_out(t, 0.005, 2.0)
    tt = lambda k: decide.ZTest(0.001, 0.002 * math.sqrt(4 / k), 5 + 2 * (k - 4), k, k)  # noqa: E731
    assert n == 6
    assert 0.001 + tt(n).tost_half(2.0) < 0.005 <= 0.001 + tt(n - 1).tost_half(2.0)
    # unequal sides (3 and 5 layouts, 6 degrees of freedom): both sides are brought up to n and the
    # pool gains one degree for each layout added -- to the degree: a bound just above the reach at
    # 8 a side asks for 8, one just below the reach at 7 a side for 8 too
    u = decide.ZTest(0.001, 0.002 * math.sqrt((1 / 3 + 1 / 5) / (2 / 4)), 6, 3, 5)
    reach = lambda k: 0.001 + decide.ZTest(0.001, 0.002 * math.sqrt(4 / k), 6 + (k - 3) + (k - 5), k, k).tost_half(2.0)  # noqa: E731,E501
    assert decide.layouts_to_rule_out(u, reach(8) * (1 + 1e-9), 2.0) == 8
    assert decide.layouts_to_rule_out(u, reach(7) * (1 - 1e-9), 2.0) == 8
    assert decide.layouts_to_rule_out(decide.ZTest(0.006, 0.002, 30, 4, 4), 0.005, 2.0) is None


# -- small parts the merged engine's mutation run found untested (2026-11-25) -----------------------

def test_extended_looks_go_on_past_the_quiet_cap_without_repeating_a_look():
    assert decide.extended(4, 40, 120) == [4, 6, 9, 14, 21, 32, 40, 60, 90, 120]
    assert decide.extended(4, 40, 40) == decide.schedule(4, 40) == [4, 6, 9, 14, 21, 32, 40]
    assert decide.extended(3, 40, 50) == [3, 5, 8, 12, 18, 27, 40, 50]


def test_split_cuts_the_window_not_the_range_from_zero():
    assert decide.split(8, 16, list(range(9, 16)), 1) == [12]
    assert decide.split(8, 16, [9, 10, 11, 13, 14, 15], 1) == [11]  # 12 tested: the nearest, the earlier on a tie
    assert decide.split(6, 18, list(range(7, 18)), 2) == [10, 14]


def test_the_single_layout_bisection_halves_every_window():
    commits = [f"c{i}" for i in range(17)]
    asked = []

    def single(c):
        asked.append(c)
        return 2.0 if int(c[1:]) >= 15 else 1.0
    out = decide.single_layout(single, commits)
    assert out["culprit"] == "c15" and out["values"] == 6  # GOOD, BAD and the probes 8, 12, 14, 15
    assert asked == ["c0", "c16", "c8", "c12", "c14", "c15"]


def test_the_single_layout_bisection_ends_in_a_range_when_only_unbuildable_commits_are_left():
    def single(c):
        if c == "c2":
            raise decide.Skip("does not build")
        return {"c0": 1.0, "c1": 1.0, "c3": 2.0}[c]
    out = decide.single_layout(single, ["c0", "c1", "c2", "c3"])
    assert out["culprit"] is None and out["range"] == ["c2", "c3"]


def test_the_search_estimate_needs_two_layouts_a_side():
    """decide.search_estimate (what says a candidate is near the minimum effect): the difference of the
    means in the direction asked, its size without one, NaN while either side has fewer than 2 layouts."""
    pool = decide.Pool()
    pool.add("g", {"random:1": [1.0], "random:2": [1.0]})
    pool.add("c", {"random:1": [1.1], "random:2": [1.1]})
    pool.add("one", {"random:1": [1.1]})
    assert decide.sequential.search_estimate(pool, "g", "c", 1) == pytest.approx(math.log(1.1))
    assert decide.sequential.search_estimate(pool, "g", "c", -1) == pytest.approx(-math.log(1.1))
    assert decide.sequential.search_estimate(pool, "c", "g", 0) == pytest.approx(math.log(1.1))
    assert math.isnan(decide.sequential.search_estimate(pool, "g", "one", 1))
    assert math.isnan(decide.sequential.search_estimate(pool, "one", "c", 1))


def test_the_robust_layout_scale_counts_commits_of_three_layouts():
    """decide.layout_scale reads every commit with at least 3 layouts once SCALE_VALUES values are there:
    10 commits of 3 layouts (30 values) give the normal sd's estimate; 9 of them (27 values) give 0 (no clipping)."""
    pool = decide.Pool()
    for i in range(10):
        pool.add(f"c{i}", {f"random:{s}": [math.exp(v)] for s, v in ((1, -0.01), (2, 0.0), (3, 0.01))})
    assert decide.layout_scale(pool) == pytest.approx(0.01 / 0.6745)
    del pool.y["c9"]
    assert decide.layout_scale(pool) == 0.0
