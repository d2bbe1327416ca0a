"""Job 1's commands: the layouts and kernels there are, building variants, running one, the quirks."""

from __future__ import annotations

from dataclasses import dataclass

import click
from rich.table import Table

from .. import layout, profile, source, validate
from ..errors import LayoutbenchError
from . import CHECKS, SourceChoice, err, json_text, main, options_of, out, say, source_options

# -- job 1: layouts and builds -------------------------------------------------------------------


@dataclass(frozen=True)
class BuildOptions(SourceChoice):
    """``layoutbench build``'s options."""

    layouts: tuple[str, ...]
    seed: int
    images: tuple[str, ...]
    jobs: int | None
    as_json: bool


@dataclass(frozen=True)
class RunOptions(SourceChoice):
    """``layoutbench run``'s options."""

    layout_name: str
    seed: int
    target_name: str | None
    extra: str | None
    timeout: float | None
    metrics: tuple[str, ...]

@main.command("layouts")
def layouts_cmd():
    """List the layouts, one line each."""
    for name, strategy in layout.REGISTRY.items():
        seeded = " (seeded)" if strategy.seeded else ""
        out.print(f"{name:17} {strategy.description}{seeded}", markup=False)


@main.command("kernels")
def kernels_cmd():
    """List the profiles ($LAYOUTBENCH_PROFILES, kernels/)."""
    broken = 0
    for name in profile.available():
        try:
            p = profile.load(name)
        except LayoutbenchError as e:
            broken += 1
            out.print(f"{name:12} BROKEN: {e}", markup=False)
            continue
        out.print(f"{name:12} {p.description}", markup=False)
    if broken:
        say(f"{broken} profile(s) could not be read (marked BROKEN above); the others can be used")


@main.command("build")
@click.argument("kernel")
@source_options
@click.option("--layout", "layouts", multiple=True, default=["default"], show_default=True,
              help="Layout name, or NAME:COUNT for COUNT (1 to 10000) seeds of a seeded layout; repeat or "
                   "comma-separate.")
@click.option("--seed", type=CHECKS["seed"], default=1, show_default=True, help="Seed (first seed for NAME:COUNT), 0 to 2^63-1.")
@click.option("--image", "images", multiple=True, help="Which image(s) of the kernel to link (default: all).")
@click.option("-j", "--jobs", type=CHECKS["jobs"], help="Parallel compile jobs (default: all cores).")
@click.option("--json", "as_json", is_flag=True, help="Print the variants as JSON.")
@options_of(BuildOptions)
def build_cmd(opts: BuildOptions):
    """Compile KERNEL once and link it in the given layouts; print where each image and plan is.

    Every image is checked against its plan (order, alignment, gaps) before it is kept.
    """
    from .. import build

    specs = layout.parse_specs(list(opts.layouts), opts.seed)
    prof, co = opts.checkout()
    for i in opts.images:
        prof.image(i)
    objs, variants = build.build_variants(prof, co, specs, list(opts.images) or None, opts.jobs, say)
    if opts.as_json:
        out.print_json(json_text({"build": objs.info, "objdir": str(objs.objdir),
                                   "variants": [v.to_dict() for v in variants]}))
        return
    width = max(len(v.label) for v in variants)
    for v in variants:
        out.print(f"{v.image:7} {v.label:{width}}  plan {v.plan_id}  {v.elf}  {v.plan_path}", markup=False)
    how = "compiled" if objs.compiled_now else "cached objects"
    if objs.reused_from:
        how = f"objects of {objs.reused_from[:12]} reused ({objs.info.get('changed_files')} changed files, none read by the build)"
    out.print(f"{prof.name} {co.short}: {how} ({objs.objdir}), {len(variants)} variant(s) linked and verified",
              markup=False)


@main.command("run")
@click.argument("kernel")
@source_options
@click.option("--layout", "layout_name", default="default", show_default=True, help="Layout to link.")
@click.option("--seed", type=CHECKS["seed"], default=1, show_default=True, help="Seed of a seeded layout.")
@click.option("--target", "target_name", help="Where to run it (default: the profile's default target).")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=CHECKS["seconds"], help="Seconds before the run is killed (> 0, at most a week).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) the run must print, repeated or comma-separated: "
              "one the target cannot print is refused before anything is built, one the run did not print fails it.")
@options_of(RunOptions)
def run_cmd(opts: RunOptions):
    """Link one variant, run (boot) it once, show its console and metrics. Nothing is stored.

    Exits non-zero when the run fails, hangs or panics, or prints no --metric asked for.
    """
    from .. import build, targets
    from ..compare import emulation_warning

    layout.get(opts.layout_name)
    prof, co = opts.checkout()
    target = targets.make(prof, opts.target_name, opts.timeout)
    asked = [m for m in validate.metric_names(opts.metrics) or () if m != "all"]
    for m in asked:
        targets.check_metric(prof, target, m)
    objs = build.compile_objects(prof, co, None, say)
    v = build.link_variant(objs, target.spec.image, opts.layout_name, opts.seed)
    say(f"running {v.image} {v.label} (plan {v.plan_id}) on {target.describe()}")
    log = v.elf.parent / f"run-{target.spec.name}.log"
    with target:
        r = target.run(v.elf, log, opts.extra.split() if opts.extra else [])
    out.print(r.output.rstrip(), markup=False)
    out.print(f"-- {r.status} in {r.duration:.1f}s on {r.host} ({r.accelerator}); log {log}", markup=False)
    # the cache model's counts are not timings: no warning for them (nor for its failed runs)
    warn = None if target.kind == "qemu-icache" and not r.samples else \
        emulation_warning([r.accelerator], [x.metric for x in r.samples])
    if warn:
        err.print(f"[yellow]warning:[/yellow] {warn}")
    if r.status != "ok":
        raise LayoutbenchError(f"{prof.name} {v.label} on {target.spec.name}: {r.status}: {r.message}; log {log}")
    printed = {x.metric for x in r.samples}
    missing = next((m for m in asked if m not in printed), None)
    if missing is not None:
        raise LayoutbenchError(targets.no_metric(prof, target, missing, printed, first_run=True))


@main.command("quirks")
@click.argument("kernel")
@click.option("--repo", type=click.Path(), help="With --commit: the repository to resolve it in.")
@click.option("--subdir")
@click.option("--commit", "rev", metavar="REV", help="Show only the quirks that apply to this commit.")
@click.option("--json", "as_json", is_flag=True)
def quirks_cmd(kernel, repo, subdir, rev, as_json):
    """List KERNEL's quirks (name, range, actions, reason): what old commits need in order to build."""
    from .. import quirks

    prof = profile.load(kernel)
    qs = quirks.load(prof)
    if rev:
        qs = quirks.applicable(prof, source.resolve(prof, rev, repo, subdir))
    rows = [q.to_dict() for q in qs]
    if as_json:
        out.print_json(json_text({"file": str(quirks.quirks_file(prof)), "quirks": rows}))
        return
    if not rows:
        out.print(f"no quirks for {kernel}" + (f" at {rev}" if rev else "") + f" ({quirks.quirks_file(prof)})",
                  markup=False)
        return
    t = Table(title=f"quirks of {kernel} ({quirks.quirks_file(prof)})", title_justify="left")
    for col in ("name", "range", "actions", "reason"):
        t.add_column(col, overflow="fold")
    for r in rows:
        span = (f"{r['from'] or '…'}..{r['until'] or ''}" if r["from"] else "")
        if r["commits"]:
            span = (span + " " if span else "") + ",".join(c[:12] for c in r["commits"])
        t.add_row(r["name"], span, r["actions"], r["reason"])
    out.print(t)
