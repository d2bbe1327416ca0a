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
               symbols: bool = True) -> SymdiffResult:
    """The diff of the ELF files ``old`` and ``new``; ``labels`` name them in it (None: the path);
    without ``symbols`` the helper leaves its list of symbols empty (the counts, origins and the rest
    are whole).  Raises LayoutbenchError with the one line for a file neither path can read."""
    from .. import native

    found = native.diff_json(str(old), str(new), symbols=symbols)
    if found is None:
        from .classify import diff
        from .objects import load_side

        return diff(load_side(old, labels[0]), load_side(new, labels[1]))
    res = SymdiffResult.from_dict(found)
    for side, label in zip((res.old, res.new), labels):
        if label is not None:
            side.label = label
    return res
