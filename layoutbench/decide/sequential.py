"""The three tests of a bisection: the endpoints (is there a change?), one probe (like GOOD or like
BAD?) and the confirmation of a named commit on fresh layouts."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import chdtri, ndtr, ndtri

from .. import stats
from .model import (
    CLIP_LAYOUT,
    Looks,
    Pool,
    ZTest,
    band_verdict,
    dvalues,
    layout_scale,
    layout_values,
    layouts_to_rule_out,
    paired,
    ztest,
    zvalues,
)
from .plan import (
    futility_step,
    FUTILITY,
    FUTILITY_POWER,
    LOOKS_DIFFERENT,
    MIN_LAYOUTS,
    NOISE_POWER,
    Plan,
    Skip,
    top_looks,
    confirm_looks,
    extended,
    gs_boundary,
    noise_cap,
)
from .tracked import measure_at, pool_of, groups_after


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
    ns = ns or (max(k, 2),)
    lo, hi = t.interval(ns, level, sign)
    verdict, reason = band_verdict(lo, hi, t.est, min_effect, bool(prober.higher_is_better), band)
    p = t.gs_p(ns, sign, math.log1p(min_effect) if band else 0.0)  # the decision's own test, its own null
    return dataclasses.replace(c, ratio=math.exp(t.est), ci_low=math.exp(lo), ci_high=math.exp(hi),
                               p_value=p, p_raw=p, verdict=verdict, reason=reason, confidence=1.0 - level,
                               log_ratio=t.est, se=t.se, df=float(t.df), sided=int(sign), paired=t.paired,
                               n_layouts_a=t.na, n_layouts_b=t.nb, n_pairs=t.na if t.paired else 0, dropped=0,
                               method=(f"paired group-sequential test ({t.df} df) over {t.na} seeds" if t.paired else
                                       f"pooled-variance group-sequential test ({t.df} df), {t.na} vs {t.nb} layouts")
                                      + (f", null |effect| <= {100 * min_effect:g}%" if band else ""))


def change(ga: dict, gb: dict, hib: bool, level: float, min_effect: float, rank: bool = False) -> stats.Comparison:
    """B against A, paired over their common layouts, tested at ``level`` (a t test: for display)."""
    return stats.compare(ga, gb, hib, confidence=1.0 - level, paired=True, min_effect=min_effect, rank_test=rank)


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
    if not t.se > 0:
        return 1.0
    n = ns[-1]
    i_now = 1.0 / (t.se * t.se)  # the information: the pooled test's n_eff / s^2, the paired test's n / s_d^2
    i_cap = i_now / (1.0 / max(t.na, n) + 1.0 / max(t.nb, n)) / t.neff
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


def _ends_shown(tr, pair: tuple, at: tuple, tests: tuple, test: Looks, plan: Plan, c_eq: float) -> Ends | None:
    """At a look (``at``: layouts, runs, look): "differs" when a test of ``tests`` (the paired one first,
    when given) crosses its boundary with an estimate of at least the minimum effect, else "noise" when
    one's equivalence interval (est +- its ``c_eq`` boundary) lies within +-min_effect; the comparison
    printed is that test's.  None: neither shown."""
    m, a, ns = math.log1p(plan.min_effect), test.level, test.ns
    for t in tests:
        if t.crosses(ns, a) and abs(t.est) >= m:
            return Ends("differs", _display(tr, pair, at[0], at[1], t, test, plan.min_effect), *at, a)
    for t in tests:
        h = t.tost_half(c_eq)
        if abs(t.est) + h < m:  # an equivalence shown on the way: say it (cheap at low noise)
            shown = dataclasses.replace(_display(tr, pair, at[0], at[1], t, test, plan.min_effect),
                                        ci_low=math.exp(t.est - h), ci_high=math.exp(t.est + h),
                                        confidence=1.0 - 2.0 * a, verdict="no difference", sided=0,
                                        # the equivalence test's p: its nearer one-sided null, |effect| >= m
                                        p_value=dataclasses.replace(t, est=m - abs(t.est)).gs_p(ns, 1),
                                        reason=f"within ±{100 * plan.min_effect:g}% (equivalence test)")
            return Ends("noise", shown, *at, a,
                        f"its {100 * (1 - 2 * a):.3g}% interval (two one-sided {100 * a:.3g}% tests over the looks) lies "
                        f"within ±{100 * plan.min_effect:g}%: a change of {100 * plan.min_effect:g}% or more is ruled out")
    return None


