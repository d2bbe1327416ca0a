"""No benchmark outlives layoutbench, by any signal, and none is measured beside another: real
``layoutbench compare`` processes, real signals, a benchmark (``sh`` with a ``sleep`` child in its
process group) that writes its pids and waits.

- SIGHUP (a closed terminal or ssh session) stops the benchmark like SIGTERM: exit 129;
- ``kill -9`` of layoutbench: the watchdog kills the benchmark's whole group;
- ``kill -9`` of layoutbench and its watchdog: the benchmark's own process dies with its parent
  (PR_SET_PDEATHSIG); the ``sleep`` it started is left, and the next run of the target finds it
  through the target's lock and stops it before it measures;
- a process of another holder of the lock running beside a run: the run is refused, not stored;
- the lock kills a recorded group only while its leader is the process recorded;
- a child whose parent ended before the command started does not run it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.hostile import cli_cases as hostile_cli
from layoutbench import procs

ROOT = Path(__file__).resolve().parent.parent
WAIT = 60.0  #: seconds a process gets to start or die (far above what it needs)


@pytest.fixture
def lab(tmp_path):
    """A profile whose ``hang`` target writes ``SH_PID SLEEP_PID`` and waits for a ``sleep 600`` of
    its group, unless the file ``go`` exists (then it prints a metric and ends)."""
    pids, go = tmp_path / "bench.pids", tmp_path / "go"
    extra = f"""
[targets.hang]
kind = "local"
image = "tiny"
timeout = 600
command = ["sh", "-c", "if [ -e {go} ]; then echo LAYOUTBENCH metric name=t value=1; echo LAYOUTBENCH end status=ok; exit 0; fi; sleep 600 & echo $$ $! > {pids}.new; mv {pids}.new {pids}; wait"]

