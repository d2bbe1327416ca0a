"""The ``layoutbench`` command: parse, call one function, print. No logic lives here."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click
from rich.console import Console
from rich.table import Table

from . import __version__, layout, profile, source
from .errors import LayoutbenchError

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class Group(click.Group):
    """Turns a LayoutbenchError anywhere into one line on stderr and a non-zero exit."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except LayoutbenchError as e:
            err.print(f"layoutbench: error: {e}", markup=False)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            err.print("layoutbench: interrupted; what was stored is kept, run the same command to resume")
            sys.exit(130)


def say(msg: str) -> None:
    err.print(f"[dim]· {msg}[/dim]")


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
      layoutbench compare minikernel --layouts default,sorted,aligned,random:8 --runs 5
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
    for name, text in layout.LAYOUTS.items():
        seeded = " (seeded)" if name in layout.SEEDED else ""
        out.print(f"{name:17} {text}{seeded}", markup=False)


@main.command("kernels")
def kernels_cmd():
    """List the kernel profiles in kernels/."""
    for name in profile.available():
        p = profile.load(name)
        out.print(f"{name:12} {p.description}", markup=False)


@main.command("build")
@click.argument("kernel")
@source_options
@click.option("--layout", "layouts", multiple=True, default=["default"], show_default=True,
              help="Layout name, or NAME:COUNT for COUNT seeds of a seeded layout; repeat or comma-separate.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed (first seed for NAME:COUNT).")
@click.option("--image", "images", multiple=True, help="Which image(s) of the kernel to link (default: all).")
@click.option("-j", "--jobs", type=int, help="Parallel compile jobs (default: all cores).")
@click.option("--json", "as_json", is_flag=True, help="Print the variants as JSON.")
def build_cmd(kernel, rev, repo, subdir, layouts, seed, images, jobs, as_json):
    """Compile KERNEL once and link it in the given layouts; print where each image and plan is.

    Every image is checked against its plan (order, alignment, gaps) before it is kept.
    """
    from . import build

    specs = layout.parse_specs(list(layouts), seed)
    prof, co = checkout_of(kernel, rev, repo, subdir)
    for i in images:
        prof.image(i)
    objs, variants = build.build_variants(prof, co, specs, list(images) or None, jobs, say)
    if as_json:
        out.print_json(json.dumps({"build": objs.info, "objdir": str(objs.objdir),
                                   "variants": [v.to_dict() for v in variants]}))
        return
    width = max(len(v.label) for v in variants)
    for v in variants:
        out.print(f"{v.image:7} {v.label:{width}}  plan {v.plan_id}  {v.elf}  {v.plan_path}", markup=False)
    how = "compiled" if objs.compiled_now else "cached objects"
    out.print(f"{prof.name} {co.short}: {how} ({objs.objdir}), {len(variants)} variant(s) linked and verified",
              markup=False)


# -- job 3: benchmark and compare ----------------------------------------------------------------

def open_store(path):
    from .store import Store, default_path
    return Store(path or os.environ.get("LAYOUTBENCH_STORE") or default_path())


def store_option(f):
    return click.option("--store", "store_path", type=click.Path(dir_okay=False),
                        help="The results database  [env LAYOUTBENCH_STORE; default WORKDIR/results.sqlite]")(f)


@contextlib.contextmanager
def progress_bar(total: int, what: str):
    """A progress bar on stderr; ``tick()`` advances it by one run."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=not err.is_terminal) as p:
        task = p.add_task(what, total=total)
        yield lambda: p.advance(task)


@main.command("compare")
@click.argument("kernel")
@source_options
@click.option("--layouts", "layouts", multiple=True, default=["default,sorted,aligned,random:8"], show_default=True,
              help="Layouts to compare: NAME or NAME:COUNT (COUNT seeds), comma-separated.")
@click.option("--seed", type=int, default=1, show_default=True, help="First seed of the seeded layouts.")
@click.option("--runs", type=int, default=3, show_default=True, help="Repetitions per variant.")
@click.option("--mode", type=click.Choice(["rerun", "reboot", "relink"]), default="rerun", show_default=True,
              help="rerun: same image again; reboot: fresh boot each time; relink: a new seed per repetition.")
@click.option("--target", "target_names", multiple=True,
              help="Where to run (a [targets] entry of the profile; default: its default). Repeat or "
                   "comma-separate to run on several targets in parallel, each host's samples kept apart.")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=float, help="Seconds before a run is killed (default: the target's).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) to show (default: all the runs printed).")
@click.option("--baseline", help="Layout the others are compared with (default: the first).")
@click.option("--retry-failed", is_flag=True, help="Run again the repetitions stored as failed.")
@click.option("-j", "--jobs", type=int, help="Parallel compile jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
def compare_cmd(kernel, rev, repo, subdir, layouts, seed, runs, mode, target_names, extra, timeout, metrics,
                baseline, retry_failed, jobs, as_json, store_path):
    """Build KERNEL's variants (compile once), run each --runs times, store every sample, and print
    a table with the layout noise on its own line.

    Running the same command again resumes: stored runs are not run again.
    """
    from . import compare, report_text

    if runs < 1:
        raise LayoutbenchError("--runs must be at least 1")
    specs = layout.parse_specs(list(layouts), seed)
    prof, co = checkout_of(kernel, rev, repo, subdir)
    store = open_store(store_path)
    names = [n.strip() for t in target_names for n in t.split(",") if n.strip()]
    if len(names) > 1:
        multi = compare.run_many(prof, co, specs, runs, mode, store, names, extra.split() if extra else None,
                                 timeout, retry_failed, list(metrics) or None, baseline, jobs, progress_bar, say)
        if as_json:
            out.print_json(json.dumps(multi.to_dict()))
        else:
            report_text.print_multi(out, multi)
        if multi.failed or not any(r.metrics for r in multi.reports):
            what = "; ".join(f["message"] for f in multi.failed) or "no target produced metrics"
            raise LayoutbenchError(f"{len(multi.failed)} of {len(names)} target(s) failed: {what}")
        return
    rep = compare.run(prof, co, specs, runs, mode, store, names[0] if names else None,
                      extra.split() if extra else None, timeout, retry_failed, list(metrics) or None, baseline, jobs,
                      progress_bar, say)
    if as_json:
        out.print_json(json.dumps(rep.to_dict()))
    else:
        report_text.print_compare(out, rep)
    if not rep.metrics:
        raise LayoutbenchError(f"no run of {prof.name} produced metrics; see the logs above "
                               f"(first: {rep.failures[0]['log'] if rep.failures else 'none'})")


@main.command("results")
@click.option("--kernel")
@click.option("--commit", "rev", help="Commit (prefix) to show.")
@click.option("--layout")
@click.option("--target")
@click.option("--metric")
@click.option("--runs", "show_runs", is_flag=True, help="List runs (status, accelerator, log) instead of samples.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@store_option
def results_cmd(kernel, rev, layout, target, metric, show_runs, fmt, store_path):
    """List or export what the store holds (samples, or runs with --runs)."""
    from . import report_text

    store = open_store(store_path)
    if show_runs:
        rows = store.runs(kernel=kernel, commit=rev, layout=layout, target=target)
    else:
        rows = store.samples(kernel=kernel, commit=rev, layout=layout, target=target, metric=metric)
    report_text.print_rows(out, rows, fmt)


if __name__ == "__main__":
    main()
