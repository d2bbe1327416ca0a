"""docs/how-it-decides.md, Figure 5: what the runs per layout cost in time, where a layout costs more than a run.

On bench/simulate.py's synthetic histories (the decision code of layoutbench.decide,
unchanged), each row bisects the same histories with R = 1, with R chosen as
``bisect`` chooses it (layoutbench.costs: GOOD and BAD measured at 4 layouts x 2 runs, the
noise split, R* = sqrt(c_layout/c_run x s_R^2/s_L^2) rounded, at most 8 here: the
simulated prober draws 8 runs a layout), and with a fixed larger R, and prints the right /
wrong rates beside the layouts, runs and the time they take at the stated costs:
time = layouts x c_layout + runs x c_run (+ the 2-run look of the choice).

    python3 -m bench.runs_per_layout [--histories 60] [--layout-cost 60] [--run-cost 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench import simulate as sim
from layoutbench import costs, decide


def one(sc: sim.Scenario, seed: int, runs: int | None, c_l: float, c_r: float) -> dict:
    """One history at R = ``runs`` (None: chosen from the costs and the measured split)."""
    p = sim.SimProber(sc, np.random.default_rng(seed))
    extra_layouts = extra_runs = 0
    chosen = runs
    if runs is None:
        split = costs.noise_split([p.groups(c, 4, 2) for c in (p.names[0], p.names[-1])])
        chosen = costs.runs_per_layout(c_l, c_r, split.var_run, split.var_layout, max_runs=8)[0]
        extra_layouts, extra_runs = 8, 16  # the 2-run look (reused by the bisection when R >= 2)
        p.asked = {}
    out = decide.bisect_range(p, p.names, decide.Plan(runs=chosen), decide.MemoryJournal())
    layouts = len(p.asked)  # (commit, seed) pairs measured
    runs_ = p.runs
    if runs is None and chosen < 2:
        layouts, runs_ = max(layouts, extra_layouts), runs_ + extra_runs // 2
    first = p.names[p.steps[0]] if p.steps else None
    named = [s.culprit for s in out.steps if s.status == "found"]
    truth = {p.names[i] for i in p.steps}
    return {"right": out.culprit is not None and out.culprit == first, "wrong": any(c not in truth for c in named),
            "blame": out.culprit is not None, "layouts": layouts, "runs": runs_, "R": chosen,
            "hours": (layouts * c_l + runs_ * c_r) / 3600}


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=60)
    ap.add_argument("--layout-cost", type=float, default=60.0, help="seconds a new layout costs (a reboot)")
    ap.add_argument("--run-cost", type=float, default=5.0, help="seconds a rerun on the same layout costs")
    ap.add_argument("--commits", type=int, default=16)
    a = ap.parse_args()
    t0 = time.monotonic()
    print(f"runs per layout: {a.histories} simulated histories a row, {a.commits} commits, sigma_L 1%, a layout "
          f"{a.layout_cost:g} s, a run {a.run_cost:g} s; R* = sqrt({a.layout_cost:g}/{a.run_cost:g} x "
          f"sR^2/sL^2) from GOOD and BAD at 4 layouts x 2 runs (at most 8)")
    print(f"{'row':<28} {'R':>8} {'right/blame':>11} {'wrong':>6} {'layouts':>8} {'runs':>8} {'hours':>7}")
    rows = [("step 2σL, σR 2%", sim.Scenario("s", "step", 2.0, commits=a.commits, sigma_r=0.02)),
            ("step 2σL, σR 0.5%", sim.Scenario("s", "step", 2.0, commits=a.commits, sigma_r=0.005)),
            ("null, σR 2%", sim.Scenario("n", "null", commits=a.commits, sigma_r=0.02))]
    for name, sc in rows:
        for runs in (1, None, 8):
            rs = [one(sc, 70_000 + i, runs, a.layout_cost, a.run_cost) for i in range(a.histories)]
            m = {k: float(np.mean([r[k] for r in rs])) for k in ("right", "wrong", "blame", "layouts", "runs", "hours")}
            label = "R*" if runs is None else str(runs)
            if runs is None:
                label += f" ({min(r['R'] for r in rs)}-{max(r['R'] for r in rs)})"
            ok = m["blame"] if sc.kind == "null" else m["right"]
            print(f"{name:<28} {label:>8} {100 * ok:>10.1f}% {100 * m['wrong']:>5.1f}% {m['layouts']:>8.1f} "
                  f"{m['runs']:>8.1f} {m['hours']:>7.2f}", flush=True)
    print(f"right: the named first bad commit is the step (null rows: blame, a commit named); hours: layouts x "
          f"{a.layout_cost:g} s + runs x {a.run_cost:g} s, mean per bisection; {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
