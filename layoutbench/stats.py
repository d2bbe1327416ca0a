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
``compare``     -- B vs A ratio with a hierarchical (layouts, then runs)
                   bootstrap CI, paired by layout id when possible.
``classify``    -- bisection helper: is a probe like GOOD or like BAD?
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from scipy import stats as _sps

__all__ = [
    "Summary",
    "NoiseSplit",
    "Comparison",
    "Classification",
    "summarize",
    "noise_split",
    "compare",
    "classify",
    "DEFAULT_N_BOOT",
    "OUTLIER_THRESHOLD",
]

#: Default number of bootstrap resamples.
DEFAULT_N_BOOT = 2000
#: Robust z-score above which a value is flagged as an outlier.
OUTLIER_THRESHOLD = 3.5
#: MAD -> sd consistency constant for normal data.
_MAD_SCALE = 1.4826
#: mean-absolute-deviation -> sd consistency constant for normal data.
_MEANAD_SCALE = 1.2533

Groups = Union[Mapping[str, Sequence[float]], Sequence[float]]


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


def _center(groups: Mapping[str, np.ndarray]) -> float:
    """Layout-averaged performance: mean over layouts of per-layout medians."""
    return float(np.mean([np.median(v) for v in groups.values()]))


def _boot_centers(arrays: Sequence[np.ndarray], L: np.ndarray,
                  rng: np.random.Generator, resample_runs: bool) -> np.ndarray:
    """Hierarchical bootstrap replicates of the center.

    ``L`` (n_boot x slots) holds the resampled layout indices; every slot
    gets an *independent* resample of that layout's runs (when
    ``resample_runs``), whose median is taken; the replicate is the mean of
    the slot medians.
    """
    meds = np.empty(L.shape, dtype=float)
    for li, arr in enumerate(arrays):
        mask = L == li
        cnt = int(mask.sum())
        if cnt == 0:
            continue
        n = arr.size
        if resample_runs and n > 1:
            idx = rng.integers(0, n, size=(cnt, n))
            meds[mask] = np.median(arr[idx], axis=1)
        else:
            meds[mask] = np.median(arr)
    return meds.mean(axis=1)


def _check_conf(confidence: float) -> None:
    if not (0.0 < confidence < 1.0):
        raise ValueError("confidence must be in (0, 1)")


def _t_percentile_levels(confidence: float, df: float) -> tuple[float, float]:
    """Percentile levels for an *expanded* percentile bootstrap interval.

    A plain percentile interval behaves like ``estimate +- z * se``; with few
    layouts we want ``+- t_df * se`` instead (Hesterberg's "expanded
    percentile" interval).  We therefore read the bootstrap quantiles at the
    normal level that corresponds to ``t_{df}``.
    """
    alpha = 1.0 - confidence
    if not math.isfinite(df) or df <= 0:
        a = alpha
    else:
        t = float(_sps.t.ppf(1.0 - alpha / 2.0, df))
        a = float(2.0 * _sps.norm.sf(t))
    return a / 2.0, 1.0 - a / 2.0


def _boot_p(samples: np.ndarray, df: float) -> float:
    """Two-sided bootstrap p-value for H0: parameter == 0 (log scale).

    ``p_raw = 2 * min(P*(x <= 0), P*(x >= 0))`` (with the usual +1
    correction) is the smallest normal-level alpha at which the percentile
    interval excludes 0; it is mapped through the same t-expansion as the
    interval so that ``p < 1 - confidence`` iff the interval excludes 0.
    """
    b = samples.size
    le = int(np.sum(samples <= 0.0))
    ge = int(np.sum(samples >= 0.0))
    p_raw = min(1.0, 2.0 * (min(le, ge) + 1) / (b + 1))
    if not math.isfinite(df) or df <= 0 or p_raw >= 1.0:
        return p_raw
    z = float(_sps.norm.isf(p_raw / 2.0))
    return float(min(1.0, 2.0 * _sps.t.sf(z, df)))


def _mannwhitney(x: np.ndarray, y: np.ndarray) -> float:
    try:
        p = float(_sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    except ValueError:
        return 1.0
    return p if math.isfinite(p) else 1.0


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


def _noise_split_arrays(g: Mapping[str, np.ndarray]) -> NoiseSplit:
    keys = list(g.keys())
    arrays = [g[k] for k in keys]
    k = len(arrays)
    ns = np.array([a.size for a in arrays], dtype=float)
    N = float(ns.sum())
    meds = np.array([np.median(a) for a in arrays])
    means = np.array([np.mean(a) for a in arrays])
    grand_mean = float(np.sum(ns * means) / N)
    center = float(np.mean(meds))
    grand_median = float(np.median(meds))

    ssw = float(sum(np.sum((a - m) ** 2) for a, m in zip(arrays, means)))
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
    )


