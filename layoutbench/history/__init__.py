"""``layoutbench history``: sweep a commit range, drill down, and find what changed where.

A *series* is one kernel's history in one repository: which commits were chosen as
points, how each was measured (layouts, runs, target, arguments) and whether it built.
It lives in the store's ``state`` table under ``history:<kernel>:<repo>``; the samples
themselves are ordinary builds/runs/samples rows, so a sweep that is killed and started
again runs only what the store lacks, and ``--refine`` measures only new commits.

Each point is one probe: compile once, link every layout, run every variant ``runs``
times.  Between two consecutive measured points every metric is judged by the bisection's
standard of evidence (:mod:`.evidence`): the layout noise pooled over every point, each step's
interval at its share of the history's error budget, the minimum effect *tested*.  A step is a
**code change** only when its interval lies beyond +-``min_effect``; **below the minimum effect**
when a change is seen but not shown to be that large; **within layout noise** only when an
equivalence test passed; otherwise **not shown**, with the step the test could have missed.

The rooms: :mod:`.sweeping` (choosing commits, the series, sweeping and refining), :mod:`.evidence`
(judging the steps) and :mod:`.analysis` (the history read from the store, the verdicts beside it, the text).
"""

from __future__ import annotations

from . import analysis, evidence, markers, sweeping  # noqa: F401
from .analysis import (
    Change,
    History,
    Point,
    analyse,
    changes_lines,
    detect,
    judge_steps,
    quirk_markers,
    summary_text,
)
from .markers import Marker, MarkerEffect, bisect_verdicts
from .sweeping import (
    DEFAULT_LAYOUTS,
    DEFAULT_MIN_EFFECT,
    Series,
    SweepOptions,
    SweepOutcome,
    choose,
    commit_dates,
    full_range,
    load_series,
    parse_interval,
    probe,
    refine,
    save_series,
    series_key,
    sweep,
)

__all__ = [
    "DEFAULT_LAYOUTS",
    "DEFAULT_MIN_EFFECT",
    "Series",
    "SweepOptions",
    "SweepOutcome",
    "choose",
    "commit_dates",
    "full_range",
    "load_series",
    "parse_interval",
    "probe",
    "refine",
    "save_series",
    "series_key",
    "sweep",
    "Change",
    "History",
    "Point",
    "analyse",
    "Marker",
    "MarkerEffect",
    "bisect_verdicts",
    "changes_lines",
    "detect",
    "judge_steps",
    "quirk_markers",
    "summary_text",
]
