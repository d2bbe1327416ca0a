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
        finite("--confidence", o["confidence"], lo=0, lo_open=True, hi=0.9999)
    if o.get("pin") is not None:
        pin(o["pin"])
    if o.get("perf_events") is not None:
        perf_events(o["perf_events"])


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


def min_effect_fraction(value) -> float | None:
    """bisect ``--min-effect``: a relative change in (0, 10]."""
    if value is None:
        return None
    return finite("min_effect", value, lo=0, lo_open=True, hi=MIN_EFFECT_MAX_PERCENT / 100,
                  what=" (a relative change, e.g. 0.005 for 0.5%; --min-effect takes a percent)")


# -- profile settings ------------------------------------------------------------------------------

_GEOMETRY = re.compile(r"\d+,\d+,\d+")
_STR_LIST = ("args", "command", "collect", "pin_first")


def target_settings(file, tname: str, kind: str, settings: dict) -> None:
    """The settings of one ``[targets.NAME]`` table, typed (one line naming file, table and key)."""
    where = f"{file}: [targets.{tname}] "

    def bad(key, want):
        return LayoutbenchError(f"{where}{key} = {settings[key]!r} must be {want}")

    from .targets import COMMON_SETTINGS, SETTINGS  # here: the targets package imports the profile module
    known = (*COMMON_SETTINGS, *SETTINGS.get(kind, ()))
    for key in settings:
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise LayoutbenchError(f"{where}has no setting {key!r} for kind {kind}; {hint}"
                                   f"its settings are: {', '.join(sorted(known))}")

    for key in ("args", "command", "collect"):
        if key in settings:
            v = settings[key]
            if not isinstance(v, list) or not all(isinstance(w, (str, int, float)) and not isinstance(w, bool)
                                                  for w in v):
                raise bad(key, f'a list of words, e.g. {key} = ["iterations=1000"]')
    if "command" in settings and not settings["command"]:
        raise bad("command", "a non-empty list of words")
    for key in ("success_exit", "port"):
        if key in settings and (isinstance(settings[key], bool) or not isinstance(settings[key], int)):
            raise bad(key, "a whole number")
    if "success_exit" in settings and not 0 <= settings["success_exit"] <= 255:
        raise bad("success_exit", "an exit status from 0 to 255")
    for key in ("miss_weight", "connect_timeout", "boot_timeout", "boot_poll", "layout_cost", "run_cost"):
        if key in settings:
            v = settings[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
                    or (key != "miss_weight" and v == 0):
                raise bad(key, "a finite number " + (">= 0" if key == "miss_weight" else "> 0")
                          + (" (seconds)" if key.endswith("_cost") else ""))
    if kind == "cachegrind":
        for key in ("i1", "d1", "ll"):
            if key in settings and not (isinstance(settings[key], str) and _GEOMETRY.fullmatch(settings[key])):
                raise bad(key, 'a cache geometry "SIZE,ASSOC,LINE", e.g. "4096,2,64"')
    for key in ("remote_dir", "host", "user", "append", "install", "reboot_command", "boot_id_command", "host_id",
                "known_hosts", "identity", "ssh_config"):
        if key in settings and not isinstance(settings[key], str):
            raise bad(key, "a string")
    if "remote_dir" in settings and not settings["remote_dir"].strip():
        raise bad("remote_dir", "a folder on the remote machine")
    if "perf" in settings:
        v = settings["perf"]
        if not isinstance(v, (bool, list, str)) or (isinstance(v, list) and not all(isinstance(e, str) for e in v)):
            raise bad("perf", "true, false or a list of event names")
        if isinstance(v, (list, str)) and not isinstance(v, bool):
            try:
                perf_events(",".join(v) if isinstance(v, list) else v)
            except LayoutbenchError:
                raise bad("perf", "true, false or a list of event names") from None
    if "pin" in settings:
        try:
            pin(settings["pin"])
        except LayoutbenchError:
            raise bad("pin", 'a CPU list, e.g. "2" or "0-3"') from None
