"""The one measuring path: build a commit once, link its variants, run on a target what the
store does not hold yet, and return the stored runs and samples.

``compare`` (one or several targets), ``history`` (each point) and ``bisect`` (each probe)
describe what they want as a :class:`MeasureRequest` and call :func:`measure_commit`
with an open target (``with target: ...``).  Runs are keyed by build, target, host,
mode, repetition, arguments and the **target configuration** (:func:`target_config`):
a changed cache geometry, command or toolchain measures again instead of reusing.

Modes (as in Bluhm's framework):

- ``rerun``: the same image run again for every repetition (a new process, or a new boot
  where the target cannot run a benchmark twice in one boot);
- ``reboot``: the same image, a fresh boot for every repetition;
- ``relink``: a new layout for every repetition: each seeded layout (random, padded) gets a
  fresh seed per repetition and is run once; other layouts are run again as in rerun.

Local processes and QEMU boots start fresh every time, so rerun and reboot run the same
way on those targets; the mode is recorded with every run and the two are kept apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
import re
import time
from pathlib import Path
from dataclasses import dataclass, field, replace

from . import build as buildmod
from . import layout, perfstat, procs, targets
from .errors import LayoutbenchError
from .paths import workdir
from .profile import Profile
from .source import Checkout
from .store import RunKey, Store

MODES = ("rerun", "reboot", "relink")
SAME_IMAGE_MODES = MODES[:2]  #: the modes that run each variant's own image again (bisect compares those)


@dataclass
class Job:
    """One planned execution: a (layout, seed) variant, a repetition."""

    layout: str
    seed: int
    rep: int


def plan_jobs(specs: list[tuple[str, int]], runs: int, mode: str) -> list[Job]:
    jobs: list[Job] = []
    if mode == "relink":
        # seeded layouts: a fresh seed per repetition, one run each; seeds follow on from the spec's
        per_name: dict[str, list[int]] = {}
        for name, seed in specs:
            per_name.setdefault(name, []).append(seed)
        for name, seed in specs:
            if layout.get(name).seeded:
                seeds = per_name[name]
                k = seeds.index(seed)
                for r in range(runs):
                    jobs.append(Job(name, seeds[0] + k * runs + r, 0))
            else:
                jobs.extend(Job(name, seed, r) for r in range(runs))
        return jobs
    # interleave repetitions (rep 0 of every variant, then rep 1...) so drift hits all alike
    for r in range(runs):
        jobs.extend(Job(name, seed, r) for name, seed in specs)
    return jobs


@dataclass(frozen=True)
class MeasureRequest:
    """What to measure at one commit: which variants, where, how often."""

    profile: Profile
    checkout: Checkout
    specs: tuple[tuple[str, int], ...]  #: (layout, seed) variants
    runs: int = 1  #: repetitions per variant
    mode: str = "rerun"
    target: str | None = None  #: the profile's target name (None: its default)
    args: tuple[str, ...] = ()  #: extra program arguments / kernel command line words
    timeout: float | None = None  #: seconds per run (None: the target's)
    retry_failed: bool = False  #: run again the repetitions stored as failed
    jobs: int | None = None  #: parallel compile jobs
    overrides: tuple[tuple[str, object], ...] = ()  #: target settings from the command line (perf, pin)
    check_machine: bool = True  #: check that the machine is quiet before running (local, ssh)
    #: the metrics the caller needs (``--metric``): the first ok run that prints one of them not
    #: stops the command with one line, its run stored (a target that cannot print them is refused
    #: earlier, by ``targets.check_metric``)
    metrics: tuple[str, ...] = ()
    metrics_from: str = "--metric"  #: where ``metrics`` came from, as the error names it
    #: ``spare(n)``: whether a core is free now for another run beside the ``n`` of this measurement running,
    #: on a target whose counts a run beside it cannot change (:func:`side_by_side`); None: one run at a time
    spare: object = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "specs", tuple(tuple(s) for s in self.specs))
        object.__setattr__(self, "args", tuple(self.args or ()))

    @property
    def arg_text(self) -> str:
        return " ".join(self.args)

    def at(self, checkout: Checkout) -> "MeasureRequest":
        """The same request at another commit."""
        return replace(self, checkout=checkout)

    def make_target(self) -> targets.Target:
        """The target, not opened yet: use it as ``with request.make_target() as t: ...``."""
        return targets.make(self.profile, self.target, self.timeout, dict(self.overrides))

    def jobs_planned(self) -> list[Job]:
        return plan_jobs(list(self.specs), self.runs, self.mode)


def arg_files(args) -> dict[str, str]:
    """Absolute path -> sha256 of each regular file a target's ``args`` (or ``command``) name by an absolute path
    (a benchmark script, an input file), so that runs of an edited one are never taken for the
    stored runs of the old one."""
    out = {}
    for a in args if isinstance(args, list) else []:
        p = Path(str(a))
        if p.is_absolute() and p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def target_config(target: targets.Target, objs: buildmod.ObjectSet | None = None) -> dict:
    """Everything that shapes a sample besides the image itself: the resolved target table
    (its kind and settings with the kind's defaults filled in, not its timeout) and the
    metrics prefix; with ``objs``, also the toolchain and the quirks applied to the build."""
    settings = {k: v for k, v in target.spec.settings.items()  # the costs plan a bisection, not a sample
                if k not in ("timeout", "timeout_override", "layout_cost", "run_cost")}
    if target.perf_events:
        settings["perf"] = list(target.perf_events)  # the events counted, not "true"
    config = {"kind": target.kind, "image": target.spec.image,
              "settings": {**getattr(target, "DEFAULTS", {}), **settings},
              "metric_prefix": target.profile.metric_prefix}
    inputs = {**arg_files(settings.get("command")), **arg_files(settings.get("args"))}
    if inputs:  # a benchmark script or input file the arguments name: edited, it is another configuration
        config["inputs"] = inputs
    if objs is not None:
        config.update(toolchain={"cc": objs.info.get("cc"), "ld": objs.info.get("ld")},
                      quirks=list(objs.info.get("quirks", [])))
    return config


@dataclass
class Measurement:
    """What :func:`measure_commit` did and what the store holds for the request."""

    request: MeasureRequest
    objs: buildmod.ObjectSet
    jobs: list[Job]
    key: RunKey  #: target, host, mode, args and configuration hash of every run below
    build_ids: dict  #: (layout, seed) → build id in the store
    ran: int = 0
    linked: int = 0  #: images linked now (the others were linked before, or are a neighbour's objects')
    skipped: int = 0
    #: runs not made again: the same image file's run under the same key, on a target whose counts are exact
    copied: int = 0
    failed: int = 0
    accelerators: set[str] = field(default_factory=set)
    runs: list[dict] = field(default_factory=list)  #: every stored run of these builds under ``key``
    samples: list[dict] = field(default_factory=list)  #: their samples
    other_configs: dict[str, int] = field(default_factory=dict)  #: config hash → runs not used
    findings: list[dict] = field(default_factory=list)  #: the quiet-machine check before these runs
    unsupported_events: set[str] = field(default_factory=set)  #: perf events the machine could not count

    def groups(self, metric: str, max_rep: int | None = None) -> dict[str, list[float]]:
        """Variant label (``random:3``) → the values of ``metric`` (ok runs, repetitions < ``max_rep``), the
        variants in the request's order and each one's values by repetition, whatever order the runs
        ended in (two side by side end in either order; the same seeds are paired by position)."""
        order = {tuple(s): i for i, s in enumerate(self.request.specs)}
        mine = [s for s in self.samples if s["metric"] == metric and (max_rep is None or s["rep"] < max_rep)]
        out: dict[str, list[float]] = {}
        for s in sorted(mine, key=lambda s: (order.get((s["layout"], s["seed"]), len(order)), s["rep"],
                                             s.get("sample_id", 0))):
            out.setdefault(layout.label(s["layout"], s["seed"]), []).append(s["value"])
        return out


def progress(progress_factory, total: int, what: str):
    """A progress bar from ``progress_factory(total, what)`` yielding a ticker, or, without one,
    a context yielding None: ``with progress(f, n, what) as tick: measure_commit(..., progress=tick)``."""
    return progress_factory(total, what) if progress_factory else contextlib.nullcontext(None)


def link_all(objs: buildmod.ObjectSet, image: str, store: Store, jobs: list[Job]
             ) -> dict[tuple[str, int], tuple[buildmod.Variant, int]]:
    """Link every variant the jobs need and register it in the store: (layout, seed) → (variant, build id)."""
    variants: dict[tuple[str, int], tuple[buildmod.Variant, int]] = {}
    for job in jobs:
        key = (job.layout, job.seed)
        if key not in variants:
            v = buildmod.link_variant(objs, image, job.layout, job.seed)
            variants[key] = (v, store.build_id(v, objs.info))
    return variants


def deterministic(kind: str, metric: str, groups: dict[str, dict[str, list[float]]]) -> str | None:
    """Why ``metric``'s values are exact on this target, or None: declared by the target kind
    (cachegrind's counts; the qemu-icache model's counts), or shown by the runs (some layout ran
    twice or more, and every layout's repeated runs are identical)."""
    from .targets.qemu_icache import METRICS as ICACHE

    if kind == "cachegrind" or (kind == "qemu-icache" and metric in ICACHE):
        return f"the {kind} target is deterministic"
    runs = [v for g in groups.values() for v in g.values()]
    if any(len(v) >= 2 for v in runs) and all(len(set(v)) == 1 for v in runs):
        return "every layout's repeated runs are identical"
    return None


def exact_why(made: list[targets.Target], metric: str | None = None) -> str:
    """Why ``metric`` (None: every metric each target prints) is a count that a second run of the
    same image repeats on every one of the targets ``made`` (cachegrind's, the cache model's:
    :func:`deterministic`), or '' when it is not, or not known to be."""
    whys = []
    for t in made:
        names = [metric] if metric is not None else (t.prints() or [])
        whys += [deterministic(t.kind, x, {}) for x in names] or [None]
    return whys[0] if whys and all(whys) else ""


def exact_counts(target: targets.Target) -> bool:
    """Whether every metric the target prints is exact (:func:`exact_why`): a run is never made twice."""
    return bool(exact_why([target]))


def links_ahead(target: targets.Target) -> bool:
    """Whether measure_commit links the next image beside a run (:class:`LinkAhead`): on a target
    whose metrics are counts it makes itself, which a link beside the run cannot change."""
    return target.prints() is not None


def links_beside_runs(target: targets.Target) -> bool:
    """Whether a link costs no wall time of its own beside the runs: measure links the next image
    ahead (:func:`links_ahead`) and the machine has a core for the link and one for the run."""
    return links_ahead(target) and (os.cpu_count() or 1) >= 2


class LinkAhead:
    """The variants the jobs need, linked in their order one at a time by a thread of its own while
    the runs of the ones linked before go on (``[key]`` waits for that variant and registers it in
    the store, in the caller's thread).  Only for a target whose metrics are counts it makes itself
    (a cache model): a link beside a run changes nothing those measure, and on two cores the next
    image links while the current one boots.  ``close()`` cancels the links not started."""

    def __init__(self, objs: buildmod.ObjectSet, image: str, store: Store, jobs: list[Job]):
        self.keys = list(dict.fromkeys((j.layout, j.seed) for j in jobs))
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="layoutbench-link")
        self.futures = {k: self.pool.submit(buildmod.link_variant, objs, image, *k) for k in self.keys}
        self.store, self.info, self.got = store, objs.info, {}

    def __getitem__(self, key: tuple[str, int]) -> tuple[buildmod.Variant, int]:
        if key not in self.got:
            v = self.futures[key].result()
            self.got[key] = (v, self.store.build_id(v, self.info))
        return self.got[key]

    def build_ids(self) -> dict:
        return {k: self[k][1] for k in self.keys}

    def idle(self) -> bool:
        """No link running or queued: every image the jobs need is linked."""
        return all(f.done() for f in self.futures.values())

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def _check_printed(request: MeasureRequest, target: targets.Target, result) -> None:
    """After the first ok run: every metric the request needs is among the ones it printed."""
    printed = {x.metric for x in result.samples}
    missing = next((x for x in request.metrics if x != "all" and x not in printed), None)
    if missing is not None:
        raise LayoutbenchError(targets.no_metric(request.profile, target, missing, printed, request.metrics_from,
                                                 first_run=True))


def measure_commit(request: MeasureRequest, store: Store, target: targets.Target, *,
                   objs: buildmod.ObjectSet | None = None, linked: dict | None = None, progress=None,
                   say=lambda msg: None) -> Measurement:
    """Compile (cached), link the variants, run on the open ``target`` every job the store
    does not hold yet under this configuration, and return what is stored.

    ``objs`` gives objects compiled beforehand; ``linked`` (from ``link_all``) variants linked
    beforehand, as several targets measured in parallel share them.  ``progress()`` is
    called once per job.
    """
    objs = objs or buildmod.compile_objects(request.profile, request.checkout, request.jobs, say)
    jobs = request.jobs_planned()
    key = RunKey(target.spec.name, target.host, request.mode, request.arg_text,
                 store.config_id(target_config(target, objs)))
    if linked is None and links_ahead(target):  # counts of a model: link the next beside a run
        ahead = LinkAhead(objs, target.spec.image, store, jobs)
        try:
            m = Measurement(request, objs, jobs, key, {})
            checked = _run_jobs(m, request, store, target, ahead, progress, say)
            m.build_ids = ahead.build_ids()
            m.linked = sum(ahead.futures[k].result().linked_now for k in ahead.keys)
        finally:
            ahead.close()
    else:
        variants = linked if linked is not None else link_all(objs, target.spec.image, store, jobs)
        m = Measurement(request, objs, jobs, key, {k: b for k, (_, b) in variants.items()},
                        linked=sum(v.linked_now for v, _ in variants.values()))
        checked = _run_jobs(m, request, store, target, variants, progress, say)
    return _stored(m, store, target, say, checked)


def side_by_side(target: targets.Target) -> int:
    """How many runs of ``target`` may run at once on this machine: two on a target whose metrics are
    counts it makes itself (:func:`links_ahead`: a cache model's, which a run beside it cannot change) on
    a machine with two cores or more, else one."""
    return 2 if links_ahead(target) and (os.cpu_count() or 1) >= 2 else 1


def spare_core(running: int) -> bool:
    """Whether the machine has a core free for another run beside the ``running`` ones of this command: a
    core left over, and no other work runnable (procs.others_running: a test suite's other worker, another
    command, a compile), so that two runs beside other work never push a boot past its timeout."""
    return procs.others_running(running) <= (os.cpu_count() or 1) - 1 - running


def _lock(objs: buildmod.ObjectSet, target: targets.Target, key: RunKey, slot: int, say) -> procs.RunLock:
    """The run lock of ``slot`` (0: the one every run of the target takes; 1: the second of two side by side)."""
    host = re.sub(r"[^A-Za-z0-9_.@-]+", "_", key.host)[:80]
    tail = f".{slot}" if slot else ""
    return procs.RunLock(workdir() / "locks" / f"{objs.profile.name}.{target.spec.name}.{host}{tail}.lock",
                         f"target {target.spec.name} of {objs.profile.name} on {key.host}"
                         + (f" (the run beside the first, slot {slot})" if slot else ""), say)


def _one_run(lock: procs.RunLock, target: targets.Target, image: Path, log: Path, args: list[str]):
    """One run under its lock (taken in the thread that runs it: its processes carry the lock's mark);
    returns (result, start time)."""
    # one benchmark of this target on this host at a time a slot (a farm's places run side by side); what
    # a killed run left running is stopped first, and a run beside another one is refused, never stored
    with lock:
        started = time.time()
        result = target.run(image, log, args)
        lock.check_alone("ran beside this run")
    return result, started


def _check_machine(m: Measurement, store: Store, target: targets.Target, say) -> None:
    """Whether the machine is quiet, stored with the runs' key; a condition that adds noise said once a store."""
    key = m.key
    m.findings = [f.to_dict() for f in target.machine_check()]
    store.add_machine_check(key, m.findings)
    bad = [f["check"] for f in m.findings if f["problem"]]
    if bad and (key.host, tuple(bad)) not in store.said_machine:  # said once a store, kept every time
        store.said_machine.add((key.host, tuple(bad)))
        say(f"machine {key.host}: {len(bad)} condition(s) that add noise: {', '.join(bad)} "
            f"(each with its fix in the report)")


def _run_jobs(m: Measurement, request: MeasureRequest, store: Store, target: targets.Target, variants,
              progress, say) -> bool:
    """Run every job of ``m`` that the store does not hold yet; ``variants[(layout, seed)]``: (variant, build id).
    Two at once where :func:`side_by_side` allows it and the request's ``spare()`` says a core is free
    (and no link of the jobs' images runs); the store is written in this thread only, each run as it
    ends.  True: the machine was checked before the first of them."""
    key, objs = m.key, m.objs
    tick = progress or (lambda: None)
    checked = printed_checked = False
    exact = exact_counts(target)
    spare = request.spare
    slots = side_by_side(target) if spare is not None else 1
    pool = ThreadPoolExecutor(slots, thread_name_prefix="layoutbench-run") if slots > 1 else None
    running: dict = {}  # future -> (job, variant, build id, log, slot)

    def finish(fut) -> None:
        nonlocal printed_checked
        job, v, build_id, log, slot = running.pop(fut)
        result, started = fut.result()
        store.add_run(build_id, key, job.rep, result, log, started)
        m.ran += 1
        m.accelerators.add(result.accelerator)
        if result.status != "ok":
            m.failed += 1
            say(f"{v.label} run {job.rep}: {result.status}: {result.message} (log: {log})")
        elif not printed_checked:
            printed_checked = True
            _check_printed(request, target, result)
        tick()

    def wait(room: int) -> None:
        """Store the runs that end until fewer than ``room`` are running."""
        while len(running) >= room:
            done, _ = wait_futures(running, return_when=FIRST_COMPLETED)
            for fut in done:
                finish(fut)

    try:
        for job in m.jobs:
            v, build_id = variants[(job.layout, job.seed)]
            status = store.done(build_id, key).get(job.rep)
            if status is not None and not (request.retry_failed and status != "ok"):
                m.skipped += 1
                tick()
                continue
            if exact and store.copy_twin_run(build_id, str(v.elf), key, job.rep, "not run again: run {run} ran this "
                                             "image file on this target, whose counts a second run repeats") is not None:
                m.copied += 1
                tick()
                continue
            if not checked and request.check_machine and target.counts:
                checked = True  # once, before the first run that happens: the findings precede these runs
                _check_machine(m, store, target, say)
            log = workdir() / "logs" / objs.profile.name / objs.checkout.key / \
                f"{target.spec.image}-{v.label.replace(':', '-')}-{target.spec.name}-{request.mode}-{job.rep}-{key.config}" \
                f".{os.getpid()}.log"  # two workers sharing a work directory never write one log
            if pool is None:
                result, started = _one_run(_lock(objs, target, key, 0, say), target, v.elf, log, list(request.args))
                fut = Future()
                fut.set_result((result, started))
                running[fut] = (job, v, build_id, log, 0)
                finish(fut)
                continue
            # a second run starts beside the first only while a core is spare (no compile, no link running)
            wait(slots if running and spare(len(running)) and getattr(variants, "idle", lambda: True)() else 1)
            slot = min(set(range(slots)) - {r[4] for r in running.values()})
            fut = pool.submit(_one_run, _lock(objs, target, key, slot, say), target, v.elf, log, list(request.args))
            running[fut] = (job, v, build_id, log, slot)
        wait(1)
    except BaseException:
        if running:  # an interrupt, or an error that ends the command: the runs going on are stopped at
            procs.kill_all()  # once, not stored (the same command again runs them), never waited for
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return checked


def _stored(m: Measurement, store: Store, target: targets.Target, say, checked: bool) -> Measurement:
    """``m`` with every stored run and sample of its builds under its key (and what else it can tell)."""
    key = m.key
    ids = sorted(set(m.build_ids.values()))
    where = dict(build_id=ids, target=key.target, host=key.host, mode=key.mode, args=key.args, config=key.config)
    m.runs = store.runs(**where)
    m.samples = store.samples(**where)
    m.other_configs = store.other_configs(ids, key)
    if target.perf_events:  # asked but never stored as a metric: this machine cannot count it
        counted = {s["metric"][len(perfstat.PREFIX):] for s in m.samples if s["metric"].startswith(perfstat.PREFIX)}
        m.unsupported_events = set(target.perf_events) - counted
    if not checked and target.counts:
        m.findings = store.last_machine_check(key)  # nothing ran now: the check stored with those runs
    if m.other_configs:
        n = sum(m.other_configs.values())
        say(f"{n} stored run(s) of these variants on {key.target} were made under another target configuration "
            f"({', '.join(m.other_configs)}; now {key.config}) and are not used; `layoutbench results --configs` "
            f"shows them")
    return m
