"""Statistics for layoutbench: separating code effects from layout effects.

Model
-----
A benchmark sample of commit ``c`` linked in layout ``l`` is::

    y = code effect(c)  x  layout effect(c, l)  x  run noise

Measuring ``K`` random layouts per commit with ``R`` runs each lets us
separate the two noise sources: the spread *inside* a layout is run noise,
the spread *between* layouts (beyond what run noise explains) is layout
noise.  The quantity we compare between commits is the **layout-averaged
performance** ("center"): the mean over layouts of the per-layout median.

Input conventions
-----------------
* A "sample" is a plain sequence of floats.
* A "groups" argument is a mapping ``layout id -> sequence of run values``
  for one commit.  Where a groups argument is expected, a bare sequence is
  also accepted and treated as a single layout.
* All values must be finite; ratios additionally need positive centers.

Everything here is pure and deterministic: every random resampling takes a
``seed`` (fixed default 0) and an ``n_boot`` count.

Public API
----------
``summarize``   -- descriptive statistics of one sample, bootstrap CI of
                   the median, robust outlier flags.
``noise_split`` -- one-way random-effects ANOVA: layout sd vs run sd.
``compare``     -- B vs A on per-layout log means: a t interval (paired by
                   layout id when possible, Welch otherwise), a rank test as the
                   second opinion, a verdict only beyond ``min_effect``.
``adjust``, ``adjust_comparisons`` -- Holm / Benjamini-Hochberg over a family.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special as _spc
from scipy import stats as _sps

__all__ = [
    "DEFAULT_MIN_EFFECT",
    "DEFAULT_N_BOOT",
    "OUTLIER_THRESHOLD",
    "Comparison",
    "NoiseSplit",
    "Summary",
    "adjust",
    "adjust_comparisons",
    "compare",
    "noise_split",
    "noise_text",
    "summarize",
]

#: Default number of bootstrap resamples.
DEFAULT_N_BOOT = 2000
#: Robust z-score above which a value is flagged as an outlier.
OUTLIER_THRESHOLD = 3.5
#: MAD -> sd consistency constant for normal data.
_MAD_SCALE = 1.4826
#: mean-absolute-deviation -> sd consistency constant for normal data.
_MEANAD_SCALE = 1.2533

Groups = Mapping[str, Sequence[float]] | Sequence[float]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _jsonable(obj: Any) -> Any:
    """Convert dataclass-derived structures into JSON-safe values.

    Non-finite floats (nan/inf, used for "not estimable") become ``None``;
    tuples become lists; numpy scalars become Python scalars.
    """
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


class _ToDict:
    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict (non-finite floats -> None)."""
        return _jsonable(dataclasses.asdict(self))  # type: ignore[arg-type]


def _as_array(values: Sequence[float], what: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what}: empty sample")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: contains non-finite values")
    return arr


def _as_groups(groups: Groups, what: str = "groups") -> dict[str, np.ndarray]:
    """Normalise a groups argument to ``{layout id: float array}``."""
    if isinstance(groups, Mapping):
        items = list(groups.items())
    else:
        items = [("_", groups)]
    if not items:
        raise ValueError(f"{what}: no layouts")
    out: dict[str, np.ndarray] = {}
    for key, vals in items:
        out[str(key)] = _as_array(vals, f"{what}[{key!r}]")
    return out


