"""docs/how-it-decides.md, Figures 1, 2 and 4: bisections simulated on synthetic histories, with the real
decision code (layoutbench.decide).

A history is GOOD (commit 0) plus ``n`` commits.  A sample of commit ``i`` in random
layout ``seed``, run ``j`` is, on the log scale::

    code[i] + L[epoch(i), seed] + e[i, seed, j],   L ~ N(0, sigma_L),  e ~ N(0, sigma_R)

(with ``outliers`` > 0 a run is, with that probability, 10 sigma_R too slow).  Layout-only
commits (a seeded ~40%) and every commit that changes code start a new layout epoch: the
layout effect of every seed is drawn again (code moved).  Layout-only commits may also shift
the mean by ``shift`` (random sign; cold code can do that) -- this is *not* a code change:
blaming one is a false blame.  Scenarios: null, one step of ``size * sigma_L``, two steps
(``sizes``, the first in the first half of the range), a drift.  The default link (what a
single-layout bisection measures) is seed 0.

    python3 -m bench.simulate [--histories 200] [--commits 16] [--two] [--thorough] [--first-only] [--oracle-every]
    python3 -m bench.simulate --only-two [--first-only] [--before REV] [--histories 200]
    python3 -m bench.simulate --min-effect-rows [--before REV] [--histories 1000] [--commits 64] [--forecast-every 10]
    python3 -m bench.simulate --min-effect-rows --forecast-only [--histories 1000] [--forecast-every 10]

prints, on the SAME histories (every value is drawn from a generator keyed by the history and
its place, so the order of asking does not matter):

* REV -- with ``--before REV``, layoutbench.decide at that git revision (a column of
  its own in the first table; a column of its own in the two-step and minimum-effect tables);
* working tree -- layoutbench.decide as it is in this checkout;
* oracle -- knows sigma_L and sigma_R, fixed-size z tests sized for 90% power at the row's step
  (null rows: at 1 sigma_L), probes classified by the midpoint at alpha / probes, no
  confirmation: the floor of this design;
* single -- one value per commit, the default link, 1 run (asv find);

false blame (null rows) / right / wrong culprit, mean and p90 runs per bisection; the two-step
and minimum-effect tables give each rate with its Wilson 95% interval.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.special import ndtri

from layoutbench import decide, forecast

BLOCK = 64  #: seeds drawn per generator call


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str = "null"  #: null, step, two, drift
    size: float = 0.0  #: step size in units of sigma_L (two: the second step; the first is half of it)
    commits: int = 16
    sigma_l: float = 0.01
    sigma_r: float = 0.0
    shift: float = 0.0  #: mean shift of each layout-only commit (relative)
    runs: int = 1  #: R of the plan
    sizes: tuple = ()  #: two: (first, second) in sigma_L (default: size / 2, size)
    outliers: float = 0.0  #: probability that a run is an outlier (10 sigma_R slower)
    #: the layout effects' law, each with sd sigma_L: normal; bimodal (+-0.9 sigma_L, each with a
    #: normal jitter of sd 0.436 sigma_L: two clusters, as when a hot loop straddles a cache line
    #: or not); t3 (Student's t with 3 degrees of freedom, scaled: a heavy tail of rare bad layouts)
    layout_effect: str = "normal"
    #: RHO: a new layout epoch's effect at a seed is RHO x the previous epoch's at that seed + sqrt(1 - RHO^2)
    #: x a fresh draw (same sd): how much of a seed's layout survives a commit (0: a new layout, independent)
    layout_corr: float = 0.0


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
            s1, s2 = sc.sizes or (sc.size / 2, sc.size)
            a = int(rng.integers(1, n // 2))
            b = int(rng.integers(n // 2 + 1, n + 1))
            code[a:] += s1 * sc.sigma_l
            code[b:] += s2 * sc.sigma_l
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
        self.asked: dict = {}  #: (commit, seed) -> the most runs asked of that layout
        self.builds: set = set()
        self.single_builds: set = set()

    # Each block of draws comes from its own generator keyed by (history, what, where, block):
    # the history is the same whatever order the engines ask for values in.
    def _L(self, e: int, seed: int) -> float:
        """The layout effect of epoch ``e`` at ``seed``: the fresh draw of (e, seed), or with
        ``layout_corr`` RHO, RHO x epoch e-1's effect + sqrt(1 - RHO^2) x that draw."""
        rho = self.sc.layout_corr
        if not rho or e == 0:
            return self._draw(e, seed)
        return rho * self._L(e - 1, seed) + math.sqrt(1.0 - rho * rho) * self._draw(e, seed)

    def _draw(self, e: int, seed: int) -> float:
        b = seed // BLOCK
        if (e, b) not in self._layout:
            g, sl = np.random.default_rng((self.key, 0, e, b)), self.sc.sigma_l
            if self.sc.layout_effect == "bimodal":
                x = sl * (0.9 * np.where(g.random(BLOCK) < 0.5, -1.0, 1.0) + g.normal(0.0, math.sqrt(0.19), BLOCK))
            elif self.sc.layout_effect == "t3":
                x = sl * g.standard_t(3, BLOCK) / math.sqrt(3.0)
            else:
                x = g.normal(0.0, sl, BLOCK)
            self._layout[(e, b)] = x
        return self._layout[(e, b)][seed % BLOCK]

    def _e(self, i: int, seed: int, r: int) -> np.ndarray:
        b = seed // BLOCK
        if (i, b) not in self._noise:
            g = np.random.default_rng((self.key, 1, i, b))
            x = g.normal(0.0, self.sc.sigma_r, (BLOCK, 8)) if self.sc.sigma_r else np.zeros((BLOCK, 8))
            if self.sc.outliers:
                x = x + 10 * self.sc.sigma_r * (g.random((BLOCK, 8)) < self.sc.outliers)
            self._noise[(i, b)] = x
        return self._noise[(i, b)][seed % BLOCK, :r]

    def logs(self, i: int, k: int, r: int, first: int = 0) -> np.ndarray:
        """(k, r) log values of commit i, seeds first+1..first+k."""
        return np.array([self.code[i] + self._L(self.epoch[i], s) + self._e(i, s, r)
                         for s in range(first + 1, first + k + 1)])

    def groups(self, commit: str, k: int, r: int) -> dict:
        """Seeds 1..k."""
        return self.groups_after(commit, 0, k, r)

    def groups_after(self, commit: str, first: int, k: int, r: int) -> dict:
        """Seeds first+1..first+k only (a confirmation's fresh layouts; only these are measured)."""
        i = int(commit[1:])
        self.builds.add(i)
        for s in range(first + 1, first + k + 1):
            self.asked[(i, s)] = max(r, self.asked.get((i, s), 0))
        v = np.exp(self.logs(i, k, r, first))
        return {f"random:{s}": list(v[s - first - 1]) for s in range(first + 1, first + k + 1)}

    def single(self, commit: str) -> float:
        i = int(commit[1:])
        self.single_builds.add(i)
        return math.exp(self.code[i] + self._L(self.epoch[i], 0) + self._e(i, 0, 1)[0])

    @property
    def runs(self) -> int:
        """Values measured: the runs of every (commit, seed) asked, each counted once."""
        return sum(self.asked.values())


