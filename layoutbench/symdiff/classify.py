"""The diff: every symbol classified, and where (and why) placement starts to differ."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict

from ..layout import PAGE, LayoutPlan
from .image import Image, Sym, check_comparable
from .model import STATUSES, ObjectDiff, Propagation, ShiftOrigin, SideInfo, SymbolDiff, SymdiffResult, without_gc
from .objects import assign_keys
from .samecode import Stats, explain, explain_all, instructions, same_instructions
from .samecode import close as close_objdump
from .samecode import objdump as run_objdump


def side_info(img: Image) -> SideInfo:
    return SideInfo(str(img.path), img.label, len(img.syms), img.mapping,
                    f"{img.plan.layout}:{img.plan.seed}" if img.plan else None,
                    img.plan_id if img.plan else None)


@without_gc
def diff(old: Image, new: Image, objdump: str = "llvm-objdump-19") -> SymdiffResult:
    """Classify every symbol of two images and summarize where placement starts to differ."""
    check_comparable(old, new)
    mode = "plan" if old.mapping == new.mapping == "plan" else "file"
    assign_keys(old, mode)
    assign_keys(new, mode)
    okeys, nkeys = old.by_key, new.by_key  # key → symbol, as index() built them
    st = Stats()
    status = _statuses(old, new, st, objdump)
    rows: list[SymbolDiff] = []
    for k, s in status.items():
        o, n = okeys.get(k), nkeys.get(k)
        ref = n or o
        rows.append(SymbolDiff(ref.name, ref.obj or (o.obj if o else "") or "", ref.kind, s,
                               o.addr if o else None, n.addr if n else None, o.size if o else None,
                               n.size if n else None, ref.sec.name))
    rows.sort(key=lambda r: (r.new_addr if r.new_addr is not None else r.old_addr, r.name))
    counts, moved_by, objects = _tallies(rows)
    exec_secs = {sec.name for sec in new.sections if sec.executable}
    text_f = [r for r in rows if r.kind == "func" and r.new_addr is not None and r.section in exec_secs]
    text_moved = Counter(r.new_addr - r.old_addr for r in rows if r.status == "moved" and r.section in exec_secs)
    origins, prop = _origins(old, new, okeys, nkeys, status)
    notes = old.notes + new.notes
    if old.mapping != new.mapping:
        notes.append("objects from the plan on one side only: symbols matched by STT_FILE on both")
    return SymdiffResult(
        old=side_info(old), new=side_info(new), mapping=mode, counts=counts, moved_by=dict(moved_by),
        page_quantized=bool(text_moved) and all(d % PAGE == 0 for d in text_moved),
        text_moved_by=dict(text_moved),
        origins=origins, propagation=prop,
        text_bytes=sum(r.new_size or 0 for r in text_f),
        text_unchanged_bytes=sum(r.new_size or 0 for r in text_f if r.status == "unchanged"),
        text_functions=len(text_f),
        text_unchanged_functions=sum(1 for r in text_f if r.status == "unchanged"),
        objects=objects, symbols=rows,
        compared={"identical_bytes": st.identical, "same_after_masking": st.masked, "address_fields": st.fields,
                  "llvm_objdump": st.objdump},
        notes=notes,
    )


def _statuses(old: Image, new: Image, st: Stats, objdump: str) -> dict[tuple, str]:
    """Each symbol key's status, in the order they are given (old's keys, then the added ones): by
    size and bytes first (same-size pairs with bytes on both sides compared together), and for the
    pairs that bytes cannot settle by their instructions (one llvm-objdump per image)."""
    okeys, nkeys = old.by_key, new.by_key
    status: dict[tuple, str] = {}
    pending: list[tuple[Sym, Sym]] = []
    decided: list[list] = []  #: [key, old, new, status or same], in the order statuses are given
    bulk: list[tuple[Sym, Sym]] = []  #: same-size pairs with bytes on both sides: compared together
    bulk_at: list[int] = []
    osize, nsize = len(old.data), len(new.data)
    for k, o in okeys.items():
        n = nkeys.get(k)
        if n is None:
            decided.append([k, o, n, "removed"])
        elif o.size != n.size:
            decided.append([k, o, n, "resized"])
        else:
            same: bool | None = True
            if o.size and not o.sec.nobits and not n.sec.nobits:
                if (0 <= old.offset_of(o) and old.offset_of(o) + o.size <= osize
                        and 0 <= new.offset_of(n) and new.offset_of(n) + n.size <= nsize):
                    bulk_at.append(len(decided))
                    bulk.append((o, n))
                else:  # bytes cut short by the end of the file: one at a time
                    ob, nb = old.bytes_of(o), new.bytes_of(n)
                    same = False if ob is None or nb is None or len(ob) != len(nb) else explain(old, o, new, n, ob, nb, st)
            elif o.size and o.sec.nobits != n.sec.nobits:
                same = False
            decided.append([k, o, n, same])
    for at, same in zip(bulk_at, explain_all(old, new, bulk, st)):
        decided[at][3] = same
    for k, o, n, same in decided:
        if isinstance(same, str):
            status[k] = same
        elif same is None:
            pending.append((o, n))
        else:
            status[k] = ("unchanged" if o.addr == n.addr else "moved") if same else "changed"
    for k in nkeys:
        if k not in okeys:
            status[k] = "added"
    if pending:  # the instruction view, one llvm-objdump per image, both at once
        po = pn = None
        try:  # whatever fails, neither llvm-objdump is left running nor its response file behind
            po = run_objdump(old, [o for o, _ in pending], objdump)
            pn = run_objdump(new, [n for _, n in pending], objdump)
            ti, tn = instructions(old, [o for o, _ in pending], po), instructions(new, [n for _, n in pending], pn)
        finally:
            close_objdump(po)
            close_objdump(pn)
        for o, n in pending:
            st.objdump += 1
            same = same_instructions(old, ti.get(o.addr), new, tn.get(n.addr))
            status[o.key] = ("unchanged" if o.addr == n.addr else "moved") if same else "changed"
    return status


def _tallies(rows: list[SymbolDiff]) -> tuple[dict, Counter, list[ObjectDiff]]:
    """(count per status, symbols moved per distance, each object's counts and distances in the order
    of its first address)."""
    counts = {k: 0 for k in STATUSES}
    moved_by: Counter = Counter()
    per_obj: dict[str, Counter] = defaultdict(Counter)
    per_obj_d: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        counts[r.status] += 1
        per_obj[r.object][r.status] += 1
        if r.status == "moved":
            d = r.new_addr - r.old_addr
            moved_by[d] += 1
            per_obj_d[r.object][d] += 1
    objects = [ObjectDiff(name or "(global)", {k: c[k] for k in STATUSES}, dict(per_obj_d[name]))
               for name, c in per_obj.items()]
    first_addr = {}
    for r in rows:
        a = r.new_addr if r.new_addr is not None else r.old_addr
        first_addr.setdefault(r.object or "(global)", a)
    objects.sort(key=lambda d: first_addr.get(d.object, 0))
    return counts, moved_by, objects


def section_rank(name: str, exec_secs: set[str]) -> int:
    """Which shift origin is told first: the sections that hold the measured code (``.text`` and
    ``.text.*``, where layouts place the units), then other code (``.init``, ``.fini``...), then data."""
    if name == ".text" or name.startswith(".text."):
        return 0
    return 1 if name in exec_secs else 2


def _kind_of(section: str) -> str | None:
    for kind in ("text", "rodata", "data", "bss"):
        if section == f".{kind}" or section.startswith(f".{kind}."):
            return kind
    return None


def _unit(plan: LayoutPlan | None, kind: str | None, obj: str):
    """(index, unit, previous object) of obj's first unit of a kind in a plan."""
    if plan is None or kind is None:
        return None
    units = plan.groups.get(kind, [])
    for i, u in enumerate(units):
        if u.object == obj:
            return i, u, units[i - 1].object if i else None
    return None


