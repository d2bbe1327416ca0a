"""Which object each symbol came from (the replayed plan, else STT_FILE symbols), and the keys
that match a symbol with its twin in the other image."""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from pathlib import Path

from .. import elfinfo, placement
from ..errors import LayoutbenchError
from ..layout import LayoutPlan
from . import archives
from .image import Image, Sym, read_image
from .model import without_gc


@without_gc
def load_side(side: str | Path, label: str | None = None) -> Image:
    """An ELF image, with the plan beside it (``plan.json``) and its objects, if any (those a layoutbench
    work dir holds beside it: :func:`find_objects`); ``label`` names it in the diff (default: its path)."""
    p = Path(side)
    img = read_image(p, label)
    plan_path = p.parent / "plan.json"
    rec = None
    if plan_path.is_file():
        try:
            d = json.loads(plan_path.read_text())
            img.plan = LayoutPlan.from_dict(d)
            img.plan_id = _stored_id(d.get("plan_id")) or f"0x{img.plan.plan_id:07x}"
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            img.notes.append(f"{plan_path}: unreadable plan ({e}); objects from STT_FILE symbols")
        if img.plan is not None:
            rec = placement.read_record(p, img.plan_id, {n: a for n, (a, _) in img.markers.items()})
            if rec is None:
                img.objects = find_objects(p, img.plan)
    map_objects(img, *(rec or (None, None)))
    return img


def _stored_id(v) -> str | None:
    """The plan id layoutbench wrote into plan.json (``"0x1234abc"``), if it is there: it was
    computed from the same plan when the image was linked, and hashing the plan again costs a
    few ms for a plan that lists every function section."""
    return v if isinstance(v, str) and len(v) == 9 and v.startswith("0x") and \
        all(c in "0123456789abcdef" for c in v[2:]) else None


def read_objects(objdir: Path, entries: list[tuple[str, str]]) -> dict:
    """elfinfo.ObjectInfo of each (name, file relative to objdir)."""
    return {n: elfinfo.read_object(objdir / rel, n) for n, rel in entries}


def find_objects(elf: Path, plan: LayoutPlan) -> dict | None:
    """The objects an image in a layoutbench work dir was linked from.

    ``WORK/images/K/<commit>-<config>/I/L-S/image.elf`` was linked from
    ``WORK/objects/K/<commit>-<config>/obj``, listed in the profile's object list (all of them
    are read: the plan's units may place some only)."""
    from .. import build, profile

    try:
        elf = elf.resolve()
        work, key = elf.parents[5], elf.parents[2].name
        objdir = work / "objects" / plan.kernel / key / "obj"
        listing = objdir / profile.load(plan.kernel).image(plan.image).objects
        entries = dict(build.object_entries(listing))
    except (IndexError, LayoutbenchError, OSError):
        return None
    # the plan's objects, then the others linked (their data globals: placement.data_owners)
    names = list(dict.fromkeys([*(u.object for units in plan.groups.values() for u in units), *entries]))
    try:
        return read_objects(objdir, [(n, entries.get(n, n)) for n in names])
    except (LayoutbenchError, ValueError, IndexError, OSError):
        return None


def map_objects(img: Image, starts: dict[tuple[str, str], int] | None = None,
                owners: dict[str, str] | None = None) -> None:
    """Set ``obj`` of every symbol: from the plan's unit starts (as recorded beside the image,
    ``starts``, else replayed from the plan and its objects), else from STT_FILE symbols.  With
    the plan's units, a data global (which most layouts' units, code only, do not hold) belongs
    to the object that defines it (``owners``, recorded beside the image with the starts, else
    read from the objects: :func:`layoutbench.placement.data_owners`)."""
    by_sec: dict[int, list[Sym]] = defaultdict(list)
    for s in img.syms:
        by_sec[s.sec.index].append(s)
    for lst in by_sec.values():
        lst.sort(key=lambda s: (s.addr, s.name))
    # STT_FILE: locals by their file; a global between two locals of one file is in that file
    for lst in by_sec.values():
        prev = ""
        pending: list[Sym] = []
        for s in lst:
            if s.bind == "local":
                for g in pending:
                    g.obj = s.file if s.file == prev else ""
                pending = []
                s.obj = prev = s.file
            else:
                pending.append(s)
    if starts is None:
        starts = _replayed(img)
        owners = None if starts is None else placement.data_owners(img.objects)
    if starts is not None:
        _placed(img, starts, by_sec)
        _owned(img, owners or {})
    archives.attribute(img)
    one_row_per_object(img)


