"""``layoutbench report``: a static HTML site of a history, one directory, no network, no script.

::

    OUT/index.html              plots per metric, the detected changes, every point, the quirks
    OUT/style.css
    OUT/history.json            what the pages show, as data
    OUT/plots/<metric>.svg      the plots as files (also inlined in index.html)
    OUT/commits/<commit12>.html one page per point: build, plans, quirks, runs, symdiff, commit log
    OUT/commits/cache/<commit12>.html  a layout-only point's cache view (symdiff --cache L1I)
    OUT/files/<commit12>/...    console logs, plans and the build log, copied so the site stands alone

Links are relative, so the directory works from ``file://`` and from any web server.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import time
from pathlib import Path

import jinja2

from .. import __version__, fmt, history, layout, machine, owned, quirks, source, stats, symdiff
from ..compare import noise_line
from ..errors import LayoutbenchError
from ..paths import workdir
from ..store import RunKey, Store
from . import plot

TEMPLATES = Path(__file__).parent / "templates"
LOG_TAIL = 4000  #: characters of each console shown inline


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.ChainableUndefined)
    return env


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_report(store: Store, outdir, kernel: str | None = None, repo=None, metrics: list[str] | None = None,
                 confidence: float = 0.95, min_effect: float | None = None, say=lambda m: None) -> Path:
    """Write the site of the stored history of ``kernel`` (in ``repo``) as the folder ``outdir``;
    return its index.html.  The folder is replaced whole, and only when layoutbench wrote it (or
    it is new or empty): see :mod:`layoutbench.owned`.  ``min_effect`` None: the history's own
    (:func:`history.analyse`)."""
    from .. import profile as profmod

    dest = owned.check(outdir, "report")
    series = history.load_series(store, kernel, repo)
    try:
        profile = profmod.load(series.kernel)
    except LayoutbenchError:
        profile = None
    h = history.analyse(store, series, profile, metrics, confidence, min_effect)
    with owned.replacing(dest, "report") as out:
        n_plots = _write_site(store, h, series, profile, out)
    say(f"wrote {len(h.points)} commit page(s) and {n_plots} plot(s) into {dest}")
    return dest / "index.html"


def _write_site(store: Store, h: history.History, series, profile, out: Path) -> int:
    """Write the pages, plots and files into the new folder ``out``; return the number of plots."""
    for sub in ("commits", "plots", "files"):
        (out / sub).mkdir()
    shutil.copyfile(Path(__file__).parent / "style.css", out / "style.css")
    env = _env()
    common = {"h": h, "version": __version__, "generated": time.strftime("%Y-%m-%d %H:%M"),
              "store": str(store.path)}

    # plots
    plots = []
    for m, info in h.metrics.items():
        svg_index = plot.plot(h, m, link=lambda c: f"commits/{c[:12]}.html")
        f = f"{_safe(m)}.svg"
        (out / "plots" / f).write_text(plot.plot(h, m, link=lambda c: f"../commits/{c[:12]}.html"))
        plots.append({"name": m, "unit": info["unit"], "hib": info["higher_is_better"], "svg": svg_index, "file": f})

    pages = {p.commit for p in h.points}
    verdicts = [{**v.to_dict(), "href": f"commits/{v.commit[:12]}.html" if v.commit in pages else None}
                for v in h.verdicts if not v.probe]

    def center(p, m):
        c = p.center(m)
        if c is None:
            c = p.center(m, seeded=False)
        return fmt.number(c) if c is not None else "-"

    subjects = {p.commit: p.info.get("subject", "") for p in h.points}
    rest = [c for c in h.steps if not c.listed]
    unlisted = ", ".join(f"{n} {k}" for k in history.evidence.KINDS if (n := sum(1 for c in rest if c.kind == k)))
    level = h.steps[0].level if h.steps else 1.0 - h.confidence
    layouts = ",".join(layout.label(n, s) for n, s in series.specs)
    (out / "index.html").write_text(env.get_template("index.html").render(
        root="", plots=plots, subjects=subjects, layouts=layouts, verdicts=verdicts, center=center, level=level,
        unlisted=unlisted,
        effect=fmt.effect, pct=fmt.pct, prob=fmt.prob, **common))
    (out / "history.json").write_text(json.dumps(h.to_dict(), indent=1, default=str))

    all_quirks = {}
    if profile is not None:
        try:
            all_quirks = {q.name: q.to_dict() for q in quirks.load(profile)}
        except LayoutbenchError:
            pass
    for i, p in enumerate(h.points):
        prev_point = h.points[i - 1] if i > 0 else None
        next_point = h.points[i + 1] if i + 1 < len(h.points) else None
        prev_measured = h.previous(p)
        ctx = _commit_context(store, h, p, prev_measured, out, all_quirks, pages)
        (out / "commits" / f"{p.short}.html").write_text(env.get_template("commit.html").render(
            root="../", p=p, prev_point=prev_point, next_point=next_point, **ctx, **common))
    return len(plots)


def _workdir_of(elf_path: str | None) -> Path:
    if elf_path:
        p = Path(elf_path)
        if len(p.parents) > 5 and p.parents[4].name == "images":
            return p.parents[5]
    return workdir()


def _commit_context(store: Store, h: history.History, p: history.Point, prev: history.Point | None, out: Path,
                    all_quirks: dict, pages: set) -> dict:
    files = out / "files" / p.short
    files.mkdir(parents=True, exist_ok=True)
    build_ids = sorted({r["build_id"] for r in p.runs})
    builds = store.builds(build_id=build_ids) if build_ids else []
    wd = _workdir_of(builds[0]["elf_path"] if builds else None)
    build, build_log = _build_record(wd / "objects" / h.series.kernel, p, files)
    toolchains = sorted({" / ".join(v for v in json.loads(b["toolchain"]).values() if v) for b in builds})
    qnames = list(dict.fromkeys(p.quirks + [q for b in builds for q in json.loads(b["quirks"])]))
    qs = [all_quirks.get(n, {"name": n, "reason": "", "actions": ""}) for n in qnames]
    return {"build": build, "build_log": build_log, "toolchains": toolchains, "quirks": qs,
            "plans": _plans(h, p, builds, files), "runs": _run_logs(p, files), "results": _results(h, p, prev),
            "log": _log_since(h, prev, p, pages), "targets": _run_targets(store, p),
            "symdiff": _symdiff(store, h, prev, p, builds, out) if prev is not None else None}


def _build_record(objects: Path, p: history.Point, files: Path) -> tuple[dict, str | None]:
    """The point's build record (objects/<kernel>/<commit12>-<config>/build.json: the one with this
    point's quirks, else the newest) and its build log copied into ``files`` (its link, or None)."""
    build, build_log = {}, None
    recs = sorted(objects.glob(f"{p.short}-*/build.json"),
                  key=lambda f: f.stat().st_mtime, reverse=True) if objects.parent.is_dir() else []
    for f in recs:
        d = json.loads(f.read_text())
        if d.get("quirks", []) == p.quirks or not build:
            build = d
    logs = sorted(objects.glob(f"{p.short}-*/build.log"),
                  key=lambda f: f.stat().st_mtime, reverse=True) if objects.parent.is_dir() else []
    if build:
        logs = [f for f in logs if f.parent.name.endswith(build.get("config", ""))] or logs
    if logs:
        shutil.copyfile(logs[0], files / "build.log.txt")
        build_log = f"../files/{p.short}/build.log.txt"
    return build, build_log