def pairing_hint(pool: Pool, good, bad, t: ZTest) -> str:
    """A line for a run without ``--paired`` when the same seeds agree across the two commits: the
    seed-paired test's standard error, at its one-sided 95% upper bound (chi-square, its n - 1 degrees
    of freedom: a few pairs' sd often comes out small by chance), under half the pooled one's (``t``),
    so --paired would need fewer layouts here (the pooled test's result stands either way; empty when
    not so)."""
    p = paired(pool, good, bad)
    if p.df < 2 or not t.se > 0 or not p.se * math.sqrt(p.df / chdtri(p.df, 0.95)) < 0.5 * t.se:
        return ""
    return (f"the same seeds agree across {bad[:12]} and {good[:12]} (seed-paired se {100 * p.se:.3g}% "
            f"against the pooled {100 * t.se:.3g}%): --paired reads that and would need fewer layouts")


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
    tr, pool = pool_of(prober)
    go_on, futility = stop.go_on, stop.futility
    a = plan.alpha if level is None else level
    a = a / 2 if plan.paired else a  # each test's level: the paired and the pooled one (Bonferroni)
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
    futile, hint = False, ""
    judged = (ns[0], ns[0])  # the layouts a side at the last look judged ("differs" is judged at the looks only)
    for k, r, at_look in steps:
        j += at_look
        k = max(k, min(pool.n(good), pool.n(bad)))
        measure_at(tr, good, k, r)
        measure_at(tr, bad, k, r)
        t = ztest(pool, good, bad)
        if at_look:
            judged = (t.na, t.nb)
        line = f"{k} layouts a side, {bad[:12]}/{good[:12]} x{math.exp(t.est):.4f}"
        if say is not None and at_look:
            say(line)
            if not hint and not plan.paired and (hint := pairing_hint(pool, good, bad, t)):
                say(hint)
        if noisy:  # the boundary is the whole design's: stopping before its last look keeps the level
            last = noise_cap(plan, pool.var()[0], ns, a)
            if k >= plan.cap and abs(t.est) + float(ndtri(NOISE_POWER)) * t.se < m:
                last = k  # beyond the quiet cap only while a change of min_effect is still likely
        tests = (paired(pool, good, bad), t) if plan.paired else (t,)
        shown = _ends_shown(tr, (good, bad), (k, r, j), tests, Looks(a, ns), plan, c_eq) if at_look else None
        if shown is not None:
            return shown
        futile = futility is not None and k < last and all(conditional_power(u, pool, ns, a, *futility) < FUTILITY
                                                           for u in tests)
        if futile or k >= last or (go_on is not None and not go_on(k)):
            if say is not None and not at_look:  # stopped between two looks: its last layouts get a line too
                say(line)
            break
    more = layouts_to_rule_out(t, m, c_eq)
    need = (f"about {more - k} more layouts a side would rule it out" if more is not None else
            "at this estimate more layouts would not rule it out")
    hint = "" if plan.paired else pairing_hint(pool, good, bad, t)
    need += f"; {hint}" if hint else ""
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
    """Like GOOD or like BAD, at ``level``?  At each look (3, 4, 5, 6, ... layouts: one layout a look,
    each test valid whenever it is read; up to the cap):
    Wald's SPRT of "the probe's mean is GOOD's" against "BAD's" (the two means and the pooled
    variance plugged in), beside two always-valid tests "differs from GOOD" and "differs from
    BAD".  Differs from GOOD: *bad* (both: *between*); else the SPRT's side, *good* only when
    not shown to differ from GOOD.  Uncertain when the cap is reached."""
    tr, pool = pool_of(prober)
    a = plan.alpha / 2 if level is None else level
    bound = math.log((1.0 - a) / a)
    r = plan.runs
    k = MIN_LAYOUTS
    jd = Judgement("uncertain", level=a)
    # in a range with a shown change a probe may look further: twice the endpoints' cap (noise_cap)
    cap = min(plan.max_layouts, 2 * noise_cap(plan, pool.var()[0], top_looks(plan), plan.alpha))
    try:
        while True:
            for c in (good, bad):
                if pool.y.get(c, np.empty(0)).size < k:
                    measure_at(tr, c, k, r)
            yp = measure_at(tr, probe, k, r)
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
            k = min(cap, k + 1)
    except Skip as e:
        return Judgement("skip", note=str(e), level=a)


