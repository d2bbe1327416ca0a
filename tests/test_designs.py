"""bench/designs.py: the designs it measures beside the engine's are the ones it describes, and the engine
is as it was once they are measured."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
from conftest import ROOT, script

from layoutbench import decide
from layoutbench.decide import rounds, sequential
from layoutbench.decide.model import Pool
from layoutbench.decide.tracked import Tracked, measure_at

dz = script("bench/designs.py")


def pool_of(values: dict) -> Pool:
    pool = Pool()
    for c, y in values.items():
        pool.add(c, {i: [math.exp(float(v))] for i, v in enumerate(y)})
    return pool


def test_the_posterior_holds_the_place_the_levels_change_and_only_measured_commits_tell_places_apart():
    rng = np.random.default_rng(5)
    commits = [f"c{i}" for i in range(8)]
    y = {c: rng.normal(0.02 if i >= 5 else 0.0, 0.01, 12) for i, c in enumerate(commits)}
    p = dz.boundary_posterior(pool_of(y), commits, 0.01 ** 2)
    assert p.shape == (7,) and math.isclose(p.sum(), 1.0)
    assert int(np.argmax(p)) + 1 == 5 and p.max() > 0.99
    # reversed history and negated values: the same place, from the other end
    back = list(reversed(commits))
    q = dz.boundary_posterior(pool_of({c: -v for c, v in y.items()}), back, 0.01 ** 2)
    assert np.allclose(q, p[::-1])
    # only the ends measured: every place between them equally likely
    ends = dz.boundary_posterior(pool_of({commits[0]: y[commits[0]], commits[-1]: y[commits[-1]]}), commits, 1e-4)
    assert np.allclose(ends, 1.0 / 7)


def test_the_posterior_search_names_a_large_step_and_marks_what_it_measured():
    sc = dz.S.Scenario("step 5σL", "step", 5, sigma_r=0.003)
    original = rounds._rounds
    with dz.posterior_search():
        assert rounds._rounds is dz.posterior_rounds
        rs = [dz.F.one(sc, decide.Plan(), 400 + i) for i in range(4)]
    assert rounds._rounds is original
    for r in rs:
        assert r["right"] and not r["wrong"]
        assert r["probes"] == 0 and r["other"] > 0  # the search's runs: none of them a probe's


def test_the_first_look_moves_only_for_a_step_the_search_measured_small():
    plan = decide.Plan()
    m = math.log1p(plan.min_effect)
    s2, level = 0.0104 ** 2, decide.confirm_level(plan.alpha, 1)
    shipped = decide.confirm_looks(plan, s2, level, 1)
    saved = sequential.confirm, sequential.confirm_looks, rounds.confirm_looks
    with dz.first_look_from_estimate():
        looks = sequential.confirm_looks
        assert looks is rounds.confirm_looks and looks is not saved[1]
        for x, moved in ((1.5 * m, True), (2.9 * m, True), (3.1 * m, False), (10 * m, False)):
            tr = Tracked(object())  # a prober that cannot measure: the estimate is read before the engine's confirm
            tr.pool = pool_of({"a": [0.0, 0.001, -0.001], "b": [x, x + 0.001, x - 0.001]})
            try:
                sequential.confirm(tr, "a", "b", plan, 0, level=level, sign=1)
            except AttributeError:
                pass
            ns, last = looks(plan, s2, level, 1)
            assert ns[-1] == shipped[0][-1] and last == ns[-1]
            assert (ns[0] == dz.FIRST_AT) is moved and (ns == shipped[0]) is not moved
            # a plan whose endpoints already look first at FIRST_AT layouts keeps its own looks
            late = decide.Plan(layouts=dz.FIRST_AT)
            assert looks(late, s2, level, 1) == decide.confirm_looks(late, s2, level, 1)
    assert (sequential.confirm, sequential.confirm_looks, rounds.confirm_looks) == saved


def test_the_sprt_keeps_its_level_at_the_minimum_effect_and_shows_twice_it():
    m, s2, level = math.log1p(0.005), 0.0104 ** 2, 0.04
    at_m = dz.sprt(m, s2, m, level, 160, 4000)
    assert at_m["p_beyond"] <= level + 3 * math.sqrt(level / 4000)
    twice = dz.sprt(2 * m, s2, m, level, 160, 4000)
    assert twice["p_beyond"] > 0.9 and 0 < twice["mean_runs"] < at_m["mean_runs"] + 100
    assert dz.sprt(0.0, s2, m, level, 160, 4000)["p_beyond"] < at_m["p_beyond"]


def test_the_posterior_is_the_likelihood_with_both_levels_integrated_out():
    """Against a numerical integral over GOOD's and BAD's levels (flat priors) on a grid: the place
    probabilities of a short history with commits of unequal layouts."""
    rng = np.random.default_rng(11)
    commits = ["g", "x", "y", "b"]
    y = {"g": rng.normal(0.0, 0.01, 5), "x": rng.normal(0.0, 0.01, 2), "y": rng.normal(0.01, 0.01, 9),
         "b": rng.normal(0.01, 0.01, 3)}
    s2 = 0.01 ** 2
    got = dz.boundary_posterior(pool_of(y), commits, s2)
    grid = np.linspace(-0.05, 0.06, 2201)
    step = grid[1] - grid[0]

    def side(cs):  # log of the integral over one level of the product of the normal densities
        v = np.concatenate([y[c] for c in cs])  # (the pool holds the logs of exp(y): y)
        ll = -((v[None, :] - grid[:, None]) ** 2).sum(axis=1) / (2 * s2)
        return ll.max() + math.log(np.exp(ll - ll.max()).sum() * step)

    want = np.array([side(commits[:i]) + side(commits[i:]) for i in range(1, 4)])
    want = np.exp(want - want.max())
    assert np.allclose(got, want / want.sum(), atol=1e-6)


def test_the_posterior_search_stops_sure_and_marks_each_commit_on_its_side():
    sc = dz.S.Scenario("step 5σL", "step", 5, sigma_r=0.003)
    for seed in (410, 411, 412):
        p = dz.S.SimProber(sc, np.random.default_rng(seed))
        tr = decide.Tracked(p)
        for end in (p.names[0], p.names[-1]):
            measure_at(tr, end, 8, 1)  # the endpoints' layouts, as the search finds them
        journal = decide.MemoryJournal()
        probes, _ = dz.posterior_rounds([tr], p.names, decide.Plan(), journal, None, lambda *a: None, None, None)
        post = dz.boundary_posterior(tr.pool, p.names, tr.pool.var()[0])
        assert post.max() >= 1.0 - dz.POSTERIOR_EPS and int(np.argmax(post)) + 1 == p.steps[0]
        marks = journal.marks(None)
        assert probes == len(marks) > 0
        for c, e in marks.items():
            assert e["verb"] == ("bad" if p.names.index(c) >= p.steps[0] else "good")
            assert e["layouts"] == tr.pool.n(c)


def test_the_posterior_search_leaves_several_probers_and_a_resumed_segment_to_the_probes():
    sc = dz.S.Scenario("step 5σL", "step", 5, sigma_r=0.003)
    p = dz.S.SimProber(sc, np.random.default_rng(3))
    tr = decide.Tracked(p)
    saved = dz.ORIGINAL_ROUNDS
    dz.ORIGINAL_ROUNDS = lambda probers, *a: ("the probes", len(probers))
    try:
        journal = decide.MemoryJournal()
        two = dz.posterior_rounds([tr, tr], p.names, decide.Plan(), journal, None, print, None, None)
        assert two == ("the probes", 2)
        journal.record(None, p.names[3], sequential.Judgement("good", 4, 1))
        assert dz.posterior_rounds([tr], p.names, decide.Plan(), journal, None, print, None, None) == ("the probes", 1)
    finally:
        dz.ORIGINAL_ROUNDS = saved


class Levels:
    """A prober of commits c0..c{n-1} at fixed levels (log scale), a layout's value that level plus
    N(0, sd) drawn from (seed, commit), one run a layout."""

    higher_is_better = False

    def __init__(self, levels: list[float], sd: float = 0.01):
        self.names = [f"c{i}" for i in range(len(levels))]
        self.level, self.sd = dict(zip(self.names, levels)), sd

    def groups(self, commit, k: int, r: int) -> dict:
        i = self.names.index(commit)
        return {s: [math.exp(self.level[commit] + self.sd * np.random.default_rng((s, i)).standard_normal())]
                for s in range(1, k + 1)}


def search(levels: list[float], plan: decide.Plan = decide.Plan(), ends: int = 8):
    p = Levels(levels)
    tr = decide.Tracked(p)
    for end in (p.names[0], p.names[-1]):
        measure_at(tr, end, ends, 1)
    s2 = tr.pool.var()[0]
    cap = min(plan.max_layouts, 2 * decide.noise_cap(plan, s2, decide.plan.top_looks(plan), plan.alpha))
    journal = decide.MemoryJournal()
    probes, _ = dz.posterior_rounds([tr], p.names, plan, journal, None, lambda *a: None, None, None)
    return p, tr, journal.marks(None), probes, cap


def test_a_step_at_bad_itself_is_settled_by_measuring_bad_further():
    """The only commit after the step is BAD: its 8 layouts alone cannot settle a small step, so the
    search measures BAD on (GOOD little) until the place is sure."""
    p, tr, marks, probes, _ = search([0.0] * 7 + [0.008])
    post = dz.boundary_posterior(tr.pool, p.names, tr.pool.var()[0])
    assert post.max() >= 1.0 - dz.POSTERIOR_EPS and int(np.argmax(post)) == 6
    assert tr.pool.n("c7") >= 2 * tr.pool.n("c0")  # (GOOD measured on only while a middle commit looked bad)
    assert tr.ledger.probes == probes == len(marks)
    assert all(e["verb"] == "good" for e in marks.values())


def test_no_step_is_measured_to_the_cap_and_no_further():
    p, tr, marks, probes, cap = search([0.0] * 8, decide.Plan(test_layouts=6))
    post = dz.boundary_posterior(tr.pool, p.names, tr.pool.var()[0])
    assert post.max() < 1.0 - dz.POSTERIOR_EPS  # never sure where a step is: there is none
    assert max(tr.pool.n(c) for c in p.names[1:-1]) == cap
    assert tr.ledger.probes == probes == len(marks) > 0


def test_the_oracle_search_spends_nothing_and_hands_the_true_pair_to_the_confirmation():
    sc = dz.S.Scenario("step 1σL", "step", 1, sigma_r=0.003)
    with dz.oracle_search():
        rs = [dz.F.one(sc, decide.Plan(), 420 + i) for i in range(6)]
    assert rounds._rounds is dz.ORIGINAL_ROUNDS
    shown = [r for r in rs if r["ends_status"] == ["differs"]]
    assert shown  # (the endpoints showed the change: a search was asked for)
    for r in shown:
        assert r["probes"] == 0 and r["other"] == 0
        assert r["confirms"][0][:2] == r["truth"]
    saved = decide.plan.share_layouts
    with dz.oracle_search():  # two steps: the side beside the first begins at its culprit, a step of no search there
        assert decide.plan.share_layouts(decide.Plan(), 10) is None
        two = [dz.F.one(dz.S.twos()[0], decide.Plan(), 430 + i) for i in range(3)]
    assert decide.plan.share_layouts is saved
    assert all(r["both"] and not r["wrong"] and r["probes"] == r["other"] == 0 for r in two)


def judged_with(levels: list[float], flip: set = frozenset()):
    """Run recheck_rounds over a Levels history (GOOD and BAD at 8 layouts); every judge_probe call seen as
    (commit, level, verdict), and the first judgement of each commit in ``flip`` turned to the other side
    (a misjudged probe)."""
    p = Levels(levels)
    tr = decide.Tracked(p)
    for end in (p.names[0], p.names[-1]):
        measure_at(tr, end, 8, 1)
    calls, judge = [], sequential.judge_probe

    def spy(prober, probe, good, bad, plan, level=None):
        j = judge(prober, probe, good, bad, plan, level)
        if probe in flip and all(c != probe for c, _, _ in calls):
            j.verdict = {"good": "bad", "bad": "good"}.get(j.verdict, j.verdict)
        calls.append((probe, level, j.verdict))
        return j

    journal = decide.MemoryJournal()
    with dz.patched(sequential, judge_probe=spy):
        probes, _ = dz.recheck_rounds([tr], p.names, decide.Plan(), journal, None, lambda *a: None, None, None)
    return p, tr, journal.marks(None), probes, calls


def test_loose_probes_end_on_the_true_pair_each_judged_again_at_the_shipped_level():
    plan = decide.Plan()
    planned = decide.planned_probes(8)
    strict = 0.75 * plan.alpha / planned
    p, tr, marks, probes, calls = judged_with([0.0] * 5 + [0.03] * 3)
    lo, hi, cand = dz.marked_window(p.names, marks)
    assert (lo, hi, cand) == (4, 5, [])
    again = [(c, lv) for c, lv, _ in calls if lv == strict]
    assert sorted(c for c, _ in again) == ["c4", "c5"]  # the final pair, each once more at the shipped level
    loose = [lv for c, lv, _ in calls if lv != strict]
    assert loose and all(lv > strict for lv in loose)
    assert min(loose) == min(dz.LOOSE_TOP, dz.LOOSE * decide.probe_level(plan.alpha, 1, planned))
    assert probes == len(calls) == tr.ledger.probes + 2  # (the second judgements are not new probes)


def test_a_misjudged_probe_in_the_final_pair_is_judged_again_and_the_search_goes_on():
    # c3 is like GOOD; its first (loose) judgement is turned to bad: the window ends at (c2, c3), the
    # judgement of c3 again finds it good, and the search goes on to the true pair (c4, c5)
    p, tr, marks, probes, calls = judged_with([0.0] * 5 + [0.03] * 3, flip={"c3"})
    assert [v for c, _, v in calls if c == "c3"] == ["bad", "good"]
    assert dz.marked_window(p.names, marks)[:2] == (4, 5)
    assert marks["c3"]["verb"] == "good" and marks["c5"]["verb"] == "bad"
    # every judgement again is at the planned probes' level, those after the planned probes too
    planned, strict = decide.planned_probes(8), 0.75 * decide.Plan().alpha / decide.planned_probes(8)
    assert tr.ledger.probes > planned
    assert [c for c, lv, _ in calls if lv == strict] == ["c3", "c5", "c4"]
    # a step right after GOOD: the window ends at (GOOD, c1), and GOOD is never judged as a probe
    p, tr, marks, probes, calls = judged_with([0.0] + [0.03] * 7)
    assert dz.marked_window(p.names, marks)[:2] == (0, 1)
    assert "c0" not in {c for c, _, _ in calls} and [c for c, lv, _ in calls if lv == strict] == ["c1"]


def test_the_endpoints_screen_only_the_range_and_the_engine_is_put_back():
    seen, endpoints = [], sequential.endpoints

    def spy(prober, good, bad, plan, level=None, cap=None, **kw):
        seen.append(level)
        return endpoints(prober, good, bad, plan, level=level, cap=cap, **kw)

    sc = dz.S.Scenario("two steps", "two", 3, sigma_r=0.003)
    with dz.patched(sequential, endpoints=spy):
        with dz.endpoints_as_a_screen():
            r = dz.F.one(sc, decide.Plan(), 7)
        assert sequential.endpoints is spy
    assert sequential.endpoints is endpoints and r["both"]
    assert seen[0] == dz.SCREEN and len(seen) > 1 and all(lv is not None and lv < dz.SCREEN for lv in seen[1:])


def test_the_confirmation_table_is_the_engines_first_confirmation_beside_its_variants():
    c = dz.confirmation_table(2000)
    plan = decide.Plan()
    assert c["level"] == decide.confirm_level(plan.alpha, 1)
    assert math.isclose(c["s"], math.hypot(0.01, 0.003))  # a layout's sd: sigma_L 1% and one run of sigma_R 0.3%
    rows = {r["design"]: r for r in c["rows"]}
    shipped = decide.confirm_looks(plan, c["s"] ** 2, c["level"], 1)[0]
    assert rows["as shipped"]["looks"] == list(shipped)
    for f in dz.FIRSTS:
        ns = rows[f"first look {f}, x{dz.GROWTH_FAR:g} beyond"]["looks"]
        assert ns[0] == f and ns[-1] == shipped[-1]  # the same reach, looked at from f
        far = [b / a for a, b in zip(ns, ns[1:]) if a >= plan.cap]
        assert far and max(far) <= dz.GROWTH_FAR + 0.1  # (ceil: a look one layout past x1.15)
    assert math.isclose(rows["Wald's SPRT, m against 2m"]["boundary"], math.log(1 / c["level"]))
    for r in c["rows"]:
        at_m, twice = r["cells"][dz.STEPS.index(1.0)], r["cells"][dz.STEPS.index(2.0)]
        assert at_m["p"] <= c["level"] + 0.015 and twice["p"] > 0.9  # its level at the band's edge, power at 2x


def test_the_command_line_names_what_it_refuses():
    for args, words in ((["--rows", "9"], "neither a row"), (["--designs", "nope"], "unknown nope"),
                        (["--only", "frontier"], "unknown section")):
        p = subprocess.run([sys.executable, "-m", "bench.designs", *args], capture_output=True, text=True, cwd=ROOT)
        assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "bench.designs", "--only", "confirmation", "--paths", "500", "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    got = json.loads(p.stdout)
    assert p.returncode == 0 and len(got["confirmation"]["rows"]) == len(dz.FIRSTS) + 2 and "bisection" not in got
