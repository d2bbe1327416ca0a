"""The placement check: does a linked image really have the layout its plan promises?

The check replays the plan the way the linker lays sections out (align the unit,
skip its gap, then each input section at its own alignment) starting from the
``__lb_<kind>_units`` marker, and compares every predicted section address with
the addresses of the symbols that section defines in the image.  On top of that,
the promise of the layout itself (its strategy's ``promise`` in layout.py: objects
sorted, code on page boundaries, functions on 64 bytes) is checked from the image
alone, so that a wrong plan is caught too.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def check(plan: LayoutPlan, objects: dict[str, ObjectInfo], image: ImageInfo) -> None:
    """Raise with every problem found when the image does not obey the plan."""
    placement = replay(plan, objects, image)
    problems = placement.problems + promise(plan, objects, placement, image)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LayoutbenchError(f"placement check failed for {image.path.name} ({plan.layout}, seed {plan.seed}): "
                               f"{problems[0]}{more}")
