"""The decisions of a layout-aware bisection, independent of how commits are measured.

Everything here works against an abstract *prober*:

* ``prober.groups(commit, k, r) -> {layout id: [values]}``: the commit's values over
  the random layouts with seeds ``seed .. seed+k-1`` (the same seeds on every commit),
  ``r`` runs each; the same call must return the same values again (the store does
  that for real builds, a memo for the simulation);
* ``prober.higher_is_better`` (known after the first ``groups`` call);
* it raises :class:`Skip` for a commit that cannot be measured (does not build).

so that the same code runs on real builds (``bisect.py``) and in simulation
(``bench/simulate.py``, ``tests/test_calibration.py``).

The model
---------
A layout's value is a **Huber-type mean of the logs of its runs** (:func:`layout_values`:
each run pulled to within 2 run-noise sd of the layout's median, then the mean; one outlier
run moves it little, and at normal run noise it is nearly as efficient as the mean).  The spread of these per-layout values around their commit's mean is the layout
noise (plus run noise / R); it is a property of the benchmark and the build, so it is
**pooled over every commit measured** (:class:`Pool`: sum of (n_c - 1) s_c^2 over
commits, as many degrees of freedom as layouts measured minus commits) instead of being
estimated afresh from K-1 degrees of freedom in each test.  A difference of two commits'
means has variance s^2 (1/n_a + 1/n_b) (the unpaired form: with the same seeds on both
sides the layouts are positively correlated or independent, so this is conservative).

Error control: tests built for optional stopping
------------------------------------------------
Each test is an **always-valid** one: a normal-mixture sequential probability ratio test
(mSPRT; Robbins; Johari, Pekelis and Walsh) on z = difference / se (through the t
distribution while the pooled variance has few degrees of freedom), mixing the effect over
N(0, s^2).  Its chance of ever rejecting a true "no change", however often it looks and
however the decision to go on is taken, is at most its level.  So no looks are planned and
no alpha is spent per look: a test stops as soon as its evidence suffices.

* **Endpoints** (level alpha): a range without a code change is blamed only if this test
  rejects (probability <= alpha).  A change also needs an estimate of at least
  ``min_effect``.  When the test has looked ``plan.test_layouts`` layouts far without
  showing a change (at a noisy benchmark further, up to ``plan.noise_top``: until a change of
  twice ``min_effect`` would be shown with 90% power, :func:`noise_cap`, or the estimate is
  below ``min_effect`` by 1.28 se) the status is ``not-shown``: "no change of at least X shown; about N
  more layouts would rule it out" -- *not* "within layout noise".  That equivalence claim
  is made only when an equivalence test passes (status ``noise``): two one-sided tests at
  alpha, group-sequential over the same looks (their 1 - 2 alpha interval inside +-min_effect);
  the endpoints look further for it (up to ``max_layouts``) only with ``plan.prove_null``.
* **Probes**: probe j of the whole bisection (every probe counts, an uncertain one too) gets
  level alpha_j, sum over all j <= alpha (:func:`probe_level`).  It runs a sequential
  probability ratio test (Wald) of "like GOOD" against "like BAD" (the two endpoint levels,
  pooled variance) beside two mSPRTs "differs from GOOD" and "differs from BAD".  A probe
  shown to differ from GOOD is *bad* (never good); one that also differs from BAD holds a
  change on both sides (*between*: marked bad, the range after it is searched again).  A probe
  at the level between two equal steps lies midway between GOOD and BAD, so the SPRT may put it
  on GOOD's side at 3-4 layouts, and the search then ends between two commits at the same level
  (15 of 60 histories of two 2σL steps, 16 commits): this is bounded, not prevented -- the
  confirmation names such a pair with probability <= its level, and the side tests beside it
  search on (tests/test_calibration.py: none named, both steps found).
* **Confirmation** of each named commit: last good against culprit on **fresh** layouts
  (seeds beyond every seed any decision used on any commit; a prober with
  ``groups_after(commit, first, k, r)`` measures only those, else the seeds before are measured
  too), a one-sided group-sequential test in the direction of the range's change at
  level alpha_i for the i-th confirmation (sum <= alpha) of the null "the step is at most
  ``min_effect``": confirmed when the test's own interval lies beyond the band +-min_effect,
  so a commit whose own step is at most the minimum effect is named with probability <= alpha
  over the whole bisection, on evidence the decisions did not select.  That interval is the
  one printed beside the effect.  It looks up to CONFIRM_FAR x its cap and stops sooner once it
  would more likely miss a step of twice the minimum effect than show it.
* **Every change point**: after a confirmed step, the sub-ranges before and after it are
  tested like endpoints (levels alpha_i, sum <= alpha); a sub-range shown to differ is
  bisected in turn.  Each starts from the layouts its ends already have and looks further
  only while the commits measured in it (its ends, the probes in it, the confirmation's fresh
  layouts) make a step of twice the minimum effect at least ``SIDE_A`` times as likely as none
  (:func:`side_llr`; an always-valid test may stop on any rule);
  the sub-range that suggests one more is tested first, at the larger level.  A later
  confirmation (a second step) has the cap ``CONFIRM_LATER``.  ``plan.first_only``
  stops after the first step.
* ``plan.budget``: a cap on the runs; when it is reached the bisection stops with the best
  verdict it has (status ``budget``: the candidates left and the probability that the step
  is in each, from the probes' evidence).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri, stdtr, stdtrit

from . import stats


class Skip(Exception):
    """This commit cannot be judged (does not build, or every run failed)."""


class OutOfBudget(Exception):
    """The runs the user allowed are spent."""


DEFAULT_MIN_EFFECT = stats.DEFAULT_MIN_EFFECT
SPENDING = ("pocock", "obrien-fleming", "bonferroni")  #: kept for the settings; the tests are always-valid
MIN_LAYOUTS = 3  #: no test with fewer layouts on a side
LOOKS_DIFFERENT = 1.96  #: a probe with |z| this large against an endpoint is not put on its side by the SPRT
GROWTH = 1.5  #: layouts per side grow by this factor from look to look
#: the residual test of a sub-range beside a found step starts from the layouts its ends have (at
#: least SIDE_FIRST a side) and looks further (up to RESIDUAL_FAR) only while the sub-range's
#: measured commits make a step of SIDE_STEP x the minimum effect, at one of the places a step could
#: split them, at least SIDE_A times as likely as no step (side_llr: the lower boundary of Wald's
#: test of those two), asked after every layout added a side (asked at the x1.5 looks only, the
#: test overshot that boundary).  bench/side_frontier.py, 200 histories, 16 commits:
#: (SIDE_A, SIDE_FIRST) = (0.05, 4): a single 5σL step 63.8 runs, 2σL 74.5, two steps 1+3σL / 3+1σL
#: both named 91.0% / 90.5%; (0.25, 3): 44.8, 61.5, 82.0% / 78.5%; (0.4, 3, asked at the looks):
#: 45.6, 61.7, 80.5% / 74.5%.  The default names every change point in nine of ten such ranges;
#: a third of its runs on a large single step would leave four in five (docs/how-it-decides.md,
#: Figure 3); --first-only is the cheap search for one culprit.
SIDE_STEP = 2.0
SIDE_A = 0.05
SIDE_FIRST = 4
#: --thorough (Plan.thorough): the residual tests look on while a step is at least THOROUGH_A times
#: as likely as none, and look first at THOROUGH_FIRST layouts a side at least: 1+3σL / 3+1σL both
#: named 93.0% / 94.5%, a 5σL step 81.2 runs (simulate.py --thorough, 200 histories)
THOROUGH_A = 0.02
THOROUGH_FIRST = 8
RESIDUAL_FAR = 64  #: the side tests' far look (32 would cost a 5σL step 41 runs and name both of 1+3σL 64%, 64: 69%)
#: a confirmation looks on beyond its cap (the plan's for the first, CONFIRM_LATER for the later ones,
#: noise_cap at a noisy benchmark) up to CONFIRM_FAR x the cap, and stops sooner once it would more
#: likely miss a step of SIDE_STEP x the minimum effect than show it beyond the band (conditional_power
#: below FUTILITY, from its first look).  A 1σL step (1%, twice the 0.5% minimum effect) at a layout sd
#: of 1.04% is shown beyond the band with 90% power only at ~130 (level 0.0304, a first confirmation)
#: to ~170 (0.0076, a second) fresh layouts a side.  bench/simulate.py --min-effect-rows --rows 1
#: --histories 50: a single 1σL step named 78% at 242 runs with 3, 92% at 266 runs with 4; the 80 two-step
#: histories of tests/test_calibration.py (1+3σL, 3+1σL): both named 67 (3) / 74 (4) of 80.  With the
#: far look held to 128 layouts and a stop at the cap once the estimate itself could not clear
#: the band at the far look: 54% at 217 runs, and 42 of 80.
CONFIRM_FAR = 4
CONFIRM_LATER = 64  #: the cap of the confirmations after the first (a second step; they look on to CONFIRM_FAR x it)
#: at a noisy benchmark the tests look further than ``Plan.test_layouts``: far enough that a change of
#: NOISE_EFFECT x min_effect is shown with probability NOISE_POWER at the pooled noise
#: (:func:`noise_cap`), never beyond ``Plan.noise_top``; the endpoints stop there earlier when the
#: estimate is below min_effect by z(NOISE_POWER) standard errors (a noisy null range: -15% runs)
NOISE_EFFECT = 2.0
NOISE_POWER = 0.9
#: a side test also stops (futility) once, carried on to its cap, it would show a step of SIDE_STEP x
#: the minimum effect with probability below FUTILITY given what it measured (conditional_power): it
#: would more likely miss that step than show it.  The verdict then gives the step its cap shows with
#: probability FUTILITY_POWER at the pooled noise (reach): a smaller one there is not ruled out.
#: bench/simulate.py --rows 3,7 --first-only and --only-two, 200 histories, without the stop / with
#: it: a 4σL step at σL 2% (a layout-noisy target, four times the minimum effect) 167.4 / 42.1 runs
#: (--first-only 28.9); a 5σL step at σL 1% 63.8 / 63.6; two steps 1+3σL / 3+1σL both named
#: 91.0% / 90.5% without, 90.0% / 90.5% with it (258.9 / 237.5 and 255.9 / 236.7 runs).  0.8: the noisy step 30.7 runs, 1+3σL both named 87% (100
#: histories); below 0.5 a side test at σL 2% goes on to ~16 layouts a side (more than 2x --first-only).
#: A confirmation stops on the same rule (its band test, the step SIDE_STEP x the minimum effect).
FUTILITY = 0.5
FUTILITY_POWER = 0.8


@dataclass(frozen=True)
class Plan:
    """How far the tests may look and at what levels."""

    layouts: int = 4  #: K at the first look of the endpoints
    #: the furthest any test looks: a later confirmation's last look (CONFIRM_FAR x CONFIRM_LATER), an
    #: equivalence proof (--prove-null), a probe at a very noisy benchmark (twice noise_cap)
    max_layouts: int = 256
    runs: int = 1  #: R: runs per layout (their Huber-type mean is the layout's value: layout_values)
    max_runs: int = 1  #: kept for the settings (the layout is the unit: more layouts, not more runs)
    confidence: float = 0.95
    min_effect: float = DEFAULT_MIN_EFFECT
    spending: str = "pocock"
    share_min: float = 0.7
    all_changes: bool = True  #: every change point (the default; ``first_only`` stops after one)
    first_only: bool = False
    prove_null: bool = False  #: prove "no change of min_effect" at the endpoints (expensive)
    test_layouts: int = 40  #: the furthest a test looks without --prove-null
    budget: int | None = None  #: runs the whole bisection may spend (None: no cap)
    thorough: bool = False  #: the residual tests look further for a second, smaller step (THOROUGH_A)

    @property
    def side_a(self) -> float:
        """The side tests' stop boundary: SIDE_A, THOROUGH_A with ``thorough``."""
        return THOROUGH_A if self.thorough else SIDE_A

    @property
    def side_first(self) -> int:
        """The side tests' first look, layouts a side: SIDE_FIRST, THOROUGH_FIRST with ``thorough``."""
        return THOROUGH_FIRST if self.thorough else SIDE_FIRST

    @property
    def noise_top(self) -> int:
        """The furthest a test looks at a noisy benchmark (:func:`noise_cap`): 3x the cap, at most
        ``max_layouts``."""
        return max(self.cap, min(self.max_layouts, 3 * self.cap))

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def cap(self) -> int:
        return max(MIN_LAYOUTS, min(self.max_layouts, self.test_layouts))

    def looks(self) -> list[tuple[int, int]]:
        """The (layouts, runs) of each look of the endpoints: K, 1.5K, ... up to the cap
        (``max_layouts`` when proving a null)."""
        top = self.max_layouts if self.prove_null else self.cap
        return [(k, self.runs) for k in schedule(max(MIN_LAYOUTS, self.layouts), top)]

    def levels(self, n_looks: int | None = None) -> list[float]:
        """Kept for the settings' callers: an always-valid test needs no per-look levels; each
        look is judged at alpha (the levels sum to at most alpha only in the sense that the
        test's overall error is at most alpha)."""
        n = n_looks or len(self.looks())
        return [self.alpha / n] * n

    def check(self) -> None:
        if self.spending not in SPENDING:
            raise ValueError(f"spending must be one of {', '.join(SPENDING)}")


