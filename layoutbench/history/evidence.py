"""The steps of a history judged by the bisection's standard of evidence.

Between two consecutive measured points, per metric, the two points' layout values
(:func:`decide.layout_values`: a robust mean of the logs of each layout's runs) are compared
through the layout noise **pooled over every point of the history** (:class:`decide.Pool`, the
unpaired form :func:`decide.ztest`: conservative when the same seeds are correlated on both
sides), as a bisection compares two commits.  The tests of every step and metric of the history
are one family: each is run at ``alpha / family`` (Bonferroni), so that all the claims of one
history together are wrong with probability at most ``alpha``.  Each step gets one of four kinds:

- ``code change``: its interval lies beyond the band +-min_effect (:func:`decide.band_verdict`:
  the minimum effect *tested*, as a bisection's confirmation tests it);
- ``below the minimum effect``: its interval excludes no change but not the whole band: a change
  was seen, it is not shown to be as large as the minimum effect;
- ``within layout noise``: an equivalence test passed (two one-sided tests at the same level: the
  interval at ``1 - 2 level`` lies inside +-min_effect), as a bisection's ``noise``;
- ``not shown``: none of these; ``could_miss`` is the step the test shows with probability
  NOISE_POWER at the pooled noise (:func:`decide.shows_at`): a smaller one may have been missed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.special import ndtr, ndtri

from .. import decide, stats

CODE = "code change"
BELOW = "below the minimum effect"
NOISE = "within layout noise"
NOT_SHOWN = "not shown"
KINDS = (CODE, BELOW, NOISE, NOT_SHOWN)


@dataclass
class Change:
    """One step of one metric between two measured points, and what its test showed."""

    commit: str  #: the later commit
    prev: str  #: the earlier measured commit
    metric: str
    unit: str
    kind: str  #: one of KINDS
    ratio: float  #: B/A: exp(mean of B's layout values - mean of A's)
    ci_low: float
    ci_high: float
    confidence: float  #: the interval's level: 1 - level (1 - 2 level for an equivalence shown)
    verdict: str  #: faster / slower (a code change) / no difference
    layout_noise: float  #: the pooled sd of a layout's value (log scale, about relative)
    explained_by_layout: float  #: P(one random layout per side differs this much by relinking alone)
    single_layout: dict[str, float]  #: layout id -> ratio of medians
    worst_single: str  #: the single layout whose ratio is furthest from 1
    commits_between: int  #: how many commits the step spans (1: this commit alone)
    min_effect: float = stats.DEFAULT_MIN_EFFECT
    level: float = 0.05  #: the test's level: alpha / family
    family: int = 1  #: steps x metrics tested in this history
    layouts: tuple[int, int] = (0, 0)  #: layout values on each side
    could_miss: float = math.nan  #: not shown: a step below this (relative) may have been missed

    @property
    def effect(self) -> float:
        return self.ratio - 1

    @property
    def listed(self) -> bool:
        """Shown in the list of changes: a change seen (a code change, or one below the minimum
        effect), or a step some single layout moved by the minimum effect or more (what a one-layout
        benchmark would have reported)."""
        if self.kind in (CODE, BELOW):
            return True
        moved = self.single_layout.get(self.worst_single)
        return moved is not None and abs(moved - 1) >= self.min_effect

    def says(self) -> str:
        """What the step's test showed, in words (the summary's and the report's)."""
        me = f"{100 * self.min_effect:g}%"
        if self.kind == CODE:
            return f"{self.verdict}: beyond the {me} minimum effect"
        if self.kind == BELOW:
            return f"a change seen, not shown to be at least the {me} minimum effect"
        if self.kind == NOISE:
            return f"a change of {me} or more ruled out (equivalence test)"
        if math.isfinite(self.could_miss):
            return f"nothing shown either way: a step below {100 * self.could_miss:.2f}% may have been missed"
        return "nothing shown either way (too few layouts to estimate the noise)"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layouts"] = list(self.layouts)
        d["says"] = self.says()
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _ids(ga: dict, gb: dict) -> list[str]:
    """The layouts a step is judged over: the random (seeded) ones the two points share, or, with
    fewer than two of those, every layout they share."""
    common = [i for i in ga if i in gb]
    seeded = [i for i in common if ":" in i]
    return seeded if len(seeded) >= 2 else common


