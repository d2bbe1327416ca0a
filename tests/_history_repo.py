"""A generated minikernel history for the history/report tests.

Uses ``kernels/minikernel/make_history.py`` (seeded history with a planted regression,
layout-only commits and a broken range repaired by a quirk).  The commit indices below
are fixed so that the tests know where things are:

    0 import · 1..8 with the regression at 5, the build broken at 2..3 (fixed by 4)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N_COMMITS = 8
REGRESSION_AT = 5
BROKEN = (2, 4)
LAYOUTS = "sorted,aligned,random:3"
ARGS = "iterations=300"


def make(path: Path) -> dict:
    from conftest import script

    return script("kernels/minikernel/make_history.py").make_history(path, N_COMMITS, seed=3, regression_at=REGRESSION_AT, regression_pct=5.0,
                            broken_range=BROKEN)


def env(workdir: Path, manifest: dict) -> dict:
    return {**os.environ, "LAYOUTBENCH_DIR": str(workdir), "LAYOUTBENCH_QUIRKS": manifest["quirks"],
            "COLUMNS": "200"}


def lb(args: list[str], env: dict, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "layoutbench", *args], capture_output=True, text=True, env=env,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"layoutbench {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def sweep_args(manifest: dict, store: Path, *more: str) -> list[str]:
    return ["history", "minikernel", f"{manifest['good']}..{manifest['bad']}", "--repo", manifest["repo"],
            "--target", "cachegrind", "--layouts", LAYOUTS, "--args", ARGS,  # (1 run a layout: exact counts)
            "--store", str(store), "-j", "2", *more]


def sha(manifest: dict, index: int) -> str:
    return next(c["sha"] for c in manifest["commits"] if c["index"] == index)


def as_json(p: subprocess.CompletedProcess) -> dict:
    return json.loads(p.stdout)


def swept(base: Path) -> dict:
    """Make the history, sweep it with --step 2, refine 4..6 twice, print the summary, write the
    report: once per test session (the results are kept in ``base``)."""
    done = base / "done.json"
    if done.is_file():
        return json.loads(done.read_text())
    base.mkdir(parents=True, exist_ok=True)
    m = make(base / "hist")
    e = env(base / "wd", m)
    store = base / "store.sqlite"
    sweep = as_json(lb(sweep_args(m, store, "--step", "2", "--json"), e))
    refine_args = ["history", "minikernel", "--repo", m["repo"], "--refine", f"{sha(m, 4)}..{sha(m, 6)}",
                   "--store", str(store), "--json"]
    refine = as_json(lb(refine_args, e))
    refine_again = as_json(lb(refine_args, e))
    summary = lb(["history", "minikernel", "--repo", m["repo"], "--summary", "--store", str(store)], e).stdout
    # a bisection of the same range, so that the report marks its verdict
    bisection = as_json(lb(["bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"],
                            "--target", "cachegrind", "--args", ARGS, "--store", str(store), "--json"], e))
    site = base / "site"
    lb(["report", "minikernel", "--repo", m["repo"], "--store", str(store), "-o", str(site)], e)
    out = {"manifest": m, "env": {k: e[k] for k in ("LAYOUTBENCH_DIR", "LAYOUTBENCH_QUIRKS")}, "store": str(store),
           "sweep": sweep, "refine": refine, "refine_again": refine_again, "summary": summary, "site": str(site),
           "bisection": bisection}
    done.write_text(json.dumps(out))
    return out
