"""The placement check: does a linked image really have the layout its plan promises?

The check replays the plan the way the linker lays sections out (align the unit,
skip its gap, then each input section at its own alignment) starting from the
``__lb_<kind>_units`` marker, and compares every predicted section address with
the addresses of the symbols that section defines in the image.  On top of that,
the promise of the layout itself (its strategy's ``promise`` in layout.py: objects
sorted, code on page boundaries, functions on 64 bytes) is checked from the image
alone, so that a wrong plan is caught too.

Once an image has passed the check, where each unit landed is recorded beside it
(:func:`record`, ``units.json``), with the object that defines each data global of the linked
objects (:func:`data_owners`: the units of most layouts hold code only), so that symdiff can name
every symbol's object without reading the objects again and replaying the plan (:func:`read_record`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .elfinfo import ImageInfo, ObjectInfo
from .errors import LayoutbenchError
from . import layout
from .layout import KINDS, LayoutPlan, section_kind


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass
class Placement:
    """Where each unit of a plan landed: (kind, object) → start address of its first section."""

    starts: dict[tuple[str, str], int]
    problems: list[str]


def replay(plan: LayoutPlan, objects: dict[str, ObjectInfo], image: ImageInfo) -> Placement:
    addrs = image.addresses()
    problems: list[str] = []
    starts: dict[tuple[str, str], int] = {}
    for kind in KINDS:
        units = plan.groups.get(kind, [])
        if not units:
            continue
        pos = image.symbol(f"__lb_{kind}_units").value
        for i, u in enumerate(units):
            obj = objects.get(u.object)
            if obj is None:
                problems.append(f"{kind} unit {i}: object {u.object} is not among the linked objects")
                continue
            secs = [s for s in obj.sections if section_kind(s) == kind
                    and (u.sections is None or s.name in u.sections)]
            pos = _align(pos, u.align) + u.gap
            for s in secs:
                pos = _align(pos, s.align)
                starts.setdefault((kind, u.object), pos)
                for sym in s.symbols:
                    if sym.bind == "weak":
                        continue  # a weak definition may lose to a strong one: its name is elsewhere
                    want = pos + sym.value
                    got = addrs.get(sym.name, set())
                    if want not in got:
                        where = ", ".join(f"0x{a:x}" for a in sorted(got)) or "nowhere"
                        problems.append(
                            f"{u.object} {s.name}: {sym.name} should be at 0x{want:x} by the plan "
                            f"({kind} unit {i}), but is at {where}")
                        break
                pos += s.size
        if kind == "text":
            end = image.symbol("__lb_text_units_end").value
            if end != pos:
                problems.append(f"text units end at 0x{end:x} in the image but at 0x{pos:x} by the plan")
    return Placement(starts, problems)


def promise(plan: LayoutPlan, objects: dict[str, ObjectInfo], placement: Placement, image: ImageInfo) -> list[str]:
    """The layout's own promise (see its strategy in layout.py), checked from the addresses in the image."""
    return layout.get(plan.layout).promise(plan, objects, placement.starts, image.addresses())


def check(plan: LayoutPlan, objects: dict[str, ObjectInfo], image: ImageInfo) -> Placement:
    """Raise with every problem found when the image does not obey the plan; else where its units are."""
    placement = replay(plan, objects, image)
    problems = placement.problems + promise(plan, objects, placement, image)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LayoutbenchError(f"placement check failed for {image.path.name} ({plan.layout}, seed {plan.seed}): "
                               f"{problems[0]}{more}")
    return placement


# -- the units of a checked image, recorded beside it ---------------------------------------------

UNITS = "units.json"
UNITS_FORMAT = 1


def markers(plan: LayoutPlan, image: ImageInfo) -> dict[str, int]:
    """The addresses of the markers the replay starts from (and the text units' end)."""
    names = [f"__lb_{k}_units" for k in KINDS if plan.groups.get(k)]
    names += ["__lb_text_units_end"] if plan.groups.get("text") else []
    return {n: image.symbol(n).value for n in names}


