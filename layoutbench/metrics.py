"""Benchmark output → samples.

A kernel (or any benchmark) prints lines that start with the profile's prefix
(``LAYOUTBENCH`` by default) followed by a kind and ``key=value`` fields::

    LAYOUTBENCH build kernel=minikernel version=1.0 platform=qemu plan=0x1234567
    LAYOUTBENCH metric name=cycles_per_packet value=812.25 unit=cycles better=lower
    LAYOUTBENCH check name=checksum value=0x00ab...
    LAYOUTBENCH end status=ok

Everything else on the console is kept in the run's log but not parsed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float
    unit: str
    higher_is_better: bool

    @property
    def better(self) -> str:
        return "higher" if self.higher_is_better else "lower"


@dataclass
class Parsed:
    samples: list[Sample] = field(default_factory=list)
    build: dict[str, str] = field(default_factory=dict)  #: the fields of the build line
    checks: dict[str, str] = field(default_factory=dict)  #: name → value of check lines
    end: str | None = None  #: the status of the end line (``ok``, ``panic``...), None if missing
    panic: str | None = None  #: the first PANIC line, if any


def _fields(rest: str) -> dict[str, str]:
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    return dict(w.split("=", 1) for w in words if "=" in w)


def parse(output: str, prefix: str = "LAYOUTBENCH") -> Parsed:
    """Read every metric, build, check and end line of a console log."""
    p = Parsed()
    for raw in output.splitlines():
        line = raw.strip().replace("\r", "")
        if p.panic is None and ("PANIC" in line or "Kernel panic" in line):
            p.panic = line
        at = line.find(prefix + " ")
        if at < 0:
            continue
        kind, _, rest = line[at + len(prefix) + 1:].partition(" ")
        f = _fields(rest)
        if kind == "metric" and "name" in f and "value" in f:
            try:
                value = float(f["value"])
            except ValueError:
                continue
            p.samples.append(Sample(f["name"], value, f.get("unit", ""), f.get("better", "lower") == "higher"))
        elif kind == "build":
            p.build = f
        elif kind == "check" and "name" in f:
            p.checks[f["name"]] = f.get("value", "")
        elif kind == "end":
            p.end = f.get("status", "")
    return p
