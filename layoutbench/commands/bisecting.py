"""Job 4's commands: the layout-aware bisection, its git-shaped verbs, and judge."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

import click

from .. import layout, measure, profile, source, validate
from ..errors import LayoutbenchError
from . import CHECKS, EXIT_EPILOG, Percent, json_text, main, open_store, options_of, out, say, store_option

# -- job 5: bisection, judge, quirks ---------------------------------------------------------------

class BisectGroup(click.Group):
    """``layoutbench bisect KERNEL GOOD..BAD`` runs a bisection; the git-shaped verbs are subcommands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@dataclass(frozen=True, kw_only=True)
class BisectChoice:
    """The options of :func:`bisect_options`: None where not given (the bisection's stored setting, or
    the default, applies)."""

    repo: str | None = None
    subdir: str | None = None
    metric: str | None = None
    target: str | None = None
    args: str | None = None
    mode: str | None = None
    layout: str | None = None
    layouts: str | None = None
    max_layouts: int | None = None
    runs: int | None = None
    max_runs: int | None = None
    seed: int | None = None
    confidence: float | None = None
    min_effect: float | None = None
    all_changes: bool | None = None
    first_only: bool | None = None
    thorough: bool | None = None
    paired: bool | None = None
    prove_null: bool | None = None
    confirm_share: float | None = None
    budget: str | None = None
    store_path: str | None = None


@dataclass(frozen=True, kw_only=True)
class BisectRunOptions(BisectChoice):
    """``layoutbench bisect run``'s options."""

    kernel: str
    span: str | None
    shadow: bool | None
    as_json: bool
    timeout: float | None
    plan_only: bool
    exit_code: bool


@dataclass(frozen=True, kw_only=True)
class BisectStartOptions(BisectChoice):
    """``layoutbench bisect start``'s options."""

    kernel: str
    bad: str | None
    good: str | None
    shadow: bool | None


@dataclass(frozen=True, kw_only=True)
class JudgeOptions(BisectChoice):
    """``layoutbench judge``'s options."""

    kernel: str
    rev: str | None
    good: str | None
    bad: str | None
    as_json: bool