def noise_split(groups: Groups) -> NoiseSplit:
    """Split one commit's variability into layout and run noise.

    ``groups`` maps layout id -> run values.  See :class:`NoiseSplit`.
    """
    return _noise_split_arrays(_as_groups(groups))


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison(_ToDict):
    """Result of comparing commit B against commit A.

    Fields:
        ratio: ``center(B) / center(A)``, center = mean of per-layout
            medians (layout-averaged performance).  In the paired design
            both centers are taken over the common layout ids only.
        ci_low, ci_high: confidence interval of ``ratio`` from the
            hierarchical bootstrap (layouts resampled, then runs within each
            resampled layout), computed on the log scale, with a small-sample
            ("expanded percentile") correction for the number of layouts.
        confidence: level of the interval.
        p_value: two-sided bootstrap p-value of ``ratio == 1``, consistent
            with the interval (``p < 1 - confidence`` iff the CI excludes 1).
        mw_p: second opinion, two-sided Mann-Whitney U p-value on the
            per-layout medians when both sides have >= 3 layouts, else on
            the raw runs (see ``mw_on``).  Not used for the verdict.
        mw_on: ``"layout medians"`` or ``"runs"``.
        verdict: ``"faster"``, ``"slower"`` (B relative to A, taking
            ``higher_is_better`` into account) or ``"no difference"``.  A
            difference is only claimed when the CI excludes 1.
        higher_is_better: whether larger values mean better performance.
        paired: whether the paired design was used: layouts with the same
            id on both sides are resampled together, so the shared part of
            the layout effect cancels.
        n_layouts_a, n_layouts_b: layouts used on each side.
        n_runs_a, n_runs_b: runs used on each side.
        center_a, center_b: layout-averaged performance of each side.
        layout_noise: pooled relative between-layout sd (``layout_cv`` of
            both sides pooled with weights k-1); nan if neither side has
            two layouts.
        explained_by_layout: probability that layout noise alone, with one
            random layout per side and no code change, would produce a
            difference at least as large as the observed one:
            ``2 * (1 - Phi(|ln ratio| / (sqrt(2) * layout_noise)))``.
            Near 1: a single-layout benchmark could not tell this change
            from a relink; near 0: the effect dwarfs layout noise.  nan if
            ``layout_noise`` is not estimable.
        per_layout_ratios: paired design only: ``median(B_l)/median(A_l)``
            per common layout id (else empty).
        df: degrees of freedom used by the small-sample correction (inf =
            none applied).
        n_boot: number of bootstrap resamples.
        noise_a, noise_b: :class:`NoiseSplit` of each side (all layouts).
    """

    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    mw_p: float
    mw_on: str
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
    n_boot: int
    noise_a: NoiseSplit
    noise_b: NoiseSplit

    @property
    def significant(self) -> bool:
        """True when a difference is claimed (CI excludes 1)."""
        return self.verdict != "no difference"

    def describe(self) -> str:
        """One line, e.g. ``B is 1.031 ± 0.008× slower than A (95% CI
        1.023…1.039, p=0.001); layout noise 2.1%``.

        For a claimed difference the factor is oriented to be >= 1 (the
        slowdown or speedup factor); otherwise the raw ratio B/A is shown.
        """
        conf = f"{self.confidence * 100:g}%"
        if self.verdict == "no difference":
            f, lo, hi = self.ratio, self.ci_low, self.ci_high
            head = f"B is not different from A (B/A = {f:.3f}"
            hw = (hi - lo) / 2.0
            head += f" ± {hw:.3f}"
            mid = f", {conf} CI {lo:.3f}…{hi:.3f}"
        else:
            if self.ratio >= 1.0:
                f, lo, hi = self.ratio, self.ci_low, self.ci_high
            else:
                f, lo, hi = 1.0 / self.ratio, 1.0 / self.ci_high, 1.0 / self.ci_low
            hw = (hi - lo) / 2.0
            head = f"B is {f:.3f} ± {hw:.3f}× {self.verdict} than A ("
            mid = f"{conf} CI {lo:.3f}…{hi:.3f}"
        tail = f", p={self.p_value:.3g}"
        if self.paired:
            tail += f", paired over {self.n_layouts_a} layouts"
        noise = (f"layout noise {self.layout_noise * 100:.1f}%"
                 if math.isfinite(self.layout_noise) else "layout noise n/a")
        return f"{head}{mid}{tail}); {noise}"


