"""docs/real-history.md's tables: layoutbench on a history, checked against a ground truth it does not use.

For any profile and any range of its repository: the range is swept along first parents
under the profile's target (a deterministic one such as ``cachegrind`` makes the check
exact), every commit, in the default link and K seeded layouts (``--kind``: random,
shuffled or padded; ``layoutbench history``).  Then:

* the ground truth: a metric the tools do not judge (``--truth``, default ``cg_ir``: the
  executed instruction count) of each commit's default link against its first parent's.
  Equal: the commit did not change the code the benchmark runs, so it must never be named as
  a code change.  Changed by at least the minimum effect: a candidate.  In between: neither.
* ``layoutbench history`` names code changes from ``--metric`` (default the profile's
  default metric, e.g. ``cg_cost`` = instructions + weight x I1 misses) over the seeded
  layouts; the script counts how many of them changed the truth.
* bisections over consecutive windows of W commits: ``layoutbench bisect`` (K layouts of the
  same kind) and, in the same run, the single default-link bisection (one run per probe),
  each culprit checked against the truth.

The range is walked along first parents (as ``git log --first-parent``): a merge is one step,
judged against its first parent.  Resumable: the sweep keeps every run in the store; run the
same command again to continue.

    python kernels/minikernel/make_history.py /tmp/h --commits 12 --seed 5 --regression-at 7
    nice -n 10 python3 -m bench.real_history --profile minikernel --repo /tmp/h --range GOOD..BAD \\
        --target cachegrind --args iterations=300 --workdir /tmp/lb-h --json /tmp/lb-h/random-6.json
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


def kind_of(delta: float, base: float, min_effect: float) -> str:
    """What a change of the truth metric says of a commit: ``same``, ``tiny`` or ``code``."""
    if delta == 0:
        return "same"
    return "code" if abs(delta) / abs(base) >= min_effect else "tiny"


def ground_truth(points, truth_metric: str, min_eff: float) -> tuple[dict, dict]:
    """The truth metric of each point's default link, and per point (after the first one that has
    it) its change against the previous point that has it."""
    val = {p.commit: (p.groups.get(truth_metric, {}).get("default") or [None])[0] for p in points}
    truth: dict[str, dict] = {}
    prev = None
    for p in points:
        if val.get(p.commit) is None:
            continue
        if prev is not None:
            d = val[p.commit] - val[prev]
            truth[p.commit] = {"prev": prev, "delta": d, "kind": kind_of(d, val[prev], min_eff),
                               "subject": p.info.get("subject", "")}
        prev = p.commit
    return val, truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True, help="a profile name (kernels/, $LAYOUTBENCH_PROFILES) or kernel.toml")
    ap.add_argument("--repo", required=True, help="the git repository holding the history")
    ap.add_argument("--range", dest="range_", required=True, help="A..B, walked along first parents")
    ap.add_argument("--workdir", required=True, help="objects and images live here (and the store, by default)")
    ap.add_argument("--store", help="the results store (default WORKDIR/results.sqlite)")
    ap.add_argument("--target", help="the profile's target to run (default: its default target)")
    ap.add_argument("--args", default=None, help="extra program arguments, e.g. iterations=300")
    ap.add_argument("--metric", help="the metric the tools judge (default: the profile's default metric)")
    ap.add_argument("--truth", default="cg_ir", help="the ground-truth metric the tools do not judge (default cg_ir)")
    ap.add_argument("--limit", type=int, help="only the first N commits of the range (after A)")
    ap.add_argument("--layouts", type=int, default=6, help="K seeded layouts per commit (and per bisect probe)")
    ap.add_argument("--kind", choices=["random", "shuffled", "padded"], default="random",
                    help="the seeded layouts of the history and the bisections: random object order, object and "
                         "function order (shuffled), or padding before every function (padded)")
    ap.add_argument("--window", type=int, default=10, help="commits per bisection window; 0: no bisections")
    ap.add_argument("--min-effect", type=float, default=None,
                    help="percent; the tools' and the ground truth's (default: the tools' default)")
    ap.add_argument("--json", help="write every number to this file too")
    ap.add_argument("--bisect-store", help="the bisections' store (default: the sweep's, whose runs they reuse; a new "
                    "file: each bisection measures from scratch, as a first bisection of the range would)")
    a = ap.parse_args(argv)

    work = Path(a.workdir).resolve()
    os.environ["LAYOUTBENCH_DIR"] = str(work)
    from layoutbench import history, layout, profile
    from layoutbench.errors import LayoutbenchError
    from layoutbench.store import Store

    try:
        prof = profile.load(a.profile)
        repo = str(Path(a.repo).resolve())
        target = a.target or prof.default_target
        tgt = prof.target(target)
        metric = a.metric or prof.default_metric
        if not metric:
            raise LayoutbenchError(f"profile {prof.name!r} names no default metric: give --metric")
        store = Store(Path(a.store) if a.store else work / "results.sqlite")
        commits = history.full_range(prof, a.range_, repo)
    except LayoutbenchError as e:
        print(f"real_history: error: {e}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    if a.limit:
        commits = commits[:a.limit + 1]
    spec = f"{commits[0]}..{commits[-1]}"
    if a.min_effect is None:
        from layoutbench.validate import DEFAULT_MIN_EFFECT
        a.min_effect = 100 * DEFAULT_MIN_EFFECT
    min_eff = a.min_effect / 100
    extra = tuple(a.args.split()) if a.args else None
    print(f"{prof.name} {a.range_} ({len(commits) - 1} first-parent commits after {commits[0][:12]}), target "
          f"{target} ({tgt.kind}); layouts default + {a.kind}:{a.layouts}; metric {metric}, truth {a.truth}; "
          f"min effect {a.min_effect:g}%", flush=True)

    specs = layout.parse_specs([f"default,{a.kind}:{a.layouts}"], 1)

    def say(m: str) -> None:
        print(f"  · {m}", file=sys.stderr, flush=True)

    opts = history.SweepOptions(spec=spec, repo=repo, specs=tuple(specs), runs=1, mode="rerun", target=target,
                                extra=extra)
    out = history.sweep(prof, store, commits, opts, say=say)
    h = history.analyse(store, out.series, prof, min_effect=min_eff)
    print(f"sweep: {len(out.measured)} points, {out.ran} runs now, {out.skipped} stored, "
          f"{len(out.build_failed)} did not build; {time.monotonic() - t0:.0f}s", flush=True)

    val, truth = ground_truth(h.points, a.truth, min_eff)
    if not truth:
        print(f"real_history: error: no two points have the truth metric {a.truth!r} in their default link "
              f"(does target {target!r} report it?)", file=sys.stderr)
        return 2
    n = {k: sum(t["kind"] == k for t in truth.values()) for k in ("same", "tiny", "code")}
    print(f"ground truth over {len(truth)} steps: {n['same']} leave {a.truth} equal, {n['tiny']} change it by less "
          f"than {a.min_effect:g}%, {n['code']} by {a.min_effect:g}% or more (the candidates)")
    print()
    print(f"{'commit':<12} {a.truth:>13} {'change':>11} {'truth':<5} {metric + ' default':>18} {'history':<20} subject")
    changes = {c.commit: c for c in h.changes if c.metric == metric}
    for p in h.points:
        t = truth.get(p.commit)
        c = changes.get(p.commit)
        v = p.groups.get(metric, {}).get("default", [None])[0]
        said = "" if c is None else {"code change": "CODE ", "below the minimum effect": "below ",
                                     "within layout noise": "noise "}.get(c.kind, "n/s ") + f"{100 * c.effect:+.2f}%"
        print(f"{p.short:<12} {val.get(p.commit) or 0:>13.6g} {(t['delta'] if t else 0):>+11.6g} "
              f"{(t['kind'] if t else '-'):<5} {v or 0:>18.6g} {said:<20} {p.info.get('subject', '')[:50]}")

    def tally(name: str, named: list[str]) -> dict:
        kinds = [truth[c]["kind"] if c in truth else "?" for c in named]
        r = {"named": len(named), "changed_truth": sum(k in ("tiny", "code") for k in kinds),
             "truth_equal": sum(k == "same" for k in kinds), "candidates": sum(k == "code" for k in kinds)}
        print(f"{name:<48} {r['named']:>5} {r['changed_truth']:>13} {r['truth_equal']:>17} {r['candidates']:>10}")
        return r

    header = (f"{'':<48} {'named':>5} {'truth changed':>13} {'truth equal (bad)':>17} {'>= min eff':>10}")
    print()
    print(f"named as a code change by{header[25:]}")
    res = {"history": tally(f"layoutbench history ({a.kind} layouts, pooled noise)",
                            [c for c, ch in changes.items() if ch.kind == "code change"])}
    noise = [c for c, ch in changes.items() if ch.kind == "within layout noise"]
    res["history_noise"] = tally("  (history: 'within layout noise', not named)", noise)
    res["default_link_steps"] = tally(
        f"default link alone, any step of >= {a.min_effect:g}% {metric}",
        [p.commit for p in h.points if p.commit in truth and _step(h, p, metric, min_eff)])

    bis = []
    if a.window:
        pts = [p.commit for p in h.points if val.get(p.commit) is not None]
        for i in range(0, len(pts) - 1, a.window):
            good, bad = pts[i], pts[min(i + a.window, len(pts) - 1)]
            bis.append(bisect_window(a, a.profile, repo, target, metric, min_eff, work,
                                     a.bisect_store or store.url or str(store.path), good, bad))
        print()
        print(f"bisections over windows of {a.window} commits (first parent), {metric}, min effect {a.min_effect:g}%:")
        print(f"{'good..bad':<27} {'BAD/GOOD':>8}  {'layoutbench':<36} {'runs':>5} {'plan':>5} {'wall':>6}  "
              f"{'single default link':<22}")
        for b in bis:
            if b["culprit"]:
                ours = b["culprit"][:12] + f" ({truth.get(b['culprit'], {}).get('kind', '?')})"
            elif b["status"] == "range":  # probes that could not be judged: the culprit is one of these
                ours = f"range of {len(b['range'])}: " + ",".join(
                    c[:7] + f"({truth.get(c, {}).get('kind', '?')})" for c in b["range"])
            else:
                ours = b["status"]
            theirs = b["single"][:12] + f" ({truth.get(b['single'], {}).get('kind', '?')})" if b["single"] else "-"
            print(f"{b['good'][:12]}..{b['bad'][:12]} {b['endpoints']:>8.4f}  {ours:<36} {b['runs']:>5} "
                  f"{b['plan_runs'] or '-':>5} {b['seconds']:>5.0f}s  {theirs:<22}")
        print()
        print(f"named as the culprit by{header[23:]}")
        res["bisect"] = tally("layoutbench bisect", [b["culprit"] for b in bis if b["culprit"]])
        res["bisect_single"] = tally("single default-link bisection", [b["single"] for b in bis if b["single"]])
        windows_with_code = sum(any(truth.get(c, {}).get("kind") == "code"
                                    for c in pts[pts.index(b["good"]) + 1:pts.index(b["bad"]) + 1]) for b in bis)
        in_range = sum(any(truth.get(c, {}).get("kind") == "code" for c in b["range"]) for b in bis)
        print(f"{len(bis)} windows, {windows_with_code} of them hold a commit that changes {a.truth} by >= "
              f"{a.min_effect:g}%; layoutbench said 'noise' or 'not-shown' (nothing to blame) in "
              f"{sum(b['status'] in ('noise', 'not-shown') for b in bis)}, gave a range of candidates in "
              f"{sum(b['status'] == 'range' for b in bis)} ({in_range} holding such a commit); runs: layoutbench "
              f"{sum(b['runs'] for b in bis)}, single default link {sum(b['single_runs'] or 0 for b in bis)}")
    print(f"wall time {time.monotonic() - t0:.0f}s")
    if a.json:
        Path(a.json).write_text(json.dumps({
            "profile": prof.name, "range": a.range_, "metric": metric, "truth_metric": a.truth, "kind": a.kind,
            "layouts": a.layouts, "window": a.window, "min_effect": min_eff, "truth": truth, "results": res,
            "bisections": bis, "changes": [c.to_dict() for c in h.changes]}, indent=1))
    return 0


def bisect_window(a, kernel: str, repo: str, target: str, metric: str, min_eff: float, work: Path, store: str,
                  good: str, bad: str) -> dict:
    """``layoutbench bisect run --plan`` then ``bisect run`` of GOOD..BAD, as a user types them (a new
    process each, ``--json``): the plan's forecast, the verdict, its runs and its wall time."""
    words = ["bisect", "run", kernel, f"{good}..{bad}", "--repo", repo, "--target", target, "--metric", metric,
             "--layouts", str(min(4, a.layouts)), "--max-layouts", str(a.layouts), "--min-effect",
             f"{100 * min_eff:g}%", "--layout", a.kind, "--store", store, "--json"]
    if a.args:
        words += ["--args", a.args]

    def cli(*extra: str) -> tuple[dict, float]:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "layoutbench.cli", "--workdir", str(work), *words, *extra],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        if p.returncode not in (0, 1, 3, 4) or not p.stdout.strip():
            raise SystemExit(f"real_history: bisect {good[:12]}..{bad[:12]} {' '.join(extra)} failed "
                             f"(exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
        return json.loads(p.stdout), time.monotonic() - t0

    plan, plan_s = cli("--plan")
    v, secs = cli()
    sl = v.get("single_layout") or {}
    return {"good": good, "bad": bad, "status": v["status"], "culprit": v.get("culprit"),
            "culprits": v.get("culprits") or ([v["culprit"]] if v.get("culprit") else []),
            "range": v.get("range", []), "single": sl.get("culprit"), "endpoints": v["endpoints"]["ratio"],
            "runs": v["cost"]["runs"], "single_runs": sl.get("runs"), "plan_runs": (plan.get("plan") or {}).get("runs"),
            "plan_seconds": plan_s, "seconds": plan_s + secs}


def _step(h, p, metric: str, min_eff: float) -> bool:
    """Did the default link alone change ``metric`` by min_eff at this point (a one-layout benchmark)?"""
    prev = h.previous(p)
    if prev is None:
        return False
    a = prev.groups.get(metric, {}).get("default")
    b = p.groups.get(metric, {}).get("default")
    return bool(a and b) and abs(b[0] / a[0] - 1) >= min_eff


if __name__ == "__main__":
    sys.exit(main())
