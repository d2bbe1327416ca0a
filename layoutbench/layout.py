"""Layout strategies: (objects, layout name, seed) → LayoutPlan, a pure function.

A plan says, for each kind of output section (text, rodata, data, bss), which units
are placed in which order, and for each unit its alignment and the gap before it.
A unit is a whole object (its sections of that kind, in file order) or, for the
function-level layouts, one input section (one function, with -ffunction-sections).

Seeded orders come from a keyed hash of each object's name, so adding or removing
one object leaves the relative order of all others unchanged for the same seed,
and the same seed on two neighbouring commits gives nearly the same layout.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

from .elfinfo import InputSection, ObjectInfo
from .errors import LayoutbenchError

PAGE = 4096
KINDS = ("text", "rodata", "data", "bss")

#: name → one-line description (``layoutbench layouts``)
LAYOUTS: dict[str, str] = {
    "default": "the build's own object order, no gaps (what the kernel's Makefile links)",
    "sorted": "objects sorted by path, no gaps (Bluhm's sorted kernel)",
    "aligned": "objects sorted by path, every object's code on a page boundary (Bluhm's aligned kernel)",
    "random": "seeded object order + a seeded gap before them: <3 pages text, <1 page rodata/data/bss (OpenBSD KARL)",
    "function-aligned": "the build's order, every function on 64 bytes (Linux DEBUG_FORCE_FUNCTION_ALIGN_64B)",
    "padded": "the build's order, seeded padding of 0-240 bytes before every function (lld 20 --randomize-section-padding)",
}
SEEDED = {"random", "padded"}
FUNCTION_ALIGN = 64
MAX_PAD = 256  # padded: pad is a multiple of 16 below this
TEXT_GAP_MAX = 3 * PAGE
DATA_GAP_MAX = PAGE


_NAMED = re.compile(r"\.(text|rodata|data|bss)(\.[0-9A-Za-z_].*)?")


def section_kind(sec: InputSection) -> str | None:
    """Which plan group an input section belongs to (None: not placed by the plan).

    ``.text`` and ``.text.<name>`` (a name starting with a letter, digit or underscore, as
    -ffunction-sections makes them) are text; likewise rodata, data and bss.  Sections
    like Linux's ``.text..refcount`` belong to the kernel's own script and are left alone.
    Mergeable sections (strings, constants) are merged across objects by the linker and so
    are not placed per object either.
    """
    m = _NAMED.fullmatch(sec.name)
    if m is None:
        return None
    kind = m.group(1)
    if kind == "rodata" and sec.mergeable:
        return None
    return kind


@dataclass
class Unit:
    """One placement unit: an object's sections of one kind, or one named section of it."""

    object: str
    sections: list[str] | None = None  #: None: all the object's sections of this kind
    align: int = 1  #: the unit starts on this boundary
    gap: int = 0  #: bytes left empty before the unit (after aligning)


