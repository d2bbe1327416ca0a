"""Diff two linked images symbol by symbol: unchanged, moved, changed, resized, added, removed.

A side is an ELF image (a kernel or any linked executable) or a build layoutbench made
(``KERNEL@REV:LAYOUT[:SEED]``).  Everything is read once per image:

* **Symbols.**  pyelftools finds the sections; the ``.symtab`` entries are decoded in
  bulk with numpy from the section bytes pyelftools returns (pyelftools' per-symbol
  objects cost ~25 µs each, too slow for a vmlinux).  Function, object and untyped
  (label) symbols with an address are kept.  layoutbench's ``__lb_*`` markers are not
  diffed (they only help map objects and name addresses), nor are absolute symbols,
  though a field holding an absolute symbol's value (``__lb_plan_id``) names that symbol.

* **Which object a symbol came from.**  With a layout plan (``plan.json`` beside the
  image, or the build spec's variant) and the objects it was linked from, the plan is
  replayed (:func:`layoutbench.placement.replay`) to find where each object's units
  start; a symbol belongs to the unit whose range holds its address.  Without one,
  local symbols belong to the ``STT_FILE`` symbol before them (a source file name,
  ``ring.c``); a global belongs to a file only when the nearest local symbols on both
  sides of it (by address, same section) come from that file, else it is shown as
  ``(global)``.  Symbols are matched between the images by key: a global by its name
  (unique in a link), a local by (object, name) -- the plan's object when both sides
  have one, else the ``STT_FILE`` name -- and, when that still repeats, by its
  occurrence in address order.

* **Same code.**  A linked image has no relocations left, so the fields that held
  them are found by explaining differences.  A pair of same-size symbols is compared
  byte by byte (numpy); identical bytes are the same code.  Otherwise every run of
  differing bytes must be covered by a 4-byte field that, read as a PC-relative
  displacement (instruction end 0, 1, 2 or 4 bytes after the field) or as a
  sign-extended absolute address, or an 8-byte absolute address, names the *same
  target* in both images: the same symbol at the same offset, or for addresses
  outside every symbol (merged strings and constants) the same bytes in the same
  output section (for a table of addresses, what those addresses name), or -- for
  ``sym+addend`` that points past ``sym`` -- an address whose shift equals that of a
  symbol next to it.  When every difference is explained the code is the same.  Any
  function left unexplained is decided by the instruction view: ONE ``llvm-objdump
  --disassemble-symbols`` call per image over just those functions, where every
  operand that is an address in the image (and every ``(%rip)`` displacement, through
  llvm-objdump's ``# 0xADDR`` comment) is replaced by the symbol+offset it names, and
  the instruction texts are compared.  Data objects are decided by bytes and masking
  alone.  The bytes of all same-size pairs are compared at once, and the candidate fields
  of every run are tried in bulk with numpy (:func:`_explain_all`); :func:`_explain` is
  the same check, one symbol at a time, kept as the reference (and for symbols cut short
  by the end of the file).  Limits: identical bytes are taken as the same code even if an address they
  reference now holds a different symbol (only possible when the source changed the
  reference *and* the new target landed on the old address); a constant that happens
  to fall in the image's address range is read as an address.

* **Classes** (one per symbol): ``unchanged`` (same address, size and code),
  ``moved`` (same size and code, new address), ``changed`` (same size, code or data
  differs), ``resized`` (size differs), ``added``, ``removed``.  Labels (size 0) are
  only unchanged/moved/added/removed.

* **Shift origin.**  Per output section, the lowest address where placement differs
  (a symbol moved, added or removed).  Its cause: an added (removed) object or symbol
  that starts there, else the symbol just before it changed size, else the two layout
  plans place that object differently (order, alignment, gap), else padding.
"""

from __future__ import annotations

import bisect
import functools
import gc
import json
import mmap
import os
import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path

import numpy as np

from . import elfinfo
from .elfinfo import string_at as _str, strings as _names, symtab_dtype as _dtype
from .errors import LayoutbenchError
from .layout import PAGE, LayoutPlan

STATUSES = ("unchanged", "moved", "changed", "resized", "added", "removed")
MASK64 = (1 << 64) - 1
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
SHN_LORESERVE, SHN_ABS = 0xFF00, 0xFFF1
STT = {0: "label", 1: "object", 2: "func", 6: "object", 10: "func"}  # NOTYPE, OBJECT, FUNC, TLS, GNU_IFUNC
STT_FILE = 4
BIND = elfinfo.BIND


