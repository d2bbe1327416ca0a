"""The single-layout baseline: what a bisection without a layout model names (one value a commit)."""

from __future__ import annotations

import math

from .plan import Skip

# -- the single-layout baseline --------------------------------------------------------------------

def single_layout(single, commits: list[str], threshold: float | None = None) -> dict:
    """What a tool without a layout model does (asv find): one value per commit (``single(c)``,
    the default link, one run), each probe called good or bad by the bracketing value it is
    nearer to.  With ``threshold`` it first says "no change" when the endpoints' values differ
    by less than that (relative)."""
    vals: dict[int, float | None] = {}

    def v(i: int) -> float | None:
        if i not in vals:
            try:
                vals[i] = single(commits[i])
            except Skip:
                vals[i] = None
        return vals[i]

    lo, hi = 0, len(commits) - 1
    if v(lo) is None or v(hi) is None:
        return {"culprit": None, "range": [], "note": "an endpoint does not build", "values": len(vals)}
    if threshold is not None and abs(math.log(v(hi) / v(lo))) < math.log1p(threshold):
        return {"culprit": None, "range": [], "note": f"endpoints differ by less than {100 * threshold:g}%",
                "values": len(vals)}
    while hi - lo > 1:
        mid = (lo + hi) / 2
        order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
        m = next((i for i in order if v(i) is not None), None)
        if m is None:
            return {"culprit": None, "range": commits[lo + 1:hi + 1], "note": "only unbuildable commits left",
                    "values": len(vals)}
        if abs(v(m) - v(lo)) <= abs(v(hi) - v(m)):
            lo = m
        else:
            hi = m
    change_ = v(hi) / v(lo) - 1 if v(lo) else math.nan
    return {"culprit": commits[hi], "change": change_, "range": [], "values": len(vals)}
