"""Job 5's commands: history (range sweeps and drill-down) and report (the static HTML site)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from .. import layout, measure, profile, source, validate
from ..errors import LayoutbenchError
from . import CHECKS, Percent, json_text, main, open_store, options_of, out, progress_bar, say, store_option

# -- history and report: range sweeps, drill-down, a static HTML site -----------------------------


@dataclass(frozen=True)
class HistoryOptions:
    """``layoutbench history``'s options."""

    kernel: str
    range_: str | None
    step: int | None
    every_commit: bool
    every: str | None
    refine: str | None
    summary: bool
    repo: str | None
    subdir: str | None
    layouts: tuple[str, ...]
    seed: int
    runs: int | None
    mode: str | None
    target_name: str | None
    extra: str | None
    timeout: float | None
    metrics: tuple[str, ...]
    min_effect: float | None
    jobs: int | None
    as_json: bool
    store_path: str | None

@main.command("history")
@click.argument("kernel")
@click.argument("range_", metavar="[A..B]", required=False)
@click.option("--step", type=CHECKS["step"], default=None, help="Measure every N-th commit of the range, N >= 1 (always A and B).")
@click.option("--every-commit", is_flag=True, help="Measure every commit of the range (same as --step 1).")
@click.option("--every", "every", metavar="INTERVAL", help="One commit per INTERVAL of commit date, longer than 0 (e.g. 1d, 12h, 1w).")
@click.option("--refine", metavar="X..Y", help="Measure the commits between two points of the stored history "
              "that it does not hold yet (drill-down); stored runs are reused.")
@click.option("--summary", is_flag=True, help="Print the stored history as plain text (no measuring without A..B).")
@click.option("--repo", type=click.Path(), help="A git repository holding the kernel tree (default: the profile's).")
@click.option("--subdir", help="The kernel tree inside --repo (default: its top).")
@click.option("--layouts", "layouts", multiple=True, type=CHECKS["layouts"], help="Layouts per commit  [default: sorted,aligned,random:4; "
              "a refine uses the history's]")
@click.option("--seed", type=CHECKS["seed"], default=1, show_default=True,
              help="First seed of the seeded layouts (every seed 0 to 2^63-1).")
@click.option("--runs", type=CHECKS["runs"], help="Repetitions per layout  [default: 2; 1 on a target whose counts are exact: "
              "cachegrind, qemu-icache; a refine uses the history's]")
@click.option("--mode", type=click.Choice(measure.MODES), help="As in compare  [default: rerun]")
@click.option("--target", "target_name", help="Where to run (default: the profile's default target).")
@click.option("--args", "extra", help="Extra words for the kernel command line / program arguments.")
@click.option("--timeout", type=CHECKS["seconds"], help="Seconds before a run is killed (> 0, at most a week; default: the target's).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) for the summary (default: all); one the target "
              "cannot print is refused before anything is built.")
@click.option("--min-effect", type=Percent(), help="The smallest change that counts as a code change, in percent (0.5 means 0.5%; a % "
              "sign is accepted; 0 to below 50); kept with the history for --summary and report  [default: the one "
              f"the history was swept with, else {validate.DEFAULT_MIN_EFFECT_PERCENT}]")
