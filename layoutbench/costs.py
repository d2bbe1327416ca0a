"""What a bisection may spend, and how it spends it: ``--budget`` as runs or as a duration,
the time a run takes, and the runs per layout that two costs make cheapest.

* ``--budget 500`` is 500 runs; ``--budget 8h`` (``90m``, ``2h30m``, ``45s``, ``1.5h``) is a
  duration, turned into runs with the time per run, ``run + layout / R``: a layout's cost
  shared by its R runs.
* The two costs (:func:`choose`): each is the target's ``layout_cost`` / ``run_cost`` when the
  profile states it (a stated cost always wins), else **measured** (:func:`measured`): the
  median of what the store holds for this kernel and target -- a layout: the link of an
  image (plan, script, linker, placement check; ``builds.link_seconds``) plus, where the
  target deploys an image once and reruns it (ssh without reboot: the copy), that deploy
  (``runs.deploy_seconds``); a run: its ``duration`` (on QEMU and labgrid every run is a
  boot, so a rerun costs a boot too) plus the steps every run repeats before its benchmark
  (ssh: install, reboot; ``runs.boot_seconds``).  Before anything is measured: nothing (the
  plan says so, and the budget in runs is set after the endpoints' first runs).
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
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", re.ASCII)
#: ``--budget none``: a bisection continued with it spends without a cap
NO_BUDGET = ("none", "off")


@dataclass(frozen=True)
class Budget:
    """``--budget``: a number of runs, or a duration in seconds (exactly one is set)."""

    runs: int | None = None
    seconds: float | None = None

    @property
    def unlimited(self) -> bool:
        """``--budget none``: no cap (what removes the budget of a bisection in progress)."""
        return self.runs is None and self.seconds is None


def parse_budget(value) -> Budget | None:
    """``--budget RUNS`` or ``--budget DURATION`` (``8h``, ``90m``, ``2h30m``, ``45s``) or ``none`` (no
    cap: ``Budget()``); None: unset.  Anything else -- 0, a negative number, a unit other than h/m/s,
    a digit that is not 0-9 -- is one line naming the option."""
    if value is None:
        return None
    text = str(value).strip().lower()
    bad = LayoutbenchError(f"--budget {value!r} is not allowed: give a number of runs above 0 (e.g. 500), a "
                           f"duration above 0 (e.g. 8h, 90m, 2h30m, 45s) or none")
    if isinstance(value, bool) or not text:
        raise bad
    if text in NO_BUDGET:
        return Budget()
    if re.fullmatch(r"[0-9]+", text):
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
    """A duration as ``--budget`` takes it back: 2h30m, 90m -> 1h30m, 45s, 1h0m5s -> 1h5s, 0.02s (under half a
    second two digits stay: a positive duration never reads 0s)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if 0 < seconds < 0.5:  # under a second a fraction is kept: a positive duration never reads 0s
        return f"{seconds:.2g}s"
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec or not (h or m) else "")
    return out


def target_costs(settings: dict) -> tuple[float | None, float | None]:
    """(layout_cost, run_cost) in seconds as a ``[targets.X]`` table states them (None: not stated)."""
    lc, rc = settings.get("layout_cost"), settings.get("run_cost")
    return (None if lc is None else float(lc)), (None if rc is None else float(rc))


def _seconds(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) >= 0]


@dataclass(frozen=True)
class Measured:
    """The pieces of a layout's and a run's cost as the store holds them for one kernel and target."""

    links: tuple[float, ...] = ()  #: seconds each image's link took
    deploys: tuple[float, ...] = ()  #: seconds a new image's deploy took (a rerun skips it)
    runs: tuple[float, ...] = ()  #: seconds each run took: its duration + the steps every run repeats
    noun: str = "runs"  #: what a run is on this target ("boots+runs" on QEMU)

    @property
    def layout(self) -> float | None:
        """median link (+ median deploy where the target has one); None without a measured link."""
        if not self.links:
            return None
        return float(np.median(self.links)) + (float(np.median(self.deploys)) if self.deploys else 0.0)

    @property
    def run(self) -> float | None:
        return float(np.median(self.runs)) if self.runs else None

    def layout_text(self) -> str:
        out = f"{len(self.links)} link(s) {float(np.median(self.links)):.3g} s"
        if self.deploys:
            out += f" + {len(self.deploys)} deploy(s) {float(np.median(self.deploys)):.3g} s"
        return out

    def run_text(self) -> str:
        return f"{len(self.runs)} {self.noun} {float(np.median(self.runs)):.3g} s"


