"""Targets: where an image runs and how its console becomes a RunResult.

One small class per kind, as labgrid does it: ``local`` (a hosted executable or any
command, natively), ``qemu`` (boot the kernel image), ``cachegrind`` (the hosted
build under valgrind's cache simulator: a deterministic, layout-sensitive cost).
Every run has a timeout; a hang is killed with its whole process group and
recorded as ``timeout``; a panic or a bad exit status is recorded as a failed run
with its console log kept.
"""

from __future__ import annotations

import importlib
import socket
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import machine, metrics, perfstat, procs
from ..errors import LayoutbenchError
from ..profile import Profile, Target as TargetSpec
from ..target_kinds import KINDS

#: statuses a run can end with
STATUSES = ("ok", "failed", "panic", "timeout", "error")


@dataclass
class RunResult:
    status: str  #: one of STATUSES
    exit_code: int | None
    output: str  #: the whole console (also written to the run's log)
    duration: float  #: wall seconds
    accelerator: str  #: native, tcg, kvm, valgrind, ...
    host: str  #: where it ran
    samples: list[metrics.Sample] = field(default_factory=list)
    message: str = ""  #: why it is not ok, one line
    build: dict = field(default_factory=dict)
    #: seconds this run spent before its benchmark on steps every run repeats and ``duration``
    #: does not hold (ssh: install, reboot); None: the target has none (a QEMU boot is in ``duration``)
    boot_seconds: float | None = None
    #: seconds spent on steps only a new image needs on this target, skipped by a rerun of the
    #: same image (ssh without reboot: the copy); None: none happened
    deploy_seconds: float | None = None