@click.option("-j", "--jobs", type=CHECKS["jobs"], help="Parallel compile jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print what was measured and the history as JSON.")
@store_option
@options_of(HistoryOptions)
def history_cmd(opts: HistoryOptions):
    """Build and measure KERNEL at the commits of A..B (A included) in several layouts, storing
    every sample; then print the history and the changes it found (code change or layout noise).

    \b
    layoutbench history minikernel v1..v2 --step 4 --target cachegrind
    layoutbench history minikernel --refine c0ffee..badbad      # the commits in between
    layoutbench history minikernel --summary                    # plain text, for e-mail
    Killed or interrupted, the same command resumes: stored runs are not run again.
    """
    from .. import history

    prof = profile.load(opts.kernel)
    store = open_store(opts.store_path, write=bool(opts.range_ or opts.refine))  # a sweep stores its runs
    step, every, range_, refine, repo, subdir = opts.step, opts.every, opts.range_, opts.refine, opts.repo, opts.subdir
    min_effect = opts.min_effect
    if every is not None and history.parse_interval(every) <= 0:
        raise LayoutbenchError(f"--every {every!r} must be longer than 0, e.g. 1d or 12h")
    if sum(bool(x) for x in (step, opts.every_commit, every)) > 1:
        raise LayoutbenchError("give one of --step, --every-commit and --every")
    if range_ and refine:
        raise LayoutbenchError("give either A..B (a sweep) or --refine X..Y, not both")
    metrics = validate.metric_names(opts.metrics) or ()
    sweep = history.SweepOptions(
        spec=range_, repo=repo, subdir=subdir,
        specs=tuple(layout.parse_specs(list(opts.layouts), opts.seed)) if opts.layouts else None, min_effect=min_effect,
        runs=opts.runs, mode=opts.mode, target=opts.target_name,
        extra=tuple(opts.extra.split()) if opts.extra is not None else None, timeout=opts.timeout, jobs=opts.jobs,
        metrics=metrics)
    bar = None if opts.as_json else progress_bar
    outcome = None
    if refine:
        outcome = history.refine(prof, store, refine, sweep, step or 1, bar, say)
    elif range_:
        commits = history.full_range(prof, range_, repo, subdir)
        repo_path, _ = source.repo_for(prof, repo, subdir)
        dates = history.commit_dates(repo_path, commits) if every else None
        points = history.choose(commits, 1 if opts.every_commit else (step or 1),
                                history.parse_interval(every) if every else None, dates)
        outcome = history.sweep(prof, store, points, sweep, None, bar, say)
    elif not opts.summary:
        raise LayoutbenchError("give a range A..B, --refine X..Y or --summary")
    series = outcome.series if outcome else history.load_series(store, prof.name,
                                                                 source.repo_for(prof, repo, subdir)[0])
    h = history.analyse(store, series, prof, list(metrics) or None, min_effect=min_effect)
    if opts.as_json:
        out.print_json(json_text({"sweep": outcome.to_dict() if outcome else None, "history": h.to_dict()},
                                  default=str))
        return
    if outcome:
        say(f"{len(outcome.measured)} point(s) probed ({len(outcome.new)} new): {outcome.ran} run(s) now, "
            f"{outcome.skipped} already stored, "
            + (f"{outcome.copied} not run again (an image file already run, counts that repeat), " if outcome.copied
               else "") + f"{outcome.failed_runs} failed"
            + (f"; {len(outcome.build_failed)} did not build" if outcome.build_failed else ""))
    out.print(history.summary_text(h, metrics[0] if len(metrics) == 1 else None), markup=False, end="")


@main.command("report")
@click.argument("kernel", required=False)
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False), default="layoutbench-report",
              show_default=True, help="The folder to write the site as: a new or empty one, or one an earlier report "
              "wrote (it is replaced whole; a file added to it since is named and the report refused); any other "
              "folder, a path through a symbolic link, /, the home folder and the current folder are refused.")
@click.option("--repo", type=click.Path(), help="Which history (default: the only one of KERNEL in the store).")
@click.option("--metric", "metrics", multiple=True, help="Metric(s) to plot (default: all).")
@click.option("--min-effect", type=Percent(), help="The smallest change that counts as a code change, in percent (0.5 means 0.5%; "
              "a % sign is accepted; 0 to below 50)  [default: the one the history was swept with, else "
              f"{validate.DEFAULT_MIN_EFFECT_PERCENT}]")
@store_option
def report_cmd(kernel, outdir, repo, metrics, min_effect, store_path):
    """Write the stored history as a static HTML site (SVG plots, a page per commit, the detected
    changes) into a directory that works from file:// and any web server, without network.
    """
    from .. import report

    metrics = validate.metric_names(metrics) or ()
    if kernel and profile.is_path(kernel):  # a profile's folder or kernel.toml: its history is stored by name
        kernel = profile.load(kernel).name
    store = open_store(store_path, write=False)
    index = report.write_report(store, outdir, kernel=kernel, repo=repo, metrics=list(metrics) or None,
                                min_effect=min_effect, say=say)
    out.print(f"wrote {index}", markup=False)
