"""More of layoutbench.decide with exact expectations, where a mutation run found no test: how a
probe's looks grow, the residual record of a sub-range shown to differ where no step was then
found, and the runs a budget's note says are left.  Synthetic probers only (fast: bench/mutate.py
runs this file against every mutant of layoutbench/decide/)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


class _Same:
    """Every commit has the same value at each seed (one run a layout; the layout effect's size is
    ``spread``): a probe is shown neither like GOOD nor like BAD, so it looks until its cap.
    Records the layouts asked at each call."""

    higher_is_better = False

    def __init__(self, spread: float = 0.01):
        self.vals = [spread * math.sin(3 * s) for s in range(1, 257)]
        self.asked: list[tuple[str, int]] = []

    def groups(self, c, k, r):
        self.asked.append((c, k))
        return {f"random:{s + 1}": [math.exp(v)] for s, v in enumerate(self.vals[:k])}


# -- (a) judge_probe's looks -------------------------------------------------------------------------

def test_a_probe_looks_at_3_layouts_then_one_more_each_time_up_to_its_cap():
    """k -> min(cap, k + 1) from MIN_LAYOUTS = 3: the probe's tests (Wald's SPRT, the two mixture
    SPRTs) are valid whenever they are read, so each layout added is a look, and the last look is
    exactly the cap (twice the quiet cap of 40 here; max_layouts when smaller).  The endpoints are
    measured to the same layouts before each look of the probe."""
    p = _Same()
    j = decide.judge_probe(p, "p", "g", "b", decide.Plan())
    looks = list(range(3, 81))
    assert [k for c, k in p.asked if c == "p"] == looks
    assert [k for c, k in p.asked if c == "g"] == [k for c, k in p.asked if c == "b"] == looks
    assert p.asked[:3] == [("g", 3), ("b", 3), ("p", 3)]
    assert (j.verdict, j.note, j.layouts, j.runs) == ("uncertain", "looks spent", 80, 1)
    p = _Same()
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


# -- (b) a residual shown to differ where no step was found -------------------------------------------

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


# -- (c) _more_runs: the runs a budget's note says are left ---------------------------------------------

class _NoLog:
    """A journal as layoutbench.bisect's: marks and record, no ``log`` of its own."""

    def __init__(self):
        self._m = decide.MemoryJournal()

    def marks(self, segment):
        return self._m.marks(segment)

    def record(self, *a, **kw):
        self._m.record(*a, **kw)


def _ctx(journal, plan):
    names = [f"c{i}" for i in range(17)]
    return decide.search.SearchContext([decide.Tracked(_Same())], names, plan, journal, lambda m: None, None)


def test_more_runs_from_the_plans_layouts_when_the_journal_has_no_marks_or_no_log():
    """(probes left + a confirmation's 2) x layouts x runs: probes left = ceil(log2(hi - lo)), at
    least 1; layouts = the most a mark took, at least the plan's K; a journal without a log (as
    layoutbench.bisect's) or with an empty one: the plan's K."""
    plan = decide.Plan(layouts=5, runs=2)
    nolog = _NoLog()
    nolog.record(None, "c3", decide.Judgement("good", layouts=9, runs=2))
    for j in (decide.MemoryJournal(), nolog):
        ctx = _ctx(j, plan)
        assert decide.search._more_runs(ctx, ctx.commits, 0, 9) == (4 + 2) * 5 * 2
        assert decide.search._more_runs(ctx, ctx.commits, 0, 8) == (3 + 2) * 5 * 2
        assert decide.search._more_runs(ctx, ctx.commits, 3, 4) == (1 + 2) * 5 * 2
        assert decide.search._more_runs(ctx, ctx.commits, 4, 4) == (1 + 2) * 5 * 2
    mem = decide.MemoryJournal()
    mem.record(None, "c8", decide.Judgement("bad", layouts=3, runs=2))
    assert decide.search._more_runs(_ctx(mem, plan), [], 0, 9) == 6 * 5 * 2  # a mark below K: K
    mem.record(None, "c4", decide.Judgement("uncertain", layouts=9, runs=2))
    assert decide.search._more_runs(_ctx(mem, plan), [], 0, 9) == 6 * 9 * 2  # the most a mark took


