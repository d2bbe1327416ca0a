"""Run variants on a target, repetition by repetition, into the store (resumable).

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

import time
from dataclasses import dataclass
from . import build as buildmod
from . import layout, targets
from .paths import workdir
from .store import Store

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


@dataclass
class Outcome:
    ran: int
    skipped: int
    failed: int
    accelerators: set[str]
    build_ids: dict  #: (layout, seed) → build id in the store


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


def measure(objs: buildmod.ObjectSet, target: targets.Target, store: Store, jobs: list[Job], mode: str,
            extra: list[str] | None = None, retry_failed: bool = False, progress=None,
            say=lambda msg: None, linked: dict | None = None) -> Outcome:
    """Link (cached) and run every job that the store does not hold yet (``retry_failed``: and
    those stored as failed).

    ``linked`` (from ``link_all``) gives variants linked beforehand, as several targets
    measured in parallel share them.
    """
    extra = list(extra or [])
    args = " ".join(extra)
    image = target.spec.image
    out = Outcome(0, 0, 0, set(), {})
    variants = linked if linked is not None else link_all(objs, image, store, jobs)
    out.build_ids.update({k: b for k, (_, b) in variants.items()})
    for job in jobs:
        v, build_id = variants[(job.layout, job.seed)]
        status = store.done(build_id, target.spec.name, target.host, mode, args).get(job.rep)
        if status is not None and not (retry_failed and status != "ok"):
            out.skipped += 1
            if progress:
                progress()
            continue
        log = workdir() / "logs" / objs.profile.name / objs.checkout.key / \
            f"{image}-{v.label.replace(':', '-')}-{target.spec.name}-{mode}-{job.rep}.log"
        started = time.time()
        result = target.run(v.elf, log, extra)
        store.add_run(build_id, target.spec.name, mode, job.rep, result, log, started, args)
        out.ran += 1
        out.accelerators.add(result.accelerator)
        if result.status != "ok":
            out.failed += 1
            say(f"{v.label} run {job.rep}: {result.status}: {result.message} (log: {log})")
        if progress:
            progress()
    return out

