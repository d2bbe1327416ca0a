"""docs/how-it-decides.md, Figure 6: how often a bisection on real builds blames the right commit, beside a single-layout one.

For each of N seeded histories made by ``kernels/minikernel/make_history.py`` (a planted
regression of ~3% in the hot path, ~40% layout-only commits, the rest ordinary), it runs
``layoutbench bisect`` (K random layouts per probe, sequential rule) and, in the same run
over the same store and object cache, the bisection a single-layout tool does (default
link, one run per probe, nearest-value rule as asv find).  Then, for M histories with
layout-only and ordinary commits only, it checks who says "nothing to blame".

The metric is ``cg_cost`` of the ``cachegrind`` target (instructions + 20 x misses of a
4 KiB simulated I1, hosted build, ``iterations=300``): deterministic, so the comparison
measures layout noise and nothing else.  On timing metrics run noise adds to it.

With ``--before REV`` it also runs, on every history, the bisection of an older layoutbench
(this repository's commit REV, exported with ``git archive`` into the work folder and run as
``python -m layoutbench.cli bisect ... --json`` from there): before/after side by side on the
same histories.  Both use one store and one object cache (the cachegrind runs are
deterministic, so a run stored by one is what the other would measure; each bisection's
state is cleared before the next starts, and each counts every run it used); the older one
links its own images (a work folder ``work-before`` beside ``work``, its ``objects`` a link to
this one's): an image record written by this tree may hold fields the older code cannot read.

With ``--two 1+3,3+1`` it also runs, per pair, N histories with two planted steps (the first
of 1%, the second of 3% more; make_history's seeded commits in the second and third quarters)
and reports whether layoutbench named both, whether the first bad commit it reported is a
true step, whether it named a commit without a step, and its runs, beside the single-layout
bisection (which names one commit at most).

Every row also gives the runs ``bisect run --plan`` foretold (``plan``, measured first on the same
history: the endpoints' first look; its ratio to the runs the bisection then spent) and the runs
of the same bisection with ``--first-only`` (``first-only``; default / first-only).

Every row also gets an *oracle* line: the runs a bisection that knows the layout noise
sigma_L (the one each history's endpoints measured) needs with fixed-size two-sample z tests,
90% power at 5% (two-sided): the endpoints sized for the row's change (null rows: the 0.5%
minimum effect), then ceil(log2 n) probes at alpha / probes, each sized to tell its step's
midpoint (two-step rows: two searches, each sized for its own step, at alpha / (2 probes));
no confirmation.  It is computed, not run: the floor of this design at the noise measured.

With ``--json`` it prints one JSON object on stdout instead (the tables go to stderr): the
settings, every history's row (its planted steps and layout-only commits by index, each
bisection's status, culprit and named commits by index, right/wrong/both, builds and runs; the
oracle's runs, the effect and the layout noise measured) and every line of the summary table
(histories, right, wrong, both, the earliest step, mean runs); an oracle that cannot reach the
power at that noise has runs null.

    python3 -m bench.bisect_accuracy [--histories 20] [--null 20] [--commits 8] [--regression-pct 0.5,1,3]
                                     [--two 1+3,3+1,2+2] [--before 9319707] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scipy.special import ndtri

ROOT = Path(__file__).resolve().parent.parent


def load_make_history():
    spec = importlib.util.spec_from_file_location("make_history", ROOT / "kernels" / "minikernel" / "make_history.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_history


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", type=int, default=20, help="histories with a planted regression")
    ap.add_argument("--null", type=int, default=20, help="histories with layout-only/ordinary commits only")
    ap.add_argument("--commits", type=int, default=8, help="commits per history (after the import)")
    ap.add_argument("--regression-pct", default="0.5,1,3", help="regression sizes to sweep (percent, comma list; \"\" for none, e.g. with --two)")
    ap.add_argument("--two", default="", help="two-step pairs, first+second size in percent (e.g. 1+3,3+1,2+2): "
                    "--histories histories each")
    ap.add_argument("--seed", type=int, default=100, help="seed of the first history")
    ap.add_argument("--layouts", type=int, default=4)
    ap.add_argument("--max-layouts", type=int, default=None, help="default: the bisection's own (decide.Plan)")
    ap.add_argument("--thorough", action="store_true",
                    help="bisect with --thorough (the ranges beside a found step searched further)")
    ap.add_argument("--args", default="iterations=300", help="program arguments of the cachegrind runs")
    ap.add_argument("--workdir", help="keep objects, images and the store here (default: a temporary folder)")
    ap.add_argument("--before", metavar="REV", help="also run the bisection of this older commit of layoutbench "
                    "(e.g. 9319707) on the same histories")
    ap.add_argument("--json", action="store_true",
                    help="print every row's numbers and the summary as one JSON object on stdout (the tables go to stderr)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    out = sys.stderr if a.json else sys.stdout  # the tables

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
    try:
        pairs = [tuple(float(y) for y in x.split("+")) for x in a.two.split(",") if x]
    except ValueError:
        raise SystemExit(f"--two {a.two}: give pairs of sizes in percent, e.g. --two 1+3,3+1") from None
    if any(len(q) != 2 for q in pairs):
        raise SystemExit(f"--two {a.two}: each pair is FIRST+SECOND, e.g. 1+3")
    before = export(a.before, base / "before") if a.before else None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    sizes = [f"{x:g}%" for x in pcts] + [f"{p1:g}%+{p2:g}%" for p1, p2 in pairs]
    print(f"bisect accuracy: {a.histories} histories per regression size ({', '.join(sizes)}) + {a.null} without, {a.commits} commits each; metric cg_cost (cachegrind, {a.args}); layoutbench: "
          f"{a.layouts} random layouts per probe (looks up to {a.max_layouts}), 95%, min effect 0.5%"
          f"{', --thorough' if a.thorough else ''}; single layout: "
          f"default link, 1 run per probe", file=out)
    if before:
        print(f"after: this tree (HEAD {head}, plus any uncommitted change); before: layoutbench at {a.before}",
              file=out)
    print(f"{'history':>8} {'regr':>9} {'layout-only':>12}  {'layoutbench':<14} {'builds':>6} {'runs':>5}   "
          + (f"{'before':<14} {'runs':>5}   " if before else "")
          + f"{'single layout':<14} {'builds':>6} {'runs':>5}  {'effect':>7} {'noise':>6} {'oracle':>6}  "
          f"{'plan':>5} {'plan/runs':>9}  {'first-only':>10} {'runs/first':>10}", file=out)
    rows = []
    t0 = time.monotonic()
    specs = [(a.seed + i, True, pct) for pct in pcts for i in range(a.histories)] + \
        [(a.seed + i, True, pair) for pair in pairs for i in range(a.histories)] + \
        [(a.seed + 1000 + i, False, 0.0) for i in range(a.null)]
    for seed, planted, pct in specs:
        two = isinstance(pct, tuple)
        name = f"h{seed}-{pct[0]:g}+{pct[1]:g}" if two else f"h{seed}-{pct:g}"
        m = make_history(base / "hist" / name, a.commits, seed, regression_pct=list(pct) if two else pct or 3.0,
                         regression=planted)
        idx = {c["sha"]: c["index"] for c in m["commits"]}
        truth = {r["sha"] for r in m["regressions"]}
        s = bisect.Settings(kernel="minikernel", repo=m["repo"], target="cachegrind", metric="cg_cost", args=a.args,
                            layouts=a.layouts, max_layouts=a.max_layouts, thorough=a.thorough)
        planned = bisect.run(store, prof, replace(s, shadow=False), m["good"], m["bad"], say, plan_only=True).to_dict()
        clear_state(store)
        v = bisect.run(store, prof, s, m["good"], m["bad"], say).to_dict()  # the record as --json prints it
        sl = v["single_layout"]
        clear_state(store)
        first = bisect.run(store, prof, replace(s, shadow=False, first_only=True), m["good"], m["bad"], say).to_dict()
        clear_state(store)
        old = None
        if before:
            old = run_before(before, m, a, store.location)
            clear_state(store)

        def call(culprit, status):
            if status in ("noise", "not-shown"):
                return status
            if culprit is None:
                return status
            return f"#{idx[culprit]}" + ("" if culprit in truth else " WRONG" if planted else " (blame)")

        named = [st["culprit"] for st in v.get("steps", []) if st["status"] == "found"]
        ours = call(v.get("culprit"), v["status"])
        if two:  # every change point it named, in order; a wrong one marked
            ours = ",".join(f"#{idx[c]}" + ("" if c in truth else "!") for c in named) or (
                f"range #{min(idx[c] for c in v['range'])}..#{max(idx[c] for c in v['range'])}"
                if v["status"] == "range" and v.get("range") else v["status"])
        theirs = call(sl.get("culprit"), "found")
        e = v.get("effect") or v["endpoints"]
        sizes = [r["pct"] for r in m["regressions"]]
        orc = oracle_runs(v["endpoints"]["layout_noise"], sizes, a.commits + 1)
        row = {"seed": seed, "planted": planted, "pct": pct, "regression": m["regression_index"],
               "two": two, "named": named, "oracle": {"runs": orc},
               "both": two and truth <= set(named),
               "layout_only": m["layout_only_indices"], "ours": v.get("culprit"), "status": v["status"],
               "ours_ok": (v.get("culprit") == m["regression"]) if planted else v["status"] in ("noise", "not-shown"),
               "theirs": sl.get("culprit"),
               "theirs_ok": (sl.get("culprit") == m["regression"]) if planted else sl.get("culprit") is None,
               "cost": v["cost"], "single": sl, "effect": e["ratio"], "noise": e["layout_noise"],
               "plan": planned["plan"]["runs"], "first_only": first["cost"]["runs"],
               "commits": a.commits, "regressions": [r["index"] for r in m["regressions"]],
               "index": {"ours": idx.get(v.get("culprit")), "named": [idx[c] for c in named],
                         "theirs": idx.get(sl.get("culprit"))}}
        if old is not None:
            row["before"] = old["cost"]
            row["before_status"] = old["status"]
            row["index"]["before"] = idx.get(old.get("culprit"))
            row["before_ok"] = (old.get("culprit") == m["regression"]) if planted else \
                old["status"] in ("noise", "not-shown")
            row["before_wrong"] = planted and old.get("culprit") not in (None, m["regression"])
        if two:  # the first bad commit reported is a true step; any named commit without one is wrong
            row["ours_ok"], row["theirs_ok"] = v.get("culprit") in truth, sl.get("culprit") in truth
            earliest = m["regressions"][0]["sha"]
            row["ours_first"], row["theirs_first"] = v.get("culprit") == earliest, sl.get("culprit") == earliest
            if old is not None:
                row["before_first"] = old.get("culprit") == earliest
            if old is not None:
                row["before_ok"] = old.get("culprit") in truth
                row["before_wrong"] = old.get("culprit") not in truth | {None}
        row["ours_wrong"] = planted and any(c not in truth for c in (named if two else [v.get("culprit")]) if c)
        row["theirs_wrong"] = planted and sl.get("culprit") not in truth | {None}
        rows.append(row)
        regr = (",".join(f"#{r['index']}" for r in m["regressions"]) + f" {pct[0]:g}+{pct[1]:g}%" if two
                else f"#{m['regression_index']} {pct:g}%" if planted else "-")
        was = f"{call(old.get('culprit'), old['status']):<14} {old['cost']['runs']:>5}   " if old is not None else ""
        print(f"{seed:>8} {regr:>9} "
              f"{','.join(map(str, m['layout_only_indices'])):>12}  {ours:<14} {v['cost']['builds']:>6} "
              f"{v['cost']['runs']:>5}   {was}{theirs:<14} {sl['builds']:>6} {sl['runs']:>5}  "
              f"{100 * (e['ratio'] - 1):>+6.2f}% {100 * e['layout_noise']:>5.2f}% {orc:>6}  "
              f"{row['plan']:>5} {row['plan'] / max(1, v['cost']['runs']):>9.2f}  {row['first_only']:>10} "
              f"{v['cost']['runs'] / max(1, row['first_only']):>10.2f}", file=out, flush=True)

    engines = [("layoutbench bisect (after)" if before else "layoutbench bisect (K layouts)", "ours")]
    if before:
        engines.append((f"layoutbench bisect (before, {a.before})", "before"))
    engines.append(("oracle (knows sigma_L, fixed z tests)", "oracle"))
    engines.append(("single layout (default, 1 run)", "theirs"))
    summary = summarize(rows, engines, pcts, pairs)
    print(file=out)
    print(f"{'':<38} {'regr.':>6} {'right culprit':<14} {'both':>6}  {'wrong':<7}  {'runs':>8}  (mean per history)",
          file=out)
    for line in summary:
        print(summary_line(line), file=out)
    if pairs:
        print("two-step rows: 'right culprit' = the first bad commit reported is a planted step; 'both' = both "
              "steps named; 'wrong' = a commit without a step named (layoutbench: any of its change points)", file=out)
    wrong = [r for r in rows if r["planted"] and not r["ours_ok"]]
    if wrong:
        print("layoutbench misses: " + ", ".join(f"seed {r['seed']}: {r['status']}" for r in wrong), file=out)
    ratios = [r["plan"] / max(1, r["cost"]["runs"]) for r in rows]
    if ratios:
        print(f"plan / actual runs (--plan's likely cost over the runs the bisection spent): median "
              f"{statistics.median(ratios):.2f}, {sum(0.7 <= x <= 1.3 for x in ratios)}/{len(ratios)} within 30%; "
              f"default / --first-only runs: median "
              f"{statistics.median(r['cost']['runs'] / max(1, r['first_only']) for r in rows):.2f}", file=out)
    wall = time.monotonic() - t0
    print(f"wall time {wall:.0f}s; builds count commits compiled (an object cache is shared by "
          f"both bisections: their builds overlap), runs count cachegrind runs", file=out)
    if a.json:
        settings = {"histories": a.histories, "null": a.null, "commits": a.commits, "regression_pct": pcts,
                    "two": [list(q) for q in pairs], "seed": a.seed, "layouts": a.layouts,
                    "max_layouts": a.max_layouts, "target": "cachegrind", "metric": "cg_cost", "args": a.args,
                    "head": head, "before": a.before, "thorough": a.thorough}
        print(json.dumps(result_json(settings, rows, summary, wall), indent=1, allow_nan=False))
    if tmp:
        tmp.cleanup()


COST = {"ours": "cost", "before": "before", "oracle": "oracle", "theirs": "single"}  #: row key of each engine's cost


def summarize(rows: list[dict], engines: list[tuple[str, str]], pcts: list[float],
              pairs: list[tuple[float, float]]) -> list[dict]:
    """The summary table's lines, as numbers: per regression size (then per two-step pair, then
    the null histories) and engine ((name, key) with key ours, before, oracle or theirs) the
    histories, the mean runs per history and (not the oracle: it is computed, not run) how many
    named a right culprit and how many a wrong one (null histories: right = blamed nothing, wrong =
    named a commit; the table shows right only); two-step lines also how many named the earliest
    step and (layoutbench) both steps."""
    out = []
    groups = [("step", pct, [r for r in rows if r["planted"] and not r["two"] and r["pct"] == pct]) for pct in pcts]
    groups += [("two-step", pair, [r for r in rows if r["two"] and r["pct"] == pair]) for pair in pairs]
    groups.append(("null", None, [r for r in rows if not r["planted"]]))
    for kind, size, group in groups:
        if not group:
            continue
        for name, key in engines:
            line = {"engine": name, "key": key, "kind": kind, "size": list(size) if kind == "two-step" else size,
                    "histories": len(group), "runs": statistics.mean(r[COST[key]]["runs"] for r in group)}
            if key != "oracle":
                line["right"] = sum(r[key + "_ok"] for r in group)
                line["wrong"] = sum(_wrong(r, key) for r in group)
                if kind == "two-step":
                    line["first"] = sum(r[key + "_first"] for r in group)
                    if key == "ours":
                        line["both"] = sum(r["both"] for r in group)
            out.append(line)
    return out


def summary_line(line: dict) -> str:
    """One line of the summary table, as :func:`summarize` gives it."""
    n, runs, name = line["histories"], line["runs"], line["engine"]
    if line["kind"] == "step":
        label = f"{line['size']:>5g}%"
    elif line["kind"] == "two-step":
        label = f"{line['size'][0]:g}+{line['size'][1]:g}%"
        label = f"{label:>6}"
    else:
        label = f"{'null':>6}"
    if line["key"] == "oracle":
        return f"{name:<38} {label} {'(computed: the runs only)':<30}  {runs:>8.1f}"
    ok = line["right"]
    if line["kind"] == "null":
        return f"{name:<38} {label} {ok:>3}/{n:<3} nothing blamed  {'':>14}  {runs:>8.1f}"
    right = f"{ok:>3}/{n:<3} ({100 * ok / max(1, n):>3.0f}%)"
    if line["kind"] == "step":
        return f"{name:<38} {label} {right}  {'':>6}  {line['wrong']:>3}/{n:<3}  {runs:>8.1f}"
    both = f"{line['both']:>3}/{n:<2}" if "both" in line else f"{'-':>6}"
    return (f"{name:<38} {label} {right}  {both}  {line['wrong']:>3}/{n:<3}  {runs:>8.1f}  "
            f"(the earliest step: {line['first']}/{n})")


def _wrong(r: dict, key: str) -> bool:
    """Did the engine name a commit without a step (null histories: any commit)?"""
    return r[key + "_wrong"] if r["planted"] else r["index"][key] is not None


def _finite(x):
    """A number for JSON: infinity (an oracle that cannot reach its power) is null."""
    return None if isinstance(x, float) and not math.isfinite(x) else x


def result_json(settings: dict, rows: list[dict], summary: list[dict], wall: float) -> dict:
    """What ``--json`` prints: the settings, every history's row and the summary's lines.  Commits
    are named by their index in the history (0: the import, GOOD; ``commits``: BAD); right and
    wrong as in :func:`summarize`."""
    def engine(r, key):
        e = {"culprit": r["index"][key], "right": r[key + "_ok"], "wrong": _wrong(r, key),
             "builds": r[COST[key]]["builds"], "runs": r[COST[key]]["runs"]}
        if r["two"]:
            e["first"] = r[key + "_first"]
        return e

    out_rows = []
    for r in rows:
        kind = "two-step" if r["two"] else "step" if r["planted"] else "null"
        o = {"seed": r["seed"], "kind": kind, "size": list(r["pct"]) if r["two"] else r["pct"] if r["planted"] else None,
             "commits": r["commits"], "regressions": r["regressions"], "layout_only": r["layout_only"],
             "layoutbench": {**engine(r, "ours"), "status": r["status"], "named": r["index"]["named"]},
             "single_layout": engine(r, "theirs"), "oracle": {"runs": _finite(r["oracle"]["runs"])},
             "effect_pct": 100 * (r["effect"] - 1), "layout_noise_pct": 100 * r["noise"],
             "plan_runs": r["plan"], "first_only_runs": r["first_only"]}
        if r["two"]:
            o["layoutbench"]["both"] = r["both"]
        if "before" in r:
            o["before"] = {**engine(r, "before"), "status": r["before_status"]}
        out_rows.append(o)
    return {"settings": settings, "rows": out_rows,
            "summary": [{k: _finite(v) for k, v in line.items()} for line in summary], "wall_s": round(wall, 1)}


def oracle_runs(sigma: float, sizes: list[float], n: int, alpha: float = 0.05,
                min_effect: float = 0.005) -> int:
    """Runs of the oracle bisection (see the module's docstring) at layout noise ``sigma`` (log
    scale, one run per layout) over ``n`` commits (GOOD and BAD included), for planted steps of
    ``sizes`` percent (none: a null range, sized for ``min_effect``)."""
    from layoutbench import decide

    za, zb = float(ndtri(1 - alpha / 2)), float(ndtri(0.9))
    total = math.log1p(sum(sizes) / 100) if sizes else math.log1p(min_effect)
    ne0 = max(2, math.ceil(2 * (sigma * (za + zb) / total) ** 2))  # layouts a side at the endpoints
    if not sizes:
        return 2 * ne0
    probes = decide.planned_probes(n)
    zp = float(ndtri(1 - alpha / (probes * len(sizes))))

    def runs(ne: int) -> float:
        out = 2 * ne
        for size in sizes:  # one search per step, its probes sized to tell the step's midpoint
            # the midpoint is estimated from both endpoints (the sizes are known): variance sigma^2 / (2 ne)
            rest = (math.log1p(size / 100) / 2 / sigma / zp) ** 2 - 1 / (2 * ne)
            if rest <= 0:
                return math.inf
            out += probes * math.ceil(1 / rest - 1e-9)
        return out

    # more endpoint layouts make the probes' midpoints sharper: the cheapest split is the floor
    return int(min(runs(ne) for ne in range(ne0, ne0 + 400)))


def export(rev: str, dest: Path) -> Path:
    """This repository's tree at ``rev``, exported (``git archive``: no worktree, no checkout)."""
    dest.mkdir(parents=True, exist_ok=True)
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch.stdout, check=True)
    return dest


