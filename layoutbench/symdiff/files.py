"""The diff of two ELF files, as every caller asks for it (the command, a bisection's code evidence,
the report): the native helper's (:mod:`layoutbench.native`) when it answers, else this package's
(each image read with the plan and objects beside it: :func:`.objects.load_side`).  The helper hands
back, before it prints anything, what it does not handle: a plan.json of another shape, a file that
is not ELF or is cut short (the error is this package's one line).  It reads ELF files of either
class (32- or 64-bit) and either byte order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import native
from .model import SymdiffResult


def diff_files(old: str | Path, new: str | Path, labels: tuple[str | None, str | None] = (None, None),
               symbols: bool = True, own_only: bool = False) -> SymdiffResult:
    """The diff of the ELF files ``old`` and ``new``; ``labels`` name them in it (None: the path);
    without ``symbols`` the helper leaves its list of symbols empty (the counts, origins and the rest
    are whole); ``own_only``: the symbols of the toolchain's archives and crt files left out of both
    (:func:`.archives.own_only`).  Raises LayoutbenchError with the one line for a file neither path
    can read."""
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


def text_fast_path(args: list[str]) -> None:
    """``symdiff OLD NEW [--symbols]`` of two files, before the command line is imported: print the text
    of the helper's diff and exit as the command does (0: placement identical, 1: it differs; 2: the
    text could not be written); return when the helper gives no diff (the command line then answers
    on the Python path, without running the helper again)."""
    pair = native.text_pair(args)
    if pair is None:
        return
    symbols = "--symbols" in args
    try:
        found = native.diff_json(*pair, symbols=symbols)
    except KeyboardInterrupt:  # Ctrl-C while the helper diffs: one line, as the command says it
        sys.stderr.write("layoutbench: interrupted\n")
        sys.exit(130)
    if found is None:
        native.decline()
        return
    from .render import text

    r = SymdiffResult.from_dict(found)
    code = 0 if r.placement_identical else 1
    try:
        sys.stdout.write(text(r, symbols))
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that stopped reading (| head) is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as e:
        hint = "; free some space and run the same command again" if e.errno == 28 else ""
        sys.stderr.write(f"layoutbench: error: cannot write the diff ({e.strerror or e}){hint}\n")
        code = 2
    sys.exit(code)
