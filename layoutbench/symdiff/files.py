"""The diff of two ELF files, as every caller asks for it (the command, a bisection's code evidence,
the report): the native helper's (:mod:`layoutbench.native`) when it answers, else this package's
(each image read with the plan and objects beside it: :func:`.objects.load_side`).  The helper hands
back, before it prints anything, what it does not handle: another ELF flavour (32-bit, big-endian),
a plan.json of another shape, a file that is not ELF or is cut short (the error is this package's
one line)."""

from __future__ import annotations

from pathlib import Path

from .model import SymdiffResult


def diff_files(old: str | Path, new: str | Path, labels: tuple[str | None, str | None] = (None, None),
               symbols: bool = True, own_only: bool = False) -> SymdiffResult:
    """The diff of the ELF files ``old`` and ``new``; ``labels`` name them in it (None: the path);
    without ``symbols`` the helper leaves its list of symbols empty (the counts, origins and the rest
    are whole); ``own_only``: the symbols of the toolchain's archives and crt files left out of both
    (:func:`.archives.own_only`).  Raises LayoutbenchError with the one line for a file neither path
    can read."""
    from .. import native

    found = native.diff_json(str(old), str(new), symbols=symbols, own_only=own_only)
    if found is None:
        from .archives import own_only as leave_the_toolchain_out
        from .classify import diff
        from .objects import load_side

        sides = load_side(old, labels[0]), load_side(new, labels[1])
        return diff(*(leave_the_toolchain_out(*sides) if own_only else sides))
    res = SymdiffResult.from_dict(found)
    for side, label in zip((res.old, res.new), labels):
        if label is not None:
            side.label = label
    return res
