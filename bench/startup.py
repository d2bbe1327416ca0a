"""docs/guide/internals.md, "Testing": what a command costs before it does anything.

Every ``layoutbench`` command imports its command line first; the test suite starts hundreds of
them.  This prints, side by side in one run (interleaved, the median of ``--repeat`` starts each):
a bare Python start, ``layoutbench --help`` as it is, and the same with scipy.stats imported first
(what every start cost while the command line imported it), with the ratio of the last two; with
``--baseline DIR``, also ``--help`` of the checkout in DIR (its PYTHONPATH), and the ratio to it.

    python3 -m bench.startup [--repeat 7] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HELP = "import sys; from layoutbench.cli import run; sys.argv = ['layoutbench', '--help']; run()"
CASES = {
    "python -c pass": "pass",
    "layoutbench --help": HELP,
    "layoutbench --help, scipy.stats imported first": "import scipy.stats; " + HELP,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="starts of each, interleaved (default 7)")
    ap.add_argument("--baseline", metavar="DIR", help="also time --help of the layoutbench checkout in DIR")
    a = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = {k: (code, here) for k, code in CASES.items()}
    if a.baseline:
        cases[f"layoutbench --help of {a.baseline}"] = (HELP, os.path.abspath(a.baseline))
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(a.repeat):
        for name, (code, root) in cases.items():
            env = {**os.environ, "PYTHONPATH": root}
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, env=env, cwd="/")
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, t in med.items():
        print(f"{name:50s} {t:6.3f} s (median of {a.repeat})")
    now, before = med["layoutbench --help"], med["layoutbench --help, scipy.stats imported first"]
    print(f"a command's start: {now:.2f} s against {before:.2f} s with scipy.stats: x{now / before:.2f}")
    if a.baseline:
        base = med[f"layoutbench --help of {a.baseline}"]
        print(f"a command's start: {now:.2f} s against {base:.2f} s for {a.baseline}: x{now / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