[targets.slow]
kind = "local"
image = "tiny"
timeout = 600
command = ["sh", "-c", "echo $$ > {pids}.new; mv {pids}.new {pids}; while [ ! -e {go} ]; do sleep 0.1; done; echo LAYOUTBENCH metric name=t value=1; echo LAYOUTBENCH end status=ok"]
"""
    hostile_cli.write_tiny(tmp_path / "profiles" / "tinyp", name="tinyp", targets=extra)
    env = {**os.environ, "LAYOUTBENCH_DIR": str(tmp_path / "work"), "LAYOUTBENCH_PROFILES": str(tmp_path / "profiles"),
           "PYTHONPATH": str(ROOT)}
    env.pop("LAYOUTBENCH_STORE", None)
    store = tmp_path / "s.sqlite"
    cmd = [sys.executable, "-m", "layoutbench.cli", "compare", "tinyp", "--layouts", "default", "--runs", "1",
           "--no-machine-check", "--store", str(store)]
    started: list[subprocess.Popen] = []

    def compare(target: str, ignored: tuple = ()) -> subprocess.Popen:
        """``compare --target TARGET`` started as from a terminal (``ignored``: as ``nohup`` leaves them)."""
        p = subprocess.Popen([*cmd, "--target", target], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True, preexec_fn=hostile_cli.as_from_a_terminal(ignored))
        started.append(p)
        return p

    def benchmark_pids(p: subprocess.Popen, n: int) -> list[int]:
        t0 = time.monotonic()
        while not pids.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() - t0 < WAIT * 5, "the benchmark never started"
            time.sleep(0.05)
        got = [int(w) for w in pids.read_text().split()]
        assert len(got) == n
        return got

    yield {"dir": tmp_path, "go": go, "store": store, "env": env, "compare": compare, "pids": benchmark_pids,
           "cmd": cmd}
    for p in started:  # a failing test leaves nothing running either
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    if pids.exists():
        for pid in (int(w) for w in pids.read_text().split()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def gone(pid: int, wait: float = WAIT) -> bool:
    t0 = time.monotonic()
    while alive(pid):
        if time.monotonic() - t0 > wait:
            return False
        time.sleep(0.05)
    return True


def ok_runs(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()[0]


def watchdog_of(pid: int) -> int:
    """The watchdog process layoutbench ``pid`` started."""
    t0 = time.monotonic()
    while True:
        for d in os.listdir("/proc"):
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) if d.isdigit() else 0
                if ppid == pid and procs.WATCHDOG_TAG.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    return int(d)
            except OSError:
                continue
        assert time.monotonic() - t0 < WAIT, "no watchdog"
        time.sleep(0.05)


def test_sighup_stops_the_benchmark_and_its_group(lab):
    p = lab["compare"]("hang")
    sh, sleep = lab["pids"](p, 2)
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=WAIT)
    assert p.returncode == 128 + signal.SIGHUP and "interrupted" in err and "Traceback" not in err, err
    assert gone(sh) and gone(sleep)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT])
def test_a_signal_started_ignored_leaves_the_run_going_to_its_result(lab, sig):
    """Started with the signal ignored (``nohup layoutbench ...`` ignores SIGHUP; a shell's ``&``
    job SIGINT), it does not end the run: the benchmark goes on and its sample is stored."""
    p = lab["compare"]("slow", ignored=(sig,))
    (sh,) = lab["pids"](p, 1)
    p.send_signal(sig)
    time.sleep(0.5)  # not a timing assertion: a handled signal would have ended the run by any time
    lab["go"].touch()
    out, err = p.communicate(timeout=WAIT * 5)
    assert p.returncode == 0 and "interrupted" not in err, err
    assert ok_runs(lab["store"]) == 1


def test_kill_9_of_layoutbench_kills_the_benchmark_group(lab):
    p = lab["compare"]("hang")
    sh, sleep = lab["pids"](p, 2)
    p.kill()
    p.wait()
    assert gone(sh) and gone(sleep)


def test_a_resumed_run_stops_what_a_killed_run_left(lab):
    p = lab["compare"]("hang")
    sh, sleep = lab["pids"](p, 2)
    w = watchdog_of(p.pid)
    os.kill(w, signal.SIGKILL)  # the watchdog first: nothing but PR_SET_PDEATHSIG and the lock remain
    assert gone(w)
    p.kill()
    p.wait()
    assert gone(sh)  # the benchmark's own process died with its parent
    time.sleep(1)
    assert alive(sleep)  # its child, in its group, is left as an orphan
    lab["go"].touch()
    r = subprocess.run([*lab["cmd"], "--target", "hang"], env=lab["env"], capture_output=True, text=True,
                       timeout=WAIT * 5)
    assert r.returncode == 0, r.stderr
    assert "stopping the benchmark left running by a killed layoutbench" in r.stderr and f"group {sh}" in r.stderr
    assert gone(sleep)
    assert ok_runs(lab["store"]) == 1


def test_a_run_beside_another_benchmark_of_the_target_is_not_stored(lab):
    p = lab["compare"]("slow")
    (sh,) = lab["pids"](p, 1)
    mark = next(e for e in Path(f"/proc/{sh}/environ").read_bytes().split(b"\0")
                if e.startswith(procs.RUN_LOCK_ENV.encode() + b"="))
    lock = mark.split(b"=", 1)[1].decode().split()[0]
    # a benchmark of the same target started by another (live) layoutbench, not holding the lock
    other = subprocess.Popen(["sleep", "600"], start_new_session=True,
                             env={**os.environ, procs.RUN_LOCK_ENV: f"{lock} {os.getpid()} "
                                                                    f"{procs.start_time(os.getpid())}"})
    try:
        lab["go"].touch()
        out, err = p.communicate(timeout=WAIT * 5)
        assert p.returncode == 2 and "Traceback" not in err, err
        assert "ran beside this run" in err and str(other.pid) in err
        assert ok_runs(lab["store"]) == 0
        assert alive(other.pid)  # a live layoutbench's benchmark is not killed, only refused
        r = subprocess.run([*lab["cmd"], "--target", "slow"], env=lab["env"], capture_output=True, text=True,
                           timeout=WAIT * 5)
        assert r.returncode == 2 and "is running" in r.stderr and ok_runs(lab["store"]) == 0, r.stderr
    finally:
        other.kill()
        other.wait()
    r = subprocess.run([*lab["cmd"], "--target", "slow"], env=lab["env"], capture_output=True, text=True,
                       timeout=WAIT * 5)
    assert r.returncode == 0 and ok_runs(lab["store"]) == 1, r.stderr


@pytest.mark.parametrize("same_leader", [True, False], ids=["still-its-leader", "pid-used-again"])
def test_the_lock_kills_a_recorded_group_only_while_its_leader_is_the_one_recorded(tmp_path, same_leader):
    victim = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()  # a holder that is gone
        start = procs.start_time(victim.pid) if same_leader else str(int(procs.start_time(victim.pid)) - 1)
        lock = tmp_path / "t.lock"
        lock.write_text(json.dumps({"pid": dead.pid, "start": "1", "pgid": victim.pid, "pgid_start": start}))
        said = []
        with procs.RunLock(lock, "target t", said.append):
            pass
        assert (gone(victim.pid) if same_leader else alive(victim.pid))
        assert bool(said) == same_leader
        assert json.loads(lock.read_text())["pgid"] is None
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("with_setpriv", [True, False])
def test_a_child_whose_parent_is_already_gone_does_not_run(monkeypatch, tmp_path, with_setpriv):
    """The child checks, before the command runs, that its parent is the process that started it:
    a parent that ended between fork and exec (here: a pid that is not this process's) means the
    child belongs to another process, so it kills itself instead of running the command.  Both
    ways of setting it up: setpriv and a shell, and Python's preexec_fn where setpriv is missing."""
    if not with_setpriv:
        monkeypatch.setattr(procs, "_SETPRIV", None)
    elif procs._SETPRIV is None:
        pytest.fail("setpriv (util-linux) is missing: apt-get install util-linux")
    mark = tmp_path / "ran"
    cmd = ["sh", "-c", f"touch {mark}"]
    for parent, ran in ((os.getpid(), True), (os.getpid() + 100_000, False)):
        mark.unlink(missing_ok=True)
        argv, kw = procs._dying_with_parent(cmd, {}, parent)
        rc = subprocess.run(argv, **kw, timeout=WAIT).returncode
        assert (rc, mark.exists()) == ((0, True) if ran else (-signal.SIGKILL, False)), (parent, rc)
