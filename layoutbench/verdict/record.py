"""A bisection's verdict as a typed record: what ``bisect run`` decided, each part a dataclass.

:class:`BisectionRecord` is built by the runner's last phase and read by every renderer (the
terminal text, ``--json``, the report's markers, ``bisect log`` and the exit code), never as a
dict by key.  Its JSON (:meth:`Record.to_dict`, the keys README and
docs/guide/reading-output.md document) is what the store keeps; :meth:`Record.from_dict` reads
it back, a record written by another version too: a key it does not know is kept beside it
(``extra``) and written again as it was.

The parts: :class:`Effect` (a comparison with its interval, as stats.Comparison states it),
:class:`Endpoints` (GOOD against BAD), :class:`Confirmation` (the first step's own effect on
fresh layouts), :class:`Step` (each change point looked at, with its own effect),
:class:`Side` (a test of a range beside a found step), :class:`Residual`, :class:`Candidate`
(what was not ruled out and its probability), :class:`Cost`, :class:`BudgetSpent`,
:class:`CodeEvidence` and :class:`Shadow` (what a naive single-layout bisection would blame).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar


class Record:
    """What every part shares: its JSON and back.  ``OMIT``: the fields left out of the JSON while
    None (a key that is present only in some verdicts); ``NESTED``: field -> the part it holds (a
    list of them when the field's default is a list)."""

    OMIT: ClassVar[frozenset] = frozenset()
    NESTED: ClassVar[dict] = {}

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            x = getattr(self, f.name)
            if x is None and f.name in self.OMIT:
                continue
            out[f.name] = [i.to_dict() for i in x] if isinstance(x, list) and x and isinstance(x[0], Record) \
                else x.to_dict() if isinstance(x, Record) else x
        return {**out, **getattr(self, "extra", {})}

    @classmethod
    def from_dict(cls, d: dict | None):
        """The part from its JSON (None stays None)."""
        if d is None:
            return None
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        kw: dict[str, Any] = {}
        for k, x in d.items():
            if k not in names or k == "extra":
                continue
            part = cls.NESTED.get(k)
            kw[k] = x if part is None or x is None else [part.from_dict(i) for i in x] if isinstance(x, list) \
                else part.from_dict(x)
        if "extra" in names:
            kw["extra"] = {k: x for k, x in d.items() if k not in names or k == "extra"}
        return cls(**kw)


@dataclass(frozen=True)
class Effect(Record):
    """A ratio B/A with the interval its test decided on (stats.Comparison as stored)."""

    ratio: float = math.nan
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    sided: bool = False
    p_value: float | None = None
    verdict: str = ""  #: stats' word: slower, faster, no difference, ...
    layouts: int = 0
    layouts_b: int | None = None
    runs_a: int | None = None
    runs_b: int | None = None
    layout_noise: float | None = None
    layout_noise_upper: float | None = None
    noise_separated: bool | None = None
    noise: str = ""  #: the noise in words (Comparison.noise_text)
    min_effect: float | None = None
    explained_by_layout: float | None = None
    per_layout_ratios: list | None = None
    wilcoxon_p: float | None = None
    describe: str = ""
    claim: str | None = None
    shown: str | None = None  #: "beyond" the minimum effect, a "change" not beyond it, or "none"
    paired: bool = True
    test: str | None = None

    @classmethod
    def comparison_fields(cls, comparison) -> dict:
        """The fields of a stats.Comparison, as a verdict keeps them."""
        return {"ratio": comparison.ratio, "ci_low": comparison.ci_low, "ci_high": comparison.ci_high,
                "confidence": comparison.confidence, "sided": comparison.sided, "p_value": comparison.p_value,
                "verdict": comparison.verdict, "layouts": comparison.n_layouts_a, "layouts_b": comparison.n_layouts_b,
                "runs_a": comparison.n_runs_a, "runs_b": comparison.n_runs_b, "layout_noise": comparison.layout_noise,
                "layout_noise_upper": comparison.layout_noise_upper, "noise_separated": comparison.noise_separated,
                "noise": comparison.noise_text(), "min_effect": comparison.min_effect,
                "explained_by_layout": comparison.explained_by_layout,
                "per_layout_ratios": comparison.per_layout_ratios, "wilcoxon_p": comparison.wilcoxon_p,
                "describe": comparison.describe(), "claim": comparison.claim(), "shown": shown_state(comparison),
                "paired": comparison.paired, "test": comparison.test_text()}

    @classmethod
    def of(cls, comparison, **more):
        """The effect of a stats.Comparison (``more``: the fields of a subclass, or one said otherwise)."""
        return cls(**{**cls.comparison_fields(comparison), **more})

    @property
    def words(self) -> str:
        """Its claim ("shown slower but not shown to exceed the minimum effect"), else its verdict."""
        return self.claim or self.verdict

    @property
    def test_words(self) -> str:
        """Which test its interval is from ("paired over 6", "one-sided, pooled over 6 vs 6")."""
        if self.paired:  # (a one-sided paired test: a confirmation's, decide.paired)
            return ("one-sided, " if self.sided else "") + f"paired over {self.layouts}"
        other = self.layouts_b if self.layouts_b is not None else self.layouts
        return f"{'one' if self.sided else 'two'}-sided, pooled over {self.layouts} vs {other}"


def shown_state(comparison) -> str:
    """What an interval shows, as decide's Step.shown words it: "beyond" (a change beyond the minimum
    effect), "change" (it excludes 1, not the band), "none"."""
    return "beyond" if comparison.significant else "change" if comparison.shown else "none"


@dataclass(frozen=True)
class Endpoints(Effect):
    """GOOD against BAD: the endpoints' test and what it decided (differs, noise, not-shown)."""

    OMIT: ClassVar[frozenset] = frozenset({"more_layouts", "shows"})
    status: str = ""
    look_level: float | None = None
    more_layouts: int | None = None  #: not shown: the layouts a side that would likely show it
    shows: float | None = None  #: not shown: the smallest change (relative) its test shows at 90% power


@dataclass(frozen=True)
class Confirmation(Effect):
    """The first step's confirmation: the culprit against its last good commit on fresh layouts."""

    fresh_layouts: int | None = None
    bounded: bool | None = None
    step_ratio: float | None = None  #: the step over every layout measured on the pair (an estimate)


@dataclass(frozen=True)
class Step(Record):
    """One change point looked at: found (confirmed), uncertain, or a range (skipped commits)."""

    NESTED: ClassVar[dict] = {"effect": Effect}
    status: str = ""
    last_good: str | None = None
    culprit: str | None = None
    subject: str = ""
    share: float | None = None  #: of the endpoints' change (log scale)
    range: list = field(default_factory=list)
    shown: str | None = None
    bounded: bool | None = None
    forecast: dict | None = None
    effect: Effect | None = None  #: its own confirmation


@dataclass(frozen=True)
class Side(Record):
    """The test of a range beside a found step."""

    good: str = ""
    bad: str = ""
    status: str = ""  #: differs, not-shown, noise
    ratio: float = math.nan
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    layouts: int = 0
    level: float | None = None
    cap: int | None = None
    futile: bool = False
    reach: float | None = None
    shows: float | None = None

    @property
    def conf(self) -> float | None:
        return self.confidence or (1 - self.level if self.level else None)


@dataclass(frozen=True)
class Residual(Record):
    """A range beside a step shown to differ; ``unlocated`` when no step was then found in it."""

    OMIT: ClassVar[frozenset] = frozenset({"unlocated"})
    good: str = ""
    bad: str = ""
    ratio: float = math.nan
    level: float | None = None
    unlocated: bool | None = None


@dataclass(frozen=True)
class Candidate(Record):
    """A commit not ruled out when the budget ended, and the probability that the step is there."""

    commit: str = ""
    probability: float = 0.0


@dataclass(frozen=True)
class Cost(Record):
    """What the bisection measured: builds, images (layouts linked), runs; and how many of them this
    command compiled, ran, and took from a run of the same image file (a resumed one reads the rest
    from the store)."""

    builds: int = 0
    failed_builds: int = 0
    images: int = 0
    runs: int = 0
    compiled_now: int = 0
    ran_now: int = 0
    #: runs this command took from an earlier run of the same image file on an exact target (a commit
    #: that links its neighbour's objects): among ``runs``, but not run again
    copied_now: int = 0


@dataclass(frozen=True)
class BudgetSpent(Record):
    """The --budget, what was spent of it, and the time estimate."""

    runs: int | None = None
    duration: float | None = None
    duration_text: str | None = None
    spent: int = 0
    likely_runs: int | None = None
    seconds_per_run: float | None = None
    seconds_per_run_from: str | None = None
    time_spent_estimate: float | None = None
    time_left_estimate: float | None = None


@dataclass(frozen=True)
class CodeEvidence(Record):
    """symdiff between the culprit's parent and the culprit in one layout, or why it could not say."""

    OMIT: ClassVar[frozenset] = frozenset({"error", "parent", "culprit", "layout", "changed_functions",
                                           "moved_functions", "top"})
    error: str | None = None
    parent: str | None = None
    culprit: str | None = None
    layout: str | None = None
    changed_functions: int | None = None
    moved_functions: int | None = None
    top: list | None = None  #: the largest changes: name, object, status, old_size, new_size


@dataclass(frozen=True)
class NotRuledOut(Record):
    """What a test that did not show a change could not see at this noise: a change below ``below``
    (relative) in GOOD..BAD of the test, which it shows with probability ``power``."""

    test: str = ""  #: "endpoints" or "side"
    good: str = ""
    bad: str = ""
    below: float = math.nan
    layouts: int | None = None
    power: float = 0.0
    meaning: str = ""


@dataclass(frozen=True)
class Shadow(Record):
    """What a single-layout bisection (default link, one run a probe, as asv find) blames."""

    OMIT: ClassVar[frozenset] = frozenset({"note", "change", "culprit_subject", "values", "agrees"})
    culprit: str | None = None
    range: list = field(default_factory=list)
    note: str | None = None
    change: float | None = None
    values: int | None = None
    builds: int = 0
    failed_builds: int = 0
    images: int = 0
    runs: int = 0
    compiled_now: int = 0
    ran_now: int = 0
    copied_now: int = 0  #: as Cost.copied_now
    agrees: bool | None = None  #: it blames what layoutbench blames (any of its culprits)
    culprit_subject: str | None = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class BisectionRecord(Record):
    """What ``bisect run`` decided, and at what price: the record every renderer reads.

    ``status``: found, uncertain, range (only skipped commits left), noise (an equivalence test
    passed), not-shown, budget.  ``culprit``: the first bad commit (found, or confirmed before the
    budget ended); ``steps``: every change point looked at, each with its own effect."""

    OMIT: ClassVar[frozenset] = frozenset({
        "candidate", "culprit_subject", "last_good", "effect", "code", "skipped", "several", "share", "residual",
        "sides", "bound", "steps", "runs_spent", "budget_note", "candidates", "more_runs", "single_layout",
        "places", "reprinted"})
    NESTED: ClassVar[dict] = {"endpoints": Endpoints, "effect": Confirmation, "code": CodeEvidence, "steps": Step,
                              "sides": Side, "residual": Residual, "candidates": Candidate, "cost": Cost,
                              "budget": BudgetSpent, "single_layout": Shadow}
    kernel: str = ""
    repo: str | None = None
    metric: str = ""
    unit: str | None = None
    target: str | None = None
    targets: list = field(default_factory=list)
    rounds: int = 0
    probes: int = 0
    args: str | None = None
    good: str = ""
    bad: str = ""
    commits: int = 0
    settings: dict = field(default_factory=dict)  #: bisect.Settings.to_dict(): what it measured and decided with
    endpoints: Endpoints | None = None  #: None: the budget ended during their test
    status: str = ""
    culprit: str | None = None
    range: list = field(default_factory=list)  #: range: the commits the first bad commit is one of
    message: str = ""  #: the one-line summary
    candidate: str | None = None  #: where the search points (uncertain, budget), not confirmed
    culprit_subject: str | None = None
    last_good: str | None = None
    effect: Confirmation | None = None  #: the first step's confirmation
    code: CodeEvidence | None = None
    skipped: list | None = None  #: the commits skipped in the first step's range: commit, why, note
    several: bool | None = None
    share: float | None = None  #: of the endpoints' change the first step explains
    residual: list[Residual] | None = None
    sides: list[Side] | None = None
    bound: str | None = None  #: the error bound of the whole bisection, in words
    steps: list[Step] | None = None
    runs_spent: int | None = None
    budget_note: str | None = None
    candidates: list[Candidate] | None = None
    more_runs: int | None = None  #: budget at the endpoints: about how many more runs they need
    cost: Cost = field(default_factory=Cost)
    budget: BudgetSpent | None = None
    runs_per_layout: dict | None = None  #: how the runs per layout were chosen (Settings.runs_choice)
    costs: dict | None = None  #: the layout and run costs, when --runs was given (costs.TargetCosts)
    single_layout: Shadow | None = None
    places: dict | None = None  #: labgrid places: probes per place, places lost
    reprinted: bool | None = None  #: a finished verdict read back from the store, nothing measured
    extra: dict = field(default_factory=dict)

    # -- what the renderers ask ------------------------------------------------------------------

    @property
    def min_effect(self) -> float:
        from ..stats import DEFAULT_MIN_EFFECT
        return (self.settings or {}).get("min_effect") or DEFAULT_MIN_EFFECT

    @property
    def confidence(self) -> float:
        """The confidence asked (--confidence)."""
        return (self.settings or {}).get("confidence") or 0.95

    @property
    def first_only(self) -> bool:
        return bool((self.settings or {}).get("first_only"))

    @property
    def thorough(self) -> bool:
        return bool((self.settings or {}).get("thorough"))

    @property
    def found(self) -> list[Step]:
        """The steps confirmed, in commit order."""
        return [st for st in self.steps or [] if st.status == "found" and st.culprit]

    @property
    def culprits(self) -> list[str]:
        """Every confirmed first bad commit, the first one first."""
        out = [st.culprit for st in self.found]
        if self.culprit and self.culprit not in out:
            out.insert(0, self.culprit)
        return out

    def step_effect(self, culprit: str) -> Effect | None:
        """A named step's own effect (its confirmation); the verdict's for the first culprit."""
        own = next((st.effect for st in self.steps or [] if st.culprit == culprit and st.effect), None)
        return own or (self.effect if culprit == (self.culprits or [None])[0] else None)

    def unexplained(self) -> float | None:
        """With --first-only: the share of the endpoints' change the step found leaves unexplained, when
        it is more than a fifth (the ranges beside it were not searched); else None."""
        share = self.share
        if not self.first_only or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or self.status not in ("found", "budget"):
            return None
        rest = 1.0 - share
        return rest if abs(rest) > 0.2 else None


@dataclass(frozen=True)
class PlanRecord(Record):
    """What ``bisect run --plan`` says: the endpoints' first look and the bisection's likely cost."""

    kernel: str = ""
    good: str = ""
    bad: str = ""
    commits: int = 0
    status: str = "plan"
    plan: dict = field(default_factory=dict)  #: forecast.plan_look's cost, with first_look, priced_by, endpoints_status
    ratio: float = math.nan
    noise: float = math.nan
    settings: dict = field(default_factory=dict)
    runs_per_layout: dict | None = None
    missed_step: dict | None = None
    near_steps: list = field(default_factory=list)
    message: str = ""
    extra: dict = field(default_factory=dict)  #: costs, budget (when a clock ran)


def not_ruled_out(record: BisectionRecord) -> list[NotRuledOut]:
    """What a bisection's record says its tests could not see at this noise: for the endpoints of a
    "no change shown" verdict and for each test beside a found step that did not show a change, the
    step below which a change there may have been missed (``below``, relative): the smallest step
    that test, as it stopped (``layouts`` a side at its last look, its own level), shows with
    probability ``power`` at the layout noise pooled over every commit measured (``shows`` of
    decide.endpoints).  A record without ``shows`` gives none."""
    from ..decide.plan import NOISE_POWER

    tests = []
    ends = record.endpoints
    if record.status == "not-shown" and (ends is None or ends.status in ("", "not-shown")):
        tests.append(("endpoints", record.good or "", record.bad or "", ends))
    tests += [("side", sd.good, sd.bad, sd) for sd in record.sides or [] if sd.status == "not-shown"]
    out = []
    for test, good, bad, t in tests:
        below = t.shows if t is not None else None
        if not isinstance(below, (int, float)) or not math.isfinite(below) or below <= 0:
            continue
        what = "the endpoints' test" if test == "endpoints" else "the side test"
        out.append(NotRuledOut(
            test=test, good=good, bad=bad, below=below, layouts=t.layouts, power=NOISE_POWER,
            meaning=(f"a change smaller than {100 * below:.3g}% between {good[:12]} and {bad[:12]} may "
                     f"have been missed: {what} stopped at {t.layouts} layouts a side without "
                     f"showing one, and a change of {100 * below:.3g}% or more it shows with probability "
                     f"{NOISE_POWER:g} at the layout noise measured")))
    return out


def read(d: dict) -> BisectionRecord | PlanRecord:
    """A stored or printed bisection JSON, typed."""
    return (PlanRecord if d.get("status") == "plan" else BisectionRecord).from_dict(d)