def _plans(h: history.History, p: history.Point, builds: list[dict], files: Path) -> list[dict]:
    """Each image's layout plan, written into ``files``, with the first objects of its text order."""
    plans = []
    order = {(n, s): i for i, (n, s) in enumerate(h.series.specs)}
    for b in sorted(builds, key=lambda b: (b["image"], order.get((b["layout"], b["seed"]), 99), b["id"])):
        lab = layout.label(b["layout"], b["seed"])
        f = f"plan-{b['image']}-{_safe(lab)}-{b['id']}.json"
        (files / f).write_text(b["plan"])
        try:
            objs = layout.LayoutPlan.from_json(b["plan"]).object_order("text")
        except Exception:  # an older plan format: show the file only
            objs = []
        text = " ".join(Path(o).name for o in objs[:8]) + (f" … (+{len(objs) - 8})" if len(objs) > 8 else "")
        plans.append({"image": b["image"], "label": lab, "plan_id": b["plan_id"], "sha": b["image_sha256"],
                      "order": text, "href": f"../files/{p.short}/{f}"})
    return plans


def _run_logs(p: history.Point, files: Path) -> list[dict]:
    """Each run, its log copied into ``files`` and its tail."""
    runs = []
    for r in p.runs:
        lab = layout.label(r["layout"], r["seed"])
        href, tail = None, ""
        src = Path(r["log_path"])
        if src.is_file():
            f = f"run-{r['id']}-{_safe(lab)}-{r['rep']}.log.txt"
            shutil.copyfile(src, files / f)
            href = f"../files/{p.short}/{f}"
            text = src.read_text(errors="replace")
            tail = text if len(text) <= LOG_TAIL else "…\n" + text[-LOG_TAIL:]
        runs.append({**r, "label": lab, "href": href, "tail": tail})
    return runs


