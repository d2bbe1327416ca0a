"""Simulate bisections on synthetic histories, with the real decision code (layoutbench.decide).

A history is GOOD (commit 0) plus ``n`` commits.  A sample of commit ``i`` in random
layout ``seed``, run ``j`` is, on the log scale::

    code[i] + L[epoch(i), seed] + e[i, seed, j],   L ~ N(0, sigma_L),  e ~ N(0, sigma_R)

Layout-only commits (a seeded ~40%) and every commit that changes code start a new layout
epoch: the layout effect of every seed is drawn again (code moved).  Layout-only commits may
also shift the mean by ``shift`` (random sign; cold code can do that) -- this is *not* a code
change: blaming one is a false blame.  Scenarios: null, one step of ``size * sigma_L``, two
steps, a drift (every commit ``size * sigma_L / n``).  The default link (what a single-layout
bisection measures) is seed 0.

    python bench/simulate.py [--histories 200] [--quick]

prints, per scenario, for layoutbench (decide.bisect_range at the given plan) and for the
single-layout baseline (default link, 1 run, endpoint threshold = min_effect): false blame,
right culprit, wrong culprit, and builds and runs used per history.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from layoutbench import decide


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str = "null"  #: null, step, two, drift
    size: float = 0.0  #: step size in units of sigma_L (two: the second step; the first is half of it)
    commits: int = 8
    sigma_l: float = 0.01
    sigma_r: float = 0.0
    shift: float = 0.0  #: mean shift of each layout-only commit (relative)
    runs: int = 1  #: R of the plan


class SimProber:
    """groups(commit, k, r) over a synthetic history; the same call gives the same values."""

    higher_is_better = False

    def __init__(self, sc: Scenario, rng: np.random.Generator):
        self.sc, self.rng = sc, rng
        self.key = int(rng.integers(2**32))  #: keys the layout and run draws (below)
        n = sc.commits
        self.names = [f"c{i}" for i in range(n + 1)]
        kinds = ["good"] + ["layout" if rng.random() < 0.4 else "ordinary" for _ in range(n)]
        code = np.zeros(n + 1)
        self.steps: list[int] = []
        step = sc.size * sc.sigma_l
        if sc.kind == "step":
            at = int(rng.integers(max(1, n // 3), max(2, 2 * n // 3) + 1))
            code[at:] += step
            self.steps = [at]
        elif sc.kind == "two":
            a = int(rng.integers(1, n // 2))
            b = int(rng.integers(n // 2 + 1, n + 1))
            code[a:] += step / 2
            code[b:] += step
            self.steps = [a, b]
        elif sc.kind == "drift":
            code += step * np.arange(n + 1) / n
            self.steps = list(range(1, n + 1))
        for i in self.steps:
            kinds[i] = "code"
        epoch = np.zeros(n + 1, dtype=int)
        for i in range(1, n + 1):
            epoch[i] = epoch[i - 1] + (kinds[i] in ("layout", "code"))
            if kinds[i] == "layout" and sc.shift:
                code[i:] += sc.shift * (1 if rng.random() < 0.5 else -1)
        self.code, self.epoch, self.kinds = code, epoch, kinds
        self._layout: dict = {}
        self._noise: dict = {}
        self.builds: set = set()
        self.single_builds: set = set()

    # Each draw comes from its own generator keyed by (history, what, ...): the history is the
    # same whatever order the two bisections ask for values in, so layoutbench and the
    # single-layout baseline are judged on exactly the same histories.
    def _L(self, e: int, seed: int) -> float:
        if (e, seed) not in self._layout:
            g = np.random.default_rng((self.key, 0, e, seed))
            self._layout[(e, seed)] = g.normal(0.0, self.sc.sigma_l)
        return self._layout[(e, seed)]

    def _e(self, i: int, seed: int, j: int) -> float:
        if (i, seed, j) not in self._noise:
            g = np.random.default_rng((self.key, 1, i, seed, j))
            self._noise[(i, seed, j)] = g.normal(0.0, self.sc.sigma_r) if self.sc.sigma_r else 0.0
        return self._noise[(i, seed, j)]

    def groups(self, commit: str, k: int, r: int) -> dict:
        i = int(commit[1:])
        self.builds.add(i)
        return {f"random:{s}": [math.exp(self.code[i] + self._L(self.epoch[i], s) + self._e(i, s, j))
                                for j in range(r)] for s in range(1, k + 1)}

    def single(self, commit: str) -> float:
        i = int(commit[1:])
        self.single_builds.add(i)
        return math.exp(self.code[i] + self._L(self.epoch[i], 0) + self._e(i, 0, 0))

    @property
    def runs(self) -> int:
        return sum(1 for (i, s, j) in self._noise if s > 0)


def one(sc: Scenario, plan: decide.Plan, seed: int) -> dict:
    """One history: what layoutbench and the baseline said."""
    rng = np.random.default_rng(seed)
    p = SimProber(sc, rng)
    out = decide.bisect_range(p, p.names, plan, decide.MemoryJournal())
    truth = {p.names[i] for i in p.steps}
    named = [s.culprit for s in out.steps if s.status == "found"]
    culprit = out.culprit
    sl = decide.single_layout(p.single, p.names, threshold=plan.min_effect)
    first = p.names[p.steps[0]] if p.steps else None
    return {
        "blame": culprit is not None,
        "right": culprit is not None and culprit == first if sc.kind != "two" else culprit in truth,
        "wrong": culprit is not None and culprit not in truth,
        "several": out.several,
        "both": truth <= set(named) if sc.kind == "two" else False,
        "uncertain": out.status == "uncertain",
        "builds": len(p.builds), "runs": p.runs,
        "sl_blame": sl["culprit"] is not None,
        "sl_right": sl["culprit"] is not None and (sl["culprit"] == first if sc.kind != "two"
                                                  else sl["culprit"] in truth),
        "sl_wrong": sl["culprit"] is not None and sl["culprit"] not in truth,
        "sl_builds": len(p.single_builds),
    }


def rates(sc: Scenario, plan: decide.Plan, n: int, seed0: int = 0) -> dict:
    rows = [one(sc, plan, seed0 + i) for i in range(n)]
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]} | {"n": n}


def scenarios(quick: bool = False, runs_list=(1, 3)) -> list[Scenario]:
    out = []
    sizes = (0.5, 1, 2, 3, 5) if not quick else (1, 2, 5)
    for runs, sr in ((1, 0.0), (3, 0.005)):
        if runs not in runs_list:
            continue
        out.append(Scenario(f"null R={runs}", "null", 0.0, sigma_r=sr, runs=runs))
        for sh in (0.001, 0.003):
            out.append(Scenario(f"null, layout-only shift {100 * sh:g}% R={runs}", "null", 0.0, sigma_r=sr,
                                shift=sh, runs=runs))
        for s in sizes:
            out.append(Scenario(f"step {s:g}σL R={runs}", "step", s, sigma_r=sr, runs=runs))
        out.append(Scenario(f"two steps 1.5σL+3σL R={runs}", "two", 3.0, sigma_r=sr, runs=runs))
        out.append(Scenario(f"drift 3σL over the range R={runs}", "drift", 3.0, sigma_r=sr, runs=runs))
        if quick:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=200)
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--layouts", type=int, default=4, help="K at the first look (try 2..16)")
    ap.add_argument("--max-layouts", type=int, default=decide.Plan.max_layouts)
    ap.add_argument("--min-effect", type=float, default=decide.DEFAULT_MIN_EFFECT)
    ap.add_argument("--quick", action="store_true", help="fewer scenarios")
    ap.add_argument("--k-sweep", action="store_true", help="also: null and 2σL step rows for a first look of K=2..16")
    ap.add_argument("--part", choices=("all", "r1", "r3", "none"), default="all",
                    help="which main rows (R=1, R=3; none: only the K sweep), to run parts side by side")
    a = ap.parse_args()
    t0 = time.time()
    print(f"simulated bisections: {a.histories} histories per row, {a.commits} commits, σL 1% "
          f"(R=3 rows: σR 0.5%), ~40% layout-only commits; layoutbench plan: K={a.layouts}..{a.max_layouts} "
          f"layouts (looks K, 1.5K, ...), R runs, 95%, min effect {100 * a.min_effect:g}%, Pocock spending; "
          f"single layout: default link, 1 run, says 'no change' below {100 * a.min_effect:g}%")
    head = (f"{'scenario':38s} {'blame':>6s} {'right':>6s} {'wrong':>6s} {'sev.':>5s} {'unc.':>5s} {'builds':>6s} "
            f"{'runs':>6s} | {'blame':>6s} {'right':>6s} {'wrong':>6s} {'builds':>6s}")
    print(f"{'':38s} {'layoutbench':^47s} | {'single layout (1 run/probe)':^28s}")
    print(head)
    def pc(x: float) -> str:
        return f"{100 * x:5.1f}%"

    for sc in scenarios(a.quick, {"all": (1, 3), "r1": (1,), "r3": (3,), "none": ()}[a.part]):
        sc = replace(sc, commits=a.commits)
        plan = decide.Plan(layouts=a.layouts, max_layouts=max(a.max_layouts, a.layouts), runs=sc.runs,
                           max_runs=sc.runs, min_effect=a.min_effect)
        r = rates(sc, plan, a.histories)
        print(f"{sc.name:38s} {pc(r['blame'])} {pc(r['right'])} {pc(r['wrong'])} {100 * r['several']:4.0f}% "
              f"{100 * r['uncertain']:4.0f}% {r['builds']:6.1f} {r['runs']:6.1f} | {pc(r['sl_blame'])} "
              f"{pc(r['sl_right'])} {pc(r['sl_wrong'])} {r['sl_builds']:6.1f}", flush=True)
    if a.k_sweep:
        print(f"first-look K sweep (max layouts max({decide.Plan.max_layouts}, 2K)), R=1, σR 0:")
        for k in (2, 4, 8, 16):
            for sc in (Scenario(f"K={k} null", "null"), Scenario(f"K={k} null, shift 0.3%", "null", shift=0.003),
                       Scenario(f"K={k} step 2σL", "step", 2.0)):
                sc = replace(sc, commits=a.commits)
                plan = decide.Plan(layouts=k, max_layouts=max(decide.Plan.max_layouts, 2 * k), min_effect=a.min_effect)
                r = rates(sc, plan, a.histories)
                print(f"{sc.name:38s} {pc(r['blame'])} {pc(r['right'])} {pc(r['wrong'])} {100 * r['several']:4.0f}% "
                      f"{100 * r['uncertain']:4.0f}% {r['builds']:6.1f} {r['runs']:6.1f} | {pc(r['sl_blame'])} "
                      f"{pc(r['sl_right'])} {pc(r['sl_wrong'])} {r['sl_builds']:6.1f}", flush=True)
    print(f"blame: a commit named (null rows: false blame); right: the named commit is the first step (two steps: "
          f"a true step); wrong: a named commit that changed no code; sev.: verdict says several changes or a drift; "
          f"unc.: culprit not confirmed; builds: commits measured; runs: values measured. {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
