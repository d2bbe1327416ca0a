"""What the statistics share: the defaults, the input conventions (a sample, a commit's groups) and
the checks and conversions of their input."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Default number of bootstrap resamples.
DEFAULT_N_BOOT = 2000
#: Robust z-score above which a value is flagged as an outlier.
OUTLIER_THRESHOLD = 3.5
#: MAD -> sd consistency constant for normal data.
MAD_SCALE = 1.4826
#: mean-absolute-deviation -> sd consistency constant for normal data.
MEANAD_SCALE = 1.2533

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


class ToDict:
    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict (non-finite floats -> None)."""
        return _jsonable(dataclasses.asdict(self))  # type: ignore[arg-type]


def as_array(values: Sequence[float], what: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what}: empty sample")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: contains non-finite values")
    return arr


def as_groups(groups: Groups, what: str = "groups") -> dict[str, np.ndarray]:
    """Normalise a groups argument to ``{layout id: float array}``."""
    if isinstance(groups, Mapping):
        items = list(groups.items())
    else:
        items = [("_", groups)]
    if not items:
        raise ValueError(f"{what}: no layouts")
    out: dict[str, np.ndarray] = {}
    for key, vals in items:
        out[str(key)] = as_array(vals, f"{what}[{key!r}]")
    return out


def layout_stats(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
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


def check_conf(confidence: float) -> None:
    if not (0.0 < confidence < 1.0):
        raise ValueError("confidence must be in (0, 1)")