def clear_state(store) -> None:
    """Forget every bisection's state (its marks), keep the stored runs."""
    for key, _ in store.states("bisect:"):
        store.del_state(key)


def before_workdir(work: Path) -> Path:
    """The older layoutbench's work folder beside ``work`` (this tree's): the object cache is
    shared (a symbolic link: each commit compiled once), the linked images are its own.  An
    image's record (``variant.json``) is read back as the ``Variant`` of the code that reads it,
    and this tree's records carry fields an older one does not know (``link_seconds``: the older
    engine ended in a TypeError on the first image this tree had linked)."""
    own = work.parent / (work.name + "-before")
    own.mkdir(parents=True, exist_ok=True)
    (work / "objects").mkdir(parents=True, exist_ok=True)
    if not (own / "objects").is_symlink():
        (own / "objects").symlink_to(work / "objects", target_is_directory=True)
    return own


def run_before(tree: Path, m: dict, a, store_path) -> dict:
    """The older layoutbench's bisection of the same history, from its exported tree."""
    cmd = [sys.executable, "-m", "layoutbench.cli", "bisect", "minikernel", f"{m['good']}..{m['bad']}",
           "--repo", m["repo"], "--target", "cachegrind", "--metric", "cg_cost", "--args", a.args,
           "--layouts", str(a.layouts), "--max-layouts", str(a.max_layouts), "--store", str(store_path), "--json"]
    env = {**os.environ, "PYTHONPATH": str(tree), "LAYOUTBENCH_DIR": str(before_workdir(Path(os.environ["LAYOUTBENCH_DIR"])))}
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the bisection of {tree.name} failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    main()
