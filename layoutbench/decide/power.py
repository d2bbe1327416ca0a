"""What a bisection can show: the smallest step a test that stopped could have missed, whether a step
of a given size will be named, and the share of the endpoints' change one step explains."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from .plan import (
    futility_step,
    CONFIRM_FAR,
    CONFIRM_GROWTH,
    FUTILITY,
    NOISE_POWER,
    Plan,
    top_looks,
    extended,
    confirm_level,
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
    lc = confirm_level(plan.alpha, 1)
    top = plan.cap
    if top < plan.noise_top:
        top = max(top, noise_cap(plan, s2, top_looks(plan), lc, one_sided=True))
    far = min(plan.max_layouts, CONFIRM_FAR * top)
    c_conf = gs_boundary(tuple(extended(plan.layouts, top, far, CONFIRM_GROWTH)), lc, one_sided=True)
    ends_ns = top_looks(plan)
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


def confirm_forecast(step: float, s2: float, ns: tuple, level: float, m: float, runs: int = 1,
                     last: int | None = None, paths: int = 4000) -> dict:
    """What a confirmation with looks ``ns`` (layouts a side) at ``level`` will likely cost and show
    when the true step is ``step`` (log, in the direction ``sign`` of the test) and a layout's value has
    variance ``s2``: its test simulated on ``paths`` paths (a fixed seed; the estimate at each look the
    mean difference of that many fresh layouts a side, the pooled variance taken as known), each
    stopped as :func:`sequential.confirm` stops (its interval beyond the band ``m``, futility at
    plan.futility_step to the design's last look; the look ``last`` when given: the share bound).  ``runs``: the median runs (2 x layouts x R) it stops at; ``mean_runs``;
    ``p_beyond``: the chance it confirms the step beyond the minimum effect; ``p_change``: that it shows
    a change but not beyond it; ``max_runs``: its last look's runs."""
    rng = np.random.default_rng(20261201)
    ns_a = np.asarray(ns, dtype=float)
    inc = np.diff(np.concatenate(([0.0], ns_a)))
    # the sum of per-side differences, look by look: each new layout pair adds N(step, 2 s2)
    sums = np.cumsum(rng.standard_normal((paths, len(ns))) * np.sqrt(2.0 * s2 * inc) + step * inc, axis=1)
    est = sums / ns_a
    c = gs_boundary(tuple(ns), level, one_sided=True)
    se = np.sqrt(2.0 * s2 / ns_a)
    lo = est - c * se
    beyond = lo > m
    # conditional power at futility_step (sequential.conditional_power with the band as its margin)
    i_now, i_cap = ns_a / (2.0 * s2), ns_a[-1] / (2.0 * s2)
    rest = np.maximum(i_cap - i_now, 1e-300)
    d2 = futility_step(s2, ns, level, 1, m)
    cp = ndtr((est * i_now + d2 * rest - m * i_cap - c * math.sqrt(i_cap)) / np.sqrt(rest))
    futile = (cp < FUTILITY) & (ns_a < ns_a[-1])
    stop = beyond | futile
    end = len(ns) - 1 if last is None else max([i for i, n in enumerate(ns) if n <= last] or [0])
    stop[:, end] = True
    at = stop.argmax(axis=1)
    rows = np.arange(paths)
    got_beyond = beyond[rows, at]
    got_change = ~got_beyond & (lo[rows, at] > 0)
    n_stop = ns_a[at]
    return {"runs": int(math.ceil(float(np.median(n_stop)) * 2 * runs)),
            "mean_runs": float(np.mean(n_stop)) * 2 * runs,
            "p_beyond": float(np.mean(got_beyond)), "p_change": float(np.mean(got_change)),
            "max_runs": int(ns_a[end]) * 2 * runs, "layouts": int(ns_a[end])}
