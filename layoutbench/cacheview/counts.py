"""A cachegrind output file read per function, used only when it is known to be the counts of
this image under this cache.

A file is read (never waited for: a FIFO or a device is refused) and checked, each failure one
line naming the file:

- whole: its functions add up to its own ``summary:`` line (a file cut short, or edited, does not);
- this cache: its ``desc: I1 cache:`` line is the geometry asked (counts of a 4 KiB I1 are not
  shown under a 32 KiB one);
- this image: the program its ``cmd:`` line ran is the image, or a file with the same identity (its
  GNU build id, else a hash of its code sections), and the image did not change after the file
  was written (a build in place would leave counts of the earlier one); a program that cannot be
  found cannot be checked, and is refused too (positive evidence only).
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import shlex
from pathlib import Path

from ..errors import LayoutbenchError
from ..safety import read_regular
from .geometry import Geometry
from .sides import Side

SHF_EXECINSTR = 4
#: cachegrind's line: "desc: I1 cache: 4096 B, 64 B, 2-way associative" (or direct-mapped, fully associative)
_I1 = re.compile(r"^desc:\s*I1 cache:\s*(\d+) B,\s*(\d+) B,\s*(?:(\d+)-way|(direct-mapped)|(fully associative))", re.M)


def read_text(path: Path, what: str) -> str:
    """The text of a regular file (a FIFO is not waited for, a device not read): one line otherwise."""
    return read_regular(path, what).decode("utf-8", "replace")


def identity(path: Path) -> str:
    """What names an image's code: its GNU build id, else a hash of its executable sections."""
    from ..elfinfo import read_elf

    elf = read_elf(path)
    for i, name in enumerate(elf.names):
        if name == ".note.gnu.build-id":
            return "build-id:" + elf.section(i)[16:].hex()
    h = hashlib.sha256()
    for i in range(len(elf.names)):
        if int(elf.sh["flags"][i]) & SHF_EXECINSTR:
            h.update(elf.names[i].encode() + b"\0" + elf.section(i))
    return "text:" + h.hexdigest()


def read_functions(path: Path, image: Path | None = None, geometry=None) -> dict[str, dict[str, int]]:
    """A cachegrind output file summed per function: name → {event: count} (``Ir``, ``I1mr``...),
    checked against ``image`` and ``geometry`` (a cache.Geometry) when given (see the module)."""
    text = read_text(path, "a cachegrind output file")
    events: list[str] = []
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    summary: list[int] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        try:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("fn="):
                cur = out.setdefault(line[3:], {e: 0 for e in events})
            elif line.startswith("summary:"):
                summary = [int(v) for v in line.split()[1:]]
            elif line[:1].isdigit() and cur is not None:
                for e, v in zip(events, line.split()[1:]):
                    cur[e] += int(v)
        except ValueError:
            raise LayoutbenchError(f"{path}:{n}: not a line of a cachegrind output file: {line[:60]!r}") from None
    if not events or "Ir" not in events:
        raise LayoutbenchError(f"{path}: not a cachegrind output file (no 'events:' line with Ir)")
    if "I1mr" not in events:
        raise LayoutbenchError(f"{path}: cachegrind ran without --cache-sim=yes (no I1mr): run it with the cache "
                               f"simulation")
    totals = {e: sum(c.get(e, 0) for c in out.values()) for e in events}
    if summary is None:
        raise LayoutbenchError(f"{path}: truncated cachegrind output (no 'summary:' line: cachegrind did not finish "
                               f"writing it); run cachegrind again")
    said = dict(zip(events, summary))
    if any(totals[e] != said.get(e) for e in ("Ir", "I1mr")):
        raise LayoutbenchError(f"{path}: truncated or edited cachegrind output: its functions add up to Ir "
                               f"{totals['Ir']:,}, I1mr {totals['I1mr']:,}, its summary says Ir {said.get('Ir', 0):,}, "
                               f"I1mr {said.get('I1mr', 0):,}; run cachegrind again")
    if geometry is not None:
        _check_cache(path, text, geometry)
    if image is not None:
        _check_image(path, text, Path(image))
    return out