def measured(links, rows, noun: str = "runs") -> Measured:
    """The measured pieces from the store's rows: ``links`` (link seconds of the images) and
    ``rows`` (ok runs: ``duration``, ``boot_seconds``, ``deploy_seconds``, None where not measured)."""
    runs = _seconds((r["duration"] or 0.0) + (r.get("boot_seconds") or 0.0) for r in rows
                    if r.get("duration") is not None)
    return Measured(tuple(_seconds(links)), tuple(_seconds(r.get("deploy_seconds") for r in rows)), tuple(runs),
                    noun)


@dataclass(frozen=True)
class Costs:
    """The layout and run cost a bisection plans with, each with where it came from."""

    layout: float | None  #: seconds a new layout costs (None: not stated, not measured)
    run: float | None  #: seconds a rerun of the same layout costs
    layout_from: str  #: "stated", "measured" or "" (unknown)
    run_from: str
    text: str  #: where they came from, for people

    @property
    def stated(self) -> bool:
        return self.layout_from == self.run_from == "stated"

    def to_dict(self) -> dict:
        return {"layout": self.layout, "run": self.run, "layout_from": self.layout_from, "run_from": self.run_from,
                "text": self.text}


def choose(layout_cost: float | None, run_cost: float | None, m: Measured | None = None) -> Costs:
    """Each cost as stated (``layout_cost``, ``run_cost`` of the profile; a stated cost always
    wins), else as measured (``m``: medians), else None; with the text saying where each came from:
    ``stated: layout_cost 60 s, run_cost 5 s``, ``measured: median of 12 link(s) 0.8 s, 12
    boots+runs 3.1 s``, or a mix of the two."""
    m = m or Measured()
    lc, lf = (layout_cost, "stated") if layout_cost is not None else (m.layout, "measured" if m.links else "")
    rc, rf = (run_cost, "stated") if run_cost is not None else (m.run, "measured" if m.runs else "")
    if lf == rf == "stated":
        text = f"stated: layout_cost {lc:g} s, run_cost {rc:g} s"
    elif lf == rf == "measured":
        text = f"measured: median of {m.layout_text()}, {m.run_text()}"
    else:
        parts = [f"layout_cost {lc:g} s stated" if lf == "stated" else
                 f"a layout measured: median of {m.layout_text()}" if lf else "a layout not measured yet",
                 f"run_cost {rc:g} s stated" if rf == "stated" else
                 f"a run measured: median of {m.run_text()}" if rf else "a run not measured yet"]
        text = ", ".join(parts)
    return Costs(lc, rc, lf, rf, text)


def worth_splitting(c: Costs) -> bool:
    """Whether a bisection spends a second run a layout on its endpoints' first look to split the
    noise and choose R: always with both costs stated (the profile says a layout costs more);
    with a cost measured, only where a new layout costs more than a rerun (otherwise
    R* <= s_R / s_L, and the runs beyond what the layouts need are not traded for fewer layouts
    by the layout-counted tests: docs/how-it-decides.md, Figure 5)."""
    if c.stated:
        return True
    return c.layout is not None and c.run is not None and c.run > 0 and c.layout > c.run


def seconds_per_run(c: Costs, runs_per_layout: int, beside: bool = False) -> tuple[float | None, str]:
    """The time one run takes on average, and where that number comes from: ``run + layout / R``
    (a layout's cost is shared by its R runs; a layout not known yet counts 0), or the longer of
    the two where the next layout links while a run goes on (``beside``:
    measure.links_beside_runs); None while the run's cost is neither stated nor measured."""
    r = max(1, int(runs_per_layout))
    if c.run is None:
        return None, "not measured yet"
    share = (c.layout or 0.0) / r
    x = max(c.run, share) if beside else c.run + share
    op = "beside" if beside else "+"
    if c.stated or (c.run_from == "stated" and c.layout is None):
        why = f"run_cost {c.run:g} s" + (f" {op} layout_cost {c.layout:g} s / {r} run(s) per layout"
                                         if c.layout else "") + " (the profile)"
        return x, why
    return x, (f"a run {c.run:.3g} s" + (f" {op} a layout {c.layout:.3g} s / {r} run(s) per layout" if c.layout
                                         else "") + f"; {c.text}")


def runs_for(seconds: float, per_run: float) -> int:
    """The runs a duration pays for at ``per_run`` seconds a run: at least 1, at most
    MAX_BUDGET_RUNS (the bound of ``--budget RUNS``; a tiny run cost must not make it unbounded)."""
    if not per_run > 0 or not seconds / per_run < MAX_BUDGET_RUNS:
        return MAX_BUDGET_RUNS
    return max(1, int(seconds // per_run))


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