def _placed(img: Image, starts: dict[tuple[str, str], int], by_sec: dict[int, list[Sym]]) -> None:
    """Symbols inside the plan's units belong to the unit's object."""
    end = img.markers.get("__lb_text_units_end", (None,))[0]
    ranges: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    order = {name: i for i, name in enumerate(dict.fromkeys(o for _, o in starts))}
    for (kind, obj), addr in starts.items():
        sec = img.section_at(addr)
        if sec is not None:
            ranges[sec.index].append((addr, order[obj], obj))
    for idx, lst in ranges.items():
        lst.sort()
        addrs = [a for a, _, _ in lst]
        for s in by_sec.get(idx, []):
            if end is not None and s.sec.executable and s.addr >= end and s.sec.addr <= end:
                continue
            i = bisect.bisect_right(addrs, s.addr) - 1
            if i >= 0:
                s.obj = lst[i][2]
                s.placed = True
    img.mapping = "plan"


def _owned(img: Image, owners: dict[str, str]) -> None:
    """A global whose name a linked object defines as data belongs to that object (``owners``)."""
    for s in img.syms:
        if s.bind != "local" and not s.placed and s.name in owners:
            s.obj = owners[s.name]
            s.placed = True


def _stem(name: str) -> str:
    """A source or object file name without its extension: ``lib/crc32.c`` -> ``lib/crc32``."""
    base = name.rsplit("/", 1)[-1]
    return name[:len(name) - len(base)] + (base.rsplit(".", 1)[0] if "." in base else base)


def _compiled_names(obj: str) -> list[str]:
    """The names (without extension) of the source files object ``obj`` can be compiled from: its
    own name's, and every tail of it after a ``/`` or ``:`` (an archive member, ``lib.a:ctype.o``):
    ``vmlinux.a:init/main.o`` from ``main.c`` or ``init/main.c``."""
    st = _stem(obj)
    return [st] + [st[i + 1:] for i, c in enumerate(st) if c in "/:"]


def one_row_per_object(img: Image) -> None:
    """With a plan, a symbol outside its units that STT_FILE symbols gave to a source file
    (``stage_d.c``) belongs to the plan's object compiled from it (``stage_d.o``): one row per
    object.  That object is the one object, of those the units place symbols of, that can be
    compiled from the file (:func:`_compiled_names`); with none or several, the file stays the
    row.  The units place the same symbols in every layout of the same objects (a plan's list of
    objects is not the same: a layout of text alone lists no object without code), so each symbol
    gets the same row in every layout."""
    if img.plan is None or img.mapping != "plan":
        return
    by_name: dict[str, list[str]] = defaultdict(list)
    for o in sorted({s.obj for s in img.syms if s.placed}):
        for n in _compiled_names(o):
            by_name[n].append(o)
    found: dict[str, str | None] = {}
    for s in img.syms:
        if s.placed or not s.obj or s.obj in archives.NOT_USER:
            continue
        if s.obj not in found:
            cands = by_name.get(_stem(s.obj), [])
            found[s.obj] = cands[0] if len(cands) == 1 else None
        if found[s.obj]:
            s.obj = found[s.obj]


def _replayed(img: Image) -> dict[tuple[str, str], int] | None:
    """The unit starts by replaying the plan over its objects; None (and a note) when it cannot."""
    if img.plan is None or img.objects is None:
        if img.plan is not None:
            img.notes.append(f"{img.path}: the objects of its plan were not found; objects from STT_FILE symbols")
        return None
    names = [s.name for s in img.syms] + list(img.markers)
    n = len(names)
    columns = {"name": names, "value": [s.addr for s in img.syms] + [a for a, _ in img.markers.values()],
               "size": [s.size for s in img.syms] + [0] * len(img.markers),
               "kind": [s.kind for s in img.syms] + ["notype"] * len(img.markers),
               "bind": [s.bind for s in img.syms] + ["global"] * len(img.markers),
               "section": [s.sec.name for s in img.syms] + [sec for _, sec in img.markers.values()], "file": [""] * n}
    info = elfinfo.ImageInfo(img.path, {}, columns=columns)  # no Symbol objects: replay needs only the columns
    try:
        replayed = placement.replay(img.plan, img.objects, info)
    except LayoutbenchError as e:
        img.notes.append(f"{img.path}: plan does not replay ({e}); objects from STT_FILE symbols")
        return None
    if replayed.problems:
        img.notes.append(f"{img.path}: image does not match its plan ({replayed.problems[0]}); "
                         f"objects from STT_FILE symbols")
        return None
    return replayed.starts


def assign_keys(img: Image, mode: str) -> None:
    seen: dict[tuple, int] = {}
    plan = mode == "plan"
    for s in img.syms:  # symbol-table order: lld writes each object's locals in link-command order
        if s.bind == "local":
            base = (s.file, s.obj, s.name) if plan and s.size else (s.file, s.name)
        else:
            base = ("", s.name)
        c = seen[base] = seen.get(base, 0) + 1
        s.key = base if c == 1 else (*base, c)
    img.index()