_ENGINES: dict = {}


def engine_at(rev: str):
    """layoutbench.decide as it is at git revision ``rev`` of this repository (its package
    extracted by ``git archive`` into a temporary folder and imported under another name), to
    run beside the engine of the working tree on the same histories."""
    if rev not in _ENGINES:
        import importlib
        import importlib.util
        import subprocess
        import tempfile
        root = Path(__file__).resolve().parents[1]
        tmp = Path(tempfile.mkdtemp(prefix="layoutbench-engine-"))
        tar = subprocess.run(["git", "-C", str(root), "archive", rev, "layoutbench"], capture_output=True)
        if tar.returncode:
            sys.exit(f"simulate.py: error: git revision {rev!r}: {tar.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=tar.stdout, check=True)
        name = "layoutbench_at_" + "".join(ch if ch.isalnum() else "_" for ch in rev)
        spec = importlib.util.spec_from_file_location(name, tmp / "layoutbench" / "__init__.py",
                                                      submodule_search_locations=[str(tmp / "layoutbench")])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[name] = pkg
        spec.loader.exec_module(pkg)
        _ENGINES[rev] = importlib.import_module(name + ".decide")
    return _ENGINES[rev]


def _engine(which: str):
    """The engine ``which`` names: "tree" (layoutbench.decide of this checkout) or a git revision
    (:func:`engine_at`)."""
    if which != "tree":
        return engine_at(which)
    return decide


CACHE: dict = {"path": None, "rows": None}  #: --cache: results of engines at a git revision, by history


def _cache_key(sc: Scenario, plan, seed: int, which: str) -> str | None:
    """The key of a history's result in the --cache file: only an engine at a git revision (resolved to
    its commit: the same code whatever the name) is kept, never the working tree's (it changes)."""
    if CACHE["path"] is None or which == "tree":
        return None
    import subprocess
    if which not in _REVS:
        _REVS[which] = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", which],
                                      capture_output=True, text=True).stdout.strip() or which
    return f"{_REVS[which]}|{sc!r}|{plan!r}|{seed}"


_REVS: dict = {}


def _cached(key: str | None) -> dict | None:
    if key is None:
        return None
    if CACHE["rows"] is None:
        import json
        CACHE["rows"] = {}
        path = Path(CACHE["path"])
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interrupted run
                CACHE["rows"][e["key"]] = e["row"]
    return CACHE["rows"].get(key)