def run_command(cmd: list[str], timeout: float, log: Path, env: dict | None = None,
                cwd: Path | None = None) -> tuple[int | None, str, float, bool]:
    """Run ``cmd`` with its output streamed to ``log``; kill its process group at ``timeout``.

    Returns (exit code or None, output, seconds, timed out).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log, "wb") as f:
        try:
            p = procs.start(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        except (FileNotFoundError, PermissionError) as e:
            raise LayoutbenchError(f"cannot run {cmd[0]}: {e.strerror}; is it installed?") from None
        timed_out = procs.finish(p, timeout)
    output = log.read_bytes().decode(errors="replace")
    return (None if timed_out else p.returncode), output, time.monotonic() - t0, timed_out


def classify(output: str, code: int | None, timed_out: bool, duration: float, target: "Target") -> RunResult:
    """Turn a finished run of ``target`` into a RunResult with a status and the samples it printed
    (the target gives the success exit status, the metrics prefix, the timeout, accelerator and host)."""
    success = int(target.spec.settings.get("success_exit", target.success_exit))
    timeout = target.timeout
    parsed = metrics.parse(output, target.profile.metric_prefix)
    r = RunResult("ok", code, output, duration, target.accelerator, target.host, parsed.samples, build=parsed.build)
    if timed_out:
        r.status, r.message = "timeout", f"no end after {timeout:.0f}s: killed"
    elif parsed.panic or parsed.end == "panic":
        r.status, r.message = "panic", parsed.panic or "the kernel reported a panic"
    elif code != success:
        r.status, r.message = "failed", f"exit status {code}, expected {success}"
    elif parsed.end not in (None, "ok"):
        r.status, r.message = "failed", f"the benchmark ended with status {parsed.end}"
    elif not parsed.samples:
        r.status, r.message = "failed", "no metric lines in the output"
    if r.status != "ok":
        r.samples = []  # a failed run's numbers are not trusted; its log is kept
    return r


class Target:
    """Base class: a target runs one image and returns a RunResult.

    Kinds that run a benchmark as a process on a machine (``local``, ``ssh``) set
    ``counts = True``: their settings ``perf`` (true or an event list: run under
    ``perf stat``) and ``pin`` (a CPU list for ``taskset``) apply, and they can check
    whether their machine is quiet (``machine_check``)."""

    kind = "?"
    success_exit = 0
    counts = False  #: perf counters, pinning and the quiet-machine check apply
    #: what one stored run's time is, in the words of the measured costs ("12 boots+runs 3.1 s")
    run_noun = "runs"
    #: the metrics the target itself makes of a run (a cache model's counts), every one it keeps
    #: unless its ``guest_metrics`` setting keeps the benchmark's own lines too; None: whatever the
    #: benchmark prints (not known before a run)
    METRICS: tuple[str, ...] | None = None
    #: the metric a command follows on this kind when neither ``--metric`` nor the profile's
    #: ``[metrics] default_by_kind`` names one (None: the profile's ``[metrics] default``)
    DEFAULT_METRIC: str | None = None

    def __init__(self, spec: TargetSpec, profile: Profile):
        self.spec, self.profile = spec, profile
        self.timeout = float(spec.settings.get("timeout_override", spec.timeout))
        self.perf_events = perfstat.events_of(spec.settings.get("perf"))
        pin = spec.settings.get("pin")
        self.pin = None if pin is None or pin == "" else str(pin)
        if (self.perf_events or self.pin is not None) and not self.counts:
            raise LayoutbenchError(f"target {spec.name} (kind {spec.kind}) cannot count with perf or pin a CPU; "
                                   f"use a local or ssh target (perf kvm stat for QEMU guests is not supported)")

    def prints(self) -> tuple[str, ...] | None:
        """Every metric a run of this target can print, known before any run; None when the
        benchmark decides (a local, QEMU or SSH benchmark, or a cache model keeping its guest's lines)."""
        if self.METRICS is None or self.spec.settings.get("guest_metrics"):
            return None
        return self.METRICS

    def wrap(self, words: list[str]) -> list[str]:
        """The benchmark command under ``perf stat`` and ``taskset`` as the settings ask."""
        return perfstat.wrap(words, self.perf_events, self.pin)

    def machine_check(self) -> list[machine.Finding]:
        """Whether the machine the benchmark runs on is quiet (only for ``counts`` kinds)."""
        return machine.check_local(self.pin) if self.counts else []

    @property
    def host(self) -> str:
        return socket.gethostname()

    @property
    def accelerator(self) -> str:
        return "native"

    def command(self, image: Path, extra: list[str]) -> list[str]:
        raise NotImplementedError

    def run(self, image: Path, log: Path, extra: list[str] | None = None) -> RunResult:
        cmd = self.command(image, list(extra or []))
        if self.counts:
            cmd = self.wrap(cmd)
        code, output, secs, timed_out = run_command(cmd, self.timeout, log)
        return self.finish(output, code, timed_out, secs, log)

    def finish(self, output: str, code, timed_out: bool, secs: float, log: Path) -> RunResult:
        r = classify(output, code, timed_out, secs, self)
        if self.perf_events and r.status == "ok":  # what perf could not count is derived from the samples
            r.samples.extend(perfstat.parse(output, self.perf_events).samples)
        return r

    def describe(self) -> str:
        return f"{self.spec.name} ({self.kind}, {self.accelerator})"

    def open(self) -> None:
        """Get ready to run (connect, acquire); raise a LayoutbenchError saying why it cannot."""

    def close(self) -> None:
        """Release what ``open`` or the runs took (connections, places)."""

    def __enter__(self) -> "Target":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def target_class(profile: Profile, spec: TargetSpec) -> type[Target]:
    """The class of ``spec``'s kind, its module imported now; one line when it cannot be."""
    if spec.kind not in KINDS:
        raise LayoutbenchError(f"{profile.path}: target {spec.name} has unknown kind {spec.kind!r}; "
                               f"kinds are: {', '.join(KINDS)}")
    module, cls, needs = KINDS[spec.kind]
    if needs:
        try:
            importlib.import_module(needs)
        except ImportError:
            raise LayoutbenchError(f"target {spec.name} (kind {spec.kind}) needs the Python package "
                                   f"{needs}: pip install {needs}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make(profile: Profile, name: str | None = None, timeout: float | None = None,
         overrides: dict | None = None) -> Target:
    """The target ``name`` of a profile (its default target when None); ``overrides`` replace
    settings of its table (``perf``, ``pin`` from the command line), so they key its samples too."""
    spec = profile.target(name)
    if overrides:
        spec = replace(spec, settings={**spec.settings, **overrides})
    t = target_class(profile, spec)(spec, profile)
    if timeout is not None:
        t.timeout = timeout
    return t


def default_metric(profile: Profile, name: str | None = None, own: bool = True) -> str | None:
    """The metric a command follows on target ``name`` (None: the profile's default target) when
    ``--metric`` is not given: the profile's ``[metrics] default_by_kind`` entry for its kind, else
    the kind's own (``cg_cost`` on cachegrind, ``ic_cost`` on qemu-icache; not with ``own=False``:
    what the profile names only), else ``[metrics] default``."""
    spec = profile.target(name)
    if spec.kind in profile.default_by_kind:
        return profile.default_by_kind[spec.kind]
    if not own:
        return profile.default_metric
    try:
        own = target_class(profile, spec).DEFAULT_METRIC
    except LayoutbenchError:  # a kind whose Python package is missing: making the target says so
        own = None
    return own or profile.default_metric


def no_metric(profile: Profile, target: Target, metric: str, printed, whence: str = "--metric",
              first_run: bool = False) -> str:
    """The one line for a metric the runs of ``target`` do not print: the metric and where it came
    from, the target, what it prints (``first_run``: what its first run printed) and what to pass."""
    printed = sorted(dict.fromkeys(printed))
    default = default_metric(profile, target.spec.name)
    use = default if default in printed and default != metric else (printed[0] if printed else None)
    verb = "printed" if first_run else "prints"
    return (f"{whence} {metric!r}: target {target.spec.name} ({target.kind}) of {profile.name} {verb} no such metric"
            f"{' in its first run' if first_run else ''}; it {verb} {', '.join(printed) or 'none'}"
            + (f"; pass --metric {use}" if use else ""))


def check_metric(profile: Profile, target: Target, metric: str | None, whence: str = "--metric") -> None:
    """Refuse, before anything is built, a metric ``target`` cannot print (where that is known
    before a run: :meth:`Target.prints`); one line naming it, the target and what it prints."""
    printed = target.prints()
    if metric and metric != "all" and printed is not None and metric not in printed:
        raise LayoutbenchError(no_metric(profile, target, metric, printed, whence))


def require(spec: TargetSpec, profile: Profile, setting: str, what: str):
    """The value of a setting the target's kind cannot do without; one line naming it when missing."""
    value = spec.settings.get(setting)
    if value is None or value == "":
        raise LayoutbenchError(f"{profile.path}: [targets.{spec.name}] kind {spec.kind} needs {setting!r} ({what})")
    return value