def test_a_budgets_note_counts_the_marks_layouts_only_when_the_journal_keeps_them():
    """The same bisection (2 sigma_L step, 16 commits) stopped at 40 runs with a window of 4
    commits left: 2 probes and a confirmation, at the 7 layouts its marks took (in memory) or at
    the plan's K = 4 (a journal without a log)."""
    notes = []
    for j in (decide.MemoryJournal(), _NoLog()):
        p = sim.SimProber(sim.Scenario("s", "step", 2.0, commits=16, sigma_r=0.003), np.random.default_rng(4))
        out = decide.bisect_range(p, p.names, decide.Plan(budget=40), j)
        assert out.status == "budget" and [c for c, _ in out.candidates] == ["c9", "c10", "c11", "c12"]
        notes.append(int(re.search(r"about (\d+) more runs would decide$", out.note).group(1)))
    assert notes == [(2 + 2) * 7, (2 + 2) * 4]


# -- (d) small exact pieces a mutation run found untested ----------------------------------------------

def test_tost_half_is_infinite_below_2_df_and_zero_with_no_spread_from_2_df():
    """With se 0 the equivalence interval has no width once the variance has 2 df (0.0), and
    below 2 df there is no interval at all (inf), whatever the se."""
    z = decide.ZTest(est=0.0, se=0.0, df=2, na=3, nb=3)
    assert z.tost_half(1.64) == 0.0
    assert decide.ZTest(est=0.0, se=0.0, df=1, na=3, nb=3).tost_half(1.64) == math.inf
    assert decide.ZTest(est=0.0, se=0.1, df=1, na=3, nb=3).tost_half(1.64) == math.inf
    assert decide.ZTest(est=0.0, se=0.1, df=2, na=3, nb=3).tost_half(1.64) > 0.1
    # ... so the group-sequential interval is the whole line below 2 df, a point with no spread from 2
    inf = math.inf
    for sign, whole in ((0, (-inf, inf)), (1, (-inf, inf)), (-1, (-inf, inf))):
        assert decide.ZTest(est=0.1, se=0.1, df=1, na=3, nb=3).interval((3,), 0.05, sign) == whole
        assert decide.ZTest(est=0.1, se=0.0, df=1, na=3, nb=3).interval((3,), 0.05, sign) == whole
    assert decide.ZTest(est=0.1, se=0.0, df=2, na=3, nb=3).interval((3,), 0.05) == (0.1, 0.1)
    assert decide.ZTest(est=0.1, se=math.nan, df=4, na=3, nb=3).interval((3,), 0.05) == (-inf, inf)


def test_rounds_needed_is_1_when_one_round_of_k_probes_covers_the_range():
    """ceil(log_(k+1)(n - 1)): 3 commits with one prober (a single probe) or 5 with 3 probers: one
    round; 4 commits with one prober: two."""
    assert decide.rounds_needed(3, 1) == 1 and decide.rounds_needed(5, 3) == 1
    assert decide.rounds_needed(2, 1) == 1 and decide.rounds_needed(4, 1) == 2
    assert decide.rounds_needed(17, 1) == 4 and decide.rounds_needed(17, 3) == 2
    assert decide.planned_probes(5, 3) == 3


def test_expected_cost_of_no_change_is_the_endpoints_to_the_quiet_cap():
    """ratio 1 (d = 0): the simulated endpoints show nothing and look to the plan's cap; no probe."""
    from layoutbench import forecast
    plan = decide.Plan()
    e = forecast.expected_cost(10, 1.0, 0.01, plan)
    assert e["step_in_noise_units"] == 0.0 and e["endpoint_layouts"] == plan.cap and e["probes"] == 0


def test_an_outcomes_bound_states_the_level_and_the_farm():
    ends = decide.Ends.__new__(decide.Ends)
    one = decide.Outcome("found", ends, alpha=0.05).bound()
    assert one.startswith("a range without a code change is blamed with probability <= 5% ")
    assert "any probe misjudged with probability <= 5% (every probe counted)" in one and "per round" not in one
    two = decide.Outcome("found", ends, alpha=0.01, k=2).bound()
    assert "<= 1% (the endpoints'" in two
    assert two.endswith("; 2 probes per round, each against GOOD and BAD measured on its own machine")