def _keep(key: str | None, row: dict) -> None:
    if key is None:
        return
    import json
    CACHE["rows"][key] = row
    with open(CACHE["path"], "a") as f:  # one line a history, written as it arrives: an interrupted run resumes
        f.write(json.dumps({"key": key, "row": row}) + "\n")


def one(sc: Scenario, plan, seed: int, which: str = "tree") -> dict:
    """One history: what an engine (:func:`_engine`) and the single-layout baseline said (an engine at a
    git revision: from the --cache file when it holds this history)."""
    key = _cache_key(sc, plan, seed, which)
    got = _cached(key)
    if got is not None:
        return got
    row = _one(sc, plan, seed, which)
    _keep(key, row)
    return row


def _one(sc: Scenario, plan, seed: int, which: str = "tree") -> dict:
    eng = _engine(which)
    rng = np.random.default_rng(seed)
    p = SimProber(sc, rng)
    out = eng.bisect_range(p, p.names, plan, eng.MemoryJournal())
    truth = {p.names[i] for i in p.steps}
    named = [s.culprit for s in out.steps if s.status == "found"]
    culprit = out.culprit
    sl = decide.single_layout(p.single, p.names, threshold=plan.min_effect)
    first = p.names[p.steps[0]] if p.steps else None
    right = culprit is not None and culprit == first if sc.kind != "two" else culprit in truth
    return {
        "blame": culprit is not None,
        "right": right,
        "outcome": outcome(out, right, named, truth),
        "wrong": any(c not in truth for c in named),
        "several": out.several,
        "both": truth <= set(named) if sc.kind == "two" else False,
        "uncertain": out.status == "uncertain",
        "notshown": out.status in ("not-shown", "no-change", "noise") and not named,
        "builds": len(p.builds), "runs": p.runs,
        "sl_blame": sl["culprit"] is not None,
        "sl_right": sl["culprit"] is not None and (sl["culprit"] == first if sc.kind != "two"
                                                  else sl["culprit"] in truth),
        "sl_wrong": sl["culprit"] is not None and sl["culprit"] not in truth,
        "sl_builds": len(p.single_builds),
        "sl_runs": len(p.single_builds),
    }


def oracle(sc: Scenario, seed: int, alpha: float = 0.05, min_effect: float = decide.DEFAULT_MIN_EFFECT,
           every: bool = False) -> dict:
    """A bisection that knows sigma_L and sigma_R: fixed-size z tests sized for 90% power at the
    row's step (null: 1 sigma_L); probes by the midpoint at alpha / probes; no confirmation.

    ``every``: then, like the engine, it looks for every change point: each sub-range beside the
    step found (GOOD..last good, culprit..BAD) is tested by a fixed-size two-sample z test at
    alpha with 90% power at the step the engine's residual tests look for (decide.SIDE_STEP x the
    minimum effect), the layouts its ends already have reused, and a sub-range shown to differ is
    searched the same way (probes sized for that step).  What looking for a second step costs the
    floor of this design on a single step or a null range (the two-step rows are not scored: its
    midpoint probes can end between two equal steps, which the engine's three-way probes do not)."""
    p = SimProber(sc, np.random.default_rng(seed))
    n = len(p.names)
    sd = math.sqrt(sc.sigma_l ** 2 + sc.sigma_r ** 2 / sc.runs)  # a layout's value (mean of runs)
    delta = (sc.size if sc.kind == "step" else (min(sc.sizes) if sc.sizes else 1.0)) * sc.sigma_l
    za, zb = float(ndtri(1 - alpha / 2)), float(ndtri(0.9))
    ne = max(2, math.ceil(2 * (sd * (za + zb) / delta) ** 2))
    probes = decide.planned_probes(n)
    zp = float(ndtri(1 - alpha / probes))
    npb = 1
    while (delta / 2) / (sd * math.sqrt(1 / npb + 1 / (2 * ne))) < zp and npb < 10_000:
        npb += 1

    def mean(i: int, k: int) -> float:
        p.groups(p.names[i], k, sc.runs)
        return float(p.logs(i, k, sc.runs).mean(axis=1).mean())

    def search(lo: int, hi: int, k: int) -> int:
        g, b = mean(lo, k), mean(hi, k)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if abs(mean(mid, npb) - g) < abs(mean(mid, npb) - b):
                lo = mid
            else:
                hi = mid
        return hi

    g, b = mean(0, ne), mean(n - 1, ne)
    z = (b - g) / (sd * math.sqrt(2 / ne))
    named: list[int] = []
    if abs(z) >= za and abs(b - g) >= math.log1p(min_effect):
        named.append(search(0, n - 1, ne))
    if every and named:
        d2 = decide.SIDE_STEP * math.log1p(min_effect)
        ns = max(2, math.ceil(2 * (sd * (za + zb) / d2) ** 2))
        npb = 1
        while (d2 / 2) / (sd * math.sqrt(1 / npb + 1 / (2 * ns))) < zp and npb < 10_000:
            npb += 1
        hi = named[0]
        lo = hi - 1
        for a_, b_ in ((0, lo), (hi, n - 1)):
            if b_ - a_ < 1:
                continue
            ga, gb = mean(a_, ns), mean(b_, ns)
            if abs(gb - ga) / (sd * math.sqrt(2 / ns)) >= za and abs(gb - ga) >= math.log1p(min_effect):
                named.append(search(a_, b_, ns))
    culprit = p.names[min(named)] if named else None
    truth = {p.names[i] for i in p.steps}
    first = p.names[p.steps[0]] if p.steps else None
    return {"blame": culprit is not None, "right": culprit is not None and culprit == first,
            "wrong": any(p.names[i] not in truth for i in named), "runs": p.runs}


