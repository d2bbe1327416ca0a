"""One SVG plot per metric over the commits of a history, built by hand (no JavaScript, no network).

What is drawn, back to front:

- quirk spans (light) and quirk markers: a labelled vertical line where a quirk starts;
- bisection verdicts: a labelled vertical line on the commit a bisection named;
- the layout noise: the band between the smallest and largest per-layout median of the
  random (seeded) layouts, with their mean as a dashed line;
- every fixed layout (sorted, aligned, default...): its median line with the bootstrap
  confidence band of the median;
- every run as a faint point (``<circle class="run">``), outliers in red (``run outlier``);
- commits that did not build or run: a cross on the x axis (``class="failed-point"``).

Every run point carries ``data-commit``, ``data-layout`` and ``data-value`` so that a
test (or a reader's browser tools) can count and check them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from html import escape

from .. import layout as layoutmod
from .. import fmt, stats

W, H = 960, 400
ML, MR, MT, MB = 84, 175, 34, 70  # margins: left (y labels), right (legend), top (markers), bottom (x labels)
PALETTE = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
NOISE = "#ff7f0e"


def _ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9 * span:
        out.append(t)
        t += step
    return out


STYLE = ("<style>.run{fill-opacity:.35;stroke:none}.run.outlier{fill:#d62728;fill-opacity:1;stroke:#7f0000;"
         "stroke-width:.8}.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}"
         "text{font:11px sans-serif;fill:#333}.marker-label{font-size:10px}.legend-note{font-size:9px;fill:#777}"
         ".quirk-marker{stroke:#b8860b;stroke-width:1.5;stroke-dasharray:4 3}"
         ".bisect-marker{stroke:#d62728;stroke-width:2}.bisect-shadow-marker{stroke:#888;stroke-width:1.5;"
         "stroke-dasharray:2 3}.failed-point{stroke:#d62728;stroke-width:2}"
         "a text:hover{fill:#0645ad;text-decoration:underline}</style>")


@dataclass(frozen=True)
class Frame:
    """The plot area: ``n`` commits across, the values ``lo``..``hi`` up."""

    n: int
    lo: float
    hi: float
    pw: float = W - ML - MR
    ph: float = H - MT - MB

    def x(self, i: float) -> float:
        return ML + (self.pw * (i / (self.n - 1)) if self.n > 1 else self.pw / 2)

    def y(self, v: float) -> float:
        return MT + self.ph * (1 - (v - self.lo) / (self.hi - self.lo))


def plot(h, metric: str, link=lambda commit: None) -> str:
    """The SVG (a string) of ``metric`` over the history ``h`` (a :class:`history.History`)."""
    info = h.metrics[metric]
    s = h.series
    pts = [p for p in h.points if metric in p.groups]
    per = {p.commit: per_point(p.groups[metric], h.confidence) for p in pts}
    fr = frame(max(len(s.commits), 1), pts, metric, per)
    e = [f'<title>{escape(metric)} ({escape(info["unit"])}) over commits</title>', STYLE]
    e += axes(fr, metric, info)
    mine = [v for v in h.verdicts if v.commit and v.kind in ("verdict", "candidate", "shadow")
            and v.metric == metric]
    label_top = markers(e, h.quirks, mine, fr)
    fixed = list(dict.fromkeys(layoutmod.label(nm, sd) for nm, sd in s.specs if not layoutmod.get(nm).seeded))
    seeded = list(dict.fromkeys(nm for nm, _ in s.specs if layoutmod.get(nm).seeded))
    legend = noise_bands(e, seeded, pts, per, fr) + fixed_lines(e, fixed, pts, per, fr, h.confidence)
    e += runs(pts, metric, per, fr, s.specs, fixed)
    e += x_axis(h.points, metric, fr, link, s)
    width = legend_items(e, legend, h.quirks, mine, fr)
    total_w, total_h = max(W, math.ceil(width)), H + label_top - MT
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" class="history-plot" data-metric="{escape(metric)}" '
            f'viewBox="0 {MT - label_top} {total_w} {total_h}" width="{total_w}" height="{total_h}" role="img" '
            f'aria-label="{escape(metric)} over {fr.n} commits">']
    e.append("</svg>")
    return "\n".join(head + e)


def per_point(g: dict, confidence: float) -> dict:
    """One point's groups (layout id -> runs): the fixed layouts' summaries, the seeded layouts' medians
    by layout name, and the outlier runs ((layout id, run index)) of every layout name with at least 5
    runs, by the robust rule of stats.summarize."""
    row = {"fixed": {}, "seeded": {}}
    for lid, vals in g.items():
        if ":" in lid:
            row["seeded"].setdefault(lid.split(":")[0], []).append(float(statistics.median(vals)))
        else:
            row["fixed"][lid] = stats.summarize(vals, confidence=confidence, n_boot=400)
    out_idx = set()
    for name in set(lid.split(":")[0] for lid in g):
        ids = [lid for lid in g if lid.split(":")[0] == name]
        flat = [(lid, i) for lid in ids for i in range(len(g[lid]))]
        vals = [g[lid][i] for lid, i in flat]
        if len(vals) >= 5:
            for k in stats.summarize(vals, n_boot=10).outliers:
                out_idx.add(flat[k])
    row["outliers"] = out_idx
    return row


def frame(n: int, pts: list, metric: str, per: dict) -> Frame:
    """The value range: every run and every fixed layout's band, 8% of it added on either side."""
    values = [v for p in pts for g in p.groups[metric].values() for v in g]
    bands = [v for r in per.values() for f in r["fixed"].values() for v in (f.ci_low, f.ci_high)]
    lo, hi = (min(values + bands), max(values + bands)) if values else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - max(abs(lo) * 0.01, 1), hi + max(abs(hi) * 0.01, 1)
    pad = (hi - lo) * 0.08
    return Frame(n, lo - pad, hi + pad)


