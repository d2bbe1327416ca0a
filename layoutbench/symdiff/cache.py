"""The cache view of a diff: where the hot functions sit in a set-associative L1 instruction
cache in both images, which of them share sets in one image and not in the other, and what
it costs (per-function I1 misses side by side, as ``cg_diff`` prints them).

A function's *lines* are the cache lines its bytes cover (address // line size), its *sets*
those lines modulo the number of sets (size / (ways * line)), its *pages* its 4 KiB pages.
Two functions that share a set compete for its ways: with more hot lines in a set than it
has ways, they evict each other.  The functions that matter are the ones with the most
executed instructions or misses in a cachegrind run of each image (its output file, read per
function: ``fn=`` records, as ``cg_annotate`` sums them) or a run of the QEMU cache model (its
per-block counts, ``<result>.blocks``, mapped to the functions that hold the blocks), or the
ones named.  The runs are the profile's ``cachegrind`` (or ``qemu-icache``) target, run here on
each image, or output files given.
"""

from __future__ import annotations

import bisect
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import LayoutbenchError
from ..layout import PAGE
from .counts import read_functions, read_text
from .image import Image, Sym

L1I = "L1I"
#: the largest geometry accepted (cachegrind simulates last-level caches of hundreds of MiB)
MAX_SIZE, MAX_WAYS, MIN_LINE, MAX_LINE = 1 << 30, 1024, 8, 4096


@dataclass(frozen=True)
class Geometry:
    size: int
    ways: int
    line: int
    source: str  #: where it was read: "given", or the target it came from

    @property
    def sets(self) -> int:
        return self.size // (self.ways * self.line)

    def to_dict(self) -> dict:
        return {"size": self.size, "ways": self.ways, "line": self.line, "sets": self.sets, "source": self.source}


