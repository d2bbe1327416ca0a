"""Job 3's commands: compare the variants of a commit (or two commits) and read the stored results."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import click

from .. import layout, measure, profile, source, validate
from ..errors import LayoutbenchError
from . import (
    CHECKS,
    EXIT_EPILOG,
    MachineChoice,
    Percent,
    SourceChoice,
    json_text,
    machine_options,
    main,
    open_store,
    options_of,
    out,
    progress_bar,
    say,
    source_options,
    store_option,
)

# -- job 3: benchmark and compare ----------------------------------------------------------------


@dataclass(frozen=True)
class CompareOptions(SourceChoice, MachineChoice):
    """``layoutbench compare``'s options."""

    layouts: tuple[str, ...]
    seed: int
    runs: int
    mode: str
    target_names: tuple[str, ...]
    extra: str | None
    timeout: float | None
    metrics: tuple[str, ...]
    baseline: str | None
    retry_failed: bool
    commits: str | None
    min_effect: float
    exit_code: bool
    jobs: int | None
    as_json: bool
    store_path: str | None


@dataclass(frozen=True)
class ResultsOptions:
    """``layoutbench results``' options."""

    kernel: str | None
    rev: str | None
    layout: str | None
    target: str | None
    metric: str | None
    show_runs: bool
    config: str | None
    show_configs: bool
    fmt: str
    store_path: str | None


@main.command("compare", epilog=EXIT_EPILOG)
@click.argument("kernel")
@source_options
@click.option("--layouts", "layouts", multiple=True, type=CHECKS["layouts"], default=["default,sorted,aligned,random:8"], show_default=True,
              help="Layouts to compare: NAME or NAME:COUNT (COUNT seeds, at most 10000), comma-separated.")
@click.option("--seed", type=CHECKS["seed"], default=1, show_default=True,
              help="First seed of the seeded layouts (every seed 0 to 2^63-1).")
@click.option("--runs", type=CHECKS["runs"], default=3, show_default=True, help="Repetitions per variant.")
@click.option("--mode", type=click.Choice(measure.MODES), default="rerun", show_default=True,
              help="rerun: same image again; reboot: fresh boot each time; relink: a new seed per repetition.")
@click.option("--target", "target_names", multiple=True,
              help="Where to run (a [targets] entry of the profile; default: its default). Repeat or "
                   "comma-separate to run on several targets in parallel, each host's samples kept apart.")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=CHECKS["seconds"], help="Seconds before a run is killed (> 0, at most a week; default: the target's).")
@click.option("--metric", "metrics", multiple=True,
              help="Metric(s) to show, repeated or comma-separated; 'all' for every one (default: the profile's for "
                   "the target's kind, else all the runs printed); a name the target cannot print is refused before "
                   "anything is built, one the first run did not print stops it.")
@click.option("--baseline", help="Layout the others are compared with, one of --layouts (default: the first).")
@click.option("--retry-failed", is_flag=True, help="Run again the repetitions stored as failed.")
@click.option("--commits", metavar="A,B", help="Compare two commits instead of layouts: the seeded layouts of "
              "--layouts (the same seeds on both sides, paired), the effect of B against A with its interval, the "
              "layout noise, the verdict, and what one run of the default link per side would have said.")
@click.option("--min-effect", type=Percent(), default=validate.DEFAULT_MIN_EFFECT_PERCENT, show_default=True,
              help="With --commits: the smallest change that counts, in percent (0.5 means 0.5%; a % sign is "
                   "accepted; 0 to below 50: a larger value is refused as a unit mistake).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="With --commits: exit 1 when B is shown slower than A by at least --min-effect in a metric "
                   "shown, else 0 (the exit-code table below; as asv continuous fails on a regression).")
