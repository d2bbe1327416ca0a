"""The engine's rules with exact expectations: the TOST half below 2 df, the rounds needed, the
expected cost of no change, an outcome's bound, a budget note's names, a farm's machines,
--first-only after an unconfirmed step, the verdict's step, a round's threads, the documented
settings, the run noise, two-sided confirmations, the quiet cap.  Synthetic probers only (fast:
bench/mutate.py runs these files against every mutant of layoutbench/decide/)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from _probers import Offsets, Same
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


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
    # the probes' levels are stated as levels: their SPRT plugs in measured means, so no bound is claimed for them
    assert "the probes' levels sum to at most 5% (a level, not a bound" in one and "per round" not in one
    assert "misjudged with probability" not in one
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


def test_first_only_after_an_unconfirmed_step_searches_beside_it_and_stops_at_the_first_confirmed():
    """--first-only stops after the first *confirmed* step.  A 4% step at c3 (below the 5% minimum
    effect: its confirmation cannot show it beyond the band) and a 30% step at c6: the first step found
    is c3, uncertain; the side tests then run, the range after c3 first (it holds the larger change),
    its step c6 is found and confirmed -- and the range before c3 is then not tested."""
    names = [f"c{i}" for i in range(8)]
    p = Offsets({c: 0.04 * (i >= 3) + 0.3 * (i >= 6) for i, c in enumerate(names)})
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
        q = decide.Tracked(Offsets({c: 0.1 * (i >= 2) for i, c in enumerate(names)}))
        q.name = nm
        ps.append(q)
    marks = {"c1": {"verb": "good", "layouts": 5, "runs": 1, "target": "B"},
             "c2": {"verb": "bad", "layouts": 3, "runs": 1}}
    decide.rounds._reload(ps, marks, "c0", "c3", decide.Plan())
    a, b = ps[0].pool, ps[1].pool
    assert (b.n("c1"), b.n("c0"), b.n("c3"), a.n("c1")) == (5, 5, 5, 0)
    assert (a.n("c2"), a.n("c0"), b.n("c2")) == (3, 3, 0)
    # a mark's own runs a layout, not the plan's; a mark without layouts puts nothing into the pool
    q = decide.Tracked(Offsets({c: 0.0 for c in names}))
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
        decide.bisect_range(Offsets(off), names, decide.Plan(budget=budget), decide.MemoryJournal(), say=said.append)
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
            st, _, _ = decide.rounds.k_step([decide.Tracked(Offsets({"g": 0.0, "b": s}))], ["g", "b"], plan,
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

    class Exact(Same):
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
        c, k, _ = decide.confirm(decide.Tracked(Offsets({"g": 0.0, "b": s})), "g", "b", decide.Plan(), used=4)
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
