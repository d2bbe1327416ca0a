"""The ``layoutbench`` command's group and what its commands share: the one-line errors, the
consoles, the source, store and machine options.  Each job's commands live in a module of their
own (imported at the end, which registers them)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
from pathlib import Path

import click
from rich.console import Console

from .. import __version__, profile, source
from ..errors import LayoutbenchError

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)


class Group(click.Group):
    """Turns a LayoutbenchError anywhere into one line on stderr and a non-zero exit."""

    def invoke(self, ctx):
        import sqlite3

        from .. import procs
        from ..safety import one_line, redact_text

        procs.install_signal_handlers()
        try:
            return super().invoke(ctx)
        except LayoutbenchError as e:
            err.print(f"layoutbench: error: {one_line(redact_text(e))}", markup=False)
            sys.exit(e.exit_code)
        except sqlite3.Error as e:  # a query of an opened store failed: a damaged page, a full disk...
            from ..store import explain
            err.print(f"layoutbench: error: {explain(e, checkpoint=True)}", markup=False)
            sys.exit(2)
        except OSError as e:  # a file or program the command needed: one line, no traceback
            import errno
            where = f": {e.filename}" if getattr(e, "filename", None) else ""
            hint = "; free some space and run the same command again" if e.errno == errno.ENOSPC else ""
            err.print(f"layoutbench: error: {e.strerror or e}{where}{hint}", markup=False)
            sys.exit(2)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # click's own: usage errors and --help, printed by click
        except Exception as e:
            if type(e).__module__.startswith("psycopg"):
                from ..store import error_line
                err.print(f"layoutbench: error: {redact_text(error_line(e))}", markup=False)
                sys.exit(2)
            # a fault of layoutbench itself: never a traceback on the terminal, never the exit code of a
            # verdict; the traceback goes to a file, what was stored is kept
            err.print(f"layoutbench: internal error: {redact_text(_internal_error(e))}", markup=False)
            sys.exit(2)
        except (KeyboardInterrupt, procs.Terminated) as e:
            procs.kill_all()
            err.print("layoutbench: interrupted; what was stored is kept, run the same command to resume")
            sys.exit(128 + e.signum if isinstance(e, procs.Terminated) else 130)
        finally:
            procs.kill_all()


def _internal_error(e: BaseException) -> str:
    """One line for an unexpected exception: what it is, the file its traceback was written to (in the
    work folder; else the temporary folder), and that the same command resumes."""
    import tempfile
    import time
    import traceback

    from ..paths import workdir

    what = f"{type(e).__name__}: {e}".splitlines()[0][:200] if str(e) else type(e).__name__
    text = "".join(traceback.format_exception(e))
    name = f"internal-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    where = None
    for folder in (workdir() / "errors", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            with open(path, "x", encoding="utf-8") as f:
                f.write(f"layoutbench {__version__}: {' '.join(sys.argv)}\n{text}")
            where = path
            break
        except OSError:
            continue
    told = f"its traceback is in {where}" if where else "its traceback could not be written"
    return (f"{what} ({told}); what was stored is kept and the same command resumes; "
            "please report it with that file")


def json_text(value, **kw) -> str:
    """Strict JSON for --json: a non-finite number is null, never NaN or Infinity."""
    from ..metrics import json_safe

    return json.dumps(json_safe(value), allow_nan=False, **kw)


def say(msg: str) -> None:
    err.print(f"[dim]· {msg}[/dim]")


def _exit_epilog() -> str:
    from ..exits import exit_table_text

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

def options_of(cls):
    """A command whose options are one typed object: click parses each option (its type checks it at the
    edge, its default is the one default), this builds ``cls`` from them (a frozen dataclass with a field per
    parameter, named as click names it) and calls the command with it.  A parameter missing from ``cls``,
    or a field no parameter fills, is a TypeError at the first call (tests/test_structure.py calls none:
    it compares the fields with the parameters of every command)."""

    def wrap(f):
        @functools.wraps(f)
        def command(**parsed):
            return f(cls(**parsed))

        command.options_class = cls
        return command

    return wrap


@dataclasses.dataclass(frozen=True)
class SourceChoice:
    """--commit, --repo, --subdir: which tree of KERNEL (the working tree as it is when no --commit)."""

    kernel: str
    rev: str | None
    repo: str | None
    subdir: str | None

    def checkout(self):
        """The profile and the resolved checkout."""
        return checkout_of(self.kernel, self.rev, self.repo, self.subdir)


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


def open_store(path, write: bool = True, create: bool | None = None):
    """The store of --store; ``write``: the command writes to it (a read-only one is refused now);
    ``create`` (default: ``write``): a missing store is created (else refused in one line)."""
    from ..store import Store, default_path
    store = Store(path or os.environ.get("LAYOUTBENCH_STORE") or default_path(), create=write if create is None else create)
    return store.writable() if write else store


class Percent(click.ParamType):
    """A percent on the command line (``0.5`` or ``0.5%``), a fraction in the code: ``--min-effect`` (0 to
    below 50; ``positive``: above 0) and ``--confirm-share`` (``share``: above 0, at most 100).  A bad
    value is the one line of :mod:`layoutbench.validate` naming the option."""

    name = "percent"

    def __init__(self, positive: bool = False, share: bool = False):
        self.positive, self.share = positive, share

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, float):  # (a default already converted)
            return value
        from .. import validate

        if self.share:
            from ..decide import CONFIRM_SHARE

            return validate.confirm_share_fraction(value, CONFIRM_SHARE)

        return validate.min_effect_percent(value, positive=self.positive) / 100


class Checked(click.ParamType):
    """An option read as ``base`` reads it (click's int, float or text), then checked when it is parsed
    by ``check(option, value)`` (:mod:`layoutbench.validate`, :mod:`layoutbench.costs`, ...): a bad value
    is that one line naming the option, before anything is built or run.  The value is kept as read."""

    def __init__(self, name: str, base: click.ParamType, check):
        self.name, self.base, self.check = name, base, check

    def convert(self, value, param, ctx):
        read = self.base.convert(value, param, ctx)
        if read is not None:
            self.check(max(param.opts, key=len) if param is not None and param.opts else f"--{self.name}", read)
        return read


def _count(hi: int | None = None) -> Checked:
    from .. import validate

    return Checked("n", click.INT, lambda opt, v: validate.integer(opt, v, 1, hi))


def _layouts(opt: str, value: str) -> None:
    from .. import layout

    layout.parse_specs([value])


def _budget(opt: str, value: str) -> None:
    from ..costs import parse_budget

    parse_budget(value)


def _geometry(opt: str, value: str) -> None:
    if value.upper() != "L1I":
        from ..cacheview import parse_geometry

        parse_geometry(value)


def _checks():
    from .. import validate

    return {"seconds": Checked("seconds", click.FLOAT, validate.timeout),
            "seed": Checked("seed", click.INT, validate.seed),
            "runs": _count(validate.MAX_LAYOUTS), "jobs": _count(1024), "step": _count(),
            "confidence": Checked("level", click.FLOAT, lambda opt, v: validate.confidence(v)),
            "cpus": Checked("cpus", click.STRING, lambda opt, v: validate.pin(v)),
            "events": Checked("events", click.STRING, lambda opt, v: validate.perf_events(v)),
            "layouts": Checked("layouts", click.STRING, _layouts),
            "budget": Checked("budget", click.STRING, _budget),
            "geometry": Checked("geometry", click.STRING, _geometry)}


#: what an option is, checked at the edge: a timeout in seconds, a seed, a count of runs or layouts,
#: compile jobs, a history's step, a confidence, a CPU list, perf events, a layout list, a budget,
#: a cache geometry
CHECKS = _checks()


def store_option(f):
    return click.option("--store", "store_path", type=click.Path(dir_okay=False),
                        help="The results database: an SQLite file or a postgresql:// URL (its password is never shown)  "
                             "[env LAYOUTBENCH_STORE; default WORKDIR/results.sqlite]")(f)


def machine_options(f):
    """--perf, --perf-events, --pin, --no-machine-check: how a local or ssh target measures."""
    for opt in reversed([
        click.option("--perf", is_flag=True, help="Run the benchmark under `perf stat` and store each counter as a "
                     "metric perf.<event> (local and ssh targets); events this machine cannot count are named once."),
        click.option("--perf-events", metavar="LIST", type=CHECKS["events"], help="The events for --perf (default: cycles, instructions, "
                     "L1-icache-load-misses, iTLB-load-misses, branch-misses, task-clock, page-faults, context-switches); "
                     "a local target checks that perf accepts them before any run."),
        click.option("--pin", metavar="CPU", type=CHECKS["cpus"], help="Run the benchmark pinned to CPU (taskset -c CPU): a CPU list such "
                     "as 2, 0-3 or 1,3; checked against this machine's CPUs for a local target before any run."),
        click.option("--no-machine-check", is_flag=True, help="Do not check that the machine is quiet first."),
    ]):
        f = opt(f)
    return f


@dataclasses.dataclass(frozen=True)
class MachineChoice:
    """--perf, --perf-events, --pin, --no-machine-check (:func:`machine_options`)."""

    perf: bool
    perf_events: str | None
    pin: str | None
    no_machine_check: bool

    def overrides(self) -> tuple:
        """The target settings --perf/--perf-events/--pin set (they key the samples like the profile's)."""
        over = []
        if self.perf or self.perf_events:
            over.append(("perf", self.perf_events.split(",") if self.perf_events else True))
        if self.pin is not None:
            over.append(("pin", str(self.pin)))
        return tuple(over)


@contextlib.contextmanager
def progress_bar(total: int, what: str):
    """A progress bar on stderr; ``tick()`` advances it by one run."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=not err.is_terminal) as p:
        task = p.add_task(what, total=total)
        yield lambda: p.advance(task)


# each job's commands register themselves on ``main``
from . import bisecting, builds, comparing, histories, symdiffs  # noqa: E402,F401
