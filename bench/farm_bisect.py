"""docs/guide/remote.md's farm tables: a bisection over 1 and over 3 machines, or over 1, 2 and 3 labgrid places, side by side.

Starts three throw-away sshd servers on 127.0.0.1 (bench/labs/sshd.py; needs root and
openssh-server), each an ssh target running the hosted minikernel under valgrind's
cachegrind (deterministic), generates a history with a planted regression, compiles
every commit once (so neither run pays for compiling), then runs

    layoutbench bisect PROFILE GOOD..BAD --target m0        (one machine)
    layoutbench bisect PROFILE GOOD..BAD --target m0,m1,m2  (three: a 4-ary split per round)

each in a fresh store, and prints rounds, probes, runs and wall time side by side.

With ``--kind labgrid`` the machines are places of a real labgrid coordinator on
127.0.0.1 (bench/labs/labgrid_lab.py: ``labgrid-coordinator``, one ``labgrid-exporter`` per place
exporting a NetworkService to its sshd, places tagged ``pool=bench``), and the bisection
runs over a ``labgrid-places`` target limited to 1, 2 and 3 places (``places = [...]``):
each probe reserves and acquires its place through the coordinator.

The three "machines" here share this machine's cores: with 2 cores the wall time cannot
fall as the rounds do (three valgrind runs compete for two cores, and every machine
measures GOOD and BAD itself).  On a farm of real machines a round costs about one probe's
time, so the rounds are the number that carries over.

    python3 -m bench.farm_bisect [--kind ssh|labgrid] [--commits 16] [--regression-at 11]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=16)
    ap.add_argument("--regression-at", type=int, default=11)
    ap.add_argument("--regression-pct", type=float, default=3.0)
    ap.add_argument("--args", default="iterations=300")
    ap.add_argument("--kind", choices=("ssh", "labgrid"), default="ssh",
                    help="three ssh targets (1 vs 3 machines) or a labgrid pool (1, 2, 3 places)")
    a = ap.parse_args()

    import importlib.util

    from bench.labs import labgrid_lab as _labgrid_lab
    from bench.labs import sshd as _sshd
    from bench.labs.remote import COMMAND, farm_profile, profile
    from layoutbench import build, profile as profmod, source

    why = _sshd.available() if a.kind == "ssh" else _labgrid_lab.available()
    if why:
        print(f"farm_bisect: cannot start the lab here: {why}", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("make_history", ROOT / "kernels/minikernel/make_history.py")
    mh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mh)

    tmp = Path(tempfile.mkdtemp(prefix="lb-farm-"))
    os.environ.setdefault("LAYOUTBENCH_DIR", str(tmp / "work"))

    if a.kind == "ssh":
        lab = _sshd.Lab(tmp / "lab", 3)
        runs = ["m0", "m0,m1,m2"]
    else:
        lab = _labgrid_lab.LabgridLab(tmp / "lab", 3)
        runs = ["lab1", "lab2", "lab3"]
    try:
        m = mh.make_history(tmp / "repo", a.commits, seed=11, regression_at=a.regression_at,
                            regression_pct=a.regression_pct)
        if a.kind == "ssh":
            toml = farm_profile(lab, tmp)
        else:
            toml = profile(tmp / "prof", "".join(lab.target_table(f"lab{k}", tmp, command=COMMAND,
                                                                   places=lab.places[:k]) for k in (1, 2, 3)))
        prof = profmod.load(str(toml))
        shas = [m["good"]] + [c["sha"] for c in m["commits"]]
        for sha in shas:  # compile every commit once: neither bisection pays for it
            try:
                build.compile_objects(prof, source.resolve(prof, sha, m["repo"], None))
            except Exception:  # noqa: BLE001 -- a commit that does not build is skipped by both
                pass
        rows = []
        for targets in runs:
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "layoutbench.cli", "bisect", str(toml),
                                f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--target", targets,
                                "--metric", "cg_cost", "--args", a.args, "--no-shadow",
                                "--store", str(tmp / f"{targets}.sqlite"), "--json"],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            wall = time.monotonic() - t0
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                return 1
            v = json.loads(p.stdout)
            k = len(v["targets"]) if a.kind == "ssh" else v["places"]["slots"]
            rows.append((k, v["rounds"], v["probes"], v["cost"]["runs"], wall,
                         (v.get("culprit") or "-")[:12], v["status"]))
    finally:
        lab.stop()
    what = "ssh targets" if a.kind == "ssh" else "labgrid places (coordinator + exporters)"
    word = "machines" if a.kind == "ssh" else "places"
    print(f"history: {a.commits} commits, a {a.regression_pct:g}% regression planted at "
          f"{m['regression'][:12]}; cachegrind over ssh on 127.0.0.1, {what}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{word:>8} {'rounds':>6} {'probes':>6} {'runs':>5} {'wall s':>7}  verdict")
    for k, rnd, pr, runs_, wall, cul, st in rows:
        print(f"{k:>8} {rnd:>6} {pr:>6} {runs_:>5} {wall:>7.1f}  {st} {cul}")
    k1, r1, _, _, w1, c1, _ = rows[0]
    for k, r, _, _, w, c, _ in rows[1:]:
        print(f"{k} vs {k1} {word}: rounds {r / r1:.2f}x, wall time {w / w1:.2f}x (the {k} '{word}' share "
              f"{os.cpu_count()} cores here); same culprit: {c1 == c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
