"""The layout-noise split: a one-way random-effects ANOVA of a commit's layouts (layout sd against
run sd), and the layout noise with its uncertainty."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special as _spc

from .base import Groups, as_groups, layout_stats, ToDict

# --------------------------------------------------------------------------
# noise_split
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class NoiseSplit(ToDict):
    """Decomposition of one commit's measurements into layout and run noise.

    Estimated with a one-way random-effects ANOVA (method of moments, works
    for unequal run counts)::

        MSB = sum_i n_i (mean_i - grand_mean)^2 / (k - 1)
        MSW = sum_i sum_j (x_ij - mean_i)^2 / (N - k)
        n0  = (N - sum_i n_i^2 / N) / (k - 1)
        var_between = max(0, (MSB - MSW) / n0),   var_within = MSW

    so run noise does not inflate the layout sd (the plain spread of layout
    medians, ``median_spread_sd``, does include it).

    Fields:
        k: number of layouts.
        n: total number of runs.
        medians: per-layout median run value, by layout id.
        center: mean of the per-layout medians (the layout-averaged
            performance that :func:`compare` uses).
        grand_median: median of the per-layout medians; the denominator of
            all relative (``*_cv``, ``*_rel``) values.
        layout_sd: between-layout sd, ``sqrt(var_between)``.  nan if k < 2
            (not estimable).  If every layout has a single run, run noise
            cannot be separated and this is the plain sd of the values (an
            upper bound).
        run_sd: pooled within-layout sd, ``sqrt(MSW)``; nan if no layout has
            two or more runs.
        layout_cv, run_cv: ``layout_sd`` and ``run_sd`` / ``grand_median``.
        layout_share: ``var_between / (var_between + var_within)`` (the
            intra-class correlation); nan when not estimable.
        median_spread_sd: sd (ddof=1) of the per-layout medians, including
            the run-noise part; nan if k < 2.
        median_spread_cv: ``median_spread_sd / grand_median``.
        median_min, median_max: smallest / largest per-layout median.
        median_range_rel: ``(median_max - median_min) / grand_median``.
    """

    k: int
    n: int
    medians: dict[str, float]
    center: float
    grand_median: float
    layout_sd: float
    run_sd: float
    layout_cv: float
    run_cv: float
    layout_share: float
    median_spread_sd: float
    median_spread_cv: float
    median_min: float
    median_max: float
    median_range_rel: float
    layout_cv_upper: float = math.nan
    runs_separated: bool = False

    def noise_text(self) -> str:
        """``layout noise 0.42% (95% upper bound 0.71%)`` (see :func:`noise_text`)."""
        return noise_text(self.layout_cv, self.layout_cv_upper, self.runs_separated)


def noise_split_arrays(g: Mapping[str, np.ndarray]) -> NoiseSplit:
    keys = list(g.keys())
    arrays = [g[k] for k in keys]
    k = len(arrays)
    ns, means, meds, ssw = layout_stats(arrays)
    N = float(ns.sum())
    grand_mean = float(np.sum(ns * means) / N)
    center = float(np.mean(meds))
    grand_median = float(np.median(meds))
    dfw = N - k
    msw = ssw / dfw if dfw > 0 else math.nan

    if k >= 2:
        msb = float(np.sum(ns * (means - grand_mean) ** 2) / (k - 1))
        n0 = (N - float(np.sum(ns ** 2)) / N) / (k - 1)
        if math.isfinite(msw):
            var_b = max(0.0, (msb - msw) / n0)
        else:
            # one run per layout: layout and run noise are confounded
            var_b = msb / n0
        spread_sd = float(np.std(meds, ddof=1))
    else:
        var_b = math.nan
        spread_sd = math.nan

    layout_sd = math.sqrt(var_b) if math.isfinite(var_b) else math.nan
    run_sd = math.sqrt(msw) if math.isfinite(msw) else math.nan
    tot = var_b + msw
    share = var_b / tot if (math.isfinite(tot) and tot > 0) else (
        0.0 if tot == 0 else math.nan)

    def rel(x: float) -> float:
        return x / grand_median if grand_median != 0 else math.nan

    return NoiseSplit(
        k=k,
        n=int(N),
        medians={key: float(m) for key, m in zip(keys, meds)},
        center=center,
        grand_median=grand_median,
        layout_sd=layout_sd,
        run_sd=run_sd,
        layout_cv=rel(layout_sd),
        run_cv=rel(run_sd),
        layout_share=share,
        median_spread_sd=spread_sd,
        median_spread_cv=rel(spread_sd),
        median_min=float(np.min(meds)),
        median_max=float(np.max(meds)),
        median_range_rel=rel(float(np.max(meds) - np.min(meds))),
        layout_cv_upper=rel(re_anova([arrays])[1]) if k >= 2 else math.nan,
        runs_separated=bool(math.isfinite(msw)),
    )


def noise_split(groups: Groups) -> NoiseSplit:
    """Split one commit's variability into layout and run noise.

    ``groups`` maps layout id -> run values.  See :class:`NoiseSplit`.
    """
    return noise_split_arrays(as_groups(groups))


# --------------------------------------------------------------------------
# layout noise with its uncertainty
# --------------------------------------------------------------------------

def re_anova(sides: Sequence[Sequence[np.ndarray]],
              alpha: float = 0.05) -> tuple[float, float, bool, int]:
    """Between-layout sd and its one-sided ``1 - alpha`` upper bound, pooled over sides.

    ``sides`` holds, per commit, the run arrays of its layouts.  One-way
    random-effects ANOVA per side (each side keeps its own mean), sums of
    squares pooled over the sides.  Returns ``(estimate, upper, separated,
    df_between)``; ``separated`` is False when no layout has two runs (then
    the estimate is the sd of the layout values, layout *and* run noise, and
    the bound is the chi-square bound ``sqrt(df * MSB / chi2_{alpha, df})``).
    With runs separated the estimate is ``sqrt(max(0, (MSB - MSW) / n0))``
    and the bound is the Graybill-Wang (modified large-sample) bound of
    ``(MSB - MSW) / n0``.  Where the run noise dominates, that bound can be 0
    (MSB well below MSW), a bound the data cannot support; then the bound is
    the exact chi-square bound of ``sigma_L^2 + sigma_R^2 / n0`` (the variance
    of a layout's mean, which is at least the layout variance):
    ``dfb * MSB / (n0 * chi2_{alpha, dfb})`` -- it is never below the truth more
    often than ``alpha``, and is 0 only when every layout's mean is the same.
    nan when no side has two layouts.
    """
    ssb = ssw = 0.0
    dfb = dfw = 0
    n0w = 0.0
    for arrays in sides:
        k = len(arrays)
        if k < 2:
            continue
        ns, means, _, ssw_side = layout_stats(arrays)
        n = float(ns.sum())
        gm = float(np.sum(ns * means) / n)
        ssb += float(np.sum(ns * (means - gm) ** 2))
        ssw += ssw_side
        dfb += k - 1
        dfw += int(n) - k
        n0w += (n - float(np.sum(ns ** 2)) / n)  # (k-1) * n0 of this side
    if dfb == 0:
        return math.nan, math.nan, False, 0
    n0 = n0w / dfb
    msb = ssb / dfb
    chi_lo = float(_spc.chdtri(dfb, 1.0 - alpha))  # chi2.ppf(alpha, dfb), as a fast ufunc
    if dfw == 0:
        est = math.sqrt(msb / n0)
        upper = math.sqrt(dfb * msb / (n0 * chi_lo)) if chi_lo > 0 else math.inf
        return est, upper, False, dfb
    msw = ssw / dfw
    est = math.sqrt(max(0.0, (msb - msw) / n0))
    h1 = dfb / chi_lo - 1.0 if chi_lo > 0 else math.inf
    g2 = 1.0 - dfw / float(_spc.chdtri(dfw, alpha))
    u = (msb - msw) + math.sqrt((h1 * msb) ** 2 + (g2 * msw) ** 2)
    upper = math.sqrt(max(0.0, u) / n0)
    if not upper > 0 and chi_lo > 0:  # a layout's mean varies at least as much as the layout alone
        upper = math.sqrt(dfb * msb / (n0 * chi_lo))
    return est, max(upper, est), True, dfb


def noise_text(estimate: float, upper: float, separated: bool, digits: int = 2) -> str:
    """``layout noise 0.42% (95% upper bound 0.71%)``; ``< 0.71%`` when the estimate is 0;
    ``layout + run noise (runs not separated) ...`` with one run per layout."""
    if estimate is None or not math.isfinite(estimate):
        return "layout noise n/a (fewer than 2 layouts)"
    name = "layout noise" if separated else "layout + run noise (runs not separated)"
    est = f"{100 * estimate:.{digits}f}%"
    up = f"{100 * upper:.{digits}f}%" if math.isfinite(upper) else "inf"
    if float(est[:-1]) == 0.0:
        return f"{name} < {up} (95% upper bound; estimate 0)"
    return f"{name} {est} (95% upper bound {up})"