class _LongNames:
    """A SimProber whose commits are named as git names them (40 characters): c9 -> 'c9' padded."""

    def __init__(self, p):
        self.p, self.higher_is_better = p, p.higher_is_better
        self.names = [f"{n}{'abcdef0123456789' * 3}"[:40] for n in p.names]
        self._short = dict(zip(self.names, p.names))

    def groups(self, c, k, r):
        return self.p.groups(self._short[c], k, r)

    def groups_after(self, c, first, k, r):
        return self.p.groups_after(self._short[c], first, k, r)


def test_a_budgets_note_names_the_candidates_by_their_first_12_characters():
    """The budget test's bisection with 40-character names: the note lists c9 .. c12 abbreviated to
    12 characters, each with its probability in whole percent."""
    p = _LongNames(sim.SimProber(sim.Scenario("s", "step", 2.0, commits=16, sigma_r=0.003), np.random.default_rng(4)))
    out = decide.bisect_range(p, p.names, decide.Plan(budget=40), decide.MemoryJournal())
    assert out.status == "budget" and [c[:3] for c, _ in out.candidates] == ["c9a", "c10", "c11", "c12"]
    listed = re.search(r"the step is among (.*); about", out.note).group(1).split(", ")
    assert listed == [f"{c[:12]} ({100 * q:.0f}%)" for c, q in out.candidates]
    assert all(re.fullmatch(r"c\d+[0-9a-f]+ \(\d+%\)", s) and len(s.split()[0]) == 12 for s in listed)


def test_a_farm_of_two_names_the_machine_of_each_probe():
    """Two probers with names (machines A and B): each probe line says which one measured it
    ("probe c.. on A"), each judgement line ends with [A] / [B]; a single named prober says neither."""
    def run(names):
        ps = []
        for i, nm in enumerate(names):
            q = sim.SimProber(sim.Scenario("s", "step", 5.0, commits=8, sigma_r=0.003), np.random.default_rng(4))
            q.name = nm
            ps.append(q)
        lines: list[str] = []
        decide.bisect_range(ps if len(ps) > 1 else ps[0], ps[0].names, decide.Plan(), decide.MemoryJournal(),
                            say=lines.append)
        return lines
    two = run(["A", "B"])
    probes = [s for s in two if s.startswith("probe ")]
    assert probes and all(re.match(r"probe c\d+ on [AB] \(", s) for s in probes)
    assert {s.split()[3] for s in probes} == {"A", "B"}
    assert any(s.endswith(" [A]") for s in two) and any(s.endswith(" [B]") for s in two)
    one = run(["A"])
    assert [s for s in one if s.startswith("probe ")] and not any(" on A" in s or "[A]" in s for s in one)


# -- (e) the confirmation inside a step ------------------------------------------------------------------

class _Offsets:
    """Fixed values: commit c at seed s is exp(off[c] + 0.01 sin(3 s)) (one shared layout effect,
    no run noise).  Records the fresh seeds (first, k) asked of each commit."""

    higher_is_better = False

    def __init__(self, off):
        self.off, self.fresh = off, {}

    def groups(self, c, k, r):
        return self.groups_after(c, 0, k, r)

    def groups_after(self, c, first, k, r):
        self.fresh.setdefault(c, []).append((first, k))
        return {f"random:{s}": [math.exp(self.off[c] + 0.01 * math.sin(3 * s))] * r
                for s in range(first + 1, first + k + 1)}


def test_a_step_whose_endpoints_were_never_measured_is_confirmed_in_either_direction():
    """GOOD and BAD adjacent and unmeasured (the window already one commit wide): no sign of the
    range's change is known, so the confirmation is two-sided and a 20% drop is found, on fresh
    seeds after the plan's K."""
    p = _Offsets({"g": 0.0, "b": -0.2})
    st, probes, rounds = decide.rounds.k_step([decide.Tracked(p)], ["g", "b"], decide.Plan(), decide.MemoryJournal(),
                                        None, lambda m: None)
    assert (st.status, st.culprit, probes, rounds) == ("found", "b", 0, 0)
    assert st.effect == pytest.approx(-0.2) and p.fresh["g"][0][0] == 4


