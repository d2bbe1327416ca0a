"""Child processes that die with the command: every benchmark and build runs in its own process
group (``start_new_session``), and the whole group is killed when its time is up, when the
command is interrupted (Ctrl-C, SIGTERM, SIGHUP: a closed terminal or ssh session) and when it
ends (a benchmark's background children).

Also when layoutbench is killed outright (``kill -9``), in two ways: each child gets
``PR_SET_PDEATHSIG`` (SIGKILL once the thread that started it ends; :func:`start` and
:func:`finish` run in one thread, which outlives the child), and a small watchdog process,
started with the first child, holds a pipe from layoutbench and kills every group still
registered once that pipe closes, whatever ended layoutbench.  What survives both (the watchdog
killed too) is found by :class:`RunLock`: the lock of a target's runs names the process group
running, and the next run of that target stops it before it measures.

Only groups started here are killed, by their id (checked against the start time of their leader).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .errors import LayoutbenchError

_lock = threading.Lock()
_groups: set[int] = set()  #: process groups of children still running


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached layoutbench: unwinds like Ctrl-C (not an Exception: nothing
    swallows it); ``signum`` says which (the exit status is 128 + it)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = int(signum)


_starting = False  #: the main thread is between fork and registering the new group
_pending: BaseException | None = None  #: an interrupt that arrived meanwhile


def _on_signal(signum, frame):
    global _pending
    exc = KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)
    if _starting:  # raised once the child's group is registered, so that it is killed too
        _pending = exc
        return
    raise exc


def install_signal_handlers() -> None:
    """Ctrl-C, SIGTERM and SIGHUP unwind the command (only in the main thread); one that arrives
    while a child is being started waits until its process group is registered (and so is killed).
    A signal the command was started with ignored stays ignored, as the shell meant it: under
    ``nohup`` a closed terminal does not end a bisection, nor Ctrl-C a job started with ``&``."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _on_signal)


def killpg(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (gone already: nothing to do)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def others_running(mine: int, reads: int = 3, loadavg: str = "/proc/loadavg") -> int:
    """How many threads other than ``mine`` (this command's own benchmark processes running, one thread
    each) and the reader itself are runnable now: ``loadavg``'s count of runnable threads, the least
    of ``reads`` reads 50 ms apart (a short-lived process in one read is not work that stays)."""
    least = None
    for i in range(reads):
        if i:
            time.sleep(0.05)
        try:
            with open(loadavg) as f:
                runnable = int(f.read().split()[3].split("/")[0])
        except (OSError, IndexError, ValueError):
            return 0  # not Linux's /proc: nothing known of other work
        least = runnable if least is None else min(least, runnable)
    return max(0, least - 1 - mine)


def kill_all() -> None:
    """Kill every process group still registered (an interrupt, the end of the command)."""
    with _lock:
        groups = list(_groups)
        _groups.clear()
        for g in groups:
            _tell_watchdog(f"- {g}")
    for g in groups:
        killpg(g)


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, /proc/PID/stat field 22); None: no such process.
    With the pid it names one process: a pid used again later has another start time."""
    st = _stat(pid)
    return st[19] if st else None


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, ...)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


# -- dying with layoutbench ------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up now: the child only calls it
except (OSError, AttributeError):  # not Linux: the watchdog alone
    _prctl = None


#: the parent-death signal set without Python in the child: ``setpriv`` (util-linux) sets it and
#: execs a shell that ends at once when the parent is already gone, and execs the command.  A
#: ``preexec_fn`` runs Python between fork and exec, which is unsafe beside other threads (a
#: labgrid farm's gRPC threads: the child crashed with SIGSEGV before its build started).
_SETPRIV = shutil.which("setpriv")
_EXEC_IF_PARENT = 'if [ "$PPID" != "$0" ]; then kill -9 $$; fi; exec "$@"'


def _dying_with_parent(cmd, kw: dict, parent: int):
    """``cmd`` and ``kw`` for Popen such that the child gets SIGKILL when the thread that starts
    it ends (PR_SET_PDEATHSIG), and at once when ``parent`` is gone before it runs."""
    if _SETPRIV is None:
        return cmd, {**kw, "preexec_fn": lambda: _die_with_parent(parent)}
    kw = dict(kw)
    if kw.pop("shell", False):
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else ["/bin/sh", "-c", *cmd]
    else:
        argv = [cmd] if isinstance(cmd, (str, bytes, os.PathLike)) else list(cmd)
    return [_SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _EXEC_IF_PARENT, str(parent), *argv], kw


def _die_with_parent(parent: int) -> None:
    """In the child between fork and exec: SIGKILL when the parent (thread) ends, and at once when
    it ended before this line (then the child already belongs to another process)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


