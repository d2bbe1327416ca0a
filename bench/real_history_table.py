"""docs/real-history.md, "Several layout kinds side by side": bench/real_history.py's runs with several seeded layout kinds, side by side.

Reads the ``--json`` files real_history.py wrote (``WORKDIR/KIND-K.json``) and the store
they share, and prints per kind and K: what ``history`` named (right or wrong by the
ground truth), what the bisections said per window and what they cost, and how well the
layouts sample the layout effect of the layout-only steps (truth equal): the mean over the
K layouts of each such step's paired change, which a layout kind that samples the effect
well keeps near 0, and the same for the real changes.

    python3 -m bench.real_history_table --workdir /tmp/lb-h --kinds random,shuffled,padded --layouts 6,12
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import sys
from pathlib import Path


def per_layout(db: sqlite3.Connection, metric: str, kind: str, k: int) -> dict[str, dict[int, float]]:
    """commit → seed → ``metric`` of the layouts ``kind:1..k`` (the latest run of each image)."""
    q = """SELECT b.commit_sha, b.seed, s.value FROM samples s JOIN runs r ON r.id = s.run_id
           JOIN builds b ON b.id = r.build_id
           WHERE s.metric = ? AND r.status = 'ok' AND b.layout = ? AND b.seed BETWEEN 1 AND ?
           ORDER BY r.id"""
    out: dict[str, dict[int, float]] = {}
    for sha, seed, v in db.execute(q, (metric, kind, k)):
        out.setdefault(sha, {})[seed] = v  # ordered by run id: the latest wins
    return out


def mean_change(vals: dict, prev: str, cur: str, k: int) -> float | None:
    a, b = vals.get(prev, {}), vals.get(cur, {})
    seeds = [s for s in range(1, k + 1) if s in a and s in b]
    if len(seeds) < k:
        return None
    return math.expm1(statistics.fmean(math.log(b[s] / a[s]) for s in seeds))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", required=True, help="where real_history.py wrote KIND-K.json")
    ap.add_argument("--store", help="the store real_history.py used (default WORKDIR/results.sqlite)")
    ap.add_argument("--kinds", default="random,shuffled,padded", help="the KIND-K.json files to read, per kind")
    ap.add_argument("--layouts", default="6,12", help="... and per K")
    a = ap.parse_args(argv)
    work = Path(a.workdir)
    store = Path(a.store) if a.store else work / "results.sqlite"
    if not store.is_file():
        print(f"real_history_table: error: no store at {store} (give the one real_history.py used with --store)",
              file=sys.stderr)
        return 2
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=60)
    rows = []
    metric = truth_metric = None
    for kind in a.kinds.split(","):
        for k in (int(x) for x in a.layouts.split(",")):
            f = work / f"{kind}-{k}.json"
            if not f.is_file():
                continue
            d = json.loads(f.read_text())
            truth = d["truth"]
            metric, truth_metric = d["metric"], d["truth_metric"]
            vals = per_layout(db, metric, kind, k)
            code = [c for c, t in truth.items() if t["kind"] == "code"]
            named = [c for c in d["changes"] if c["metric"] == metric and c["kind"] == "code change"]
            same = [c for c, t in truth.items() if t["kind"] == "same"]
            steps = [mean_change(vals, truth[c]["prev"], c, k) for c in same]
            steps = [abs(x) for x in steps if x is not None]
            real = {c: mean_change(vals, truth[c]["prev"], c, k) for c in code}
            bis = d["bisections"]

            def said(b):
                if b["culprit"]:
                    return b["culprit"][:8] + "(" + truth.get(b["culprit"], {}).get("kind", "?") + ")"
                if b["status"] == "range":
                    kinds = {truth.get(c, {}).get("kind", "?") for c in b["range"]}
                    return f"range{len(b['range'])}" + ("+code" if "code" in kinds else "")
                return b["status"]
            sds = [statistics.stdev(math.log(x) for x in v.values()) for v in vals.values() if len(v) == k]
            rows.append({
                "kind": kind, "k": k, "sd": 100 * statistics.median(sds),
                "hist_named": len(named),
                "hist_wrong": sum(truth.get(c["commit"], {}).get("kind") == "same" for c in named),
                "hist_code": sum(c["commit"] in code for c in named),
                "real": ", ".join(f"{c[:8]} {100 * v:+.2f}%" for c, v in real.items() if v is not None),
                "real_ci": ", ".join(f"{c['ratio']:.4f} ({c['ci_low']:.4f}…{c['ci_high']:.4f})" for c in d["changes"]
                                     if c["metric"] == metric and c["commit"] in code),
                "same_max": 100 * max(steps, default=0.0), "same_min_effect": sum(x >= d["min_effect"] for x in steps),
                "same_n": len(steps), "steps": len(truth), "window": d["window"], "min_effect": d["min_effect"],
                "bisect": " ".join(f"{said(b)}/{b['runs']}" for b in bis),
                "bisect_code": sum(bool(b["culprit"]) and truth.get(b["culprit"], {}).get("kind") == "code"
                                   for b in bis),
                "bisect_wrong": sum((bool(b["culprit"]) and truth.get(b["culprit"], {}).get("kind") == "same")
                                    or (b["status"] == "range" and all(truth.get(c, {}).get("kind") == "same"
                                                                       for c in b["range"])) for b in bis),
                "bisect_runs": sum(b["runs"] for b in bis), "single_runs": sum(b["single_runs"] or 0 for b in bis),
            })
    if not rows:
        print(f"real_history_table: error: no KIND-K.json in {work} for kinds {a.kinds} and K {a.layouts} "
              "(write them with python3 -m bench.real_history --json)", file=sys.stderr)
        return 2
    r0 = rows[0]
    print(f"history ({r0['steps']} first-parent steps; {metric}, truth {truth_metric}, min effect "
          f"{100 * r0['min_effect']:g}%, Holm over the steps):")
    print(f"{'layouts':<20} {'layout':>6} {'named':>5} {'truth':>8} {'real':>4}  "
          f"{'layout-only steps: |mean paired change|':<40}  the real changes")
    print(f"{'':<20} {'sd':>6} {'':>5} {'equal':>8} {'':>4}  {'max':>7} {'>= min':>6} {'of':>3}{'':<22}  "
          "mean paired change; history's ratio (95% CI)")
    for r in rows:
        print(f"{r['kind'] + ':' + str(r['k']):<20} {r['sd']:>5.2f}% {r['hist_named']:>5} {r['hist_wrong']:>8} "
              f"{r['hist_code']:>4}  {r['same_max']:>6.2f}% {r['same_min_effect']:>6} {r['same_n']:>3}{'':<22}  "
              f"{r['real']}; {r['real_ci']}")
    print(f"(layout sd: the median over the commits of the sd of log {metric} over the K layouts)")
    print()
    print(f"bisections over windows of {r0['window']} commits:")
    print(f"{'layouts':<20} {'culprit right':>13} {'false claim':>11} {'runs':>5}  per window: verdict/runs")
    for r in rows:
        print(f"{r['kind'] + ':' + str(r['k']):<20} {r['bisect_code']:>13} {r['bisect_wrong']:>11} "
              f"{r['bisect_runs']:>5}  {r['bisect']}")
    if rows:
        print(f"(single default-link bisection, the same windows: {rows[0]['single_runs']} runs)")
    kinds = a.kinds.split(",")
    if "random" in kinds and "shuffled" in kinds:  # the same commit and seed in both
        k = max(int(x) for x in a.layouts.split(","))
        r, s = per_layout(db, metric, "random", k), per_layout(db, metric, "shuffled", k)
        d = sorted(abs(r[c][i] - s[c][i]) for c in r if c in s for i in r[c] if i in s[c])
        if d:
            print(f"random vs shuffled, the same commit and seed ({len(d)} pairs): |d {metric}| at most {d[-1]:.6g}, "
                  f"median {d[len(d) // 2]:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
