"""The one validation layer for command-line options and profile settings.

Every check raises a :class:`LayoutbenchError` whose one line names the option (or the
profile file and key), the value and what is allowed, before any build or run starts.
The CLI calls :func:`options` with a command's options; :mod:`layoutbench.profile` calls
:func:`target_settings` for every ``[targets.*]`` table.
"""

from __future__ import annotations

import difflib
import math
import re

from .errors import LayoutbenchError
from .target_kinds import COMMON_SETTINGS, SETTINGS

MAX_SEED = 2**63 - 1  #: seeds are stored as SQLite/PostgreSQL 64-bit integers
MAX_LAYOUTS = 10_000  #: NAME:COUNT above this is refused (each seed is one link and one image on disk)
MAX_TIMEOUT = 7 * 24 * 3600.0  #: a week


def finite(name: str, value, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
           what: str = "") -> float:
    """``value`` as a float when it is a finite number in [lo, hi] ((lo, hi] with ``lo_open``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, (bool, str)) or not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) \
            or (hi is not None and v > hi):
        lo_txt = "" if lo is None else (f"> {lo:g}" if lo_open else f">= {lo:g}")
        hi_txt = "" if hi is None else f"<= {hi:g}"
        allowed = " and ".join(t for t in (lo_txt, hi_txt) if t)
        raise LayoutbenchError(f"{name} {value!r} is not allowed: give a finite number{' ' + allowed if allowed else ''}"
                               f"{what}")
    return v


def timeout(name: str, value) -> float | None:
    """A timeout in seconds: finite, above 0, at most a week (None: unset)."""
    if value is None:
        return None
    return finite(name, value, lo=0, lo_open=True, hi=MAX_TIMEOUT, what=" (seconds)")


#: ``--confidence`` (1 - the error budget): above a coin's 0.5, at most 0.9999
CONFIDENCE_LO, CONFIDENCE_HI = 0.5, 0.9999


def confidence(value) -> float:
    """``--confidence``: the one rule (wherever it is given: the command line, a bisection's log)."""
    return finite("--confidence", value, lo=CONFIDENCE_LO, lo_open=True, hi=CONFIDENCE_HI, what=", e.g. 0.95")


def integer(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (lo is not None and value < lo) \
            or (hi is not None and value > hi):
        rng = f" from {lo}" if lo is not None else ""
        rng += f" to {hi}" if hi is not None else ""
        raise LayoutbenchError(f"{name} {value!r} is not allowed: give a whole number{rng}")
    return value


def seed(name: str, value: int | None, count: int = 1) -> int | None:
    """A first seed whose ``count`` seeds all fit a 64-bit store column."""
    if value is None:
        return None
    integer(name, value, 0, MAX_SEED)
    if value + count - 1 > MAX_SEED:
        raise LayoutbenchError(f"{name} {value}: with {count} layouts the last seed passes {MAX_SEED} (2^63-1); "
                               f"give a smaller seed")
    return value


_CPU_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
_EVENT = re.compile(r"[A-Za-z0-9_.:/=@-]+")


def pin(value, local: bool = False) -> str | None:
    """``--pin`` / ``pin``: a CPU list as taskset -c takes it (``2``, ``0-3``, ``1,3``); with ``local``,
    CPUs this process may run on."""
    if value is None or value == "":
        return None
    text = str(value)
    if isinstance(value, bool) or not _CPU_LIST.fullmatch(text):
        raise LayoutbenchError(f"--pin {text!r} is not a CPU list: write e.g. 2, 0-3 or 1,3")
    cpus: set[int] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        if b and int(b) < int(a):
            raise LayoutbenchError(f"--pin {text!r}: the range {part} is backwards")
        cpus.update(range(int(a), min(int(b or a), 65536) + 1))
    if local:
        import os

        have = os.sched_getaffinity(0)
        if not cpus <= have:
            raise LayoutbenchError(f"--pin {text!r}: CPU {min(cpus - have)} is not available here "
                                   f"(this machine runs on {_cpu_text(have)})")
    return text


def _cpu_text(cpus: set[int]) -> str:
    s = sorted(cpus)
    return f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else ",".join(map(str, s))


def perf_events(value) -> tuple[str, ...] | None:
    """``--perf-events``: a comma-separated list of perf event names."""
    if value is None:
        return None
    events = [e.strip() for e in str(value).split(",")]
    if not events or any(not e or not _EVENT.fullmatch(e) for e in events):
        raise LayoutbenchError(f"--perf-events {value!r} is not a list of event names: write e.g. "
                               f"cycles,instructions (see `perf list`)")
    return tuple(events)


def metric_names(values) -> tuple[str, ...] | None:
    """``--metric``, repeated or comma-separated: names, ``all``; an empty name is refused."""
    if values is None or (not isinstance(values, str) and len(values) == 0):
        return None
    if isinstance(values, str):
        values = (values,)
    names: list[str] = []
    for v in values:
        parts = [p.strip() for p in str(v).split(",")]
        if not all(parts):
            raise LayoutbenchError(f"--metric {v!r} names no metric: give a metric name (or several, "
                                   f"comma-separated, or 'all')")
        names.extend(parts)
    return tuple(dict.fromkeys(names))


def known_metrics(asked, present: list[str]) -> None:
    """Every asked metric was printed by some run (else one line listing the ones that were)."""
    unknown = [m for m in (asked or ()) if m != "all" and m not in present]
    if unknown and present:
        raise LayoutbenchError(f"no metric {unknown[0]!r} in these runs; they printed: {', '.join(present)} "
                               f"(--metric NAME, several comma-separated, or all)")


def options(o: dict) -> None:
    """Check a command's options (those present in ``o``) before anything is built or run."""
    if o.get("timeout") is not None:
        timeout("--timeout", o["timeout"])
    if o.get("seed") is not None:
        seed("--seed", o["seed"])
    for key in ("runs", "max_runs", "layouts_k", "max_layouts"):
        if o.get(key) is not None:
            integer(f"--{key.replace('_k', '').replace('_', '-')}", o[key], 1, MAX_LAYOUTS)
    if o.get("jobs") is not None:
        integer("--jobs", o["jobs"], 1, 1024)
    if o.get("step") is not None:
        integer("--step", o["step"], 1)
    if o.get("confidence") is not None:
        confidence(o["confidence"])
    if o.get("pin") is not None:
        pin(o["pin"])
    if o.get("perf_events") is not None:
        perf_events(o["perf_events"])


#: the smallest relative change that earns a verdict, the one default of compare, history, report and
#: bisect (``--min-effect`` takes it in percent: :data:`DEFAULT_MIN_EFFECT_PERCENT`)
DEFAULT_MIN_EFFECT = 0.005
DEFAULT_MIN_EFFECT_PERCENT = f"{100 * DEFAULT_MIN_EFFECT:g}"

#: ``--min-effect`` at or above this many percent is refused: a change that large needs no
#: statistics, and such a value is nearly always a fraction or a percent typed in the wrong unit
MIN_EFFECT_MAX_PERCENT = 50.0


def min_effect_percent(value, positive: bool = False) -> float:
    """``--min-effect`` of every command: a percent (0.5 means 0.5%; ``0.5%`` is accepted),
    0 <= value < 50 (``positive``: above 0), returned in percent."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.endswith("%"):
        text = text[:-1].strip()
    try:
        v = float(text) if isinstance(text, str) else text
    except ValueError:
        v = math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or \
            (positive and v == 0):
        raise LayoutbenchError(f"--min-effect {value!r} is not allowed: give a percent "
                               f"{'above' if positive else 'from'} 0 and below {MIN_EFFECT_MAX_PERCENT:g}, e.g. 0.5 "
                               "(0.5%)")
    if v >= MIN_EFFECT_MAX_PERCENT:
        raise LayoutbenchError(f"--min-effect {value!r} is refused: it is a percent, so this asks for a change of "
                               f"{v:g}% or more; give e.g. 0.5 for 0.5% (below {MIN_EFFECT_MAX_PERCENT:g})")
    return float(v)


def confirm_share_fraction(value, default: float) -> float:
    """``--confirm-share``: a percent of the bisection's runs, above 0 and at most 100 (100: no bound;
    ``60%`` is accepted), returned as a fraction; anything else is one line naming the option and
    its ``default`` (a fraction)."""
    try:
        v = float(str(value).strip().removesuffix("%").strip())
    except ValueError:
        v = math.nan
    if not 0 < v <= 100:
        raise LayoutbenchError(f"--confirm-share {value!r} is not allowed: give the most of the bisection's runs a "
                               f"confirmation may take, in percent above 0 and at most 100 (100: no bound), e.g. "
                               f"{100 * default:g} (the default)")
    return v / 100


def min_effect_fraction(value) -> float | None:
    """A bisection's minimum effect as it is kept: a relative change in (0, 0.5] (``--min-effect``
    takes a percent; :func:`min_effect_percent`)."""
    if value is None:
        return None
    return finite("min_effect", value, lo=0, lo_open=True, hi=MIN_EFFECT_MAX_PERCENT / 100,
                  what=" (a relative change, e.g. 0.005 for 0.5%; --min-effect takes a percent)")


# -- profile settings ------------------------------------------------------------------------------

_GEOMETRY = re.compile(r"(\d+),(\d+),(\d+)")
_SIZE = re.compile(r"(\d+)([KMGT]?)B?", re.IGNORECASE)
MAX_COST = 366 * 24 * 3600.0  #: layout_cost / run_cost: at most a year (as a duration --budget)
MIN_COST = 1e-6  #: and at least a microsecond (a smaller one makes a duration budget unbounded)
MAX_MEMORY = 1 << 40  #: a QEMU guest's memory: at most 1 TiB (QEMU's TCG guest address space)


def memory_bytes(value) -> int | None:
    """A QEMU ``-m`` size (``"256M"``, ``"1G"``, a whole number of MiB) in bytes; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value << 20 if value > 0 else None
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return None
    n = int(m.group(1)) << (20 if not m.group(2) else 10 * "KMGT".index(m.group(2).upper()) + 10)
    return n if n > 0 else None


