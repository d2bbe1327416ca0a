"""What a bisection can show: the smallest step a test that stopped could have missed, whether a step
of a given size will be named, and the share of the endpoints' change one step explains."""

from __future__ import annotations

import math

from scipy.special import ndtr, ndtri

from .. import stats
from .plan import (
    CONFIRM_FAR,
    NOISE_POWER,
    Plan,
    Skip,
    _top_looks,
    extended,
    family_level,
    gs_boundary,
    noise_cap,
)


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
