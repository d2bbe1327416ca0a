"""The cache view's counts made here: the profile's cache-model target (cachegrind, or qemu-icache)
run on each image, or the output files given; and the view of two images with them."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import LayoutbenchError
from .counts import read_counts
from .geometry import L1I, Geometry, parse_geometry
from .sides import Side
from .view import view

def target_for(prof, name: str | None):
    """The profile's target with a cache model: the one named, else its cachegrind target, else
    its qemu-icache one."""
    if name:
        return prof.target(name)
    for kind in ("cachegrind", "qemu-icache"):
        for t in prof.targets.values():
            if t.kind == kind:
                return t
    raise LayoutbenchError(f"kernel {prof.name} has no cachegrind or qemu-icache target: give the geometry as "
                           f"--cache SIZE,WAYS,LINE")


def geometry_of(spec: str, prof=None, target: str | None = None) -> Geometry:
    """``L1I``: the I1 of the profile's cache-model target (its ``i1`` setting, else the kind's
    default); otherwise the geometry given."""
    if spec.upper() != L1I:
        return parse_geometry(spec)
    if prof is None:
        raise LayoutbenchError("--cache L1I: the images are not layoutbench builds (no plan.json beside them), so "
                               "no target says the geometry: give it as --cache SIZE,WAYS,LINE")
    from ..targets.cachegrind import CachegrindTarget

    t = target_for(prof, target)
    i1 = t.settings.get("i1", CachegrindTarget.DEFAULTS["i1"])
    return parse_geometry(str(i1), f"{prof.name}'s target {t.name} ({t.kind}) i1")


def run_model(img: Side, prof, target: str | None, workdir: Path, g: Geometry,
              extra: tuple[str, ...] = ()) -> dict[str, dict[str, int]]:
    """Run the profile's cache-model target (cachegrind, or qemu-icache) on the image with the
    program's arguments (kernel command line) ``extra``; its per-function counts (checked against
    the geometry ``g``)."""
    from .. import targets

    spec = target_for(prof, target)
    if spec.kind not in ("cachegrind", "qemu-icache"):
        raise LayoutbenchError(f"target {spec.name} is {spec.kind}: per-function misses come from a cachegrind or "
                               f"qemu-icache target; name one with --target, or give --cachegrind-out OLD NEW")
    t = targets.make(prof, spec.name)
    t.blocks = True  # qemu-icache: the per-block counts, for this run only
    log = workdir / f"{len(list(workdir.iterdir()))}.log"
    res = t.run(Path(img.path), log, list(extra))
    out = log.with_suffix(".cachegrind") if spec.kind == "cachegrind" else t.blocks_file(log)
    if not out.is_file():
        raise LayoutbenchError(f"{spec.kind} on {img.path} wrote no output ({res.status}: {res.message}); see {log}")
    return read_counts(out, img, g)


def cache_view(old: Side, new: Side, spec: str, target: str | None = None, outs: tuple = (),
               names: list[str] | None = None, top: int = 10, extra: tuple[str, ...] = ()) -> dict:
    """Geometry, counts (given output files, else cachegrind runs when the images are builds of a
    profile with a cachegrind target, with the program's arguments ``extra``: the counts a
    ``compare`` or ``history`` of the same images stored only with the same ``--args``; none with
    ``names`` only) and the view.  ``counts_run`` says how the counts were made."""
    from .. import profile as profmod

    prof = None
    for img in (new, old):
        if img.kernel is not None and prof is None:
            try:
                prof = profmod.load(img.kernel)
            except LayoutbenchError:
                prof = None
    g = geometry_of(spec, prof, target)
    counts, source, run = None, None, None
    if outs:
        if len(outs) != 2:
            raise LayoutbenchError("--cachegrind-out: give it twice, the old image's output file then the new one's")
        blocks = [str(f).endswith(".blocks") for f in outs]
        if blocks[0] != blocks[1]:
            raise LayoutbenchError(f"--cachegrind-out: {outs[blocks.index(True)]} is the QEMU cache model's blocks file "
                                   f"and {outs[blocks.index(False)]} cachegrind's output: the counts of two models "
                                   "do not compare; give two files of one kind")
        counts = (read_counts(Path(outs[0]), old, g), read_counts(Path(outs[1]), new, g))
        source = "qemu-icache" if blocks[1] else "cachegrind"
        run = {"files": [str(f) for f in outs]}
    elif not names:
        if prof is None:
            raise LayoutbenchError("--cache: the images are not layoutbench builds, so no cachegrind target runs them: "
                                   "give --cachegrind-out OLD NEW, or name the functions with --functions")
        with tempfile.TemporaryDirectory(prefix="layoutbench-cache-") as d:
            counts = (run_model(old, prof, target, Path(d), g, extra), run_model(new, prof, target, Path(d), g, extra))
        source = target_for(prof, target).kind
        run = {"target": target_for(prof, target).name, "args": " ".join(extra)}
    return {**view(old, new, g, counts, names, top), "counts_from": source, "counts_run": run}