def noise_cap(plan: Plan, s2: float, ns: tuple, level: float, one_sided: bool = False) -> int:
    """Layouts per side at which a test with looks ``ns`` at ``level`` shows a change of
    NOISE_EFFECT x min_effect with probability NOISE_POWER when a layout's value has variance
    ``s2`` (the pooled estimate): between ``plan.cap`` (also when s2 is not known, or with no
    minimum effect to scale by) and ns[-1]."""
    if not (s2 > 0 and math.isfinite(s2)) or ns[-1] <= plan.cap or not plan.min_effect > 0:
        return min(plan.cap, ns[-1])
    c = gs_boundary(tuple(ns), level, one_sided=one_sided) + float(ndtri(NOISE_POWER))
    delta = NOISE_EFFECT * math.log1p(plan.min_effect)
    return max(plan.cap, min(ns[-1], math.ceil(2.0 * s2 * (c / delta) ** 2)))


def extended(first: int, cap: int, top: int) -> list[int]:
    """The looks of a test that stops at ``cap`` at a quiet benchmark and may go on to ``top`` at a
    noisy one: schedule(first, cap), then GROWTH times the last, ... up to top."""
    out = schedule(first, cap)
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, math.ceil(GROWTH * out[-1]))))
    return out


def _top_looks(plan: Plan) -> tuple:
    return tuple(extended(max(MIN_LAYOUTS, plan.layouts), plan.cap, plan.noise_top))


def schedule(first: int, top: int) -> list[int]:
    """Layouts per side at each look: first, then GROWTH times the last, ... up to top."""
    first = min(first, top)
    out = [first]
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, math.ceil(GROWTH * out[-1]))))
    return out


_GS: dict = {}


def gs_boundary(ns: tuple, level: float, one_sided: bool = False) -> float:
    """The constant (Pocock-type) z boundary of a group-sequential test with looks at ``ns``
    layouts per side (information proportional to n): P(some look's |z| >= c) = level under no
    change.  Computed once per design by 400,000 simulated Brownian paths (fixed seed)."""
    key = (tuple(ns), round(level, 12), one_sided)
    if key not in _GS:
        rng = np.random.default_rng(20261125)
        ns_a = np.asarray(ns, dtype=float)
        inc = np.diff(np.concatenate(([0.0], ns_a)))
        w = np.cumsum(rng.standard_normal((400_000, len(ns))) * np.sqrt(inc), axis=1) / np.sqrt(ns_a)
        m = w.max(axis=1) if one_sided else np.abs(w).max(axis=1)
        _GS[key] = float(np.quantile(m, 1.0 - level))
    return _GS[key]


def family_level(alpha: float, i: int) -> float:
    """alpha_i = alpha * 6 / (pi^2 i^2), i = 1, 2, ...: sums to alpha over any number of tests."""
    return alpha * 6.0 / (math.pi ** 2 * i * i)


