"""docs/how-it-decides.md, "A layout's value, and the noise pooled": how alike a seed's layout is on two commits.

A random layout is drawn from its seed over the commit's objects.  Where the objects barely
change between two commits, seed s lands much the same code in much the same places on both,
and the metric's layout effect at seed s is partly the same: the two commits' values at the
same seeds are positively correlated.  layoutbench compares commits *unpaired* (each commit's
layouts a sample of the layout distribution), which is right whatever the correlation and
conservative when it is positive.  A paired comparison (differences at shared seeds) would
need var(x - y) / (var x + var y) of the layouts instead -- if the correlation were known
and the same for every pair of commits.  This script measures it, from a results store.

For every pair of commits (same kernel image) with at least ``--min-shared`` seeds measured
on both (a seed's value: the mean of the log metric over its ok runs), it computes the
variance ratio var(x - y) / (var x + var y) (1: no gain from pairing, 0.5: half the layouts)
and Pearson's correlation of x and y over the shared seeds.  Pairs whose images are
byte-identical at every shared seed (a commit that changed no object: the same image, the same
value) are counted and left out: they measure the image twice, not two commits.  With
``--repo`` (one or more git repositories holding the commits) it also gives the commit
distance of each pair (positions in ``git rev-list --topo-order --all``), pairs only commits
of one repository, and prints the same numbers by distance.

    python3 -m bench.seed_persistence STORE [--metric cg_cost] [--layout random] [--target T]
                                      [--args A] [--min-shared 6] [--repo REPO ...] [--json]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import subprocess
from pathlib import Path

import numpy as np

from layoutbench.errors import LayoutbenchError
from layoutbench.store import Store

BINS = ((1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 10 ** 9))  #: commit-distance groups of the table


def seed_values(store: Store, metric: str, layout: str, target: str | None = None,
                args: str | None = None) -> tuple[dict, dict]:
    """(values, images): values[(commit, image)][seed] = the mean log of ``metric`` over the
    seed's ok runs; images[(commit, image)][seed] = the set of image hashes those runs ran."""
    logs = collections.defaultdict(lambda: collections.defaultdict(list))
    builds = set()
    for s in store.samples(metric=metric, layout=layout, status="ok", target=target, args=args):
        if s["value"] > 0:
            logs[(s["commit_sha"], s["image"])][s["seed"]].append(math.log(s["value"]))
            builds.add(s["build_id"])
    sha = {b["id"]: b for b in store.builds(layout=layout)} if builds else {}
    images = collections.defaultdict(lambda: collections.defaultdict(set))
    for bid in builds:
        b = sha[bid]
        images[(b["commit_sha"], b["image"])][b["seed"]].add(b["image_sha256"])
    values = {k: {seed: float(np.mean(v)) for seed, v in by.items()} for k, by in logs.items()}
    return values, images


