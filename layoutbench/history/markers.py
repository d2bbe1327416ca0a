"""The bisections beside a history: each verdict kept in the store, the commits it could not rule
out, what a naive single-layout bisection would blame and the marks of bisections in progress, as
typed markers of the history's commits.  The history's text, the report's plots and its list of
verdicts all read these; ``to_dict`` is their JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from .. import bisect
from ..store import Store
from ..verdict import Verdict, not_ruled_out_line
from ..verdict.text import interval
from .sweeping import Series

KINDS = ("verdict", "candidate", "shadow", "probe")


@dataclass(frozen=True)
class MarkerEffect:
    """A culprit's own step: its confirmation's ratio and interval."""

    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class Marker:
    """One mark of a bisection on a history's commit.

    ``kind``: ``verdict`` (layoutbench's verdict on a commit it blames; with several culprits each its
    own change point with its own ``effect``; a verdict that blames no commit has ``commit`` None),
    ``candidate`` (a commit the verdict could not rule out: uncertain, skipped, budget), ``shadow``
    (what the single-layout bisection run beside it would blame: never the verdict; ``agrees``:
    layoutbench blames that commit too) or ``probe`` (a good/bad/skip mark of a bisection in
    progress).  ``unseen``: on a verdict's first marker, what its tests could not see at this noise."""

    kind: str
    commit: str | None
    index: int | None
    text: str
    key: str = ""
    range: str = ""
    metric: str = ""
    status: str = ""
    headline: str = ""
    label: str = ""
    unseen: tuple[str, ...] = ()
    effect: MarkerEffect | None = None
    agrees: bool | None = None

    @property
    def probe(self) -> bool:
        return self.kind == "probe"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["unseen"] = list(self.unseen)
        d["probe"] = self.probe
        return d


def bisect_verdicts(store: Store, series: Series) -> list[Marker]:
    """Every finished bisection of this kernel kept in the store (one per range and metric,
    bisect.kept) and the marks of the bisections in progress, as markers of this range."""
    pos = {c: i for i, c in enumerate(series.commits)}
    out: list[Marker] = []
    for key, res in bisect.kept(store):
        if (res.kernel or res.settings.get("kernel")) != series.kernel or (
                res.repo and series.repo and Path(res.repo).resolve() != Path(series.repo).resolve()):
            continue
        out.extend(_verdict_markers(key, res, pos))
    for b in bisect.stored(store):
        if b.s.kernel != series.kernel:
            continue
        for e in b.log:
            if isinstance(e, dict) and e.get("verb") in ("good", "bad", "skip"):
                c = _find(e.get("commit"), pos)
                if c:
                    out.append(Marker("probe", c, pos[c], f"bisect: {e['verb']}", key=b.key))
    return out


def _verdict_markers(key: str, res, pos: dict) -> list[Marker]:
    """The markers of one kept bisection: its culprits (or its verdict without one and the commits it
    could not rule out), then the naive bisection's choice."""
    v = Verdict.of_bisection(res)
    span = f"{(res.good or '')[:12]}..{(res.bad or '')[:12]}"
    base = {"key": key, "range": span, "metric": res.metric or res.settings.get("metric") or "",
            "status": v.status, "headline": v.headline()}
    unseen = tuple(not_ruled_out_line(u) for u in v.unseen)
    named = [(x, c) for x, c in ((x, _find(x, pos)) for x in v.culprits) if c]
    out = [Marker("verdict", c, pos[c], unseen=unseen if i == 0 else (), **base,
                  **_culprit_text(span, v, res, x, i, len(v.culprits)))
           for i, (x, c) in enumerate(named)]
    if not v.culprits and _find(res.good, pos) and _find(res.bad, pos):  # a range of this history
        maybe = [v.candidate] if v.candidate else res.range
        out.append(Marker("verdict", None, None, f"layoutbench bisect {span}: {v.headline()}", unseen=unseen, **base))
        out.extend(Marker("candidate", c, pos[c], f"layoutbench bisect {span}: not ruled out ({v.status})",
                          label="layoutbench: not ruled out", **base)
                   for c in (c for c in (_find(x, pos) for x in maybe) if c))
    out.extend(_shadow_marker(base, res, pos, {m.commit for m in out if m.kind == "verdict" and m.commit},
                              bool(named), span))
    return out


def _shadow_marker(base: dict, res, pos: dict, blamed: set, named: bool, span: str) -> list[Marker]:
    """The marker of what the single-layout bisection run beside a verdict would blame (none when it
    blames nothing of this history)."""
    sh = res.single_layout
    c = _find(sh.culprit if sh is not None else None, pos)
    if not c:
        return []
    # layoutbench's own verdict is the culprits, every one: the naive choice agrees when it is one of them
    too = c in blamed or (not named and bool(sh.agrees))
    return [Marker("shadow", c, pos[c],
                   f"a naive single-layout bisection of {span} would blame this"
                   + (" (layoutbench blames it too)" if c in blamed else " (layoutbench agrees)" if too
                      else " (layoutbench does not)"),
                   label="naive bisection would blame" + (" (so does layoutbench)" if too else ""),
                   agrees=too, **base)]


def _culprit_text(span: str, v, res, culprit: str, i: int, n: int) -> dict:
    """The text, plot label and effect of one culprit of a verdict: with several, each its own change
    point and its own effect (the confirmation's ratio and interval), never the first one's."""
    metric = res.metric or res.settings.get("metric") or ""
    step = next((s for s in res.found if s.culprit == culprit), None)
    e = (step.effect if step is not None else None) or (res.effect if i == 0 else None)
    ratio, lo, hi = (e.ratio, e.ci_low, e.ci_high) if e is not None else (None, None, None)
    size = f"x{ratio:.4f}" if isinstance(ratio, (int, float)) else ""
    ci = (f", CI {interval(lo, hi)}" if isinstance(lo, (int, float)) or isinstance(hi, (int, float)) else "")
    effect = MarkerEffect(ratio, lo, hi)
    if n == 1:
        return {"text": f"layoutbench bisect {span}: {v.headline()}", "effect": effect,
                "label": "layoutbench: first bad" + (f", {size}" if size else "")}
    which = "first bad commit" if i == 0 else "next change point"
    return {"text": f"layoutbench bisect {span}: change point {i + 1} of {n}, {which} {culprit[:12]} ({metric}"
                    f"{', ' + size if size else ''}{ci})",
            "label": f"layoutbench: change {i + 1} of {n}" + (f", {size}" if size else ""), "effect": effect}


def _find(v, pos: dict) -> str | None:
    if not isinstance(v, str) or len(v) < 7:
        return None
    return next((c for c in pos if c.startswith(v)), None)