@click.option("-j", "--jobs", type=CHECKS["jobs"], help="Parallel compile jobs.")
@machine_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@options_of(CompareOptions)
def compare_cmd(opts: CompareOptions):
    """Build KERNEL's variants (compile once), run each --runs times, store every sample, and print
    a table with the layout noise on its own line.

    \b
    With --commits A,B: did B change the metric beyond layout noise?
      layoutbench compare minikernel --commits HEAD~1,HEAD --layouts random:8 --runs 2 --repo R
    Running the same command again resumes: stored runs are not run again.
    """
    from .. import compare, measure, report_text

    if opts.exit_code and not opts.commits:
        raise LayoutbenchError("--exit-code needs --commits A,B: it fails the command when B is slower than A")
    specs = layout.parse_specs(list(opts.layouts), opts.seed)
    labels = {n for n, _ in specs} | {layout.label(n, sd) for n, sd in specs}
    if opts.baseline is not None and opts.baseline not in labels:
        raise LayoutbenchError(f"--baseline {opts.baseline!r} is not one of the layouts compared: "
                               f"{', '.join(dict.fromkeys(n for n, _ in specs))}")
    names = [n.strip() for t in opts.target_names for n in t.split(",") if n.strip()]
    prof = profile.load(opts.kernel)
    view = compare.View(validate.metric_names(opts.metrics), opts.baseline)
    _check_targets(prof, names or [None], opts, view.metrics or ())
    metrics = tuple(m for m in view.metrics or () if m != "all")  # each checked at the first run too
    store = open_store(opts.store_path)
    if opts.commits:
        return _compare_commits(opts, metrics, prof, specs, names, store)
    co = source.resolve(prof, opts.rev, opts.repo, opts.subdir)
    request = measure.MeasureRequest(prof, co, specs, opts.runs, opts.mode, names[0] if names else None,
                                     tuple(opts.extra.split()) if opts.extra else (), opts.timeout,
                                     opts.retry_failed, opts.jobs, opts.overrides(), not opts.no_machine_check,
                                     metrics=metrics, spare=measure.spare_core)
    if len(names) > 1:
        multi = compare.run_many(request, names, store, view, progress_bar, say)
        if opts.as_json:
            out.print_json(json_text(multi.to_dict()))
        else:
            report_text.print_multi(out, multi)
        if multi.failed or not any(r.metrics for r in multi.reports):
            what = "; ".join(f["message"] for f in multi.failed) or "no target produced metrics"
            raise LayoutbenchError(f"{len(multi.failed)} of {len(names)} target(s) failed: {what}")
        return
    rep = compare.run(request, store, view, progress_bar, say)
    if opts.as_json:
        out.print_json(json_text(rep.to_dict()))
    else:
        report_text.print_compare(out, rep)
    if not rep.metrics:
        raise LayoutbenchError(f"no run of {prof.name} produced metrics; see the logs above "
                               f"(first: {rep.failures[0]['log'] if rep.failures else 'none'})")


def _check_targets(prof, names, opts: CompareOptions, metrics=()) -> None:
    """Make every target once before anything is built: unknown names, bad settings, a --pin of a
    CPU this machine lacks, a --metric the target cannot print are found now, not after every run."""
    from .. import targets

    for n in names:
        t = targets.make(prof, n, opts.timeout, dict(opts.overrides()))
        for m in metrics:
            targets.check_metric(prof, t, m)
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


def _compare_commits(opts: CompareOptions, metrics: tuple, prof, specs, names: list[str], store) -> None:
    """``compare --commits A,B``: the request is built here, the work is compare.compare_commits."""
    from .. import compare, measure

    revs = [r.strip() for r in opts.commits.split(",")]
    if len(revs) != 2 or not all(revs):
        raise LayoutbenchError(f"--commits {opts.commits!r} must name two commits: A,B")
    if opts.rev:
        raise LayoutbenchError("give either --commit or --commits A,B, not both")
    if len(names) > 1:
        raise LayoutbenchError("--commits compares on one target; give one --target")
    if opts.mode == "relink":
        raise LayoutbenchError("--commits pairs layouts by seed: use mode rerun or reboot, not relink")
    seeded = [(n, sd) for n, sd in specs if layout.get(n).seeded]
    if len(seeded) < 2:
        raise LayoutbenchError("--commits needs at least two seeded layouts to pair (e.g. --layouts random:8)")
    a, b = (source.resolve(prof, r, opts.repo, opts.subdir) for r in revs)
    request = measure.MeasureRequest(prof, a, seeded, opts.runs, opts.mode, names[0] if names else None,
                                     tuple(opts.extra.split()) if opts.extra else (), opts.timeout,
                                     opts.retry_failed, opts.jobs, metrics=metrics,
                                     spare=measure.spare_core)
    rep = compare.compare_commits(request, b, store, compare.View(validate.metric_names(metrics)),
                                  opts.min_effect, say)
    from ..verdict import Verdict

    v = Verdict.of_compare(rep.to_dict())
    if opts.as_json:
        out.print_json(json_text(v.to_json(exits=opts.exit_code)))
    else:
        out.print(compare.commits_text_of(v.data), markup=False)
    if not rep.metrics:
        raise LayoutbenchError(f"no run of {prof.name} produced metrics on both commits; see the logs above")
    if opts.exit_code:
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
@options_of(ResultsOptions)
def results_cmd(opts: ResultsOptions):
    """List or export what the store holds (samples, or runs with --runs).

    Every run carries the hash of its target configuration (column config: the target's
    kind and settings, the metrics prefix, the toolchain and the quirks); --configs shows them.
    """
    from .. import report_text

    store = open_store(opts.store_path, write=False)
    where = dict(kernel=opts.kernel, commit=opts.rev, layout=opts.layout, target=opts.target, config=opts.config)
    if opts.show_configs:
        used = {r["config"] for r in store.runs(**where)}
        rows = [{"config": h, "settings": json.dumps(c, sort_keys=True)} for h, c in store.configs(used).items()]
        rows += [{"config": "", "settings": "(runs stored before configurations were recorded)"}] if "" in used else []
    elif opts.show_runs:
        rows = store.runs(**where)
    else:
        rows = store.samples(**where, metric=opts.metric)
    report_text.print_rows(out, rows, opts.fmt)