def _without_gc(fn):
    """Run fn with the cyclic garbage collector paused: a vmlinux makes tens of thousands of small
    objects that hold no cycles, and each collection would walk all of them again."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return run


# -- reading an image ------------------------------------------------------------------------------

@dataclass
class Section:
    index: int
    name: str
    addr: int
    size: int
    offset: int
    nobits: bool
    executable: bool


@dataclass
class Sym:
    name: str
    addr: int
    size: int
    kind: str  #: func, object, label
    bind: str
    sec: Section
    file: str  #: the STT_FILE before it ("" for globals)
    obj: str = ""  #: the object it came from, for display ("" when unknown)
    key: tuple = ()  #: what matches it with its twin in the other image


@dataclass
class Image:
    """One side of a diff: an ELF image, its symbols, and what we know of how it was built."""

    path: Path
    label: str
    sections: list[Section]
    syms: list[Sym]
    data: bytes | mmap.mmap
    plan: LayoutPlan | None = None
    objects: dict | None = None  #: plan object name → elfinfo.ObjectInfo, when the objects were found
    mapping: str = "file"  #: "plan": objects from the replayed plan; "file": from STT_FILE symbols
    notes: list[str] = field(default_factory=list)
    markers: dict = field(default_factory=dict)  #: __lb_* marker → (address, section name)
    absolute: dict = field(default_factory=dict)  #: value → name of an absolute symbol (``__lb_plan_id``)
    lo: int = 0
    hi: int = 0

    def __post_init__(self):
        alloc = sorted((s for s in self.sections if s.size), key=lambda s: s.addr)
        self.lo = min((s.addr for s in alloc), default=0)
        self.hi = max((s.addr + s.size for s in alloc), default=0)
        self._sec_starts = [s.addr for s in alloc]
        self._alloc = alloc
        sized = sorted((s for s in self.syms if s.size), key=lambda s: (s.addr, -s.size, s.name))
        self._sized = sized
        self._sized_addr = [s.addr for s in sized]
        self._at: dict[int, list[tuple]] = defaultdict(list)  #: address → keys of what starts there
        self._cache: dict[int, frozenset | None] = {}
        self.by_key: dict[tuple, Sym] = {}

    def bytes_of(self, s: Sym) -> bytes | None:
        if s.sec.nobits or not s.size:
            return None
        off = s.sec.offset + (s.addr - s.sec.addr)
        return self.data[off:off + s.size]

    def section_at(self, addr: int) -> Section | None:
        i = bisect.bisect_right(self._sec_starts, addr) - 1
        if i >= 0:
            s = self._alloc[i]
            if addr < s.addr + s.size:
                return s
        return None

    def index(self) -> None:
        """(Re)build the lookups once keys are assigned."""
        self._at.clear()
        for s in self.syms:
            self._at[s.addr].append(s.key)
        for n, (a, _) in self.markers.items():
            self._at[a].append(("@marker", n))
        self.by_key = {s.key: s for s in self.syms}
        self._cache.clear()

    def resolve(self, addr: int) -> frozenset | None:
        """What an address names: {(key, offset)} of the symbol holding it and of everything starting
        there; (section, bytes there) outside every symbol; None outside the image."""
        hit = self._cache.get(addr, 0)
        if hit != 0:
            return hit
        out = None
        if addr in self.absolute:
            out = frozenset([("@abs", self.absolute[addr])])
        elif self.lo <= addr <= self.hi:
            toks = {(k, 0) for k in self._at.get(addr, ())}
            i = bisect.bisect_right(self._sized_addr, addr) - 1
            s = self._sized[i] if i >= 0 else None
            if s is not None and addr <= s.addr + s.size:
                toks.add((s.key, addr - s.addr))
            if s is None or addr >= s.addr + s.size:  # in no symbol: what is there names it
                sec = self.section_at(addr)
                if sec is None:
                    toks.add(("@end", addr == self.hi))
                elif sec.nobits:
                    toks.add(("@sec", sec.name))
                else:
                    toks.add(("@sec", sec.name, self._content(sec, addr)))
            out = frozenset(toks)
        self._cache[addr] = out
        return out

    def _content(self, sec: Section, addr: int):
        """Bytes at an unlabelled address (merged strings, constants, jump tables), addresses resolved."""
        off = sec.offset + addr - sec.addr
        chunk = bytes(self.data[off:off + 32])
        if len(chunk) >= 8 and self.lo <= int.from_bytes(chunk[:8], "little") <= self.hi:
            out = []
            for j in range(0, len(chunk) - 7, 8):  # a table of addresses (a switch's jump table)
                v = int.from_bytes(chunk[j:j + 8], "little")
                i = bisect.bisect_right(self._sized_addr, v) - 1
                s = self._sized[i] if i >= 0 else None
                out.append((s.key, v - s.addr) if s is not None and v < s.addr + s.size else v)
            return tuple(out)
        nul = chunk.find(b"\0")
        return chunk[:nul + 1] if nul >= 0 else chunk

    def near(self, addr: int, wide: bool = False) -> list[Sym]:
        """The sized symbols around an address (for symbol+addend outside the symbol): the two on
        each side, or (wide) every one starting within 4 KiB of it."""
        if not wide:
            i = bisect.bisect_right(self._sized_addr, addr)
            return self._sized[max(0, i - 2):i + 2]
        i = bisect.bisect_left(self._sized_addr, addr - PAGE)
        j = bisect.bisect_right(self._sized_addr, addr + PAGE)
        return self._sized[i:j]


def same_target(old: Image, x: int, new: Image, y: int, wide: bool = False) -> bool:
    """Do address x of the old image and y of the new one name the same thing?"""
    i = bisect.bisect_right(old._sized_addr, x) - 1  # fast path: inside a symbol that moved by y-x
    if i >= 0:
        s = old._sized[i]
        if x < s.addr + s.size:
            n = new.by_key.get(s.key)
            if n is not None and y - x == n.addr - s.addr and n.size == s.size:
                return True
    t, u = old.resolve(x), new.resolve(y)
    if t is None or u is None:
        return False
    if t & u:
        return True
    for s in old.near(x, wide):  # sym+addend pointing just outside sym: some neighbour moved by exactly y-x
        n = new.by_key.get(s.key)
        if n is not None and y - x == n.addr - s.addr and abs(x - s.addr) <= PAGE:
            return True
    return False


def read_image(path: Path, label: str | None = None) -> Image:
    """Sections and symbols of a linked ELF image, read once.  Errors are one line."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    path = Path(path)
    with elfinfo.open_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        if f.read(4) != b"\x7fELF":
            raise LayoutbenchError(f"{path}: not an ELF file (no ELF magic)")
        f.seek(0)
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        elf = ELFFile(data)
        if elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"] > size:
            raise LayoutbenchError(f"{path}: truncated ELF: section headers end at byte "
                                   f"{elf['e_shoff'] + elf['e_shnum'] * elf['e_shentsize']}, the file has {size}")
        sections, symtab = [], None
        for i, s in enumerate(elf.iter_sections()):
            nobits = s["sh_type"] == "SHT_NOBITS"
            if not nobits and s["sh_type"] != "SHT_NULL" and s["sh_offset"] + s["sh_size"] > size:
                raise LayoutbenchError(f"{path}: truncated ELF: section {s.name or i} ends at byte "
                                       f"{s['sh_offset'] + s['sh_size']}, the file has {size}")
            if s["sh_flags"] & SHF_ALLOC:
                sections.append(Section(i, s.name, s["sh_addr"], s["sh_size"], s["sh_offset"], nobits,
                                        bool(s["sh_flags"] & SHF_EXECINSTR)))
            if s["sh_type"] == "SHT_SYMTAB":
                symtab = s
        if symtab is None:
            raise LayoutbenchError(f"{path}: has no symbol table (.symtab); it is stripped -- "
                                   f"give the unstripped image (e.g. vmlinux, not bzImage)")
        strtab = elf.get_section(symtab["sh_link"]).data()
        raw = np.frombuffer(symtab.data(), dtype=_dtype(elf.elfclass, elf.little_endian))
    except LayoutbenchError:
        raise
    except (ELFError, ValueError, IndexError, KeyError, OSError, Exception) as e:  # pyelftools raises many kinds
        raise LayoutbenchError(f"{path}: corrupt or truncated ELF ({type(e).__name__}: {e})") from None
    alloc_ok = {s.index for s in sections}
    syms: list[Sym] = []
    markers: dict[str, tuple[int, str]] = {}
    absval: dict[int, set[str]] = {}
    current = ""
    info, shndx, value, ssize = (raw["info"].tolist(), raw["shndx"].tolist(), raw["value"].tolist(),
                                 raw["size"].tolist())
    name = _names(strtab, raw["name"].tolist())
    flags_alloc = {s.index: s for s in sections}
    for i in range(1, len(raw)):
        t = info[i] & 0xF
        if t == STT_FILE:
            current = name[i]
            continue
        kind = STT.get(t)
        idx = shndx[i]
        if idx == SHN_ABS and kind is not None and value[i] >= 0x1000:
            absval.setdefault(value[i], set()).add(name[i])
            continue
        if kind is None or idx == 0 or idx >= SHN_LORESERVE or idx not in alloc_ok:
            continue
        n = name[i]
        if not n or n.startswith((".L", "$")):
            continue
        bind = BIND.get(info[i] >> 4, "global")
        if n.startswith("__lb_"):  # layoutbench's own markers: used to map objects, not diffed
            markers[n] = (value[i], flags_alloc[idx].name)
            continue
        syms.append(Sym(n, value[i], ssize[i], kind, bind, flags_alloc[idx], current if bind == "local" else ""))
    img = Image(path, label or str(path), sorted(sections, key=lambda s: (s.addr, s.index)), syms, data)
    img.markers = markers
    img.absolute = {v: min(names) for v, names in absval.items() if len(names) == 1}
    return img