def _check_cache(path: Path, text: str, g) -> None:
    m = _I1.search(text)
    if m is None:
        raise LayoutbenchError(f"{path}: records no I1 geometry (no 'desc: I1 cache:' line), so its misses cannot be "
                               f"shown under --cache {g.size},{g.ways},{g.line}; run cachegrind again")
    size, line = int(m[1]), int(m[2])
    ways = int(m[3]) if m[3] else 1 if m[4] else size // line
    if (size, ways, line) != (g.size, g.ways, g.line):
        raise LayoutbenchError(f"{path}: recorded with a {size}-byte {ways}-way I1 of {line}-byte lines, not the "
                               f"{g.size},{g.ways},{g.line} asked; give --cache {size},{ways},{line}, or run "
                               f"cachegrind with --I1={g.size},{g.ways},{g.line}")


def _check_image(path: Path, text: str, image: Path) -> None:
    cmd = next((ln[4:].strip() for ln in text.splitlines() if ln.startswith("cmd:")), "")
    try:
        prog = shlex.split(cmd)[0] if cmd else ""
    except ValueError:
        prog = cmd.split()[0] if cmd.split() else ""
    if not prog:
        raise LayoutbenchError(f"{path}: names no program (no 'cmd:' line), so it cannot be checked against "
                               f"{image}; run cachegrind on {image}")
    found = next((p for p in (Path(prog), path.parent / prog, Path.cwd() / prog) if p.is_file()), None)
    if found is None:
        raise LayoutbenchError(f"{path}: was recorded for {prog}, which is not found, so it cannot be checked against "
                               f"{image}; give the counts of a run of {image}")
    if not os.path.samefile(found, image):
        try:
            same = identity(found) == identity(image)
        except LayoutbenchError:
            same = False
        if not same:
            raise LayoutbenchError(f"{path}: counts of another program ({found}: its code differs from {image}'s); "
                                   f"give the counts of a run of {image}, in the order OLD then NEW")
    if os.stat(image).st_mtime > os.stat(path).st_mtime + 1:  # rebuilt in place since: the counts are of the old one
        raise LayoutbenchError(f"{path}: recorded before {image} last changed, so its counts may be of an earlier "
                               f"build; run cachegrind on {image} again (`touch {path}` if the image was only copied)")


def read_blocks(path: Path, img: Side) -> dict[str, dict[str, int]]:
    """The QEMU cache model's measured blocks (``<result>.blocks``: address, instructions,
    executions, misses per line) summed per function of ``img``, the one whose bytes hold the
    block's first instruction: name → {``Ir``: instructions × executions, ``I1mr``: misses}.
    A block outside every function is counted under ``(no function)``."""
    text = read_text(Path(path), "the cache model's blocks file")
    funcs = sorted((s for ss in img.functions.values() for s in ss), key=lambda s: s.addr)
    starts = [s.addr for s in funcs]
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        w = line.split()
        try:
            addr, insns, execs, misses = int(w[0], 16), int(w[1]), int(w[2]), int(w[3])
        except (IndexError, ValueError):
            raise LayoutbenchError(f"{path}:{n}: not a line of the cache model's blocks file "
                                   f"(VADDR INSNS EXECUTIONS MISSES)") from None
        i = bisect.bisect_right(starts, addr) - 1
        name = funcs[i].name if i >= 0 and addr < funcs[i].addr + funcs[i].size else "(no function)"
        c = out.setdefault(name, {"Ir": 0, "I1mr": 0})
        c["Ir"] += insns * execs
        c["I1mr"] += misses
    return out


def read_counts(path: Path, img: Side, g: Geometry) -> dict[str, dict[str, int]]:
    """Per-function counts from a cachegrind output file (checked against ``img`` and ``g``:
    counts.read_functions), or from the QEMU cache model's ``.blocks`` file mapped to the
    functions of ``img`` (its geometry checked against the result file written beside it)."""
    if not str(path).endswith(".blocks"):
        return read_functions(path, Path(img.path), g)
    result = Path(str(path)[:-len(".blocks")])
    try:
        i1 = next((ln[3:].strip() for ln in read_text(result, "the cache model's result").splitlines()
                   if ln.startswith("i1=")), None)
    except LayoutbenchError:
        i1 = None
    if i1 is None:
        raise LayoutbenchError(f"{path}: no result file {result.name} beside it says the cache it was measured with; "
                               f"give the blocks file where the cache model wrote it")
    if i1.replace(" ", "") != f"{g.size},{g.ways},{g.line}":
        raise LayoutbenchError(f"{path}: measured with the I1 {i1} (its {result.name}), not the {g.size},{g.ways},"
                               f"{g.line} asked; give --cache {i1}")
    return read_blocks(path, img)
