"""The cache view of two images: where the functions sit (lines, sets, pages), which pairs share
sets in one image only, their counts side by side; as a dict, and its text."""

from __future__ import annotations

from ..errors import LayoutbenchError
from ..fmt import PAGE
from .geometry import Geometry
from .sides import Function, Side

def _ranges(xs: list[int]) -> str:
    """``[1, 2, 3, 7]`` → ``1-3,7``."""
    out, xs = [], sorted(set(xs))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def place(s: Function, g: Geometry) -> dict:
    end = s.addr + max(s.size, 1) - 1
    lines = list(range(s.addr // g.line, end // g.line + 1))
    return {"addr": s.addr, "size": s.size, "lines": [lines[0], lines[-1]],
            "sets": sorted({ln % g.sets for ln in lines}), "pages": sorted(set(range(s.addr // PAGE, end // PAGE + 1)))}


def view(old: Side, new: Side, g: Geometry, counts: tuple[dict, dict] | None = None,
         names: list[str] | None = None, top: int = 10) -> dict:
    """The cache view of two images (as a dict: the text and ``--json`` are rendered from it)."""
    fo, fn = old.functions, new.functions
    co, cn = counts if counts else ({}, {})

    def c(side: dict, name: str, ev: str) -> int | None:
        return side[name].get(ev, 0) if name in side else None

    if names:
        missing = [n for n in names if n not in fo and n not in fn]
        if missing:
            raise LayoutbenchError(f"--functions: no function {', '.join(missing)} in either image")
        hot = list(dict.fromkeys(names))
    else:
        known = [n for n in set(co) | set(cn) if n in fo or n in fn]
        by_miss = sorted(known, key=lambda n: (-max(c(co, n, "I1mr") or 0, c(cn, n, "I1mr") or 0), n))
        by_ir = sorted(known, key=lambda n: (-max(c(co, n, "Ir") or 0, c(cn, n, "Ir") or 0), n))
        hot = list(dict.fromkeys([n for n in by_miss[:top] if max(c(co, n, "I1mr") or 0, c(cn, n, "I1mr") or 0)]
                                 + [n for n in by_ir[:top] if max(c(co, n, "Ir") or 0, c(cn, n, "Ir") or 0)]))
    funcs = []
    for n in hot:
        # several local functions of one name: cachegrind's counts are theirs together; the first is shown
        so, sn = (fo.get(n) or [None])[0], (fn.get(n) or [None])[0]
        ref = sn or so
        funcs.append({"name": n, "object": ref.obj or "", "old": place(so, g) if so else None,
                      "new": place(sn, g) if sn else None,
                      "ir": {"old": c(co, n, "Ir"), "new": c(cn, n, "Ir")},
                      "i1_misses": {"old": c(co, n, "I1mr"), "new": c(cn, n, "I1mr")}})
    pairs = []
    for i, a in enumerate(funcs):
        for b in funcs[i + 1:]:
            shared = {}
            for side in ("old", "new"):
                shared[side] = sorted(set(a[side]["sets"]) & set(b[side]["sets"])) if a[side] and b[side] else []
            if bool(shared["old"]) != bool(shared["new"]):
                pairs.append({"a": a["name"], "b": b["name"], "shared_sets": shared,
                              "in": "old" if shared["old"] else "new"})
    moved = {n: abs((c(cn, n, "I1mr") or 0) - (c(co, n, "I1mr") or 0)) for n in hot}
    pairs.sort(key=lambda p: (-(moved[p["a"]] + moved[p["b"]]), p["a"], p["b"]))  # the costliest first
    pressure = {}
    for side in ("old", "new"):
        per_set: dict[int, int] = {}
        for f in funcs:
            if f[side]:
                for s in f[side]["sets"]:
                    per_set[s] = per_set.get(s, 0) + 1
        pressure[side] = {str(s): k for s, k in sorted(per_set.items()) if k > g.ways}
    misses = []
    if counts:
        hotset = {f["name"] for f in funcs}
        for n in set(co) | set(cn):
            mo, mn = c(co, n, "I1mr") or 0, c(cn, n, "I1mr") or 0
            if mo == mn:
                continue
            worse = "new" if mn > mo else "old"
            partners = [p["b"] if p["a"] == n else p["a"] for p in pairs if n in (p["a"], p["b"]) and p["in"] == worse]
            misses.append({"name": n, "old": mo, "new": mn, "delta": mn - mo, "hot": n in hotset, "partners": partners})
        misses.sort(key=lambda m: (-abs(m["delta"]), m["name"]))
    tot_o = sum(v.get("I1mr", 0) for v in co.values())
    tot_n = sum(v.get("I1mr", 0) for v in cn.values())
    delta = tot_n - tot_o
    shown = misses[:top] if counts else []
    return {"geometry": g.to_dict(), "functions": funcs, "pairs": pairs, "oversubscribed_sets": pressure,
            "misses": misses,
            "total": {"i1_misses": {"old": tot_o, "new": tot_n, "delta": delta} if counts else None,
                      "ir": {"old": sum(v.get("Ir", 0) for v in co.values()),
                             "new": sum(v.get("Ir", 0) for v in cn.values())} if counts else None,
                      "top": len(shown) or top, "top_delta": sum(m["delta"] for m in shown),
                      "top_share": round(sum(m["delta"] for m in shown) / delta, 4) if delta else None}}


def _mark(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def print_view(console, v: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..elfinfo import printable

    g = v["geometry"]
    console.print(f"cache: {g['size']} bytes, {g['ways']}-way, {g['line']}-byte lines = {g['sets']} sets "
                  f"(from {g['source']})", markup=False)
    t = Table(box=None, pad_edge=False, title="hot functions: cache sets and 4 KiB pages (old -> new)",
              title_justify="left")
    for col, j in (("function", "left"), ("object", "left"), ("Ir", "right"), ("old sets", "left"),
                   ("new sets", "left"), ("pages", "left")):
        t.add_column(col, justify=j)
    for f in v["functions"]:
        o, n = f["old"], f["new"]
        ir = f["ir"]["new"] if f["ir"]["new"] is not None else f["ir"]["old"]
        pages = f"{_ranges(o['pages']) if o else '-'} -> {_ranges(n['pages']) if n else '-'}"
        t.add_row(escape(printable(f["name"])), escape(printable(f["object"])), _mark(ir),
                  _ranges(o["sets"]) if o else "-", _ranges(n["sets"]) if n else "-", pages)
    console.print(t)
    if v["pairs"]:
        more = len(v["pairs"]) - (v["total"]["top"] or 10)
        t = Table(box=None, pad_edge=False, title="hot pairs sharing sets in one image only, the costliest first"
                  + (f" ({more} more in --json)" if more > 0 else ""), title_justify="left")
        for col in ("functions", "share in", "sets"):
            t.add_column(col)
        for p in v["pairs"][:v["total"]["top"] or 10]:
            t.add_row(escape(printable(f"{p['a']} + {p['b']}")), p["in"], _ranges(p["shared_sets"][p["in"]]))
        console.print(t)
    else:
        console.print("no pair of hot functions shares sets in one image only", markup=False)
    for side in ("old", "new"):
        over = v["oversubscribed_sets"][side]
        if over:
            console.print(f"{side}: sets holding more hot functions than ways ({g['ways']}): "
                          + ", ".join(f"{s} ({k})" for s, k in list(over.items())[:12])
                          + (" ..." if len(over) > 12 else ""), markup=False)
    tot = v["total"]
    if tot["i1_misses"] is None:
        return
    t = Table(box=None, pad_edge=False, title=f"I1 misses per function ({v.get('counts_from') or 'cachegrind'}), by change", title_justify="left")
    for col, j in (("function", "left"), ("old", "right"), ("new", "right"), ("change", "right"),
                   ("conflicts with", "left")):
        t.add_column(col, justify=j)
    for m in v["misses"][:tot["top"]]:
        t.add_row(escape(printable(m["name"])), _mark(m["old"]), _mark(m["new"]), f"{m['delta']:+,}",
                  escape(printable(", ".join(m["partners"]))))
    console.print(t)
    mi = tot["i1_misses"]
    share = f"; these {tot['top']} lines account for {tot['top_delta']:+,} ({100 * tot['top_share']:.1f}%)" \
        if tot["top_share"] is not None else ""
    console.print(f"I1 misses: {mi['old']:,} -> {mi['new']:,} ({mi['delta']:+,}){share}; "
                  f"instructions {tot['ir']['old']:,} -> {tot['ir']['new']:,}", markup=False)
    if v.get("counts_run"):
        console.print(counts_line(v["counts_run"]), markup=False)


def counts_line(run: dict | None) -> str:
    """Where the counts came from: the runs made here and their arguments (a compare or history of
    the same images counts the same only with the same --args), or the files given."""
    if not run:
        return ""
    if "files" in run:
        return "counts: from the output files given (" + ", ".join(run["files"]) + ")"
    args = f"arguments {run['args']!r}" if run["args"] else "no arguments"
    return (f"counts: one {run['target']} run of each image made here, with {args}: a compare or history of these "
            "images counts the same when run with the same --args")