def parse_geometry(text: str, source: str = "given") -> Geometry:
    """``SIZE,WAYS,LINE`` (cachegrind's ``--I1``): bytes, associativity, line size in bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*", text or "")
    if not m:
        raise LayoutbenchError(f"cache geometry {text!r}: give L1I or SIZE,WAYS,LINE in bytes (e.g. 4096,2,64)")
    size, ways, line = map(int, m.groups())
    if size > MAX_SIZE or ways > MAX_WAYS or not MIN_LINE <= line <= MAX_LINE:
        raise LayoutbenchError(f"cache geometry {text!r}: beyond any real cache (at most {MAX_SIZE >> 20} MiB, "
                               f"{MAX_WAYS} ways, lines of {MIN_LINE} to {MAX_LINE} bytes); give e.g. 32768,8,64")
    if not (size and ways and line) or line & (line - 1) or size % (ways * line) or (size // (ways * line)) & \
            (size // (ways * line) - 1):
        raise LayoutbenchError(f"cache geometry {text!r}: the line size and the number of sets (size / (ways * line)) "
                               f"must be powers of two, e.g. 4096,2,64")
    return Geometry(size, ways, line, source)


def target_for(prof, name: str | None):
    """The profile's target with a cache model: the one named, else its cachegrind target, else
    its qemu-icache one."""
    if name:
        return prof.target(name)
    for kind in ("cachegrind", "qemu-icache"):
        for t in prof.targets.values():
            if t.kind == kind:
                return t
    raise LayoutbenchError(f"kernel {prof.name} has no cachegrind or qemu-icache target: give the geometry as "
                           f"--cache SIZE,WAYS,LINE")


def geometry_of(spec: str, prof=None, target: str | None = None) -> Geometry:
    """``L1I``: the I1 of the profile's cache-model target (its ``i1`` setting, else the kind's
    default); otherwise the geometry given."""
    if spec.upper() != L1I:
        return parse_geometry(spec)
    if prof is None:
        raise LayoutbenchError("--cache L1I: the images are not layoutbench builds (no plan.json beside them), so "
                               "no target says the geometry: give it as --cache SIZE,WAYS,LINE")
    from ..targets.cachegrind import CachegrindTarget

    t = target_for(prof, target)
    i1 = t.settings.get("i1", CachegrindTarget.DEFAULTS["i1"])
    return parse_geometry(str(i1), f"{prof.name}'s target {t.name} ({t.kind}) i1")


# -- per-function counts from cachegrind ------------------------------------------------------------

def read_blocks(path: Path, img: Image) -> dict[str, dict[str, int]]:
    """The QEMU cache model's measured blocks (``<result>.blocks``: address, instructions,
    executions, misses per line) summed per function of ``img``, the one whose bytes hold the
    block's first instruction: name → {``Ir``: instructions × executions, ``I1mr``: misses}.
    A block outside every function is counted under ``(no function)``."""
    text = read_text(Path(path), "the cache model's blocks file")
    funcs = sorted((s for ss in _funcs(img).values() for s in ss), key=lambda s: s.addr)
    starts = [s.addr for s in funcs]
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        w = line.split()
        try:
            addr, insns, execs, misses = int(w[0], 16), int(w[1]), int(w[2]), int(w[3])
        except (IndexError, ValueError):
            raise LayoutbenchError(f"{path}:{n}: not a line of the cache model's blocks file "
                                   f"(VADDR INSNS EXECUTIONS MISSES)") from None
        i = bisect.bisect_right(starts, addr) - 1
        name = funcs[i].name if i >= 0 and addr < funcs[i].addr + funcs[i].size else "(no function)"
        c = out.setdefault(name, {"Ir": 0, "I1mr": 0})
        c["Ir"] += insns * execs
        c["I1mr"] += misses
    return out


def read_counts(path: Path, img: Image, g: Geometry) -> dict[str, dict[str, int]]:
    """Per-function counts from a cachegrind output file (checked against ``img`` and ``g``:
    counts.read_functions), or from the QEMU cache model's ``.blocks`` file mapped to the
    functions of ``img`` (its geometry checked against the result file written beside it)."""
    if not str(path).endswith(".blocks"):
        return read_functions(path, Path(img.path), g)
    result = Path(str(path)[:-len(".blocks")])
    try:
        i1 = next((ln[3:].strip() for ln in read_text(result, "the cache model's result").splitlines()
                   if ln.startswith("i1=")), None)
    except LayoutbenchError:
        i1 = None
    if i1 is None:
        raise LayoutbenchError(f"{path}: no result file {result.name} beside it says the cache it was measured with; "
                               f"give the blocks file where the cache model wrote it")
    if i1.replace(" ", "") != f"{g.size},{g.ways},{g.line}":
        raise LayoutbenchError(f"{path}: measured with the I1 {i1} (its {result.name}), not the {g.size},{g.ways},"
                               f"{g.line} asked; give --cache {i1}")
    return read_blocks(path, img)


def run_model(img: Image, prof, target: str | None, workdir: Path, g: Geometry,
              extra: tuple[str, ...] = ()) -> dict[str, dict[str, int]]:
    """Run the profile's cache-model target (cachegrind, or qemu-icache) on the image with the
    program's arguments (kernel command line) ``extra``; its per-function counts (checked against
    the geometry ``g``)."""
    from .. import targets

    spec = target_for(prof, target)
    if spec.kind not in ("cachegrind", "qemu-icache"):
        raise LayoutbenchError(f"target {spec.name} is {spec.kind}: per-function misses come from a cachegrind or "
                               f"qemu-icache target; name one with --target, or give --cachegrind-out OLD NEW")
    t = targets.make(prof, spec.name)
    t.blocks = True  # qemu-icache: the per-block counts, for this run only
    log = workdir / f"{len(list(workdir.iterdir()))}.log"
    res = t.run(Path(img.path), log, list(extra))
    out = log.with_suffix(".cachegrind") if spec.kind == "cachegrind" else t.blocks_file(log)
    if not out.is_file():
        raise LayoutbenchError(f"{spec.kind} on {img.path} wrote no output ({res.status}: {res.message}); see {log}")
    return read_counts(out, img, g)


# -- the view ---------------------------------------------------------------------------------------

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


def place(s: Sym, g: Geometry) -> dict:
    end = s.addr + max(s.size, 1) - 1
    lines = list(range(s.addr // g.line, end // g.line + 1))
    return {"addr": s.addr, "size": s.size, "lines": [lines[0], lines[-1]],
            "sets": sorted({ln % g.sets for ln in lines}), "pages": sorted(set(range(s.addr // PAGE, end // PAGE + 1)))}


def _funcs(img: Image) -> dict[str, list[Sym]]:
    out: dict[str, list[Sym]] = {}
    for s in img.syms:
        if s.kind == "func" and s.sec.executable and s.size:
            out.setdefault(s.name, []).append(s)
    return out


def view(old: Image, new: Image, g: Geometry, counts: tuple[dict, dict] | None = None,
         names: list[str] | None = None, top: int = 10) -> dict:
    """The cache view of two images (as a dict: the text and ``--json`` are rendered from it)."""
    fo, fn = _funcs(old), _funcs(new)
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


def cache_view(old: Image, new: Image, spec: str, target: str | None = None, outs: tuple = (),
               names: list[str] | None = None, top: int = 10, extra: tuple[str, ...] = ()) -> dict:
    """Geometry, counts (given output files, else cachegrind runs when the images are builds of a
    profile with a cachegrind target, with the program's arguments ``extra``: the counts a
    ``compare`` or ``history`` of the same images stored only with the same ``--args``; none with
    ``names`` only) and the view.  ``counts_run`` says how the counts were made."""
    from .. import profile as profmod

    prof = None
    for img in (new, old):
        if img.plan is not None and prof is None:
            try:
                prof = profmod.load(img.plan.kernel)
            except LayoutbenchError:
                prof = None
    g = geometry_of(spec, prof, target)
    counts, source, run = None, None, None
    if outs:
        if len(outs) != 2:
            raise LayoutbenchError("--cachegrind-out: give it twice, the old image's output file then the new one's")
        blocks = [str(f).endswith(".blocks") for f in outs]
        if blocks[0] != blocks[1]:
            raise LayoutbenchError(f"--cachegrind-out: {outs[blocks.index(True)]} is the QEMU cache model's blocks file "
                                   f"and {outs[blocks.index(False)]} cachegrind's output: the counts of two models "
                                   "do not compare; give two files of one kind")
        counts = (read_counts(Path(outs[0]), old, g), read_counts(Path(outs[1]), new, g))
        source = "qemu-icache" if blocks[1] else "cachegrind"
        run = {"files": [str(f) for f in outs]}
    elif not names:
        if prof is None:
            raise LayoutbenchError("--cache: the images are not layoutbench builds, so no cachegrind target runs them: "
                                   "give --cachegrind-out OLD NEW, or name the functions with --functions")
        with tempfile.TemporaryDirectory(prefix="layoutbench-cache-") as d:
            counts = (run_model(old, prof, target, Path(d), g, extra), run_model(new, prof, target, Path(d), g, extra))
        source = target_for(prof, target).kind
        run = {"target": target_for(prof, target).name, "args": " ".join(extra)}
    return {**view(old, new, g, counts, names, top), "counts_from": source, "counts_run": run}
