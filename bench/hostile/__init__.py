"""How a hostile input is run and judged (shared by the case modules :mod:`.cli`, :mod:`.elf`,
:mod:`.owned`; ``python3 -m bench.hostile`` runs them all and prints the counts).

A case is a callable that runs one input and returns one of :data:`OUTCOMES`:

- ``clean``: the command refused it with exactly one error line (``layoutbench: error: ...`` or
  click's ``Error: ...``), a non-zero exit and no traceback or warning, or it did the right thing
  (a case that expects success checks what it produced);
- ``traceback``: a Python traceback, a warning, or an unclean refusal (no error line, several);
- ``wrong-success``: exit 0 (or a wrong result) where the input had to be refused;
- ``hang``: still running after the case's timeout (killed);
- ``leak``: a secret given to the command (a store's password) appears in what it printed, or a
  process it started outlives it;
- ``outside-write``: the command created, replaced or deleted a file or folder it does not own (a
  store where only one was read, a ``-journal`` beside a device, a report through a link, the
  current folder, a user's file in an output folder): :func:`changes` finds them;
- ``verdict-lost``: a finished verdict the store held is gone or replaced by a weaker one.

:func:`cli` runs the command in this process (``layoutbench.cli.main`` as ``python -m
layoutbench.cli`` would, with its own environment and folder; a SIGALRM ends a hang), so that
hundreds of inputs take seconds; :func:`proc` runs it as a real process where signals, kill -9
or mounts are part of the case.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import traceback
from pathlib import Path

OUTCOMES = ("clean", "traceback", "wrong-success", "hang", "leak", "outside-write", "verdict-lost")
ROOT = Path(__file__).resolve().parents[2]
_ERROR_LINE = re.compile(r"^(layoutbench: error: |Error: )")
#: the last unclean outcome's details (command, exit, stderr), for the test's failure message
last_detail: dict[str, str] = {}


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def judge(code: int | None, out: str, err: str, expect_ok: bool = False, check=None, secrets=()) -> str:
    """The outcome of a finished command (see the module's docstring); ``secrets``: texts that must
    appear nowhere in its output."""
    if any(s in out or s in err for s in secrets):
        return "leak"
    if "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out:
        return "traceback"
    if "layoutbench: internal error:" in err:  # an unexpected exception, its traceback in a file
        return "traceback"
    if re.search(r"\b(\w+Warning|RuntimeWarning)\b:", err):
        return "traceback"
    if expect_ok:
        if code != 0:
            return "traceback"
        return "clean" if check is None or check(out, err) else "wrong-success"
    if code == 0:
        return "wrong-success"
    errors = [ln for ln in err.splitlines() if _ERROR_LINE.match(ln)]
    if len(errors) != 1:
        return "traceback"
    return "clean" if check is None or check(out, err) else "wrong-success"


def cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 60, expect_ok: bool = False,
        check=None, stdin: str = "", secrets=()) -> str:
    """Run ``layoutbench ARGS`` in this process and judge it."""
    code, out, err, outcome = capture(*args, env=env, cwd=cwd, timeout=timeout, stdin=stdin)
    outcome = outcome or judge(code, out, err, expect_ok, check, secrets)
    if outcome != "clean" or os.environ.get("HOSTILE_VERBOSE"):
        last_detail.update(cmd=" ".join(args), code=str(code), stdout=out[-1500:], stderr=err[-3000:])
    return outcome


def capture(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 60, stdin: str = ""
            ) -> tuple[int | None, str, str, str | None]:
    """Run ``layoutbench ARGS`` in this process: its exit code, stdout, stderr, and ``hang`` or
    ``traceback`` when it did not finish as a command does (else None)."""
    from layoutbench import cli as lbcli
    from layoutbench import procs

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved = {s: signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT)}
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    outcome = None
    try:
        for k, v in (env or {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        if cwd is not None:
            os.chdir(cwd)
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _stdin(stdin):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("always")  # what a user sees (numpy's RuntimeWarning...)
                warnings.simplefilter("ignore", ResourceWarning)  # as a process does by default
                try:
                    lbcli.main.main(args=list(args), prog_name="layoutbench", standalone_mode=True)
                    code = 0
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except _Hang:
        outcome = "hang"
    except BaseException:  # noqa: BLE001 - anything else is a traceback the user would have seen
        err.write(traceback.format_exc())
        outcome = "traceback"
    finally:
        signal.alarm(0)
        procs.kill_all()
        for s, h in saved.items():
            signal.signal(s, h)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue(), outcome


@contextlib.contextmanager
def _stdin(text: str):
    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved


def proc(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 120,
         expect_ok: bool = False, check=None, prefix: tuple[str, ...] = (), raw: bool = False) -> str:
    """Run ``layoutbench ARGS`` as a process (``prefix``: e.g. ``unshare -m ...``; ``raw``: ARGS is the
    whole command after the prefix) and judge it."""
    e = {**os.environ, **(env or {})}
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    cmd = [*prefix, *args] if raw else [*prefix, sys.executable, "-m", "layoutbench.cli", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, cwd=cwd or ROOT,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "hang"
    outcome = judge(p.returncode, out, err, expect_ok, check)
    if outcome != "clean" or os.environ.get("HOSTILE_VERBOSE"):
        last_detail.update(cmd=" ".join(cmd), code=str(p.returncode), stdout=out[-1500:], stderr=err[-3000:])
    return outcome


def tree(*roots: Path) -> dict[str, tuple]:
    """Every entry under ``roots`` (links not followed): path → (inode, kind, size, mtime)."""
    seen: dict[str, tuple] = {}
    for root in roots:
        root = Path(root)
        todo = [root] if os.path.lexists(root) else []
        while todo:
            p = todo.pop()
            try:
                st = os.lstat(p)
            except OSError:
                continue
            seen[str(p)] = (st.st_ino, st.st_mode >> 12, st.st_size, st.st_mtime_ns)
            if os.path.isdir(p) and not os.path.islink(p):
                try:
                    todo.extend(p / n for n in os.listdir(p))
                except OSError:
                    pass
    return seen


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """What :func:`tree` shows created, deleted or replaced (a new inode, kind or size)."""
    out = [f"created {p}" for p in after if p not in before] + [f"deleted {p}" for p in before if p not in after]
    out += [f"replaced {p}" for p in before if p in after and before[p][:2] != after[p][:2]]
    out += [f"changed {p}" for p in before if p in after and before[p][:2] == after[p][:2]
            and before[p][1] != 4 and before[p][2:] != after[p][2:]]  # a file written (not a folder's mtime)
    return sorted(out)


def alive(pid: int) -> bool:
    """A process that still runs (a zombie waiting for its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def watchdog_of(pid: int, wait: float = 60.0) -> int | None:
    """The watchdog process layoutbench ``pid`` started with its first child (None: none within ``wait`` s)."""
    import time

    from layoutbench import procs

    t0 = time.monotonic()
    while time.monotonic() - t0 < wait:
        for d in os.listdir("/proc"):
            try:
                if d.isdigit() and int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid \
                        and procs.WATCHDOG_TAG.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    return int(d)
            except (OSError, IndexError, ValueError):
                continue
        time.sleep(0.05)
    return None


def survives(pid: int, wait: float = 30.0) -> bool:
    """``pid`` still runs ``wait`` seconds from now (a SIGKILL takes a moment to land, longer on a
    loaded machine; a dead process returns at once, so the wait costs nothing when it passes)."""
    import time

    t0 = time.monotonic()
    while alive(pid):
        if time.monotonic() - t0 > wait:
            return True
        time.sleep(0.05)
    return False


def run_all(modules, tmp: Path) -> dict[str, dict]:
    """Run every case of every module: module name → counts and the unclean cases."""
    report: dict[str, dict] = {}
    for mod in modules:
        name = mod.__name__.rsplit(".", 1)[-1].removesuffix("_cases")
        d = tmp / name
        d.mkdir(parents=True, exist_ok=True)
        counts = {k: 0 for k in OUTCOMES}
        bad = []
        for label, case in mod.cases(d):
            last_detail.clear()
            try:
                outcome = case()
            except BaseException as e:  # noqa: BLE001 - the case itself broke: count it, show why
                outcome = "traceback"
                last_detail.update(cmd=label, stderr=traceback.format_exc()[-2000:])
                if isinstance(e, KeyboardInterrupt):
                    raise
            if outcome not in OUTCOMES:
                outcome = "traceback"
            counts[outcome] += 1
            if outcome != "clean":
                bad.append({"case": label, "outcome": outcome, **last_detail})
        report[name] = {"tried": sum(counts.values()), **counts, "bad": bad}
    return report
