#!/usr/bin/env python3
"""layoutbench on a real history (lz4), checked against a ground truth it does not use.

It sweeps a first-parent range of the lz4 repository (``bench/real/lz4``: the library's
lib/*.c and a compress/decompress driver, a static-glibc program relinked per layout) under
cachegrind with a small I1, every commit, in the default link and K seeded layouts (``--kind``:
random, shuffled or padded; ``layoutbench history``).  Then:

* the ground truth: the executed instruction count ``cg_ir`` of each commit's default link
  against its first parent's.  Equal: the commit did not change the code the benchmark runs,
  so it must never be named as a code change.  Changed by at least the minimum effect: a
  candidate.  In between (a few instructions, e.g. glibc's start-up code seeing .data move):
  neither.
* ``layoutbench history`` names code changes from ``cg_cost`` (instructions + 20 x I1 misses)
  over the seeded layouts; the script counts how many of them changed ``cg_ir``.
* bisections over consecutive windows of W commits: ``layoutbench bisect`` (K layouts of the same kind)
  and, in the same run, the single default-link bisection (one run per probe, nearest value),
  each culprit checked against ``cg_ir``.

The range is walked along first parents (as ``git log --first-parent``): a merge is one step,
judged against its first parent, and its branch's commits are not probed one by one.
Resumable: the sweep keeps every run in the store; run the same command again to continue.

    nice -n 10 python bench/real_history.py --workdir /tmp/lb-real [--range v1.9.2..48d9b741]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the lz4 history: $LAYOUTBENCH_LZ4_BUNDLE, else shared/histories/ beside this checkout
BUNDLE = Path(os.environ.get("LAYOUTBENCH_LZ4_BUNDLE")
              or Path(__file__).resolve().parents[2] / "shared" / "histories" / "lz4.bundle")


def clone(bundle: Path, dest: Path) -> Path:
    if not (dest / ".git").is_dir():
        subprocess.run(["git", "clone", "-q", str(bundle), str(dest)], check=True)
    return dest


def kind_of(delta: int, base: int, min_effect: float) -> str:
    if delta == 0:
        return "same"
    return "code" if abs(delta) / base >= min_effect else "tiny"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", required=True, help="objects, images, the store and the clone live here")
    ap.add_argument("--repo", help="an lz4 clone (default: clone --bundle into WORKDIR/lz4)")
    ap.add_argument("--bundle", default=str(BUNDLE))
    ap.add_argument("--range", dest="range_", default="v1.9.2..48d9b741",
                    help="A..B, walked along first parents (default: v1.9.2 to the dev tip released as v1.9.3)")
    ap.add_argument("--limit", type=int, help="only the first N commits of the range (after A)")
    ap.add_argument("--layouts", type=int, default=6, help="K seeded layouts per commit (and per bisect probe)")
    ap.add_argument("--kind", choices=["random", "shuffled", "padded"], default="random",
                    help="the seeded layouts of the history and the bisections: random object order, object and "
                         "function order (shuffled), or padding before every function (padded)")
    ap.add_argument("--window", type=int, default=10, help="commits per bisection window; 0: no bisections")
    ap.add_argument("--min-effect", type=float, default=1.0, help="percent; the tools' and the ground truth's")
    ap.add_argument("--json", help="write every number to this file too")
    a = ap.parse_args()

    work = Path(a.workdir).resolve()
    os.environ["LAYOUTBENCH_DIR"] = str(work)
    from layoutbench import bisect, history, layout, profile
    from layoutbench.store import Store

    repo = Path(a.repo).resolve() if a.repo else clone(Path(a.bundle), work / "lz4")
    prof = profile.load("lz4")
    store = Store(work / "results.sqlite")
    t0 = time.monotonic()
    commits = history.full_range(prof, a.range_, str(repo))
    if a.limit:
        commits = commits[:a.limit + 1]
    spec = f"{commits[0]}..{commits[-1]}"
    tgt = prof.target("cachegrind")
    min_eff = a.min_effect / 100
    print(f"lz4 {a.range_} ({len(commits) - 1} first-parent commits after {commits[0][:12]}), cachegrind "
          f"I1={tgt.settings.get('i1')} args {' '.join(tgt.settings.get('args', []))}; layouts default + "
          f"{a.kind}:{a.layouts}; metric cg_cost (Ir + {tgt.settings.get('miss_weight', 20)} x I1 misses); "
          f"min effect {a.min_effect:g}%", flush=True)

    specs = layout.parse_specs([f"default,{a.kind}:{a.layouts}"], 1)

    def say(m: str) -> None:
        print(f"  · {m}", file=sys.stderr, flush=True)

    opts = history.SweepOptions(spec=spec, repo=str(repo), specs=tuple(specs), runs=1, mode="rerun",
                                target="cachegrind")
    out = history.sweep(prof, store, commits, opts, say=say)
    h = history.analyse(store, out.series, prof, min_effect=min_eff)
    print(f"sweep: {len(out.measured)} points, {out.ran} runs now, {out.skipped} stored, "
          f"{len(out.build_failed)} did not build; {time.monotonic() - t0:.0f}s", flush=True)

    # -- ground truth: cg_ir of the default link, per measured point, against the previous one
    ir = {p.commit: p.groups.get("cg_ir", {}).get("default", [None])[0] for p in h.points}
    truth: dict[str, dict] = {}
    prev = None
    for p in h.points:
        if ir.get(p.commit) is None:
            continue
        if prev is not None:
            d = int(ir[p.commit] - ir[prev])
            truth[p.commit] = {"prev": prev, "delta": d, "kind": kind_of(d, int(ir[prev]), min_eff),
                               "subject": p.info.get("subject", "")}
        prev = p.commit
    n = {k: sum(t["kind"] == k for t in truth.values()) for k in ("same", "tiny", "code")}
    print(f"ground truth over {len(truth)} steps: {n['same']} leave cg_ir equal, {n['tiny']} change it by less "
          f"than {a.min_effect:g}%, {n['code']} by {a.min_effect:g}% or more (the candidates)")
    print()
    print(f"{'commit':<12} {'cg_ir':>11} {'d cg_ir':>9} {'truth':<5} {'cg_cost default':>15} {'history':<20} subject")
    changes = {c.commit: c for c in h.changes if c.metric == "cg_cost"}
    for p in h.points:
        t = truth.get(p.commit)
        c = changes.get(p.commit)
        cost = p.groups.get("cg_cost", {}).get("default", [None])[0]
        said = "" if c is None else ("CODE " if c.kind == "code change" else "noise ") + f"{100 * c.effect:+.2f}%"
        print(f"{p.short:<12} {ir.get(p.commit) or 0:>11.0f} {(t['delta'] if t else 0):>+9d} "
              f"{(t['kind'] if t else '-'):<5} {cost or 0:>15.0f} {said:<20} {p.info.get('subject', '')[:50]}")

    def tally(name: str, named: list[str]) -> dict:
        kinds = [truth[c]["kind"] if c in truth else "?" for c in named]
        r = {"named": len(named), "changed_ir": sum(k in ("tiny", "code") for k in kinds),
             "ir_equal": sum(k == "same" for k in kinds), "candidates": sum(k == "code" for k in kinds)}
        print(f"{name:<44} {r['named']:>5} {r['changed_ir']:>10} {r['ir_equal']:>14} {r['candidates']:>10}")
        return r

    print()
    print(f"{'named as a code change by':<44} {'named':>5} {'changed Ir':>10} {'Ir equal (bad)':>14} "
          f"{'>= min eff':>10}")
    res = {"history": tally(f"layoutbench history ({a.kind} layouts, paired)",
                            [c for c, ch in changes.items() if ch.kind == "code change"])}
    noise = [c for c, ch in changes.items() if ch.kind == "within layout noise"]
    res["history_noise"] = tally("  (history: 'within layout noise', not named)", noise)
    res["default_link_steps"] = tally(
        f"default link alone, any step of >= {a.min_effect:g}% cg_cost",
        [p.commit for p in h.points if p.commit in truth and _step(h, p, "cg_cost", min_eff)])

    # -- bisections over windows of the range
    bis = []
    if a.window:
        pts = [p.commit for p in h.points if ir.get(p.commit) is not None]
        for i in range(0, len(pts) - 1, a.window):
            good, bad = pts[i], pts[min(i + a.window, len(pts) - 1)]
            s = bisect.Settings(kernel="lz4", repo=str(repo), target="cachegrind", metric="cg_cost",
                                layouts=min(4, a.layouts), max_layouts=a.layouts, min_effect=min_eff,
                                layout=a.kind)
            v = bisect.run(store, prof, s, good, bad, lambda m: None)
            sl = v.get("single_layout", {})
            bis.append({"good": good, "bad": bad, "status": v["status"], "culprit": v.get("culprit"),
                        "range": v.get("range", []), "single": sl.get("culprit"),
                        "endpoints": v["endpoints"]["ratio"], "runs": v["cost"]["runs"], "single_runs": sl.get("runs")})
        print()
        print(f"bisections over windows of {a.window} commits (first parent), cg_cost, min effect {a.min_effect:g}%:")
        print(f"{'good..bad':<27} {'BAD/GOOD':>8}  {'layoutbench':<36} {'single default link':<22}")
        for b in bis:
            if b["culprit"]:
                ours = b["culprit"][:12] + f" ({truth.get(b['culprit'], {}).get('kind', '?')})"
            elif b["status"] == "range":  # probes that could not be judged: the culprit is one of these
                ours = f"range of {len(b['range'])}: " + ",".join(
                    c[:7] + f"({truth.get(c, {}).get('kind', '?')})" for c in b["range"])
            else:
                ours = b["status"]
            theirs = b["single"][:12] + f" ({truth.get(b['single'], {}).get('kind', '?')})" if b["single"] else "-"
            print(f"{b['good'][:12]}..{b['bad'][:12]} {b['endpoints']:>8.4f}  {ours:<36} {theirs:<22}")
        # windows where the endpoints differ in cg_ir by >= min effect have a true culprit to find
        print()
        print(f"{'named as the culprit by':<44} {'named':>5} {'changed Ir':>10} {'Ir equal (bad)':>14} "
              f"{'>= min eff':>10}")
        res["bisect"] = tally("layoutbench bisect", [b["culprit"] for b in bis if b["culprit"]])
        res["bisect_single"] = tally("single default-link bisection", [b["single"] for b in bis if b["single"]])
        windows_with_code = sum(any(truth.get(c, {}).get("kind") == "code"
                                    for c in pts[pts.index(b["good"]) + 1:pts.index(b["bad"]) + 1]) for b in bis)
        in_range = sum(any(truth.get(c, {}).get("kind") == "code" for c in b["range"]) for b in bis)
        print(f"{len(bis)} windows, {windows_with_code} of them hold a commit that changes cg_ir by >= "
              f"{a.min_effect:g}%; layoutbench said 'noise' or 'not-shown' (nothing to blame) in "
              f"{sum(b['status'] in ('noise', 'not-shown') for b in bis)}, gave a range of candidates in "
              f"{sum(b['status'] == 'range' for b in bis)} ({in_range} holding such a commit)")
    print(f"wall time {time.monotonic() - t0:.0f}s")
    if a.json:
        Path(a.json).write_text(json.dumps({"truth": truth, "results": res, "bisections": bis,
                                            "changes": [c.to_dict() for c in h.changes]}, indent=1))


def _step(h, p, metric: str, min_eff: float) -> bool:
    """Did the default link alone change ``metric`` by min_eff at this point (a one-layout benchmark)?"""
    prev = h.previous(p)
    if prev is None:
        return False
    a = prev.groups.get(metric, {}).get("default")
    b = p.groups.get(metric, {}).get("default")
    return bool(a and b) and abs(b[0] / a[0] - 1) >= min_eff


if __name__ == "__main__":
    main()