# -- the confirmation at the culprit -----------------------------------------------------------------

def shown_of(lo: float, hi: float, beyond: bool) -> str:
    """What a confirmation's interval (log scale, lo..hi) showed: ``beyond`` (the step beyond the band
    +-min_effect: confirmed), ``change`` (it excludes 0, so a change in its direction is shown at the
    test's level, but not beyond the minimum effect), ``none`` (it holds 0)."""
    if beyond:
        return "beyond"
    return "change" if (lo > 0.0 or hi < 0.0) else "none"


def _word(lo: float, hi: float, higher_is_better: bool) -> str:
    """slower or faster: the direction of an interval that excludes 0 (log ratio B/A)."""
    return "slower" if (lo > 0.0) != higher_is_better else "faster"


class Confirmed(tuple):
    """What :func:`confirm` returns: (the comparison, fresh layouts a side, the fresh log ratio), with
    ``shown`` (:func:`shown_of`; "" when nothing was measured), ``at_bound`` (it stopped at its share
    bound without confirming), ``bounded`` (its last look was the share bound) and ``looks``."""

    def __new__(cls, comparison, layouts: int, effect: float, **what):
        t = super().__new__(cls, (comparison, layouts, effect))
        t.shown, t.at_bound = what.get("shown", ""), bool(what.get("at_bound", False))
        t.bounded, t.looks = bool(what.get("bounded", False)), tuple(what.get("looks", ()))
        return t


def search_estimate(pool: Pool, last_good, culprit, sign: int) -> float:
    """The step last good -> culprit as the search measured it (log, signed toward the range's change
    ``sign``, else its size): the difference of their means over the layouts in the pool (nan when
    either has fewer than 2).  Those layouts selected the candidate, so it leans large; it says when a
    candidate is near the minimum effect and what the confirmation's forecast assumes, never what the
    test decides."""
    y = pool.y
    if y.get(last_good, np.empty(0)).size < 2 or y.get(culprit, np.empty(0)).size < 2:
        return math.nan
    d = float(y[culprit].mean() - y[last_good].mean())
    return d * sign if sign else abs(d)


def _beyond(t: ZTest, ns: tuple, level: float, sign: int, min_effect: float) -> bool:
    """The test's interval lies beyond the band +-min_effect (a confirmation's step shown)."""
    lo, hi = t.interval(ns, level, sign)
    return band_verdict(lo, hi, t.est, min_effect, False)[0] != "no difference"


def fresh_pairs(ga: dict, gb: dict, ya: np.ndarray, yb: np.ndarray) -> ZTest:
    """The paired test of a confirmation's fresh layouts (``ya``, ``yb``: the values of the groups ``ga``,
    ``gb``), when both sides hold the same layouts each with a run (else one without data, never
    rejecting)."""
    same = list(ga) == list(gb) and all(len(v) for v in ga.values()) and all(len(v) for v in gb.values())
    return dvalues(yb - ya) if same and ya.size == yb.size else dvalues(np.empty(0))


