"""Reading a swept history: every step between two measured points judged by the bisection's standard
of evidence (:mod:`.evidence`), the quirks and bisection verdicts beside them, and the history as text."""

from __future__ import annotations

from dataclasses import dataclass, field

import git

from .. import fmt, layout, quirks, stats
from ..errors import LayoutbenchError
from ..profile import Profile
from ..store import Store
from .evidence import KINDS, Change, judge_steps
from .markers import Marker, bisect_verdicts
from .sweeping import DEFAULT_MIN_EFFECT, Series

# -- analysis ------------------------------------------------------------------------------------

@dataclass
class Point:
    commit: str
    index: int  #: position on the x axis (in the whole range)
    status: str
    message: str
    quirks: list[str]
    info: dict  #: subject, author, date
    groups: dict[str, dict[str, list[float]]] = field(default_factory=dict)  #: metric → layout id → values
    runs: list[dict] = field(default_factory=list)  #: every stored run (ok or not)
    samples: list[dict] = field(default_factory=list)

    @property
    def short(self) -> str:
        return self.commit[:12]

    @property
    def ok(self) -> bool:
        return bool(self.groups)

    def center(self, metric: str, seeded: bool = True) -> float | None:
        g = self.groups.get(metric, {})
        ids = [i for i in g if (":" in i) == seeded]
        if not ids:
            return None
        return float(sum(stats.summarize(g[i]).median for i in ids) / len(ids))


@dataclass
class History:
    series: Series
    points: list[Point]
    metrics: dict[str, dict]  #: name → {unit, higher_is_better}
    changes: list[Change]  #: the steps listed (Change.listed): a change seen, or a single layout moved
    quirks: list[dict]  #: quirk dict + first/last point index where it applies
    verdicts: list[Marker]  #: the bisections beside it (markers.bisect_verdicts)
    confidence: float
    min_effect: float
    steps: list[Change] = field(default_factory=list)  #: every step tested, listed or not

    def step(self, commit: str, metric: str) -> Change | None:
        """The step that ends at ``commit`` in ``metric`` (None: not tested there)."""
        return next((c for c in self.steps if c.commit == commit and c.metric == metric), None)

    def point(self, commit: str) -> Point:
        return next(p for p in self.points if p.commit.startswith(commit))

    def measured(self) -> list[Point]:
        return [p for p in self.points if p.ok]

    def previous(self, p: Point) -> Point | None:
        ok = self.measured()
        before = [q for q in ok if q.index < p.index]
        return before[-1] if before else None

    def to_dict(self) -> dict:
        return {
            "series": self.series.to_dict(),
            "metrics": self.metrics,
            "points": [{"commit": p.commit, "index": p.index, "status": p.status, "message": p.message,
                        "quirks": p.quirks, **{k: v for k, v in p.info.items() if k != "commit"},
                        "values": p.groups} for p in self.points],
            "changes": [c.to_dict() for c in self.changes],
            "steps": {k: sum(1 for c in self.steps if c.kind == k) for k in KINDS},
            "family": self.steps[0].family if self.steps else 0,
            "quirks": self.quirks,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "confidence": self.confidence,
            "min_effect": self.min_effect,
        }


