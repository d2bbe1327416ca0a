"""Synthetic probers with fixed values, for the engine's tests (layoutbench.decide's prober interface:
``groups(commit, k, r)``, ``higher_is_better``, and ``groups_after`` for fresh layouts)."""

from __future__ import annotations

import math


class Same:
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


class Offsets:
    """Fixed values: commit c at seed s is exp(off[c] + 0.01 sin(3 s)) (one shared layout effect,
    no run noise).  Records the fresh seeds (first, k) asked of each commit."""

    def __init__(self, off, higher_is_better: bool = False):
        self.off, self.fresh, self.higher_is_better = off, {}, higher_is_better

    def groups(self, c, k, r):
        return self.groups_after(c, 0, k, r)

    def groups_after(self, c, first, k, r):
        self.fresh.setdefault(c, []).append((first, k))
        return {f"random:{s}": [math.exp(self.off[c] + 0.01 * math.sin(3 * s))] * r
                for s in range(first + 1, first + k + 1)}
