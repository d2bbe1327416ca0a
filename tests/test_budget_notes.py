"""The runs a budget's note says are left (from the plan's layouts, and the marks' layouts when the
journal keeps them).  Synthetic probers only."""

from __future__ import annotations

import re

import numpy as np
from _probers import Same
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


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
    return decide.search.SearchContext([decide.Tracked(Same())], names, plan, journal, lambda m: None, None)


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
