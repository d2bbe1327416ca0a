"""The result of a diff: per symbol, per object, shift origins; as dicts and JSON, and back.

It imports nothing heavy (the text of a native diff is rendered from it without numpy)."""

from __future__ import annotations

import functools
import gc
import json
from dataclasses import asdict, dataclass, field

def without_gc(fn):
    """Run fn with the cyclic garbage collector paused: a vmlinux makes tens of thousands of small
    objects that hold no cycles, and each collection would walk all of them again."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return run


STATUSES = ("unchanged", "moved", "changed", "resized", "added", "removed")


@dataclass
class SymbolDiff:
    name: str
    object: str
    kind: str
    status: str
    old_addr: int | None
    new_addr: int | None
    old_size: int | None
    new_size: int | None
    section: str

    @property
    def delta(self) -> int | None:
        if self.old_addr is None or self.new_addr is None:
            return None
        return self.new_addr - self.old_addr

    def to_dict(self) -> dict:
        return {"name": self.name, "object": self.object, "kind": self.kind, "status": self.status,
                "old_addr": self.old_addr, "new_addr": self.new_addr, "old_size": self.old_size,
                "new_size": self.new_size, "section": self.section, "delta": self.delta}


@dataclass
class ObjectDiff:
    object: str
    counts: dict[str, int]
    deltas: dict[int, int]  #: address shift → how many of its symbols moved by it

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict:
        return {"object": self.object, "total": self.total, **self.counts,
                "deltas": {str(k): v for k, v in sorted(self.deltas.items())}}


@dataclass
class ShiftOrigin:
    section: str
    address: int
    symbol: str  #: the first symbol whose placement differs
    object: str
    cause: str  #: added-object, added-symbol, removed-object, removed-symbol, resized, layout, padding
    responsible: str  #: the object or symbol that caused it
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Propagation:
    section: str
    moved: int  #: matched symbols at or above the origin that moved
    stayed: int  #: matched symbols above the origin that did not
    first: int
    last: int  #: highest new address of a moved symbol
    to_end: bool  #: every matched symbol above the origin moved
    absorbed_at: str | None  #: first symbol above the origin that is back in place

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SideInfo:
    path: str
    label: str
    symbols: int
    mapping: str
    layout: str | None
    plan_id: str | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SymdiffResult:
    old: SideInfo
    new: SideInfo
    mapping: str
    counts: dict[str, int]
    moved_by: dict[int, int]  #: shift → number of moved symbols
    page_quantized: bool  #: every moved function/label in executable sections moved by whole pages
    origins: list[ShiftOrigin]
    propagation: Propagation | None
    text_bytes: int  #: function bytes in the new image's executable sections
    text_unchanged_bytes: int
    text_functions: int
    text_unchanged_functions: int
    objects: list[ObjectDiff]
    symbols: list[SymbolDiff]
    compared: dict[str, int]
    notes: list[str]
    text_moved_by: dict[int, int] = field(default_factory=dict)  #: the same, executable sections only

    @property
    def placement_identical(self) -> bool:
        return not any(self.counts[k] for k in ("moved", "resized", "added", "removed"))

    @property
    def text_unchanged_share(self) -> float:
        return self.text_unchanged_bytes / self.text_bytes if self.text_bytes else 1.0

    @classmethod
    @without_gc
    def from_dict(cls, d: dict) -> SymdiffResult:
        """The result :meth:`to_dict` printed (the native helper's ``--json``), to render its text."""
        syms = [SymbolDiff(s["name"], s["object"], s["kind"], s["status"], s["old_addr"], s["new_addr"],
                           s["old_size"], s["new_size"], s["section"]) for s in d["symbols"]]
        objs = [ObjectDiff(o["object"], {k: o[k] for k in STATUSES}, {int(k): v for k, v in o["deltas"].items()})
                for o in d["objects"]]
        t, m, p = d["text"], d["moved"], d["propagation"]
        return cls(SideInfo(**d["old"]), SideInfo(**d["new"]), d["mapping"], dict(d["counts"]),
                   {int(k): v for k, v in m["by"].items()}, m["text_whole_pages"],
                   [ShiftOrigin(**o) for o in d["shift_origins"]], Propagation(**p) if p else None,
                   t["bytes"], t["unchanged_bytes"], t["functions"], t["unchanged_functions"], objs, syms,
                   dict(d["compared"]), list(d["notes"]), {int(k): v for k, v in m["text_by"].items()})

    @without_gc
    def to_dict(self, all_symbols: bool = True) -> dict:
        return self._dict([s.to_dict() for s in self.symbols if all_symbols or s.status != "unchanged"])

    @without_gc
    def to_json(self) -> str:
        """``to_dict()`` as JSON (one line: the json module's C encoder; its indented one is pure Python
        and takes seconds on a vmlinux)."""
        return json.dumps(self.to_dict())

    def _dict(self, symbols) -> dict:
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "mapping": self.mapping,
            "placement_identical": self.placement_identical,
            "counts": self.counts,
            "moved": {"symbols": self.counts["moved"], "by": {str(k): v for k, v in sorted(self.moved_by.items())},
                      "min": min(self.moved_by, default=None), "max": max(self.moved_by, default=None),
                      "text_by": {str(k): v for k, v in sorted(self.text_moved_by.items())},
                      "text_whole_pages": self.page_quantized},
            "shift_origin": self.origins[0].to_dict() if self.origins else None,
            "shift_origins": [o.to_dict() for o in self.origins],
            "propagation": self.propagation.to_dict() if self.propagation else None,
            "text": {"bytes": self.text_bytes, "unchanged_bytes": self.text_unchanged_bytes,
                     "unchanged_share": round(self.text_unchanged_share, 6), "functions": self.text_functions,
                     "unchanged_functions": self.text_unchanged_functions},
            "objects": [o.to_dict() for o in self.objects],
            "symbols": symbols,
            "compared": self.compared,
            "notes": self.notes,
        }