#: the watchdog: reads ``+ PGID START`` / ``- PGID`` lines; at end of input (layoutbench ended,
#: however) it kills each group still registered whose leader is gone or still the one registered
WATCHDOG = r"""
import os, signal, sys
groups = {}
for line in sys.stdin:
    w = line.split()
    if len(w) == 3 and w[0] == "+":
        groups[int(w[1])] = w[2]
    elif len(w) == 2 and w[0] == "-":
        groups.pop(int(w[1]), None)
for g, start in groups.items():
    try:
        with open(f"/proc/{g}/stat") as f:
            now = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        now = start  # the leader is gone; while members remain, no new process gets its id
    if now == start:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
"""
WATCHDOG_TAG = "layoutbench-watchdog"  #: its last argument (how ps shows it)
_watchdog: subprocess.Popen | None = None


def _tell_watchdog(line: str) -> None:
    """Send the watchdog one line (under ``_lock``); the first call starts it.  A watchdog that is
    gone (killed) changes nothing here: the children still get PR_SET_PDEATHSIG."""
    global _watchdog
    if _watchdog is None:
        if line.startswith("-"):
            return
        try:
            _watchdog = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG, WATCHDOG_TAG],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True, text=True, bufsize=1)
        except OSError:
            return
    try:
        _watchdog.stdin.write(line + "\n")
    except (OSError, ValueError):
        pass


def start(cmd, **kw) -> subprocess.Popen:
    """``subprocess.Popen`` in a new session (its own process group), registered until :func:`finish`.

    The child dies with the thread that calls this (PR_SET_PDEATHSIG), and its group with
    layoutbench (the watchdog); call :func:`finish` from the same thread.  Within a
    :class:`RunLock` of this thread, the child carries the lock's mark and the lock names its group."""
    global _starting, _pending
    main = threading.current_thread() is threading.main_thread()
    run_lock = getattr(_held, "lock", None)
    if run_lock is not None:
        kw["env"] = {**(kw.get("env") if kw.get("env") is not None else os.environ), **run_lock.mark()}
    parent = os.getpid()
    cmd, kw = _dying_with_parent(cmd, kw, parent)
    if main:
        _starting = True
    try:
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        with _lock:
            _groups.add(p.pid)
            _tell_watchdog(f"+ {p.pid} {start_time(p.pid)}")
        if run_lock is not None:
            run_lock.running(p.pid)
    finally:
        if main:
            _starting = False
    if main and _pending is not None:
        exc, _pending = _pending, None
        raise exc
    return p


def finish(p: subprocess.Popen, timeout: float | None, tick=None, every: float = 60.0) -> bool:
    """Wait for ``p`` up to ``timeout`` seconds; kill its whole group when the time is up, and in
    any case what is left of the group once it ended (background children).  True: timed out.
    ``tick(seconds)``: called every ``every`` seconds while it runs (a long build's progress)."""
    timed_out = False
    try:
        timed_out = _wait(p, timeout, tick, every)
    finally:  # also on Ctrl-C / SIGTERM while waiting
        killpg(p.pid)
        with _lock:
            _groups.discard(p.pid)
            _tell_watchdog(f"- {p.pid}")
    if timed_out:
        p.wait()
    wait_gone(p.pid)  # a lock held around the run is free only once nothing of it runs
    return timed_out


def _wait(p: subprocess.Popen, timeout: float | None, tick, every: float) -> bool:
    """Wait for ``p`` (True: ``timeout`` seconds passed first), calling ``tick`` every ``every`` seconds."""
    t0 = time.monotonic()
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - t0)
        try:
            p.wait(timeout=left if tick is None else (every if left is None else max(0.0, min(every, left))))
            return False
        except subprocess.TimeoutExpired:
            if tick is None or (left is not None and left <= every):
                return True
            tick(time.monotonic() - t0)


def group_alive(pgid: int) -> bool:
    """A process of group ``pgid`` runs (zombies do not count)."""
    for d in os.listdir("/proc"):
        st = _stat(int(d)) if d.isdigit() else None
        if st is not None and st[0] not in ("Z", "X") and int(st[2]) == pgid:
            return True
    return False


def wait_gone(pgid: int, timeout: float = 30.0) -> None:
    """Wait until the killed group ``pgid`` is gone (SIGKILL lands within moments), at most ``timeout`` s."""
    t0 = time.monotonic()
    while group_alive(pgid) and time.monotonic() - t0 < timeout:
        time.sleep(0.01)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- one benchmark of a target at a time, and none left behind by a killed run ---------------------