def _pooled_layout_cv(splits: Sequence[NoiseSplit]) -> float:
    num = 0.0
    den = 0
    for s in splits:
        if s.k >= 2 and math.isfinite(s.layout_cv):
            num += (s.k - 1) * s.layout_cv ** 2
            den += s.k - 1
    return math.sqrt(num / den) if den > 0 else math.nan


def _resolve_paired(sides: Sequence[Mapping[str, np.ndarray]],
                    paired: Optional[bool]) -> tuple[bool, list[str]]:
    """Decide on the paired design; return (paired, common ids in order)."""
    first = list(sides[0].keys())
    common = [k for k in first if all(k in s for s in sides[1:])]
    if paired is None:
        same = all(set(s.keys()) == set(first) for s in sides[1:])
        return (same and len(first) >= 2), first
    if paired:
        if not common:
            raise ValueError("paired=True but the sides share no layout ids")
        return True, common
    return False, common


def _log_center_samples(sides: Sequence[Mapping[str, np.ndarray]], paired: bool,
                        ids: Sequence[str], n_boot: int, rng: np.random.Generator,
                        resample_runs: bool) -> list[np.ndarray]:
    """Bootstrap replicates of log(center) for each side."""
    out = []
    if paired:
        k = len(ids)
        L = rng.integers(0, k, size=(n_boot, k))
        for s in sides:
            arrays = [s[i] for i in ids]
            out.append(np.log(_boot_centers(arrays, L, rng, resample_runs)))
    else:
        for s in sides:
            arrays = list(s.values())
            k = len(arrays)
            L = rng.integers(0, k, size=(n_boot, k))
            out.append(np.log(_boot_centers(arrays, L, rng, resample_runs)))
    return out


def _shrink_factor(k: int) -> float:
    """sqrt(k/(k-1)): the bootstrap variance of a mean of k units is
    (k-1)/k times the unbiased one; deviations are scaled up by this."""
    return math.sqrt(k / (k - 1)) if k >= 2 else 1.0


