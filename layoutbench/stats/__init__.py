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

The rooms: :mod:`.base` (defaults, input conventions and checks), :mod:`.summary`, :mod:`.noise`
(the layout-noise split), :mod:`.comparison` and :mod:`.family` (adjusting a family of p-values).
"""

from __future__ import annotations

from . import base, comparison, family, noise, summary  # noqa: F401
from .base import DEFAULT_N_BOOT, OUTLIER_THRESHOLD, Groups
from .comparison import DEFAULT_MIN_EFFECT, Comparison, compare
from .family import ADJUST_METHODS, adjust, adjust_comparisons
from .noise import NoiseSplit, noise_split, noise_text
from .summary import Summary, summarize

__all__ = [
    "ADJUST_METHODS",
    "DEFAULT_MIN_EFFECT",
    "DEFAULT_N_BOOT",
    "OUTLIER_THRESHOLD",
    "Comparison",
    "Groups",
    "NoiseSplit",
    "Summary",
    "adjust",
    "adjust_comparisons",
    "compare",
    "noise_split",
    "noise_text",
    "summarize",
]
