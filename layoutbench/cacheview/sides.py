"""The two images of a cache view as the diff lists them: each image's functions (name, object,
address, size) from the diff's symbols, its path, and the profile that built it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..symdiff.model import SymdiffResult


@dataclass(frozen=True)
class Function:
    """One function of one image: where its bytes are."""

    name: str
    obj: str
    addr: int
    size: int


@dataclass(frozen=True)
class Side:
    """One image of the view: its file, the kernel profile whose build it is (the ``kernel`` of the
    plan.json beside it; None when it is no layoutbench build), and its functions by name (several
    local functions may share one: in the diff's order)."""

    path: str
    kernel: str | None
    functions: dict[str, list[Function]]


def _kernel_of(image: str) -> str | None:
    try:
        kernel = json.loads((Path(image).parent / "plan.json").read_text()).get("kernel")
    except (OSError, ValueError, AttributeError):
        return None
    return kernel if isinstance(kernel, str) and kernel else None


def sides_of(res: SymdiffResult) -> tuple[Side, Side]:
    """The old and the new image of the diff ``res`` (a diff with its symbols): the functions of each
    with a size (a function the other image lacks is in its own side only)."""
    out = []
    for side, info in (("old", res.old), ("new", res.new)):
        funcs: dict[str, list[Function]] = {}
        for s in res.symbols:
            addr, size = getattr(s, f"{side}_addr"), getattr(s, f"{side}_size")
            if s.kind == "func" and addr is not None and size:
                funcs.setdefault(s.name, []).append(Function(s.name, s.object or "", addr, size))
        out.append(Side(info.path, _kernel_of(info.path), funcs))
    return out[0], out[1]
