"""A family of comparisons: Holm and Benjamini-Hochberg adjustment of their p-values."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from .comparison import Comparison

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