def axes(fr: Frame, metric: str, info: dict) -> list[str]:
    """The frame, the y grid with its labels and the y axis title (with the metric's direction)."""
    e = []
    for t in _ticks(fr.lo, fr.hi):
        y = fr.y(t)
        e.append(f'<line class="grid" x1="{ML}" x2="{ML + fr.pw}" y1="{y:.1f}" y2="{y:.1f}"/>')
        e.append(f'<text x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt.axis(t)}</text>')
    e.append(f'<line class="axis" x1="{ML}" x2="{ML}" y1="{MT}" y2="{MT + fr.ph}"/>')
    e.append(f'<line class="axis" x1="{ML}" x2="{ML + fr.pw}" y1="{MT + fr.ph}" y2="{MT + fr.ph}"/>')
    arrow = "higher is better" if info["higher_is_better"] else "lower is better"
    e.append(f'<text x="14" y="{MT + fr.ph / 2:.0f}" transform="rotate(-90 14 {MT + fr.ph / 2:.0f})" '
             f'text-anchor="middle">{escape(metric)} ({escape(info["unit"])}), {arrow}</text>')
    return e


def verdict_marks(mine: list) -> list[dict]:
    """One marker per commit and kind: several bisections kept on one commit share it (their texts
    joined, their labels said each)."""
    marks: dict[tuple, dict] = {}
    for v in mine:
        m = marks.setdefault((v.commit, v.kind), {**v.to_dict(), "texts": [], "labels": []})
        if v.text not in m["texts"]:
            m["texts"].append(v.text)
        if v.kind != "shadow" and v.label and v.label not in m["labels"]:
            m["labels"].append(v.label)
        if v.kind == "shadow" and not v.agrees:
            m["agrees"], m["label"] = False, v.label or m.get("label")
    for m in marks.values():
        if len(m["labels"]) > 1:
            m["label"] = "layoutbench: " + "; ".join(dict.fromkeys(x.removeprefix("layoutbench: ") for x in m["labels"]))
    return list(marks.values())