def confirm(prober, last_good, culprit, plan: Plan, used: int, level: float | None = None,
            sign: int = 0, cap: int | None = None) -> Confirmed:
    """Is the step last good -> culprit at least the minimum effect?  On *fresh* layouts only (the
    seeds after the first ``used``, which no decision saw): a group-sequential test at ``level``
    of the null |effect| <= min_effect (one-sided in the direction ``sign`` of the range's change
    when given: sign x effect <= min_effect): the step is confirmed when the test's own interval
    (:meth:`ZTest.interval`) excludes the whole band +-min_effect.  For the pooled test each side's
    fresh layout values are first pulled to within CLIP_LAYOUT robust layout sd of their median
    (:func:`clipped`, :func:`layout_scale`): with one run per layout an outlier run would otherwise be
    a layout far enough out to confirm a null step at the first look (the seed-paired test pairs them
    as measured: its variance is its own differences', which an outlier widens).  A commit whose true step is
    at most the minimum effect (null, or a small shift of moved code) is confirmed with
    probability <= ``level``.  The looks (:func:`confirm_looks`) go K, 1.5K, ... up to the cap (``cap``,
    else the plan's; at a noisy benchmark to :func:`noise_cap`) and on to CONFIRM_FAR x that (the
    design), and it stops at the design's last look within the share bound of the runs the prober's
    ledger spent before it; the test stops sooner (futility, which keeps its level) once, carried on
    to the design's last look, it would show a step of :func:`futility_step` beyond the band with
    probability below FUTILITY (:func:`conditional_power`, the band as its margin).  Returns (the fresh comparison with that
    interval -- verdict "no difference" when not confirmed -- or None when nothing could be
    measured; fresh layouts; the fresh log ratio) as a :class:`Confirmed`, which also says what the
    interval showed and whether the share bound stopped it.  The prober's ``say`` gets a line at each
    look."""
    tr, pool = pool_of(prober)
    say = tr.say
    a = plan.alpha if level is None else level
    a = a / 2 if plan.paired else a  # each test's level: the paired and the pooled one (Bonferroni)
    m = math.log1p(plan.min_effect)
    shown, k, size = None, 0, math.nan
    r = plan.runs
    # (the looks are fixed before any fresh layout is measured: from the pooled noise, the search's
    # estimate and the runs spent, none of them the fresh layouts')
    ns, last = confirm_looks(plan, pool.var()[0], a, sign, cap, tr.ledger.spent)
    bounded = last < ns[-1]
    info = {"looks": ns, "bounded": bounded}
    try:
        for k in (n for n in ns if n <= last):
            ga, gb = tr.groups_after(last_good, used, k, r), tr.groups_after(culprit, used, k, r)
            pool.add_fresh(last_good, used, ga)
            pool.add_fresh(culprit, used, gb)
            clip = CLIP_LAYOUT * layout_scale(pool)  # (the robust scale with these layouts in it)
            ya, yb = pool.add_fresh(last_good, used, ga, clip), pool.add_fresh(culprit, used, gb, clip)
            t = zvalues(pool, ya, yb)
            # the paired test pairs the values as measured: clipped, two sides whose seeds agree would
            # leave every difference the same (clipping is for the pooled test, whose variance is the pool's)
            tests = (fresh_pairs(ga, gb, layout_values(ga), layout_values(gb)), t) if plan.paired else (t,)
            t = next((u for u in tests if _beyond(u, ns, a, sign, plan.min_effect)), t)  # the one that shows it
            size = t.est
            if say is not None:
                say(f"confirmation {last_good[:12]}..{culprit[:12]}: {k} fresh layouts a side, x{math.exp(size):.4f}")
            lo, hi = t.interval(ns, a, sign)
            ok = _beyond(t, ns, a, sign, plan.min_effect)
            # futility (stopping without rejecting keeps the level): carried on to the last look,
            # would either test show a step of d2 beyond the band?  (asked at the noise pooled so far)
            d2 = futility_step(pool.var()[0], ns, a, sign, m)
            toward = sign or (1 if size >= 0 else -1)
            futile = k < ns[-1] and all(conditional_power(u, pool, ns, a, d2, toward, m, bool(sign)) < FUTILITY
                                        for u in tests)
            if ok or k >= last or futile:
                shown = _display(tr, (last_good, culprit), k, r, t, Looks(a, ns, sign, band=True), plan.min_effect,
                                 used)
                info.update(shown=shown_of(lo, hi, ok), at_bound=bounded and not ok and k >= last)
                if not ok:
                    if info["shown"] == "change":
                        why = (f"shown {_word(lo, hi, bool(tr.higher_is_better))} but not shown to exceed the "
                               f"{100 * plan.min_effect:g}% minimum effect")
                    elif abs(size) >= m:
                        why = shown.reason or "not shown on the fresh layouts"
                    else:
                        why = f"the step on the fresh layouts is smaller than the {100 * plan.min_effect:g}% minimum effect"
                    if info["at_bound"]:
                        why += (f" (the confirmation's bound, {k} fresh layouts a side: at most "
                                f"{100 * plan.confirm_share:g}% of the bisection's runs, --confirm-share)")
                    shown = dataclasses.replace(shown, verdict="no difference", reason=why)
                return Confirmed(shown, k, size, **info)
        return Confirmed(shown, k, size, **info)
    except Skip:  # nothing confirmed: never the last look's comparison without its downgrade
        return Confirmed(None, k, size, **info)