def rates(sc: Scenario, plan, n: int, seed0: int = 0, which: str = "tree") -> dict:
    rows = [one(sc, plan, seed0 + i, which) for i in range(n)]
    out = {k: float(np.mean([r[k] for r in rows])) for k, v in rows[0].items() if not isinstance(v, str)} | {"n": n}
    out["p90"] = float(np.percentile([r["runs"] for r in rows], 90))
    return out


def oracle_rates(sc: Scenario, n: int, seed0: int = 0, **kw) -> dict:
    rows = [oracle(sc, seed0 + i, **kw) for i in range(n)]
    out = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
    out["p90"] = float(np.percentile([r["runs"] for r in rows], 90))
    return out


def headline(commits: int = 16) -> list[Scenario]:
    out = [Scenario("null", "null", sigma_r=0.003, commits=commits)]
    for s in (1, 2, 5):
        out.append(Scenario(f"step {s}σL", "step", s, sigma_r=0.003, commits=commits))
    out.append(Scenario("null, shift 0.3%", "null", sigma_r=0.003, shift=0.003, commits=commits))
    out.append(Scenario("step 1σL σR 2% R=3 1% outl.", "step", 1, sigma_r=0.02, runs=3, outliers=0.01,
                        commits=commits))
    # a quiet benchmark: the layout noise of the real builds of bench/bisect_accuracy.py (~0.45%)
    out.append(Scenario("null, σL 0.45%", "null", sigma_l=0.0045, sigma_r=0.003, commits=commits))
    # a layout-noisy target (cachegrind with a 4 KiB I1 on a program of its own: a layout's value
    # spreads ~2%, four times the minimum effect) with a large step in a hot function
    out.append(Scenario("step 4σL, σL 2%, σR 0", "step", 4, sigma_l=0.02, commits=commits))
    return out


OUTCOMES = ("right", "right, and a candidate not confirmed", "uncertain", "nothing shown",
            "a step named, not the first", "a commit without a step named")


def outcome(out, right: bool, named: list, truth: set) -> str:
    """What a bisection ended as, one of OUTCOMES: the first step named and nothing else; the first step
    named beside a candidate whose confirmation did not show it (a side test's false alarm, or a second step
    missed); no commit named but a candidate left uncertain; nothing shown (the endpoints did not show the
    change); a true step named but not the first; a commit named that holds no step (a false blame)."""
    unconfirmed = any(s.status != "found" for s in out.steps)
    if any(c not in truth for c in named):
        return OUTCOMES[5]
    if right:
        return OUTCOMES[1] if unconfirmed else OUTCOMES[0]
    if named:
        return OUTCOMES[4]
    return OUTCOMES[2] if out.status == "uncertain" or unconfirmed else OUTCOMES[3]


def min_effect_rows(commits: int = 16, min_effect: float = decide.DEFAULT_MIN_EFFECT) -> list[Scenario]:
    """The rows of the minimum-effect table: a null range, single steps of 1, 2 and 5 sigma_L,
    layout-only commits that shift the mean by +-0.3% (below the 0.5% minimum effect: naming
    one is a false name), a drift of 0.1% per commit (every commit a step below the minimum
    effect: any name is a false one), and single steps of 1.2 and 1.5 times the minimum effect
    (just above it: the dearest to confirm; the null and every single-step row also print the plan's forecast)."""
    return [Scenario("null", "null", sigma_r=0.003, commits=commits),
            *(Scenario(f"step {s}σL", "step", s, sigma_r=0.003, commits=commits) for s in (1, 2, 5)),
            Scenario("shifts ±0.3% (moved code)", "null", sigma_r=0.003, shift=0.003, commits=commits),
            Scenario("drift 0.1%/commit", "drift", 0.1 * commits, sigma_r=0.003, commits=commits),
            *(Scenario(f"step {f:g}x min effect", "step", f * min_effect / 0.01, sigma_r=0.003, commits=commits)
              for f in NEAR_ROWS)]


