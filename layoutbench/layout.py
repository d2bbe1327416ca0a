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
from typing import ClassVar

from .elfinfo import InputSection, ObjectInfo
from . import validate
from .errors import LayoutbenchError
from .fmt import PAGE

KINDS = ("text", "rodata", "data", "bss")
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
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: dict) -> "LayoutPlan":
        """A plan from plan.json's parsed object (its recorded ``plan_id`` is not a field)."""
        d = {k: v for k, v in d.items() if k != "plan_id"}
        d["groups"] = {k: [Unit(**u) for u in v] for k, v in d["groups"].items()}
        return cls(**d)

    def object_order(self, kind: str = "text") -> list[str]:
        seen: list[str] = []
        for u in self.groups.get(kind, []):
            if not seen or seen[-1] != u.object:
                seen.append(u.object)
        return seen


def _key(text: str) -> bytes:
    """BLAKE2b's key (at most 64 bytes) for ``text``, one to one: a text that fits is the key as
    before; a longer one (a seed of 46+ digits) is hashed to 64 bytes instead of cut, so that two
    seeds never share a layout."""
    raw = text.encode()
    return raw if len(raw) <= 64 else hashlib.blake2b(raw, digest_size=64).digest()


def keyed_rank(seed: int, name: str, salt: str = "order") -> int:
    """A keyed hash of a name: the sort key of seeded orders (stable under insertions)."""
    h = hashlib.blake2b(name.encode(), key=_key(f"layoutbench:{salt}:{seed}"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def draw(seed: int, what: str, limit: int, quantum: int = 16) -> int:
    """A seeded multiple of ``quantum`` in [0, limit)."""
    return keyed_rank(seed, what, "gap") % (limit // quantum) * quantum


# -- the strategies --------------------------------------------------------------------------------

class Layout:
    """A layout strategy.  A new layout is one subclass with ``@register``: its name and
    description, whether it takes a seed, and what differs from the build's own order
    without gaps -- the object order, each unit's alignment and gap, and the promise the
    placement check verifies from the image alone.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""  #: one line (``layoutbench layouts``)
    seeded: ClassVar[bool] = False  #: True: ``NAME:COUNT`` gives COUNT layouts, seeds from ``--seed`` on

    def order(self, names: list[str], seed: int) -> list[str]:
        """The objects (the build's order, pinned objects left out) in placement order."""
        return list(names)

    def units(self, kind: str, name: str, sections: list[InputSection], seed: int) -> list[Unit]:
        """The units of object ``name``'s ``sections`` of one kind (default: the whole object)."""
        return [Unit(name)]

    def lead_gap(self, kind: str, seed: int) -> int:
        """Bytes left empty before the first unit of ``kind`` after the pinned objects."""
        return 0

    def promise(self, plan: LayoutPlan, objects: dict[str, ObjectInfo], starts: dict[tuple[str, str], int],
                addrs: dict[str, set[int]]) -> list[str]:
        """What is wrong with the image by this layout's own promise (none: ``[]``).

        ``starts``: (kind, object) → where the object's first section of that kind landed;
        ``addrs``: symbol name → its addresses in the image."""
        return []

    def label(self, seed: int) -> str:
        """The variant's name in tables, logs and the store's groups: ``random:3``, ``sorted``."""
        return f"{self.name}:{seed}" if self.seeded else self.name


#: layout name → its strategy, in the order ``layoutbench layouts`` lists them
REGISTRY: dict[str, Layout] = {}


def register(cls: type[Layout]) -> type[Layout]:
    """Class decorator: make a layout known by its ``name``."""
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"layout class {cls.__name__} needs a new, non-empty name (got {cls.name!r})")
    REGISTRY[cls.name] = cls()
    return cls


def get(name: str) -> Layout:
    """The strategy of layout ``name``; one clear line when there is none."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise LayoutbenchError(f"unknown layout {name!r}; layouts are: {', '.join(REGISTRY)}") from None


def label(name: str, seed: int) -> str:
    """How the variant (``name``, ``seed``) is labelled everywhere; a layout this version does
    not know (read back from an older store) is labelled by its seed when it has one."""
    strategy = REGISTRY.get(name)
    if strategy is None:
        return f"{name}:{seed}" if seed else name
    return strategy.label(seed)


def text_order(plan: LayoutPlan, starts: dict[tuple[str, str], int]) -> list[tuple[int, str]]:
    """(address, object) of every unpinned object's code in the image, lowest first."""
    pinned = set(plan.pinned)
    return sorted((addr, obj) for (kind, obj), addr in starts.items() if kind == "text" and obj not in pinned)


def function_sections(sections: list[InputSection]) -> list[str]:
    """The names of an object's non-empty text sections, once each (one per function with
    -ffunction-sections; hand-written assembly sharing a section stays one unit)."""
    return list(dict.fromkeys(s.name for s in sections if s.size))


@register
class Default(Layout):
    name = "default"
    description = "the build's own object order, no gaps (what the kernel's Makefile links)"


@register
class Sorted(Layout):
    name = "sorted"
    description = "objects sorted by path, no gaps (Bluhm's sorted kernel)"

    def order(self, names, seed):
        return sorted(names)

    def promise(self, plan, objects, starts, addrs):
        order = [obj for _, obj in text_order(plan, starts)]
        if order != sorted(order):
            bad = next(a for a, b in zip(order, sorted(order)) if a != b)
            return [f"layout {plan.layout}: objects are not sorted by name in the image (first out of place: {bad})"]
        return []


@register
class Aligned(Sorted):
    name = "aligned"
    description = "objects sorted by path, every object's code on a page boundary (Bluhm's aligned kernel)"

    def units(self, kind, name, sections, seed):
        return [Unit(name, align=PAGE if kind == "text" else 1)]

    def promise(self, plan, objects, starts, addrs):
        problems = super().promise(plan, objects, starts, addrs)
        off = next(((a, o) for a, o in text_order(plan, starts) if a % PAGE), None)
        if off:
            problems.append(f"layout aligned: {off[1]} code starts at 0x{off[0]:x}, not on a page boundary")
        return problems


@register
class Random(Layout):
    name = "random"
    description = "seeded object order + a seeded gap before them: <3 pages text, <1 page rodata/data/bss (OpenBSD KARL)"
    seeded = True

    def order(self, names, seed):
        return sorted(names, key=lambda n: (keyed_rank(seed, n), n))

    def lead_gap(self, kind, seed):
        return draw(seed, kind, TEXT_GAP_MAX if kind == "text" else DATA_GAP_MAX)


@register
class FunctionAligned(Layout):
    name = "function-aligned"
    description = "the build's order, every function on 64 bytes (Linux DEBUG_FORCE_FUNCTION_ALIGN_64B)"

    def units(self, kind, name, sections, seed):
        if kind != "text":
            return [Unit(name)]
        return [Unit(name, [s], align=FUNCTION_ALIGN) for s in function_sections(sections)]

    def promise(self, plan, objects, starts, addrs):
        for obj in objects.values():
            for s in obj.sections:
                if section_kind(s) != "text" or s.size == 0:
                    continue
                for sym in s.symbols:
                    if sym.kind == "func" and sym.value == 0 \
                            and not any(a % FUNCTION_ALIGN == 0 for a in addrs.get(sym.name, ())):
                        return [f"layout function-aligned: {sym.name} ({obj.path}) is not on {FUNCTION_ALIGN} bytes"]
        return []


@register
class Padded(Layout):
    name = "padded"
    description = "the build's order, seeded padding of 0-240 bytes before every function (lld 20 --randomize-section-padding)"
    seeded = True

    def units(self, kind, name, sections, seed):
        if kind != "text":
            return [Unit(name)]
        return [Unit(name, [s], gap=draw(seed, f"{name}:{s}", MAX_PAD)) for s in function_sections(sections)]


@register
class Shuffled(Random):
    """``random`` and, inside every object, a seeded order of its function sections.

    A random layout keeps each object's inner order, so code that grows ahead of a hot
    function in the same object moves it by the same amount in every random layout: that
    shift is never sampled as layout noise.  Here the functions of an object are shuffled
    too (a keyed hash of ``object:section``, so that a new function leaves the others'
    relative order alone for the same seed), and the hot function's offset inside its
    object differs from layout to layout.  An object compiled without -ffunction-sections
    has one text section, hence one unit: for such a build this layout varies only the
    object order and the lead gap, as ``random`` does.
    """

    name = "shuffled"
    description = ("seeded object order + a seeded order of each object's functions (-ffunction-sections) "
                   "+ the lead gap of random")

    @staticmethod
    def inner(name: str, sections: list[str], seed: int) -> list[str]:
        """The seeded order of object ``name``'s text sections."""
        return sorted(sections, key=lambda s: (keyed_rank(seed, f"{name}:{s}", "inner"), s))

    def units(self, kind, name, sections, seed):
        if kind != "text":
            return [Unit(name)]
        return [Unit(name, [s]) for s in self.inner(name, function_sections(sections), seed)]

    def promise(self, plan, objects, starts, addrs):
        order = [obj for _, obj in text_order(plan, starts)]
        if order != self.order(order, plan.seed):
            return [f"layout shuffled: the objects' code is not in the order of seed {plan.seed} in the image"]
        for path in order:
            obj = objects.get(path)
            if obj is None:
                continue
            text = [s for s in obj.sections if section_kind(s) == "text" and s.size]
            prev, prev_name = -1, ""
            for name in self.inner(path, function_sections(text), plan.seed):
                at = _section_address(name, text, addrs, prev)
                if at is None:
                    continue  # a section defining no symbol cannot be seen in the image
                if at <= prev:
                    return [f"layout shuffled: {path} {name} is at 0x{at:x}, not after {prev_name} "
                            f"(0x{prev:x}) as seed {plan.seed} orders them"]
                prev, prev_name = at, name
        return []


def _section_address(name: str, sections: list[InputSection], addrs: dict[str, set[int]], after: int) -> int | None:
    """Where the input section ``name`` landed, from a symbol it defines (the address of its
    first one above ``after`` when the name is defined more than once, e.g. a static
    function); None when it defines no symbol the image has."""
    for sec in sections:
        if sec.name != name:
            continue
        for sym in sec.symbols:
            if sym.bind == "weak":
                continue
            got = sorted(a - sym.value for a in addrs.get(sym.name, ()))
            if got:
                return next((a for a in got if a > after), got[-1])
    return None


# -- plans -----------------------------------------------------------------------------------------

def order_objects(names: list[str], layout: str, seed: int, pin_first: tuple[str, ...] = ()) -> list[str]:
    """The pinned objects (those of ``pin_first`` present), then the others in the layout's order."""
    pinned = [n for n in pin_first if n in names]
    return pinned + get(layout).order([n for n in names if n not in pinned], seed)


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
    strategy = get(layout)
    if not strategy.seeded:
        seed = 0
    by_name = {o.path: o for o in objects}
    pinned = set(pin_first)
    groups: dict[str, list[Unit]] = {k: [] for k in kinds}
    order = order_objects([o.path for o in objects], layout, seed, pin_first)
    for kind in kinds:
        lead = strategy.lead_gap(kind, seed)  # before the first unit after the pinned objects
        for name in order:
            secs = [s for s in by_name[name].sections if section_kind(s) == kind]
            units = strategy.units(kind, name, secs, seed) if secs else []
            if units and name not in pinned and lead is not None:
                units[0].gap += lead
                lead = None
            groups[kind].extend(units)
    return LayoutPlan(kernel=kernel, image=image, commit=commit, layout=layout, seed=seed, groups=groups,
                      pinned=[n for n in pin_first if n in by_name])


def parse_specs(specs: list[str], seed: int = 1) -> list[tuple[str, int]]:
    """``default,sorted,random:8`` → [(layout, seed), ...]; ``random:8`` is 8 seeds from ``seed`` on."""
    out: list[tuple[str, int]] = []
    for spec in ",".join(specs).split(","):
        spec = spec.strip()
        if not spec:
            continue
        name, colon, count = spec.partition(":")
        if not name or (colon and not count):
            raise LayoutbenchError(f"bad layout spec {spec!r}: write NAME or NAME:COUNT, e.g. random:8")
        strategy = get(name)
        if count and not strategy.seeded:
            seeded = ", ".join(sorted(n for n, s in REGISTRY.items() if s.seeded))
            raise LayoutbenchError(f"layout {name!r} takes no seed count ({spec!r}); only {seeded} do")
        try:
            n = int(count) if count else 1
        except ValueError:
            raise LayoutbenchError(f"bad layout spec {spec!r}: write NAME or NAME:COUNT, e.g. random:8") from None
        if not 1 <= n <= validate.MAX_LAYOUTS:
            raise LayoutbenchError(f"layout spec {spec!r}: COUNT must be from 1 to {validate.MAX_LAYOUTS} "
                                   f"(each seed is one link and one image on disk)")
        if strategy.seeded:
            validate.seed("--seed", seed, n)
            out.extend((name, seed + i) for i in range(n))
        else:
            out.append((name, 0))
    if not out:
        raise LayoutbenchError("no layout given; e.g. --layouts default,sorted,random:8")
    return list(dict.fromkeys(out))
