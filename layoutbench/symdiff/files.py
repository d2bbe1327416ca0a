"""The diff of two ELF files, as every caller asks for it (the command, a bisection's code evidence,
the report): the native helper's (:mod:`layoutbench.native`, ``native/symdiff``), the diff's one
implementation, parsed into :class:`.model.SymdiffResult`.  A file the helper cannot diff as a file
is worded here, in one line, by the package's ELF reader (:func:`unreadable`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import native
from ..errors import LayoutbenchError
from .model import SymdiffResult


def diff_files(old: str | Path, new: str | Path, labels: tuple[str | None, str | None] = (None, None),
               symbols: bool = True, own_only: bool = False) -> SymdiffResult:
    """The diff of the ELF files ``old`` and ``new``; ``labels`` name them in it (None: the path);
    without ``symbols`` the helper leaves its list of symbols empty (the counts, origins and the rest
    are whole); ``own_only``: the symbols of the toolchain's archives and crt files left out of both.
    Raises LayoutbenchError with one line for a file that cannot be diffed or a helper that failed."""
    try:
        found = native.diff_json(str(old), str(new), symbols=symbols, own_only=own_only)
    except native.Unreadable as e:
        raise unreadable(old, new, str(e)) from None
    except native.Failed as e:
        raise LayoutbenchError(str(e)) from None
    res = SymdiffResult.from_dict(found)
    for side, label in zip((res.old, res.new), labels):
        if label is not None:
            side.label = label
    return res


#: e_machine values a user is likely to meet, by name
MACHINES = {3: "i386", 8: "MIPS", 20: "PowerPC", 21: "PowerPC 64", 22: "s390", 40: "ARM", 62: "x86-64", 183: "AArch64",
            243: "RISC-V", 258: "LoongArch"}


def kind_of(data: bytes) -> tuple[int, int, int, str]:
    """(class, byte order, machine, kind) of an ELF header: what must be equal for two images to be
    diffed (kind: "object" for a relocatable .o, "core", else "linked": an executable or a shared
    object; the helper tells them apart by the same rule)."""
    order = "little" if data[5] == 1 else "big"
    e_type, machine = int.from_bytes(data[16:18], order), int.from_bytes(data[18:20], order)
    return data[4], data[5], machine, {1: "object", 4: "core"}.get(e_type, "linked")


def describe_kind(k: tuple[int, int, int, str]) -> str:
    cls, order, machine, kind = k
    name = MACHINES.get(machine, f"machine {machine}")
    return (f"{name} {'ELF32' if cls == 1 else 'ELF64'} {'little' if order == 1 else 'big'}-endian "
            + {"object": "relocatable object (.o)", "core": "core dump", "linked": "linked image"}[kind])


def unreadable(old: str | Path, new: str | Path, why: str) -> LayoutbenchError:
    """The one line for two files the helper could not diff as files (``why``: its words): each read
    by the package's ELF reader (:func:`layoutbench.elfinfo.read_elf`, whose errors name the file and
    what is wrong), then their kinds compared; when both read well, the helper's words."""
    from .. import elfinfo

    try:
        elves = [elfinfo.read_elf(Path(p)) for p in (old, new)]
        for e in elves:
            if e.symtab() is None:
                return LayoutbenchError(f"{e.path}: has no symbol table (.symtab); it is stripped -- give the "
                                        f"unstripped image (e.g. vmlinux, not bzImage)")
    except LayoutbenchError as e:
        return e
    a, b = (kind_of(e.data) for e in elves)
    if a != b:
        return LayoutbenchError(f"{new} is a {describe_kind(b)} and {old} a {describe_kind(a)}: symdiff compares "
                                f"two images of one machine and kind (two builds of one program); give two of one kind")
    return LayoutbenchError(f"the symdiff helper cannot diff {old} and {new} ({why}); please report it with both files")


def text_fast_path(args: list[str]) -> None:
    """``symdiff OLD NEW [--symbols]`` of two files, before the command line is imported: print the text
    of the helper's diff and exit as the command does (0: placement identical, 1: it differs; 2: the
    text could not be written); return when the helper gives no diff (the command line then says its error,
    without running the helper again)."""
    pair = native.text_pair(args)
    if pair is None:
        return
    symbols = "--symbols" in args
    try:
        found = native.diff_json(*pair, symbols=symbols)
    except KeyboardInterrupt:  # Ctrl-C while the helper diffs: one line, as the command says it
        sys.stderr.write("layoutbench: interrupted\n")
        sys.exit(130)
    except (native.Unreadable, native.Failed) as e:  # the command says it, in its words
        native.decline(e)
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