def compare(a_groups: Groups, b_groups: Groups, higher_is_better: bool,
            confidence: float = 0.95, seed: int = 0,
            paired: Optional[bool] = None, n_boot: int = DEFAULT_N_BOOT,
            resample_runs: bool = True,
            small_sample_correction: bool = True) -> Comparison:
    """Compare commit B (``b_groups``) against commit A (``a_groups``).

    Each side maps layout id -> run values (a single layout is fine).

    Method:
      * ``ratio = center(B) / center(A)``; center = mean of per-layout
        medians.
      * Design: ``paired=None`` pairs automatically when both sides have
        the same set of (>= 2) layout ids; ``paired=True`` pairs on the
        common ids (others ignored); ``paired=False`` never pairs.
      * Hierarchical bootstrap (``n_boot`` resamples): draw k layouts with
        replacement -- in the paired design the same draw is used for both
        sides, which cancels the layout effect they share -- then, if
        ``resample_runs``, resample each drawn layout's runs with
        replacement and take the median.  Replicates of ``ln ratio`` give
        the interval and the p-value.  (Resampling both levels is slightly
        conservative: the run noise in the layout medians is counted twice.)
      * Small-sample correction (``small_sample_correction``): bootstrap
        deviations are scaled by ``sqrt(k/(k-1))`` per resampled side and
        the percentile levels are expanded to those of a t distribution
        with df = k-1 (paired) or Welch-Satterthwaite df (unpaired).  With
        8 layouts a plain percentile interval would be noticeably too
        narrow.
      * Verdict: a difference is claimed only when the CI excludes 1.
    """
    _check_conf(confidence)
    ga = _as_groups(a_groups, "a_groups")
    gb = _as_groups(b_groups, "b_groups")
    is_paired, ids = _resolve_paired([ga, gb], paired)
    if is_paired:
        ua = {i: ga[i] for i in ids}
        ub = {i: gb[i] for i in ids}
    else:
        ua, ub = ga, gb

    ca, cb = _center(ua), _center(ub)
    if not (ca > 0 and cb > 0):
        raise ValueError("compare needs positive centers (ratio of performance)")
    log_r = math.log(cb / ca)

    rng = np.random.default_rng(seed)
    la, lb = _log_center_samples([ua, ub], is_paired, ids, n_boot, rng, resample_runs)

    if is_paired:
        k = len(ids)
        dev = (lb - la) - log_r
        if small_sample_correction:
            dev = dev * _shrink_factor(k)
        df = float(k - 1) if (small_sample_correction and k >= 2) else math.inf
        per_layout = {i: float(np.median(ub[i]) / np.median(ua[i])) for i in ids}
    else:
        ka, kb = len(ua), len(ub)
        da = la - math.log(ca)
        db = lb - math.log(cb)
        if small_sample_correction:
            da = da * _shrink_factor(ka)
            db = db * _shrink_factor(kb)
        dev = db - da
        df = math.inf
        if small_sample_correction:
            va, vb = float(np.var(da)), float(np.var(db))
            den = sum(v * v / (k - 1) for v, k in ((va, ka), (vb, kb)) if k >= 2)
            if den > 0:
                df = (va + vb) ** 2 / den
        per_layout = {}

    samples = log_r + dev
    lo_q, hi_q = _t_percentile_levels(confidence, df)
    lo, hi = np.quantile(samples, [lo_q, hi_q])
    ci_low, ci_high = float(math.exp(lo)), float(math.exp(hi))
    p = _boot_p(samples, df)

    if ci_low > 1.0:
        verdict = "faster" if higher_is_better else "slower"
    elif ci_high < 1.0:
        verdict = "slower" if higher_is_better else "faster"
    else:
        verdict = "no difference"

    # Mann-Whitney second opinion
    if len(ua) >= 3 and len(ub) >= 3:
        mw_on = "layout medians"
        xa = np.array([np.median(v) for v in ua.values()])
        xb = np.array([np.median(v) for v in ub.values()])
    else:
        mw_on = "runs"
        xa = np.concatenate(list(ua.values()))
        xb = np.concatenate(list(ub.values()))
    mw_p = _mannwhitney(xa, xb)

    na, nb = _noise_split_arrays(ga), _noise_split_arrays(gb)
    layout_noise = _pooled_layout_cv([na, nb])
    if math.isfinite(layout_noise) and layout_noise > 0:
        explained = float(2.0 * _sps.norm.sf(abs(log_r) / (math.sqrt(2.0) * layout_noise)))
    elif layout_noise == 0:
        explained = 1.0 if log_r == 0 else 0.0
    else:
        explained = math.nan

    return Comparison(
        ratio=float(cb / ca),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        p_value=p,
        mw_p=mw_p,
        mw_on=mw_on,
        verdict=verdict,
        higher_is_better=bool(higher_is_better),
        paired=is_paired,
        n_layouts_a=len(ua),
        n_layouts_b=len(ub),
        n_runs_a=int(sum(v.size for v in ua.values())),
        n_runs_b=int(sum(v.size for v in ub.values())),
        center_a=ca,
        center_b=cb,
        layout_noise=layout_noise,
        explained_by_layout=explained,
        per_layout_ratios=per_layout,
        df=df,
        n_boot=int(n_boot),
        noise_a=na,
        noise_b=nb,
    )