# -- sides: a path or a build spec -----------------------------------------------------------------

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


@_without_gc
def load_side(side: str, image: str | None = None, repo: str | None = None, say=lambda msg: None) -> Image:
    """An ELF path (with the plan beside it, if any) or a build spec, looked up or built."""
    p = Path(side)
    if p.exists() or "@" not in side:
        img = read_image(p)
        plan_path = p.parent / "plan.json"
        if plan_path.is_file():
            try:
                img.plan = LayoutPlan.from_json(plan_path.read_text())
            except (ValueError, TypeError, KeyError) as e:
                img.notes.append(f"{plan_path}: unreadable plan ({e}); objects from STT_FILE symbols")
            if img.plan is not None:
                img.objects = _find_objects(p, img.plan)
        _map_objects(img)
        return img
    from . import build, profile, source

    kernel, rev, layout_name, seed = parse_spec(side)
    prof = profile.load(kernel)
    co = source.resolve(prof, None if rev == source.WORKTREE else rev, repo)
    image = image or next(iter(prof.images))
    prof.image(image)
    objs, (v,) = build.build_variants(prof, co, [(layout_name, seed)], [image], say=say)
    img = read_image(v.elf, f"{prof.name}@{co.short}:{v.label} ({image})")
    img.plan = LayoutPlan.from_json(v.plan_path.read_text())
    img.objects = read_objects(objs.objdir, objs.entries(image))
    _map_objects(img)
    return img


def read_objects(objdir: Path, entries: list[tuple[str, str]]) -> dict:
    """elfinfo.ObjectInfo of each (name, file relative to objdir), cached for the other side."""
    return {n: elfinfo.read_object(objdir / rel, n) for n, rel in entries}


def _find_objects(elf: Path, plan: LayoutPlan) -> dict | None:
    """The objects an image in a layoutbench work dir was linked from.

    ``WORK/images/K/<commit>-<config>/I/L-S/image.elf`` was linked from
    ``WORK/objects/K/<commit>-<config>/obj``, listed in the profile's object list."""
    from . import build, profile

    try:
        elf = elf.resolve()
        work, key = elf.parents[5], elf.parents[2].name
        objdir = work / "objects" / plan.kernel / key / "obj"
        listing = objdir / profile.load(plan.kernel).image(plan.image).objects
        entries = dict(build.object_entries(listing))
    except (IndexError, LayoutbenchError, OSError):
        return None
    names = list(dict.fromkeys(u.object for units in plan.groups.values() for u in units))
    try:
        return read_objects(objdir, [(n, entries.get(n, n)) for n in names])
    except (LayoutbenchError, ValueError, IndexError, OSError):
        return None


def _map_objects(img: Image) -> None:
    """Set ``obj`` of every symbol: from the replayed plan, else from STT_FILE symbols."""
    by_sec: dict[int, list[Sym]] = defaultdict(list)
    for s in img.syms:
        by_sec[s.sec.index].append(s)
    for lst in by_sec.values():
        lst.sort(key=lambda s: (s.addr, s.name))
    # STT_FILE: locals by their file; a global between two locals of one file is in that file
    for lst in by_sec.values():
        prev = ""
        pending: list[Sym] = []
        for s in lst:
            if s.bind == "local":
                for g in pending:
                    g.obj = s.file if s.file == prev else ""
                pending = []
                s.obj = prev = s.file
            else:
                pending.append(s)
    if img.plan is None or img.objects is None:
        if img.plan is not None:
            img.notes.append(f"{img.path}: the objects of its plan were not found; objects from STT_FILE symbols")
        return
    from . import elfinfo, placement

    info = elfinfo.ImageInfo(img.path, {}, [elfinfo.Symbol(s.name, s.addr, s.size, s.kind, s.bind, s.sec.name)
                                            for s in img.syms]
                             + [elfinfo.Symbol(n, a, 0, "notype", "global", sec) for n, (a, sec) in img.markers.items()],
                             [])
    try:
        starts = placement.replay(img.plan, img.objects, info)
    except LayoutbenchError as e:
        img.notes.append(f"{img.path}: plan does not replay ({e}); objects from STT_FILE symbols")
        return
    if starts.problems:
        img.notes.append(f"{img.path}: image does not match its plan ({starts.problems[0]}); "
                         f"objects from STT_FILE symbols")
        return
    end = img.markers.get("__lb_text_units_end", (None,))[0]
    ranges: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    order = {name: i for i, name in enumerate(dict.fromkeys(o for _, o in starts.starts))}
    for (kind, obj), addr in starts.starts.items():
        sec = img.section_at(addr)
        if sec is not None:
            ranges[sec.index].append((addr, order[obj], obj))
    for idx, lst in ranges.items():
        lst.sort()
        addrs = [a for a, _, _ in lst]
        for s in by_sec.get(idx, []):
            if end is not None and s.sec.executable and s.addr >= end and s.sec.addr <= end:
                continue
            i = bisect.bisect_right(addrs, s.addr) - 1
            if i >= 0:
                s.obj = lst[i][2]
    img.mapping = "plan"


def _assign_keys(img: Image, mode: str) -> None:
    seen: Counter = Counter()
    for s in img.syms:  # symbol-table order: lld writes each object's locals in link-command order
        if s.bind == "local":
            base = (s.file, s.obj, s.name) if mode == "plan" and s.size else (s.file, s.name)
        else:
            base = ("", s.name)
        seen[base] += 1
        s.key = base if seen[base] == 1 else (*base, seen[base])
    img.index()


# -- comparing code --------------------------------------------------------------------------------

class _Stats:
    def __init__(self):
        self.identical = 0
        self.masked = 0
        self.fields = 0
        self.objdump = 0


def _explain(old: Image, o: Sym, new: Image, n: Sym, ob: bytes, nb: bytes, st: _Stats) -> bool | None:
    """True: same code (differences are addresses naming the same targets); None: undecided."""
    a = np.frombuffer(ob, np.uint8)
    b = np.frombuffer(nb, np.uint8)
    diff = np.flatnonzero(a != b)
    if diff.size == 0:
        st.identical += 1
        return True
    L = len(ob)
    code = o.kind == "func" or o.sec.executable
    ends = (0, 1, 2, 4) if code else (0,)
    covered = 0
    fields = 0
    dl = diff.tolist()
    for pos, i in enumerate(dl):
        if i < covered:
            continue
        j = i  # the last differing byte of this run (a field holds at most 4 of them)
        while pos + 1 < len(dl) and dl[pos + 1] == j + 1 and j - i < 3:
            pos += 1
            j += 1
        hit = 0
        for s in (i, i - 1, i - 2, i - 3):
            if s < 0 or s + 4 > L or s + 3 < j:
                continue
            ro = int.from_bytes(ob[s:s + 4], "little", signed=True)
            rn = int.from_bytes(nb[s:s + 4], "little", signed=True)
            if old.lo <= ro & MASK64 <= old.hi and same_target(old, ro & MASK64, new, rn & MASK64):
                hit = s + 4  # an absolute address (non-PIC code, data pointers)
                break
            for k in ends:
                if s + 4 + k > L and code:
                    break
                if same_target(old, o.addr + s + 4 + k + ro, new, n.addr + s + 4 + k + rn):
                    hit = s + 4
                    break
            if not hit and not old.lo <= ro & MASK64 <= old.hi and same_target(old, ro & MASK64, new, rn & MASK64):
                hit = s + 4
            if hit:
                break
        if not hit:
            for s in range(i, i - 8, -1):
                if s < 0 or s + 8 > L:
                    continue
                if same_target(old, int.from_bytes(ob[s:s + 8], "little"), new,
                               int.from_bytes(nb[s:s + 8], "little")):
                    hit = s + 8
                    break
        if not hit:
            return None if code else False
        covered = hit
        fields += 1
    st.masked += 1
    st.fields += fields
    return True