def bisect_options(f):
    """The measurement settings of a bisection (unset: the bisection's stored ones, or the defaults)."""
    opts = [
        click.option("--repo", type=click.Path(), help="A git repository holding the kernel tree (default: the profile's)."),
        click.option("--subdir", help="The kernel tree inside --repo (default: its top)."),
        click.option("--metric", help="The metric to bisect (default: the target's: cg_cost on cachegrind, ic_cost on "
                     "qemu-icache, else the profile's); one the target cannot print is refused before anything is "
                     "built, one the first run did not print stops it."),
        click.option("--target", "target", help="Where to run (a [targets] entry of the profile); a,b,c: a farm: each "
                     "round judges up to 3 probes at once, one per machine, each against GOOD and BAD measured there; "
                     "a labgrid-places target: one probe per place, each place reserved through the coordinator."),
        click.option("--args", "args", help="Extra program arguments / kernel command line words."),
        click.option("--mode", type=click.Choice(measure.SAME_IMAGE_MODES), help="How repetitions run  [default: rerun]"),
        click.option("--layout", help="The seeded layout of the K layouts: random (object order), shuffled (object "
                     "and function order) or padded  [default: random]"),
        click.option("--layouts", metavar="K|NAME:K", help="K seeded layouts per probe, the same seeds on every commit; "
                     "NAME:K (e.g. random:8, the form compare takes) also sets --layout  [default: 4]"),
        click.option("--max-layouts", type=CHECKS["runs"], help="Budget: the last look's layouts (K, 1.5K, ... up to this)  "
                     "[default: 256; spent only while no look decides]"),
        click.option("--runs", type=CHECKS["runs"], help="R runs per layout  [default: 1; chosen from the noise split where a "
                     "new layout costs more than a run: the target's layout_cost and run_cost, else measured]"),
        click.option("--max-runs", type=CHECKS["runs"], help="Kept for scripts and bisect logs: the tests add layouts, never runs (the runs per layout are --runs, or chosen from the costs)  [default: 1]"),
        click.option("--seed", type=CHECKS["seed"], help="First seed of the K layouts, 0 to 2^63-1  [default: 1]"),
        click.option("--confidence", type=CHECKS["confidence"], help="1 - the error budget of the whole bisection, shared over its tests and looks  [default: 0.95]"),
        click.option("--min-effect", type=Percent(positive=True), help="The smallest change that counts as a change, in percent: 0.5 means 0.5% "
                     "(a % sign is accepted; above 0 and below 50: a larger value is refused as a unit mistake)  "
                     f"[default: {validate.DEFAULT_MIN_EFFECT_PERCENT}]"),
        click.option("--all-changes", "all_changes", is_flag=True, default=None,
                     help="Kept for old scripts: every change point is found by default now."),
        click.option("--first-only", "first_only", is_flag=True, default=None,
                     help="Stop after the first confirmed change point (default: every change point): the cheap "
                     "search for one culprit (a single large step in about half the runs; docs/how-it-decides.md)."),
        click.option("--thorough", "thorough", is_flag=True, default=None,
                     help="Search the ranges beside a found step further for a second, smaller step (one of 2x "
                     "--min-effect beside a larger one: both steps named in 76 of 80 simulated ranges instead of 74; "
                     "a single large step then costs about 1.3x the runs: 78.4 against 59.3; tests/test_calibration.py)."),
        click.option("--paired/--no-paired", "paired", default=None,
                     help="The endpoints and the confirmation also read a seed-paired test beside the pooled one, "
                     "each at half the level: a 1σL step in 0.5-0.7x the runs where neighbouring commits keep most "
                     "of a seed's layout, up to 6% more runs where every commit redraws it, and 15-26% more on "
                     "layout-only shifts below --min-effect at high correlation (docs/how-it-decides.md, Figure 1b).  "
                     "[default: the profile's [bisect] paired, else off]"),
        click.option("--prove-null", "prove_null", is_flag=True, default=None,
                     help="When no change is shown, go on (up to --max-layouts) until a change of --min-effect "
                     "is ruled out: 'within layout noise' is said only then.  Expensive."),
        click.option("--confirm-share", "confirm_share", type=Percent(share=True),
                     help="The most of the bisection's runs a culprit's confirmation may take: it stops by "
                     "PERCENT/(100-PERCENT) times the runs spent before it (at least 80 fresh layouts a side), and a "
                     "step not shown beyond --min-effect by then is 'uncertain', with what was shown; 100: no "
                     "bound  [default: 90]"),
        click.option("--budget", metavar="RUNS|DURATION", type=CHECKS["budget"], help="The most the bisection may spend: runs (500) or a "
                     "duration (8h, 90m, 2h30m), turned into runs at the time a run takes (the target's run_cost and "
                     "layout_cost, else the medians of the stored links and runs, else the first runs); at the end the best verdict it has "
                     "(candidates with probabilities, or 'not decided at this budget'); none: no cap (removes the budget of "
                     "a bisection in progress).  Every run this command measures counts; runs below the endpoints' first "
                     "look (2 x K layouts x R runs, 2 runs a layout while R is chosen from the costs) are refused before "
                     "anything runs (a duration: as soon as it is turned into runs, the runs measured so far kept); a "
                     "finished bisection keeps its verdict whatever budget is given later."),
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


def bisect_settings(kernel: str, choice: BisectChoice, shadow: bool | None = None):
    """The bisection settings of a command's options (those not given keep the stored ones or the defaults)."""
    from ..bisect import Settings
    from ..costs import parse_budget

    names = ("repo", "subdir", "metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs",
             "max_runs", "seed", "confidence", "min_effect", "shadow", "all_changes", "first_only", "prove_null",
             "thorough", "confirm_share", "paired")
    given = {f.name: getattr(choice, f.name) for f in dataclasses.fields(BisectChoice)}
    given.update(shadow=shadow, **_layouts_count(choice.layouts, choice.layout))
    if given["layouts"] is not None:  # K of --layouts K|NAME:K (the other options: CHECKS)
        validate.integer("--layouts", given["layouts"], 1, validate.MAX_LAYOUTS)
    budget = parse_budget(choice.budget)
    if choice.metric is not None and len(validate.metric_names(choice.metric)) != 1:
        raise LayoutbenchError(f"--metric {choice.metric!r}: a bisection follows one metric; give one name")
    s = Settings(kernel=kernel, **{k: given[k] for k in names if given[k] is not None})
    s.given = tuple(k for k in (*names, "budget") if given[k] is not None)
    s.runs_auto = choice.runs is None
    if budget is not None:
        s.budget, s.budget_time = budget.runs, budget.seconds
    if given["layouts"] is not None and choice.max_layouts is None:
        s.max_layouts = max(s.max_layouts, given["layouts"])
    for cap, first, what in (("max_layouts", "layouts", "layouts"), ("max_runs", "runs", "runs per layout")):
        if given[cap] is not None and getattr(s, cap) < getattr(s, first):  # never raised behind the user's back
            default = "" if given[first] is not None else " (its default)"
            flag = f"--{cap.replace('_', '-')}"
            raise LayoutbenchError(f"{flag} {getattr(s, cap)} is below --{first} {getattr(s, first)}{default}: the last "
                                   f"look cannot have fewer {what} than the first; give {flag} {getattr(s, first)} or "
                                   f"more, or leave it out")
    return s


@main.group("bisect", cls=BisectGroup)
def bisect_grp():
    """Find the commit whose code changed a metric, never one that only moved code.

    \b
      layoutbench bisect KERNEL GOOD..BAD [--metric NAME --target T --layouts K --runs R]
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
@click.option("--timeout", type=CHECKS["seconds"], help="Seconds before a run is killed (> 0, at most a week; default: the "
              "target's); a commit whose runs all fail is skipped.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Measure the endpoints' first look and print what the bisection will likely cost (runs "
              "in every phase: the median of bisections simulated at the noise and change measured; when the "
              "first look cannot price it, a step near --min-effect costing several times one far from it, and "
              "no --budget is given, the endpoints' test goes on to its decision first, its runs kept for the "
              "bisection; "
              "and time at the time a run takes; the runs per layout the layout and run costs make cheapest, "
              "each cost stated or measured; whether it fits --budget; a warning when a step of twice "
              "--min-effect is likely missed at the noise measured, with what would fix it).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="Exit with the verdict's code: 0 no change shown, 1 a first bad commit, 3 undecided (uncertain, "
              "skipped commits), 4 the budget ended first (the table below); without it 0 whenever a verdict is printed.")
@options_of(BisectRunOptions)
def bisect_run_cmd(opts: BisectRunOptions):
    """Bisect GOOD..BAD (or continue the bisection in progress) and print the verdict."""
    from .. import bisect
    from ..verdict import Verdict

    good = bad = None
    if opts.span:
        good, bad = source.split_range(opts.span, "GOOD..BAD")
    prof = profile.load(opts.kernel)
    settings = bisect_settings(opts.kernel, opts, opts.shadow)
    v = Verdict.of_bisection(bisect.run(open_store(opts.store_path), prof, settings, good, bad, say,
                                        plan_only=opts.plan_only, timeout=opts.timeout))
    if opts.as_json:
        out.print_json(json_text(v.to_json(exits=opts.exit_code), default=str))
    else:
        out.print(v.text(), markup=False)
    if opts.exit_code:
        sys.exit(v.exit_code())


@bisect_grp.command("start")
@click.argument("kernel")
@click.argument("bad", required=False)
@click.argument("good", required=False)
@bisect_options
@click.option("--shadow/--no-shadow", default=None, help="Also run the single-layout bisection.")
@options_of(BisectStartOptions)
def bisect_start_cmd(opts: BisectStartOptions):
    """Begin a bisection of KERNEL (as git: BAD first, then GOOD; or mark them later)."""
    from .. import bisect

    kernel = opts.kernel
    prof = profile.load(kernel)
    b = bisect.start(open_store(opts.store_path), prof, bisect_settings(kernel, opts, opts.shadow), opts.bad, opts.good)
    out.print(f"bisection of {kernel} started (metric {b.s.metric}); "
              + ("run `layoutbench bisect " + kernel + "` to bisect" if b.good and b.bad
                 else "mark a good and a bad commit"), markup=False)


def _bisect_verb(verb):
    @click.argument("revs", nargs=-1)
    @click.option("--kernel", help="Which bisection (default: the latest started).")
    @click.option("--repo", type=click.Path())
    @click.option("--subdir")
    @store_option
    @click.option("--segment", metavar="A..B", help="The mark belongs to the search of the range A..B beside a "
                  "found step (as `bisect log` writes such marks, so that `bisect replay` restores them).")
    def cmd(revs, kernel, repo, subdir, store_path, segment, why=""):
        from .. import bisect

        store = open_store(store_path, create=False)  # a mark needs a bisection in a store
        prof = profile.load(kernel) if kernel else None
        b = bisect.current(store, kernel, repo, subdir, prof)
        prof = prof or profile.load(b.s.kernel)
        shas = bisect.mark(store, prof, b, verb, list(revs) or ["HEAD"], why, segment)
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
    from .. import bisect

    kernel = _kernel_of(kernel_arg, kernel)
    b = bisect.current(open_store(store_path, write=False), kernel, repo, subdir,
                       profile.load(kernel) if kernel else None)
    click.echo(b.text(), nl=False)


@bisect_grp.command("replay")
@click.argument("logfile", metavar="LOGFILE|-")
@store_option
def bisect_replay_cmd(logfile, store_path):
    """Start again from a log printed by `bisect log` (its start line and marks; -: read from stdin)."""
    from .. import bisect
    from ..safety import read_regular

    data = sys.stdin.buffer.read() if logfile == "-" else read_regular(logfile, "a bisection log")
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise LayoutbenchError(f"{logfile}: not text (byte {e.start} is not UTF-8); give a log printed by "
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
    from .. import bisect

    kernel = _kernel_of(kernel_arg, kernel)
    b = bisect.current(open_store(store_path, create=False), kernel, repo, subdir,
                       profile.load(kernel) if kernel else None)
    b.reset()
    out.print(f"bisection of {b.s.kernel} reset", markup=False)


@main.command("judge", epilog=EXIT_EPILOG)
@click.argument("kernel")
@click.option("--commit", "rev", metavar="REV", help="The commit to judge (default: the working tree as it is).")
@click.option("--good", help="The GOOD reference commit (default: the bisection in progress).")
@click.option("--bad", help="The BAD reference commit (default: the bisection in progress).")
@bisect_options
@click.option("--json", "as_json", is_flag=True, help="Print the judgement as JSON.")
@options_of(JudgeOptions)
def judge_cmd(opts: JudgeOptions):
    """Measure the checkout over the K layouts against GOOD and BAD; exit 0 (like GOOD), 1 (like BAD)
    or 125 (does not build, or uncertain): a `git bisect run` script.  Errors exit 128, which stops
    `git bisect run` instead of marking a commit bad.
    """
    from .. import bisect

    try:
        prof = profile.load(opts.kernel)
        s = bisect_settings(opts.kernel, opts, shadow=False)
        _, j, details = bisect.judge(open_store(opts.store_path), prof, s, opts.rev, opts.good, opts.bad, say)
    except bisect.Abort:
        raise
    except LayoutbenchError as e:
        raise bisect.Abort(str(e)) from None
    from ..verdict import Verdict

    v = Verdict.of_judgement({**details, "describe": j.describe()}, _judged(prof, details["commit"], opts))
    if opts.as_json:
        out.print_json(json_text(details, default=str))
    else:
        out.print(v.text(), markup=False)
    sys.exit(v.exit_code())


def _judged(prof, commit: str, opts: JudgeOptions) -> str:
    """The commit judge measured, as git names it: the working tree is named by its HEAD."""
    if commit != source.WORKTREE:
        return commit[:12]
    try:
        head = source.resolve(prof, "HEAD", opts.repo, opts.subdir).commit
    except LayoutbenchError:
        return "the working tree"
    return f"{head[:12]} (the working tree at HEAD)"
