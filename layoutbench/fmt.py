"""How numbers and names are written for a person: values, percents, ratios, effects,
probabilities, shifts in bytes and pages, names read from files.

One place for every table, summary, log line and report page (compare, history, bisect,
report), so that the same quantity reads the same everywhere.  What cannot be shown (None,
NaN, infinite) is ``n/a``.
"""

from __future__ import annotations

import math
import re

PAGE = 4096  #: the page: layouts align to it, and a shift of whole pages is said so

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(s: str) -> str:
    """A name from a file as text for a terminal: control characters (a terminal's escape
    sequences, line breaks) shown as ``\\xNN``; anything else as it is."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def shift(d: int) -> str:
    """A shift in bytes, signed, with whole pages said so: ``+8192 (2 pages)``."""
    pages = f" ({abs(d) // PAGE} page{'s' if abs(d) != PAGE else ''})" if d and d % PAGE == 0 else ""
    return f"{'+' if d >= 0 else '-'}{abs(d)}{pages}"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def number(x: float | None) -> str:
    """A measured value: 4 significant digits when small or huge, else 1 or 3 decimals."""
    if _missing(x):
        return "n/a"
    a = abs(x)
    if a >= 1e6:
        return f"{x:.4g}"
    if a >= 100:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.3f}"
    return f"{x:.4g}"


def axis(x: float) -> str:
    """A value on a plot's axis or in a tooltip: short, with k/M/G for thousands and up."""
    a = abs(x)
    if a >= 1e9:
        return f"{x / 1e9:.4g}G"
    if a >= 1e6:
        return f"{x / 1e6:.4g}M"
    if a >= 1e4:
        return f"{x / 1e3:.4g}k"
    return f"{x:.4g}"


def pct(x: float | None, digits: int = 2) -> str:
    """A fraction as a percent: 0.0123 → ``1.23%``."""
    return "n/a" if _missing(x) else f"{100 * x:.{digits}f}%"


def change(ratio: float | None, digits: int = 2) -> str:
    """A ratio as a signed relative change: 1.0123 → ``+1.23%``."""
    return "n/a" if _missing(ratio) else f"{100 * (ratio - 1):+.{digits}f}%"


def effect(c) -> str:
    """A comparison's change with its half interval: ``+1.23% ± 0.40%`` (``c``: ratio, ci_low, ci_high)."""
    half = (c.ci_high - c.ci_low) / 2
    return f"{change(c.ratio)} ± {pct(half)}"


def ratio(c) -> str:
    """A comparison as a ratio with its half interval and verdict: ``1.023 ± 0.004  slower``
    (``1.002  n/a (one layout per side)`` when there is too little data for a verdict)."""
    if c.verdict == "n/a":
        return f"{c.ratio:.3f}  n/a ({c.reason.split(':')[0]})"
    half = (c.ci_high - c.ci_low) / 2
    word = c.verdict if c.verdict != "no difference" else "same"
    return f"{c.ratio:.3f} ± {half:.3f}  {word}"


def prob(x: float | None) -> str:
    """A probability: ``0.973``."""
    return "n/a" if _missing(x) else f"{x:.3f}"
