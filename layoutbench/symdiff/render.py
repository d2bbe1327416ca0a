"""The diff as text: the short summary and the per-object (and per-symbol) tables."""

from __future__ import annotations

from ..elfinfo import printable
from ..layout import PAGE
from .model import STATUSES, SymdiffResult


def _hexd(d: int) -> str:
    """A shift in bytes, signed, with whole pages said so: ``+8192 (2 pages)``."""
    pages = f" ({abs(d) // PAGE} page{'s' if abs(d) != PAGE else ''})" if d and d % PAGE == 0 else ""
    return f"{'+' if d >= 0 else '-'}{abs(d)}{pages}"


def summary_lines(r: SymdiffResult) -> list[str]:
    """The short human summary."""
    c = r.counts
    lines = [f"old: {r.old.label}" + (f"  [{r.old.layout}, plan {r.old.plan_id}]" if r.old.layout else ""),
             f"new: {r.new.label}" + (f"  [{r.new.layout}, plan {r.new.plan_id}]" if r.new.layout else "")]
    verdict = "placement identical" if r.placement_identical else "placement differs"
    lines.append(f"{verdict}: {r.old.symbols} -> {r.new.symbols} symbols: "
                 + ", ".join(f"{c[k]} {k}" for k in STATUSES))
    if c["moved"]:
        common = sorted(r.moved_by.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
        lo, hi = min(r.moved_by), max(r.moved_by)
        pages = ("code moved by whole pages only" if r.page_quantized else "code not page-quantized") \
            if r.text_moved_by else "no code moved"
        rng = _hexd(lo) if lo == hi else f"{_hexd(lo)} .. {_hexd(hi)}"
        lines.append(f"moved: {c['moved']} symbols by {rng} bytes ({pages}); most: "
                     + ", ".join(f"{_hexd(d)} x{n}" for d, n in common))
    for i, g in enumerate(r.origins[:4]):
        head = "shift origin" if i == 0 else "  also in"
        lines.append(f"{head} {g.section} at {g.address:#x} ({g.object + ':' if g.object else ''}{g.symbol}): "
                     f"{g.cause}: {g.detail}")
    if len(r.origins) > 4:
        lines.append(f"  ... and {len(r.origins) - 4} more sections")
    p = r.propagation
    if p is not None:
        total = p.moved + p.stayed
        if p.to_end:
            lines.append(f"propagation: every symbol above the origin in {p.section} moved ({p.moved}), "
                         f"up to {p.last:#x}")
        else:
            lines.append(f"propagation: {p.moved} of {total} symbols above the origin in {p.section} moved, "
                         f"up to {p.last:#x}" + (f"; back in place from {p.absorbed_at}" if p.absorbed_at else ""))
    if r.text_bytes:
        lines.append(f"text unchanged: {100 * r.text_unchanged_share:.1f}% of function bytes "
                     f"({r.text_unchanged_functions} of {r.text_functions} functions in place with the same code)")
    k = r.compared
    lines.append(f"code compared: {k['identical_bytes']} identical, {k['same_after_masking']} same after masking "
                 f"{k['address_fields']} address fields, {k['llvm_objdump']} by llvm-objdump; objects from "
                 + ("the layout plans" if r.mapping == "plan" else "STT_FILE symbols"))
    lines.extend(f"note: {n}" for n in r.notes)
    return lines


def print_text(console, r: SymdiffResult, symbols: bool = False) -> None:
    from rich.markup import escape
    from rich.table import Table

    # names come from the files: their control characters (escape sequences) are shown, not sent
    for line in summary_lines(r):
        console.print(printable(line), markup=False)
    t = Table(box=None, pad_edge=False, title="per object", title_justify="left")
    t.add_column("object")
    for k in ("symbols", *STATUSES):
        t.add_column(k, justify="right")
    t.add_column("shift", justify="left")
    for o in r.objects:
        deltas = sorted(o.deltas.items(), key=lambda kv: -kv[1])
        shift = ", ".join(_hexd(d) for d, _ in deltas[:2]) + (" ..." if len(deltas) > 2 else "")
        t.add_row(escape(printable(o.object)), str(o.total), *[str(o.counts[k] or "") for k in STATUSES], shift)
    console.print(t)
    if symbols:
        t = Table(box=None, pad_edge=False, title="per symbol (all but unchanged)", title_justify="left")
        for col, j in (("status", "left"), ("symbol", "left"), ("object", "left"), ("old", "right"),
                       ("new", "right"), ("shift", "right"), ("size", "right")):
            t.add_column(col, justify=j)
        for s in r.symbols:
            if s.status == "unchanged":
                continue
            size = str(s.new_size if s.new_size is not None else s.old_size)
            if s.status == "resized":
                size = f"{s.old_size} -> {s.new_size}"
            t.add_row(s.status, escape(printable(s.name)), escape(printable(s.object)), f"{s.old_addr:#x}" if s.old_addr is not None else "",
                      f"{s.new_addr:#x}" if s.new_addr is not None else "",
                      _hexd(s.delta) if s.delta else "", size)
        console.print(t)