def markers(e: list, quirks: list, mine: list, fr: Frame) -> float:
    """Quirk spans and markers, and the bisection verdicts of this metric (not the individual probes):
    layoutbench's verdict and the commits it could not rule out in red, what a naive single-layout
    bisection would blame in grey.  Every label is placed (place_labels) so that none overlaps another;
    the label rows lie above the plot and the legend beside it (a label may run on over the legend's
    column).  Returns the height the label rows took above the plot."""
    labels = []  # (x, text, key): key = the element the label belongs to
    for q in quirks:
        x0, x1 = fr.x(q["first"]), fr.x(q["last"])
        e.append(f'<rect class="quirk-span" x="{min(x0, x1) - 3:.1f}" y="{MT}" width="{abs(x1 - x0) + 6:.1f}" '
                 f'height="{fr.ph}" fill="#b8860b" fill-opacity=".07"/>')
        labels.append((x0, f"quirk {q['name']}", ("quirk", q)))
    for m in verdict_marks(mine):
        default = {"shadow": "naive bisection would blame", "verdict": "layoutbench: first bad"}.get(
            m["kind"], "layoutbench: not ruled out")
        labels.append((fr.x(m["index"]), m.get("label") or default, ("bisect", m)))
    placed = place_labels([(x, text) for x, text, _ in labels], ML, W - 4)
    rows = max([r for _, _, r in placed] + [0]) + 1
    for (x, text, (what, d)), (lx, anchor, row) in zip(labels, placed, strict=True):
        y = MT - 6 - ROW * (rows - 1 - row)  # the rows stack upwards from just above the plot
        if what == "quirk":
            e.append(f'<g class="quirk" data-quirk="{escape(d["name"])}"><title>quirk {escape(d["name"])}: '
                     f'{escape(d["reason"])} ({escape(d["actions"])})</title>'
                     f'<line class="quirk-marker" x1="{x:.1f}" x2="{x:.1f}" y1="{y + 2}" y2="{MT + fr.ph}"/>'
                     f'<text class="marker-label" x="{lx:.1f}" y="{y}" text-anchor="{anchor}" fill="#8a6d00">'
                     f'{escape(text)}</text></g>')
            continue
        shadow = d["kind"] == "shadow"
        cls = "bisect-shadow" if shadow else "bisect"
        title = escape("; ".join(d["texts"])) + f": {d['commit'][:12]}"
        e.append(f'<g class="{cls}" data-commit="{d["commit"]}" data-kind="{d["kind"]}"><title>{title}</title>'
                 f'<line class="{cls}-marker" x1="{x:.1f}" x2="{x:.1f}" y1="{y + 2}" y2="{MT + fr.ph}"/>'
                 f'<text class="marker-label" x="{lx:.1f}" y="{y}" text-anchor="{anchor}" '
                 f'fill="{"#666" if shadow else "#d62728"}">{escape(text)}</text></g>')
    return MT + ROW * (rows - 1)


def noise_bands(e: list, seeded: list, pts: list, per: dict, fr: Frame) -> list[tuple]:
    """The layout noise of each seeded layout: the band of its per-layout medians, their mean as a
    dashed line.  Returns its legend entries."""
    legend = []
    for name in seeded:
        rows = [(p, per[p.commit]["seeded"].get(name)) for p in pts]
        rows = [(p, m) for p, m in rows if m]
        if not rows:
            continue
        top = " ".join(f"{fr.x(p.index):.1f},{fr.y(max(m)):.1f}" for p, m in rows)
        bot = " ".join(f"{fr.x(p.index):.1f},{fr.y(min(m)):.1f}" for p, m in reversed(rows))
        if len(rows) == 1:
            p, m = rows[0]
            x = fr.x(p.index)
            e.append(f'<rect class="noise-band" data-layout="{name}" x="{x - 6:.1f}" y="{fr.y(max(m)):.1f}" width="12" '
                     f'height="{max(fr.y(min(m)) - fr.y(max(m)), 1):.1f}" fill="{NOISE}" fill-opacity=".22"/>')
        else:
            e.append(f'<polygon class="noise-band" data-layout="{name}" points="{top} {bot}" fill="{NOISE}" '
                     f'fill-opacity=".22" stroke="none"/>')
        mean = " ".join(f"{fr.x(p.index):.1f},{fr.y(sum(m) / len(m)):.1f}" for p, m in rows)
        e.append(f'<polyline class="median layout-{name}" points="{mean}" fill="none" stroke="{NOISE}" '
                 f'stroke-width="2" stroke-dasharray="6 3"/>')
        k = max(len(m) for _, m in rows)
        legend.append((NOISE, f"{name}: {k} layouts", "band: min…max medians", True))
    return legend


