"""What a bisection can show: the smallest step a test that stopped could have missed, whether a step
of a given size will be named, and the share of the endpoints' change one step explains."""

from __future__ import annotations

import math

from scipy.special import ndtr, ndtri

from .plan import (
    CONFIRM_FAR,
    NOISE_POWER,
    Plan,
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
