"""What a bisection found (its steps and its outcome) and the journal of its marks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import stats
from .sequential import Ends, Judgement


class MemoryJournal:
    """Marks kept in memory (the simulation); ``layoutbench.bisect`` keeps them in the store."""

    def __init__(self):
        self.log: list[dict] = []

    def marks(self, segment: str | None) -> dict[str, dict]:
        return {e["commit"]: e for e in self.log if e.get("segment") == segment}

    def record(self, segment: str | None, commit: str, j: Judgement, target: str | None = None) -> None:
        verb = {"good": "good", "bad": "bad", "between": "bad"}.get(j.verdict, "skip")
        why = "" if verb != "skip" else ("uncertain" if j.verdict == "uncertain" else "build")
        self.log.append({"verb": verb, "commit": commit, "segment": segment, "layouts": j.layouts,
                         "runs": j.runs, "why": why, "note": j.describe(),
                         **({"target": target} if target is not None else {})})


@dataclass
class Step:
    """One change point: the first bad commit of a (sub)range and what confirms it."""

    status: str  #: found, uncertain (confirmation failed), range (skipped commits in the way)
    last_good: str
    culprit: str | None
    range: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    confirmation: stats.Comparison | None = None
    confirm_layouts: int = 0
    effect: float = math.nan  #: log ratio culprit/last good on the fresh layouts of the confirmation
    share: float = math.nan  #: effect / log(BAD/GOOD) of the whole range
    #: what the confirmation's interval showed: "beyond" (beyond the band +-min_effect: found), "change" (it
    #: excludes no change, in the range's direction, at the test's level, but not the band: shown slower /
    #: faster, not shown to exceed the minimum effect), "none" (it holds no change), "" (no confirmation)
    shown: str = ""
    bounded: bool = False  #: the confirmation stopped at its share bound (Plan.confirm_share) without confirming
    #: the search's estimate was within NEAR x the minimum effect: the confirmation's forecast said then
    #: (decide.confirm_forecast: runs, mean_runs, p_beyond, p_change, max_runs, layouts, estimate, bounded)
    forecast: dict | None = None


@dataclass
class Outcome:
    status: str  #: noise (equivalence shown), not-shown, found, uncertain, range, budget
    ends: Ends
    steps: list[Step] = field(default_factory=list)  #: every step looked at, in commit order
    several: bool = False  #: more than one change point confirmed, or a change shown but not located
    residual: list[dict] = field(default_factory=list)  #: sub-ranges beside a found step shown to differ
    #: every sub-range beside a found step that was tested: good, bad, status (differs / not-shown /
    #: noise), ratio, its interval and that interval's confidence, layouts a side at the last look,
    #: the test's level
    sides: list[dict] = field(default_factory=list)
    share: float = math.nan
    probes: int = 0
    alpha: float = 0.05
    rounds: int = 0  #: rounds of probes (one probe per round with one prober, up to k with k)
    k: int = 1  #: probers (machines) measuring probes in parallel
    runs: int = 0  #: runs measured (values), all probers
    candidates: list[tuple[str, float]] = field(default_factory=list)  #: budget: (commit, P(step here))
    note: str = ""

    @property
    def first_step(self) -> Step | None:
        """The step a verdict is about: the earliest confirmed one (the first bad commit), else the
        earliest looked at; None before any."""
        found = [s for s in self.steps if s.status == "found"]
        return found[0] if found else self.steps[0] if self.steps else None

    @property
    def culprit(self) -> str | None:
        """The first bad commit: the earliest confirmed change point."""
        st = self.first_step
        return st.culprit if st is not None and st.status == "found" and self.status == "found" else None

    def bound(self) -> str:
        a = f"{100 * self.alpha:g}%"
        farm = f"; {self.k} probes per round, each against GOOD and BAD measured on its own machine" if self.k > 1 else ""
        return (f"a range without a code change is blamed with probability <= {a} (the endpoints' group-"
                f"sequential test); any named commit whose own step is at most the minimum effect passes its confirmation on fresh layouts with "
                f"probability <= {a} (all confirmations together); the probes' levels sum to at most {a} (a level, not a "
                f"bound: a probe plugs in GOOD's and BAD's measured means; a misjudged one costs runs, not a false "
                f"name)" + farm)


def marked_window(commits: list[str], marks: dict[str, dict]) -> tuple[int, int, list[int]]:
    lo = max([i for i, c in enumerate(commits) if marks.get(c, {}).get("verb") == "good"] + [0])
    hi = min([i for i, c in enumerate(commits) if i > lo and marks.get(c, {}).get("verb") == "bad"]
             + [len(commits) - 1])
    return lo, hi, [i for i in range(lo + 1, hi) if commits[i] not in marks]
