"""The placement check: does a linked image really have the layout its plan promises?

The check replays the plan the way the linker lays sections out (align the unit,
skip its gap, then each input section at its own alignment) starting from the
``__lb_<kind>_units`` marker, and compares every predicted section address with
the addresses of the symbols that section defines in the image.  On top of that,
the promise of the layout itself (its strategy's ``promise`` in layout.py: objects
sorted, code on page boundaries, functions on 64 bytes) is checked from the image
alone, so that a wrong plan is caught too.

Once an image has passed the check, where each unit landed is recorded beside it
(:func:`record`, ``units.json``), so that symdiff can name every symbol's object without
reading the objects again and replaying the plan (:func:`recorded`).
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


def record(elf: Path, plan: LayoutPlan, placement: Placement, image: ImageInfo) -> Path:
    """Write ``units.json`` beside a checked image: (kind, object, start) of every unit in the
    replay's order, with what ties the record to this image (the plan id, the markers' addresses,
    the file's size).  Written to a temporary file and renamed, so it is whole or absent."""
    assert not placement.problems
    out = Path(elf).parent / UNITS
    data = {"format": UNITS_FORMAT, "plan_id": f"0x{plan.plan_id:07x}", "image_size": os.path.getsize(elf),
            "markers": markers(plan, image), "starts": [[k, o, a] for (k, o), a in placement.starts.items()]}
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    tmp.replace(out)
    return out


def _is_int(v, want=None) -> bool:
    """An integer (not a bool, not a float), equal to ``want`` when given."""
    return type(v) is int and (want is None or v == want)


def recorded(elf: Path, plan_id: str, marker_at: dict[str, int]) -> dict[tuple[str, str], int] | None:
    """The unit starts recorded beside ``elf`` when they belong to it: same format, same plan id,
    same size, every recorded marker at the same address (``marker_at``: name → address in the
    image).  None otherwise (no record, a stale or unreadable one): replay the plan instead."""
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
        return starts
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
