"""The plan of a bisection's tests: how far each test looks and at what level, the errors it may
make, how many probes a search plans, and the tuning constants, each with the measurement that set it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from .. import stats


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
#: test overshot that boundary).  python3 -m bench.side_frontier, 200 histories, 16 commits:
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
#: a confirmation looks on beyond its cap (the plan's for the first, CONFIRM_LATER for the later ones, noise_cap at a
#: noisy benchmark) up to CONFIRM_FAR x the cap, and stops sooner once it would more likely miss a step of SIDE_STEP
#: x the minimum effect than show it beyond the band (conditional_power below FUTILITY, from its first look;
#: futility_step: a larger step when no look could show that one). A 1σL step (1%, twice the 0.5% minimum effect) at
#: a layout sd of 1.04% is shown beyond the band with 90% power only at ~130 (level 0.0304) to ~170 (0.0076) fresh
#: layouts a side. python3 -m bench.simulate --min-effect-rows --rows 1 --histories 50: a single 1σL step named 78%
#: at 242 runs with 3, 92% at 266 runs with 4; the 80 two-step histories of tests/test_calibration.py (1+3σL, 3+1σL):
#: both named 67 (3) / 74 (4) of 80.  With the far look held to 128 layouts and a stop at the cap once the estimate
#: itself could not clear the band at the far look: 54% at 217 runs, and 42 of 80.
CONFIRM_FAR = 4
#: beyond its cap a confirmation's looks grow by this factor (x GROWTH up to the cap): where a step near twice
#: the minimum effect is shown (60-160 fresh layouts a side at 1% layout noise) a finer grid stops nearer
#: the layout that shows it, and the few looks more raise the boundary little.  The confirmation alone
#: (decide.confirm_forecast's paths, one-sided level 0.0304, looks to 160): a step of 2x the minimum effect
#: at a layout sd of 1.04% shown 93.2% at 145 runs (mean) with 1.5, 92.9% at 135 with 1.25; 4x and 10x
#: cost the same (20 and 8 runs); a step at the minimum effect confirmed 3.0% with either.
CONFIRM_GROWTH = 1.25
CONFIRM_LATER = 64  #: the cap of the confirmations after the first (a second step; they look on to CONFIRM_FAR x it)
#: a confirmation may spend at most this share of its bisection's runs: it stops at the last look of its
#: design within CONFIRM_SHARE / (1 - CONFIRM_SHARE) x the runs spent before it (layouts a side: that / 2R),
#: at least SHARE_FLOOR x Plan.cap (Plan.confirm_share, --confirm-share; 1: no bound).  A confirmation that
#: reaches the bound without showing the step beyond the minimum effect ends uncertain and says what it
#: showed.  python3 -m bench.simulate --min-effect-rows --rows 1,2, 100 histories, right at 1σL / 2σL and runs:
#: 91% 243.1 / 100% 82.6 at 0.9 (no bound: the same), 88% 240.8 at 0.85, 86% 239.0 at 0.75, 72% 222.3 at
#: 0.6: the bound binds where the search was cheap (20-45 runs) and the step needs 90-135 fresh layouts.
CONFIRM_SHARE = 0.9
SHARE_FLOOR = 2  #: the share bound is never below SHARE_FLOOR x the plan's cap (80 fresh layouts a side)
#: a candidate whose estimate on the search's layouts is within NEAR x the minimum effect is said at
#: once, with the forecast of its confirmation (decide.confirm_forecast)
NEAR = 1.5
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
#: python3 -m bench.simulate --rows 3,7 --first-only and --only-two, 200 histories, without the stop / with
#: it: a 4σL step at σL 2% (a layout-noisy target, four times the minimum effect) 167.4 / 42.1 runs
#: (--first-only 28.9); a 5σL step at σL 1% 63.8 / 63.6; two steps 1+3σL / 3+1σL both named
#: 91.0% / 90.5% without, 90.0% / 90.5% with it (258.9 / 237.5 and 255.9 / 236.7 runs).  0.8: the noisy step 30.7 runs, 1+3σL both named 87% (100
#: histories); below 0.5 a side test at σL 2% goes on to ~16 layouts a side (more than 2x --first-only).
#: A confirmation stops on the same rule (its band test, the step futility_step: SIDE_STEP x the minimum effect
#: unless its last look cannot show that).
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
    confirm_share: float = CONFIRM_SHARE  #: a confirmation's runs at most this share of the bisection's (1: no bound)
    #: the endpoints and the confirmation read a paired test (per-seed differences) beside the pooled one,
    #: each at half the level (Bonferroni): a change or an equivalence when either shows it (--paired; off by
    #: default: python3 -m bench.simulate --layout-corr, 300 histories a row: a 1σL step 0.69x / 0.51x the runs at
    #: correlation 0.8 / 0.99 but 1.06x at 0, and layout-only shifts of 0.3% 1.15x / 1.26x at 0.8 / 0.99)
    paired: bool = False

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


def share_layouts(plan: Plan, spent: int) -> int | None:
    """The fresh layouts a side a confirmation may measure when ``spent`` runs were spent before it:
    plan.confirm_share / (1 - plan.confirm_share) x spent runs, / 2R, at least SHARE_FLOOR x the plan's
    cap (a cheap search still gets a confirmation of that size);
    None without a bound (confirm_share >= 1)."""
    if not plan.confirm_share < 1:
        return None
    runs = plan.confirm_share / (1.0 - plan.confirm_share) * max(0, spent)
    return max(MIN_LAYOUTS, plan.layouts, SHARE_FLOOR * plan.cap, math.floor(runs / (2 * plan.runs) + 1e-9))


def confirm_looks(plan: Plan, s2: float, level: float, sign: int = 0, cap: int | None = None,
                  spent: int | None = None) -> tuple[tuple, int]:
    """The looks (layouts a side) of a confirmation's design at ``level``, and the last of them it may
    take.  The design: K, 1.5K, ... up to the cap (``cap``, else the plan's; at a noisy benchmark
    :func:`noise_cap` at the pooled variance ``s2``), then x CONFIRM_GROWTH a look on to CONFIRM_FAR x
    that, at most max_layouts.  The last look taken: the design's last, or the last look within the share bound
    (:func:`share_layouts` of ``spent``, the runs spent before it) when that comes first.  The
    boundary and the futility stop are the whole design's: stopping at an earlier look of it only
    lowers the chance of a false confirmation."""
    top = cap or plan.cap
    if top < plan.noise_top:
        top = max(top, noise_cap(plan, s2, top_looks(plan), level, one_sided=bool(sign)))
    far = min(plan.max_layouts, CONFIRM_FAR * top)
    first = max(MIN_LAYOUTS, min(plan.layouts, far))
    ns = tuple(extended(first, max(first, min(top, far)), far, CONFIRM_GROWTH))
    lim = share_layouts(plan, spent) if spent is not None else None
    last = ns[-1] if lim is None else max([k for k in ns if k <= lim] or [ns[0]])
    return ns, last


def extended(first: int, cap: int, top: int, growth: float = GROWTH) -> list[int]:
    """The looks of a test that stops at ``cap`` at a quiet benchmark and may go on to ``top`` at a
    noisy one: schedule(first, cap), then ``growth`` times the last, ... up to top."""
    out = schedule(first, cap)
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, math.ceil(growth * out[-1]))))
    return out


def top_looks(plan: Plan) -> tuple:
    return tuple(extended(max(MIN_LAYOUTS, plan.layouts), plan.cap, plan.noise_top))


def schedule(first: int, top: int) -> list[int]:
    """Layouts per side at each look: first, then GROWTH times the last, ... up to top."""
    first = min(first, top)
    out = [first]
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, math.ceil(GROWTH * out[-1]))))
    return out


_GS: dict = {}


def futility_step(s2: float, ns: tuple, level: float, sign: int, m: float) -> float:
    """The step (log) a confirmation's futility asks about: SIDE_STEP x the minimum effect ``m``, or,
    when its design's last look ``ns[-1]`` cannot show that beyond the band with probability
    FUTILITY_POWER at the pooled noise ``s2`` (a minimum effect small beside the noise), the least step
    that look shows so: the band, the boundary and z(FUTILITY_POWER) standard errors.  Asked about a
    step no look can show, the test would stop at its first look, whatever the step."""
    if not (s2 > 0 and math.isfinite(s2)):
        return SIDE_STEP * m
    se = math.sqrt(2.0 * s2 / ns[-1])
    reach = m + (gs_boundary(tuple(ns), level, one_sided=bool(sign)) + float(ndtri(FUTILITY_POWER))) * se
    return max(SIDE_STEP * m, reach)


def gs_boundary(ns: tuple, level: float, one_sided: bool = False) -> float:
    """The constant (Pocock-type) z boundary of a group-sequential test with looks at ``ns``
    layouts per side (information proportional to n): P(some look's |z| >= c) = level under no
    change.  Computed once per design by 400,000 simulated Brownian paths (fixed seed)."""
    key = (tuple(ns), round(level, 12), one_sided)
    if key not in _GS:
        _GS[key] = float(np.quantile(_gs_maxima(tuple(ns), one_sided), 1.0 - level))
    return _GS[key]


@functools.lru_cache(maxsize=16)
def _gs_maxima(ns: tuple, one_sided: bool) -> np.ndarray:
    """The largest z (|z| two-sided) over the looks ``ns`` of 400,000 simulated paths under no
    change, sorted: the null distribution both :func:`gs_boundary` and :func:`gs_p` read."""
    rng = np.random.default_rng(20261125)
    ns_a = np.asarray(ns, dtype=float)
    inc = np.diff(np.concatenate(([0.0], ns_a)))
    w = np.cumsum(rng.standard_normal((400_000, len(ns))) * np.sqrt(inc), axis=1) / np.sqrt(ns_a)
    return np.sort(w.max(axis=1) if one_sided else np.abs(w).max(axis=1))


def gs_p(ns: tuple, z: float, one_sided: bool = False) -> float:
    """The repeated p-value of the group-sequential test with looks ``ns``: the smallest level at
    which its boundary (:func:`gs_boundary`) is at most ``z`` -- the statistic as the test reads it
    (a two-sided test's |z|; negative: on the null's side, p = 1) -- P(some look's z >= z) under no
    change.  It is at most a level exactly when the test's interval at that level excludes
    its null, so the p printed beside an interval is that interval's.  Below the simulation's
    resolution it is 1 / 400,000."""
    m = _gs_maxima(tuple(ns), one_sided)
    above = m.size - int(np.searchsorted(m, z, side="left"))
    return max(above, 1) / m.size


def family_level(alpha: float, i: int) -> float:
    """alpha_i = alpha * 6 / (pi^2 i^2), i = 1, 2, ...: sums to alpha over any number of tests."""
    return alpha * 6.0 / (math.pi ** 2 * i * i)


#: the first confirmation's share of alpha (the later ones share the rest as alpha_i): every bisection that
#: finds a step makes a first confirmation, few a second.  python3 -m bench.simulate --min-effect-rows --rows 1,2 and
#: --only-two --rows 1,2, 1,000 histories a row, right and runs at 6/pi^2 (0.61, alpha_i for every one) / 0.8:
#: 1σL 90.4% 253.2 / 91.4% 244.8; 2σL 100% 80.2 / 100% 79.4; two steps 1+3σL and 3+1σL both named
#: 92.5% 374.5 and 91.5% 351.4 / 92.2% 381.6 and 91.6% 357.3 (docs/how-it-decides.md, Figure 1)
CONFIRM_FIRST = 0.8


def confirm_level(alpha: float, i: int) -> float:
    """The level of the i-th confirmation of a bisection: CONFIRM_FIRST x alpha for the first, then the
    rest of alpha spread as alpha_i (:func:`family_level`) over the later ones: all of them together
    confirm a step of at most the minimum effect with probability <= alpha."""
    if i <= 1:
        return CONFIRM_FIRST * alpha
    return family_level((1.0 - CONFIRM_FIRST) * alpha, i - 1)


def probe_level(alpha: float, j: int, planned: int) -> float:
    """The level of the j-th probe (1-based) of a bisection: 3/4 alpha / planned for the
    planned probes, then a quarter of alpha spread as alpha_i over the ones beyond: every probe
    counts, and the levels of all of them sum to at most alpha (a level for the search, not a bound on
    misjudging a probe: judge_probe plugs in GOOD's and BAD's measured means)."""
    if j <= planned:
        return 0.75 * alpha / planned
    return family_level(alpha / 4.0, j - planned)


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
