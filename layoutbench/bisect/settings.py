"""A bisection's settings: what the command line and the profile set, checked for conflicts, and the
keys its state is kept under."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, fields

from .. import costs, decide, measure, validate
from .. import layout as layoutmod
from ..errors import LayoutbenchError

CURRENT = "bisect:current"  #: state key naming the bisection the git-shaped verbs act on


@dataclass
class Settings:
    """What a bisection measures and how much it may spend per probe."""

    kernel: str
    repo: str | None = None
    subdir: str | None = None
    metric: str | None = None
    target: str | None = None
    args: str = ""  #: extra program arguments, one string
    mode: str = "rerun"
    layouts: int = 4  #: K: random layouts per probe at the first look, seeds seed..seed+K-1 on every commit
    max_layouts: int = decide.Plan.max_layouts  #: the furthest any test looks (layouts a side: K, 1.5K, ...)
    runs: int = 1  #: R: runs per layout
    max_runs: int = 1  #: --max-runs, stored with the settings; the tests add layouts, never runs
    seed: int = 1
    confidence: float = 0.95  #: 1 - alpha: the error budget of the whole bisection, shared over its tests
    #: smallest change (relative, e.g. 0.01) that counts as a change: the endpoints' estimate must reach it,
    #: a named commit's confirmation must show its step beyond it
    min_effect: float | None = decide.DEFAULT_MIN_EFFECT
    shadow: bool = True  #: also run the single-layout (default link, one run) bisection
    #: hash of the target's configuration (``measure.target_config``, filled in by ``normalize``):
    #: a bisection started under another one is started again, not resumed
    target_config: str = ""
    all_changes: bool = False  #: --all-changes, read from a log that has it; every change point is searched anyway
    first_only: bool = False  #: stop after the first confirmed change point
    prove_null: bool = False  #: prove "no change of min_effect" at the endpoints when none is shown (expensive)
    thorough: bool = False  #: the sub-ranges beside a found step are searched further for a smaller second step
    #: the endpoints and the confirmation also read a seed-paired test beside the pooled one (decide.Plan.paired)
    paired: bool = False
    budget: int | None = None  #: runs the bisection may spend (None: no cap)
    #: the most of the bisection's runs a confirmation may take (a fraction; 1: no bound): its fresh layouts
    #: stop at share / (1 - share) x the runs spent before it, at least 40 a side (decide.share_layouts)
    confirm_share: float = decide.CONFIRM_SHARE
    #: ``--budget 8h``: seconds the bisection may spend, turned into runs at the time a run takes
    #: (costs.seconds_per_run); exclusive with ``budget``
    budget_time: float | None = None
    #: --runs not given: where a new layout costs more than a run (the target's layout_cost and
    #: run_cost, else measured), R is chosen from the costs and the measured noise split
    #: (choose_runs, costs.runs_per_layout)
    runs_auto: bool = False
    runs_choice: dict | None = None  #: that choice, once made (a resumed bisection keeps it)
    #: why the metric is exact on the target (measure.deterministic: cachegrind's and the cache model's
    #: counts), filled in by ``normalize``; then R = 1 at once: a second run of an image repeats the first
    exact: str = ""
    #: the seeded layout of the K layouts (``random``, ``shuffled``, ``padded``): a bisection
    #: started with another one is started again, not resumed; its runs are stored apart
    layout: str = "random"
    #: the options given on this command line (``--metric``, ``--budget``...; not kept in the state):
    #: what a continued bisection is checked against (``conflicts``) or applies (``_decision_flags``)
    given: tuple[str, ...] = ()

    #: the settings its marks were measured and judged with: a continued bisection cannot change them
    MEASURED = ("metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs", "max_runs", "seed",
                "confidence", "min_effect")
    #: what a continued bisection takes from the command line (the marks made stay valid)
    DECISIONS = ("first_only", "prove_null", "thorough", "budget", "budget_time", "shadow", "confirm_share",
                 "paired")

    OPTIONS = ("repo", "subdir", "metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs",
               "max_runs", "seed", "confidence", "min_effect")

    def plan(self) -> decide.Plan:
        return decide.Plan(layouts=self.layouts, max_layouts=self.max_layouts, runs=self.runs,
                           max_runs=self.max_runs, confidence=self.confidence,
                           min_effect=decide.DEFAULT_MIN_EFFECT if self.min_effect is None else self.min_effect,
                           first_only=self.first_only, prove_null=self.prove_null, thorough=self.thorough,
                           budget=None if self.budget is None else int(self.budget), confirm_share=self.confirm_share,
                           paired=self.paired)

    def check(self) -> None:
        exclusive(self)
        if self.mode not in measure.SAME_IMAGE_MODES:
            raise LayoutbenchError(f"bisect runs in mode {' or '.join(measure.SAME_IMAGE_MODES)}, not {self.mode!r}")
        if self.layouts < 2:
            raise LayoutbenchError("--layouts must be at least 2 (the layout noise needs two layouts)")
        if not layoutmod.get(self.layout).seeded:
            seeded = ", ".join(n for n, x in layoutmod.REGISTRY.items() if x.seeded)
            raise LayoutbenchError(f"--layout {self.layout} takes no seed; a bisection needs a seeded layout: {seeded}")
        if self.runs < 1:
            raise LayoutbenchError("--runs must be at least 1")
        if self.budget is not None and (isinstance(self.budget, bool) or not isinstance(self.budget, int)
                                        or self.budget < 1):
            costs.parse_budget(self.budget)  # one line naming --budget
        if self.budget_time is not None:
            costs.parse_budget(f"{self.budget_time}s")
        validate.options({"runs": self.runs, "max_runs": self.max_runs, "layouts_k": self.layouts,
                          "max_layouts": self.max_layouts, "confidence": self.confidence})
        validate.seed("--seed", self.seed, max(self.max_layouts, self.layouts) * 4)
        validate.min_effect_fraction(self.min_effect)
        if isinstance(self.confirm_share, bool) or not isinstance(self.confirm_share, (int, float)) \
                or not 0 < self.confirm_share <= 1:
            validate.confirm_share_fraction(f"{self.confirm_share}", decide.CONFIRM_SHARE)  # one line naming it
        self.max_layouts = max(self.max_layouts, self.layouts)
        self.max_runs = max(self.max_runs, self.runs)
        names = self.targets
        if len(set(names)) != len(names):
            raise LayoutbenchError(f"--target {self.target} names a target twice; give each machine once")

    @property
    def targets(self) -> list[str | None]:
        """The targets of ``--target a,b,c`` (a farm: probes spread over them), or [None]: the default."""
        if not self.target:
            return [None]
        return [w.strip() for w in self.target.split(",") if w.strip()] or [None]

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("given")
        return d

    def conflicts(self, now: "Settings") -> list[str]:
        """The measured settings given in ``now`` that differ from these, as ``--metric t`` (these)."""
        out = []
        for name in self.MEASURED:
            if name in now.given and getattr(now, name) != getattr(self, name):
                out.append(f"--{name.replace('_', '-')} {option_value(name, getattr(self, name))}")
        if "target" in now.given and now.target == self.target and now.target_config != self.target_config:
            out.append(f"--target {self.target} as configured then (its [targets] table changed since)")
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Settings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def start_line(self, bad: str | None, good: str | None, paired_default: bool = False) -> str:
        """The `bisect start` command that starts this bisection again; ``paired_default``: the profile pairs
        by default (`[bisect] paired`), so an unpaired bisection says --no-paired."""
        words = ["layoutbench", "bisect", "start", self.kernel] + [w for w in (bad, good) if w]
        for name in self.OPTIONS:
            v = getattr(self, name)
            if v is None or (name == "args" and not v):
                continue
            words += [f"--{name.replace('_', '-')}", str(option_value(name, v))]
        if not self.shadow:
            words.append("--no-shadow")
        for flag in ("first_only", "prove_null", "thorough", "paired"):
            if getattr(self, flag):
                words.append("--" + flag.replace("_", "-"))
        if paired_default and not self.paired:
            words.append("--no-paired")
        if self.confirm_share != decide.CONFIRM_SHARE:
            words += ["--confirm-share", f"{100 * self.confirm_share:.10g}%"]
        if self.budget is not None:
            words += ["--budget", str(self.budget)]
        elif self.budget_time is not None:
            words += ["--budget", costs.duration_text(self.budget_time)]
        return shlex.join(words)


def exclusive(settings: Settings) -> None:
    """--first-only and --thorough together: one line (the first stops before the sides the second searches)."""
    if settings.first_only and settings.thorough:
        raise LayoutbenchError("--first-only and --thorough cannot be used together: --first-only stops after the "
                               "first change point, --thorough searches the ranges beside it further; give one")


def option_value(name: str, value):
    """A setting as its command-line option takes it: --min-effect is a percent with its sign (a log
    written without one holds a fraction), every other one as it is."""
    return f"{100 * value:.10g}%" if name == "min_effect" and value is not None else value


def state_key(kernel: str, repo, subdir) -> str:
    return f"bisect:{kernel}:{repo or ''}:{subdir or ''}"
