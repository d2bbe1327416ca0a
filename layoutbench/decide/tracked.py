"""Measuring through a prober: which seeds each commit was asked for (the fresh ones lie beyond),
the pooled model of what was measured, and the runs spent against the budget."""

from __future__ import annotations

import numpy as np

from .model import Pool
from .plan import OutOfBudget


class _Ledger:
    """Runs measured by all probers of one bisection, against the budget."""

    def __init__(self, budget: int | None = None):
        self.budget, self.spent = budget, 0
        self.top = 0  #: the highest seed index any call measured, on any commit (fresh seeds lie beyond)
        self.probes = self.confirmations = self.residuals = 0


def groups_after(prober, commit, first: int, k: int, r: int) -> dict:
    """The groups of the seeds after the first ``first`` (``first`` + 1 .. ``first`` + k): through
    the prober's ``groups_after(commit, first, k, r)`` when it has one (only those layouts are
    measured), else the last k of ``groups(commit, first + k, r)`` (the first ``first`` are
    measured too)."""
    if hasattr(prober, "groups_after"):
        return prober.groups_after(commit, first, k, r)
    return dict(list(prober.groups(commit, first + k, r).items())[first:first + k])


class Tracked:
    """A prober that remembers which seeds were asked of each commit (to know which seeds are
    still fresh for a confirmation), keeps the pooled model of what it measured, and counts
    the runs against the budget."""

    def __init__(self, prober, ledger: _Ledger | None = None):
        self.prober = prober
        self.kmax: dict = {}  #: commit -> the largest k asked of groups (seeds 1..k)
        self.have: dict = {}  #: commit -> {seed index: runs measured}
        self.pool = Pool()
        self.ledger = ledger or _Ledger()
        self.name = getattr(prober, "name", None)  #: the machine (target) it measures on, if it says
        self.say = None  #: where a test's progress line at each look goes (bisect_range sets it)

    @property
    def higher_is_better(self):
        return self.prober.higher_is_better

    def _charge(self, commit, seeds: range, r: int, fetch):
        seen = self.have.setdefault(commit, {})
        new = sum(max(0, r - seen.get(s, 0)) for s in seeds)
        lg = self.ledger
        if new and lg.budget is not None and lg.spent + new > lg.budget:
            raise OutOfBudget(f"{lg.spent} of {lg.budget} runs spent")
        out = fetch()
        lg.top = max(lg.top, seeds.stop - 1)
        if new:
            lg.spent += new
            for s in seeds:
                seen[s] = max(r, seen.get(s, 0))
        return out

    def groups(self, commit, k: int, r: int) -> dict:
        out = self._charge(commit, range(1, k + 1), r, lambda: self.prober.groups(commit, k, r))
        self.kmax[commit] = max(k, self.kmax.get(commit, 0))
        return out

    def groups_after(self, commit, first: int, k: int, r: int) -> dict:
        """Seeds first+1 .. first+k only (see :func:`groups_after`; without the prober's own
        ``groups_after`` the seeds before are measured and paid too)."""
        if hasattr(self.prober, "groups_after"):
            return self._charge(commit, range(first + 1, first + k + 1), r,
                                lambda: self.prober.groups_after(commit, first, k, r))
        return dict(list(self.groups(commit, first + k, r).items())[first:first + k])


def pool_of(prober) -> tuple[Tracked, Pool]:
    tr = prober if isinstance(prober, Tracked) else Tracked(prober)
    return tr, tr.pool


def measure_at(tr, commit, k: int, r: int) -> np.ndarray:
    """The commit at (at least) k layouts, into the pool."""
    return tr.pool.add(commit, tr.groups(commit, k, r))