@dataclass
class LayoutPlan:
    kernel: str
    image: str
    commit: str
    layout: str
    seed: int
    groups: dict[str, list[Unit]] = field(default_factory=dict)
    pinned: list[str] = field(default_factory=list)  #: objects kept first whatever the layout
    format: int = 1

    def canonical(self) -> str:
        d = asdict(self)
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @property
    def plan_id(self) -> int:
        """A 28-bit id of the plan, linked into the image as ``__lb_plan_id``."""
        return int(hashlib.sha256(self.canonical().encode()).hexdigest()[:7], 16)

    def to_json(self) -> str:
        d = asdict(self)
        d["plan_id"] = f"0x{self.plan_id:07x}"
        return json.dumps(d, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "LayoutPlan":
        d = json.loads(text)
        d.pop("plan_id", None)
        d["groups"] = {k: [Unit(**u) for u in v] for k, v in d["groups"].items()}
        return cls(**d)

    def object_order(self, kind: str = "text") -> list[str]:
        seen: list[str] = []
        for u in self.groups.get(kind, []):
            if not seen or seen[-1] != u.object:
                seen.append(u.object)
        return seen


def keyed_rank(seed: int, name: str, salt: str = "order") -> int:
    """A keyed hash of a name: the sort key of seeded orders (stable under insertions)."""
    h = hashlib.blake2b(name.encode(), key=f"layoutbench:{salt}:{seed}".encode()[:64], digest_size=8)
    return int.from_bytes(h.digest(), "big")


def _draw(seed: int, what: str, limit: int, quantum: int = 16) -> int:
    """A seeded multiple of ``quantum`` in [0, limit)."""
    return keyed_rank(seed, what, "gap") % (limit // quantum) * quantum


def order_objects(names: list[str], layout: str, seed: int, pin_first: tuple[str, ...] = ()) -> list[str]:
    pinned = [n for n in pin_first if n in names]
    rest = [n for n in names if n not in pinned]
    if layout in ("sorted", "aligned"):
        rest = sorted(rest)
    elif layout == "random":
        rest = sorted(rest, key=lambda n: (keyed_rank(seed, n), n))
    return pinned + rest


def make_plan(
    objects: list[ObjectInfo],
    layout: str,
    seed: int = 0,
    *,
    kernel: str = "",
    image: str = "",
    commit: str = "",
    pin_first: tuple[str, ...] = (),
    kinds: tuple[str, ...] = KINDS,
) -> LayoutPlan:
    """The plan for ``layout`` with ``seed`` over ``objects`` (in the build's order)."""
    if layout not in LAYOUTS:
        raise LayoutbenchError(f"unknown layout {layout!r}; layouts are: {', '.join(LAYOUTS)}")
    if layout not in SEEDED:
        seed = 0
    by_name = {o.path: o for o in objects}
    order = order_objects([o.path for o in objects], layout, seed, pin_first)
    pinned = set(pin_first)
    groups: dict[str, list[Unit]] = {k: [] for k in kinds}

    for kind in kinds:
        first_free = True  # the first unit after the pinned objects gets the random gap
        for name in order:
            secs = [s for s in by_name[name].sections if section_kind(s) == kind]
            if not secs:
                continue
            if kind == "text" and layout in ("function-aligned", "padded"):
                seen = set()
                for s in secs:
                    if s.size == 0 or s.name in seen:
                        continue
                    seen.add(s.name)
                    if layout == "function-aligned":
                        groups[kind].append(Unit(name, [s.name], align=FUNCTION_ALIGN))
                    else:
                        groups[kind].append(Unit(name, [s.name], gap=_draw(seed, f"{name}:{s.name}", MAX_PAD)))
                continue
            unit = Unit(name)
            if layout == "aligned" and kind == "text":
                unit.align = PAGE
            if layout == "random" and first_free and name not in pinned:
                limit = TEXT_GAP_MAX if kind == "text" else DATA_GAP_MAX
                unit.gap = _draw(seed, kind, limit)
                first_free = False
            groups[kind].append(unit)
    return LayoutPlan(kernel=kernel, image=image, commit=commit, layout=layout, seed=seed, groups=groups,
                      pinned=[n for n in pin_first if n in by_name])


def parse_specs(specs: list[str], seed: int = 1) -> list[tuple[str, int]]:
    """``default,sorted,random:8`` → [(layout, seed), ...]; ``random:8`` is 8 seeds from ``seed`` on."""
    out: list[tuple[str, int]] = []
    for spec in ",".join(specs).split(","):
        spec = spec.strip()
        if not spec:
            continue
        name, _, count = spec.partition(":")
        if name not in LAYOUTS:
            raise LayoutbenchError(f"unknown layout {name!r}; layouts are: {', '.join(LAYOUTS)}")
        if count and name not in SEEDED:
            raise LayoutbenchError(f"layout {name!r} takes no seed count ({spec!r}); only {', '.join(sorted(SEEDED))} do")
        try:
            n = int(count) if count else 1
        except ValueError:
            raise LayoutbenchError(f"bad layout spec {spec!r}: write NAME or NAME:COUNT, e.g. random:8") from None
        if name in SEEDED:
            out.extend((name, seed + i) for i in range(n))
        else:
            out.append((name, 0))
    if not out:
        raise LayoutbenchError("no layout given; e.g. --layouts default,sorted,random:8")
    return list(dict.fromkeys(out))
