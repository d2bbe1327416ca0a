"""The diff as text: the short summary and the per-object (and per-symbol) tables.

The one renderer of a diff: the Python diff and the native helper's JSON (read back by
:meth:`.model.SymdiffResult.from_dict`) are printed here, as plain lines whose columns are padded
with spaces (a table of 30k symbols prints in milliseconds; a name from the file is shown with its
control characters as ``\\xNN``).  It imports nothing heavy, so that the command prints a native
diff without numpy or the command group.
"""

from __future__ import annotations

from ..fmt import printable
from ..fmt import shift as _hexd
from .model import STATUSES, SymdiffResult


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
    return [printable(line) for line in lines]


def table(title: str, columns: list[tuple[str, str]], rows: list[list[str]]) -> list[str]:
    """``title``, a header and the rows, each column as wide as its widest cell (``columns``: name and
    ``left`` or ``right``), two spaces between columns, no spaces at the end of a line."""
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, (name, _) in enumerate(columns)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if side == "left" else c.rjust(w)
                         for c, w, (_, side) in zip(cells, widths, columns)).rstrip()

    return [title, line([name for name, _ in columns]), *(line(row) for row in rows)]


def object_rows(r: SymdiffResult) -> list[list[str]]:
    rows = []
    for o in r.objects:
        deltas = sorted(o.deltas.items(), key=lambda kv: (-kv[1], kv[0]))  # the most common first
        moved = ", ".join(_hexd(d) for d, _ in deltas[:2]) + (" ..." if len(deltas) > 2 else "")
        rows.append([printable(o.object), str(o.total), *[str(o.counts[k] or "") for k in STATUSES], moved])
    return rows


def symbol_rows(r: SymdiffResult) -> list[list[str]]:
    rows = []
    for s in r.symbols:
        if s.status == "unchanged":
            continue
        size = str(s.new_size if s.new_size is not None else s.old_size)
        if s.status == "resized":
            size = f"{s.old_size} -> {s.new_size}"
        rows.append([s.status, printable(s.name), printable(s.object),
                     f"{s.old_addr:#x}" if s.old_addr is not None else "",
                     f"{s.new_addr:#x}" if s.new_addr is not None else "", _hexd(s.delta) if s.delta else "", size])
    return rows


def text(r: SymdiffResult, symbols: bool = False) -> str:
    """The summary, the per-object table and (``symbols``) the per-symbol one, as printed."""
    lines = summary_lines(r)
    lines += table("per object", [("object", "left"), *((k, "right") for k in ("symbols", *STATUSES)),
                                  ("shift", "left")], object_rows(r))
    if symbols:
        lines += table("per symbol (all but unchanged)",
                       [("status", "left"), ("symbol", "left"), ("object", "left"), ("old", "right"),
                        ("new", "right"), ("shift", "right"), ("size", "right")], symbol_rows(r))
    return "\n".join(lines) + "\n"