def test_a_confirmation_looks_past_its_cap_only_while_it_could_show_twice_the_minimum_effect():
    """A confirmation's looks go on to CONFIRM_FAR x its cap (the plan's cap, 40, for the first;
    CONFIRM_LATER, 64, for a later one) and stop (futility) once, carried on to the last, they would
    more likely miss a step of twice the minimum effect than show it.  Every layout alike on both
    sides (a layout sd of 0.7%): a 0.75% step (between the minimum effect and twice it) is shown
    beyond the band only past the cap (the looks there x1.25, CONFIRM_GROWTH), the first at 155 fresh
    layouts a side (of up to 160), the second at 197 (of up to 256); a null step (the third) stops at
    80, long before its last look
    (mutation: without the futility stop it goes to 256).  Without the share bound (confirm_share 1):
    tests/test_decide_near.py has the bound."""
    p = _Offsets({"g": 0.0, "b": 0.0075, "g2": 0.0, "b2": 0.0075, "g3": 0.0, "b3": 0.0})
    tr, plan = decide.Tracked(p), decide.Plan(confirm_share=1.0)
    st1, _, _ = decide.rounds.k_step([tr], ["g", "b"], plan, decide.MemoryJournal(), None, lambda m: None)
    st2, _, _ = decide.rounds.k_step([tr], ["g2", "b2"], plan, decide.MemoryJournal(), None, lambda m: None)
    st3, _, _ = decide.rounds.k_step([tr], ["g3", "b3"], plan, decide.MemoryJournal(), None, lambda m: None)
    assert (st1.status, st2.status, st3.status) == ("found", "found", "uncertain")
    assert (st1.confirm_layouts, st2.confirm_layouts) == (155, 197)
    assert plan.cap < 155 <= decide.CONFIRM_FAR * plan.cap and decide.CONFIRM_LATER < 197 <= 4 * 64
    assert [k for _, k in p.fresh["b"]][7:13] == [50, 63, 79, 99, 124, 155]  # x1.25 a look past the cap of 40
    assert st3.confirm_layouts == 80 and p.fresh["b3"][-1][1] == 80


# -- (f) judge_probe: the note of a bad probe, the cap from the pool's variance -------------------------

def test_a_probe_like_bad_is_bad_without_the_between_note_and_one_between_has_it():
    """BAD 20% above GOOD (no noise but the shared layout effect): a probe equal to BAD differs from
    GOOD only -- "bad", no note; one 10% above GOOD differs from both -- "between" with the note."""
    p = _Offsets({"g": 0.0, "b": 0.2, "p": 0.2, "q": 0.1})
    j = decide.judge_probe(p, "p", "g", "b", decide.Plan())
    assert (j.verdict, j.note) == ("bad", "") and "either side" not in j.describe()
    j = decide.judge_probe(p, "q", "g", "b", decide.Plan())
    assert (j.verdict, j.note) == ("between", "differs from both GOOD and BAD: a change on either side")


def test_a_probes_cap_comes_from_the_pooled_variance_measured_before_it():
    """With the endpoints already measured at a quiet benchmark (pooled variance ~5e-5 on 8 df) a
    never-deciding probe looks to twice the quiet cap (80), not on to max_layouts (256)."""
    p, plan = _Same(), decide.Plan()
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
    p = _Same(spread)
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


# -- (g) --first-only after a step that was not confirmed; the threads of a round; the documented settings --

def test_first_only_after_an_unconfirmed_step_searches_beside_it_and_stops_at_the_first_confirmed():
    """--first-only stops after the first *confirmed* step.  A 4% step at c3 (below the 5% minimum
    effect: its confirmation cannot show it beyond the band) and a 30% step at c6: the first step found
    is c3, uncertain; the side tests then run, the range after c3 first (it holds the larger change),
    its step c6 is found and confirmed -- and the range before c3 is then not tested."""
    names = [f"c{i}" for i in range(8)]
    p = _Offsets({c: 0.04 * (i >= 3) + 0.3 * (i >= 6) for i, c in enumerate(names)})
    out = decide.bisect_range(p, names, decide.Plan(first_only=True, min_effect=0.05), decide.MemoryJournal())
    assert [(s.culprit, s.status) for s in out.steps] == [("c3", "uncertain"), ("c6", "found")], out.steps
    assert out.status == "found" and [(r["good"], r["bad"]) for r in out.sides] == [("c3", "c7")]
    assert out.first_step is out.steps[1] and out.culprit == "c6"  # the verdict is about the confirmed step


