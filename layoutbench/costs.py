"""What a bisection may spend, and how it spends it: ``--budget`` as runs or as a duration,
the time a run takes, and the runs per layout that two costs make cheapest.

* ``--budget 500`` is 500 runs; ``--budget 8h`` (``90m``, ``2h30m``, ``45s``, ``1.5h``) is a
  duration, turned into runs with the time per run: the target's ``run_cost`` and
  ``layout_cost`` when the profile states them (a layout's cost shared by its R runs),
  else the mean duration of the runs already in the store for this kernel and target,
  else -- before any run is measured -- of the endpoints' first runs (the plan says so).
* Runs per layout: where a new layout costs ``c_layout`` (a link, a reboot) and a rerun on
  the same layout ``c_run``, and a layout's value has layout variance s_L^2 plus run
  variance s_R^2 / R, the cost per unit of information is lowest at the classic
  two-stage optimum ``R* = sqrt((c_layout / c_run) * (s_R^2 / s_L^2))``, rounded and clamped
  to ``1 .. MAX_RUNS_PER_LAYOUT``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import LayoutbenchError

MAX_RUNS_PER_LAYOUT = 16  #: R* is clamped to 1 .. this
MAX_BUDGET_RUNS = 10_000_000
MAX_BUDGET_SECONDS = 366 * 24 * 3600.0  #: a year
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


@dataclass(frozen=True)
class Budget:
    """``--budget``: a number of runs, or a duration in seconds (exactly one is set)."""

    runs: int | None = None
    seconds: float | None = None


def parse_budget(value) -> Budget | None:
    """``--budget RUNS`` or ``--budget DURATION`` (``8h``, ``90m``, ``2h30m``, ``45s``); None: unset.
    Anything else -- 0, a negative number, a unit other than h/m/s -- is one line naming the option."""
    if value is None:
        return None
    text = str(value).strip().lower()
    bad = LayoutbenchError(f"--budget {value!r} is not allowed: give a number of runs above 0 (e.g. 500) or a "
                           f"duration above 0 (e.g. 8h, 90m, 2h30m, 45s)")
    if isinstance(value, bool) or not text:
        raise bad
    if text.isdigit():
        n = int(text)
        if not 0 < n <= MAX_BUDGET_RUNS:
            raise bad
        return Budget(runs=n)
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.groups()):
        raise bad
    seconds = sum(float(x) * _UNITS[u] for x, u in zip(m.groups(), "hms") if x is not None)
    if not 0 < seconds <= MAX_BUDGET_SECONDS:
        raise bad
    return Budget(seconds=seconds)


def duration_text(seconds: float | None) -> str:
    """A duration as ``--budget`` takes it back: 2h30m, 90m -> 1h30m, 45s, 1h0m5s -> 1h5s."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec or not (h or m) else "")
    return out


def target_costs(settings: dict) -> tuple[float | None, float | None]:
    """(layout_cost, run_cost) in seconds as a ``[targets.X]`` table states them (None: not stated)."""
    lc, rc = settings.get("layout_cost"), settings.get("run_cost")
    return (None if lc is None else float(lc)), (None if rc is None else float(rc))


def seconds_per_run(layout_cost: float | None, run_cost: float | None, runs_per_layout: int,
                    durations: list[float]) -> tuple[float | None, str]:
    """The time one run takes on average, and where that number comes from: the stated costs
    (``run_cost + layout_cost / R``: a layout's cost is shared by its R runs), else the mean of
    ``durations`` (measured runs), else None (nothing to go by yet)."""
    r = max(1, int(runs_per_layout))
    if run_cost is not None:
        x = run_cost + (layout_cost or 0.0) / r
        why = f"run_cost {run_cost:g} s" + (f" + layout_cost {layout_cost:g} s / {r} run(s) per layout"
                                              if layout_cost else "") + " (the profile)"
        return x, why
    d = [float(v) for v in durations if v is not None and math.isfinite(float(v)) and float(v) >= 0]
    if d:
        return float(np.mean(d)), f"the mean duration of {len(d)} measured run(s)"
    return None, "not measured yet"


def runs_for(seconds: float, per_run: float) -> int:
    """The runs a duration pays for at ``per_run`` seconds a run (at least 1)."""
    return max(1, int(seconds // per_run)) if per_run > 0 else MAX_BUDGET_RUNS


@dataclass(frozen=True)
class NoiseSplit:
    """Layout and run variance of the log values (the classic one-way ANOVA estimates)."""

    var_layout: float  #: s_L^2: the variance of a layout's true mean around its commit's
    var_run: float  #: s_R^2: the variance of a run around its layout's mean
    df_layout: int
    df_run: int
    runs: float  #: runs per layout the split was measured with (harmonic mean)


def noise_split(commits: list[dict]) -> NoiseSplit | None:
    """Split the noise of ``commits`` (each ``{layout: [values]}``, several runs per layout) into
    layout and run variance on the log scale, pooled over the commits: s_R^2 from the runs
    around their layout's mean, s_L^2 = (variance of the layout means around their commit's
    mean) - s_R^2 / R (at least 0).  None when no layout has two runs or no commit two layouts."""
    ss_r = df_r = ss_b = df_b = 0.0
    inv_n: list[float] = []
    for groups in commits:
        means = []
        for vals in groups.values():
            x = np.log(np.asarray(vals, dtype=float))
            if x.size == 0:
                continue
            means.append(float(x.mean()))
            if x.size >= 2:
                ss_r += float(np.sum((x - x.mean()) ** 2))
                df_r += x.size - 1
                inv_n.append(1.0 / x.size)
        if len(means) >= 2:
            mm = np.asarray(means)
            ss_b += float(np.sum((mm - mm.mean()) ** 2))
            df_b += len(means) - 1
    if df_r == 0 or df_b == 0:
        return None
    var_r = ss_r / df_r
    r = 1.0 / float(np.mean(inv_n))
    var_l = max(0.0, ss_b / df_b - var_r / r)
    return NoiseSplit(var_l, var_r, int(df_b), int(df_r), r)


def runs_per_layout(layout_cost: float, run_cost: float, var_run: float, var_layout: float,
                    max_runs: int = MAX_RUNS_PER_LAYOUT) -> tuple[int, float]:
    """(R, the unrounded optimum): R* = sqrt((layout_cost / run_cost) * (var_run / var_layout)),
    rounded half up, clamped to 1 .. ``max_runs`` (no run noise: 1; no layout noise: ``max_runs``)."""
    if var_run <= 0:
        return 1, 0.0
    if var_layout <= 0:
        return max_runs, math.inf
    raw = math.sqrt((layout_cost / run_cost) * (var_run / var_layout))
    return int(min(max_runs, max(1, math.floor(raw + 0.5)))), raw