# --------------------------------------------------------------------------
# classify
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Classification(_ToDict):
    """Is a bisection probe like GOOD or like BAD?

    Everything is on the log scale of the layout-averaged center.  The
    probe is called ``good`` when its center is closer to GOOD's center
    than to BAD's, i.e. its relative position ``t`` between GOOD (t=0) and
    BAD (t=1) is below 1/2.  The bootstrap (layouts, then runs; paired by
    layout id when all three share the same ids) gives the probability of
    that event.

    Fields:
        verdict: ``"good"`` if ``p_good >= confidence``, ``"bad"`` if
            ``p_bad >= confidence``, else ``"uncertain"``.
        probability: bootstrap probability of the verdict's side
            (``max(p_good, p_bad)`` when uncertain).
        p_good: bootstrap share of replicates in which the probe is closer
            to GOOD than to BAD (log scale).
        p_bad: share in which it is closer to BAD (``1 - p_good`` up to
            exact ties).
        position: point estimate of
            ``t = ln(probe/good) / ln(bad/good)``; 0 = like GOOD,
            1 = like BAD, may fall outside [0, 1].  nan if good == bad.
        position_low, position_high: central bootstrap interval of ``t`` at
            level ``confidence`` (replicates with good == bad ignored).
        center_probe, center_good, center_bad: layout-averaged centers.
        bad_is_worse: whether BAD's center is worse than GOOD's given
            ``higher_is_better`` (False hints at swapped or mislabeled
            references).
        separation: bootstrap probability that BAD differs from GOOD in
            the direction of the point estimate; if it is below
            ``confidence`` the references themselves are not clearly
            distinguishable and any verdict is fragile.
        paired: whether layouts were resampled jointly by id.
        confidence: required probability for a verdict.
        n_boot: number of bootstrap resamples.
    """

    verdict: str
    probability: float
    p_good: float
    p_bad: float
    position: float
    position_low: float
    position_high: float
    center_probe: float
    center_good: float
    center_bad: float
    bad_is_worse: bool
    separation: float
    paired: bool
    confidence: float
    n_boot: int

    def describe(self) -> str:
        """One-line human readable summary."""
        return (f"probe is {self.verdict} (P(good)={self.p_good:.3f}, "
                f"P(bad)={self.p_bad:.3f}, position {self.position:.2f} "
                f"between good=0 and bad=1; separation {self.separation:.3f})")


def classify(sample_groups: Groups, good_groups: Groups, bad_groups: Groups,
             higher_is_better: bool, confidence: float = 0.95, seed: int = 0,
             n_boot: int = DEFAULT_N_BOOT, paired: Optional[bool] = None,
             resample_runs: bool = True) -> Classification:
    """Classify a bisection probe as ``"good"``, ``"bad"`` or ``"uncertain"``.

    ``paired=None`` pairs when probe, good and bad have the same (>= 2)
    layout ids; ``paired=True`` pairs on the ids common to all three.  See
    :class:`Classification` for the decision rule.  ``higher_is_better``
    only affects the ``bad_is_worse`` sanity flag: the decision is
    symmetric (nearest reference wins).
    """
    _check_conf(confidence)
    gp = _as_groups(sample_groups, "sample_groups")
    gg = _as_groups(good_groups, "good_groups")
    gbad = _as_groups(bad_groups, "bad_groups")
    is_paired, ids = _resolve_paired([gp, gg, gbad], paired)
    sides = [gp, gg, gbad]
    if is_paired:
        sides = [{i: s[i] for i in ids} for s in sides]
    cp, cg, cb = (_center(s) for s in sides)
    if not (cp > 0 and cg > 0 and cb > 0):
        raise ValueError("classify needs positive centers")

    rng = np.random.default_rng(seed)
    lp, lg, lb = _log_center_samples(sides, is_paired, ids, n_boot, rng, resample_runs)

    d_good = np.abs(lp - lg)
    d_bad = np.abs(lp - lb)
    p_good = float(np.mean(d_good < d_bad))
    p_bad = float(np.mean(d_bad < d_good))

    denom = math.log(cb / cg)
    position = math.log(cp / cg) / denom if denom != 0 else math.nan
    bden = lb - lg
    ok = bden != 0
    if np.any(ok):
        t = (lp[ok] - lg[ok]) / bden[ok]
        alpha = 1.0 - confidence
        tl, th = np.quantile(t, [alpha / 2.0, 1.0 - alpha / 2.0])
        tl, th = float(tl), float(th)
    else:
        tl = th = math.nan
    if denom > 0:
        separation = float(np.mean(bden > 0))
    elif denom < 0:
        separation = float(np.mean(bden < 0))
    else:
        separation = 0.0

    if p_good >= confidence:
        verdict, prob = "good", p_good
    elif p_bad >= confidence:
        verdict, prob = "bad", p_bad
    else:
        verdict, prob = "uncertain", max(p_good, p_bad)

    bad_is_worse = (cb < cg) if higher_is_better else (cb > cg)
    return Classification(
        verdict=verdict,
        probability=prob,
        p_good=p_good,
        p_bad=p_bad,
        position=position,
        position_low=tl,
        position_high=th,
        center_probe=cp,
        center_good=cg,
        center_bad=cb,
        bad_is_worse=bool(bad_is_worse),
        separation=separation,
        paired=is_paired,
        confidence=confidence,
        n_boot=int(n_boot),
    )