NEAR_ROWS = (1.2, 1.5)  #: the minimum-effect table's steps near the minimum effect, as multiples of it


def plan_forecast(sc: Scenario, plan, seed: int, corr: bool = True) -> int:
    """What ``bisect run --plan`` would forecast for this history: forecast.plan_look on the history's own
    values (the endpoints' first look, K layouts x R runs a side, the noise and change from them; the
    endpoints' test going on when that look cannot price the bisection), its runs.  Not ``corr``: the
    same plan blind to the seed correlation (the pooled model's forecast at the values it measured)."""
    p = SimProber(sc, np.random.default_rng(seed))
    tr = decide.Tracked(p)
    k = max(decide.MIN_LAYOUTS, plan.layouts)
    got = forecast.plan_look(tr, p.names[0], p.names[-1], len(p.names), plan, (k, plan.runs))
    if corr or not plan.paired:
        return got["cost"]["runs"]
    first = got["first"]
    return forecast.expected_cost(len(p.names), first["ratio"], first["noise"], plan, 0.0)["runs"]


def forecasts(sc: Scenario) -> bool:
    """The rows that print the plan's forecast beside the actual runs: a null range and the single steps
    (not the shifts of moved code nor the drift: the plan's synthetic histories have neither)."""
    return sc.kind == "step" or (sc.kind == "null" and not sc.shift)


def ends_forecast(sc: Scenario, plan, seed: int) -> int:
    """What the run forecasts once its endpoints' test has decided (forecast.after_endpoints): the
    endpoints' test of this history (decide.endpoints, as the bisection runs it, on the same values),
    then the runs it spent plus the phases after it at the change and noise it measured."""
    p = SimProber(sc, np.random.default_rng(seed))
    tr = decide.Tracked(p)
    e = decide.endpoints(tr, p.names[0], p.names[-1], plan)
    s2, _ = tr.pool.var()
    d = float(tr.pool.y[p.names[-1]].mean() - tr.pool.y[p.names[0]].mean())
    rho = decide.seed_corr(tr.pool, p.names[0], p.names[-1]) if plan.paired else 0.0
    return forecast.after_endpoints(len(p.names), e.status, tr.ledger.spent, math.exp(d), math.sqrt(s2), plan,
                                    rho if math.isfinite(rho) else 0.0)["runs"]


def plan_line(sc: Scenario, plan, seeds: list, actual: list) -> str:
    """The plan's forecast (:func:`plan_forecast`, from the endpoints' first look) and the run's once the
    endpoints' test has decided (:func:`ends_forecast`) of the histories ``seeds`` beside what they cost
    (``actual``): the medians, and the median of actual / forecast of each."""
    fc = [plan_forecast(sc, plan, s) for s in seeds]
    fe = [ends_forecast(sc, plan, s) for s in seeds]
    r1 = np.median([a / f for a, f in zip(actual, fc) if f])
    r2 = np.median([a / f for a, f in zip(actual, fe) if f])
    blind = ""
    if plan.paired:  # the same plan blind to the seed correlation, side by side
        f0 = [plan_forecast(sc, plan, s, corr=False) for s in seeds]
        blind = (f"; --plan blind to the seed correlation {np.median(f0):.0f} "
                 f"({np.median([a / f for a, f in zip(actual, f0) if f]):.2f})")
    return (f"actual {np.median(actual):.0f}; --plan {np.median(fc):.0f} (actual/forecast {r1:.2f}); after the "
            f"endpoints {np.median(fe):.0f} ({r2:.2f}){blind}; medians of {len(seeds)} histories")


def forecast_table(commits: int, n: int, min_effect: float, rows: str | None, seed0: int, every: int) -> None:
    """Only the plan beside the actual runs of the working tree's engine, on every ``every``-th of the
    histories seed0 .. seed0 + n - 1 of each row that has a forecast (:func:`forecasts`)."""
    for ri, sc in enumerate(min_effect_rows(commits, min_effect)):
        if (rows and str(ri) not in rows.split(",")) or not forecasts(sc):
            continue
        plan = decide.Plan(runs=sc.runs, max_runs=sc.runs, min_effect=min_effect)
        seeds = list(range(seed0, seed0 + n, every))
        print(f"{sc.name:28s} | " + plan_line(sc, plan, seeds, [one(sc, plan, s)["runs"] for s in seeds]), flush=True)


