"""Build specs on the command line: ``KERNEL@REV:LAYOUT[:SEED]`` parsed, resolved and built.

Used by the CLI (``layoutbench symdiff`` takes an ELF path or a build spec on each side): a spec
becomes the image it names; the diff itself (:mod:`layoutbench.symdiff`) only reads images.
"""

from __future__ import annotations

import re

from .errors import LayoutbenchError

SPEC = re.compile(r"^(?P<kernel>[^@]+)@(?P<rest>.+)$")


def parse_spec(spec: str) -> tuple[str, str, str, int]:
    """``KERNEL@REV:LAYOUT[:SEED]`` → (kernel, rev, layout, seed)."""
    m = SPEC.match(spec)
    if not m:
        raise LayoutbenchError(f"{spec}: no such file, and not a build spec KERNEL@REV:LAYOUT[:SEED]")
    parts = m["rest"].split(":")
    seed = 1
    if len(parts) >= 3 and parts[-1].isdigit():
        seed = int(parts.pop())
    if len(parts) < 2 or not parts[0] or not parts[-1]:
        raise LayoutbenchError(f"bad build spec {spec!r}: write KERNEL@REV:LAYOUT[:SEED], "
                               f"e.g. minikernel@HEAD:random:3 (REV 'worktree' for the working tree)")
    return m["kernel"], ":".join(parts[:-1]), parts[-1], seed


def symdiff_image(side: str, image: str | None = None, repo: str | None = None,
                  say=lambda msg: None) -> tuple[str, str | None]:
    """One side of ``layoutbench symdiff``: (the ELF file, the label the diff shows for it).  An ELF
    path is itself (label None: the path); a build spec is looked up or built in the work dir, its
    plan and objects beside it, where the diff finds them (:func:`layoutbench.symdiff.diff_files`)."""
    from pathlib import Path

    if Path(side).exists() or "@" not in side:
        return side, None
    from . import build, profile, source

    kernel, rev, layout_name, seed = parse_spec(side)
    prof = profile.load(kernel)
    co = source.resolve(prof, None if rev == source.WORKTREE else rev, repo)
    image = image or next(iter(prof.images))
    prof.image(image)
    _, (v,) = build.build_variants(prof, co, [(layout_name, seed)], [image], say=say)
    return str(v.elf), f"{prof.name}@{co.short}:{v.label} ({image})"