def data_owners(objects: dict[str, ObjectInfo]) -> dict[str, str]:
    """Data global name → the one linked object that defines it (``ObjectInfo.data_globals``): the
    object of its only definition, else (weak or common ones) of its only tentative one; a name
    defined by several objects alike is left out (which one the linker kept is not known here).
    Every linked object counts, not the plan's only: the answer is the same in every layout."""
    strong: dict[str, list[str]] = {}
    tentative: dict[str, list[str]] = {}
    for name, obj in objects.items():
        for sym, weak in obj.data_globals:
            (tentative if weak else strong).setdefault(sym, []).append(name)
    out = {sym: objs[0] for sym, objs in strong.items() if len(objs) == 1}
    out.update((sym, objs[0]) for sym, objs in tentative.items() if sym not in strong and len(set(objs)) == 1)
    return out


def record(elf: Path, plan: LayoutPlan, placement: Placement, image: ImageInfo,
           objects: dict[str, ObjectInfo] | None = None) -> Path:
    """Write ``units.json`` beside a checked image: (kind, object, start) of every unit in the
    replay's order, with what ties the record to this image (the plan id, the markers' addresses,
    the file's size), and the data globals of each of the linked ``objects`` (``globals``: object
    → names, see :func:`data_owners`; without ``objects``, not recorded).  Written to a temporary
    file and renamed, so it is whole or absent."""
    assert not placement.problems
    out = Path(elf).parent / UNITS
    data = {"format": UNITS_FORMAT, "plan_id": f"0x{plan.plan_id:07x}", "image_size": os.path.getsize(elf),
            "markers": markers(plan, image), "starts": [[k, o, a] for (k, o), a in placement.starts.items()]}
    if objects is not None:
        by_object: dict[str, list[str]] = {}
        for sym, obj in sorted(data_owners(objects).items()):
            by_object.setdefault(obj, []).append(sym)
        data["globals"] = by_object
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    tmp.replace(out)
    return out


def _is_int(v, want=None) -> bool:
    """An integer (not a bool, not a float), equal to ``want`` when given."""
    return type(v) is int and (want is None or v == want)


def recorded(elf: Path, plan_id: str, marker_at: dict[str, int]) -> dict[tuple[str, str], int] | None:
    """The unit starts recorded beside ``elf`` when they belong to it (see :func:`read_record`)."""
    rec = read_record(elf, plan_id, marker_at)
    return None if rec is None else rec[0]


def has_globals(elf: Path) -> bool:
    """Whether the record beside ``elf`` names the objects of its data globals (a layoutbench
    that recorded units before it did wrote none: such a record is written again)."""
    try:
        return "globals" in json.loads((Path(elf).parent / UNITS).read_text())
    except (OSError, ValueError, TypeError):
        return False


def read_record(elf: Path, plan_id: str, marker_at: dict[str, int]) \
        -> tuple[dict[tuple[str, str], int], dict[str, str] | None] | None:
    """The unit starts recorded beside ``elf`` when they belong to it: same format, same plan id,
    same size, every recorded marker at the same address (``marker_at``: name → address in the
    image), and the data globals' objects (name → object; None when the record has none).  None
    otherwise (no record, a stale or unreadable one): replay the plan instead."""
    path = Path(elf).parent / UNITS
    if not path.is_file():  # none, or a FIFO (whose read would wait for a writer forever)
        return None
    try:
        data = json.loads(path.read_text())
        if not _is_int(data.get("format"), UNITS_FORMAT) or data.get("plan_id") != plan_id \
                or not _is_int(data.get("image_size"), os.path.getsize(elf)) or not isinstance(data.get("markers"), dict) \
                or not all(n in marker_at and _is_int(a, marker_at[n]) for n, a in data["markers"].items()):
            return None
        starts: dict[tuple[str, str], int] = {}
        for unit in data["starts"]:
            k, o, a = unit
            if not (isinstance(unit, list) and isinstance(k, str) and isinstance(o, str) and _is_int(a)) \
                    or (k, o) in starts:
                return None
            starts[(k, o)] = a
        return starts, _owners(data.get("globals"))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _owners(by_object) -> dict[str, str] | None:
    """``globals`` of a record (object → names) as name → object; a name under two objects, or
    anything but lists of names, is a broken record (ValueError)."""
    if by_object is None:
        return None
    if not isinstance(by_object, dict):
        raise ValueError("globals")
    out: dict[str, str] = {}
    for obj, names in by_object.items():
        if not isinstance(names, list) or not all(isinstance(n, str) and n not in out for n in names) \
                or len(set(names)) != len(names):
            raise ValueError("globals")
        out.update((n, obj) for n in names)
    return out