def commit_order(repos: list[str]) -> dict[str, dict[str, int]]:
    """order[commit][repo] = the commit's position in the repository (oldest 0)."""
    order: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for repo in repos:
        p = subprocess.run(["git", "-C", repo, "rev-list", "--topo-order", "--reverse", "--all"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"--repo {repo}: not a git repository with commits; give the history the store's "
                             "commits come from")
        for i, c in enumerate(p.stdout.split()):
            order[c][repo] = i
    return order


def pairs(values: dict, images: dict, min_shared: int = 6, order: dict | None = None) -> tuple[list[dict], dict]:
    """Every pair of commits (same image) with ``min_shared`` seeds or more on both: its
    shared seeds, variance ratio, correlation and (``order`` given) distance; and the counts of
    pairs left out: too few shared seeds, identical images, no common repository, no spread."""
    out, left = [], collections.Counter()
    for a, b in itertools.combinations(sorted(values), 2):
        if a[1] != b[1]:
            continue
        dist = None
        if order is not None:
            common = set(order.get(a[0], {})) & set(order.get(b[0], {}))
            if not common:
                left["no common repository"] += 1
                continue
            dist = abs(order[a[0]][min(common)] - order[b[0]][min(common)])
        shared = sorted(set(values[a]) & set(values[b]))
        if len(shared) < min_shared:
            left["fewer shared seeds"] += 1
            continue
        if all(images[a][s] == images[b][s] for s in shared):
            left["identical images"] += 1
            continue
        x = np.array([values[a][s] for s in shared])
        y = np.array([values[b][s] for s in shared])
        va, vb = x.var(ddof=1), y.var(ddof=1)
        if va <= 0 or vb <= 0:
            left["no spread"] += 1
            continue
        out.append({"a": a[0], "b": b[0], "image": a[1], "shared": len(shared), "distance": dist,
                    "ratio": float(np.var(x - y, ddof=1) / (va + vb)), "corr": float(np.corrcoef(x, y)[0, 1])})
    return out, dict(left)


def summary(ps: list[dict]) -> dict | None:
    """Median (and quartiles) of the variance ratio, mean and median correlation, of ``ps``."""
    if not ps:
        return None
    r, c = np.array([p["ratio"] for p in ps]), np.array([p["corr"] for p in ps])
    return {"pairs": len(ps), "ratio_median": float(np.median(r)), "ratio_q1": float(np.percentile(r, 25)),
            "ratio_q3": float(np.percentile(r, 75)), "corr_mean": float(c.mean()), "corr_median": float(np.median(c)),
            "shared_median": float(np.median([p["shared"] for p in ps]))}


def by_distance(ps: list[dict]) -> list[dict]:
    out = []
    for lo, hi in BINS:
        s = summary([p for p in ps if p["distance"] is not None and lo <= p["distance"] <= hi])
        if s:
            out.append({"lo": lo, "hi": hi, **s})
    return out


def bin_label(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}" if hi < 10 ** 9 else f">={lo}"


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("store", help="a results store (SQLite file)")
    ap.add_argument("--metric", default="cg_cost")
    ap.add_argument("--layout", default="random", help="the layout whose seeds are compared (default: random)")
    ap.add_argument("--target", help="only runs of this target")
    ap.add_argument("--args", help="only runs with these program arguments")
    ap.add_argument("--min-shared", type=int, default=6, help="seeds a pair of commits must share (default 6)")
    ap.add_argument("--repo", nargs="+", action="extend", default=[],
                    help="git repositories holding the commits: distances, and pairs within one repository only")
    ap.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    a = ap.parse_args()
    if not Path(a.store).is_file():
        raise SystemExit(f"{a.store}: no such store; give the results.sqlite a bench or a bisection wrote")
    try:
        store = Store(a.store)
    except LayoutbenchError as e:
        raise SystemExit(str(e)) from None
    values, images = seed_values(store, a.metric, a.layout, a.target, a.args)
    if not values:
        raise SystemExit(f"{a.store}: no ok samples of {a.metric} in layout {a.layout}; name a stored metric "
                         "(--metric) and layout (--layout)")
    order = commit_order(a.repo) if a.repo else None
    ps, left = pairs(values, images, a.min_shared, order)
    result = {"store": str(a.store), "metric": a.metric, "layout": a.layout, "min_shared": a.min_shared,
              "commits": len(values), "left_out": left, "all": summary(ps),
              "by_distance": by_distance(ps) if order is not None else None}
    if a.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{a.store}: {a.metric}, layout {a.layout}: {len(values)} commit images, {len(ps)} pairs with >= "
          f"{a.min_shared} shared seeds" + ("; left out: " + ", ".join(f"{n} ({why})" for why, n in sorted(left.items()))
                                            if left else ""))
    if not ps:
        print("no pair to compare")
        return
    print(f"{'distance':>9} {'pairs':>6} {'seeds':>6} {'var(x-y)/(var x+var y)':>23} {'(quartiles)':>13} "
          f"{'corr mean':>10} {'median':>7}")
    lines = [("all", result["all"])] + [(bin_label(d["lo"], d["hi"]), d) for d in result["by_distance"] or []]
    for label, s in lines:
        print(f"{label:>9} {s['pairs']:>6} {s['shared_median']:>6.0f} {s['ratio_median']:>23.2f} "
              f"{s['ratio_q1']:>6.2f}-{s['ratio_q3']:<6.2f} {s['corr_mean']:>+10.2f} {s['corr_median']:>+7.2f}")
    print("(seeds: median shared per pair; a paired comparison of such a pair needs about the ratio times the "
          "layouts an unpaired one needs, at the correlation of that pair)")


if __name__ == "__main__":
    main()
