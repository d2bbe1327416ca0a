"""The one answer a bisection or a two-commit compare ends in, and its exit code.

A :class:`Verdict` holds what was decided (status, culprits, the effect with its interval,
the cost, what was not shown, what its tests could not see at this noise -- the step below
which a change may have been missed, :func:`not_ruled_out` -- and the single-layout shadow:
what a naive bisection or a one-run default-link A/B would have said).  The terminal text,
``--json``, the report's verdict lines and the exit code are all rendered from it, never
computed apart.

Exit codes (one table for every command; :data:`EXIT_TABLE` is what ``--help`` and the
docs print).  ``git bisect run`` and ``asv continuous`` are the anchors: 0 is "nothing to
blame", 1 is "a change was shown", 125 is "skip this commit"; an undecided end has codes
of its own so that a CI job can tell it from both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from . import record, text  # noqa: F401
from .record import BisectionRecord, NotRuledOut, PlanRecord, not_ruled_out
from .text import not_ruled_out_line  # noqa: F401  (the report and history print it)

from ..exits import ABORT, BUDGET, CHANGE, ERROR, EXIT_TABLE, OK, SKIP, UNDECIDED, exit_table_text  # noqa: F401

SHADOW_LABEL = "what a single-layout bisection (default link, 1 run per probe, as asv find) would blame"
SHADOW_LABEL_COMPARE = "what one default-link run per side would say"


@dataclass
class Verdict:
    """One compare's or bisection's answer; ``data`` is the full record it was made from."""

    command: str  #: "bisect" or "compare"
    #: bisect: found, several, noise, not-shown, uncertain, range, budget, plan;
    #: compare: slower, faster, within (every metric's interval inside +-min_effect), not-shown, n/a
    status: str
    culprits: list[str] = field(default_factory=list)  #: confirmed first bad commits, earliest first
    candidate: str | None = None  #: uncertain or budget: where the search points, not confirmed
    effect: dict | None = None  #: the effect with its interval (the one the decision used)
    cost: dict | None = None
    not_shown: list[str] = field(default_factory=list)  #: what the runs did not show, in words
    shadow: dict | None = None  #: the single-layout answer, labelled as such
    data: Any = field(default_factory=dict)  #: bisect: its BisectionRecord (or PlanRecord); else the dict
    #: bisect: what its tests could not see at this noise (:func:`not_ruled_out`), one entry a test
    unseen: list[NotRuledOut] = field(default_factory=list)

    # -- made from ------------------------------------------------------------------------------

    @classmethod
    def of_bisection(cls, result: BisectionRecord | PlanRecord | dict) -> "Verdict":
        """The verdict of ``bisect.run``'s record (or of its JSON, stored or printed: read typed)."""
        if isinstance(result, dict):
            result = record.read(result)
        if isinstance(result, PlanRecord):
            return cls("bisect", "plan", data=result)
        st = result.status
        culprits = result.culprits
        if st == "found" and (result.several or len(culprits) > 1):
            st = "several"
        cand = result.candidate if st in ("uncertain", "budget") else None
        if st == "budget" and not cand and result.candidates:
            cand = max(result.candidates, key=lambda c: c.probability).commit
        not_shown = []
        if st == "not-shown":
            not_shown.append("a change of the minimum effect between GOOD and BAD (none ruled out either)")
        for sd in result.sides or []:
            if sd.status == "not-shown":
                not_shown.append(f"another change in {sd.good[:12]}..{sd.bad[:12]}")
        if st == "budget" and not culprits:
            not_shown.append("a confirmed first bad commit: the budget ended first")
        rest = result.unexplained()
        if rest is not None:
            not_shown.append(f"the rest of the endpoints' change ({100 * rest:.3g}%): --first-only searched one step")
        sl = result.single_layout
        shadow = None
        if sl is not None:
            shadow = {"label": SHADOW_LABEL, "culprit": sl.culprit, "agrees": bool(sl.agrees),
                      "runs": sl.runs, "builds": sl.builds}
        return cls("bisect", st, culprits, cand, result.effect.to_dict() if result.effect is not None else None,
                   result.cost.to_dict(), not_shown, shadow, result, not_ruled_out(result))

    @classmethod
    def of_compare(cls, rep: dict, fail_metrics: list[str] | None = None) -> "Verdict":
        """The verdict of ``compare --commits`` (``CommitsReport.to_dict()``): slower when any metric
        shown is slower by at least the minimum effect, else faster when any is faster, else not
        shown (n/a when no metric could be compared)."""
        rows = [r for r in rep.get("metrics") or [] if fail_metrics is None or r["metric"] in fail_metrics]
        said = [r.get("verdict") for r in rows]
        st = ("slower" if "slower" in said else "faster" if "faster" in said else
              "within" if said and all(s == "within the minimum effect" for s in said) else
              "not-shown" if any(s not in (None, "n/a") for s in said) else "n/a")
        first = next((r for r in rows if r.get("verdict") == st), rows[0] if rows else None)
        not_shown = [f"a change of {r['metric']} of at least {100 * rep.get('min_effect', 0):g}%" for r in rows
                     if r.get("verdict") not in ("slower", "faster", "n/a", "within the minimum effect")]
        shadow = None
        singles = [r["single"] for r in rows if r.get("single")]
        if singles:
            shadow = {"label": SHADOW_LABEL_COMPARE, "says": singles[0]["says"],
                      "agrees": all(s["agrees"] for s in singles)}
        return cls("compare", st, [rep["b"]] if st == "slower" else [], None,
                   (first or {}).get("effect"), None, not_shown, shadow, rep)

    @classmethod
    def of_judgement(cls, details: dict, name: str | None = None) -> "Verdict":
        """The verdict of ``judge`` on one commit: good, bad, between (a change on both sides: bad),
        uncertain or skip -- git bisect run's 0, 1 and 125.  ``name``: the commit as printed."""
        st = details["verdict"]
        return cls("judge", st, [details["commit"]] if st in ("bad", "between") else [], None, None,
                   details.get("cost"), [], None, {**details, "name": name or details["commit"][:12]})

    # -- rendered as ----------------------------------------------------------------------------

    def exit_code(self) -> int:
        """The code of the table above (what ``--exit-code`` makes the command exit with)."""
        if self.command == "compare":
            return CHANGE if self.status == "slower" else OK
        if self.command == "judge":
            return {"good": OK, "bad": CHANGE, "between": CHANGE}.get(self.status, SKIP)
        if self.culprits:
            return CHANGE  # a confirmed first bad commit, even when the budget ended after it
        if self.status in ("uncertain", "range"):
            return UNDECIDED
        if self.status == "budget":
            return BUDGET
        return OK

    def headline(self) -> str:
        """One line: what layoutbench decided (the report's and the history's verdict line)."""
        v = self.data
        if self.command == "judge":
            return f"{v['name']}: {self.status}"
        if self.command == "compare":
            return f"compare {v['a'][:12]}..{v['b'][:12]}: " + (
                "B slower" if self.status == "slower" else "B faster" if self.status == "faster" else
                "no change shown" if self.status == "not-shown" else
                "within the minimum effect (a change of it ruled out)" if self.status == "within" else "not compared")
        if self.status == "plan":
            return self.status
        metric = v.metric
        ratio = v.effect.ratio if v.effect is not None else None
        size = f", x{ratio:.4f}" if isinstance(ratio, (int, float)) and math.isfinite(ratio) else ""
        if self.status in ("found", "several", "budget") and len(self.culprits) > 1:
            return f"{len(self.culprits)} change points ({metric}): " + ", ".join(
                f"first bad commit {c[:12]}{self.step_size(c)}" for c in self.culprits) + (
                "; the budget ended before the rest" if self.status == "budget" else "")
        if self.status in ("found", "several"):
            more = "; several changes or a drift" if self.status == "several" else ""
            return f"first bad commit {self.culprits[0][:12]} ({metric}{size}){more}"
        if self.status == "budget" and self.culprits:
            return f"first bad commit {self.culprits[0][:12]} ({metric}{size}); the budget ended before the rest"
        if self.status == "budget":
            return "not decided at this budget" + (
                f" (most likely {self.candidate[:12]}, not confirmed)" if self.candidate else "")
        if self.status == "uncertain":
            later = "".join(f"; a later step confirmed at {c[:12]}" for c in self.culprits)
            return f"uncertain: points at {self.candidate[:12]} ({metric}), not confirmed on fresh layouts{later}"
        if self.status == "range":
            later = "".join(f"; a later step confirmed at {c[:12]}" for c in self.culprits)
            return f"the first bad commit is one of {len(v.range)} ({metric}; the others skipped){later}"
        if self.status == "noise":
            return f"within layout noise ({metric}): no commit is blamed"
        if self.status == "not-shown":
            return f"no change shown ({metric}): no commit is blamed"
        return self.status

    def text(self) -> str:
        """The terminal text."""
        if self.command == "compare":  # its table is compare.commits_text_of's
            return self.headline()
        if self.command == "judge":
            return f"{self.data['name']}: {self.data['describe']}"
        if self.status == "plan":
            return self.data.message
        return text.text(self.data)

    def step_size(self, culprit: str) -> str:
        """" x1.0316" for a named step: its own confirmation's ratio (or the verdict's effect)."""
        e = self.data.step_effect(culprit)
        r = e.ratio if e is not None else None
        return f" x{r:.4f}" if isinstance(r, (int, float)) and math.isfinite(r) else ""

    def to_json(self, exits: bool = True) -> dict:
        """The ``--json`` record: the full data, the verdict's own fields, the code of the exit-code
        table (``verdict_exit_code``) and the code the process exits with (``exit_code``: that one
        with ``exits`` -- the command's --exit-code --, else 0)."""
        data = self.data.to_dict() if self.command == "bisect" else self.data
        out = {**data, "verdict_status": self.status, "culprits": self.culprits,
               "headline": self.headline(), "not_shown": self.not_shown, "shadow": self.shadow,
               "verdict_exit_code": self.exit_code(), "exit_code": self.exit_code() if exits else OK}
        if self.command == "bisect":
            out["not_ruled_out"] = [u.to_dict() for u in self.unseen]
        return out
