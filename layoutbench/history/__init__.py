"""``layoutbench history``: sweep a commit range, drill down, and find what changed where.

A *series* is one kernel's history in one repository: which commits were chosen as
points, how each was measured (layouts, runs, target, arguments) and whether it built.
It lives in the store's ``state`` table under ``history:<kernel>:<repo>``; the samples
themselves are ordinary builds/runs/samples rows, so a sweep that is killed and started
again runs only what the store lacks, and ``--refine`` measures only new commits.

Each point is one probe: compile once, link every layout, run every variant ``runs``
times.  Between two consecutive measured points every metric is compared over the
random layouts, paired by layout id (``random:3`` of one commit with ``random:3`` of
the next, which have nearly the same object order): a difference whose confidence
interval excludes 1 (Holm-adjusted over every step and metric of the history) and that is
at least ``min_effect`` is a **code change**; a
difference seen by some single layout (sorted, aligned, one seed) that the random
layouts do not confirm is **within layout noise**, the kind of change a one-layout
benchmark would have reported wrongly.

The rooms: :mod:`.sweeping` (choosing commits, the series, sweeping and refining) and
:mod:`.analysis` (the steps, their verdicts, the text).
"""

from __future__ import annotations

from . import analysis, sweeping  # noqa: F401
from .analysis import (
    Change,
    History,
    Point,
    analyse,
    bisect_verdicts,
    compare_points,
    detect,
    point_comparison,
    quirk_markers,
    summary_text,
)
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
    "bisect_verdicts",
    "compare_points",
    "detect",
    "point_comparison",
    "quirk_markers",
    "summary_text",
]
