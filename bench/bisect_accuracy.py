#!/usr/bin/env python3
"""How often does a bisection blame the right commit?  layoutbench vs a single-layout bisection.

For each of N seeded histories made by ``kernels/minikernel/make_history.py`` (a planted
regression of ~3% in the hot path, ~40% layout-only commits, the rest ordinary), it runs
``layoutbench bisect`` (K random layouts per probe, sequential rule) and, in the same run
over the same store and object cache, the bisection a single-layout tool does (default
link, one run per probe, nearest-value rule as asv find).  Then, for M histories with
layout-only and ordinary commits only, it checks who says "nothing to blame".

The metric is ``cg_cost`` of the ``cachegrind`` target (instructions + 20 x misses of a
4 KiB simulated I1, hosted build, ``iterations=300``): deterministic, so the comparison
measures layout noise and nothing else.  On timing metrics run noise adds to it.

    python bench/bisect_accuracy.py [--histories 20] [--null 20] [--commits 8] [--regression-pct 0.5,1,3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_make_history():
    spec = importlib.util.spec_from_file_location("make_history", ROOT / "kernels" / "minikernel" / "make_history.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", type=int, default=20, help="histories with a planted regression")
    ap.add_argument("--null", type=int, default=20, help="histories with layout-only/ordinary commits only")
    ap.add_argument("--commits", type=int, default=8, help="commits per history (after the import)")
    ap.add_argument("--regression-pct", default="0.5,1,3", help="regression sizes to sweep (percent, comma list)")
    ap.add_argument("--seed", type=int, default=100, help="seed of the first history")
    ap.add_argument("--layouts", type=int, default=4)
    ap.add_argument("--max-layouts", type=int, default=None, help="default: the bisection's own (decide.Plan)")
    ap.add_argument("--args", default="iterations=300", help="program arguments of the cachegrind runs")
    ap.add_argument("--workdir", help="keep objects, images and the store here (default: a temporary folder)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="lb-bisect-bench-") if not a.workdir else None
    base = Path(a.workdir or tmp.name).resolve()
    os.environ["LAYOUTBENCH_DIR"] = str(base / "work")
    os.environ["LAYOUTBENCH_QUIRKS"] = str(base / "no-quirks.toml")
    from layoutbench import bisect, decide, profile

    a.max_layouts = a.max_layouts or decide.Plan.max_layouts
    from layoutbench.store import Store

    make_history = load_make_history()
    prof = profile.load("minikernel")
    store = Store(base / "work" / "results.sqlite")
    say = (lambda m: print(f"    · {m}", file=sys.stderr)) if a.verbose else (lambda m: None)

    pcts = [float(x) for x in str(a.regression_pct).split(",") if x]
    print(f"bisect accuracy: {a.histories} histories per regression size ({', '.join(f'{x:g}%' for x in pcts)}) "
          f"+ {a.null} without, {a.commits} commits each; metric cg_cost (cachegrind, {a.args}); layoutbench: "
          f"{a.layouts} random layouts per probe (looks up to {a.max_layouts}), 95%, min effect 0.5%; single layout: "
          f"default link, 1 run per probe")
    print(f"{'history':>8} {'regr':>9} {'layout-only':>12}  {'layoutbench':<14} {'builds':>6} {'runs':>5}   "
          f"{'single layout':<14} {'builds':>6} {'runs':>5}  {'effect':>7} {'noise':>6}")
    rows = []
    t0 = time.monotonic()
    specs = [(a.seed + i, True, pct) for pct in pcts for i in range(a.histories)] + \
        [(a.seed + 1000 + i, False, 0.0) for i in range(a.null)]
    for seed, planted, pct in specs:
        m = make_history(base / "hist" / f"h{seed}-{pct:g}", a.commits, seed, regression_pct=pct or 3.0,
                         regression=planted)
        idx = {c["sha"]: c["index"] for c in m["commits"]}
        s = bisect.Settings(kernel="minikernel", repo=m["repo"], target="cachegrind", metric="cg_cost", args=a.args,
                            layouts=a.layouts, max_layouts=a.max_layouts)
        v = bisect.run(store, prof, s, m["good"], m["bad"], say)
        sl = v["single_layout"]

        def call(culprit, status):
            if status in ("noise", "not-shown"):
                return status
            if culprit is None:
                return status
            return f"#{idx[culprit]}" + ("" if culprit == m["regression"] else " WRONG" if planted else " (blame)")

        ours = call(v.get("culprit"), v["status"])
        theirs = call(sl.get("culprit"), "found")
        e = v.get("effect") or v["endpoints"]
        row = {"seed": seed, "planted": planted, "pct": pct, "regression": m["regression_index"],
               "layout_only": m["layout_only_indices"], "ours": v.get("culprit"), "status": v["status"],
               "ours_ok": (v.get("culprit") == m["regression"]) if planted else v["status"] in ("noise", "not-shown"),
               "theirs": sl.get("culprit"),
               "theirs_ok": (sl.get("culprit") == m["regression"]) if planted else sl.get("culprit") is None,
               "cost": v["cost"], "single": sl, "effect": e["ratio"], "noise": e["layout_noise"]}
        rows.append(row)
        regr = f"#{m['regression_index']} {pct:g}%" if planted else "-"
        print(f"{seed:>8} {regr:>9} "
              f"{','.join(map(str, m['layout_only_indices'])):>12}  {ours:<14} {v['cost']['builds']:>6} "
              f"{v['cost']['runs']:>5}   {theirs:<14} {sl['builds']:>6} {sl['runs']:>5}  "
              f"{100 * (e['ratio'] - 1):>+6.2f}% {100 * e['layout_noise']:>5.2f}%", flush=True)

    def line(name, ok_key, cost, pct):
        pl = [r for r in rows if r["planted"] and r["pct"] == pct]
        nl = [r for r in rows if not r["planted"]]
        ok = sum(r[ok_key] for r in pl)
        b = statistics.mean(cost(r)["builds"] for r in pl + nl) if rows else 0
        n = statistics.mean(cost(r)["runs"] for r in pl + nl) if rows else 0
        null = f"{sum(r[ok_key] for r in nl)}/{len(nl)}" if nl else "-"
        print(f"{name:<34} {pct:>5g}% {ok:>3}/{len(pl):<3} ({100 * ok / max(1, len(pl)):>3.0f}%)   {null:>10}   "
              f"{b:>8.1f} {n:>8.1f}")

    print()
    print(f"{'':<34} {'regr.':>6} {'right culprit':<16} {'null: no blame':>10}   {'builds':>8} {'runs':>8}  "
          "(mean per history)")
    for pct in pcts:
        line("layoutbench bisect (K layouts)", "ours_ok", lambda r: r["cost"], pct)
        line("single layout (default, 1 run)", "theirs_ok", lambda r: r["single"], pct)
    wrong = [r for r in rows if r["planted"] and not r["ours_ok"]]
    if wrong:
        print("layoutbench misses: " + ", ".join(f"seed {r['seed']}: {r['status']}" for r in wrong))
    print(f"wall time {time.monotonic() - t0:.0f}s; builds count commits compiled (an object cache is shared by "
          f"both bisections: their builds overlap), runs count cachegrind runs")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
