"""Descriptive statistics of one sample: its median with a bootstrap interval, and its outliers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .base import MAD_SCALE, MEANAD_SCALE, DEFAULT_N_BOOT, OUTLIER_THRESHOLD, as_array, check_conf, ToDict

# --------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary(ToDict):
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
    scale = MAD_SCALE * float(np.median(dev))
    if scale <= 0.0:
        scale = MEANAD_SCALE * float(np.mean(dev))
    if scale <= 0.0:
        return []
    return [int(i) for i in np.nonzero(dev / scale > threshold)[0]]


def summarize(values: Sequence[float], confidence: float = 0.95, seed: int = 0,
              n_boot: int = DEFAULT_N_BOOT) -> Summary:
    """Summarise one sample (see :class:`Summary`).

    The CI of the median is a percentile bootstrap with ``n_boot``
    resamples drawn from ``numpy.random.default_rng(seed)``.
    """
    check_conf(confidence)
    arr = as_array(values)
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
