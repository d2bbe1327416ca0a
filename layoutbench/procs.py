"""Child processes that die with the command: every benchmark and build runs in its own process
group (``start_new_session``), and the whole group is killed when its time is up, when the
command is interrupted (Ctrl-C, SIGTERM) and when it ends (a benchmark's background children).

Only groups started here are killed, by their id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

_lock = threading.Lock()
_groups: set[int] = set()  #: process groups of children still running


class Terminated(BaseException):
    """SIGTERM reached layoutbench: unwinds like Ctrl-C (not an Exception: nothing swallows it)."""


_starting = False  #: the main thread is between fork and registering the new group
_pending: type[BaseException] | None = None  #: an interrupt that arrived meanwhile


def _on_signal(signum, frame):
    global _pending
    exc = KeyboardInterrupt if signum == signal.SIGINT else Terminated
    if _starting:  # raised once the child's group is registered, so that it is killed too
        _pending = exc
        return
    raise exc()


def install_signal_handlers() -> None:
    """Ctrl-C and SIGTERM unwind the command (only in the main thread); one that arrives while a
    child is being started waits until its process group is registered (and so is killed)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)


def killpg(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (gone already: nothing to do)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all() -> None:
    """Kill every process group still registered (an interrupt, the end of the command)."""
    with _lock:
        groups = list(_groups)
        _groups.clear()
    for g in groups:
        killpg(g)


def start(cmd, **kw) -> subprocess.Popen:
    """``subprocess.Popen`` in a new session (its own process group), registered until :func:`finish`."""
    global _starting, _pending
    main = threading.current_thread() is threading.main_thread()
    if main:
        _starting = True
    try:
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        with _lock:
            _groups.add(p.pid)
    finally:
        if main:
            _starting = False
    if main and _pending is not None:
        exc, _pending = _pending, None
        raise exc()
    return p


def finish(p: subprocess.Popen, timeout: float | None) -> bool:
    """Wait for ``p`` up to ``timeout`` seconds; kill its whole group when the time is up, and in
    any case what is left of the group once it ended (background children).  True: timed out."""
    timed_out = False
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:  # also on Ctrl-C / SIGTERM while waiting
        killpg(p.pid)
        with _lock:
            _groups.discard(p.pid)
    if timed_out:
        p.wait()
    return timed_out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
