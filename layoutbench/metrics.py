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

import math
import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float
    unit: str
    higher_is_better: bool


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


#: the largest magnitude a sample may have: beyond it sums of squares overflow and ratios mean nothing
MAX_ABS = 1e18


def refuse(samples) -> str | None:
    """The sample gate before the store: why these samples cannot be stored (one line), or None.

    A value that is not finite (nan, inf), negative (every ratio, median ratio and interval of
    layoutbench assumes values > 0 or 0) or beyond ``MAX_ABS`` makes the whole run failed with
    this reason; the session goes on."""
    for s in samples:
        v = s.value
        if not math.isfinite(v):
            return f"metric {s.metric} printed a non-finite value ({v}); fix the benchmark's output"
        if v < 0:
            return (f"metric {s.metric} printed a negative value ({v:g}); layoutbench compares ratios of "
                    f"values >= 0: print a positive quantity (e.g. a time, a count)")
        if v > MAX_ABS:
            return f"metric {s.metric} printed {v:g}, beyond {MAX_ABS:g}; print it in a larger unit"
    return None


def json_safe(value):
    """``value`` with every non-finite float replaced by None (strict JSON has no NaN/Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
