"""Which symbols of a static image came from the toolchain: the C library's and the compiler's
archives (``libc.a``, ``libgcc.a``, ``libgcc_eh.a``) and the crt files (``crt1.o``...).

A static image records no archive member names, and Debian's ``libc.a`` members carry no
``STT_FILE`` symbol: ld.lld writes each input file's local symbols together, in input order,
so an archive member's locals follow the ``STT_FILE`` of whichever object came before it
(the last user object, or ``crtstuff.c``).  The members are found again from the archives:

* a symbol the image defines and an archive member defines as a global (most of libc's are
  hidden, so local in the image) (``llvm-nm`` of the toolchain's
  archives, as ``clang -print-file-name`` finds them) belongs to that member:
  ``libc.a(strcmp.o)``, unless the plan's units place it;
* the locals after an ``STT_FILE`` symbol belong to that file until the first one that shows it
  is not: one outside the plan's units in code (a plan places all code of its objects), a
  member's global, or a local whose name a linked member (one whose globals the image holds)
  defines as a local (of k locals of a name that j linked members define, the last j: the members
  come after the user's objects in the link).  Objects do not interleave in the symbol table, so every later local of
  that run is not the file's either.  These tests read names and the symbol table's order (the
  link command's order of input files), never addresses: a relink in another layout gives the
  same answer;
* such a local belongs to the one linked member that defines it as a local, else to the member
  of the nearest member global before it in its section (else after it), else to
  ``(toolchain / archives)``; so do the crt files' (``crtstuff.c``);
* a global no archive defines keeps the object of the locals on both sides of it when that is a
  user's file, else it is shown as ``(global)``.

Only images that link a C library statically (they define ``__libc_start_main``) are looked at.
``native/symdiff/src/archives.rs`` is the same, compiled (``tests/test_native_symdiff.py``
compares both on a static-glibc program).
"""

from __future__ import annotations

import bisect
import functools
import os
import shutil
import subprocess
from collections import Counter, defaultdict

from .image import Image, Sym

TOOLCHAIN = "(toolchain / archives)"
#: object names that are never a user's object
NOT_USER = {TOOLCHAIN, "crtstuff.c"}
ARCHIVES = ("libc.a", "libgcc.a", "libgcc_eh.a")
#: the crt files the compiler driver links around a static program (their definitions come first)
CRT = ("crt1.o", "crti.o", "crtbeginT.o", "crtend.o", "crtn.o")
CC = "clang-19"
NM = "llvm-nm-19"


