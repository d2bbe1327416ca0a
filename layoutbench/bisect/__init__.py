"""Layout-aware bisection: find the commit whose *code* changed a metric.

Every commit measured is built once (objects compiled once, cached) and linked in the seeded
layouts of ``--layout`` with seeds ``seed, seed+1, ...`` -- the same seeds on every commit, so
that neighbouring commits are compared layout for layout -- R runs each.  The decisions are
made by :mod:`layoutbench.decide`, which runs the same code in simulation
(``bench/simulate.py``); this package measures, keeps the marks in the log and prints:

* the **endpoints**: a sequential test of GOOD against BAD, K layouts a side at its first look,
  more at each later one.  When it shows no change of at least --min-effect the verdict is
  "no change shown" (status ``not-shown``): nothing is blamed and nothing is cleared, and the
  verdict says the smallest change the test would have shown.  "Within layout noise" (status
  ``noise``) is said only when an equivalence test passes (on the way, or with --prove-null).
* the **probes**: each judged against GOOD and BAD (good, bad, or between: a change on both
  sides, marked bad).  A probe still undecided at its furthest look ends the search of its
  range: the window around it is the answer (status ``range``), and the probe stays in the log as
  a skip (why ``uncertain``).  A commit that does not build, or whose runs all fail, is skipped
  and the search goes on around it; when only skipped commits are left the answer is a range.
* the **confirmation** of each culprit on fresh layouts, then the tests of the ranges beside
  it (every change point, unless --first-only); for each range beside a step where no change
  was shown the verdict says the smallest step that test would have shown.
* ``--budget``: the bisection stops with the best verdict it has when the runs are spent.

The state of a bisection -- its settings and a log of good/bad/skip marks -- lives in
the store's ``state`` table under ``bisect:<kernel>:<repo>:<subdir>``, and is put aside under
``bisect-range:<kernel>:<repo>:<subdir>:<good>..<bad>:<metric>`` while another range or metric
of the kernel is bisected (the same command with its range takes it back); the samples live
in the store as usual.  So an interrupted bisection resumes where it stopped: marks
already made are kept, runs already stored are not run again.  The log prints like
``git bisect log`` and ``replay`` re-applies one.

Beside its own verdict, a bisection reports what a single-layout bisection would
have concluded (default link, one run per probe, nearest-value rule as in asv find),
computed by running that bisection too, over the same store and object cache; its
cost is counted apart.  ``bisect run --plan`` measures the endpoints' first look only and
says what the bisection will likely cost, and whether a step of twice the minimum effect is
likely missed at the noise measured (:func:`forecast.missed_step`).

The rooms: :mod:`.settings` (the settings and their keys), :mod:`.prober` (building and measuring
commits), :mod:`.state` (the state, its log and the git-shaped verbs), :mod:`.runner` (``bisect
run``), :mod:`.budget` (the runs per layout, the clock, ``--plan``), :mod:`.progress` (the progress log,
what a compile is for, the naive bisection's plan), :mod:`.render` (the plan's
warning; the verdict's text is :mod:`layoutbench.verdict.text`) and :mod:`.judge_script` (``bisect judge``).  The names below are this package's interface.
"""

from __future__ import annotations

from . import budget, judge_script, prober, render, runner, settings, state  # noqa: F401
from .budget import PHASES, Clock, choose_runs, target_costs
from .judge_script import JUDGE_EXIT, Abort, judge
from .prober import Engine, Judgement, Prober, ThreadStore, endpoints, farm_cost, judge_probe
from .render import missed_lines
from .runner import code_evidence, run, single_layout
from .settings import CURRENT, Settings, exclusive, option_value, state_key
from .state import (
    KEPT,
    RANGES,
    Bisection,
    Journal,
    current,
    keep,
    kept,
    kept_key,
    mark,
    normalize,
    range_key,
    replay,
    start,
    stored,
    take_back,
)

__all__ = [
    "CURRENT",
    "Settings",
    "exclusive",
    "option_value",
    "state_key",
    "Engine",
    "Judgement",
    "Prober",
    "ThreadStore",
    "endpoints",
    "farm_cost",
    "judge_probe",
    "Bisection",
    "Journal",
    "KEPT",
    "RANGES",
    "current",
    "keep",
    "kept",
    "kept_key",
    "mark",
    "normalize",
    "range_key",
    "replay",
    "start",
    "stored",
    "take_back",
    "code_evidence",
    "run",
    "single_layout",
    "Clock",
    "PHASES",
    "choose_runs",
    "target_costs",
    "missed_lines",
    "Abort",
    "JUDGE_EXIT",
    "judge",
]