def fixed_lines(e: list, fixed: list, pts: list, per: dict, fr: Frame, confidence: float) -> list[tuple]:
    """Each fixed layout: its median line and points with the confidence band of the median.  Returns
    its legend entries."""
    legend = []
    for ci, lid in enumerate(fixed):
        color = PALETTE[ci % len(PALETTE)]
        rows = [(p, per[p.commit]["fixed"].get(lid)) for p in pts]
        rows = [(p, sm) for p, sm in rows if sm]
        if not rows:
            continue
        if len(rows) > 1:
            top = " ".join(f"{fr.x(p.index):.1f},{fr.y(sm.ci_high):.1f}" for p, sm in rows)
            bot = " ".join(f"{fr.x(p.index):.1f},{fr.y(sm.ci_low):.1f}" for p, sm in reversed(rows))
            e.append(f'<polygon class="ci-band layout-{lid}" points="{top} {bot}" fill="{color}" fill-opacity=".15" '
                     f'stroke="none"/>')
        line = " ".join(f"{fr.x(p.index):.1f},{fr.y(sm.median):.1f}" for p, sm in rows)
        e.append(f'<polyline class="median layout-{lid}" points="{line}" fill="none" stroke="{color}" '
                 f'stroke-width="2"/>')
        for p, sm in rows:
            e.append(f'<circle class="median-point layout-{lid}" cx="{fr.x(p.index):.1f}" cy="{fr.y(sm.median):.1f}" '
                     f'r="3" fill="{color}"/>')
        legend.append((color, lid, f"median, {100 * confidence:g}% CI", False))
    return legend


def runs(pts: list, metric: str, per: dict, fr: Frame, specs: list, fixed: list) -> list[str]:
    """Every run as a faint point beside its commit (the layouts side by side), outliers in red."""
    ids_all = list(dict.fromkeys(layoutmod.label(nm, sd) for nm, sd in specs))
    colors = {lid: PALETTE[fixed.index(lid) % len(PALETTE)] if lid in fixed else NOISE for lid in ids_all}
    step = (fr.pw / (fr.n - 1)) if fr.n > 1 else fr.pw
    jit = min(step * 0.35, 14) / max(len(ids_all), 1)
    e = ['<g class="runs">']
    for p in pts:
        g = p.groups[metric]
        outl = per[p.commit]["outliers"]
        for k, lid in enumerate(ids_all):
            for i, v in enumerate(g.get(lid, [])):
                x = fr.x(p.index) + (k - (len(ids_all) - 1) / 2) * jit
                cls = "run outlier" if (lid, i) in outl else "run"
                e.append(f'<circle class="{cls}" data-commit="{p.commit}" data-layout="{lid}" data-value="{v!r}" '
                         f'cx="{x:.1f}" cy="{fr.y(v):.1f}" r="{3.2 if "outlier" in cls else 2.4}" '
                         f'fill="{colors.get(lid, "#555")}"><title>{p.short} {lid} run {i}: {fmt.axis(v)}'
                         f'{" (outlier)" if "outlier" in cls else ""}</title></circle>')
    e.append("</g>")
    return e


def x_axis(points: list, metric: str, fr: Frame, link, s) -> list[str]:
    """Every measured or failed point gets a tick (a failed one a cross); labels thinned to ~24, each a
    link to its commit's page."""
    e = []
    every = max(1, math.ceil(len(points) / 24))
    bottom = MT + fr.ph
    for j, p in enumerate(points):
        x = fr.x(p.index)
        e.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}"/>')
        if metric not in p.groups:
            e.append(f'<g class="failed-point" data-commit="{p.commit}"><title>{p.short}: {escape(p.status)}</title>'
                     f'<line class="failed-point" x1="{x - 4:.1f}" x2="{x + 4:.1f}" y1="{bottom - 4}" '
                     f'y2="{bottom + 4}"/><line class="failed-point" x1="{x - 4:.1f}" x2="{x + 4:.1f}" '
                     f'y1="{bottom + 4}" y2="{bottom - 4}"/></g>')
        if j % every == 0 or j == len(points) - 1:
            href = link(p.commit)
            t = (f'<text x="{x:.1f}" y="{bottom + 14}" transform="rotate(35 {x:.1f} {bottom + 14})">'
                 f'{p.commit[:8]}</text>')
            e.append(f'<a href="{escape(href)}">{t}</a>' if href else t)
    e.append(f'<text x="{ML + fr.pw / 2:.0f}" y="{H - 4}" text-anchor="middle">commits {s.start[:8]}..{s.end[:8]} '
             f'({fr.n} in the range; ticks: measured)</text>')
    return e


