"""Tables a person reads at a glance (rich), and CSV/JSON for programs."""

from __future__ import annotations

import csv
import io
import json

from rich.markup import escape
from rich.table import Table

from . import fmt, machine, metrics
from .compare import Report, noise_line


def print_compare(console, rep: Report) -> None:
    console.print(f"[bold]{rep.kernel}[/bold] {rep.commit[:12]}  target {rep.target} "
                  f"({', '.join(rep.accelerators) or '-'})  mode {rep.mode}  runs: "
                  + ", ".join(f"{n} {s}" for s, n in sorted(rep.runs.items())))
    if rep.machine:
        console.print(f"machine {rep.host}: {machine.summary(rep.machine)}", markup=False)
    for m in rep.metrics:
        arrow = "higher is better" if m.higher_is_better else "lower is better"
        t = Table(title=escape(f"{m.metric} ({m.unit}), {arrow}"), title_justify="left", box=None, pad_edge=False)
        for col, j in (("layout", "left"), ("n", "right"), ("median ± CI", "right"), ("min … max", "right"),
                       (f"vs {m.baseline}: ratio of geometric means ± CI", "left"), ("outliers", "right")):
            t.add_column(col, justify=j)
        for r in m.rows:
            s = r.summary
            half = (s.ci_high - s.ci_low) / 2
            name = r.name if len(r.groups) == 1 else f"{r.name} ({len(r.groups)} layouts)"
            out = [fmt.number(r.groups[g][i]) for g in r.groups for i in range(len(r.groups[g]))]
            flagged = [out[i] for i in s.outliers]
            t.add_row(name, str(s.n), f"{fmt.number(s.median)} ± {fmt.number(half)}", f"{fmt.number(s.min)} … {fmt.number(s.max)}",
                      _exact(r.exact) if r.exact else
                      fmt.ratio(r.vs_baseline) if r.vs_baseline else ("baseline" if r.name == m.baseline else ""),
                      f"[red]{len(flagged)}: {', '.join(flagged[:3])}[/red]" if flagged else "0")
        console.print()
        console.print(t)
        exact = next((r.exact for r in m.rows if r.exact), None)
        if exact:
            console.print(f"  exact: {exact['why']}: a layout's one value is its value, no interval to draw",
                          markup=False)
        for r in m.rows:
            if r.noise is not None:
                console.print("  " + noise_line(r.name, r.noise), markup=False)
    if rep.failures:
        console.print()
        console.print(f"[red]{len(rep.failures)} run(s) failed[/red] (kept in the store, not in the statistics):")
        for f in rep.failures[:5]:
            console.print(f"  {f['layout']} run {f['rep']}: {f['status']}: {f['message']}  log {f['log']}", markup=False)
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")


def _exact(x: dict) -> str:
    """A ratio on a deterministic target: ``1.023  exact``; over several layouts, their range too
    (why it is exact is said once, under the table: :func:`print_compare`)."""
    if x["layouts"] == 1:
        return f"{x['ratio']:.3f}  exact"
    return f"{x['ratio']:.3f}  exact, per layout {x['min']:.3f} … {x['max']:.3f} ({x['layouts']} layouts)"


def print_rows(console, rows: list[dict], fmt_: str) -> None:
    if fmt_ == "json":  # strict JSON: a non-finite number (a store written before the sample gate) is null
        console.print_json(json.dumps(metrics.json_safe(rows), allow_nan=False))
        return
    if fmt_ == "csv":
        buf = io.StringIO()
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        console.print(buf.getvalue(), end="", markup=False)
        return
    if not rows:
        console.print("no results stored")
        return
    keys = [k for k in rows[0] if k not in ("plan", "started", "build_id", "sample_id")]
    t = Table(box=None, pad_edge=False)
    for k in keys:
        t.add_column(k)
    for r in rows:
        t.add_row(*[(r[k][:12] if k == "commit_sha" else fmt.number(r[k]) if isinstance(r[k], float) else str(r[k]))
                    for k in keys])
    console.print(t)


def print_multi(console, multi) -> None:
    """Several targets: one full report per (target, host), then the hosts side by side (never pooled)."""
    for rep in multi.reports:
        console.print()
        console.rule(escape(f"target {rep.target} on {rep.host}"), align="left")
        print_compare(console, rep)
    from .compare import per_host

    rows = per_host(multi.reports)
    if len(multi.reports) > 1 and rows:
        console.print()
        t = Table(title="per host (each host its own distribution; not combined)", title_justify="left", box=None,
                  pad_edge=False)
        for col, j in (("target", "left"), ("host", "left"), ("metric", "left"), ("layout", "left"),
                       ("n", "right"), ("median", "right"), ("layout noise sd", "right")):
            t.add_column(col, justify=j)
        for r in rows:
            noise = "" if r["layout_noise_cv"] is None else fmt.pct(r["layout_noise_cv"])
            t.add_row(r["target"], escape(r["host"]), r["metric"], r["layout"], str(r["n"]), fmt.number(r["median"]), noise)
        console.print(t)
    for f in multi.failed:
        console.print(f"[red]target {escape(f['target'])} failed:[/red] {escape(f['message'])}")
    console.print(f"measured on {len(multi.reports) + len(multi.failed)} targets in parallel: {multi.wall:.1f}s")