def _words(v) -> bool:
    return isinstance(v, list) and all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in v)


def _number(v, lo: float, hi: float, lo_open: bool = False) -> bool:
    return (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
            and (v > lo if lo_open else v >= lo) and v <= hi)


def _whole(v, lo: int, hi: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and lo <= v <= hi


def _geometry(v, pow2: bool = False) -> bool:
    m = _GEOMETRY.fullmatch(v) if isinstance(v, str) else None
    if m is None:
        return False
    size, assoc, line = (int(x) for x in m.groups())
    if not pow2:
        return True
    sets = size // (assoc * line) if assoc > 0 and line > 0 else 0
    return sets > 0 and not size % (assoc * line) and not sets & (sets - 1) and not line & (line - 1)


def _perf(v) -> bool:
    if not isinstance(v, (bool, list, str)) or (isinstance(v, list) and not all(isinstance(e, str) for e in v)):
        return False
    if isinstance(v, bool):
        return True
    try:
        perf_events(",".join(v) if isinstance(v, list) else v)
    except LayoutbenchError:
        return False
    return True


def _pin(v) -> bool:
    try:
        pin(v)
    except LayoutbenchError:
        return False
    return True


def _nonempty(v) -> bool:
    """A string with something in it."""
    return isinstance(v, str) and v.strip() != ""


def _str(v) -> bool:
    return isinstance(v, str)


def _bool(v) -> bool:
    return isinstance(v, bool)


def _seconds(v) -> bool:
    return _number(v, 0, MAX_TIMEOUT, lo_open=True)


WORDS = 'a list of words, e.g. ["iterations=1000"]'
TEXT = "a string"
FLAG = "true or false"
SECONDS = f"a finite number of seconds > 0 and <= {MAX_TIMEOUT:g}"

#: setting → (check, what is allowed): the type and range of every setting of every target kind
#: (target_kinds.SETTINGS says which kind reads which; a test checks that each one is here)
TARGET_SETTINGS: dict[str, tuple] = {
    # every kind
    "perf": (_perf, "true, false or a list of event names"),
    "pin": (_pin, 'a CPU list, e.g. "2" or "0-3"'),
    "success_exit": (lambda v: _whole(v, 0, 255), "an exit status from 0 to 255"),
    "layout_cost": (lambda v: _number(v, MIN_COST, MAX_COST),
                    f"a finite number of seconds from {MIN_COST:g} to {MAX_COST:.0f} (a year)"),
    "run_cost": (lambda v: _number(v, MIN_COST, MAX_COST),
                 f"a finite number of seconds from {MIN_COST:g} to {MAX_COST:.0f} (a year)"),
    # local, cachegrind, ssh
    "args": (_words, WORDS),
    "command": (lambda v: _words(v) and len(v) > 0, "a non-empty " + WORDS),
    "collect": (_words, WORDS),
    # cachegrind, qemu-icache
    "i1": (_geometry, 'a cache geometry "SIZE,ASSOC,LINE", e.g. "4096,2,64"'),
    "d1": (_geometry, 'a cache geometry "SIZE,ASSOC,LINE", e.g. "4096,2,64"'),
    "ll": (_geometry, 'a cache geometry "SIZE,ASSOC,LINE", e.g. "4096,2,64"'),
    "miss_weight": (lambda v: _number(v, 0, math.inf), "a finite number >= 0"),
    # qemu, qemu-icache
    "append": (_str, TEXT),
    "memory": (lambda v: 1 << 20 <= (memory_bytes(v) or 0) <= MAX_MEMORY,
               'a size from 1M to 1T, e.g. "256M" or "1G" (or a whole number of MiB)'),
    "machine": (_str, TEXT),
    "cpu": (_str, TEXT),
    "accel": (lambda v: v in ("auto", "kvm", "tcg"), '"auto", "kvm" or "tcg"'),
    "initrd": (_str, TEXT),
    "debug_exit": (_bool, FLAG),
    "qemu": (_nonempty, "a QEMU program name or path"),
    "extra_args": (_words, 'a list of words, e.g. ["-smp", "1"]'),
    "plugin": (_nonempty, "the path of a built plugin (a string)"),
    "icount": (_str, TEXT),
    "rtc": (_str, TEXT),
    "guest_metrics": (_bool, FLAG),
    # ssh, labgrid-places
    "host": (_nonempty, "a host name"),
    "port": (lambda v: _whole(v, 1, 65535), "a port number from 1 to 65535"),
    "user": (_str, TEXT),
    "identity": (_str, TEXT),
    "ssh_config": (_str, TEXT),
    "known_hosts": (_str, TEXT),
    "connect_timeout": (_seconds, SECONDS),
    "remote_dir": (_nonempty, "a folder on the remote machine"),
    "install": (_str, TEXT),
    "reboot": (_bool, FLAG),
    "reboot_command": (_str, TEXT),
    "boot_id_command": (_str, TEXT),
    "boot_timeout": (_seconds, SECONDS),
    "boot_poll": (_seconds, SECONDS),
    "host_id": (_str, TEXT),
    # labgrid
    "env": (_nonempty, "the path of a labgrid environment YAML"),
    "role": (_str, TEXT),
    "image_key": (_str, TEXT),
    "state": (_str, TEXT),
    "off_state": (_str, TEXT),
    "boot_args": (_str, TEXT),
    # labgrid-places
    "coordinator": (_nonempty, 'HOST:PORT of labgrid-coordinator'),
    "places": (lambda v: isinstance(v, str) or (isinstance(v, list) and len(v) > 0 and all(isinstance(p, str) for p in v)),
               'a place name or pattern, or a list of them, e.g. ["rack*"]'),
    "tags": (lambda v: isinstance(v, dict) and all(isinstance(t, (str, int)) and not isinstance(t, bool)
                                                   for t in v.values()),
             'a table of tag values, e.g. { pool = "bench" }'),
    "acquire_timeout": (_seconds, SECONDS),
    "parallel": (lambda v: _whole(v, 1, 1024), "a whole number of places from 1 to 1024"),
}
#: a check that is stricter for one kind than the table's (the kind's own model needs it)
KIND_SETTINGS: dict[tuple[str, str], tuple] = {
    ("qemu-icache", "i1"): (lambda v: _geometry(v, pow2=True), 'a cache geometry "SIZE,ASSOC,LINE" whose line size '
                           'and number of sets (SIZE / (ASSOC x LINE)) are powers of two, e.g. "4096,2,64"'),
    ("qemu-icache", "accel"): (lambda v: v in ("auto", "tcg"), '"auto" or "tcg" (the cache model runs under TCG)'),
}


def target_settings(file, tname: str, kind: str, settings: dict) -> None:
    """The settings of one ``[targets.NAME]`` table, typed (one line naming file, table and key)."""
    from pathlib import Path

    where = f"{file}: [targets.{tname}] "

    known = (*COMMON_SETTINGS, *SETTINGS.get(kind, ()))
    for key in settings:
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise LayoutbenchError(f"{where}has no setting {key!r} for kind {kind}; {hint}"
                                   f"its settings are: {', '.join(sorted(known))}")
    for key, value in settings.items():
        ok, want = KIND_SETTINGS.get((kind, key)) or TARGET_SETTINGS[key]
        if not ok(value):
            raise LayoutbenchError(f"{where}{key} = {value!r} must be {want}")
    if "plugin" in settings:
        plugin = Path(file).parent / settings["plugin"]
        if not plugin.is_file():
            raise LayoutbenchError(f"{where}plugin = {settings['plugin']!r}: no such file ({plugin}); build it or "
                                   f"remove the setting (layoutbench's own plugin is used then)")