def _results(h: history.History, p: history.Point, prev: history.Point | None) -> list[dict]:
    """Per metric: each layout's summary (against the previous point's), the layout noise, and the
    change listed at this point (or why none is)."""
    results = []
    for m, info in h.metrics.items():
        g = p.groups.get(m)
        if not g:
            continue
        pg = prev.groups.get(m) if prev else None
        rows = []
        for lid, vals in g.items():
            sm = stats.summarize(vals, h.confidence, n_boot=400)
            vs = ""
            if pg and lid in pg:
                vs = fmt.change(sm.median / stats.summarize(pg[lid], n_boot=10).median)
            rows.append({"id": lid, "n": sm.n, "median": fmt.number(sm.median), "ci": f"{fmt.number(sm.ci_low)} … {fmt.number(sm.ci_high)}",
                         "range": f"{fmt.number(sm.min)} … {fmt.number(sm.max)}", "vs": vs})
        seeded = {i: v for i, v in g.items() if ":" in i}
        noise = noise_line("random", stats.noise_split(seeded)) if len(seeded) >= 2 else ""
        step = h.step(p.commit, m)
        change = step if step is not None and step.listed else None
        cmp_text = ""
        if step is not None and change is None:
            cmp_text = (f"no change listed: {fmt.effect(step)} (ratio {step.ratio:.4f}, {100 * step.confidence:.3g}% "
                        f"CI {step.ci_low:.4f}…{step.ci_high:.4f}), {step.kind}: {step.says()}")
        elif prev and pg and step is None:
            cmp_text = "not compared (no layout in common with the previous point)"
        results.append({"metric": m, "unit": info["unit"], "rows": rows, "noise": noise, "change": change,
                        "effect": fmt.effect(change) if change else "", "cmp": cmp_text})
    return results


def _log_since(h: history.History, prev: history.Point | None, p: history.Point, pages: set) -> list[dict]:
    """The commits since the previous measured point, each linked to its page when it has one."""
    if prev is None:
        return []
    try:
        log = source.log_between(Path(h.series.repo), prev.commit, p.commit)
    except LayoutbenchError:
        return []
    for c in log:
        c["page"] = f"{c['commit'][:12]}.html" if c["commit"] in pages and c["commit"] != p.commit else None
    return log


def _run_targets(store: Store, p: history.Point) -> list[dict]:
    """What shaped the samples: the target configuration of the runs, and the quiet-machine check
    before them."""
    keys = sorted({(r["target"], r["host"], r["config"]) for r in p.runs})
    known = store.configs({c for _, _, c in keys})
    targets_ = []
    for t, hst, c in keys:
        found = store.last_machine_check(RunKey(t, hst, "", "", c))
        targets_.append({"target": t, "host": hst, "config": c or "unknown (stored before runs were keyed)",
                         "text": json.dumps(known[c], indent=1, sort_keys=True) if c in known else "",
                         "summary": machine.summary(found) if found else "", "problems": machine.problems(found)})
    return targets_