def wilson(x: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a rate ``x`` (a fraction) over ``n`` trials."""
    c = (x + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(x * (1 - x) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def min_effect_table(commits: int, n: int, before: str | None, min_effect: float, rows: str | None,
                     seed0: int = 0, every: int = 0, forecast_every: int = 10, share: float | None = None,
                     corr: float = 0.0, paired: bool | None = None) -> None:
    """For each row of :func:`min_effect_rows`: the rate (false name on the null, shift and drift
    rows: a commit named; right culprit on the step rows) with its Wilson 95% interval and the
    runs per bisection (mean), for the engine at git revision ``before`` and the working tree's,
    on the same histories (seeds seed0 ..).  ``every``: also a line after every that many
    histories (both engines on the same ones), so a long row says where it is.  The null row and
    the single-step rows (:func:`forecasts`) also give the working tree's plan (:func:`plan_forecast`, every
    ``forecast_every``-th history) beside what those histories cost: the median forecast, the median
    actual, and the median of actual / forecast.  ``share``: the working tree's Plan.confirm_share (else
    its default); ``paired``: its Plan.paired (else its default); ``corr``: the histories' layout_corr."""
    tree_kw = ({"confirm_share": share} if share is not None else {}) | ({"paired": paired} if paired is not None else {})
    head = f"{'':28s} | " + (f"{before[:10]:^36s} | " if before else "") + f"{'working tree':^36s}"
    print(head)
    print(f"{'row':28s} | " + (f"{'rate [95% CI]':>22s} {'runs':>6s} {'p90':>5s} | " if before else "")
          + f"{'rate [95% CI]':>22s} {'runs':>6s} {'p90':>5s}")
    for ri, sc in enumerate(min_effect_rows(commits, min_effect)):
        if rows and str(ri) not in rows.split(","):
            continue
        sc = replace(sc, layout_corr=corr)
        bad = sc.kind in ("null", "drift")
        engines = ([before] if before else []) + ["tree"]
        got: dict = {w: [] for w in engines}
        for i in range(n):
            for which in engines:
                eng = _engine(which)
                kw = tree_kw if which == "tree" else {}
                got[which].append(one(sc, eng.Plan(runs=sc.runs, max_runs=sc.runs, min_effect=min_effect, **kw),
                                      seed0 + i, which))
            if (every and (i + 1) % every == 0) or i + 1 == n:
                cells = []
                for which in engines:
                    rs = got[which]
                    x = float(np.mean([r["blame"] if bad else r["right"] for r in rs]))
                    lo, hi = wilson(x, len(rs))
                    runs = [r["runs"] for r in rs]
                    cells.append(f"{100 * x:5.1f}% [{100 * lo:4.1f}-{100 * hi:5.1f}%] {np.mean(runs):6.1f} "
                                 f"{np.percentile(runs, 90):5.0f}")
                what = "named" if bad else "right"
                tag = "" if i + 1 == n else f"  ({i + 1} so far)"
                print(f"{sc.name + ' (' + what + ')':28s} | " + " | ".join(cells) + tag, flush=True)
        if forecasts(sc) and forecast_every:
            plan = decide.Plan(runs=sc.runs, max_runs=sc.runs, min_effect=min_effect, **tree_kw)
            idx = list(range(0, n, forecast_every))
            line = plan_line(sc, plan, [seed0 + i for i in idx], [got["tree"][i]["runs"] for i in idx])
            print(f"{'  the plan beside it':28s} | " + (f"{'':36s} | " if before else "") + line, flush=True)
    print(f"{commits} commits, {n} histories a row (seeds {seed0}..{seed0 + n - 1}); named: a commit named (every "
          "name false); right: the step named first; runs: values measured per bisection (mean, p90)")