def legend_items(e: list, legend: list, quirks: list, mine: list, fr: Frame) -> float:
    """The legend beside the plot, as wide as its longest text so that none is cut at the picture's
    edge.  Returns the picture's width it needs."""
    lx = ML + fr.pw + 14
    items = [(name, 11) for _, name, _, _ in legend] + [(what, 9) for _, _, what, _ in legend] + [
        ("one run", 11), ("outlier", 11), ("quirk starts", 11), ("layoutbench verdict", 11),
        ("naive 1-layout bisection", 11)]
    width = lx + 24 + max(text_width(t, size) for t, size in items) + 8
    ly = MT + 4
    for color, name, what, band in legend:
        dash = ' stroke-dasharray="6 3"' if band else ""
        e.append(f'<rect x="{lx}" y="{ly - 6}" width="18" height="12" fill="{color}" '
                 f'fill-opacity="{".22" if band else ".15"}"/>')
        e.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/>')
        e.append(f'<text x="{lx + 24}" y="{ly + 4}">{escape(name)}</text>')
        e.append(f'<text class="legend-note" x="{lx + 24}" y="{ly + 16}">{escape(what)}</text>')
        ly += 32
    e.append(f'<circle cx="{lx + 9}" cy="{ly}" r="2.4" fill="#555" fill-opacity=".35"/>'
             f'<text x="{lx + 24}" y="{ly + 4}">one run</text>')
    ly += 18
    e.append(f'<circle cx="{lx + 9}" cy="{ly}" r="3.2" fill="#d62728"/><text x="{lx + 24}" y="{ly + 4}">outlier</text>')
    for shown, cls, text in ((bool(quirks), "quirk-marker", "quirk starts"),
                             (any(v.kind != "shadow" for v in mine), "bisect-marker", "layoutbench verdict"),
                             (any(v.kind == "shadow" for v in mine), "bisect-shadow-marker", "naive 1-layout bisection")):
        if shown:
            ly += 18
            e.append(f'<line class="{cls}" x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}"/>'
                     f'<text x="{lx + 24}" y="{ly + 4}">{text}</text>')
    return width


ROW = 12  #: pixels between two rows of marker labels
CHAR = 0.62  #: a character's width in sans-serif, as a share of the font size (wide: Latin capitals, digits)


def text_width(text: str, size: float = 10.0) -> float:
    """A generous estimate of the width of ``text`` at ``size`` px in a sans-serif font."""
    return CHAR * size * len(text)


def place_labels(labels: list[tuple[float, str]], left: float, right: float, size: float = 10.0,
                 gap: float = 6.0) -> list[tuple[float, str, int]]:
    """(x, text-anchor, row) of each marker label (x: its marker's position): to the right of its
    marker, or to its left where it would pass ``right``; in the first row (0, 1, ...) where it
    overlaps no label placed before it (labels taken left to right)."""
    out: list[tuple[float, str, int] | None] = [None] * len(labels)
    taken: list[list[tuple[float, float]]] = []
    for i in sorted(range(len(labels)), key=lambda i: labels[i][0]):
        x, text = labels[i]
        w = text_width(text, size)
        if x + 3 + w <= right or x - 3 - w < left:
            lx, anchor, span = x + 3, "start", (x, x + 3 + w)
        else:
            lx, anchor, span = x - 3, "end", (x - 3 - w, x)
        row = next((r for r, spans in enumerate(taken)
                    if all(span[1] + gap <= a or b + gap <= span[0] for a, b in spans)), len(taken))
        if row == len(taken):
            taken.append([])
        taken[row].append(span)
        out[i] = (lx, anchor, row)
    return out  # type: ignore[return-value]