def _symdiff(store: Store, h: history.History, prev: history.Point, p: history.Point, builds: list[dict],
             out: Path) -> dict:
    """The symbol diff of the two commits' ``sorted`` images (or ``default``, ``aligned``).  When no
    function both images hold changed its code (a layout-only commit: what differs is where code
    lands), it links the cache view of the two images (``symdiff --cache L1I``): a page beside
    this one when both images' cachegrind outputs are kept, else the command that prints it."""
    def elf_of(commit_builds):
        for lay in ("sorted", "default", "aligned"):
            for b in commit_builds:
                if b["layout"] == lay and b["image"] == h.series.image and Path(b["elf_path"]).is_file():
                    return Path(b["elf_path"]), lay
        return None, None
    prev_ids = sorted({r["build_id"] for r in prev.runs})
    prev_builds = store.builds(build_id=prev_ids) if prev_ids else []
    a, la = elf_of(prev_builds)
    b, lb = elf_of(builds)
    if a is None or b is None:
        return {"available": False, "reason": "the images of the two commits are no longer on disk"}
    try:
        res = symdiff.diff_files(a, b)
    except LayoutbenchError as e:  # an image it cannot read: say so on the page, write the rest
        return {"available": False, "reason": f"symdiff failed: {e}"}
    d = {"available": True, "title": f"{prev.short} → {p.short}, {h.series.image} image in the {lb} layout:",
         "text": _symdiff_text(res), "cache": None}
    if res.counts["changed"] == res.counts["resized"] == 0 and not res.placement_identical:
        d["cache"] = _cache_link(store, prev, p, res, out, h.series.args)
    return d


def _cachegrind_out(store: Store, point: history.Point, elf: Path) -> tuple[Path, str] | None:
    """A kept cachegrind output file of a run of this image, and the run's target."""
    ids = {b["id"] for b in store.builds(build_id=sorted({r["build_id"] for r in point.runs}))
           if b.get("elf_path") and Path(b["elf_path"]) == elf}
    for r in point.runs:
        if r["build_id"] in ids and r.get("log_path"):
            f = Path(r["log_path"]).with_suffix(".cachegrind")
            if f.is_file():
                return f, r["target"]
    return None


def _cache_link(store: Store, prev: history.Point, p: history.Point, res, out: Path, args: str = "") -> dict:
    """The cache view of a layout-only commit (``res``: the diff of its parent's image and its own): a
    page (``commits/cache/<commit12>.html``) from the kept cachegrind outputs of both images' runs, else
    the command that prints it."""
    from rich.console import Console

    from .. import cacheview

    old, new = Path(res.old.path), Path(res.new.path)
    command = f"layoutbench symdiff {shlex.quote(str(old))} {shlex.quote(str(new))} --cache L1I"
    with_args = f" --args {shlex.quote(args)}" if args else ""  # the runs' own arguments: the same counts
    found = _cachegrind_out(store, prev, old), _cachegrind_out(store, p, new)
    if None in found:
        return {"page": None, "command": command + with_args,
                "reason": "the cachegrind outputs of the two images are not kept"}
    if found[0][1] != found[1][1]:
        return {"page": None, "command": command + with_args, "reason": f"the two images ran under different targets "
                f"({found[0][1]}, {found[1][1]}): their caches differ"}
    command += f" --target {shlex.quote(found[1][1])}" + with_args
    try:
        v = cacheview.cache_view(*cacheview.sides_of(res), "L1I", found[1][1], (str(found[0][0]), str(found[1][0])))
    except LayoutbenchError as e:
        return {"page": None, "command": command, "reason": str(e)}
    buf = io.StringIO()
    cacheview.print_view(Console(file=buf, width=200, color_system=None, highlight=False, soft_wrap=True), v)
    (out / "commits" / "cache").mkdir(exist_ok=True)
    (out / "commits" / "cache" / f"{p.short}.html").write_text(_env().get_template("cache.html").render(
        root="../../", p=p, prev=prev, text=buf.getvalue(), command=command))
    return {"page": f"cache/{p.short}.html", "command": command}


def _symdiff_text(res) -> str:
    """The diff's short summary and the objects that differ."""
    lines = symdiff.summary_lines(res)
    differ = [o for o in res.objects if any(n for k, n in o.counts.items() if k != "unchanged")]
    if differ:
        lines.append("")
        lines.append("objects that differ:")
        for o in differ[:30]:
            lines.append(f"  {o.object}: " + ", ".join(f"{n} {k}" for k, n in o.counts.items() if n))
        if len(differ) > 30:
            lines.append(f"  ... and {len(differ) - 30} more")
    return "\n".join(lines)
