"""bench/loaded_suite.py: the suite beside CPU-bound loops, which it starts and always stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from bench.hostile import cli_cases as hostile_cli
from conftest import ROOT


def _yes_pids() -> set[str]:
    return set(subprocess.run(["pgrep", "-x", "yes"], capture_output=True, text=True).stdout.split())


def _loaded(*args: str) -> subprocess.CompletedProcess:
    """The script on a one-test suite run in one process (``--workers 0``): what is tested is the
    script (its report, its exit, its loops), not pytest-xdist's start and stop under load."""
    return subprocess.run([sys.executable, "-m", "bench.loaded_suite", "--workers", "0", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)


def test_the_loaded_suite_reports_its_run_and_leaves_no_loop_behind(tmp_path):
    inner = tmp_path / "test_inner.py"
    inner.write_text("def test_quick():\n    assert sum(range(4)) == 6\n")
    before = _yes_pids()
    p = _loaded("--loops", "2", "--", str(inner))
    assert p.returncode == 0, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded suite: exit 0, ") and "2 CPU loop(s) beside it" in last, p.stdout
    assert "slowest 10 durations" in p.stdout  # pytest's --durations table
    assert _yes_pids() <= before


def test_the_loaded_suite_fails_when_the_suite_does(tmp_path):
    inner = tmp_path / "test_inner.py"
    inner.write_text("def test_wrong():\n    assert sum(range(4)) == 7\n")
    p = _loaded("--loops", "1", "--", str(inner))
    assert p.returncode == 1 and "loaded suite: exit 1, " in p.stdout  # pytest: a test failed



@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_the_loops_end_with_the_script_whatever_ends_it(sig, tmp_path):
    inner = tmp_path / "test_inner.py"
    inner.write_text("import time\n\ndef test_long():\n    time.sleep(600)\n")
    before = _yes_pids()
    p = subprocess.Popen([sys.executable, "-m", "bench.loaded_suite", "--workers", "0", "--loops", "2",
                          "--", str(inner)],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=hostile_cli.as_from_a_terminal())
    deadline = time.monotonic() + 120
    while len(_yes_pids() - before) < 2:
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.1)
    ours = _yes_pids() - before
    os.kill(p.pid, sig)
    p.wait(timeout=120)

    def left() -> tuple[set[str], list[str]]:  # our loops, and the suite it ran
        return ours & _yes_pids(), subprocess.run(["pgrep", "-f", str(inner)], capture_output=True,
                                                  text=True).stdout.split()

    deadline = time.monotonic() + 60
    while any(left()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left() == (set(), [])