def test_a_verdict_is_about_the_earliest_confirmed_step_else_the_earliest_looked_at():
    def step(c, status):
        return decide.Step(status, "c0", c)

    def out(*steps, status="found"):
        return decide.Outcome(status, None, steps=list(steps))

    u3, u6, f6, f9 = step("c3", "uncertain"), step("c6", "uncertain"), step("c6", "found"), step("c9", "found")
    assert out(u3, u6, status="uncertain").first_step is u3 and out(u3, u6, status="uncertain").culprit is None
    assert out(u3, f6, f9).first_step is f6 and out(u3, f6, f9).culprit == "c6"
    assert out(u3, f6, status="budget").first_step is f6 and out(u3, f6, status="budget").culprit is None
    assert out(status="uncertain").first_step is None and out(status="uncertain").culprit is None


def test_a_round_of_several_probers_ends_its_threads_with_the_bisection():
    """A farm's probes of one round are judged in threads; they are joined when the step is
    found (a long bisection of many ranges does not keep one idle pool per range)."""
    import threading

    before = {t.ident for t in threading.enumerate()}
    ps = []
    for nm in ("A", "B", "C"):
        q = sim.SimProber(sim.Scenario("s", "step", 5.0, commits=16, sigma_r=0.003), np.random.default_rng(4))
        q.name = nm
        ps.append(q)
    out = decide.bisect_range(ps, ps[0].names, decide.Plan(first_only=True), decide.MemoryJournal())
    assert out.status == "found" and out.rounds >= 1
    assert [t.name for t in threading.enumerate() if t.ident not in before] == []


def test_the_settings_how_it_decides_states_are_the_engines():
    """docs/how-it-decides.md names the side tests' settings beside their constants; the numbers it
    gives are the ones the engine uses."""
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parent.parent / "docs/how-it-decides.md").read_text().split())
    stated = {
        "SIDE_FIRST": r"at least (\d+) a side, `decide\.SIDE_FIRST`",
        "RESIDUAL_FAR": r"up to (\d+) a side \(`decide\.RESIDUAL_FAR`\)",
        "SIDE_A": r"at least ([\d.]+) times as likely as no step \(`decide\.SIDE_A`",
        "THOROUGH_FIRST": r"`--thorough` starts side tests at (\d+) layouts a side",
        "THOROUGH_A": r"a second step is at least ([\d.]+) times as likely as none \(`THOROUGH_FIRST`, `THOROUGH_A`\)",
    }
    for name, pattern in stated.items():
        m = re.search(pattern, text)
        assert m, f"docs/how-it-decides.md no longer states {name} as {pattern!r}"
        assert float(m.group(1)) == getattr(decide.plan, name), name


def test_the_run_noise_is_judged_from_two_layouts_of_two_runs_and_not_from_one():
    """run_scale: the median |difference| of two runs of a layout / (sqrt 2 x 0.6745), from two
    layouts with two runs each at least; one such layout (whatever its other single runs) gives 0."""
    two = [np.log([1.0, 1.1]), np.log([2.0, 2.2])]
    assert decide.run_scale(two) == pytest.approx(math.log(1.1) / (math.sqrt(2.0) * 0.6745))
    assert decide.run_scale(two[:1] + [np.log([3.0]), np.log([4.0])]) == 0.0
    assert decide.run_scale([np.log([1.0, 1.0]), np.log([2.0, 2.0])]) == 0.0  # the runs agree


def test_a_resumed_farm_pools_each_marks_layouts_on_the_machine_that_judged_it():
    """_reload: a mark judged on machine B goes back into B's pool (with GOOD and BAD as far), one
    with no machine named into the first prober's."""
    names = [f"c{i}" for i in range(4)]
    ps = []
    for nm in ("A", "B"):
        q = decide.Tracked(_Offsets({c: 0.1 * (i >= 2) for i, c in enumerate(names)}))
        q.name = nm
        ps.append(q)
    marks = {"c1": {"verb": "good", "layouts": 5, "runs": 1, "target": "B"},
             "c2": {"verb": "bad", "layouts": 3, "runs": 1}}
    decide.rounds._reload(ps, marks, "c0", "c3", decide.Plan())
    a, b = ps[0].pool, ps[1].pool
    assert (b.n("c1"), b.n("c0"), b.n("c3"), a.n("c1")) == (5, 5, 5, 0)
    assert (a.n("c2"), a.n("c0"), b.n("c2")) == (3, 3, 0)
    # a mark's own runs a layout, not the plan's; a mark without layouts puts nothing into the pool
    q = decide.Tracked(_Offsets({c: 0.0 for c in names}))
    decide.rounds._reload([q], {"c1": {"verb": "good", "layouts": 4, "runs": 2}, "c2": {"verb": "bad", "layouts": 0}},
                          "c0", "c3", decide.Plan())
    assert q.ledger.spent == 3 * 4 * 2 and "c2" not in q.pool.seq