#: The fields :func:`_explain` tries, in its order, for a run of differing bytes starting at offset
#: i: (width, back, k) is a field of `width` bytes starting at i - back, read as an address (k None)
#: or as a PC-relative displacement of an instruction ending k bytes after the field.  Every field
#: of one width and start covers the same bytes, so only the first (width, back) that names the
#: same target in both images matters.
_FIELDS = [(4, back, k) for back in range(4) for k in (None, 0, 1, 2, 4)] + [(8, back, None) for back in range(8)]
_CHUNK = 1 << 22  #: bytes of symbol pairs compared per batch (bounds the index arrays' memory)


class _Targets:
    """:func:`same_target` over arrays of address pairs.

    Its fast path (x inside a sized symbol of the old image whose twin has the same size and
    moved by exactly y - x) and its cheap "no" (x or y outside both the image and the absolute
    symbols: nothing to name) are decided in numpy; the pairs left (``unknown``) go to
    :func:`same_target` itself, once per distinct pair.  Addresses are uint64; a computed address
    that wrapped (below 0 or past 2**64 in Python's ints) is marked invalid, and names nothing.
    """

    def __init__(self, old: Image, new: Image):
        self.old, self.new = old, new
        rows = []
        twin = new.by_key.get
        for s in old._sized:
            n = twin(s.key)
            rows.append((s.addr, s.addr + s.size, n is not None and n.size == s.size,
                         (n.addr - s.addr) & MASK64 if n is not None else 0))
        cols = np.array(rows, np.uint64).reshape(-1, 4).T
        self.start, self.end, self.delta = cols[0], cols[1], cols[3]
        self.moves = cols[2].astype(bool)  #: the twin has the same size
        self.bounds = [(np.uint64(img.lo), np.uint64(img.hi), np.array(sorted(img.absolute), np.uint64))
                       for img in (old, new)]
        self.memo: dict[tuple[int, int], bool] = {}

    def classify(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(same, unknown): same_target is True for `same`; for `unknown` only same_target can tell;
        for the rest it is False."""
        if self.start.size:
            i = np.searchsorted(self.start, x, "right") - 1
            j = np.maximum(i, 0)
            same = (i >= 0) & (x < self.end[j]) & self.moves[j] & (y - x == self.delta[j])
        else:
            same = np.zeros(x.shape, bool)
        (lo, hi, ab), (nlo, nhi, nab) = self.bounds
        named = ((x >= lo) & (x <= hi) | np.isin(x, ab)) & ((y >= nlo) & (y <= nhi) | np.isin(y, nab))
        return same, named & ~same

    def decide(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """same_target for each pair (the unknown ones), each distinct pair asked once."""
        memo, old, new = self.memo, self.old, self.new
        out = []
        for a, b in zip(x.tolist(), y.tolist()):
            r = memo.get((a, b))
            if r is None:
                r = memo[(a, b)] = same_target(old, a, new, b)
            out.append(r)
        return np.array(out, bool)


def _word(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The little-endian unsigned `width`-byte words of buf at the given offsets, as uint64."""
    w = buf[at].astype(np.uint64)
    for b in range(1, width):
        w |= buf[at + b].astype(np.uint64) << np.uint64(8 * b)
    return w


def _displaced(base: np.ndarray, disp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """base + disp (signed) as uint64, and whether it stayed in 0 .. 2**64-1 (no wrap)."""
    x = base + disp.astype(np.uint64)
    return x, np.where(disp >= 0, x >= base, x < base)


def _explain_all(old: Image, new: Image, pairs: list[tuple[Sym, Sym]], st: _Stats) -> list[bool | None]:
    """:func:`_explain` for many same-size pairs at once, with the same answers and counts.

    The bytes of all pairs are gathered into two arrays and compared at once.  Every differing
    byte is a possible start of a run; for a set of them at once, the candidate fields of
    :data:`_FIELDS` are tried in order (a byte leaves once a field names the same target), and
    what :func:`same_target` decides beyond its fast path is asked of it once per distinct
    address pair.  Each pair's runs are walked as :func:`_explain` does (the first differing byte
    not covered by the previous field starts the next run), with the bytes that start a run of
    differing bytes decided up front and any other byte a walk reaches decided in a next round.
    """
    out: list[bool | None] = []
    targets = _Targets(old, new)
    lo = 0
    while lo < len(pairs):  # in batches of about _CHUNK bytes
        hi, size = lo, 0
        while hi < len(pairs) and (size < _CHUNK or hi == lo):
            size += pairs[hi][0].size
            hi += 1
        out += _explain_batch(targets, pairs[lo:hi], st)
        lo = hi
    return out


def _bytes(img: Image, syms: list[Sym]) -> np.ndarray:
    """The bytes of the symbols one after the other, then 8 zero bytes (a word read at a symbol's
    end stays in the array)."""
    data, parts = img.data, []
    for s in syms:
        at = s.sec.offset + s.addr - s.sec.addr
        parts.append(data[at:at + s.size])
    parts.append(bytes(8))
    return np.frombuffer(b"".join(parts), np.uint8)


def _explain_batch(targets: _Targets, pairs: list[tuple[Sym, Sym]], st: _Stats) -> list[bool | None]:
    old, new = targets.old, targets.new
    m = len(pairs)
    geometry = np.array([(o.size, o.addr, n.addr, o.kind == "func" or o.sec.executable) for o, n in pairs], np.uint64)
    size = geometry[:, 0].astype(np.int64)
    first = np.zeros(m, np.int64)  # where each pair's bytes start in the batch
    np.cumsum(size[:-1], out=first[1:])
    a, b = _bytes(old, [o for o, _ in pairs]), _bytes(new, [n for _, n in pairs])
    differs = a != b
    rows = np.flatnonzero(differs)  # every differing byte is a row: a possible run start
    q = np.searchsorted(first, rows, "right") - 1  # its pair
    i, length = rows - first[q], size[q]  # its offset in the symbol, the symbol's size
    run = np.zeros(rows.size, np.int64)  # the run's last byte: j = i + run (at most 4 bytes)
    more = np.ones(rows.size, bool)
    for t in (1, 2, 3):
        more &= (i + t < length) & differs[rows + t]
        run += more
    j = i + run
    oaddr, naddr, code = geometry[q, 1], geometry[q, 2], geometry[q, 3].astype(bool)
    widths = np.array([w for w, _, _ in _FIELDS], np.int64)
    backs = np.array([bk for _, bk, _ in _FIELDS], np.int64)

    def covers(sel: np.ndarray) -> tuple[list[int], list[int]]:
        """For the rows sel as run starts: the offset just past the first field of _FIELDS that
        names the same target in both images (-1: none does), and the row of the next run."""
        NONE = len(_FIELDS)
        found = np.full(sel.size, NONE, np.int64)  # per row of sel: index of that field in _FIELDS
        active = np.arange(sel.size)  # rows of sel without a field yet
        unknown = []  # (rows of sel, field, x, y) that only same_target can decide
        for f, (width, back, k) in enumerate(_FIELDS):
            r = sel[active]
            s = i[r] - back
            ok = (s >= 0) & (s + width <= length[r])
            if width == 4:
                ok &= s + 3 >= j[r]
            if k:  # instruction end past the field: code only, and inside the symbol
                ok &= code[r] & (s + 4 + k <= length[r])
            r, s, at = r[ok], s[ok], active[ok]
            if not r.size:
                continue
            g = rows[r] - back
            x, y = _word(a, g, width), _word(b, g, width)
            valid = True
            if width == 4:  # sign-extended
                x, y = (np.where(v >= 1 << 31, v.astype(np.int64) - (1 << 32), v.astype(np.int64)) for v in (x, y))
                if k is None:
                    x, y = x.astype(np.uint64), y.astype(np.uint64)
                else:
                    end = (s + 4 + k).astype(np.uint64)
                    x, vx = _displaced(oaddr[r] + end, x)
                    y, vy = _displaced(naddr[r] + end, y)
                    valid = vx & vy
            same, maybe = targets.classify(x, y)
            found[at[same & valid]] = f
            maybe &= valid
            if maybe.any():
                unknown.append((at[maybe], f, x[maybe], y[maybe]))
            active = active[found[active] == NONE]
        if unknown:
            yes = targets.decide(np.concatenate([u[2] for u in unknown]), np.concatenate([u[3] for u in unknown]))
            at = np.concatenate([u[0] for u in unknown])
            f = np.concatenate([np.full(u[0].size, u[1], np.int64) for u in unknown])
            np.minimum.at(found, at[yes], f[yes])
        hit = found < NONE
        f = np.where(hit, found, 0)
        cover = np.where(hit, i[sel] - backs[f] + widths[f], -1)
        return cover.tolist(), np.searchsorted(rows, first[q[sel]] + cover).tolist()

    # Walk each pair's runs as _explain does.  Rows are decided on demand, in bulk: first every
    # row that starts a run of differing bytes (nearly all run starts), then, round by round,
    # the rows the walks stopped at.
    cover: list[int | None] = [None] * rows.size
    nxt: list[int] = [0] * rows.size
    sel = np.flatnonzero((i == 0) | ~differs[rows - 1])
    at = np.searchsorted(rows, first).tolist()  # per pair: the row its walk is at
    ends = np.searchsorted(rows, first + size).tolist()
    fields = [0] * m
    out: list[bool | None] = [True] * m
    walking = [p for p in range(m) if at[p] < ends[p]]
    st.identical += m - len(walking)
    while walking:
        for r, c, n in zip(sel.tolist(), *covers(sel)):
            cover[r], nxt[r] = c, n
        stopped = []
        for p in walking:
            t, end, f = at[p], ends[p], fields[p]
            while t < end and cover[t] is not None and cover[t] >= 0:
                f += 1
                t = nxt[t]
            at[p], fields[p] = t, f
            if t < end and cover[t] is None:
                stopped.append(p)
            elif t < end:  # a run no field explains
                o = pairs[p][0]
                out[p] = None if o.kind == "func" or o.sec.executable else False
            else:
                st.masked += 1
                st.fields += f
        walking = stopped
        sel = np.array([at[p] for p in stopped], np.int64)
    return out

_LINE = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")
_HEAD = re.compile(r"^([0-9a-f]+) <(.*)>:$")
_RIP = re.compile(r"-?0x[0-9a-f]+\(%rip\)")
_HEX = re.compile(r"-?0x[0-9a-f]+")
_ANNOT = re.compile(r"\s*<[^>]*>")


def _objdump(img: Image, syms: list[Sym], tool: str) -> subprocess.Popen:
    """Start ONE llvm-objdump over the given functions (and any label inside them)."""
    ranges = sorted((s.addr, s.addr + s.size) for s in syms)
    starts = [r[0] for r in ranges]
    names = set(s.name for s in syms)
    for s in img.syms:  # labels inside a function split llvm-objdump's output: ask for them too
        i = bisect.bisect_right(starts, s.addr) - 1
        if i >= 0 and s.addr < ranges[i][1]:
            names.add(s.name)
    rsp = tempfile.NamedTemporaryFile("w", suffix=".rsp", delete=False)
    rsp.write("--disassemble-symbols=" + ",".join(sorted(names)) + "\n")
    rsp.close()
    try:
        p = subprocess.Popen([tool, "-d", "--no-show-raw-insn", f"@{rsp.name}", str(img.path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        os.unlink(rsp.name)
        raise LayoutbenchError(f"{tool} not found; install llvm-19 (apt-get install llvm-19)") from None
    p.rsp = rsp.name  # type: ignore[attr-defined]
    return p


def _instructions(img: Image, syms: list[Sym], p: subprocess.Popen) -> dict[int, list[tuple[str, list[int]]]]:
    """Each function's instructions (by address) as (text with addresses taken out, [addresses])."""
    out, errtext = p.communicate()
    os.unlink(p.rsp)  # type: ignore[attr-defined]
    if p.returncode != 0:
        first = errtext.strip().splitlines()[0] if errtext.strip() else f"exit {p.returncode}"
        raise LayoutbenchError(f"llvm-objdump failed on {img.path}: {first}")
    ranges = sorted((s.addr, s.addr + s.size) for s in syms)
    starts = [r[0] for r in ranges]
    text: dict[int, list] = {r[0]: [] for r in ranges}
    lines = []
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            lines.append((int(m.group(1), 16), m.group(2)))
    for j, (addr, body) in enumerate(lines):
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or addr >= ranges[i][1]:
            continue
        nxt = lines[j + 1][0] if j + 1 < len(lines) and lines[j + 1][0] > addr else ranges[i][1]
        ins = _ANNOT.sub("", body.partition("#")[0]).strip()
        addrs: list[int] = []

        def rip(m: re.Match) -> str:  # the target is the next instruction's address + displacement
            addrs.append((nxt + int(m.group(0)[:-6], 16)) & MASK64)
            return "@(%rip)"

        def number(m: re.Match) -> str:
            v = int(m.group(0), 16) & MASK64
            if img.resolve(v) is None:
                return m.group(0)
            addrs.append(v)
            return "@"

        ins = _HEX.sub(number, _RIP.sub(rip, ins))
        text[starts[i]].append((ins, addrs))
    return text


def _same_instructions(old: Image, a: list, new: Image, b: list) -> bool:
    if not a or len(a) != len(b):
        return False
    for (ta, xa), (tb, xb) in zip(a, b):
        if ta != tb or len(xa) != len(xb):
            return False
        if not all(x == y or same_target(old, x, new, y, wide=True) for x, y in zip(xa, xb)):
            return False
    return True


# -- the diff --------------------------------------------------------------------------------------

@dataclass
class SymbolDiff:
    name: str
    object: str
    kind: str
    status: str
    old_addr: int | None
    new_addr: int | None
    old_size: int | None
    new_size: int | None
    section: str

    @property
    def delta(self) -> int | None:
        if self.old_addr is None or self.new_addr is None:
            return None
        return self.new_addr - self.old_addr

    def to_dict(self) -> dict:
        return {"name": self.name, "object": self.object, "kind": self.kind, "status": self.status,
                "old_addr": self.old_addr, "new_addr": self.new_addr, "old_size": self.old_size,
                "new_size": self.new_size, "section": self.section, "delta": self.delta}

    def to_json(self) -> str:
        """``to_dict()`` as ``json.dumps(..., indent=1)`` writes it in the list of a top-level key
        (the numbers are ints or None)."""
        s = _json_str
        oa, na, os_, ns = self.old_addr, self.new_addr, self.old_size, self.new_size
        d = None if oa is None or na is None else na - oa
        return (f'  {{\n   "name": {s(self.name)},\n   "object": {s(self.object)},\n   "kind": {s(self.kind)},\n'
                f'   "status": {s(self.status)},\n   "old_addr": {"null" if oa is None else oa},\n'
                f'   "new_addr": {"null" if na is None else na},\n   "old_size": {"null" if os_ is None else os_},\n'
                f'   "new_size": {"null" if ns is None else ns},\n   "section": {s(self.section)},\n'
                f'   "delta": {"null" if d is None else d}\n  }}')


@dataclass
class ObjectDiff:
    object: str
    counts: dict[str, int]
    deltas: dict[int, int]  #: address shift → how many of its symbols moved by it

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict:
        return {"object": self.object, "total": self.total, **self.counts,
                "deltas": {str(k): v for k, v in sorted(self.deltas.items())}}


@dataclass
class ShiftOrigin:
    section: str
    address: int
    symbol: str  #: the first symbol whose placement differs
    object: str
    cause: str  #: added-object, added-symbol, removed-object, removed-symbol, resized, layout, padding
    responsible: str  #: the object or symbol that caused it
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Propagation:
    section: str
    moved: int  #: matched symbols at or above the origin that moved
    stayed: int  #: matched symbols above the origin that did not
    first: int
    last: int  #: highest new address of a moved symbol
    to_end: bool  #: every matched symbol above the origin moved
    absorbed_at: str | None  #: first symbol above the origin that is back in place

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SideInfo:
    path: str
    label: str
    symbols: int
    mapping: str
    layout: str | None
    plan_id: str | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SymdiffResult:
    old: SideInfo
    new: SideInfo
    mapping: str
    counts: dict[str, int]
    moved_by: dict[int, int]  #: shift → number of moved symbols
    page_quantized: bool  #: every moved function/label in executable sections moved by whole pages
    origins: list[ShiftOrigin]
    propagation: Propagation | None
    text_bytes: int  #: function bytes in the new image's executable sections
    text_unchanged_bytes: int
    text_functions: int
    text_unchanged_functions: int
    objects: list[ObjectDiff]
    symbols: list[SymbolDiff]
    compared: dict[str, int]
    notes: list[str]
    text_moved_by: dict[int, int] = field(default_factory=dict)  #: the same, executable sections only

    @property
    def placement_identical(self) -> bool:
        return not any(self.counts[k] for k in ("moved", "resized", "added", "removed"))

    @property
    def text_unchanged_share(self) -> float:
        return self.text_unchanged_bytes / self.text_bytes if self.text_bytes else 1.0

    @_without_gc
    def to_dict(self, all_symbols: bool = True) -> dict:
        return self._dict([s.to_dict() for s in self.symbols if all_symbols or s.status != "unchanged"])

    @_without_gc
    def to_json(self) -> str:
        """``json.dumps(self.to_dict(), indent=1)``, the same text, faster: the json module's indented
        encoder is pure Python, so the symbol list (nearly all of it) is written here."""
        mark = "\0symbols"  # no other string in the diff holds a NUL
        text = json.dumps(self._dict(mark), indent=1)
        body = ",\n".join(s.to_json() for s in self.symbols)
        return text.replace(json.dumps(mark), f"[\n{body}\n ]" if body else "[]", 1)

    def _dict(self, symbols) -> dict:
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "mapping": self.mapping,
            "placement_identical": self.placement_identical,
            "counts": self.counts,
            "moved": {"symbols": self.counts["moved"], "by": {str(k): v for k, v in sorted(self.moved_by.items())},
                      "min": min(self.moved_by, default=None), "max": max(self.moved_by, default=None),
                      "text_by": {str(k): v for k, v in sorted(self.text_moved_by.items())},
                      "text_whole_pages": self.page_quantized},
            "shift_origin": self.origins[0].to_dict() if self.origins else None,
            "shift_origins": [o.to_dict() for o in self.origins],
            "propagation": self.propagation.to_dict() if self.propagation else None,
            "text": {"bytes": self.text_bytes, "unchanged_bytes": self.text_unchanged_bytes,
                     "unchanged_share": round(self.text_unchanged_share, 6), "functions": self.text_functions,
                     "unchanged_functions": self.text_unchanged_functions},
            "objects": [o.to_dict() for o in self.objects],
            "symbols": symbols,
            "compared": self.compared,
            "notes": self.notes,
        }


def _side(img: Image) -> SideInfo:
    return SideInfo(str(img.path), img.label, len(img.syms), img.mapping,
                    f"{img.plan.layout}:{img.plan.seed}" if img.plan else None,
                    f"0x{img.plan.plan_id:07x}" if img.plan else None)


@_without_gc
def diff(old: Image, new: Image, objdump: str = "llvm-objdump-19") -> SymdiffResult:
    """Classify every symbol of two images and summarize where placement starts to differ."""
    mode = "plan" if old.mapping == new.mapping == "plan" else "file"
    _assign_keys(old, mode)
    _assign_keys(new, mode)
    okeys, nkeys = old.by_key, new.by_key  # key → symbol, as index() built them
    st = _Stats()
    status: dict[tuple, str] = {}
    pending: list[tuple[Sym, Sym]] = []
    decided: list[list] = []  #: [key, old, new, status or same], in the order statuses are given
    bulk: list[tuple[Sym, Sym]] = []  #: same-size pairs with bytes on both sides: compared together
    bulk_at: list[int] = []
    osize, nsize = len(old.data), len(new.data)
    for k, o in okeys.items():
        n = nkeys.get(k)
        if n is None:
            decided.append([k, o, n, "removed"])
        elif o.size != n.size:
            decided.append([k, o, n, "resized"])
        else:
            same: bool | None = True
            if o.size and not o.sec.nobits and not n.sec.nobits:
                if (o.sec.offset + o.addr - o.sec.addr + o.size <= osize
                        and n.sec.offset + n.addr - n.sec.addr + n.size <= nsize):
                    bulk_at.append(len(decided))
                    bulk.append((o, n))
                else:  # bytes cut short by the end of the file: one at a time
                    same = _explain(old, o, new, n, old.bytes_of(o), new.bytes_of(n), st)
            elif o.size and o.sec.nobits != n.sec.nobits:
                same = False
            decided.append([k, o, n, same])
    for at, same in zip(bulk_at, _explain_all(old, new, bulk, st)):
        decided[at][3] = same
    for k, o, n, same in decided:
        if isinstance(same, str):
            status[k] = same
        elif same is None:
            pending.append((o, n))
        else:
            status[k] = ("unchanged" if o.addr == n.addr else "moved") if same else "changed"
    for k in nkeys:
        if k not in okeys:
            status[k] = "added"
    if pending:  # the instruction view, one llvm-objdump per image, both at once
        po = _objdump(old, [o for o, _ in pending], objdump)
        pn = _objdump(new, [n for _, n in pending], objdump)
        ti, tn = _instructions(old, [o for o, _ in pending], po), _instructions(new, [n for _, n in pending], pn)
        for o, n in pending:
            st.objdump += 1
            same = _same_instructions(old, ti.get(o.addr), new, tn.get(n.addr))
            status[o.key] = ("unchanged" if o.addr == n.addr else "moved") if same else "changed"

    rows: list[SymbolDiff] = []
    for k, s in status.items():
        o, n = okeys.get(k), nkeys.get(k)
        ref = n or o
        rows.append(SymbolDiff(ref.name, ref.obj or (o.obj if o else "") or "", ref.kind, s,
                               o.addr if o else None, n.addr if n else None, o.size if o else None,
                               n.size if n else None, ref.sec.name))
    rows.sort(key=lambda r: (r.new_addr if r.new_addr is not None else r.old_addr, r.name))
    counts = {k: 0 for k in STATUSES}
    moved_by: Counter = Counter()
    per_obj: dict[str, Counter] = defaultdict(Counter)
    per_obj_d: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        counts[r.status] += 1
        per_obj[r.object][r.status] += 1
        if r.status == "moved":
            d = r.new_addr - r.old_addr
            moved_by[d] += 1
            per_obj_d[r.object][d] += 1
    objects = [ObjectDiff(name or "(global)", {k: c[k] for k in STATUSES}, dict(per_obj_d[name]))
               for name, c in per_obj.items()]
    first_addr = {}
    for r in rows:
        a = r.new_addr if r.new_addr is not None else r.old_addr
        first_addr.setdefault(r.object or "(global)", a)
    objects.sort(key=lambda d: first_addr.get(d.object, 0))

    exec_secs = {sec.name for sec in new.sections if sec.executable}
    text_f = [r for r in rows if r.kind == "func" and r.new_addr is not None and r.section in exec_secs]
    text_moved = Counter(r.new_addr - r.old_addr for r in rows if r.status == "moved" and r.section in exec_secs)
    origins, prop = _origins(old, new, okeys, nkeys, status)
    notes = old.notes + new.notes
    if old.mapping != new.mapping:
        notes.append(f"objects from the plan on one side only: symbols matched by STT_FILE on both")
    return SymdiffResult(
        old=_side(old), new=_side(new), mapping=mode, counts=counts, moved_by=dict(moved_by),
        page_quantized=bool(text_moved) and all(d % PAGE == 0 for d in text_moved),
        text_moved_by=dict(text_moved),
        origins=origins, propagation=prop,
        text_bytes=sum(r.new_size or 0 for r in text_f),
        text_unchanged_bytes=sum(r.new_size or 0 for r in text_f if r.status == "unchanged"),
        text_functions=len(text_f),
        text_unchanged_functions=sum(1 for r in text_f if r.status == "unchanged"),
        objects=objects, symbols=rows,
        compared={"identical_bytes": st.identical, "same_after_masking": st.masked, "address_fields": st.fields,
                  "llvm_objdump": st.objdump},
        notes=notes,
    )


def _kind_of(section: str) -> str | None:
    for kind in ("text", "rodata", "data", "bss"):
        if section == f".{kind}" or section.startswith(f".{kind}."):
            return kind
    return None


def _unit(plan: LayoutPlan | None, kind: str | None, obj: str):
    """(index, unit, previous object) of obj's first unit of a kind in a plan."""
    if plan is None or kind is None:
        return None
    units = plan.groups.get(kind, [])
    for i, u in enumerate(units):
        if u.object == obj:
            return i, u, units[i - 1].object if i else None
    return None


def _layout_cause(old: Image, new: Image, section: str, obj: str) -> str | None:
    """How the two plans place ``obj`` differently, or None when they agree (or are missing)."""
    if old.plan is None or new.plan is None:
        return None
    kind = _kind_of(section)
    a, b = _unit(old.plan, kind, obj), _unit(new.plan, kind, obj)
    what = f"layout {old.plan.layout}:{old.plan.seed} -> {new.plan.layout}:{new.plan.seed}" \
        if old.plan.layout != new.plan.layout or old.plan.seed != new.plan.seed else "plan"
    if a is None or b is None:
        return None
    (_, ua, pa), (_, ub, pb) = a, b
    if ua.align != ub.align:
        return f"{what}: {obj} aligned to {ub.align} (was {ua.align})"
    if ua.gap != ub.gap:
        return f"{what}: gap before {obj} is {ub.gap} bytes (was {ua.gap})"
    if pa != pb:
        return f"{what}: {obj} now follows {pb or 'nothing'} (was {pa or 'nothing'})"
    if old.plan.groups.get(kind) != new.plan.groups.get(kind):
        return f"{what}: the {kind} units before {obj} differ"
    return None


def _origins(old: Image, new: Image, okeys: dict, nkeys: dict, status: dict):
    """Per output section: where placement starts to differ, and why; the propagation of the first."""
    cands: dict[str, list[tuple[int, str, Sym | None, Sym | None]]] = defaultdict(list)
    for k, s in status.items():
        o, n = okeys.get(k), nkeys.get(k)
        if s == "added":
            cands[n.sec.name].append((n.addr, s, None, n))
        elif s == "removed":
            cands[o.sec.name].append((o.addr, s, o, None))
        elif o.addr != n.addr:
            cands[n.sec.name].append((min(o.addr, n.addr), s, o, n))
    old_objs = {s.obj for s in old.syms}
    new_objs = {s.obj for s in new.syms}
    exec_secs = {s.name for s in new.sections if s.executable} | {s.name for s in old.sections if s.executable}
    old_by_sec: dict[str, list[Sym]] = defaultdict(list)
    for s in old.syms:
        if s.size:
            old_by_sec[s.sec.name].append(s)
    for lst in old_by_sec.values():
        lst.sort(key=lambda s: s.addr)
    origins = []
    for sec, lst in cands.items():
        lst.sort(key=lambda c: (c[0], {"added": 0, "removed": 1}.get(c[1], 2)))
        addr, s, o, n = lst[0]
        ref = n or o
        obj = ref.obj
        if s == "added":
            if obj and obj not in old_objs:
                size = sum(x.size for x in new.syms if x.obj == obj and x.sec.name == sec)
                cause, resp, detail = "added-object", obj, f"object {obj} is new ({size} bytes of symbols in {sec})"
            else:
                cause, resp, detail = "added-symbol", f"{obj}:{ref.name}" if obj else ref.name, \
                    f"new {ref.kind} {ref.name} ({ref.size} bytes)"
        elif s == "removed":
            if obj and obj not in new_objs:
                cause, resp, detail = "removed-object", obj, f"object {obj} is gone"
            else:
                cause, resp, detail = "removed-symbol", f"{obj}:{ref.name}" if obj else ref.name, \
                    f"{ref.kind} {ref.name} ({ref.size} bytes) is gone"
        else:
            olist = old_by_sec.get(o.sec.name, [])
            i = bisect.bisect_left([x.addr for x in olist], addr) - 1
            prev = olist[i] if i >= 0 else None
            ps = status.get(prev.key) if prev is not None else None
            layout = _layout_cause(old, new, sec, obj)
            osec = next((x for x in old.sections if x.name == sec), None)
            nsec = next((x for x in new.sections if x.name == sec), None)
            first = olist[0].addr if olist else None
            if osec and nsec and osec.addr != nsec.addr and (first is None or addr <= first):
                cause, resp = "section", sec
                detail = (f"{sec} starts at {nsec.addr:#x} (was {osec.addr:#x}): "
                          f"what is placed before it changed size")
            elif ps == "resized":
                pn = nkeys[prev.key]
                grew = pn.size - prev.size
                cause, resp = "resized", f"{prev.obj}:{prev.name}" if prev.obj else prev.name
                detail = f"{prev.name} {'grew' if grew > 0 else 'shrank'} by {abs(grew)} bytes ({prev.size} -> {pn.size})"
            elif layout:
                cause, resp, detail = "layout", obj or ref.name, layout
            else:
                cause, resp = "padding", obj or ref.name
                detail = f"the bytes before {ref.name} changed (alignment, padding or unlabelled code/data)"
        origins.append(ShiftOrigin(sec, addr, ref.name, obj, cause, resp, detail))
    origins.sort(key=lambda g: (g.section not in exec_secs, g.address))
    prop = None
    if origins:
        g = origins[0]
        matched = sorted(((okeys[k], nkeys[k]) for k, s in status.items() if s not in ("added", "removed")
                          and nkeys[k].sec.name == g.section and max(okeys[k].addr, nkeys[k].addr) >= g.address),
                         key=lambda p: p[0].addr)
        moved = [(o, n) for o, n in matched if o.addr != n.addr]
        stayed = [(o, n) for o, n in matched if o.addr == n.addr]
        absorbed = None
        if moved:
            after = [o for o, n in stayed if o.addr > moved[0][0].addr]
            absorbed = after[0].name if after else None
        prop = Propagation(g.section, len(moved), len(stayed), g.address,
                           max((n.addr for _, n in moved), default=g.address),
                           not stayed, absorbed)
    return origins, prop


# -- text ------------------------------------------------------------------------------------------

def _hexd(d: int) -> str:
    """A shift in bytes, signed, with whole pages said so: ``+8192 (2 pages)``."""
    pages = f" ({abs(d) // PAGE} page{'s' if abs(d) != PAGE else ''})" if d and d % PAGE == 0 else ""
    return f"{'+' if d >= 0 else '-'}{abs(d)}{pages}"


def summary_lines(r: SymdiffResult) -> list[str]:
    """The short human summary."""
    c = r.counts
    lines = [f"old: {r.old.label}" + (f"  [{r.old.layout}, plan {r.old.plan_id}]" if r.old.layout else ""),
             f"new: {r.new.label}" + (f"  [{r.new.layout}, plan {r.new.plan_id}]" if r.new.layout else "")]
    verdict = "placement identical" if r.placement_identical else "placement differs"
    lines.append(f"{verdict}: {r.old.symbols} -> {r.new.symbols} symbols: "
                 + ", ".join(f"{c[k]} {k}" for k in STATUSES))
    if c["moved"]:
        common = sorted(r.moved_by.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
        lo, hi = min(r.moved_by), max(r.moved_by)
        pages = ("code moved by whole pages only" if r.page_quantized else "code not page-quantized") \
            if r.text_moved_by else "no code moved"
        rng = _hexd(lo) if lo == hi else f"{_hexd(lo)} .. {_hexd(hi)}"
        lines.append(f"moved: {c['moved']} symbols by {rng} bytes ({pages}); most: "
                     + ", ".join(f"{_hexd(d)} x{n}" for d, n in common))
    for i, g in enumerate(r.origins[:4]):
        head = "shift origin" if i == 0 else "  also in"
        lines.append(f"{head} {g.section} at {g.address:#x} ({g.object + ':' if g.object else ''}{g.symbol}): "
                     f"{g.cause}: {g.detail}")
    if len(r.origins) > 4:
        lines.append(f"  ... and {len(r.origins) - 4} more sections")
    p = r.propagation
    if p is not None:
        total = p.moved + p.stayed
        if p.to_end:
            lines.append(f"propagation: every symbol above the origin in {p.section} moved ({p.moved}), "
                         f"up to {p.last:#x}")
        else:
            lines.append(f"propagation: {p.moved} of {total} symbols above the origin in {p.section} moved, "
                         f"up to {p.last:#x}" + (f"; back in place from {p.absorbed_at}" if p.absorbed_at else ""))
    if r.text_bytes:
        lines.append(f"text unchanged: {100 * r.text_unchanged_share:.1f}% of function bytes "
                     f"({r.text_unchanged_functions} of {r.text_functions} functions in place with the same code)")
    k = r.compared
    lines.append(f"code compared: {k['identical_bytes']} identical, {k['same_after_masking']} same after masking "
                 f"{k['address_fields']} address fields, {k['llvm_objdump']} by llvm-objdump; objects from "
                 + ("the layout plans" if r.mapping == "plan" else "STT_FILE symbols"))
    lines.extend(f"note: {n}" for n in r.notes)
    return lines


def print_text(console, r: SymdiffResult, symbols: bool = False) -> None:
    from rich.markup import escape
    from rich.table import Table

    for line in summary_lines(r):
        console.print(line, markup=False)
    t = Table(box=None, pad_edge=False, title="per object", title_justify="left")
    t.add_column("object")
    for k in ("symbols", *STATUSES):
        t.add_column(k, justify="right")
    t.add_column("shift", justify="left")
    for o in r.objects:
        deltas = sorted(o.deltas.items(), key=lambda kv: -kv[1])
        shift = ", ".join(_hexd(d) for d, _ in deltas[:2]) + (" ..." if len(deltas) > 2 else "")
        t.add_row(escape(o.object), str(o.total), *[str(o.counts[k] or "") for k in STATUSES], shift)
    console.print(t)
    if symbols:
        t = Table(box=None, pad_edge=False, title="per symbol (all but unchanged)", title_justify="left")
        for col, j in (("status", "left"), ("symbol", "left"), ("object", "left"), ("old", "right"),
                       ("new", "right"), ("shift", "right"), ("size", "right")):
            t.add_column(col, justify=j)
        for s in r.symbols:
            if s.status == "unchanged":
                continue
            size = str(s.new_size if s.new_size is not None else s.old_size)
            if s.status == "resized":
                size = f"{s.old_size} -> {s.new_size}"
            t.add_row(s.status, escape(s.name), escape(s.object), f"{s.old_addr:#x}" if s.old_addr is not None else "",
                      f"{s.new_addr:#x}" if s.new_addr is not None else "",
                      _hexd(s.delta) if s.delta else "", size)
        console.print(t)