def twos(commits: int = 16) -> list[Scenario]:
    return [Scenario(f"two steps {a:g}+{b:g}σL", "two", sizes=(a, b), sigma_r=0.003, commits=commits)
            for a, b in ((2, 2), (1, 3), (3, 1))]


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=200)
    ap.add_argument("--commits", type=int, default=16)
    ap.add_argument("--min-effect", type=float, default=decide.DEFAULT_MIN_EFFECT)
    ap.add_argument("--two", action="store_true", help="also the two-step rows (every change point)")
    ap.add_argument("--only-two", action="store_true", help="only the two-step rows")
    ap.add_argument("--thorough", action="store_true",
                    help="also the working tree's engine with --thorough (Plan.thorough: the residual search looks "
                         "further)")
    ap.add_argument("--first-only", action="store_true",
                    help="also the working tree's engine with --first-only (Plan.first_only: stops after the first "
                         "confirmed step, no side test)")
    ap.add_argument("--oracle-every", action="store_true",
                    help="also the oracle that looks for every change point (the sub-ranges beside a found step "
                         "tested with fixed-size z tests at 90%% power at twice the minimum effect): what looking "
                         "for a second step costs the floor of this design (single-step and null rows)")
    ap.add_argument("--layout-effect", choices=("normal", "bimodal", "t3"), default="normal",
                    help="the layout effects' law (sd sigma_L each; default normal)")
    ap.add_argument("--layout-corr", type=float, default=0.0, metavar="RHO",
                    help="with --min-effect-rows: the correlation of a seed's layout effect from one layout epoch to "
                         "the next (0: every layout-only or code commit draws new independent effects)")
    ap.add_argument("--paired", choices=("on", "off"),
                    help="with --min-effect-rows: the working tree's Plan.paired (the paired test beside the pooled "
                         "one at the endpoints and the confirmation; default: the engine's)")
    ap.add_argument("--rows", help="only these rows of the table(s), e.g. 2,3 (0-based; to run rows side by side)")
    ap.add_argument("--min-effect-rows", action="store_true",
                    help="only the minimum-effect table: null, 1/2/5σL steps, ±0.3%% shifts of moved code, a drift "
                         "of 0.1%% per commit; rates with Wilson 95%% intervals and runs beside them")
    ap.add_argument("--seed0", type=int, default=0, help="the first history's seed (histories seed0, seed0+1, ...)")
    ap.add_argument("--cache", metavar="FILE",
                    help="keep each history's result of an engine at a git revision (--before) in FILE, one line "
                         "as it arrives, and read it from there when asked again (an interrupted run resumes; the "
                         "working tree's engine is never cached)")
    ap.add_argument("--confirm-share", type=float, metavar="FRACTION",
                    help="with --min-effect-rows: the working tree's confirmation share (Plan.confirm_share, e.g. "
                         "0.75; 1: no bound; default: the engine's)")
    ap.add_argument("--forecast-every", type=int, default=10,
                    help="with --min-effect-rows: the plan's forecast of every Nth history of the rows of a step "
                         "near the minimum effect (0: none)")
    ap.add_argument("--forecast-only", action="store_true",
                    help="with --min-effect-rows: only the plan's forecast beside the working tree's actual runs, on "
                         "every --forecast-every-th history of each row with a forecast (null and single steps)")
    ap.add_argument("--every", type=int, default=0,
                    help="with --min-effect-rows: a line of the rates so far after every N histories")
    ap.add_argument("--before", metavar="REV[,REV...]",
                    help="also layoutbench.decide at this git revision, on the same histories (a column of its own "
                         "in the first table; in the two-step table, one for each "
                         "revision given, and in the minimum-effect table, the first)")
    a = ap.parse_args()
    CACHE["path"] = a.cache
    t0 = time.time()
    if a.min_effect_rows:
        print(f"simulated bisections, {time.strftime('%Y-%m-%d')}: σL 1%, σR 0.3% R=1, ~40% layout-only commits, "
              f"layout correlation {a.layout_corr:g} from one layout epoch to the next; "
              f"95%, min effect {100 * a.min_effect:g}%")
        if a.forecast_only:
            forecast_table(a.commits, a.histories, a.min_effect, a.rows, a.seed0, max(1, a.forecast_every))
        else:
            min_effect_table(a.commits, a.histories, a.before and a.before.split(",")[0], a.min_effect, a.rows,
                             a.seed0, a.every, a.forecast_every, a.confirm_share, a.layout_corr,
                             None if a.paired is None else a.paired == "on")
        print(f"{time.time() - t0:.0f}s")
        return
    revs = a.before.split(",") if a.before else []
    ref = revs[0] if revs else None
    ref_name = ref[:10] if ref else ""
    print(f"simulated bisections, {time.strftime('%Y-%m-%d')}: {a.histories} histories per row (seeds {a.seed0}.., "
          f"the same for every engine), {a.commits} commits, σL 1% ({a.layout_effect}), σR 0.3% R=1 unless named, "
          f"~40% layout-only commits; 95%, min effect {100 * a.min_effect:g}%; "
          + (f"{', '.join(r[:10] for r in revs)} = layoutbench.decide at that git revision, " if revs else "")
          + "tree = layoutbench.decide of this checkout (default plan), oracle = knows σ, fixed-size z tests, "
          "single = one layout, 1 run")

    def pc(x: float) -> str:
        return f"{100 * x:5.1f}%"

    def cell(r: dict | None) -> str:
        if r is None:
            return f"{'-':>6s} {'-':>6s} {'-':>6s} {'-':>5s}"
        return f"{pc(r['blame'] if r.get('null') else r['right'])} {pc(r['wrong'])} {r['runs']:6.1f} {r['p90']:5.0f}"

    def ci(r: dict) -> str:
        """The Wilson 95% interval of a row's rate (blame on a null row, right on a step row)."""
        lo, hi = wilson(r["blame"] if r.get("null") else r["right"], a.histories)
        return f"[{100 * lo:4.1f}-{100 * hi:5.1f}%]"

    def ref_plan(which: str, **kw):
        """An engine's default plan (an engine at a git revision looks for every change point)."""
        return _engine(which).Plan(**kw)

    if not a.only_two:
        print(f"{'':30s} | {ref_name:^26s} | {'tree':^26s} | {'oracle':^26s} | {'single layout':^20s}")
        sub = f"{'blame/right':>13s} {'wrong':>6s} {'runs':>6s} {'p90':>5s}"
        print(f"{'scenario':30s} | {sub[6:]:>26s} | {sub[6:]:>26s} | {sub[6:]:>26s} | "
              f"{'bl/right':>8s} {'wrong':>6s} {'runs':>4s}")
        for ri, sc in enumerate(headline(a.commits)):
            if a.rows and str(ri) not in a.rows.split(","):
                continue
            sc = replace(sc, layout_effect=a.layout_effect)
            null = sc.kind == "null"
            plan = decide.Plan(runs=sc.runs, max_runs=sc.runs, min_effect=a.min_effect)
            rt = None
            if ref:
                rt = rates(sc, ref_plan(ref, runs=sc.runs, max_runs=sc.runs, min_effect=a.min_effect), a.histories,
                           a.seed0, which=ref) | {"null": null}
            rn = rates(sc, plan, a.histories, a.seed0) | {"null": null}
            ro = oracle_rates(sc, a.histories, a.seed0, min_effect=a.min_effect) | {"null": null}
            sl = rn["sl_blame"] if null else rn["sl_right"]
            print(f"{sc.name:30s} | {cell(rt)} | {cell(rn)} | {cell(ro)} | {pc(sl):>8s} {pc(rn['sl_wrong'])} "
                  f"{rn['sl_runs']:4.1f} | tree {ci(rn)}", flush=True)
            ratio = f"tree/{ref_name} runs: " if rt else ""
            if rt:
                print(f"{'':30s}   {ratio}{rn['runs'] / rt['runs']:.2f}", flush=True)
            if a.oracle_every:
                re_ = oracle_rates(sc, a.histories, a.seed0, min_effect=a.min_effect, every=True) | {"null": null}
                print(f"{'  oracle, every change point':30s} | {'':26s} | {'':26s} | {cell(re_)} |" + (
                    f" its runs / {ref_name}'s: {re_['runs'] / rt['runs']:.2f}" if rt else ""), flush=True)
            for flag, on in (("first_only", a.first_only), ("thorough", a.thorough)):
                if on:
                    rf = rates(sc, replace(plan, **{flag: True}), a.histories, a.seed0) | {"null": null}
                    print(f"{'  --' + flag.replace('_', '-'):30s} | {'':26s} | {cell(rf)} | {ci(rf)}" + (
                        f" {ratio}{rf['runs'] / rt['runs']:.2f}" if rt else ""), flush=True)
        print("null rows: blame = false blame (a commit named); step rows: right = the named first bad commit is the "
              "step; wrong = a named commit that changed no code; runs = values measured per bisection (mean, p90); "
              "[..]: the Wilson 95% interval of the tree's rate")
    if a.two or a.only_two:
        two_table(a, revs, ref_plan)
    print(f"{time.time() - t0:.0f}s")