def analyse(store: Store, series: Series, profile: Profile | None = None, metrics: list[str] | None = None,
            confidence: float = 0.95, min_effect: float | None = None) -> History:
    """Everything the summary and the report show, from the store alone.  ``min_effect`` None: the
    one the history was swept with, else the default."""
    if min_effect is None:
        min_effect = DEFAULT_MIN_EFFECT if series.min_effect is None else series.min_effect
    pos = {c: i for i, c in enumerate(series.commits)}
    wanted = {(n, s) for n, s in series.specs}
    commits = series.ordered_points()
    # a point whose record names ``images_of`` has its runs stored under that commit (whose objects
    # it linked); every other point's runs are stored under the point itself
    images_of = {c: rec.get("images_of", c) for c, rec in series.points.items()}
    configs = {(images_of[c], rec.get("config", "")) for c, rec in series.points.items()}
    runs = [r for r in store.runs(kernel=series.kernel, commit=None, target=series.target, mode=series.mode)
            if r["host"] == series.host and r["args"] == series.args
            and r["image"] == series.image and (r["layout"], r["seed"]) in wanted
            # each point under the configuration it was measured with: two are never pooled
            and (r["commit_sha"], r["config"]) in configs]
    run_ids = {r["id"] for r in runs}
    samples = [s for s in store.samples(kernel=series.kernel, target=series.target, mode=series.mode)
               if s["run_id"] in run_ids]
    metric_info: dict[str, dict] = {}
    for s in samples:
        metric_info.setdefault(s["metric"], {"unit": s["unit"], "higher_is_better": bool(s["higher_is_better"])})
    if metrics:
        unknown = [m for m in metrics if m not in metric_info]
        if unknown and metric_info:
            raise LayoutbenchError(f"no samples of metric {unknown[0]!r} in this history; metrics are: "
                                   + ", ".join(metric_info))
        metric_info = {m: metric_info[m] for m in metrics if m in metric_info}
    order = {(n, s): i for i, (n, s) in enumerate(series.specs)}

    describe = _describer(series)
    pts = []
    for c in commits:
        rec = series.points[c]
        p = Point(c, pos.get(c, -1), rec["status"], rec.get("message", ""), rec.get("quirks", []), describe(c))
        own = (images_of[c], rec.get("config", ""))
        p.runs = sorted((r for r in runs if (r["commit_sha"], r["config"]) == own),
                        key=lambda r: (r["rep"], order.get((r["layout"], r["seed"]), 99)))
        mine = {r["id"] for r in p.runs}
        p.samples = [s for s in samples if s["run_id"] in mine and s["metric"] in metric_info]
        for s in sorted(p.samples, key=lambda s: order.get((s["layout"], s["seed"]), 99)):
            p.groups.setdefault(s["metric"], {}).setdefault(layout.label(s["layout"], s["seed"]), []).append(s["value"])
        if p.status == "ok" and p.runs and not p.groups:
            p.status = "runs-failed"
        pts.append(p)

    h = History(series, pts, metric_info, [], [], [], confidence, min_effect)
    h.steps = detect(h)
    h.changes = [c for c in h.steps if c.listed]
    h.quirks = quirk_markers(series, profile)
    h.verdicts = bisect_verdicts(store, series)
    return h


def _describer(series: Series):
    try:
        r = git.Repo(series.repo)
    except Exception:  # the repository moved: show what the store knows
        r = None

    def describe(c: str) -> dict:
        if r is None:
            return {"commit": c, "subject": "", "author": "", "date": ""}
        cm = r.commit(c)
        return {"commit": c, "subject": cm.summary, "author": cm.author.name,
                "date": cm.committed_datetime.isoformat()}
    return describe


def detect(h: History) -> list[Change]:
    """Every step between consecutive measured points, per metric, judged as one family
    (:func:`.evidence.judge_steps`); ``History.changes`` keeps the ones to list (:attr:`Change.listed`)."""
    ok = h.measured()
    steps = []
    for prev, cur in zip(ok, ok[1:]):
        for metric, info in h.metrics.items():
            ga, gb = prev.groups.get(metric), cur.groups.get(metric)
            if ga and gb:
                steps.append((prev, cur, metric, info["unit"], info["higher_is_better"], ga, gb))
    return judge_steps(steps, 1.0 - h.confidence, h.min_effect)


def quirk_markers(series: Series, profile: Profile | None) -> list[dict]:
    """Every quirk that touches the range: where it starts and ends on the x axis."""
    if profile is None:
        return []
    try:
        qs = quirks.load(profile)
    except LayoutbenchError:
        return []
    if not qs:
        return []
    r = git.Repo(series.repo)
    out = []
    for q in qs:
        try:
            hit = [i for i, c in enumerate(series.commits) if quirks.matches(q, r, c)]
        except (LayoutbenchError, ValueError, git.BadName):
            continue
        if not hit:
            continue
        out.append({**q.to_dict(), "first": hit[0], "last": hit[-1],
                    "first_commit": series.commits[hit[0]], "last_commit": series.commits[hit[-1]],
                    "points": [c for c in series.ordered_points() if c in {series.commits[i] for i in hit}]})
    return out


# -- text ----------------------------------------------------------------------------------------