def _layout_stats(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(run counts, means, medians, within sum of squares) of each layout's runs; one numpy
    call per statistic when every layout has the same number of runs (the usual case)."""
    sizes = {a.size for a in arrays}
    if len(sizes) == 1:
        m = np.vstack(arrays)
        means = m.mean(axis=1)
        meds = np.median(m, axis=1) if m.shape[1] > 2 else means
        ssw = float(((m - means[:, None]) ** 2).sum())
        return np.full(len(arrays), float(m.shape[1])), means, meds, ssw
    means = np.array([a.mean() for a in arrays])
    meds = np.array([np.median(a) for a in arrays])
    ssw = float(sum(((a - mu) ** 2).sum() for a, mu in zip(arrays, means)))
    return np.array([a.size for a in arrays], dtype=float), means, meds, ssw


def _check_conf(confidence: float) -> None:
    if not (0.0 < confidence < 1.0):
        raise ValueError("confidence must be in (0, 1)")


# --------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary(_ToDict):
    """Descriptive statistics of one sample.

    Fields:
        n: number of values.
        median: sample median.
        mean: arithmetic mean.
        stdev: sample standard deviation (ddof=1; 0.0 when n < 2).
        min, max: extremes.
        ci_low, ci_high: percentile-bootstrap confidence interval of the
            median at level ``confidence`` (both equal the value when n == 1
            or all values are equal).
        confidence: confidence level of the interval.
        outliers: indices (into the input) of values flagged by the robust
            rule ``|x - median| / scale > 3.5``.  Flagged values are never
            dropped from any statistic.  ``scale`` is ``1.4826 * MAD``; if
            the MAD is 0 (more than half the values identical) the fallback
            ``1.2533 * mean absolute deviation from the median`` is used
            (Iglewicz-Hoaglin modified z-score), and if that is 0 too, all
            values are equal and nothing is flagged.
    """

    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float
    ci_low: float
    ci_high: float
    confidence: float
    outliers: list[int] = field(default_factory=list)


def _robust_outliers(arr: np.ndarray, threshold: float = OUTLIER_THRESHOLD) -> list[int]:
    med = np.median(arr)
    dev = np.abs(arr - med)
    scale = _MAD_SCALE * float(np.median(dev))
    if scale <= 0.0:
        scale = _MEANAD_SCALE * float(np.mean(dev))
    if scale <= 0.0:
        return []
    return [int(i) for i in np.nonzero(dev / scale > threshold)[0]]


def summarize(values: Sequence[float], confidence: float = 0.95, seed: int = 0,
              n_boot: int = DEFAULT_N_BOOT) -> Summary:
    """Summarise one sample (see :class:`Summary`).

    The CI of the median is a percentile bootstrap with ``n_boot``
    resamples drawn from ``numpy.random.default_rng(seed)``.
    """
    _check_conf(confidence)
    arr = _as_array(values)
    n = arr.size
    med = float(np.median(arr))
    if n > 1 and np.ptp(arr) > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_boot, n))
        bmed = np.median(arr[idx], axis=1)
        alpha = 1.0 - confidence
        lo, hi = np.quantile(bmed, [alpha / 2.0, 1.0 - alpha / 2.0])
        lo, hi = float(lo), float(hi)
    else:
        lo = hi = med
    return Summary(
        n=int(n),
        median=med,
        mean=float(np.mean(arr)),
        stdev=float(np.std(arr, ddof=1)) if n > 1 else 0.0,
        min=float(np.min(arr)),
        max=float(np.max(arr)),
        ci_low=lo,
        ci_high=hi,
        confidence=confidence,
        outliers=_robust_outliers(arr),
    )


# --------------------------------------------------------------------------
# noise_split
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class NoiseSplit(_ToDict):
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


def _noise_split_arrays(g: Mapping[str, np.ndarray]) -> NoiseSplit:
    keys = list(g.keys())
    arrays = [g[k] for k in keys]
    k = len(arrays)
    ns, means, meds, ssw = _layout_stats(arrays)
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
        layout_cv_upper=rel(_re_anova([arrays])[1]) if k >= 2 else math.nan,
        runs_separated=bool(math.isfinite(msw)),
    )


def noise_split(groups: Groups) -> NoiseSplit:
    """Split one commit's variability into layout and run noise.

    ``groups`` maps layout id -> run values.  See :class:`NoiseSplit`.
    """
    return _noise_split_arrays(_as_groups(groups))


# --------------------------------------------------------------------------
# layout noise with its uncertainty
# --------------------------------------------------------------------------

def _re_anova(sides: Sequence[Sequence[np.ndarray]],
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
        ns, means, _, ssw_side = _layout_stats(arrays)
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


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------

#: Smallest relative change that earns a verdict (0.5%); ``compare(min_effect=...)``.
DEFAULT_MIN_EFFECT = 0.005


@dataclass(frozen=True)
class Comparison(_ToDict):
    """Result of comparing commit B against commit A.

    The unit of replication is the layout.  Each layout's runs are averaged
    on the log scale (``m_l = mean(log runs)``); commits are compared through
    these per-layout log means:

    * paired (both sides measured on the same layout ids, e.g. the same
      seeds): ``d_l = m_l(B) - m_l(A)`` over the K common ids, a t interval
      with K-1 degrees of freedom, and a Wilcoxon signed-rank test of the
      ``d_l`` as a second opinion;
    * unpaired: Welch's t on the per-layout log means (Welch-Satterthwaite
      df), Mann-Whitney on them as the second opinion;
    * both sides a single layout with >= 2 runs each: Welch's t on the log
      runs -- a comparison of two *images*, which says nothing about other
      layouts (``method`` says so);
    * otherwise (one value on a side, or one layout against several): no
      verdict, ``verdict == "n/a"``.

    p-value and interval come from the same t statistic, so ``p < 1 -
    confidence`` exactly when the interval excludes 1.

    Fields:
        ratio: ``exp(mean d)`` (paired) or the ratio of the geometric means
            of the per-layout values (unpaired): B/A.
        sided: 0 for a two-sided interval; +1 when the test was one-sided towards a
            larger ratio (the interval is ``ci_low``…inf), -1 towards a smaller one
            (0…``ci_high``).
        ci_low, ci_high: interval of ``ratio`` at level ``confidence`` (after
            :func:`adjust_comparisons`: at the per-test level that matches the
            adjusted p-value).  nan when ``verdict == "n/a"``.
        confidence: the nominal level asked for.
        p_value: two-sided p of ``ratio == 1`` (adjusted for multiplicity
            after :func:`adjust_comparisons`; the raw one is ``p_raw``).
        verdict: ``faster``/``slower`` (B relative to A given
            ``higher_is_better``) when the interval excludes 1 *and*
            ``|log ratio| >= log(1 + min_effect)``; ``no difference``
            otherwise; ``n/a`` when there is too little data (``reason``).
        reason: why there is no verdict, or ``""``.
        min_effect: the minimum relative effect for a verdict.
        method: which test was used (see above).
        paired, n_pairs, dropped: paired design; number of pairs; layouts
            of either side left out because the other side lacks them.
        n_layouts_a, n_layouts_b, n_runs_a, n_runs_b: layouts and runs used.
        center_a, center_b: geometric mean of the per-layout values used.
        log_ratio, se, df: the t statistic's parts (``t = log_ratio/se``).
        wilcoxon_p: rank-test p-value (signed-rank paired, rank-sum
            unpaired); a second opinion, not used for the verdict.
        p_raw, adjusted, family: raw p-value; multiplicity method (``""``,
            ``holm``, ``bh``) and family size.
        layout_noise: pooled between-layout sd on the log scale (relative);
            with one run per layout it includes the run noise
            (``noise_separated`` False).  nan with < 2 layouts per side.
        layout_noise_upper: its one-sided 95% upper bound.
        explained_by_layout: probability that one random layout per side
            would show a difference at least this large from relinking
            alone: ``2 * (1 - Phi(|log ratio| / (sqrt(2) * layout_noise)))``.
        per_layout_ratios: paired design: ``exp(d_l)`` per common layout id.
        noise_a, noise_b: :class:`NoiseSplit` of each side (all layouts).
    """

    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    verdict: str
    higher_is_better: bool
    paired: bool
    n_layouts_a: int
    n_layouts_b: int
    n_runs_a: int
    n_runs_b: int
    center_a: float
    center_b: float
    layout_noise: float
    explained_by_layout: float
    per_layout_ratios: dict[str, float]
    df: float
    noise_a: NoiseSplit
    noise_b: NoiseSplit
    min_effect: float = DEFAULT_MIN_EFFECT
    method: str = ""
    reason: str = ""
    n_pairs: int = 0
    dropped: int = 0
    log_ratio: float = 0.0
    se: float = math.nan
    wilcoxon_p: float = math.nan
    p_raw: float = math.nan
    adjusted: str = ""
    family: int = 1
    layout_noise_upper: float = math.nan
    noise_separated: bool = False
    sided: int = 0

    @property
    def significant(self) -> bool:
        """True when a difference is claimed (interval excludes 1 and the effect is large enough)."""
        return self.verdict in ("faster", "slower")

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def noise_text(self) -> str:
        return noise_text(self.layout_noise, self.layout_noise_upper, self.noise_separated)

    def describe(self) -> str:
        """One line, e.g. ``B is 1.031 ± 0.008× slower than A (95% CI 1.023…1.039, p=0.001,
        paired over 8 layouts); layout noise 2.10% (95% upper bound 3.40%)``.

        A claimed difference is oriented to be >= 1 (the slowdown or speedup
        factor); otherwise the raw ratio B/A is shown."""
        conf = f"{self.confidence * 100:g}%"
        if self.verdict == "n/a":
            return f"B vs A: n/a ({self.reason}); B/A = {self.ratio:.3f}; {self.noise_text()}"
        if self.significant:
            if self.ratio >= 1.0:
                f, lo, hi = self.ratio, self.ci_low, self.ci_high
            else:
                f, lo, hi = 1.0 / self.ratio, 1.0 / self.ci_high, 1.0 / self.ci_low
            if self.sided:  # a one-sided bound: how much at least
                head = f"B is {f:.3f}× {self.verdict} than A ("
                mid = f"{conf} one-sided bound: at least {lo:.3f}×"
            else:
                head = f"B is {f:.3f} ± {(hi - lo) / 2.0:.3f}× {self.verdict} than A ("
                mid = f"{conf} CI {lo:.3f}…{hi:.3f}"
        else:
            f, lo, hi = self.ratio, self.ci_low, self.ci_high
            head = (f"B is not different from A{' beyond the minimum effect' if self.reason else ''} "
                    f"(B/A = {f:.3f}" + ("" if self.sided else f" ± {(hi - lo) / 2.0:.3f}"))
            mid = (f", {conf} CI {lo:.3f}…{hi:.3f}" if not self.sided else
                   f", {conf} one-sided CI {lo:.3f}…" if self.sided > 0 else f", {conf} one-sided CI 0…{hi:.3f}")
        tail = f", p={self.p_value:.3g}"
        if self.adjusted:
            tail += f" {self.adjusted}-adjusted over {self.family}"
        if self.paired:
            tail += f", paired over {self.n_pairs} layouts"
            if self.dropped:
                tail += f", {self.dropped} unpaired dropped"
        elif self.method.startswith("runs"):
            tail += ", runs of one layout per side"
        if self.reason:
            tail += f"; {self.reason}"
        return f"{head}{mid}{tail}); {self.noise_text()}"

    def at_alpha(self, alpha: float) -> Comparison:
        """The same comparison with its interval and verdict at test level ``alpha``
        (``confidence`` becomes ``1 - alpha``)."""
        if self.verdict == "n/a":
            return self
        lo, hi = _t_interval(self.log_ratio, self.se, self.df, alpha)
        verdict, reason = _verdict(lo, hi, self.log_ratio, self.min_effect, self.higher_is_better)
        return dataclasses.replace(self, ci_low=math.exp(lo), ci_high=math.exp(hi), verdict=verdict,
                                   reason=reason, confidence=1.0 - alpha)


def _t_interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float]:
    if not se > 0:
        return est, est
    q = float(_spc.stdtrit(df, 1.0 - alpha / 2.0)) if math.isfinite(df) else float(_spc.ndtri(1.0 - alpha / 2.0))
    return est - q * se, est + q * se


def _t_p(est: float, se: float, df: float) -> float:
    if not se > 0:
        return 1.0 if est == 0 else 0.0
    return float(min(1.0, 2.0 * _spc.stdtr(df, -abs(est) / se)))


def one_sided_t(x: Sequence[float]) -> float:
    """p-value of the one-sample t test of mean(x) >= 0 against mean(x) < 0 (small when the
    values are clearly negative).  nan with fewer than 2 values; 0 or 1 when they are all equal."""
    a = np.asarray(x, dtype=float)
    if a.size < 2:
        return math.nan
    m, sd = float(a.mean()), float(a.std(ddof=1))
    if not sd > 0:
        return 0.0 if m < 0 else 1.0
    return float(_spc.stdtr(a.size - 1, m / (sd / math.sqrt(a.size))))


def _verdict(lo: float, hi: float, est: float, min_effect: float, higher_is_better: bool) -> tuple[str, str]:
    """(verdict, reason) from a log-scale interval and estimate."""
    if lo <= 0.0 <= hi:
        return "no difference", ""
    if abs(est) < math.log1p(min_effect):
        return "no difference", f"smaller than the {100 * min_effect:g}% minimum effect"
    slower = (est > 0) != bool(higher_is_better)
    return ("slower" if slower else "faster"), ""


def _ranktest(x: np.ndarray, y: np.ndarray | None = None) -> float:
    """Wilcoxon signed-rank of ``x`` (paired differences) or Mann-Whitney of x vs y."""
    try:
        if y is None:
            if not np.any(x != 0):
                return 1.0
            p = float(_sps.wilcoxon(x).pvalue)
        else:
            p = float(_sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    except ValueError:
        return 1.0
    return p if math.isfinite(p) else 1.0


def _log_groups(g: Mapping[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
    out = {}
    for k, v in g.items():
        if not np.all(v > 0):
            raise ValueError(f"{what}[{k!r}]: compare needs positive values (it works on log ratios)")
        out[k] = np.log(v)
    return out


def compare(a_groups: Groups, b_groups: Groups, higher_is_better: bool,
            confidence: float = 0.95, paired: bool | None = None,
            min_effect: float = DEFAULT_MIN_EFFECT, rank_test: bool = True) -> Comparison:
    """Compare commit B (``b_groups``) against commit A (``a_groups``); see :class:`Comparison`.

    ``paired=None`` pairs on the common layout ids when there are at least two
    (the layouts of either side without a partner are dropped and counted in
    ``dropped``); ``paired=True`` pairs on the common ids (an error when there
    is none); ``paired=False`` never pairs.  The interval is an exact t interval.
    ``rank_test=False`` skips the rank test (``wilcoxon_p`` nan): it is never used for the
    verdict, and the bisection engine, which compares many times, does not show it.
    """
    _check_conf(confidence)
    if not min_effect >= 0:
        raise ValueError("min_effect must be >= 0")
    alpha = 1.0 - confidence
    ga = _as_groups(a_groups, "a_groups")
    gb = _as_groups(b_groups, "b_groups")
    la, lb = _log_groups(ga, "a_groups"), _log_groups(gb, "b_groups")
    common = [k for k in la if k in lb]
    if paired is None:
        is_paired = len(common) >= 2
    elif paired:
        if not common:
            raise ValueError("paired=True but the sides share no layout ids")
        is_paired = True
    else:
        is_paired = False
    if is_paired:
        ua, ub = {i: la[i] for i in common}, {i: lb[i] for i in common}
        dropped = (len(la) - len(common)) + (len(lb) - len(common))
    else:
        ua, ub = la, lb
        dropped = 0
    ma = _layout_stats(list(ua.values()))[1]
    mb = _layout_stats(list(ub.values()))[1]
    ka, kb = ma.size, mb.size
    per_layout: dict[str, float] = {}
    reason = ""
    se, df, wp = math.nan, math.nan, math.nan
    if is_paired and ka >= 2:
        d = mb - ma
        est = float(np.mean(d))
        se = float(np.std(d, ddof=1) / math.sqrt(ka))
        df = float(ka - 1)
        wp = _ranktest(d) if rank_test else math.nan
        method = f"paired t over {ka} layouts"
        per_layout = {i: float(math.exp(x)) for i, x in zip(common, d)}
    elif not is_paired and ka >= 2 and kb >= 2:
        est = float(np.mean(mb) - np.mean(ma))
        va, vb = float(np.var(ma, ddof=1)) / ka, float(np.var(mb, ddof=1)) / kb
        se = math.sqrt(va + vb)
        den = va * va / (ka - 1) + vb * vb / (kb - 1)
        df = (va + vb) ** 2 / den if den > 0 else float(ka + kb - 2)
        wp = _ranktest(ma, mb) if rank_test else math.nan
        method = "Welch t on per-layout means"
    else:
        # one layout on a side: compare the runs of the two images, or give up
        ra = np.concatenate(list(ua.values()))
        rb = np.concatenate(list(ub.values()))
        est = float(np.mean(rb) - np.mean(ra))
        if ka == 1 and kb == 1 and ra.size >= 2 and rb.size >= 2:
            va, vb = float(np.var(ra, ddof=1)) / ra.size, float(np.var(rb, ddof=1)) / rb.size
            se = math.sqrt(va + vb)
            den = va * va / (ra.size - 1) + vb * vb / (rb.size - 1)
            df = (va + vb) ** 2 / den if den > 0 else float(ra.size + rb.size - 2)
            wp = _ranktest(ra, rb) if rank_test else math.nan
            method = "runs: Welch t on the runs of one layout per side"
        else:
            method = "none"
            reason = ("1 sample" if min(ra.size, rb.size) < 2
                      else "1 layout on one side: need 2 layouts per side, or one layout with 2 runs on both")
    if method != "none":
        lo, hi = _t_interval(est, se, df, alpha)
        p = _t_p(est, se, df)
        verdict, reason = _verdict(lo, hi, est, min_effect, higher_is_better)
        ci_low, ci_high = math.exp(lo), math.exp(hi)
    else:
        p = ci_low = ci_high = math.nan
        verdict = "n/a"

    noise, upper, separated, _ = _re_anova([list(la.values()), list(lb.values())])
    if math.isfinite(noise) and noise > 0:
        explained = float(2.0 * _spc.ndtr(-abs(est) / (math.sqrt(2.0) * noise)))
    elif noise == 0:
        explained = 1.0 if est == 0 else 0.0
    else:
        explained = math.nan
    return Comparison(
        ratio=float(math.exp(est)),
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        confidence=confidence,
        p_value=float(p),
        verdict=verdict,
        higher_is_better=bool(higher_is_better),
        paired=bool(is_paired and ka >= 2),
        n_layouts_a=ka,
        n_layouts_b=kb,
        n_runs_a=int(sum(v.size for v in ua.values())),
        n_runs_b=int(sum(v.size for v in ub.values())),
        center_a=float(math.exp(np.mean(ma))),
        center_b=float(math.exp(np.mean(mb))),
        layout_noise=float(noise),
        explained_by_layout=explained,
        per_layout_ratios=per_layout,
        df=float(df),
        noise_a=_noise_split_arrays(ga),
        noise_b=_noise_split_arrays(gb),
        min_effect=float(min_effect),
        method=method,
        reason=reason,
        n_pairs=ka if is_paired else 0,
        dropped=dropped,
        log_ratio=est,
        se=float(se),
        wilcoxon_p=float(wp),
        p_raw=float(p),
        layout_noise_upper=float(upper),
        noise_separated=bool(separated),
    )


# --------------------------------------------------------------------------
# multiplicity
# --------------------------------------------------------------------------

ADJUST_METHODS = ("holm", "bh", "none")


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Multiplicity-adjusted p-values, in the input order.

    ``holm``: Holm's step-down (controls the family-wise error rate);
    ``bh``: Benjamini-Hochberg (controls the false discovery rate);
    ``none``: unchanged.  nan entries (no test) stay nan and do not count
    in the family.  Reject hypothesis i at level alpha iff ``adjusted[i] <
    alpha``.
    """
    if method not in ADJUST_METHODS:
        raise ValueError(f"adjust method must be one of {', '.join(ADJUST_METHODS)}, not {method!r}")
    p = np.asarray(pvalues, dtype=float)
    out = p.copy()
    ok = np.nonzero(np.isfinite(p))[0]
    m = ok.size
    if method == "none" or m == 0:
        return [float(x) for x in out]
    order = ok[np.argsort(p[ok], kind="stable")]
    ps = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ps)
    else:
        adj = np.minimum.accumulate((m / np.arange(1, m + 1) * ps)[::-1])[::-1]
    out[order] = np.minimum(1.0, adj)
    return [float(x) for x in out]


def adjust_comparisons(comps: Sequence[Comparison | None], method: str = "holm") -> list[Comparison | None]:
    """Adjust a family of comparisons (e.g. every row and metric of one compare).

    Each comparison's p-value becomes the adjusted one and its interval is
    recomputed at the per-test level ``alpha * p_raw / p_adjusted``, so that
    the interval excludes 1 exactly when ``p_adjusted < alpha``; verdicts are
    re-derived.  ``None`` and ``n/a`` entries pass through.
    """
    raw = [c.p_raw if (c is not None and c.verdict != "n/a") else math.nan for c in comps]
    adj = adjust(raw, method)
    fam = int(sum(1 for x in raw if math.isfinite(x)))
    out: list[Comparison | None] = []
    for c, pr, pa in zip(comps, raw, adj):
        if c is None or not math.isfinite(pr) or method == "none":
            out.append(c)
            continue
        a = c.alpha * (pr / pa) if pa > 0 else c.alpha
        out.append(dataclasses.replace(c.at_alpha(a), p_value=pa, adjusted=method, family=fam,
                                       confidence=c.confidence))
    return out