def two_table(a, refs: list, ref_plan) -> None:
    """The two-step rows: for the reference engines (``refs``: git revisions), the
    working tree's default, and (when asked) its --first-only and --thorough, on the same histories:
    both steps named, with the Wilson 95% interval; the first bad commit reported a true step; a
    commit without a step named; runs per bisection (mean)."""
    cols = [(r[:10], r, None) for r in refs] + [("tree (default)", "tree", {})]
    cols += [("tree --first-only", "tree", {"first_only": True})] if a.first_only else []
    cols += [("tree --thorough", "tree", {"thorough": True})] if a.thorough else []
    w = 40
    print(f"{'two steps (every change point)':30s} | " + " | ".join(f"{c[0]:^{w}s}" for c in cols))
    sub = f"{'both [95% CI]':>21s} {'first':>6s} {'wrong':>5s} {'runs':>6s}"
    print(f"{'':30s} | " + " | ".join(f"{sub:>{w}s}" for _ in cols))
    for ri, sc in enumerate(twos(a.commits)):
        if a.rows and str(ri) not in a.rows.split(","):
            continue
        sc = replace(sc, layout_effect=a.layout_effect)
        cells = []
        for _, which, kw in cols:
            plan = (ref_plan(which, min_effect=a.min_effect) if kw is None else
                    decide.Plan(min_effect=a.min_effect, **kw))
            r = rates(sc, plan, a.histories, a.seed0, which=which)
            lo, hi = wilson(r["both"], a.histories)
            cells.append(f"{100 * r['both']:5.1f}% [{100 * lo:4.1f}-{100 * hi:5.1f}] {100 * r['right']:5.1f}% "
                         f"{100 * r['wrong']:4.1f}% {r['runs']:6.1f}")
        print(f"{sc.name:30s} | " + " | ".join(f"{c:>{w}s}" for c in cells), flush=True)
    print("both: both steps named (confirmed); first: the first bad commit reported is a true step; wrong: a "
          "named commit without a step; runs: values measured per bisection (mean)")


if __name__ == "__main__":
    replace  # noqa: B018 (kept for callers that build scenarios with dataclasses.replace)
    main()
