"""The ``layoutbench`` command: parse, call one function, print. No logic lives here."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # python -m layoutbench.cli: symdiff of two ELF files goes native before any import
    from layoutbench import native

    native.fast_path(sys.argv[1:])

import contextlib  # noqa: E402
import json  # noqa: E402

import click  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from . import __version__, layout, measure, profile, source, validate  # noqa: E402
from .errors import LayoutbenchError  # noqa: E402

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)


class Group(click.Group):
    """Turns a LayoutbenchError anywhere into one line on stderr and a non-zero exit."""

    def invoke(self, ctx):
        import sqlite3

        from . import procs
        from .safety import redact_text

        procs.install_signal_handlers()
        try:
            return super().invoke(ctx)
        except LayoutbenchError as e:
            err.print(f"layoutbench: error: {redact_text(e)}", markup=False)
            sys.exit(e.exit_code)
        except sqlite3.Error as e:  # a query of an opened store failed: a damaged page, a full disk...
            from .store import explain
            err.print(f"layoutbench: error: {explain(e, checkpoint=True)}", markup=False)
            sys.exit(2)
        except OSError as e:  # a file or program the command needed: one line, no traceback
            import errno
            where = f": {e.filename}" if getattr(e, "filename", None) else ""
            hint = "; free some space and run the same command again" if e.errno == errno.ENOSPC else ""
            err.print(f"layoutbench: error: {e.strerror or e}{where}{hint}", markup=False)
            sys.exit(2)
        except Exception as e:
            if not type(e).__module__.startswith("psycopg"):
                raise
            from .store import error_line
            err.print(f"layoutbench: error: {redact_text(error_line(e))}", markup=False)
            sys.exit(2)
        except (KeyboardInterrupt, procs.Terminated) as e:
            procs.kill_all()
            err.print("layoutbench: interrupted; what was stored is kept, run the same command to resume")
            sys.exit(128 + e.signum if isinstance(e, procs.Terminated) else 130)
        finally:
            procs.kill_all()


def _json(value, **kw) -> str:
    """Strict JSON for --json: a non-finite number is null, never NaN or Infinity."""
    from .metrics import json_safe

    return json.dumps(json_safe(value), allow_nan=False, **kw)


def say(msg: str) -> None:
    err.print(f"[dim]· {msg}[/dim]")


def _exit_epilog() -> str:
    from .verdict import exit_table_text

    return "\b\nExit codes (every command; README and docs/guide/reading-output.md hold the same table):\n" + exit_table_text()


EXIT_EPILOG = _exit_epilog()


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_EPILOG)
@click.version_option(__version__, prog_name="layoutbench")
@click.option("--workdir", type=click.Path(file_okay=False), envvar="LAYOUTBENCH_DIR",
              help="Where objects, images and the store live  [env LAYOUTBENCH_DIR; default ./.layoutbench]")
def main(workdir):
    """Build kernels in controlled link layouts, benchmark them, and tell code changes
    from layout noise.

    \b
    Typical use:
      layoutbench layouts                          # what layouts exist
      layoutbench build minikernel --layout random --seed 3
      layoutbench run minikernel --target qemu     # boot one variant, show its console
      layoutbench compare minikernel --layouts default,sorted,aligned,random:8 --runs 5
      layoutbench symdiff minikernel@worktree:sorted minikernel@worktree:aligned
      layoutbench bisect minikernel GOOD..BAD --repo R --target cachegrind
      layoutbench history minikernel A..B --repo R --step 4 && layoutbench report minikernel
    """
    if workdir:
        os.environ["LAYOUTBENCH_DIR"] = os.path.abspath(workdir)


# -- shared options ------------------------------------------------------------------------------

def source_options(f):
    f = click.option("--subdir", help="The kernel tree inside --repo (default: its top).")(f)
    f = click.option("--repo", type=click.Path(), help="A git repository holding the kernel tree "
                     "(default: the profile's source).")(f)
    f = click.option("--commit", "rev", metavar="REV",
                     help="The commit to build (default: the working tree as it is).")(f)
    return f


def checkout_of(kernel: str, rev, repo, subdir):
    prof = profile.load(kernel)
    return prof, source.resolve(prof, rev, repo, subdir)


# -- job 1: layouts and builds -------------------------------------------------------------------

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
@click.option("--seed", type=int, default=1, show_default=True, help="Seed (first seed for NAME:COUNT), 0 to 2^63-1.")
@click.option("--image", "images", multiple=True, help="Which image(s) of the kernel to link (default: all).")
@click.option("-j", "--jobs", type=int, help="Parallel compile jobs (default: all cores).")
@click.option("--json", "as_json", is_flag=True, help="Print the variants as JSON.")
def build_cmd(**o):
    """Compile KERNEL once and link it in the given layouts; print where each image and plan is.

    Every image is checked against its plan (order, alignment, gaps) before it is kept.
    """
    from . import build

    validate.options(o)
    specs = layout.parse_specs(list(o["layouts"]), o["seed"])
    prof, co = checkout_of(o["kernel"], o["rev"], o["repo"], o["subdir"])
    images = o["images"]
    for i in images:
        prof.image(i)
    objs, variants = build.build_variants(prof, co, specs, list(images) or None, o["jobs"], say)
    if o["as_json"]:
        out.print_json(_json({"build": objs.info, "objdir": str(objs.objdir),
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
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of a seeded layout.")
@click.option("--target", "target_name", help="Where to run it (default: the profile's default target).")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=float, help="Seconds before the run is killed (> 0, at most a week).")
def run_cmd(**o):
    """Link one variant, run (boot) it once, show its console and metrics. Nothing is stored.

    Exits non-zero when the run fails, hangs or panics.
    """
    from . import build, targets
    from .compare import emulation_warning

    validate.options(o)
    validate.seed("--seed", o["seed"])
    layout.get(o["layout_name"])
    prof, co = checkout_of(o["kernel"], o["rev"], o["repo"], o["subdir"])
    target = targets.make(prof, o["target_name"], o["timeout"])
    objs = build.compile_objects(prof, co, None, say)
    v = build.link_variant(objs, target.spec.image, o["layout_name"], o["seed"])
    say(f"running {v.image} {v.label} (plan {v.plan_id}) on {target.describe()}")
    log = v.elf.parent / f"run-{target.spec.name}.log"
    with target:
        r = target.run(v.elf, log, o["extra"].split() if o["extra"] else [])
    out.print(r.output.rstrip(), markup=False)
    out.print(f"-- {r.status} in {r.duration:.1f}s on {r.host} ({r.accelerator}); log {log}", markup=False)
    # the cache model's counts are not timings: no warning for them (nor for its failed runs)
    warn = None if target.kind == "qemu-icache" and not r.samples else \
        emulation_warning([r.accelerator], [x.metric for x in r.samples])
    if warn:
        err.print(f"[yellow]warning:[/yellow] {warn}")
    if r.status != "ok":
        raise LayoutbenchError(f"{prof.name} {v.label} on {target.spec.name}: {r.status}: {r.message}; log {log}")


# -- job 3: benchmark and compare ----------------------------------------------------------------

def open_store(path, write: bool = True):
    """The store of --store; ``write``: the command writes to it (a read-only one is refused now)."""
    from .store import Store, default_path
    store = Store(path or os.environ.get("LAYOUTBENCH_STORE") or default_path())
    return store.writable() if write else store


def store_option(f):
    return click.option("--store", "store_path", type=click.Path(dir_okay=False),
                        help="The results database: an SQLite file or a postgresql:// URL (its password is never shown)  "
                             "[env LAYOUTBENCH_STORE; default WORKDIR/results.sqlite]")(f)


def machine_options(f):
    """--perf, --perf-events, --pin, --no-machine-check: how a local or ssh target measures."""
    for opt in reversed([
        click.option("--perf", is_flag=True, help="Run the benchmark under `perf stat` and store each counter as a "
                     "metric perf.<event> (local and ssh targets); events this machine cannot count are named once."),
        click.option("--perf-events", metavar="LIST", help="The events for --perf (default: cycles, instructions, "
                     "L1-icache-load-misses, iTLB-load-misses, branch-misses, task-clock, page-faults, context-switches); "
                     "a local target checks that perf accepts them before any run."),
        click.option("--pin", metavar="CPU", help="Run the benchmark pinned to CPU (taskset -c CPU): a CPU list such "
                     "as 2, 0-3 or 1,3; checked against this machine's CPUs for a local target before any run."),
        click.option("--no-machine-check", is_flag=True, help="Do not check that the machine is quiet first."),
    ]):
        f = opt(f)
    return f


def machine_overrides(o: dict) -> tuple:
    """The target settings --perf/--perf-events/--pin set (they key the samples like the profile's)."""
    over = []
    if o.get("perf") or o.get("perf_events"):
        over.append(("perf", o["perf_events"].split(",") if o.get("perf_events") else True))
    if o.get("pin") is not None:
        over.append(("pin", str(o["pin"])))
    return tuple(over)


@contextlib.contextmanager
def progress_bar(total: int, what: str):
    """A progress bar on stderr; ``tick()`` advances it by one run."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=not err.is_terminal) as p:
        task = p.add_task(what, total=total)
        yield lambda: p.advance(task)


@main.command("compare", epilog=EXIT_EPILOG)
@click.argument("kernel")
@source_options
@click.option("--layouts", "layouts", multiple=True, default=["default,sorted,aligned,random:8"], show_default=True,
              help="Layouts to compare: NAME or NAME:COUNT (COUNT seeds, at most 10000), comma-separated.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="First seed of the seeded layouts (every seed 0 to 2^63-1).")
@click.option("--runs", type=int, default=3, show_default=True, help="Repetitions per variant.")
@click.option("--mode", type=click.Choice(measure.MODES), default="rerun", show_default=True,
              help="rerun: same image again; reboot: fresh boot each time; relink: a new seed per repetition.")
@click.option("--target", "target_names", multiple=True,
              help="Where to run (a [targets] entry of the profile; default: its default). Repeat or "
                   "comma-separate to run on several targets in parallel, each host's samples kept apart.")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=float, help="Seconds before a run is killed (> 0, at most a week; default: the target's).")
@click.option("--metric", "metrics", multiple=True,
              help="Metric(s) to show, repeated or comma-separated; 'all' for every one (default: the profile's, else "
                   "all the runs printed); a name no run printed is an error.")
@click.option("--baseline", help="Layout the others are compared with, one of --layouts (default: the first).")
@click.option("--retry-failed", is_flag=True, help="Run again the repetitions stored as failed.")
@click.option("--commits", metavar="A,B", help="Compare two commits instead of layouts: the seeded layouts of "
              "--layouts (the same seeds on both sides, paired), the effect of B against A with its interval, the "
              "layout noise, the verdict, and what one run of the default link per side would have said.")
@click.option("--min-effect", default="0.5", show_default=True,
              help="With --commits: the smallest change that counts, in percent (0.5 means 0.5%; a % sign is "
                   "accepted; 0 to below 50: a larger value is refused as a unit mistake).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="With --commits: exit 1 when B is shown slower than A by at least --min-effect in a metric "
                   "shown, else 0 (the exit-code table below; as asv continuous fails on a regression).")
@click.option("-j", "--jobs", type=int, help="Parallel compile jobs.")
@machine_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
def compare_cmd(**o):
    """Build KERNEL's variants (compile once), run each --runs times, store every sample, and print
    a table with the layout noise on its own line.

    \b
    With --commits A,B: did B change the metric beyond layout noise?
      layoutbench compare minikernel --commits HEAD~1,HEAD --layouts random:8 --runs 2 --repo R
    Running the same command again resumes: stored runs are not run again.
    """
    from . import compare, measure, report_text

    if o["runs"] < 1:
        raise LayoutbenchError("--runs must be at least 1")
    validate.options(o)
    o["min_effect"] = validate.min_effect_percent(o["min_effect"])
    if o["exit_code"] and not o["commits"]:
        raise LayoutbenchError("--exit-code needs --commits A,B: it fails the command when B is slower than A")
    specs = layout.parse_specs(list(o["layouts"]), o["seed"])
    if o["baseline"] is not None and o["baseline"] not in {n for n, _ in specs} | {layout.label(n, sd) for n, sd in specs}:
        raise LayoutbenchError(f"--baseline {o['baseline']!r} is not one of the layouts compared: "
                               f"{', '.join(dict.fromkeys(n for n, _ in specs))}")
    names = [n.strip() for t in o["target_names"] for n in t.split(",") if n.strip()]
    prof = profile.load(o["kernel"])
    _check_targets(prof, names or [None], o)
    view = compare.View(validate.metric_names(o["metrics"]), o["baseline"])
    store = open_store(o["store_path"])
    if o["commits"]:
        return _compare_commits(o, prof, specs, names, store)
    co = source.resolve(prof, o["rev"], o["repo"], o["subdir"])
    request = measure.MeasureRequest(prof, co, specs, o["runs"], o["mode"], names[0] if names else None,
                                     tuple(o["extra"].split()) if o["extra"] else (), o["timeout"],
                                     o["retry_failed"], o["jobs"], machine_overrides(o), not o["no_machine_check"])
    if len(names) > 1:
        multi = compare.run_many(request, names, store, view, progress_bar, say)
        if o["as_json"]:
            out.print_json(_json(multi.to_dict()))
        else:
            report_text.print_multi(out, multi)
        if multi.failed or not any(r.metrics for r in multi.reports):
            what = "; ".join(f["message"] for f in multi.failed) or "no target produced metrics"
            raise LayoutbenchError(f"{len(multi.failed)} of {len(names)} target(s) failed: {what}")
        return
    rep = compare.run(request, store, view, progress_bar, say)
    if o["as_json"]:
        out.print_json(_json(rep.to_dict()))
    else:
        report_text.print_compare(out, rep)
    if not rep.metrics:
        raise LayoutbenchError(f"no run of {prof.name} produced metrics; see the logs above "
                               f"(first: {rep.failures[0]['log'] if rep.failures else 'none'})")


def _check_targets(prof, names, o: dict) -> None:
    """Make every target once before anything is built: unknown names, bad settings, a --pin of a
    CPU this machine lacks are found now, not after every run failed."""
    from . import targets

    for n in names:
        t = targets.make(prof, n, o.get("timeout"), dict(machine_overrides(o)))
        if t.kind == "local" and t.pin is not None:
            validate.pin(t.pin, local=True)
        if t.kind == "local" and t.perf_events:
            _probe_perf(t.perf_events)


def _probe_perf(events) -> None:
    """Whether ``perf stat`` accepts these events here (one short run of ``true``)."""
    import shutil
    import subprocess

    if not shutil.which("perf"):
        raise LayoutbenchError("--perf needs the perf tool: apt-get install linux-perf")
    p = subprocess.run(["perf", "stat", "-x,", "-e", ",".join(events), "--", "true"], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        first = next((ln.strip() for ln in p.stderr.splitlines() if ln.strip()), f"exit {p.returncode}")
        raise LayoutbenchError(f"perf stat does not accept the events {','.join(events)}: {first[:200]}")


def _compare_commits(o: dict, prof, specs, names: list[str], store) -> None:
    """``compare --commits A,B``: the request is built here, the work is compare.compare_commits."""
    from . import compare, measure

    revs = [r.strip() for r in o["commits"].split(",")]
    if len(revs) != 2 or not all(revs):
        raise LayoutbenchError(f"--commits {o['commits']!r} must name two commits: A,B")
    if o["rev"]:
        raise LayoutbenchError("give either --commit or --commits A,B, not both")
    if len(names) > 1:
        raise LayoutbenchError("--commits compares on one target; give one --target")
    if o["mode"] == "relink":
        raise LayoutbenchError("--commits pairs layouts by seed: use mode rerun or reboot, not relink")
    seeded = [(n, sd) for n, sd in specs if layout.get(n).seeded]
    if len(seeded) < 2:
        raise LayoutbenchError("--commits needs at least two seeded layouts to pair (e.g. --layouts random:8)")
    a, b = (source.resolve(prof, r, o["repo"], o["subdir"]) for r in revs)
    request = measure.MeasureRequest(prof, a, seeded, o["runs"], o["mode"], names[0] if names else None,
                                     tuple(o["extra"].split()) if o["extra"] else (), o["timeout"],
                                     o["retry_failed"], o["jobs"])
    rep = compare.compare_commits(request, b, store, compare.View(validate.metric_names(o["metrics"])),
                                  o["min_effect"] / 100, say)
    from .verdict import Verdict

    v = Verdict.of_compare(rep.to_dict())
    if o["as_json"]:
        out.print_json(_json(v.to_json()))
    else:
        out.print(v.text(), markup=False)
    if not rep.metrics:
        raise LayoutbenchError(f"no run of {prof.name} produced metrics on both commits; see the logs above")
    if o["exit_code"]:
        sys.exit(v.exit_code())


@main.command("results")
@click.option("--kernel")
@click.option("--commit", "rev", help="Commit (prefix) to show.")
@click.option("--layout")
@click.option("--target")
@click.option("--metric")
@click.option("--runs", "show_runs", is_flag=True, help="List runs (status, accelerator, log) instead of samples.")
@click.option("--config", help="Only what was measured under this target configuration (its hash).")
@click.option("--configs", "show_configs", is_flag=True,
              help="List the target configurations (hash and settings) runs were made under instead.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@store_option
def results_cmd(**o):
    """List or export what the store holds (samples, or runs with --runs).

    Every run carries the hash of its target configuration (column config: the target's
    kind and settings, the metrics prefix, the toolchain and the quirks); --configs shows them.
    """
    from . import report_text

    store = open_store(o["store_path"], write=False)
    where = dict(kernel=o["kernel"], commit=o["rev"], layout=o["layout"], target=o["target"], config=o["config"])
    if o["show_configs"]:
        used = {r["config"] for r in store.runs(**where)}
        rows = [{"config": h, "settings": json.dumps(c, sort_keys=True)} for h, c in store.configs(used).items()]
        rows += [{"config": "", "settings": "(runs stored before configurations were recorded)"}] if "" in used else []
    elif o["show_runs"]:
        rows = store.runs(**where)
    else:
        rows = store.samples(**where, metric=o["metric"])
    report_text.print_rows(out, rows, o["fmt"])


# -- symdiff: what moved between two images ------------------------------------------------------

@main.command("symdiff")
@click.argument("old")
@click.argument("new")
@click.option("--image", help="Image of a build spec KERNEL@REV:LAYOUT[:SEED] (default: the profile's first).")
@click.option("--repo", type=click.Path(), help="The kernel's git repository for build specs.")
@click.option("--symbols", "show_symbols", is_flag=True, help="Also list every symbol that is not unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON (every symbol).")
@click.option("--cache", "cache", metavar="L1I|SIZE,WAYS,LINE",
              help="Also show where the hot functions sit in this instruction cache (L1I: the geometry of the "
                   "profile's cachegrind/qemu-icache target), which pairs share sets in one image only, and "
                   "their I1 misses side by side (a cachegrind or qemu-icache run of each image).")
@click.option("--target", "cache_target", help="With --cache: the profile target whose geometry and runs "
                                               "are used (cachegrind or qemu-icache; default: its cachegrind target, else its qemu-icache one).")
@click.option("--cachegrind-out", "cachegrind_out", multiple=True, type=click.Path(),
              help="With --cache: cachegrind output files of OLD and NEW (give it twice) instead of running them; "
                   "or the QEMU cache model's per-block files (RESULT.blocks, written when its plugin is given blocks=on).")
@click.option("--functions", "functions", help="With --cache: the functions to show (comma-separated) "
                                               "instead of the hottest.")
@click.option("--top", "top", type=click.IntRange(1), default=10, show_default=True,
              help="With --cache: the hot functions are the TOP with the most I1 misses and the TOP with the most "
                   "instructions (one list, up to twice TOP), and TOP miss lines are shown.")
def symdiff_cmd(**o):
    """Diff the symbols of two images: unchanged, moved, changed, resized, added, removed;
    where the shift starts and why.  OLD and NEW are ELF files or builds KERNEL@REV:LAYOUT[:SEED]
    (REV 'worktree': the working tree).  Exit 0: placement identical, 1: differs, 2: error.
    Two ELF files (without --symbols or --cache) are diffed by the compiled helper native/symdiff,
    same output, when setup.sh built it  [env LAYOUTBENCH_NATIVE=0: the Python path].
    """
    from . import specs, symdiff

    cache, functions = o["cache"], o["functions"]
    if not cache and (o["cache_target"] or o["cachegrind_out"] or functions):
        raise LayoutbenchError("--target, --cachegrind-out and --functions go with --cache L1I|SIZE,WAYS,LINE")
    if cache and cache.upper() != "L1I":  # a bad geometry is said before anything is built
        from .symdiff.cache import parse_geometry

        parse_geometry(cache)
    a = specs.symdiff_side(o["old"], o["image"], o["repo"], say)
    b = specs.symdiff_side(o["new"], o["image"], o["repo"], say)
    res = symdiff.diff(a, b)
    view = None
    if cache:
        from .symdiff import cache as cachemod

        names = [n.strip() for n in functions.split(",") if n.strip()] if functions else None
        view = cachemod.cache_view(a, b, cache, o["cache_target"], tuple(o["cachegrind_out"]), names, o["top"])
    if o["as_json"]:  # plain json: rich's print_json takes seconds on 30k symbols
        if view is None:
            click.echo(res.to_json())
        else:
            click.echo(json.dumps({**res.to_dict(), "cache": view}))
    else:
        symdiff.print_text(out, res, o["show_symbols"])
        if view is not None:
            cachemod.print_view(out, view)
    sys.exit(0 if res.placement_identical else 1)


# -- history and report: range sweeps, drill-down, a static HTML site -----------------------------

@main.command("history")
@click.argument("kernel")
@click.argument("range_", metavar="[A..B]", required=False)
@click.option("--step", type=int, default=None, help="Measure every N-th commit of the range, N >= 1 (always A and B).")
@click.option("--every-commit", is_flag=True, help="Measure every commit of the range (same as --step 1).")
@click.option("--every", "every", metavar="INTERVAL", help="One commit per INTERVAL of commit date, longer than 0 (e.g. 1d, 12h, 1w).")
@click.option("--refine", metavar="X..Y", help="Measure the commits between two points of the stored history "
              "that it does not hold yet (drill-down); stored runs are reused.")
@click.option("--summary", is_flag=True, help="Print the stored history as plain text (no measuring without A..B).")
@click.option("--repo", type=click.Path(), help="A git repository holding the kernel tree (default: the profile's).")
@click.option("--subdir", help="The kernel tree inside --repo (default: its top).")
@click.option("--layouts", "layouts", multiple=True, help="Layouts per commit  [default: sorted,aligned,random:4; "
              "a refine uses the history's]")
@click.option("--seed", type=int, default=1, show_default=True,
              help="First seed of the seeded layouts (every seed 0 to 2^63-1).")
@click.option("--runs", type=int, help="Repetitions per layout  [default: 2]")
@click.option("--mode", type=click.Choice(measure.MODES), help="As in compare  [default: rerun]")
@click.option("--target", "target_name", help="Where to run (default: the profile's default target).")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=float, help="Seconds before a run is killed (> 0, at most a week; default: the target's).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) for the summary (default: all).")
@click.option("--min-effect", default="1", show_default=True,
              help="Smallest change reported, in percent (1 means 1%; a % sign is accepted; 0 to below 50).")
@click.option("-j", "--jobs", type=int, help="Parallel compile jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print what was measured and the history as JSON.")
@store_option
def history_cmd(**o):
    """Build and measure KERNEL at the commits of A..B (A included) in several layouts, storing
    every sample; then print the history and the changes it found (code change or layout noise).

    \b
    layoutbench history minikernel v1..v2 --step 4 --target cachegrind
    layoutbench history minikernel --refine c0ffee..badbad      # the commits in between
    layoutbench history minikernel --summary                    # plain text, for e-mail
    Killed or interrupted, the same command resumes: stored runs are not run again.
    """
    from . import history

    prof = profile.load(o["kernel"])
    store = open_store(o["store_path"], write=bool(o["range_"] or o["refine"]))  # a sweep stores its runs
    step, every, range_, refine, repo, subdir = (o[k] for k in ("step", "every", "range_", "refine", "repo", "subdir"))
    if o["runs"] is not None and o["runs"] < 1:
        raise LayoutbenchError("--runs must be at least 1")
    validate.options(o)
    o["min_effect"] = validate.min_effect_percent(o["min_effect"])
    if every is not None and history.parse_interval(every) <= 0:
        raise LayoutbenchError(f"--every {every!r} must be longer than 0, e.g. 1d or 12h")
    if sum(bool(x) for x in (step, o["every_commit"], every)) > 1:
        raise LayoutbenchError("give one of --step, --every-commit and --every")
    if range_ and refine:
        raise LayoutbenchError("give either A..B (a sweep) or --refine X..Y, not both")
    opts = history.SweepOptions(
        spec=range_, repo=repo, subdir=subdir,
        specs=tuple(layout.parse_specs(list(o["layouts"]), o["seed"])) if o["layouts"] else None,
        runs=o["runs"], mode=o["mode"], target=o["target_name"],
        extra=tuple(o["extra"].split()) if o["extra"] is not None else None, timeout=o["timeout"], jobs=o["jobs"])
    bar = None if o["as_json"] else progress_bar
    outcome = None
    if refine:
        outcome = history.refine(prof, store, refine, opts, step or 1, bar, say)
    elif range_:
        commits = history.full_range(prof, range_, repo, subdir)
        repo_path, _ = source.repo_for(prof, repo, subdir)
        dates = history.commit_dates(repo_path, commits) if every else None
        points = history.choose(commits, 1 if o["every_commit"] else (step or 1),
                                history.parse_interval(every) if every else None, dates)
        outcome = history.sweep(prof, store, points, opts, None, bar, say)
    elif not o["summary"]:
        raise LayoutbenchError("give a range A..B, --refine X..Y or --summary")
    metrics = validate.metric_names(o["metrics"]) or ()
    series = outcome.series if outcome else history.load_series(store, prof.name,
                                                                 source.repo_for(prof, repo, subdir)[0])
    h = history.analyse(store, series, prof, list(metrics) or None, min_effect=o["min_effect"] / 100)
    if o["as_json"]:
        out.print_json(_json({"sweep": outcome.to_dict() if outcome else None, "history": h.to_dict()},
                                  default=str))
        return
    if outcome:
        say(f"{len(outcome.measured)} point(s) probed ({len(outcome.new)} new): {outcome.ran} run(s) now, "
            f"{outcome.skipped} already stored, {outcome.failed_runs} failed"
            + (f"; {len(outcome.build_failed)} did not build" if outcome.build_failed else ""))
    out.print(history.summary_text(h, metrics[0] if len(metrics) == 1 else None), markup=False, end="")


@main.command("report")
@click.argument("kernel", required=False)
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False), default="layoutbench-report",
              show_default=True, help="The folder to write the site as: a new or empty one, or one an earlier report "
              "wrote (it is replaced whole); any other folder, a symbolic link, / and the home folder are refused.")
@click.option("--repo", type=click.Path(), help="Which history (default: the only one of KERNEL in the store).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) to plot (default: all).")
@click.option("--min-effect", default="1", show_default=True,
              help="Smallest change reported, in percent (1 means 1%; a % sign is accepted; 0 to below 50).")
@store_option
def report_cmd(kernel, outdir, repo, metrics, min_effect, store_path):
    """Write the stored history as a static HTML site (SVG plots, a page per commit, the detected
    changes) into a directory that works from file:// and any web server, without network.
    """
    from . import report

    min_effect = validate.min_effect_percent(min_effect)
    metrics = validate.metric_names(metrics) or ()
    if kernel and profile.is_path(kernel):  # a profile's folder or kernel.toml: its history is stored by name
        kernel = profile.load(kernel).name
    store = open_store(store_path, write=False)
    index = report.write_report(store, outdir, kernel=kernel, repo=repo, metrics=list(metrics) or None,
                                min_effect=min_effect / 100, say=say)
    out.print(f"wrote {index}", markup=False)


# -- job 5: bisection, judge, quirks ---------------------------------------------------------------

class BisectGroup(click.Group):
    """``layoutbench bisect KERNEL GOOD..BAD`` runs a bisection; the git-shaped verbs are subcommands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def bisect_options(f):
    """The measurement settings of a bisection (unset: the bisection's stored ones, or the defaults)."""
    opts = [
        click.option("--repo", type=click.Path(), help="A git repository holding the kernel tree (default: the profile's)."),
        click.option("--subdir", help="The kernel tree inside --repo (default: its top)."),
        click.option("--metric", help="The metric to bisect (default: cg_cost on cachegrind, else the profile's)."),
        click.option("--target", "target", help="Where to run (a [targets] entry of the profile); a,b,c: a farm: each "
                     "round judges up to 3 probes at once, one per machine, each against GOOD and BAD measured there; "
                     "a labgrid-places target: one probe per place, each place reserved through the coordinator."),
        click.option("--args", "args", help="Extra program arguments / kernel command line words."),
        click.option("--mode", type=click.Choice(measure.SAME_IMAGE_MODES), help="How repetitions run  [default: rerun]"),
        click.option("--layout", help="The seeded layout of the K layouts: random (object order), shuffled (object "
                     "and function order) or padded  [default: random]"),
        click.option("--layouts", metavar="K|NAME:K", help="K seeded layouts per probe, the same seeds on every commit; "
                     "NAME:K (e.g. random:8, the form compare takes) also sets --layout  [default: 4]"),
        click.option("--max-layouts", type=int, help="Budget: the last look's layouts (K, 1.5K, ... up to this)  "
                     "[default: 256; spent only while no look decides]"),
        click.option("--runs", type=int, help="R runs per layout  [default: 1; chosen from the noise split where a "
                     "new layout costs more than a run: the target's layout_cost and run_cost, else measured]"),
        click.option("--max-runs", type=int, help="Kept for scripts and bisect logs: the tests add layouts, never runs (the runs per layout are --runs, or chosen from the costs)  [default: 1]"),
        click.option("--seed", type=int, help="First seed of the K layouts, 0 to 2^63-1  [default: 1]"),
        click.option("--confidence", type=float, help="1 - the error budget of the whole bisection, shared over its tests and looks  [default: 0.95]"),
        click.option("--min-effect", help="The smallest change that counts as a change, in percent: 0.5 means 0.5% "
                     "(a % sign is accepted; above 0 and below 50: a larger value is refused as a unit mistake)  "
                     "[default: 0.5]"),
        click.option("--all-changes", "all_changes", is_flag=True, default=None,
                     help="Kept for old scripts: every change point is found by default now."),
        click.option("--first-only", "first_only", is_flag=True, default=None,
                     help="Stop after the first confirmed change point (default: every change point): the cheap "
                     "search for one culprit (a single large step in about half the runs; docs/how-it-decides.md)."),
        click.option("--thorough", "thorough", is_flag=True, default=None,
                     help="Search the ranges beside a found step further for a second, smaller step (one of 2x "
                     "--min-effect beside a larger one: both steps named in 76 of 80 simulated ranges instead of 74; "
                     "a single large step then costs about 1.3x the runs: 78.4 against 59.3; tests/test_calibration.py)."),
        click.option("--prove-null", "prove_null", is_flag=True, default=None,
                     help="When no change is shown, go on (up to --max-layouts) until a change of --min-effect "
                     "is ruled out: 'within layout noise' is said only then.  Expensive."),
        click.option("--budget", metavar="RUNS|DURATION", help="The most the bisection may spend: runs (500) or a "
                     "duration (8h, 90m, 2h30m), turned into runs at the time a run takes (the target's run_cost and "
                     "layout_cost, else the medians of the stored links and runs, else the first runs); at the end the best verdict it has "
                     "(candidates with probabilities, or 'not decided at this budget'); none: no cap (removes the budget of "
                     "a bisection in progress)."),
        store_option,
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _layouts_count(value, layout_name) -> dict:
    """bisect's --layouts: a count K, or NAME:K of one seeded layout (compare's form); a list is one line."""
    if value is None or isinstance(value, int):
        return {}
    text = value.strip()
    if text.isdigit():
        return {"layouts": int(text)}
    name, _, count = text.partition(":")
    if count.isdigit() and "," not in text and name in layout.REGISTRY and layout.get(name).seeded:
        if layout_name and layout_name != name:
            raise LayoutbenchError(f"--layouts {value} and --layout {layout_name} name two layouts; give one")
        return {"layouts": int(count), "layout": name}
    seeded = ", ".join(n for n, x in layout.REGISTRY.items() if x.seeded)
    raise LayoutbenchError(f"--layouts {value!r}: a bisection measures K layouts of one seeded layout per probe; give "
                           f"a count (--layouts 8) or NAME:K of one of {seeded} (--layouts random:8), not a list")


def _bisect_settings(o: dict):
    """The bisection settings of a command's options (unset ones keep their defaults)."""
    from .bisect import Settings

    from .costs import parse_budget

    names = ("repo", "subdir", "metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs",
             "max_runs", "seed", "confidence", "min_effect", "shadow", "all_changes", "first_only", "prove_null",
             "thorough")
    o = {**o, **_layouts_count(o.get("layouts"), o.get("layout"))}
    validate.options({**o, "layouts_k": o.get("layouts"), "layouts": None})
    budget = parse_budget(o.get("budget"))
    validate.seed("--seed", o.get("seed"))
    if o.get("min_effect") is not None:  # a percent on the command line, a fraction in the settings
        o = {**o, "min_effect": validate.min_effect_percent(o["min_effect"], positive=True) / 100}
    if o.get("metric") is not None and len(validate.metric_names(o["metric"])) != 1:
        raise LayoutbenchError(f"--metric {o['metric']!r}: a bisection follows one metric; give one name")
    s = Settings(kernel=o["kernel"], **{k: o[k] for k in names if o.get(k) is not None})
    s.given = tuple(k for k in (*names, "budget") if o.get(k) is not None)
    s.runs_auto = o.get("runs") is None
    if budget is not None:
        s.budget, s.budget_time = budget.runs, budget.seconds
    if o.get("layouts") is not None and o.get("max_layouts") is None:
        s.max_layouts = max(s.max_layouts, o["layouts"])
    return s


@main.group("bisect", cls=BisectGroup)
def bisect_grp():
    """Find the commit whose code changed a metric, never one that only moved code.

    \b
      layoutbench bisect KERNEL GOOD..BAD --metric NAME [--target T --layouts K --runs R]
    measures GOOD and BAD over K random layouts (the same seeds on every commit), stops
    with "no change shown" when they do not differ by --min-effect (--prove-null: goes on
    until "within layout noise" is shown), else bisects: each probe is compared with GOOD
    and BAD (a sequential test, the layout noise pooled over every commit measured), and
    skipped when it does not build.  Each culprit is confirmed on fresh layouts, then the
    ranges beside it are tested and searched in turn: every change point is reported
    (--first-only: one); the verdict states the error bound, what symdiff says the
    code did and, for each test that showed no change, the smallest step it would have
    shown ("not ruled out: a step below ...").  --budget RUNS or --budget 8h caps the cost.  The state lives in the store: run the same command again
    to resume.  The git-shaped verbs (start, good, bad, skip, log, replay, reset) act on
    the same state.
    """


@bisect_grp.command("run", epilog=EXIT_EPILOG)
@click.argument("kernel")
@click.argument("span", metavar="[GOOD..BAD]", required=False)
@bisect_options
@click.option("--shadow/--no-shadow", default=None,
              help="Also run the single-layout bisection it is compared with  [default: on]")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("--timeout", type=float, help="Seconds before a run is killed (> 0, at most a week; default: the "
              "target's); a commit whose runs all fail is skipped.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Measure the endpoints' first look only and print what the bisection will likely cost (runs "
              "in every phase: the median of bisections simulated at the noise and change measured; "
              "and time at the time a run takes; the runs per layout the layout and run costs make cheapest, "
              "each cost stated or measured; whether it fits --budget; a warning when a step of twice "
              "--min-effect is likely missed at the noise measured, with what would fix it).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="Exit with the verdict's code: 0 no change shown, 1 a first bad commit, 3 undecided (uncertain, "
              "skipped commits), 4 the budget ended first (the table below); without it 0 whenever a verdict is printed.")
def bisect_run_cmd(**o):
    """Bisect GOOD..BAD (or continue the bisection in progress) and print the verdict."""
    from . import bisect

    from .verdict import Verdict

    good = bad = None
    span = o["span"]
    if span:
        good, bad = source.split_range(span, "GOOD..BAD")
    prof = profile.load(o["kernel"])
    v = Verdict.of_bisection(bisect.run(open_store(o["store_path"]), prof, _bisect_settings(o), good, bad, say,
                                        plan_only=o["plan_only"], timeout=o["timeout"]))
    if o["as_json"]:
        out.print_json(_json(v.to_json(), default=str))
    else:
        out.print(v.text(), markup=False)
    if o["exit_code"]:
        sys.exit(v.exit_code())


@bisect_grp.command("start")
@click.argument("kernel")
@click.argument("bad", required=False)
@click.argument("good", required=False)
@bisect_options
@click.option("--shadow/--no-shadow", default=None, help="Also run the single-layout bisection.")
def bisect_start_cmd(**o):
    """Begin a bisection of KERNEL (as git: BAD first, then GOOD; or mark them later)."""
    from . import bisect

    kernel = o["kernel"]
    prof = profile.load(kernel)
    b = bisect.start(open_store(o["store_path"]), prof, _bisect_settings(o), o["bad"], o["good"])
    out.print(f"bisection of {kernel} started (metric {b.s.metric}); "
              + ("run `layoutbench bisect " + kernel + "` to bisect" if b.good and b.bad
                 else "mark a good and a bad commit"), markup=False)


def _bisect_verb(verb):
    @click.argument("revs", nargs=-1)
    @click.option("--kernel", help="Which bisection (default: the latest started).")
    @click.option("--repo", type=click.Path())
    @click.option("--subdir")
    @store_option
    def cmd(revs, kernel, repo, subdir, store_path, why=""):
        from . import bisect

        store = open_store(store_path)
        prof = profile.load(kernel) if kernel else None
        b = bisect.current(store, kernel, repo, subdir, prof)
        prof = prof or profile.load(b.s.kernel)
        shas = bisect.mark(store, prof, b, verb, list(revs) or ["HEAD"], why)
        for sha in shas:
            out.print(f"{verb}: {sha}", markup=False)
        if b.good and b.bad:
            commits = b.commits(prof)
            i = b.next_probe(commits)
            lo, hi, cand = b.window(commits)
            if i is None:
                out.print(f"nothing left to test: the first bad commit is {commits[hi]}" if not any(
                    b.marks().get(commits[j], {}).get("verb") == "skip" for j in range(lo + 1, hi))
                    else f"only skipped commits left: the first bad commit is one of {' '.join(c[:12] for c in commits[lo + 1:hi + 1])}",
                    markup=False)
            else:
                out.print(f"next to test: {commits[i]} ({len(cand)} left)", markup=False)
    if verb == "skip":
        cmd = click.option("--why", default="", help="Why it is skipped (kept in the log).")(cmd)
    cmd.__doc__ = {"good": "Mark commits (default: the repository's HEAD) like GOOD.",
                   "bad": "Mark commits (default: HEAD) like BAD.",
                   "skip": "Mark commits (default: HEAD) as not testable."}[verb]
    return bisect_grp.command(verb)(cmd)


for _verb in ("good", "bad", "skip"):
    _bisect_verb(_verb)


def _kernel_of(positional, option) -> str | None:
    """KERNEL given as the argument (as elsewhere) or as --kernel; both must agree."""
    if positional and option and positional != option:
        raise LayoutbenchError(f"give the kernel once: {positional!r} and --kernel {option!r} differ")
    return positional or option


@bisect_grp.command("log")
@click.argument("kernel_arg", metavar="[KERNEL]", required=False)
@click.option("--kernel", help="Which bisection (default: the latest started); the same as the argument KERNEL.")
@click.option("--repo", type=click.Path())
@click.option("--subdir")
@store_option
def bisect_log_cmd(kernel_arg, kernel, repo, subdir, store_path):
    """Print the bisection's log; `bisect replay` re-applies it."""
    from . import bisect

    kernel = _kernel_of(kernel_arg, kernel)
    b = bisect.current(open_store(store_path, write=False), kernel, repo, subdir,
                       profile.load(kernel) if kernel else None)
    click.echo(b.text(), nl=False)


@bisect_grp.command("replay")
@click.argument("logfile", type=click.File("rb"))
@store_option
def bisect_replay_cmd(logfile, store_path):
    """Start again from a log printed by `bisect log` (its start line and marks)."""
    from . import bisect

    data = logfile.read()
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise LayoutbenchError(f"{logfile.name}: not text (byte {e.start} is not UTF-8); give a log printed by "
                               f"`layoutbench bisect log`") from None
    b = bisect.replay(open_store(store_path), text, profile.load)
    out.print(f"replayed {sum(1 for e in b.log if e['verb'] != 'start')} mark(s) onto a bisection of {b.s.kernel}; "
              f"run `layoutbench bisect {b.s.kernel}` to continue", markup=False)


@bisect_grp.command("reset")
@click.argument("kernel_arg", metavar="[KERNEL]", required=False)
@click.option("--kernel", help="Which bisection (default: the latest started); the same as the argument KERNEL.")
@click.option("--repo", type=click.Path())
@click.option("--subdir")
@store_option
def bisect_reset_cmd(kernel_arg, kernel, repo, subdir, store_path):
    """Forget the bisection's state (its samples stay in the store)."""
    from . import bisect

    kernel = _kernel_of(kernel_arg, kernel)
    b = bisect.current(open_store(store_path), kernel, repo, subdir, profile.load(kernel) if kernel else None)
    b.reset()
    out.print(f"bisection of {b.s.kernel} reset", markup=False)


@main.command("judge", epilog=EXIT_EPILOG)
@click.argument("kernel")
@click.option("--commit", "rev", metavar="REV", help="The commit to judge (default: the working tree as it is).")
@click.option("--good", help="The GOOD reference commit (default: the bisection in progress).")
@click.option("--bad", help="The BAD reference commit (default: the bisection in progress).")
@bisect_options
@click.option("--json", "as_json", is_flag=True, help="Print the judgement as JSON.")
def judge_cmd(**o):
    """Measure the checkout over the K layouts against GOOD and BAD; exit 0 (like GOOD), 1 (like BAD)
    or 125 (does not build, or uncertain): a `git bisect run` script.  Errors exit 128, which stops
    `git bisect run` instead of marking a commit bad.
    """
    from . import bisect

    try:
        prof = profile.load(o["kernel"])
        s = _bisect_settings({**o, "shadow": False})
        _, j, details = bisect.judge(open_store(o["store_path"]), prof, s, o["rev"], o["good"], o["bad"], say)
    except bisect.Abort:
        raise
    except LayoutbenchError as e:
        raise bisect.Abort(str(e)) from None
    from .verdict import Verdict

    v = Verdict.of_judgement({**details, "describe": j.describe()}, _judged(prof, details["commit"], o))
    if o["as_json"]:
        out.print_json(_json(details, default=str))
    else:
        out.print(v.text(), markup=False)
    sys.exit(v.exit_code())


def _judged(prof, commit: str, o: dict) -> str:
    """The commit judge measured, as git names it: the working tree is named by its HEAD."""
    if commit != source.WORKTREE:
        return commit[:12]
    try:
        head = source.resolve(prof, "HEAD", o.get("repo"), o.get("subdir")).commit
    except LayoutbenchError:
        return "the working tree"
    return f"{head[:12]} (the working tree at HEAD)"


@main.command("quirks")
@click.argument("kernel")
@click.option("--repo", type=click.Path(), help="With --commit: the repository to resolve it in.")
@click.option("--subdir")
@click.option("--commit", "rev", metavar="REV", help="Show only the quirks that apply to this commit.")
@click.option("--json", "as_json", is_flag=True)
def quirks_cmd(kernel, repo, subdir, rev, as_json):
    """List KERNEL's quirks (name, range, actions, reason): what old commits need in order to build."""
    from . import quirks

    prof = profile.load(kernel)
    qs = quirks.load(prof)
    if rev:
        qs = quirks.applicable(prof, source.resolve(prof, rev, repo, subdir))
    rows = [q.to_dict() for q in qs]
    if as_json:
        out.print_json(_json({"file": str(quirks.quirks_file(prof)), "quirks": rows}))
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


if __name__ == "__main__":
    main()