def _layout_cause(old: Image, new: Image, section: str, obj: str) -> str | None:
    """How the two plans place ``obj`` differently, or None when they agree (or are missing)."""
    if old.plan is None or new.plan is None:
        return None
    kind = _kind_of(section)
    a, b = _unit(old.plan, kind, obj), _unit(new.plan, kind, obj)
    what = f"layout {old.plan.layout}:{old.plan.seed} -> {new.plan.layout}:{new.plan.seed}" \
        if old.plan.layout != new.plan.layout or old.plan.seed != new.plan.seed else "plan"
    if a is None or b is None:
        return None
    (_, ua, pa), (_, ub, pb) = a, b
    if ua.align != ub.align:
        return f"{what}: {obj} aligned to {ub.align} (was {ua.align})"
    if ua.gap != ub.gap:
        return f"{what}: gap before {obj} is {ub.gap} bytes (was {ua.gap})"
    if pa != pb:
        now = f"now follows {pb}" if pb else "is now first in its section"
        return f"{what}: {obj} {now} ({f'was after {pa}' if pa else 'was first in its section'})"
    if old.plan.groups.get(kind) != new.plan.groups.get(kind):
        return f"{what}: the {kind} units before {obj} differ"
    return None


def _origins(old: Image, new: Image, okeys: dict, nkeys: dict, status: dict):
    """Per output section: where placement starts to differ, and why; the propagation of the first."""
    cands: dict[str, list[tuple[int, str, Sym | None, Sym | None]]] = defaultdict(list)
    for k, s in status.items():
        o, n = okeys.get(k), nkeys.get(k)
        if s == "added":
            cands[n.sec.name].append((n.addr, s, None, n))
        elif s == "removed":
            cands[o.sec.name].append((o.addr, s, o, None))
        elif o.addr != n.addr:
            cands[n.sec.name].append((min(o.addr, n.addr), s, o, n))
    objs = ({s.obj for s in old.syms}, {s.obj for s in new.syms})
    exec_secs = {s.name for s in new.sections if s.executable} | {s.name for s in old.sections if s.executable}
    old_by_sec: dict[str, list[Sym]] = {}  #: sized symbols of a section by address, made when asked

    def sized_in(name: str) -> list[Sym]:
        if name not in old_by_sec:
            old_by_sec[name] = sorted((s for s in old.syms if s.size and s.sec.name == name), key=lambda s: s.addr)
        return old_by_sec[name]

    rank = {"added": 0, "removed": 1}
    origins = []
    for sec, lst in cands.items():
        addr, s, o, n = min(lst, key=lambda c: (c[0], rank.get(c[1], 2)))  # the first of them, as a stable sort
        ref = n or o
        if s in ("added", "removed"):
            cause, resp, detail = _edge_cause(s, ref, sec, new, objs)
        else:
            cause, resp, detail = _shift_cause((old, new), sec, addr, ref, sized_in(o.sec.name), status, nkeys)
        origins.append(ShiftOrigin(sec, addr, ref.name, ref.obj, cause, resp, detail))
    origins.sort(key=lambda g: (section_rank(g.section, exec_secs), g.address))
    return origins, (_propagation(origins[0], status, okeys, nkeys) if origins else None)


