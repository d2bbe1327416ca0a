"""docs/guide/internals.md, "Testing": the test suite on a busy machine.

It runs the README's test command while CPU-bound loops run beside it, and prints its wall time, the load it ran under and its ten slowest tests.

    python3 -m bench.loaded_suite                 # two loops beside the whole suite
    python3 -m bench.loaded_suite --loops 4 -- tests/test_bisect.py -k timeout
    python3 -m bench.loaded_suite --workers 0 -- tests/test_stats.py   # pytest in one process

No test may depend on how fast the machine is: every timeout in a test is far above the work's normal
duration (a hang is a ``sleep 300``), and every polling loop waits for its event, not for a fixed time.
This script is the check: the suite must pass as it does on a quiet machine.  The loops are started and
stopped here (``yes > /dev/null``, one process each); they and the suite end with the script, whatever
ends it (the kernel's parent-death signal, PR_SET_PDEATHSIG, kills them when its process ends).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when this script's process ends (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=2, help="CPU-bound loops beside the suite (default 2)")
    ap.add_argument("--workers", type=int, default=2,
                    help="pytest-xdist workers, as the README's test command (default 2; 0: one process)")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (default: the whole suite)")
    a = ap.parse_args(argv)
    loops = [subprocess.Popen(["sh", "-c", "exec yes > /dev/null"], start_new_session=True,
                              preexec_fn=_die_with_parent) for _ in range(a.loops)]
    loads: list[float] = []
    t0 = time.monotonic()
    suite = None
    try:
        suite = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-n", str(a.workers), "-ra", "--durations=10",
                                  *a.pytest_args],
                                 cwd=ROOT, preexec_fn=_die_with_parent)
        while suite.poll() is None:
            loads.append(os.getloadavg()[0])
            try:
                suite.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        rc = suite.returncode
    finally:
        if suite is not None and suite.poll() is None:
            suite.kill()
            suite.wait()
        for p in loops:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    wall = time.monotonic() - t0
    mean = sum(loads) / len(loads) if loads else float("nan")
    print(f"loaded suite: exit {rc}, {wall / 60:.1f} min wall, {a.loops} CPU loop(s) beside it, "
          f"1-min load average {mean:.1f} mean, {max(loads, default=float('nan')):.1f} max, on {os.cpu_count()} cores")
    return rc


if __name__ == "__main__":
    sys.exit(main())
