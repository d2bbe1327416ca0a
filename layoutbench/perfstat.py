"""Hardware and software counters of a benchmark run, through ``perf stat -x,``.

A target with ``perf = true`` (or ``layoutbench compare --perf``) runs its command as
``perf stat -x, -e EVENTS -- COMMAND``. perf writes one CSV line per event to standard
error, which the target keeps in the run's console log, after the benchmark's own lines::

    0.99,msec,task-clock,985014,100.00,0.495,CPUs utilized
    <not supported>,,cycles,0,100.00,,

Each counted event becomes a metric of the run named ``perf.<event>`` (lower is better);
``perf.ipc`` (instructions per cycle, higher is better) is derived when both are counted.
Events the machine cannot count (``<not supported>``, ``<not counted>``) are left out and
named once by the caller, in one line: on a virtual machine only software events exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .metrics import Sample

#: what ``--perf`` counts when no event list is given: what makes one layout slower than another
DEFAULT_EVENTS = ("cycles", "instructions", "L1-icache-load-misses", "iTLB-load-misses", "branch-misses",
                  "task-clock", "page-faults", "context-switches")
PREFIX = "perf."


@dataclass
class Counters:
    """What perf said about one run."""

    samples: list[Sample] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  #: events perf could not count here


def events_of(setting) -> tuple[str, ...]:
    """The event list of a target's ``perf`` setting: ``true`` → the defaults, a list or a
    comma-separated string → those events, ``false``/absent → none."""
    if setting is None or setting is False:
        return ()
    if setting is True:
        return DEFAULT_EVENTS
    if isinstance(setting, str):
        return tuple(e.strip() for e in setting.split(",") if e.strip())
    return tuple(str(e) for e in setting)


def wrap(cmd: list[str], events: tuple[str, ...], pin: str | None = None) -> list[str]:
    """``cmd`` run under perf stat (when ``events``) and pinned with taskset (when ``pin``)."""
    out = list(cmd)
    if events:
        out = ["perf", "stat", "-x,", "-e", ",".join(events), "--", *out]
    if pin is not None:
        out = ["taskset", "-c", str(pin), *out]
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse(output: str, events: tuple[str, ...]) -> Counters:
    """The counters of the events asked for, from a console that holds perf's CSV lines.

    Only lines whose third field is one of ``events`` are read (a benchmark's own output
    with commas is left alone); perf may append modifiers to an event name (``cycles:u``).
    """
    c = Counters()
    wanted = set(events)
    got: dict[str, float] = {}
    for raw in output.splitlines():
        parts = raw.strip().split(",")
        if len(parts) < 3:
            continue
        event = parts[2].split(":")[0]
        if event not in wanted or event in got or event in c.unsupported:
            continue
        value = _number(parts[0])
        if value is None:  # <not supported>, <not counted>
            c.unsupported.append(event)
            continue
        got[event] = value
        unit = parts[1] or "events"
        c.samples.append(Sample(PREFIX + event, value, unit, False))
    c.unsupported += [e for e in events if e not in got and e not in c.unsupported]
    if got.get("cycles") and "instructions" in got:
        c.samples.append(Sample(PREFIX + "ipc", got["instructions"] / got["cycles"], "instructions/cycle", True))
    return c


def unsupported_line(events: set[str] | list[str]) -> str | None:
    """The one line that names every event this machine could not count."""
    if not events:
        return None
    return (f"perf: not supported here, left out: {', '.join(sorted(events))} "
            f"(a virtual machine has only software events; count hardware events on bare metal)")