def _usable(groups: dict) -> dict:
    return {i: v for i, v in groups.items() if len(v) and all(x > 0 and math.isfinite(x) for x in v)}


def judge_steps(steps: list[tuple], alpha: float, min_effect: float) -> list[Change]:
    """Judge ``steps`` -- (prev point, point, metric, unit, higher_is_better, prev groups, groups) --
    as one family at level ``alpha``; see the module docstring.  A step with no layout in common
    is left out."""
    pools: dict[tuple[str, bool], decide.Pool] = {}
    tested = []
    for prev, cur, metric, unit, hib, ga, gb in steps:
        ga, gb = _usable(ga), _usable(gb)
        ids = _ids(ga, gb)
        if not ids:
            continue
        seeded = all(":" in i for i in ids)
        pool = pools.setdefault((metric, seeded), decide.Pool())
        tested.append((prev, cur, metric, unit, hib, ga, gb, ids, pool))
    # every point of the history enters the pool of its metric once, with the layouts its steps use
    for prev, cur, metric, unit, hib, ga, gb, ids, pool in tested:
        for p, g in ((prev, ga), (cur, gb)):
            pool.add(p.commit, {i: g[i] for i in ids if i in g})
    family = max(1, len(tested))
    level = alpha / family
    m = math.log1p(min_effect)
    out = []
    for prev, cur, metric, unit, hib, ga, gb, ids, pool in tested:
        ya = decide.layout_values({i: ga[i] for i in ids})
        yb = decide.layout_values({i: gb[i] for i in ids})
        t = decide.zvalues(pool, ya, yb)
        if not math.isfinite(t.se) and ya.size and yb.size:  # no noise estimate: the estimate all the same
            t = decide.ZTest(float(yb.mean() - ya.mean()), math.nan, 0, ya.size, yb.size)
        kind, lo, hi, conf, verdict, miss = _judge(t, pool, level, m, min_effect, hib)
        s2, _ = pool.var()
        noise = math.sqrt(s2) if math.isfinite(s2) and s2 >= 0 else math.nan
        explained = (float(2.0 * ndtr(-abs(t.est) / (math.sqrt(2.0) * noise))) if noise > 0 else
                     (1.0 if t.est == 0 else 0.0) if noise == 0 else math.nan)
        single = {}
        for i in ga:
            if i in gb:
                a, b = stats.summarize(ga[i], n_boot=10).median, stats.summarize(gb[i], n_boot=10).median
                if a > 0:
                    single[i] = b / a
        worst = max(single, key=lambda i: abs(math.log(single[i])) if single[i] > 0 else 0, default="")
        out.append(Change(cur.commit, prev.commit, metric, unit, kind, math.exp(t.est), math.exp(lo), math.exp(hi),
                          conf, verdict, noise, explained, single, worst, cur.index - prev.index, min_effect, level,
                          family, (t.na, t.nb), miss))
    return out


def _judge(t: decide.ZTest, pool: decide.Pool, level: float, m: float, min_effect: float, hib: bool):
    """(kind, lo, hi, confidence, verdict, could_miss) of one step's test ``t`` at ``level``."""
    c = float(ndtri(1.0 - level / 2.0))
    half = t.tost_half(c) if math.isfinite(t.se) else math.inf
    lo, hi = t.est - half, t.est + half
    verdict, _ = decide.band_verdict(lo, hi, t.est, min_effect, hib, band=True)
    if verdict in ("faster", "slower"):
        return CODE, lo, hi, 1.0 - level, verdict, math.nan
    if lo > 0.0 or hi < 0.0:
        return BELOW, lo, hi, 1.0 - level, "no difference", math.nan
    eq = t.tost_half(float(ndtri(1.0 - level))) if math.isfinite(t.se) else math.inf
    if abs(t.est) + eq < m:
        return NOISE, t.est - eq, t.est + eq, 1.0 - 2.0 * level, "no difference", math.nan
    shows = decide.shows_at(pool, (max(t.na, t.nb),), level, t.na, t.nb, m) if t.df >= 2 else math.nan
    return NOT_SHOWN, lo, hi, 1.0 - level, "no difference", math.expm1(shows) if math.isfinite(shows) else math.nan