def probe_level(alpha: float, j: int, planned: int) -> float:
    """The level of the j-th probe (1-based) of a bisection: 3/4 alpha / planned for the
    planned probes, then a quarter of alpha spread as alpha_i over the ones beyond: every probe
    counts, and all of them together are misjudged with probability <= alpha."""
    if j <= planned:
        return 0.75 * alpha / planned
    return family_level(alpha / 4.0, j - planned)


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
    layouts beyond it): what the tests and estimates use."""

    def __init__(self):
        self.seq: dict = {}
        self.fresh: dict = {}
        self.y: dict = {}

    def _join(self, commit) -> None:
        seq = self.seq.get(commit, np.empty(0))
        parts = [seq] + [v[max(0, seq.size - first):] for (c, first), v in sorted(self.fresh.items(),
                                                                                  key=lambda kv: kv[0][1])
                         if c == commit]
        self.y[commit] = np.concatenate(parts) if len(parts) > 1 else seq

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
        if self.df < 2 or not self.se > 0:
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


@dataclass(frozen=True)
class Looks:
    """The test a comparison is shown with: its ``level``, its looks ``ns`` (layouts a side), the
    direction ``sign`` it is one-sided in (0: two-sided), and whether it tests the minimum effect
    (``band``: the null |effect| <= min_effect) or only a change."""
    level: float
    ns: tuple = ()
    sign: int = 0
    band: bool = False


def _display(prober, pair: tuple[str, str], k: int, r: int, t: ZTest, test: Looks, min_effect: float,
             used: int = 0) -> stats.Comparison:
    """A stats.Comparison of ``pair`` (A, B) for people (the layouts' groups, paired t), its estimate,
    interval and p replaced by the decision's: the repeated confidence interval of the
    group-sequential ``test`` (:meth:`ZTest.interval`; one-sided in the direction ``test.sign`` when
    the test was, ``sided`` then says which bound is finite).  The verdict is the interval's: a
    change where it excludes 0 and (``test.band``) the whole band +-min_effect, or (without it)
    where the estimate is at least min_effect."""
    a, b = pair
    level, ns, sign, band = test.level, test.ns, test.sign, test.band
    if used:
        ga, gb = groups_after(prober, a, used, k, r), groups_after(prober, b, used, k, r)
    else:
        ga, gb = prober.groups(a, k, r), prober.groups(b, k, r)
    c = change(ga, gb, bool(prober.higher_is_better), 0.05, min_effect)
    if not math.isfinite(t.se):
        return c
    lo, hi = t.interval(ns or (max(k, 2),), level, sign)
    verdict, reason = band_verdict(lo, hi, t.est, min_effect, bool(prober.higher_is_better), band)
    return dataclasses.replace(c, ratio=math.exp(t.est), ci_low=math.exp(lo), ci_high=math.exp(hi),
                               p_value=t.p_value(), verdict=verdict, reason=reason, confidence=1.0 - level,
                               log_ratio=t.est, se=t.se, df=float(t.df), sided=int(sign),
                               method=f"pooled-variance group-sequential test ({t.df} df), {t.na} vs {t.nb} layouts")


def band_verdict(lo: float, hi: float, est: float, min_effect: float, higher_is_better: bool,
                 band: bool = True) -> tuple[str, str]:
    """(verdict, reason) from a log-scale interval: a change (slower/faster) when the interval
    excludes 0 and, with ``band``, the whole band +-log(1 + min_effect) -- the minimum effect
    tested (the null |effect| <= min_effect rejected) -- else when the estimate is at least the
    minimum effect (:func:`stats._verdict`)."""
    if not band:
        return stats._verdict(lo, hi, est, min_effect, higher_is_better)
    m = math.log1p(min_effect)
    if lo <= 0.0 <= hi:
        return "no difference", ""
    if not (lo > m or hi < -m):
        return "no difference", f"a change shown, not shown to be at least the {100 * min_effect:g}% minimum effect"
    slower = (lo > 0) != bool(higher_is_better)
    return ("slower" if slower else "faster"), ""


def change(ga: dict, gb: dict, hib: bool, level: float, min_effect: float, rank: bool = False) -> stats.Comparison:
    """B against A, paired over their common layouts, tested at ``level`` (a t test: for display)."""
    return stats.compare(ga, gb, hib, confidence=1.0 - level, paired=True, min_effect=min_effect, rank_test=rank)


def _pool_of(prober) -> tuple[Tracked, Pool]:
    tr = prober if isinstance(prober, Tracked) else Tracked(prober)
    return tr, tr.pool


def _measure(tr, commit, k: int, r: int) -> np.ndarray:
    """The commit at (at least) k layouts, into the pool."""
    return tr.pool.add(commit, tr.groups(commit, k, r))


def layouts_to_rule_out(t: ZTest, m: float, c: float) -> int | None:
    """About how many layouts per side the equivalence test with boundary ``c`` (:func:`endpoints`)
    would need to put its interval inside +-m at the present estimate (None: not at this estimate)."""
    if not math.isfinite(t.se) or abs(t.est) >= m:
        return None
    s = t.se / math.sqrt(1.0 / t.na + 1.0 / t.nb)
    for n in range(max(t.na, t.nb), 100_000):
        tt = ZTest(t.est, s * math.sqrt(2.0 / n), max(t.df, 30), n, n)
        if abs(t.est) + tt.tost_half(c) < m:
            return n
    return None


# -- the endpoints ---------------------------------------------------------------------------------

@dataclass
class Ends:
    status: str  #: differs, noise (an equivalence shown, --prove-null), not-shown (looks spent)
    comparison: stats.Comparison  #: for display (pooled estimate, always-valid interval)
    layouts: int
    runs: int
    look: int
    level: float  #: the test's level
    note: str = ""
    more_layouts: int | None = None  #: not-shown: layouts per side that would rule the change out
    futile: bool = False  #: stopped because its cap could no longer show the step it looks for (``reach``)
    reach: float = math.nan  #: the step (log) its cap shows with probability FUTILITY_POWER (shows_at)
    #: not-shown: the step (log) the test as it stopped (its design's boundary, the layouts of its last look)
    #: shows with probability NOISE_POWER at the pooled noise (shows_at); a smaller one it may have missed
    shows: float = math.nan


def shows_at(pool: Pool, ns: tuple, level: float, na: int, nb: int, m: float, power: float = NOISE_POWER) -> float:
    """The step (log scale) that a test with looks ``ns`` at ``level``, judged at ``na`` and ``nb``
    layouts a side, shows with probability ``power`` at the pooled noise: "differs" needs its z
    beyond the boundary c and its estimate at least the minimum effect ``m`` (log), so
    max(c se, m) + z(power) se (nan while the noise is unknown).  At the layouts where a test stopped
    it is what the test could have missed (``shows``); at its cap with FUTILITY_POWER, what carrying
    it on could still show (``reach``)."""
    s2, _ = pool.var()
    if not (s2 > 0 and math.isfinite(s2)):
        return math.nan
    se = math.sqrt(s2 * (1.0 / na + 1.0 / nb))
    return max(gs_boundary(tuple(ns), level) * se, m) + float(ndtri(power)) * se


def conditional_power(t: ZTest, pool: Pool, ns: tuple, level: float, step: float, sign: float,
                      margin: float = 0.0, one_sided: bool = False) -> float:
    """The chance that the test, carried on to its last look ``ns[-1]`` layouts a side, ends beyond
    its boundary at ``level`` when the true difference is ``step`` (log) in the direction ``sign``,
    given what it measured so far (``t``): with the information I = n_eff / s^2, the score
    S = est I grows by step (I_cap - I_now) plus noise of variance I_cap - I_now, and the test
    rejects when S_cap >= c sqrt(I_cap).  With ``margin`` the test is a confirmation's band test
    (its null: sign x effect <= margin; it rejects when S_cap >= margin I_cap + c sqrt(I_cap)),
    with ``one_sided`` at the one-sided boundary.  1 when nothing is known yet; 0 at the cap."""
    s2, _ = pool.var()
    if t.df < 2 or not (s2 > 0 and math.isfinite(s2)):
        return 1.0
    n = ns[-1]
    i_now = t.neff / s2
    i_cap = 1.0 / (1.0 / max(t.na, n) + 1.0 / max(t.nb, n)) / s2
    rest = i_cap - i_now
    if rest <= 0:
        return 0.0
    c = gs_boundary(tuple(ns), level, one_sided=one_sided)
    return float(ndtr((sign * t.est * i_now + step * rest - margin * i_cap - c * math.sqrt(i_cap))
                      / math.sqrt(rest)))


@dataclass(frozen=True)
class SideStop:
    """The stops of a side test beside a found step: ``go_on(k)``, asked after every layout added a
    side (Wald's rule: False ends the test), and ``futility`` (step, sign): stop once a step of that
    size (log) in that direction would be shown by the last look with probability below FUTILITY."""
    go_on: Callable[[int], bool] | None = None
    futility: tuple | None = None


def endpoints(prober, good, bad, plan: Plan, level: float | None = None, cap: int | None = None,
              stop: SideStop = SideStop(), say=None) -> Ends:
    """Do GOOD and BAD differ by a change of at least min_effect?  A group-sequential test at
    ``level`` (alpha), layouts added K, 1.5K, ... up to ``cap`` when given; else up to the
    plan's cap at a quiet benchmark and on to ``plan.noise_top`` at a noisy one
    (:func:`noise_cap` from the pooled variance, or sooner once the estimate is below
    min_effect by z(NOISE_POWER) se), under the boundary of the whole design to noise_top;
    ``stop.go_on(k)``, when given, may end it earlier (stopping without rejecting keeps the level,
    whatever decides when): it is asked after every layout added a side, between the looks too
    (a Wald boundary, crossed as soon as it is), while "differs" and "noise" are judged at the
    looks only (their boundaries are those of the looks' design).  ``stop.futility`` (step, sign): stop
    too once a step of that size (log) in that direction would be shown by the last look with
    probability below FUTILITY (:func:`conditional_power`), and say what the cap could show
    (``Ends.reach``).  ``say``: a line at each look (the caller puts the test's name before it)."""
    tr, pool = _pool_of(prober)
    go_on, futility = stop.go_on, stop.futility
    a = plan.alpha if level is None else level
    m = math.log1p(plan.min_effect)
    looks = plan.looks()
    noisy = cap is None and not plan.prove_null and plan.noise_top > plan.cap
    if noisy:  # a quiet benchmark stops at plan.cap, a noisy one may go on (noise_cap)
        looks = [(k, plan.runs) for k in extended(max(MIN_LAYOUTS, plan.layouts), plan.cap, plan.noise_top)]
    if cap is not None:
        looks = [(k, r) for k, r in looks if k < cap] + [(cap, plan.runs)]
        looks = [lk for i, lk in enumerate(looks) if i == 0 or lk[0] > looks[i - 1][0]]
    t = None
    ns = tuple(k for k, _ in looks)
    # the equivalence ("noise"): two one-sided tests at level a, group-sequential over the same
    # looks (a shift of +-m is the null of each: crossing its one-sided boundary anywhere has
    # probability <= a), so its interval is est +- c_eq se at level 1 - 2a
    c_eq = gs_boundary(ns, a, one_sided=True)
    last = looks[-1][0]
    steps = [(k, r, True) for k, r in looks]
    if go_on is not None:  # one layout a side at a time between the looks, for go_on
        steps = [(k, plan.runs, k in ns) for k in range(ns[0], ns[-1] + 1)]
    j = -1
    futile = False
    judged = (ns[0], ns[0])  # the layouts a side at the last look judged ("differs" is judged at the looks only)
    for k, r, at_look in steps:
        j += at_look
        k = max(k, min(pool.n(good), pool.n(bad)))
        _measure(tr, good, k, r)
        _measure(tr, bad, k, r)
        t = ztest(pool, good, bad)
        if at_look:
            judged = (t.na, t.nb)
        line = f"{k} layouts a side, {bad[:12]}/{good[:12]} x{math.exp(t.est):.4f}"
        if say is not None and at_look:
            say(line)
        if noisy:  # the boundary is the whole design's: stopping before its last look keeps the level
            last = noise_cap(plan, pool.var()[0], ns, a)
            if k >= plan.cap and abs(t.est) + float(ndtri(NOISE_POWER)) * t.se < m:
                last = k  # beyond the quiet cap only while a change of min_effect is still likely
        if at_look and t.crosses(ns, a) and abs(t.est) >= m:
            return Ends("differs", _display(tr, (good, bad), k, r, t, Looks(a, ns), plan.min_effect), k, r, j, a)
        h = t.tost_half(c_eq)
        if at_look and abs(t.est) + h < m:  # an equivalence shown on the way: say it (cheap at low noise)
            shown = dataclasses.replace(_display(tr, (good, bad), k, r, t, Looks(a, ns), plan.min_effect),
                                        ci_low=math.exp(t.est - h), ci_high=math.exp(t.est + h),
                                        confidence=1.0 - 2.0 * a, verdict="no difference",
                                        reason=f"within ±{100 * plan.min_effect:g}% (equivalence test)")
            return Ends("noise", shown, k, r, j, a,
                        f"its {100 * (1 - 2 * a):.3g}% interval (two one-sided {100 * a:.3g}% tests over the looks) lies "
                        f"within ±{100 * plan.min_effect:g}%: a change of {100 * plan.min_effect:g}% or more is ruled out")
        futile = futility is not None and k < last and conditional_power(t, pool, ns, a, *futility) < FUTILITY
        if futile or k >= last or (go_on is not None and not go_on(k)):
            if say is not None and not at_look:  # stopped between two looks: its last layouts get a line too
                say(line)
            break
    more = layouts_to_rule_out(t, m, c_eq)
    need = (f"about {more - k} more layouts a side would rule it out" if more is not None else
            "at this estimate more layouts would not rule it out")
    return Ends("not-shown", _display(tr, (good, bad), k, r, t, Looks(a, ns), plan.min_effect), k, r, j, a,
                f"no change of at least {100 * plan.min_effect:g}% shown after {k} layouts x {r} run(s); {need}",
                more_layouts=None if more is None else more - k, futile=futile,
                reach=shows_at(pool, ns, a, max(t.na, ns[-1]), max(t.nb, ns[-1]), m, FUTILITY_POWER),
                shows=shows_at(pool, ns, a, *judged, m))


# -- one probe ------------------------------------------------------------------------------------

@dataclass
class Judgement:
    verdict: str  #: good, bad, between (differs from both: bad, and a change after it), uncertain, skip
    layouts: int = 0
    runs: int = 0
    p_good: float = math.nan  #: always-valid p-value of "the probe equals GOOD"
    p_bad: float = math.nan  #: always-valid p-value of "the probe equals BAD"
    position: float = math.nan  #: log(probe/GOOD) / log(BAD/GOOD): 0 like GOOD, 1 like BAD
    note: str = ""
    level: float = math.nan

    def describe(self) -> str:
        if self.verdict == "skip":
            return f"skip: {self.note}"
        return (f"{self.verdict} (p vs GOOD={self.p_good:.3g}, p vs BAD={self.p_bad:.3g}, position "
                f"{self.position:.2f} between good=0 and bad=1; {self.layouts} layouts x {self.runs} run(s); "
                f"level {self.level:.2g})" + (f"; {self.note}" if self.note else ""))


def judge_probe(prober, probe, good, bad, plan: Plan, level: float | None = None) -> Judgement:
    """Like GOOD or like BAD, at ``level``?  At each look (3, 4, 6, 9, ... layouts up to the cap):
    Wald's SPRT of "the probe's mean is GOOD's" against "BAD's" (the two means and the pooled
    variance plugged in), beside two always-valid tests "differs from GOOD" and "differs from
    BAD".  Differs from GOOD: *bad* (both: *between*); else the SPRT's side, *good* only when
    not shown to differ from GOOD.  Uncertain when the cap is reached."""
    tr, pool = _pool_of(prober)
    a = plan.alpha / 2 if level is None else level
    bound = math.log((1.0 - a) / a)
    r = plan.runs
    k = MIN_LAYOUTS
    jd = Judgement("uncertain", level=a)
    # in a range with a shown change a probe may look further: twice the endpoints' cap (noise_cap)
    cap = min(plan.max_layouts, 2 * noise_cap(plan, pool.var()[0], _top_looks(plan), plan.alpha))
    try:
        while True:
            for c in (good, bad):
                if pool.y.get(c, np.empty(0)).size < k:
                    _measure(tr, c, k, r)
            yp = _measure(tr, probe, k, r)
            tg, tb = ztest(pool, good, probe), ztest(pool, probe, bad)
            yg, yb = pool.y[good], pool.y[bad]
            s2, _ = pool.var()
            d = float(yb.mean() - yg.mean())
            tmid = float(yp.mean() - (yg.mean() + yb.mean()) / 2.0)
            v = s2 * (1.0 / yp.size + (1.0 / yg.size + 1.0 / yb.size) / 4.0)
            llr = d * tmid / v if v > 0 else 0.0
            pos = (float(yp.mean() - yg.mean()) / d) if d else math.nan
            jd = Judgement("uncertain", yp.size, r, tg.p_value(), tb.p_value(), pos, level=a)
            dg, db = tg.rejects(a), tb.rejects(a)
            if dg:
                jd.verdict = "between" if db else "bad"
                if db:
                    jd.note = "differs from both GOOD and BAD: a change on either side"
                return jd
            # the SPRT's side only while the probe does not look different from that side's
            # endpoint (|z| < LOOKS_DIFFERENT, no correction): a probe that differs from GOOD is
            # measured further, never called good on the SPRT's word
            if (db or llr <= -bound) and abs(tg.z) < LOOKS_DIFFERENT:
                jd.verdict = "good"
                return jd
            if llr >= bound and abs(tb.z) < LOOKS_DIFFERENT:  # (bad needs no guard: differs from GOOD is bad)
                jd.verdict = "bad"
                return jd
            if k >= cap:
                jd.note = "looks spent"
                return jd
            k = min(cap, max(k + 1, math.ceil(k * 1.25)))
    except Skip as e:
        return Judgement("skip", note=str(e), level=a)


# -- the confirmation at the culprit -----------------------------------------------------------------

def confirm(prober, last_good, culprit, plan: Plan, used: int, level: float | None = None,
            sign: int = 0, cap: int | None = None) -> tuple[stats.Comparison | None, int, float]:
    """Is the step last good -> culprit at least the minimum effect?  On *fresh* layouts only (the
    seeds after the first ``used``, which no decision saw): a group-sequential test at ``level``
    of the null |effect| <= min_effect (one-sided in the direction ``sign`` of the range's change
    when given: sign x effect <= min_effect): the step is confirmed when the test's own interval
    (:meth:`ZTest.interval`) excludes the whole band +-min_effect.  Each side's fresh layout values
    are first pulled to within CLIP_LAYOUT robust layout sd of their median (:func:`clipped`,
    :func:`layout_scale`): with one run per layout an outlier run would otherwise be a layout
    far enough out to confirm a null step at the first look.  A commit whose true step is
    at most the minimum effect (null, or a small shift of moved code) is confirmed with
    probability <= ``level``.  The looks go K, 1.5K, ... up to the cap (``cap``, else the plan's;
    at a noisy benchmark to :func:`noise_cap`) and on to CONFIRM_FAR x that; the test stops
    (futility, which keeps its level) once, carried on to its last look, it would show a step of
    SIDE_STEP x the minimum effect beyond the band with probability below FUTILITY
    (:func:`conditional_power`, the band as its margin).  Returns (the fresh comparison with that
    interval -- verdict "no difference" when not confirmed -- or None when nothing could be
    measured; fresh layouts; the fresh log ratio).  The prober's ``say`` gets a line at each look."""
    tr, pool = _pool_of(prober)
    say = tr.say
    a = plan.alpha if level is None else level
    m = math.log1p(plan.min_effect)
    shown, k, size = None, 0, math.nan
    r = plan.runs
    top = cap or plan.cap
    if top < plan.noise_top:  # at a noisy benchmark: far enough to show 2x the minimum effect (noise_cap)
        top = max(top, noise_cap(plan, pool.var()[0], _top_looks(plan), a, one_sided=bool(sign)))
    far = min(plan.max_layouts, CONFIRM_FAR * top)
    ns = tuple(extended(plan.layouts, top, far))
    d2 = SIDE_STEP * m
    try:
        for k in ns:
            ga, gb = tr.groups_after(last_good, used, k, r), tr.groups_after(culprit, used, k, r)
            pool.add_fresh(last_good, used, ga)
            pool.add_fresh(culprit, used, gb)
            clip = CLIP_LAYOUT * layout_scale(pool)  # (the robust scale with these layouts in it)
            ya, yb = pool.add_fresh(last_good, used, ga, clip), pool.add_fresh(culprit, used, gb, clip)
            t = zvalues(pool, ya, yb)
            size = t.est
            if say is not None:
                say(f"confirmation {last_good[:12]}..{culprit[:12]}: {k} fresh layouts a side, x{math.exp(size):.4f}")
            lo, hi = t.interval(ns, a, sign)
            ok = band_verdict(lo, hi, size, plan.min_effect, False)[0] != "no difference"
            # futility (stopping without rejecting keeps the level): carried on to the last look,
            # would the test show a step of SIDE_STEP x the minimum effect beyond the band?
            toward = sign or (1 if size >= 0 else -1)
            futile = k < ns[-1] and conditional_power(t, pool, ns, a, d2, toward, m, bool(sign)) < FUTILITY
            if ok or k >= ns[-1] or futile:
                shown = _display(tr, (last_good, culprit), k, r, t, Looks(a, ns, sign, band=True), plan.min_effect,
                                 used)
                if not ok:
                    why = (shown.reason or "not shown on the fresh layouts") if abs(size) >= m else \
                        f"the step on the fresh layouts is smaller than the {100 * plan.min_effect:g}% minimum effect"
                    shown = dataclasses.replace(shown, verdict="no difference", reason=why)
                return shown, k, size
        return shown, k, size
    except Skip:  # nothing confirmed: never the last look's comparison without its downgrade
        return None, k, size


# -- the bisection ---------------------------------------------------------------------------------

class MemoryJournal:
    """Marks kept in memory (the simulation); ``bisect.py`` keeps them in the store."""

    def __init__(self):
        self.log: list[dict] = []

    def marks(self, segment: str | None) -> dict[str, dict]:
        return {e["commit"]: e for e in self.log if e.get("segment") == segment}

    def record(self, segment: str | None, commit: str, j: Judgement, target: str | None = None) -> None:
        verb = {"good": "good", "bad": "bad", "between": "bad"}.get(j.verdict, "skip")
        why = "" if verb != "skip" else ("uncertain" if j.verdict == "uncertain" else "build")
        self.log.append({"verb": verb, "commit": commit, "segment": segment, "layouts": j.layouts,
                         "runs": j.runs, "why": why, "note": j.describe(),
                         **({"target": target} if target is not None else {})})


@dataclass
class Step:
    """One change point: the first bad commit of a (sub)range and what confirms it."""

    status: str  #: found, uncertain (confirmation failed), range (skipped commits in the way)
    last_good: str
    culprit: str | None
    range: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    confirmation: stats.Comparison | None = None
    confirm_layouts: int = 0
    effect: float = math.nan  #: log ratio culprit/last good on the fresh layouts of the confirmation
    share: float = math.nan  #: effect / log(BAD/GOOD) of the whole range
    share_p: float = math.nan  #: kept for the JSON (the share test is no longer a decision)


@dataclass
class Outcome:
    status: str  #: noise (equivalence shown), not-shown, found, uncertain, range, budget
    ends: Ends
    steps: list[Step] = field(default_factory=list)  #: every step looked at, in commit order
    several: bool = False  #: more than one change point confirmed, or a change shown but not located
    residual: list[dict] = field(default_factory=list)  #: sub-ranges beside a found step shown to differ
    #: every sub-range beside a found step that was tested: good, bad, status (differs / not-shown /
    #: noise), ratio, its interval and that interval's confidence, layouts a side at the last look,
    #: the test's level
    sides: list[dict] = field(default_factory=list)
    share: float = math.nan
    probes: int = 0
    alpha: float = 0.05
    rounds: int = 0  #: rounds of probes (one probe per round with one prober, up to k with k)
    k: int = 1  #: probers (machines) measuring probes in parallel
    runs: int = 0  #: runs measured (values), all probers
    candidates: list[tuple[str, float]] = field(default_factory=list)  #: budget: (commit, P(step here))
    note: str = ""

    @property
    def culprit(self) -> str | None:
        """The first bad commit: the earliest confirmed change point."""
        found = [s for s in self.steps if s.status == "found"]
        return found[0].culprit if found and self.status == "found" else None

    def bound(self) -> str:
        a = f"{100 * self.alpha:g}%"
        farm = f"; {self.k} probes per round, each against GOOD and BAD measured on its own machine" if self.k > 1 else ""
        return (f"a range without a code change is blamed with probability <= {a} (the endpoints' always-valid "
                f"test); any named commit whose own step is at most the minimum effect passes its confirmation on fresh layouts with "
                f"probability <= {a} (all confirmations together); any probe misjudged with probability <= {a} "
                f"(every probe counted)" + farm)


def _window(commits: list[str], marks: dict[str, dict]) -> tuple[int, int, list[int]]:
    lo = max([i for i, c in enumerate(commits) if marks.get(c, {}).get("verb") == "good"] + [0])
    hi = min([i for i, c in enumerate(commits) if i > lo and marks.get(c, {}).get("verb") == "bad"]
             + [len(commits) - 1])
    return lo, hi, [i for i in range(lo + 1, hi) if commits[i] not in marks]


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


class _Search:
    """What one bisection carries through its segments: the plan, the probers, the journal."""

    def __init__(self, probers, commits, plan, journal, say, out):
        self.probers, self.commits, self.plan, self.journal, self.say, self.out = \
            probers, commits, plan, journal, say, out
        self.planned = planned_probes(len(commits), len(probers))
        self.window: tuple | None = None  #: (segment commits, lo, hi) being searched


def bisect_range(prober, commits: list[str], plan: Plan, journal, segment: str | None = None,
                 say=lambda m: None, ends: Ends | None = None) -> Outcome:
    """Bisect ``commits`` (GOOD first, BAD last) for every change point of at least the
    minimum effect (``plan.first_only``: the first one found): a step is searched, confirmed,
    then the sub-ranges before and after it are tested and, when they differ, searched too.

    ``prober`` may be a list of k probers (one per machine): each round then judges up to k
    probes in parallel (:func:`_k_step`); the endpoints, the confirmations and the residual
    tests run on the first.  ``plan.budget`` caps the runs: the outcome is then ``budget``
    with the candidates left and their probabilities."""
    probers = [p if isinstance(p, Tracked) else Tracked(p)
               for p in (prober if isinstance(prober, (list, tuple)) else [prober])]
    for p in probers:
        p.say = say
    prober = probers[0]
    if plan.budget is not None and prober.ledger.budget is None:
        prober.ledger.budget = plan.budget
    for p in probers[1:]:
        p.ledger = prober.ledger
    try:
        if ends is None:
            ends = endpoints(prober, commits[0], commits[-1], plan, say=lambda m: say(f"endpoints: {m}"))
    except OutOfBudget:
        out = Outcome("budget", None, alpha=plan.alpha, k=len(probers), runs=prober.ledger.spent)
        out.note = "not decided at this budget: the endpoints' test has not shown a change yet"
        return out
    out = Outcome(ends.status, ends, alpha=plan.alpha, k=len(probers))
    if ends.status != "differs":
        out.runs = prober.ledger.spent
        return out
    ctx = _Search(probers, commits, plan, journal, say, out)
    try:
        _search(ctx, commits, segment)
    except OutOfBudget:
        out.status = "budget"
        if ctx.window is not None:
            sub, lo, hi = ctx.window
            out.candidates = posterior(prober.pool, sub, lo, hi)
            out.note = ("not decided at this budget: the step is among " + ", ".join(
                f"{c[:12]} ({100 * p:.0f}%)" for c, p in out.candidates) + f"; about {_more_runs(ctx, sub, lo, hi)} "
                "more runs would decide")
    total = float(prober.pool.y[commits[-1]].mean() - prober.pool.y[commits[0]].mean())
    for s in out.steps:
        s.share = s.effect / total if total and math.isfinite(s.effect) else math.nan
    out.steps.sort(key=lambda s: commits.index(s.culprit) if s.culprit in commits else len(commits))
    found = [s for s in out.steps if s.status == "found"]
    if out.status != "budget":
        out.status = "found" if found else (out.steps[0].status if out.steps else "uncertain")
    out.share = sum(s.share for s in found if math.isfinite(s.share)) if found else math.nan
    located = {(s.last_good, s.culprit) for s in found}
    out.several = len(found) > 1 or any((r["good"], r["bad"]) not in located and r.get("unlocated")
                                        for r in out.residual)
    out.runs = prober.ledger.spent
    return out


def _search(ctx: _Search, sub: list[str], segment: str | None) -> None:
    """Find the step of ``sub`` (its ends differ), then test the sub-ranges beside it."""
    plan, prober, out = ctx.plan, ctx.probers[0], ctx.out
    st, probes, rounds = _k_step(ctx.probers, sub, plan, ctx.journal, segment, ctx.say, ctx)
    out.probes += probes
    out.rounds += rounds
    out.steps.append(st)
    if st.culprit is None or (plan.first_only and st.status == "found"):
        return  # skipped commits in the way; or --first-only  (an unconfirmed step: look beside it too)
    lo, hi = sub.index(st.last_good), sub.index(st.culprit)
    pool = prober.pool
    # the sides are tested like endpoints, the likelier first (at the larger of the family's levels);
    # each looks further only while its measured commits suggest a step (an always-valid test may)
    c0, c1 = ctx.commits[0], ctx.commits[-1]
    y0 = pool.y
    sign = 1.0 if float(y0[c1].mean() - y0[c0].mean()) >= 0 else -1.0
    d1 = SIDE_STEP * math.log1p(plan.min_effect)  # the step a side test looks for (log scale)

    for side in sorted((sub[:lo + 1], sub[hi:]), key=lambda sd: side_evidence(pool, sd, sign), reverse=True):
        if len(side) < 2 or (plan.first_only and any(s.status == "found" for s in out.steps)):
            continue
        a, b = side[0], side[-1]
        have = max(plan.side_first, min(pool.n(a), pool.n(b)))  # the first look buys no layout it need not
        cap = max(MIN_LAYOUTS, min(plan.max_layouts, max(have, RESIDUAL_FAR)))
        prober.ledger.residuals += 1
        level = family_level(plan.alpha, prober.ledger.residuals)
        where = "before" if b == st.last_good else "after"
        ctx.say(f"side test {a[:12]}..{b[:12]} (the range {where} the step at {st.culprit[:12]}; "
                f"{prober.ledger.spent} runs spent" + (f" of {prober.ledger.budget}" if prober.ledger.budget else "") + ")")
        try:
            e = endpoints(prober, a, b, dataclasses.replace(plan, layouts=min(have, cap), prove_null=False),
                          level=level, cap=cap,
                          stop=SideStop(lambda k, side=side: side_llr(pool, side, sign, d1) > math.log(plan.side_a),
                                        (d1, sign)),
                          say=lambda m, name=f"side test {a[:12]}..{b[:12]}": ctx.say(f"{name}: {m}"))
        except Skip:
            continue
        c = e.comparison
        out.sides.append({"good": a, "bad": b, "status": e.status, "ratio": c.ratio, "ci_low": c.ci_low,
                          "ci_high": c.ci_high, "confidence": c.confidence, "layouts": e.layouts, "level": level,
                          "cap": cap, "futile": e.futile,
                          "reach": math.expm1(e.reach) if math.isfinite(e.reach) else None,
                          "shows": math.expm1(e.shows) if math.isfinite(e.shows) else None})
        if e.status != "differs":
            continue
        rec = {"good": a, "bad": b, "ratio": c.ratio, "level": level}
        out.residual.append(rec)
        n0 = len([s for s in out.steps if s.status == "found"])
        _search(ctx, side, f"{a}..{b}")
        rec["unlocated"] = len([s for s in out.steps if s.status == "found"]) == n0


def side_llr(pool: Pool, side: list, sign: float, d1: float) -> float:
    """When to stop looking, not a claim: the log likelihood ratio of "a step of ``d1`` (log scale)
    in the direction ``sign`` at one of the places a step could split the measured commits of
    ``side``, each place equally likely" against "no step", from the difference of the mean after
    the split and the mean before it (each commit's mean weighted by its layouts, pooled variance
    s^2): per split (d * d1 - d1^2 / 2) / (s^2 (1/n_before + 1/n_after)), averaged as likelihood
    ratios.  Under no step it drifts down as layouts are added (Wald's test stops at its lower
    boundary); under a step of d1 it drifts up.  -inf with fewer than two measured commits."""
    split = _splits(pool, side, sign)
    if split is None:
        return -math.inf
    d, v = split
    ll = (d * d1 - d1 * d1 / 2.0) / v
    top = float(ll.max())
    return top + math.log(float(np.mean(np.exp(ll - top))))


def side_evidence(pool: Pool, side: list, sign: float) -> float:
    """Where to look, not a claim: how strongly the commits of ``side`` measured so far (its ends,
    the probes in it, a confirmation's layouts) suggest a step in the direction ``sign``: the
    largest z over the places a step could split them, of the mean of the commits after the split
    minus the mean of those before (each commit's mean weighted by its layouts, pooled variance).
    -inf when fewer than two of its commits are measured."""
    split = _splits(pool, side, sign)
    if split is None:
        return -math.inf
    d, v = split
    return float(np.max(d / np.sqrt(v)))


def _splits(pool: Pool, side: list, sign: float):
    """For each place a step could split the measured commits of ``side`` (in order): the mean of
    the commits after it minus the mean of those before (each commit's mean weighted by its
    layouts), in the direction ``sign``, and that difference's variance under the pooled s^2.
    None with fewer than two measured commits or no variance yet."""
    ms = [pool.y[c] for c in side if c in pool.y and pool.y[c].size]
    s2, _ = pool.var()
    if len(ms) < 2 or not s2 > 0:
        return None
    n = np.array([y.size for y in ms], dtype=float)
    cum = np.cumsum([y.sum() for y in ms])
    nl = np.cumsum(n)[:-1]
    nr = n.sum() - nl
    return sign * ((cum[-1] - cum[:-1]) / nr - cum[:-1] / nl), s2 * (1.0 / nl + 1.0 / nr)


def posterior(pool: Pool, sub: list[str], lo: int, hi: int) -> list[tuple[str, float]]:
    """P(the step is at commit i) for i in lo+1..hi of ``sub``: a single step between the levels
    of sub[lo] and sub[hi], a uniform prior, every measured commit of the window as evidence
    (normal, pooled variance)."""
    s2, _ = pool.var()
    g, b = sub[lo], sub[hi]
    if g not in pool.y or b not in pool.y or not s2 > 0:
        n = hi - lo
        return [(sub[i], 1.0 / n) for i in range(lo + 1, hi + 1)]
    mg, mb = pool.y[g].mean(), pool.y[b].mean()
    ll = []
    for i in range(lo + 1, hi + 1):
        x = 0.0
        for j in range(lo + 1, hi):
            y = pool.y.get(sub[j])
            if y is None or y.size == 0:
                continue
            mu = mg if j < i else mb
            x -= float(np.sum((y - mu) ** 2)) / (2 * s2)
        ll.append(x)
    ll = np.array(ll)
    p = np.exp(ll - ll.max())
    p /= p.sum()
    return [(sub[i], float(q)) for i, q in zip(range(lo + 1, hi + 1), p)]


def _more_runs(ctx: _Search, sub, lo, hi) -> int:
    """About how many runs the rest of the search would take: the probes left at the layouts
    the last probes took, and a confirmation."""
    marks = [e for e in ctx.journal.log] if hasattr(ctx.journal, "log") else []
    k = max([e.get("layouts", 0) for e in marks] + [ctx.plan.layouts])
    left = max(1, math.ceil(math.log2(max(2, hi - lo))))
    return (left + 2) * k * ctx.plan.runs


def reach(s2: float, n: int, level: float, power: float = NOISE_POWER) -> float:
    """The smallest step (relative) that a two-sided test at ``level`` with looks up to ``n``
    layouts a side (MIN_LAYOUTS, x1.5, ... n) shows with probability ``power`` when a layout's
    value has variance ``s2``: a side test that stopped at ``n`` without showing a change could
    have missed any step smaller than this.  nan without a variance or a layout."""
    if not (s2 > 0 and math.isfinite(s2)) or n < 1:
        return math.nan
    c = gs_boundary(tuple(schedule(min(MIN_LAYOUTS, n), n)), level) + float(ndtri(power))
    return math.expm1(c * math.sqrt(2.0 * s2 / n))


def step_power(step: float, noise: float, plan: Plan) -> dict:
    """Will a step of ``step`` (relative, e.g. 2x the minimum effect) be named at layout noise
    ``noise`` (the relative sd of a layout's value)?  The chance that the endpoints' test shows it
    by its furthest look and that the first confirmation shows it beyond the minimum effect by
    its furthest look (normal approximation, the boundaries of their designs): ``power`` the
    smaller of the two; ``layouts`` the confirmation's furthest look; ``needed`` the layouts a
    side at which both would reach NOISE_POWER (None: no number of layouts, the step is not
    beyond the minimum effect); ``likely_missed`` when power < 0.8."""
    d, m = math.log1p(step), math.log1p(plan.min_effect)
    s2 = noise * noise
    lc = family_level(plan.alpha, 1)
    top = plan.cap
    if top < plan.noise_top:
        top = max(top, noise_cap(plan, s2, _top_looks(plan), lc, one_sided=True))
    far = min(plan.max_layouts, CONFIRM_FAR * top)
    c_conf = gs_boundary(tuple(extended(plan.layouts, top, far)), lc, one_sided=True)
    ends_ns = _top_looks(plan)
    c_ends = gs_boundary(ends_ns, plan.alpha)
    ends_n = noise_cap(plan, s2, ends_ns, plan.alpha)

    def p_at(n_conf: int, n_ends: int) -> float:
        se_c, se_e = noise * math.sqrt(2.0 / n_conf), noise * math.sqrt(2.0 / n_ends)
        return float(min(ndtr((d - m) / se_c - c_conf), ndtr(d / se_e - c_ends)))

    power = p_at(far, ends_n)
    needed = None
    if d > m:
        zb = float(ndtri(NOISE_POWER))
        needed = max(math.ceil(2.0 * s2 * ((c_conf + zb) / (d - m)) ** 2),
                     math.ceil(2.0 * s2 * ((c_ends + zb) / d) ** 2))
    return {"step": step, "power": power, "layouts": far, "needed": needed, "likely_missed": power < 0.8}


def share_test(prober, four: tuple, share_min: float, runs: int) -> float:
    """One-sided p-value of "the step explains at least ``share_min`` of the endpoints' change",
    from the layouts GOOD, last good, culprit and BAD were all measured on: per layout
    x = log(culprit/last good) - share_min * log(BAD/GOOD), a t test of mean(x) >= 0 against
    mean(x) < 0 (the sign of the endpoints' change taken as measured).  nan with < 3 layouts."""
    k = min(prober.kmax.get(c, 0) for c in four)
    if k < 3:
        return math.nan
    try:
        g, lg, c, b = (prober.groups(x, k, runs) for x in four)
    except Skip:
        return math.nan
    ids = [i for i in g if i in lg and i in c and i in b]
    if len(ids) < 3:
        return math.nan

    def m(grp, i):
        return sum(math.log(v) for v in grp[i]) / len(grp[i])

    total = [m(b, i) - m(g, i) for i in ids]
    sign = 1.0 if sum(total) >= 0 else -1.0
    x = [sign * ((m(c, i) - m(lg, i)) - share_min * t) for i, t in zip(ids, total)]
    return stats.one_sided_t(x)


def planned_probes(n_commits: int, k: int = 1) -> int:
    """Probes a (k+1)-ary search over ``n_commits`` (GOOD and BAD included) makes: k per round
    over ceil(log_(k+1)(n - 1)) rounds (k = 1: a binary search, ceil(log2(n - 1)))."""
    if k <= 1:
        return max(1, math.ceil(math.log2(max(2, n_commits - 1))))
    return max(1, k * rounds_needed(n_commits, k))


def rounds_needed(n_commits: int, k: int) -> int:
    """ceil(log_(k+1)(n - 1)) in integers (no floating-point surprise at exact powers)."""
    span, r = max(2, n_commits - 1), 0
    while (k + 1) ** r < span:
        r += 1
    return max(1, r)




def split(lo: int, hi: int, cand: list[int], k: int) -> list[int]:
    """The probes of one round of a (k+1)-ary search of the window lo..hi: for each cut
    lo + (j+1)(hi-lo)/(k+1) the untested candidate nearest to it (ties: the earlier),
    each at most once; sorted.  k = 1: the candidate nearest the middle, as a bisection."""
    picks: list[int] = []
    for j in range(k):
        cut = lo + (j + 1) * (hi - lo) / (k + 1)
        left = [x for x in cand if x not in picks]
        if not left:
            break
        picks.append(min(left, key=lambda x: (abs(x - cut), x)))
    return sorted(picks)


def _k_step(probers: list, commits: list[str], plan: Plan, journal, segment, say,
            ctx: _Search | None = None) -> tuple[Step, int, int]:
    """One change point with k probers: each round splits the window lo..hi (k+1)-ary
    (:func:`split`), probe j judged by prober j against GOOD and BAD measured by the same
    prober (never two machines in one comparison), the k judgements in parallel threads;
    then the marks are recorded in probe order (with the name of the prober that judged it)
    and the window narrows to the last good / first bad mark.  Each probe is judged at its
    own level (:func:`probe_level`: every probe of the bisection counts).  The confirmation
    runs on the first prober.  Returns (step, probes, rounds)."""
    probes = rounds = 0
    good, bad = commits[0], commits[-1]
    k = len(probers)
    prober = probers[0]
    ledger = prober.ledger
    planned = ctx.planned if ctx is not None else planned_probes(len(commits), k)
    pool = ThreadPoolExecutor(max_workers=k - 1, thread_name_prefix="probe") if k > 1 else None
    resumed = True
    try:
        while True:
            marks = journal.marks(segment)
            if resumed:  # marks an interrupted run of this bisection recorded here: probes all the same,
                resumed = False  # counted against the error budget and in the verdict as if never interrupted
                ledger.probes += len(marks)
                probes += len(marks)
                rounds += -(-len(marks) // k)
                _reload(probers, marks, good, bad, plan)
            lo, hi, cand = _window(commits, marks)
            if ctx is not None:
                ctx.window = (commits, lo, hi)
            if not cand:
                break
            picks = split(lo, hi, cand, k)
            rounds += 1
            levels = []
            for _ in picks:
                ledger.probes += 1
                levels.append(probe_level(plan.alpha, ledger.probes, planned))
            for i, pr in zip(picks, probers):
                where = f" on {pr.name}" if k > 1 and pr.name else ""
                say(f"probe {commits[i][:12]}{where} ({len(cand)} commit(s) left to test; "
                    f"{ledger.spent} runs spent" + (f" of {ledger.budget}" if ledger.budget else "") + ")")
            futs = [pool.submit(judge_probe, pr, commits[i], good, bad, plan, lv)
                    for i, pr, lv in zip(picks[1:], probers[1:], levels[1:])] if pool else []
            first = judge_probe(prober, commits[picks[0]], good, bad, plan, levels[0])  # this thread
            judged = [first] + [f.result() for f in futs]
            for i, pr, j in zip(picks, probers, judged):
                probes += 1
                journal.record(segment, commits[i], j, pr.name)
                say(f"{commits[i][:12]}: {j.describe()}" + (f" [{pr.name}]" if k > 1 and pr.name else ""))
            if any(j.verdict == "uncertain" for j in judged):
                # a probe undecided at 2x the test cap: its neighbours share most of its layouts and
                # would be as undecided; the window is the answer (a range), not more probes
                break
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    marks = journal.marks(segment)
    lo, hi, _ = _window(commits, marks)
    skipped = [{"commit": commits[i], "why": marks[commits[i]].get("why", ""),
                "note": marks[commits[i]].get("note", "")}
               for i in range(lo + 1, hi) if marks.get(commits[i], {}).get("verb") == "skip"]
    if skipped:
        return Step("range", commits[lo], None, commits[lo + 1:hi + 1], skipped), probes, rounds
    culprit = commits[hi]
    # fresh seeds: beyond every seed any decision of this bisection (this run or an interrupted
    # one) used on *any* commit -- neighbouring commits share much of their layouts, so a seed
    # selected on one is not fresh on the next
    used = max([plan.layouts, ledger.top] + [p.kmax.get(c, 0) for p in probers for c in commits]
               + [e.get("layouts", 0) for e in marks.values()])
    ledger.confirmations += 1
    say(f"confirmation {commits[lo][:12]}..{culprit[:12]} on fresh layouts ({ledger.spent} runs spent"
        + (f" of {ledger.budget}" if ledger.budget else "") + ")")
    y = prober.pool.y
    sign = int(np.sign(y[bad].mean() - y[good].mean())) if good in y and bad in y else 0
    c, kc, effect = confirm(prober, commits[lo], culprit, plan, used,
                            level=family_level(plan.alpha, ledger.confirmations), sign=sign,
                            cap=None if ledger.confirmations == 1 else min(plan.max_layouts, max(plan.cap, CONFIRM_LATER)))
    st = Step("found" if (c is not None and c.significant) else "uncertain", commits[lo], culprit,
              confirmation=c, confirm_layouts=kc, effect=effect)
    return st, probes, rounds


def _reload(probers: list, marks: dict, good, bad, plan: Plan) -> None:
    """The layouts of the probes an interrupted run judged (its marks), back into the pool of the
    prober that judged them, GOOD and BAD as far (as judge_probe left them): a resumed bisection
    then pools the same layouts, and its later tests and intervals are the uninterrupted one's.
    (They come from the store: nothing is run again.)"""
    for c, e in marks.items():
        kl = int(e.get("layouts") or 0)
        if kl <= 0:
            continue
        pr = next((p for p in probers if getattr(p, "name", None) and p.name == e.get("target")), probers[0])
        r = int(e.get("runs") or plan.runs)
        try:
            for x in (good, bad):
                if pr.pool.y.get(x, np.empty(0)).size < kl:
                    _measure(pr, x, kl, r)
            _measure(pr, c, kl, r)
        except Skip:
            continue


# -- the single-layout baseline --------------------------------------------------------------------

def single_layout(single, commits: list[str], threshold: float | None = None) -> dict:
    """What a tool without a layout model does (asv find): one value per commit (``single(c)``,
    the default link, one run), each probe called good or bad by the bracketing value it is
    nearer to.  With ``threshold`` it first says "no change" when the endpoints' values differ
    by less than that (relative)."""
    vals: dict[int, float | None] = {}

    def v(i: int) -> float | None:
        if i not in vals:
            try:
                vals[i] = single(commits[i])
            except Skip:
                vals[i] = None
        return vals[i]

    lo, hi = 0, len(commits) - 1
    if v(lo) is None or v(hi) is None:
        return {"culprit": None, "range": [], "note": "an endpoint does not build", "values": len(vals)}
    if threshold is not None and abs(math.log(v(hi) / v(lo))) < math.log1p(threshold):
        return {"culprit": None, "range": [], "note": f"endpoints differ by less than {100 * threshold:g}%",
                "values": len(vals)}
    while hi - lo > 1:
        mid = (lo + hi) / 2
        order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
        m = next((i for i in order if v(i) is not None), None)
        if m is None:
            return {"culprit": None, "range": commits[lo + 1:hi + 1], "note": "only unbuildable commits left",
                    "values": len(vals)}
        if abs(v(m) - v(lo)) <= abs(v(hi) - v(m)):
            lo = m
        else:
            hi = m
    change_ = v(hi) / v(lo) - 1 if v(lo) else math.nan
    return {"culprit": commits[hi], "change": change_, "range": [], "values": len(vals)}
