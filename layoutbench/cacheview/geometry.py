"""A set-associative L1 instruction cache's geometry: size, ways, line (cachegrind's ``--I1``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LayoutbenchError

L1I = "L1I"
#: the largest geometry accepted (cachegrind simulates last-level caches of hundreds of MiB)
MAX_SIZE, MAX_WAYS, MIN_LINE, MAX_LINE = 1 << 30, 1024, 8, 4096


@dataclass(frozen=True)
class Geometry:
    size: int
    ways: int
    line: int
    source: str  #: where it was read: "given", or the target it came from

    @property
    def sets(self) -> int:
        return self.size // (self.ways * self.line)

    def to_dict(self) -> dict:
        return {"size": self.size, "ways": self.ways, "line": self.line, "sets": self.sets, "source": self.source}


def parse_geometry(text: str, source: str = "given") -> Geometry:
    """``SIZE,WAYS,LINE`` (cachegrind's ``--I1``): bytes, associativity, line size in bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*", text or "")
    if not m:
        raise LayoutbenchError(f"cache geometry {text!r}: give L1I or SIZE,WAYS,LINE in bytes (e.g. 4096,2,64)")
    size, ways, line = map(int, m.groups())
    if size > MAX_SIZE or ways > MAX_WAYS or not MIN_LINE <= line <= MAX_LINE:
        raise LayoutbenchError(f"cache geometry {text!r}: beyond any real cache (at most {MAX_SIZE >> 20} MiB, "
                               f"{MAX_WAYS} ways, lines of {MIN_LINE} to {MAX_LINE} bytes); give e.g. 32768,8,64")
    if not (size and ways and line) or line & (line - 1) or size % (ways * line) or (size // (ways * line)) & \
            (size // (ways * line) - 1):
        raise LayoutbenchError(f"cache geometry {text!r}: the line size and the number of sets (size / (ways * line)) "
                               f"must be powers of two, e.g. 4096,2,64")
    return Geometry(size, ways, line, source)
