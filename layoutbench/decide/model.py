"""The pooled model of a bisection's measurements: a layout's value from its runs, the layout noise
pooled over every commit, the z tests of two commits and the verdict of an estimate against the
minimum effect."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri, stdtr, stdtrit

from .. import stats
from .plan import gs_boundary, gs_p

# -- the pooled model ------------------------------------------------------------------------------

CLIP = 2.0  #: a run's log is pulled to within CLIP run-noise sd of its layout's median (layout_values)


def run_scale(logs: list) -> float:
    """The run noise (sd of one run's log) from the runs of every layout given: the median
    |difference| of two runs of the same layout / (sqrt 2 * 0.6745), consistent at normal noise
    and moved by an outlier run no more than by any other.  0 when fewer than two layouts have
    two runs (one layout's three runs with an outlier among them cannot tell it from noise)
    or when the runs agree."""
    if sum(x.size > 1 for x in logs) < 2:
        return 0.0
    d = [np.abs(x[i] - x[j]) for x in logs if x.size > 1 for i, j in zip(*np.triu_indices(x.size, 1))]
    return float(np.median(d)) / (math.sqrt(2.0) * 0.6745)


def layout_values(groups: dict) -> np.ndarray:
    """Each layout's value, in the order of the groups: the mean of the logs of its runs, each
    first pulled to within CLIP x the run noise (:func:`run_scale`, over every layout of the
    call) of the layout's median -- a Huber-type mean: at normal run noise nearly as efficient
    as the mean (the median of 3 runs needs ~1.3x the layouts), and one outlier run moves it by
    at most CLIP run-noise sd / R.  One run: its log; without a run noise to judge by
    (run_scale 0): the median."""
    logs = [np.log(np.asarray(v, dtype=float)) for v in groups.values() if len(v)]
    c = CLIP * run_scale(logs)
    out = []
    for x in logs:
        med = float(np.median(x))
        out.append(med + float(np.mean(np.clip(x - med, -c, c))))
    return np.array(out)


#: a confirmation's fresh layout value is pulled to within this many robust layout sd of its side's
#: median (and enters the pooled variance so).  One run 20% slow on the first fresh layout of a null
#: pair (tests/test_interval.py's _Outlier, one run per layout, 200 pairs at level 3.04%): confirmed
#: 6 of 200 at 2.5, 9 at 3.0, 4 at 2.0; without the outlier 0 of 200; unclipped, every one.
CLIP_LAYOUT = 2.5


SCALE_VALUES = 30  #: layout_scale needs this many values (fewer: no clipping)


def layout_scale(pool: Pool) -> float:
    """A robust layout noise: the median |value - its commit's median| over every commit with at
    least 3 layouts measured, / 0.6745 (the sd at normal layout effects; one outlier layout
    moves it no more than any other value).  0 (no clipping) with fewer than SCALE_VALUES such
    values: from a few layouts the median deviation is biased low (of 4 values the middle two lie
    next to their median), and values clipped by it understate the pooled variance (a confirmation
    of a 0.45% step alone, fresh layouts only: 12 of 300 confirmed at level 3%, 3 of 300 without)."""
    d = [np.abs(y - np.median(y)) for y in pool.y.values() if y.size >= 3]
    n = sum(x.size for x in d)
    return float(np.median(np.concatenate(d))) / 0.6745 if n >= SCALE_VALUES else 0.0


def clipped(y: np.ndarray, c: float) -> np.ndarray:
    """``y`` with each value pulled to within ``c`` of their median (a Huber-type rule across
    layouts: with one run per layout an outlier run is a whole layout's value)."""
    if not c > 0 or y.size < 3:
        return y
    med = float(np.median(y))
    return med + np.clip(y - med, -c, c)


class Pool:
    """Per-layout values of every commit measured, and the layout variance pooled over them.

    ``seq[c]``: the values of seeds 1..n of commit c (seed order); ``fresh[(c, first)]``: the
    values of the seeds after the first ``first`` that a confirmation measured (fresh seeds,
    :meth:`Tracked.groups_after`); ``y[c]``: every layout of c once (seq, then the fresh
    layouts beyond it): what the tests and estimates use; ``seeds[c]``: the seed of each value
    of ``y[c]`` (what :func:`paired` pairs two commits' values by)."""

    def __init__(self):
        self.seq: dict = {}
        self.fresh: dict = {}
        self.y: dict = {}
        self.seeds: dict = {}

    def _join(self, commit) -> None:
        seq = self.seq.get(commit, np.empty(0))
        parts, seeds = [seq], [np.arange(1, seq.size + 1)]
        for (c, first), v in sorted(self.fresh.items(), key=lambda kv: kv[0][1]):
            if c == commit:
                skip = max(0, seq.size - first)
                parts.append(v[skip:])
                seeds.append(np.arange(first + skip + 1, first + v.size + 1))
        self.y[commit] = np.concatenate(parts) if len(parts) > 1 else seq
        self.seeds[commit] = np.concatenate(seeds)

    def add(self, commit, groups: dict) -> np.ndarray:
        y = layout_values(groups)
        if commit not in self.seq or y.size >= self.seq[commit].size:
            self.seq[commit] = y
        self._join(commit)
        return y

    def add_fresh(self, commit, first: int, groups: dict, clip: float = 0.0) -> np.ndarray:
        """The values of the seeds first+1 .. first+k (k = len(groups)) of ``commit``, each pulled to
        within ``clip`` of their median when given (:func:`clipped`): as the confirmation tests
        them, and as they enter the pooled variance of every later test (one outlier layout left
        unclipped there would inflate the pooled variance several times over at 1% layout noise)."""
        y = clipped(layout_values(groups), clip)
        if (commit, first) not in self.fresh or y.size >= self.fresh[(commit, first)].size:
            self.fresh[(commit, first)] = y
        self._join(commit)
        return y

    def n(self, commit) -> int:
        """Seeds 1..n measured of ``commit`` (0: none)."""
        return self.seq[commit].size if commit in self.seq else 0

    def var(self) -> tuple[float, int]:
        """(pooled variance of a layout's value around its commit's mean, degrees of freedom)."""
        ss = df = 0.0
        for y in self.y.values():
            if y.size >= 2:
                ss += float(np.sum((y - y.mean()) ** 2))
                df += y.size - 1
        return (ss / df if df else math.nan), int(df)


@dataclass
class ZTest:
    """B against A through the pooled variance: est = mean(B) - mean(A) on the log scale."""

    est: float
    se: float
    df: int
    na: int
    nb: int
    #: the paired test (:func:`paired`): est = mean of the per-seed differences, se their sd / sqrt(n),
    #: df n - 1, na = nb = n
    paired: bool = False

    @property
    def z(self) -> float:
        """est / se as a standard normal quantile (through t with df degrees of freedom)."""
        if not self.se > 0:
            return 0.0 if self.est == 0 else math.copysign(40.0, self.est)
        t = self.est / self.se
        if self.df <= 0:
            return 0.0
        return math.copysign(float(-ndtri(stdtr(self.df, -abs(t)))), t) if self.df < 1000 else t

    @property
    def neff(self) -> float:
        """Effective layouts: the mixture's prior variance over the estimate's, 1/(1/na + 1/nb)."""
        return 1.0 / (1.0 / self.na + 1.0 / self.nb)

    def log_lr(self, sign: int = 0) -> float:
        """log of the normal-mixture likelihood ratio (effect ~ N(0, s^2); ``sign`` +-1: half-normal
        on that side, a one-sided test)."""
        x, z = self.neff, self.z
        base = -0.5 * math.log1p(x)
        if sign == 0:
            return base + z * z * x / (2.0 * (1.0 + x))
        b = sign * z * math.sqrt(x / (1.0 + x))
        return math.log(2.0) + base + b * b / 2.0 + float(log_ndtr(b))

    def rejects(self, level: float, sign: int = 0) -> bool:
        return self.df >= 2 and self.log_lr(sign) >= math.log(1.0 / level)

    def crosses(self, ns: tuple, level: float, sign: int = 0) -> bool:
        """Beyond the group-sequential boundary of the looks ``ns`` at ``level`` (one-sided in the
        direction ``sign`` when given)."""
        if self.df < 2:
            return False
        c = gs_boundary(tuple(ns), level, one_sided=bool(sign))
        return (sign * self.z if sign else abs(self.z)) >= c

    def interval(self, ns: tuple, level: float, sign: int = 0) -> tuple[float, float]:
        """The repeated confidence interval of the group-sequential test with looks ``ns`` at
        ``level`` (log scale): est -+ the test's own boundary (:func:`gs_boundary`, through the t
        quantile as in :meth:`tost_half`).  Two-sided without ``sign``; with ``sign`` +1 the
        one-sided bound (lo, inf), -1 (-inf, hi).  It excludes 0 exactly when :meth:`crosses`
        rejects, and a value v exactly when the same test of "the effect is v" would."""
        if not self.se > 0:  # (below 2 df tost_half is infinite: the whole line)
            return (-math.inf, math.inf) if self.df < 2 or not self.se >= 0 else (self.est, self.est)
        h = self.tost_half(gs_boundary(tuple(ns), level, one_sided=bool(sign)))
        lo, hi = self.est - h, self.est + h
        return (lo, math.inf) if sign > 0 else (-math.inf, hi) if sign < 0 else (lo, hi)

    def half_width(self, level: float) -> float:
        """Half width of the always-valid interval at ``level`` (log scale): its z boundary
        through :meth:`tost_half`."""
        x = self.neff
        return self.tost_half(math.sqrt((1.0 + x) / x * (2.0 * math.log(1.0 / level) + math.log1p(x))))

    def tost_half(self, c: float) -> float:
        """Half width of an interval whose boundary is ``c`` on the z scale (the equivalence
        test's, the always-valid one's): ``c`` turned into a t quantile with the pooled variance's
        degrees of freedom, times se (log scale)."""
        if not self.se > 0 or self.df < 2:
            return math.inf if self.df < 2 else 0.0
        q = float(stdtrit(self.df, ndtr(c))) if self.df < 1000 else c
        return q * self.se

    def gs_p(self, ns: tuple, sign: int = 0, margin: float = 0.0) -> float:
        """The repeated p-value of the group-sequential test with looks ``ns`` (:func:`gs_p`): of the
        null "no change", or with ``margin`` (log) the band null |effect| <= margin (one-sided in the
        direction ``sign`` when given: sign x effect <= margin).  It is at most a level exactly when
        :meth:`interval` at that level excludes the null (0, or the whole band)."""
        if self.df < 2 or not self.se >= 0:
            return 1.0
        d = (sign * self.est if sign else abs(self.est)) - margin
        if not self.se > 0:
            return 1.0 if d <= 0 else 1.0 / 400_000
        t = d / self.se
        z = float(-ndtri(stdtr(self.df, -t))) if self.df < 1000 else t  # through t, as tost_half does
        return gs_p(tuple(ns), z, one_sided=bool(sign))

    def p_value(self) -> float:
        """Always-valid p-value: min(1, 1 / likelihood ratio)."""
        return float(min(1.0, math.exp(-self.log_lr()))) if self.df >= 2 else 1.0


def ztest(pool: Pool, a, b) -> ZTest:
    """B against A over every layout of each (:attr:`Pool.y`)."""
    return zvalues(pool, pool.y[a], pool.y[b])


def zvalues(pool: Pool, ya: np.ndarray, yb: np.ndarray) -> ZTest:
    """mean(yb) - mean(ya) through the pooled variance."""
    s2, df = pool.var()
    if ya.size == 0 or yb.size == 0 or not math.isfinite(s2):
        return ZTest(0.0, math.nan, 0, max(1, ya.size), max(1, yb.size))
    return ZTest(float(yb.mean() - ya.mean()), math.sqrt(s2 * (1.0 / ya.size + 1.0 / yb.size)), df,
                 ya.size, yb.size)


def paired(pool: Pool, a, b) -> ZTest:
    """B against A over the seeds both have (:attr:`Pool.seeds`): the same seed gives two neighbouring
    commits nearly the same object order, so the per-seed difference d = y_B - y_A cancels the part
    of the layout effect they share.  Its mean estimates what the pooled test's does (the difference
    of the layout-averaged means); only its variance is the differences' own, with n - 1 degrees of
    freedom."""
    _, ia, ib = np.intersect1d(pool.seeds.get(a, np.empty(0)), pool.seeds.get(b, np.empty(0)),
                               return_indices=True)
    return dvalues(pool.y[b][ib] - pool.y[a][ia]) if ia.size else dvalues(np.empty(0))


#: the largest seed correlation :func:`seed_corr` reports: the paired differences keep a trace of noise
SEED_CORR_MAX = 0.999


def seed_corr(pool: Pool, a, b) -> float:
    """How much of a seed's layout effect A and B share, as the stored values show it: 1 - var(d) / (2 s^2),
    d the per-seed differences (:func:`paired`) and s^2 the pooled variance of a layout's value (equal
    variances at both commits and correlation rho give var(d) = 2 s^2 (1 - rho)); in [0, SEED_CORR_MAX],
    NaN with fewer than two seeds in common or no spread.  A point estimate: from four seeds it is rough."""
    d = paired(pool, a, b)
    s2, _ = pool.var()
    if d.na < 2 or not (math.isfinite(d.se) and math.isfinite(s2) and s2 > 0):
        return math.nan
    return min(SEED_CORR_MAX, max(0.0, 1.0 - d.na * d.se * d.se / (2.0 * s2)))


def dvalues(d: np.ndarray) -> ZTest:
    """The paired test of the per-seed differences ``d`` (log scale)."""
    n = d.size
    if n < 2:
        return ZTest(0.0, math.nan, 0, max(1, n), max(1, n), paired=True)
    return ZTest(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), n - 1, n, n, paired=True)


@dataclass(frozen=True)
class Looks:
    """The test a comparison is shown with: its ``level``, its looks ``ns`` (layouts a side), the
    direction ``sign`` it is one-sided in (0: two-sided), and whether it tests the minimum effect
    (``band``: the null |effect| <= min_effect) or only a change."""
    level: float
    ns: tuple = ()
    sign: int = 0
    band: bool = False


def band_verdict(lo: float, hi: float, est: float, min_effect: float, higher_is_better: bool,
                 band: bool = True) -> tuple[str, str]:
    """(verdict, reason) from a log-scale interval: a change (slower/faster) when the interval
    excludes 0 and, with ``band``, the whole band +-log(1 + min_effect) -- the minimum effect
    tested (the null |effect| <= min_effect rejected) -- else when the estimate is at least the
    minimum effect (:func:`stats.comparison.effect_verdict`)."""
    if not band:
        return stats.comparison.effect_verdict(lo, hi, est, min_effect, higher_is_better)
    m = math.log1p(min_effect)
    if lo <= 0.0 <= hi:
        return "no difference", ""
    if not (lo > m or hi < -m):
        return "no difference", f"a change shown, not shown to be at least the {100 * min_effect:g}% minimum effect"
    slower = (lo > 0) != bool(higher_is_better)
    return ("slower" if slower else "faster"), ""


def layouts_to_rule_out(t: ZTest, m: float, c: float) -> int | None:
    """About how many layouts per side the equivalence test with boundary ``c`` (:func:`endpoints`)
    would need to put its interval inside +-m at the present estimate (None: not at this estimate).
    The pooled variance is taken as it is; its degrees of freedom grow by the layouts added, one
    each (:meth:`Pool.var`)."""
    if not math.isfinite(t.se) or abs(t.est) >= m:
        return None
    s = t.se / math.sqrt(1.0 / t.na + 1.0 / t.nb)
    for n in range(max(t.na, t.nb), 100_000):
        tt = ZTest(t.est, s * math.sqrt(2.0 / n), t.df + (n - t.na) + (n - t.nb), n, n)
        if abs(t.est) + tt.tost_half(c) < m:
            return n
    return None