@functools.lru_cache(maxsize=None)
def _archive_paths() -> tuple[str, ...]:
    """The crt files and archives the compiler driver links, found in its library search
    directories (``clang -print-search-dirs``, one call) in order, as ``-print-file-name`` would."""
    cc = shutil.which(CC) or shutil.which("cc")
    if cc is None:
        return ()
    try:
        text = subprocess.run([cc, "-print-search-dirs"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    dirs = next((line.split("=", 1)[1].split(":") for line in text.splitlines() if line.startswith("libraries:")), [])
    out = []
    for name in CRT + ARCHIVES:
        hit = next((os.path.join(d, name) for d in dirs if d and os.path.isfile(os.path.join(d, name))), None)
        if hit:
            out.append(os.path.realpath(hit))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _index(paths: tuple[str, ...], stamps: tuple) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Global name → ``archive(member)`` (or crt file) of its first definition, in ``paths`` order,
    and local name → the members that define it (one ``llvm-nm`` call over all of them)."""
    nm = shutil.which(NM) or shutil.which("llvm-nm") or shutil.which("nm")
    found: dict[str, str] = {}
    local: dict[str, list[str]] = {}
    if nm is None or not paths:
        return found, {}
    try:
        p = subprocess.run([nm, "-A", "--defined-only", "-P", *paths], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError):
        return found, {}
    for line in p.stdout.splitlines():
        head, sep, rest = line.partition(": ")
        if not sep or rest == "no symbols":
            continue
        if head.endswith("]") and "[" in head:  # an archive's member: /usr/lib/.../libc.a[strcmp.o]
            path, member = head[:-1].rsplit("[", 1)
            where = f"{os.path.basename(path)}({member})"
        else:  # an object file (a crt file)
            where = os.path.basename(head)
        name, _, kind = rest.partition(" ")
        if not name:
            continue
        if _is_local(kind[:1]):
            local.setdefault(name, []).append(where)
        else:
            found.setdefault(name, where)
    return found, {n: tuple(dict.fromkeys(ws)) for n, ws in local.items()}


def _is_local(letter: str) -> bool:
    """An ``nm`` type letter of a local symbol: lower case, except ``i`` (an IFUNC) and the weak
    and unique ones (``u``, ``v``, ``w``)."""
    return letter.islower() and letter not in "iuvw"


def toolchain_index() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    paths = _archive_paths()
    stamps = tuple(os.stat(p).st_mtime_ns for p in paths if os.path.exists(p))
    return _index(paths, stamps)


def attribute(img: Image) -> None:
    """Give the toolchain's symbols of a static C-library image to their archive members."""
    if not any(s.name == "__libc_start_main" for s in img.syms):
        return
    index, local_index = toolchain_index()
    member: dict[int, str] = {}  #: id(sym) of a member's global → its member
    for s in img.syms:
        if not s.placed and s.name in index:  # hidden ones (most of libc's) are local in the image
            member[id(s)] = index[s.name]
    linked = set(member.values())
    by_sec: dict[int, list[Sym]] = defaultdict(list)
    for s in img.syms:
        by_sec[s.sec.index].append(s)
    anchors: dict[int, tuple[list[int], list[str]]] = {}
    pos: dict[int, tuple[int, int]] = {}  #: id(sym) → (section index, position in by_sec)
    for idx, lst in by_sec.items():
        lst.sort(key=lambda s: (s.addr, s.bind == "local", s.name))
        for i, s in enumerate(lst):
            pos[id(s)] = (idx, i)
        ms = [(s.addr, member[id(s)]) for s in lst if id(s) in member]
        anchors[idx] = ([a for a, _ in ms], [m for _, m in ms])
    plan = img.mapping == "plan"

    def local_of(s: Sym) -> list[str]:
        """The linked members that define a local of this name."""
        return [m for m in local_index.get(s.name, ()) if m in linked]

    # a user's file may define a local of the same name as a linked member (``static int lock``
    # beside glibc's random.o): the members come after the user's objects in the link, so of the k
    # locals of a name that j linked members define, the first k - j are not the members'
    count = Counter(s.name for s in img.syms if s.bind == "local" and not s.placed)
    seen: Counter = Counter()

    def member_near(s: Sym) -> str:
        addrs, ms = anchors[s.sec.index]
        i = bisect.bisect_right(addrs, s.addr) - 1
        if i >= 0:
            return ms[i]
        return ms[0] if ms else TOOLCHAIN

    run, foreign = None, False
    for s in img.syms:  # symbol-table order: each input file's locals together
        if s.bind != "local":
            continue
        if s.file != run:
            run, foreign = s.file, s.file in NOT_USER or not s.file
        if s.placed:
            continue
        own = local_of(s)
        seen[s.name] += 1
        if seen[s.name] <= count[s.name] - len(own):
            own = []  # a user's own local of a name a member also defines
        if not foreign and ((plan and s.sec.executable) or id(s) in member or own):
            foreign = True
        if foreign:
            s.obj = member[id(s)] if id(s) in member else own[0] if len(own) == 1 else member_near(s)
    for s in img.syms:
        if s.placed:
            continue
        if id(s) in member:
            s.obj = member[id(s)]
            continue
        if s.bind == "local":
            continue
        idx, i = pos[id(s)]
        lst = by_sec[idx]
        before = next((lst[j].obj for j in range(i - 1, -1, -1) if lst[j].bind == "local"), None)
        after = next((lst[j].obj for j in range(i + 1, len(lst)) if lst[j].bind == "local"), None)
        s.obj = before if before is not None and before == after and not foreign_name(before) else ""


def foreign_name(obj: str) -> bool:
    return obj in NOT_USER or obj.endswith(".o)") or obj in CRT


def own_only(old: Image, new: Image) -> tuple[Image, Image]:
    """Both images with the symbols of the toolchain's archives and crt files left out (a static
    program's C library: ``libc.a(strcmp.o)``, ``crt1.o``, ``(toolchain / archives)``), so that a
    diff shows the program's own objects only; a note on the new side says how many.  A symbol of
    no known object stays."""
    import dataclasses

    def mine(img: Image) -> list[Sym]:
        return [s for s in img.syms if not foreign_name(s.obj)]

    a, b = mine(old), mine(new)
    note = (f"--own-only: {len(old.syms) - len(a)} and {len(new.syms) - len(b)} symbol(s) of the toolchain's "
            "archives and crt files left out")
    return dataclasses.replace(old, syms=a), dataclasses.replace(new, syms=b, notes=[*new.notes, note])