RUN_LOCK_ENV = "LAYOUTBENCH_RUN_LOCK"  #: in a benchmark's environment: "LOCK OWNER_PID OWNER_START"
_held = threading.local()  #: the RunLock this thread holds (procs.start marks its children with it)


class RunLock:
    """The lock of one target's runs in one work directory (``flock`` of ``path``), held by
    layoutbench while a benchmark of the target runs.

    The file names its holder (pid and start time) and the process group of the benchmark
    running; each benchmark process carries the mark ``LAYOUTBENCH_RUN_LOCK=PATH PID START``
    in its environment.  Taking the lock (waiting while another live layoutbench holds it),
    layoutbench stops what a killed holder left running: the named group, when its leader is
    gone or still the one named, and every process marked by a holder that is gone.  A marked
    process of another holder that still runs, before or after the run (:meth:`check_alone`),
    means two benchmarks of the target overlapped: the run is refused, nothing of it stored.
    """

    def __init__(self, path: Path, what: str, say=lambda m: None):
        self.path, self.what, self.say = Path(path), what, say
        self.fd: int | None = None
        self.me = (os.getpid(), start_time(os.getpid()))

    def mark(self) -> dict[str, str]:
        return {RUN_LOCK_ENV: f"{self.path} {self.me[0]} {self.me[1]}"}

    def _write(self, pgid: int | None) -> None:
        rec = {"pid": self.me[0], "start": self.me[1], "pgid": pgid,
               "pgid_start": start_time(pgid) if pgid is not None else None}
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(rec).encode(), 0)

    def running(self, pgid: int) -> None:
        """The benchmark's process group (its leader's pid): recorded before it can be orphaned."""
        self._write(pgid)

    def __enter__(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.say(f"waiting for another layoutbench running {self.what} (lock {self.path})")
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            self._stop_orphans()
            self.check_alone("is running")
            self._write(None)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        _held.lock = self
        return self

    def __exit__(self, *exc) -> None:
        _held.lock = None
        try:
            self._write(None)
        finally:
            os.close(self.fd)
            self.fd = None

    def _marked(self) -> list[tuple[int, int, tuple[int, str]]]:
        """(pid, process group, (holder pid, holder start)) of each live process marked with this lock."""
        prefix = f"{RUN_LOCK_ENV}={self.path} ".encode()
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            st = _stat(int(d))
            if st is None or st[0] in ("Z", "X"):
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            for e in env:
                if e.startswith(prefix):
                    words = e[len(prefix):].decode(errors="replace").split()
                    if len(words) == 2 and words[0].isdigit():
                        found.append((int(d), int(st[2]), (int(words[0]), words[1])))
        return found

    @staticmethod
    def _alive(holder: tuple[int, str]) -> bool:
        return start_time(holder[0]) == holder[1]

    def _stop_orphans(self) -> None:
        """Kill what a holder that is gone left running; wait until it is gone."""
        try:
            rec = json.loads(os.pread(self.fd, 4096, 0) or b"{}")
        except ValueError:
            rec = {}
        groups = set()
        holder = (rec.get("pid"), rec.get("start"))
        pg = rec.get("pgid")
        if isinstance(pg, int) and pg > 1 and holder != self.me and not self._alive(holder) \
                and start_time(pg) in (None, rec.get("pgid_start")):
            groups.add(pg)
        own = os.getpgid(0)
        groups |= {g for _, g, h in self._marked() if h != self.me and not self._alive(h) and g not in (own, 0, 1)}
        groups = {g for g in groups if group_alive(g)}
        if not groups:
            return
        self.say(f"stopping the benchmark left running by a killed layoutbench (process group "
                 f"{', '.join(map(str, sorted(groups)))}) before running {self.what}")
        for g in groups:
            killpg(g)
        for g in groups:
            wait_gone(g)

    def check_alone(self, when: str) -> None:
        """Refuse when a process of this lock that is not this run's runs (``when``: "is running"
        before the run, "ran beside this run" after it)."""
        others = sorted({pid for pid, g, h in self._marked() if h != self.me})
        if others:
            raise LayoutbenchError(
                f"another benchmark of {self.what} {when} (process {', '.join(map(str, others[:5]))}, lock "
                f"{self.path}): two benchmarks disturb each other's numbers, so no run of it is stored now; "
                f"stop that process and run the same command again")