def test_the_side_tests_and_the_confirmation_say_where_they_are_and_the_runs_of_the_budget():
    """Two steps (c3, c6), every change point searched: each side test's line names its range as
    before or after the step it flanks; with a budget the confirmation's line says the runs spent
    "of" it, without one it does not."""
    names = [f"c{i}" for i in range(8)]
    off = {c: 0.2 * (i >= 3) + 0.3 * (i >= 6) for i, c in enumerate(names)}
    for budget in (None, 100_000):
        said: list[str] = []
        decide.bisect_range(_Offsets(off), names, decide.Plan(budget=budget), decide.MemoryJournal(), say=said.append)
        sides = [s for s in said if s.startswith("side test ") and "(the range" in s]
        assert any(s.startswith("side test c0..c2 (the range before the step at c3;") for s in sides), sides
        assert any(s.startswith("side test c3..c7 (the range after the step at c3;") for s in sides), sides
        conf = [s for s in said if s.startswith("confirmation ") and "on fresh layouts (" in s]
        assert conf and all(re.search(r"\(\d+ runs spent( of 100000)?\)$", s) for s in conf), conf
        assert all((" of 100000)" in s) == (budget is not None) for s in conf), conf


def test_a_two_sided_confirmation_is_symmetric_and_ends_at_its_last_look_without_a_verdict():
    """Endpoints never measured (the direction unknown): the confirmation is two-sided, so a step up
    and the same step down stop at the same look (0.3%: futility at 63 layouts a side); a 0.7% step
    (above the minimum effect, not beyond its band) is looked at up to the look before the last
    (155 of 4 x the cap, 160: there the last 5 layouts could no longer show it, futility), and is then
    a change shown but not a confirmed step: the step says so (``shown``), and the
    reason names the direction (the last, a drop of a time, is faster).  Without the share bound."""
    plan = decide.Plan(confirm_share=1.0)
    for d, k in ((0.003, 63), (0.007, 155)):
        for s in (d, -d):
            st, _, _ = decide.rounds.k_step([decide.Tracked(_Offsets({"g": 0.0, "b": s}))], ["g", "b"], plan,
                                             decide.MemoryJournal(), None, lambda m: None)
            c = st.confirmation
            assert (st.status, st.confirm_layouts, c.verdict) == ("uncertain", k, "no difference"), (s, st)
            assert st.shown == ("change" if d == 0.007 else "none") and not st.bounded
    assert k < decide.CONFIRM_FAR * plan.cap
    assert c.reason == "shown faster but not shown to exceed the 0.5% minimum effect"


def test_a_noisy_pool_stops_at_the_quiet_cap_once_a_change_the_size_of_the_band_is_unlikely():
    """Endpoints alike (a null history) at a layout noise of 1.2%: the pool is noisy enough that
    noise_cap lies beyond the quiet cap of 40, yet at the look at exactly 40 the estimate plus
    z(0.9) standard errors is already below the minimum effect (seed 0): the test stops there,
    not shown, rather than going on to 60.  Where the estimate is still large enough (seed 2) it
    goes on to the next look."""
    ends = {}
    for seed in (0, 2):
        p = sim.SimProber(sim.Scenario("n", "null", commits=1, sigma_l=0.012), np.random.default_rng(seed))
        ends[seed] = decide.endpoints(p, p.names[0], p.names[-1], decide.Plan())
    assert (ends[0].status, ends[0].layouts) == ("not-shown", 40) and decide.Plan().cap == 40
    assert (ends[2].status, ends[2].layouts) == ("not-shown", 60)