def changes_lines(h: History, metrics: list[str]) -> list[str]:
    """The steps listed (what each test showed, the step it could have missed), then one line for
    the steps not listed: the standard they were judged by is said in the heading."""
    steps = [c for c in h.steps if c.metric in metrics]
    changes = [c for c in h.changes if c.metric in metrics]
    family = steps[0].family if steps else 0
    level = steps[0].level if steps else 1.0 - h.confidence
    out = [f"changes (minimum effect {100 * h.min_effect:g}%; confidence {100 * h.confidence:g}% over the "
           f"history's {family} step test(s), each at level {100 * level:.3g}%, with the layout noise pooled "
           "over every point):"]
    if not changes:
        out.append("  none")
    for c in changes:
        p = h.point(c.commit)
        span = "" if c.commits_between == 1 else f" (somewhere in {c.commits_between} commits after {c.prev[:12]})"
        out.append(f"  {c.commit[:12]}  {c.metric:16} {fmt.effect(c):>20}  {c.kind:24}  {c.says()}; "
                   f"worst single layout {c.worst_single} {fmt.change(c.single_layout.get(c.worst_single, 1))}"
                   f"{span}  {p.info.get('subject', '')[:50]}")
    rest = [c for c in steps if not c.listed]
    if rest:
        counts = ", ".join(f"{n} {k}" for k in KINDS if (n := sum(1 for c in rest if c.kind == k)))
        miss = [c.could_miss for c in rest if c.kind == "not shown" and c.could_miss == c.could_miss]
        out.append(f"  other steps: {counts}" + (f" (a step below {100 * max(miss):.2f}% may have been missed "
                                                  "where not shown)" if miss else ""))
    return out


def summary_text(h: History, metric: str | None = None) -> str:
    """Plain text for terminals and e-mail: the points, then the changes."""
    s = h.series
    metrics = [metric] if metric else list(h.metrics)
    lines = [f"{s.kernel} history {s.start[:12]}..{s.end[:12]} ({len(s.commits)} commits, {len(h.points)} measured)",
             f"target {s.target} on {s.host}, mode {s.mode}, layouts "
             + ",".join(layout.label(n, sd) for n, sd in s.specs) + f", {s.runs} run(s) each"
             + (f", args {s.args}" if s.args else ""), ""]
    for m in metrics:
        if m not in h.metrics:
            continue
        info = h.metrics[m]
        lines.append(f"{m} ({info['unit']}, {'higher' if info['higher_is_better'] else 'lower'} is better)")
        fixed = [layout.label(n, sd) for n, sd in s.specs if not layout.get(n).seeded]
        head = f"  {'#':>4}  {'commit':12}  {'random (mean of medians)':>24}  {'layout spread':>13}  " + \
            "  ".join(f"{f:>12}" for f in fixed) + "  subject"
        lines.append(head)
        for p in h.points:
            g = p.groups.get(m)
            if not g:
                lines.append(f"  {p.index:>4}  {p.short}  {p.status:>24}  {'':>13}  "
                             + "  ".join(f"{'':>12}" for _ in fixed) + f"  {p.info.get('subject', '')[:50]}")
                continue
            seeded = {i: v for i, v in g.items() if ":" in i}
            if seeded:
                ns = stats.noise_split(seeded) if len(seeded) >= 2 else None
                center = fmt.number(sum(stats.summarize(v, n_boot=10).median for v in seeded.values()) / len(seeded))
                spread = fmt.pct(ns.median_range_rel) if ns else "-"
            else:
                center, spread = "-", "-"
            vals = [fmt.number(stats.summarize(g[f], n_boot=10).median) if f in g else "-" for f in fixed]
            lines.append(f"  {p.index:>4}  {p.short}  {center:>24}  {spread:>13}  "
                         + "  ".join(f"{v:>12}" for v in vals) + f"  {p.info.get('subject', '')[:50]}")
        lines.append("")
    lines.extend(changes_lines(h, metrics))
    if h.quirks:
        lines.append("")
        lines.append("quirks:")
        for q in h.quirks:
            lines.append(f"  {q['name']}: {q['reason']} ({q['actions']}); commits {q['first']}..{q['last']} "
                         f"({q['first_commit'][:12]}..{q['last_commit'][:12]})")
    if h.verdicts:
        lines.append("")
        lines.append("bisections (layoutbench's verdicts; 'naive': what a single-layout bisection would blame):")
        for v in h.verdicts:
            if v.kind == "verdict" and v.commit is None:
                lines.append(f"  {'':12}  {v.text}")
            elif v.kind in ("verdict", "candidate"):
                lines.append(f"  {v.commit[:12]}  {v.text}")
            elif v.kind == "shadow":
                lines.append(f"  {v.commit[:12]}  naive: {v.text}")
            lines.extend(f"  {'':12}    {u}" for u in v.unseen)
    failed = [p for p in h.points if p.status != "ok"]
    if failed:
        lines.append("")
        lines.append("not measured:")
        for p in failed:
            lines.append(f"  {p.short}  {p.status}: {p.message[:150]}")
    return "\n".join(lines) + "\n"