def _edge_cause(s: str, ref: Sym, sec: str, new: Image, objs: tuple[set, set]) -> tuple[str, str, str]:
    """(cause, responsible, detail) of a shift that starts at an added or a removed symbol: its whole
    object new or gone, or the symbol alone."""
    obj = ref.obj
    if s == "added":
        if obj and obj not in objs[0]:
            size = sum(x.size for x in new.syms if x.obj == obj and x.sec.name == sec)
            return "added-object", obj, f"object {obj} is new ({size} bytes of symbols in {sec})"
        return "added-symbol", f"{obj}:{ref.name}" if obj else ref.name, f"new {ref.kind} {ref.name} ({ref.size} bytes)"
    if obj and obj not in objs[1]:
        return "removed-object", obj, f"object {obj} is gone"
    return ("removed-symbol", f"{obj}:{ref.name}" if obj else ref.name,
            f"{ref.kind} {ref.name} ({ref.size} bytes) is gone")


def _shift_cause(images: tuple[Image, Image], sec: str, addr: int, ref: Sym, olist: list[Sym], status: dict,
                 nkeys: dict) -> tuple[str, str, str]:
    """(cause, responsible, detail) of a shift that starts at a symbol both images hold: the section
    itself moved, the symbol before it was resized, the layout placed it so, or padding."""
    old, new = images
    obj = ref.obj
    i = bisect.bisect_left([x.addr for x in olist], addr) - 1
    prev = olist[i] if i >= 0 else None
    ps = status.get(prev.key) if prev is not None else None
    layout = _layout_cause(old, new, sec, obj)
    osec = next((x for x in old.sections if x.name == sec), None)
    nsec = next((x for x in new.sections if x.name == sec), None)
    first = olist[0].addr if olist else None
    if osec and nsec and osec.addr != nsec.addr and (first is None or addr <= first):
        return "section", sec, (f"{sec} starts at {nsec.addr:#x} (was {osec.addr:#x}): "
                                f"what is placed before it changed size")
    if ps == "resized":
        pn = nkeys[prev.key]
        grew = pn.size - prev.size
        return ("resized", f"{prev.obj}:{prev.name}" if prev.obj else prev.name,
                f"{prev.name} {'grew' if grew > 0 else 'shrank'} by {abs(grew)} bytes ({prev.size} -> {pn.size})")
    if layout:
        return "layout", obj or ref.name, layout
    return ("padding", obj or ref.name,
            f"the bytes before {ref.name} changed (alignment, padding or unlabelled code/data)")


def _propagation(g: ShiftOrigin, status: dict, okeys: dict, nkeys: dict) -> Propagation:
    """How far the first origin's shift runs in its section: the pairs at or above it that moved and
    that stayed, and the first symbol after it that stayed (the shift absorbed there)."""
    matched = []  # the pairs in the origin's section at or above it, by old address
    for k, s in status.items():
        if s != "added" and s != "removed":
            n = nkeys[k]
            if n.sec.name == g.section and (n.addr >= g.address or okeys[k].addr >= g.address):
                matched.append((okeys[k], n))
    matched.sort(key=lambda p: p[0].addr)
    moved = [(o, n) for o, n in matched if o.addr != n.addr]
    stayed = [(o, n) for o, n in matched if o.addr == n.addr]
    absorbed = None
    if moved:
        after = [o for o, n in stayed if o.addr > moved[0][0].addr]
        absorbed = after[0].name if after else None
    return Propagation(g.section, len(moved), len(stayed), g.address,
                       max((n.addr for _, n in moved), default=g.address), not stayed, absorbed)