def test_a_display_without_a_pooled_noise_is_the_paired_comparison_of_the_layouts():
    """Before the pool has a variance (its z test's se is not finite) a comparison is still shown to
    people: the paired t comparison of the two commits' layouts as they are, not the decision's
    interval (which has none yet)."""
    from layoutbench.decide import sequential

    p = sim.SimProber(sim.Scenario("s", "step", 3.0, commits=2, sigma_l=0.01), np.random.default_rng(3))
    a, b = p.names[0], p.names[-1]
    t = decide.ZTest(0.0, math.nan, 0, 4, 4)
    shown = sequential._display(p, (a, b), 4, 1, t, decide.Looks(0.05), 0.005)
    paired = sequential.change(p.groups(a, 4, 1), p.groups(b, 4, 1), False, 0.05, 0.005)
    assert shown is not None and (shown.ratio, shown.ci_low, shown.ci_high, shown.verdict) == (
        paired.ratio, paired.ci_low, paired.ci_high, paired.verdict)
    assert shown.n_layouts_a == shown.n_layouts_b == 4


def test_a_probe_at_zero_layout_noise_is_judged_at_its_first_look():
    """A benchmark that layout does not move (every layout of a commit gives the same value, the
    pooled variance is 0): a probe equal to BAD, 10% from GOOD, is bad at its first look of 3
    layouts -- its position test has no variance to divide by and is left out, not a crash."""

    class Exact(_Same):
        def groups(self, c, k, r):
            self.asked.append((c, k))
            return {f"random:{s + 1}": [1.1 if c in ("b", "p") else 1.0] for s in range(k)}

    tr = decide.Tracked(Exact(0.0))
    for c in ("g", "b"):
        decide.tracked.measure_at(tr, c, 5, 1)
    assert tr.pool.var()[0] == 0.0
    j = decide.judge_probe(tr, "p", "g", "b", decide.Plan())
    assert (j.verdict, j.layouts, j.position) == ("bad", 3, 1.0)


def test_a_confirmation_given_no_direction_confirms_a_step_either_way():
    """decide.confirm without ``sign`` tests both directions: a 3% step up and the same step down
    are both confirmed beyond the 0.5% minimum effect, each in its own direction."""
    for s, verdict in ((0.03, "slower"), (-0.03, "faster")):
        c, k, _ = decide.confirm(decide.Tracked(_Offsets({"g": 0.0, "b": s})), "g", "b", decide.Plan(), used=4)
        assert c is not None and c.significant and c.verdict == verdict, (s, c)


def test_each_probe_of_a_round_is_judged_at_its_own_level():
    """Three probers, one round of three probes, the bisection's probe count just below its planned
    probes: the first probe of the round is the last planned one (3/4 alpha / planned), the next
    two are beyond the plan (a quarter of alpha spread over them) -- each judged at its own level,
    and each mark recorded for the commit its prober judged."""

    class Levels(decide.MemoryJournal):
        def __init__(self):
            super().__init__()
            self.levels: list[tuple[str, float]] = []
            self.verdicts: list[tuple[str, str]] = []

        def record(self, segment, commit, j, target=None):
            self.levels.append((commit, j.level))
            self.verdicts.append((commit, j.verdict))
            super().record(segment, commit, j, target)

    sc = sim.Scenario("s", "step", 5.0, commits=16, sigma_r=0.003)
    trs = [decide.Tracked(sim.SimProber(sc, np.random.default_rng(4))) for _ in range(3)]
    for t in trs[1:]:
        t.ledger = trs[0].ledger
    commits = sim.SimProber(sc, np.random.default_rng(4)).names
    planned = decide.planned_probes(len(commits), 3)
    trs[0].ledger.probes = planned - 1
    j = Levels()
    decide.rounds.k_step(trs, commits, decide.Plan(), j, None, lambda m: None)
    first_round = j.levels[:3]
    a = decide.Plan().alpha
    assert [lv for _, lv in first_round] == [pytest.approx(decide.probe_level(a, planned + i, planned)) for i in range(3)]
    assert len({lv for _, lv in first_round}) == 3  # three different levels: the order matters
    # and each mark is the judgement of the commit it names (a 5 sigma step: every probe is clear)
    step = commits[sim.SimProber(sc, np.random.default_rng(4)).steps[0]]
    assert [v for _, v in j.verdicts] == ["bad" if commits.index(c) >= commits.index(step) else "good"
                                          for c, _ in j.verdicts]
    assert {"good", "bad"} <= {v for _, v in j.verdicts[:3]}
