"""Reading one side: an ELF image, its sections and symbols, and what an address in it names."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import elfinfo
from ..elfinfo import SHF_ALLOC, SHF_EXECINSTR, SHN_ABS, SHT_NOBITS, STT_FILE
from ..errors import LayoutbenchError
from ..layout import PAGE, LayoutPlan

MASK64 = (1 << 64) - 1
SHF_TLS = 0x400
STT_TLS = 6
STT = {0: "label", 1: "object", 2: "func", 6: "object", 10: "func"}  # NOTYPE, OBJECT, FUNC, TLS, GNU_IFUNC
BIND = elfinfo.BIND


# -- reading an image ------------------------------------------------------------------------------

@dataclass(slots=True)
class Section:
    index: int
    name: str
    addr: int
    size: int
    offset: int
    nobits: bool
    executable: bool


@dataclass(slots=True)
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
    tls: bool = False  #: STT_TLS: addr is its offset in the TLS block, not an address
    placed: bool = False  #: its object comes from the plan's units (not from STT_FILE symbols)


@dataclass
class Image:
    """One side of a diff: an ELF image, its symbols, and what we know of how it was built."""

    path: Path
    label: str
    sections: list[Section]
    syms: list[Sym]
    data: bytes
    plan: LayoutPlan | None = None
    plan_id: str | None = None  #: "0x1234abc": the plan's id (as plan.json records it)
    objects: dict | None = None  #: plan object name → elfinfo.ObjectInfo, when the objects were found
    mapping: str = "file"  #: "plan": objects from the replayed plan; "file": from STT_FILE symbols
    notes: list[str] = field(default_factory=list)
    markers: dict = field(default_factory=dict)  #: __lb_* marker → (address, section name)
    absolute: dict = field(default_factory=dict)  #: value → name of an absolute symbol (``__lb_plan_id``)
    lo: int = 0
    hi: int = 0
    tls_base: int = 0  #: where the TLS initialization image starts (the lowest SHF_TLS section, = PT_TLS p_vaddr)
    order: str = "little"  #: the file's byte order ("little", "big"): how an address in its bytes is read

    def __post_init__(self):
        alloc = sorted((s for s in self.sections if s.size), key=lambda s: s.addr)
        self.lo = min((s.addr for s in alloc), default=0)
        self.hi = max((s.addr + s.size for s in alloc), default=0)
        self._sec_starts = [s.addr for s in alloc]
        self._alloc = alloc
        # a TLS symbol's value is no address: it names none (nor is one of its neighbours)
        sized = sorted((s for s in self.syms if s.size and not s.tls), key=lambda s: (s.addr, -s.size, s.name))
        self._sized = sized
        self._sized_addr = [s.addr for s in sized]
        self._at: dict[int, list[tuple]] = defaultdict(list)  #: address → keys of what starts there
        self._at_addr: list[int] = []  #: the addresses of _at, sorted
        self._cache: dict[int, frozenset | None] = {}
        self.by_key: dict[tuple, Sym] = {}

    def offset_of(self, s: Sym) -> int:
        """Where a symbol's bytes start in the file.  A TLS symbol's value is its offset in the TLS
        block, whose initialization image (.tdata, then .tbss) is laid out from tls_base on, so its
        bytes (its initial value) are at tls_base + value in its section."""
        return s.sec.offset + (s.addr + self.tls_base if s.tls else s.addr) - s.sec.addr

    def bytes_of(self, s: Sym) -> bytes | None:
        if s.sec.nobits or not s.size:
            return None
        off = self.offset_of(s)
        return self.data[off:off + s.size] if off >= 0 else None

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
            if not s.tls:
                self._at[s.addr].append(s.key)
        for n, (a, _) in self.markers.items():
            self._at[a].append(("@marker", n))
        self.by_key = {s.key: s for s in self.syms}
        self._at_addr = sorted(self._at)
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
                    if sec.executable:  # data in no symbol is named by its bytes only
                        toks |= self._label(sec, addr)
            out = frozenset(toks)
        self._cache[addr] = out
        return out

    def _label(self, sec: Section, addr: int) -> set:
        """An nm-style name for an address in code in no symbol: every symbol (or marker) at the nearest
        address at or before it in its section, + the offset; the section + offset when none is.
        Code with no symbol of its own (.altinstr_aux's static_cpu_has() stubs, jumped to from
        functions) is named so, whatever bytes it holds (its own jumps back differ)."""
        i = bisect.bisect_right(self._at_addr, addr) - 1
        if i >= 0 and self._at_addr[i] >= sec.addr:
            a = self._at_addr[i]
            return {("@label", k, addr - a) for k in self._at[a]}
        return {("@label", ("@section", sec.name), addr - sec.addr)}

    def _content(self, sec: Section, addr: int):
        """Bytes at an unlabelled address (merged strings, constants, jump tables), addresses resolved."""
        off = sec.offset + addr - sec.addr
        chunk = bytes(self.data[off:off + 32])
        if len(chunk) >= 8 and self.lo <= int.from_bytes(chunk[:8], self.order) <= self.hi:
            out = []
            for j in range(0, len(chunk) - 7, 8):  # a table of addresses (a switch's jump table)
                v = int.from_bytes(chunk[j:j + 8], self.order)
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


#: e_machine values a user is likely to meet, by name
MACHINES = {3: "i386", 8: "MIPS", 20: "PowerPC", 21: "PowerPC 64", 22: "s390", 40: "ARM", 62: "x86-64", 183: "AArch64",
            243: "RISC-V", 258: "LoongArch"}


def kind_of(img: Image) -> tuple[int, int, int, str]:
    """(class, byte order, machine, kind) of an image's ELF header: what must be equal for two
    images to be diffed (kind: "object" for a relocatable .o, "core", else "linked": an
    executable or a shared object; the helper native/symdiff tells them apart by the same rule)."""
    d = img.data
    little = d[5] == 1
    e_type = int.from_bytes(d[16:18], "little" if little else "big")
    machine = int.from_bytes(d[18:20], "little" if little else "big")
    return d[4], d[5], machine, {1: "object", 4: "core"}.get(e_type, "linked")


def describe_kind(k: tuple[int, int, int, str]) -> str:
    cls, order, machine, kind = k
    name = MACHINES.get(machine, f"machine {machine}")
    return (f"{name} {'ELF32' if cls == 1 else 'ELF64'} {'little' if order == 1 else 'big'}-endian "
            + {"object": "relocatable object (.o)", "core": "core dump", "linked": "linked image"}[kind])


def check_comparable(old: Image, new: Image) -> None:
    """Two images of one machine and kind, or one line naming both: the addresses and code of an
    x86-64 image and an AArch64 one, or of a .o and a linked image, say nothing of each other."""
    a, b = kind_of(old), kind_of(new)
    if a != b:
        raise LayoutbenchError(f"{new.path} is a {describe_kind(b)} and {old.path} a {describe_kind(a)}: symdiff "
                               f"compares two images of one machine and kind (two builds of one program); give two "
                               f"of one kind")


def read_image(path: Path, label: str | None = None) -> Image:
    """Sections and symbols of a linked ELF image, read once (:func:`elfinfo.read_elf`).  Errors are one line."""
    elf = elfinfo.read_elf(path)
    path = elf.path
    sh = elf.sh
    flags, types = sh["flags"].tolist(), sh["type"].tolist()
    addr, size, offset = sh["addr"].tolist(), sh["size"].tolist(), sh["offset"].tolist()
    sections = [Section(i, elf.names[i], addr[i], size[i], offset[i], types[i] == SHT_NOBITS,
                        bool(flags[i] & SHF_EXECINSTR)) for i in range(len(types)) if flags[i] & SHF_ALLOC]
    tab = elf.symtab()
    if tab is None:
        raise LayoutbenchError(f"{path}: has no symbol table (.symtab); it is stripped -- "
                               f"give the unstripped image (e.g. vmlinux, not bzImage)")
    raw, strtab = tab
    raw = raw[1:]
    t = raw["info"] & 0xF
    typed = np.isin(t, list(STT)) & (raw["name"] != 0)
    absolute = np.flatnonzero(typed & (raw["shndx"] == SHN_ABS) & (raw["value"] >= 0x1000))
    keep = np.flatnonzero(typed & np.isin(raw["shndx"], [s.index for s in sections]))
    files = np.flatnonzero(t == STT_FILE)
    absval: dict[int, set[str]] = {}
    for n, v in zip(elfinfo.strings(strtab, raw["name"][absolute].tolist()), raw["value"][absolute].tolist()):
        absval.setdefault(v, set()).add(n)
    fnames = [""] + elfinfo.strings(strtab, raw["name"][files].tolist())
    kept = raw[keep]
    by_index = {s.index: s for s in sections}
    syms: list[Sym] = []
    markers: dict[str, tuple[int, str]] = {}
    for n, inf, idx, v, sz, f in zip(elfinfo.strings(strtab, kept["name"].tolist()), kept["info"].tolist(),
                                     kept["shndx"].tolist(), kept["value"].tolist(), kept["size"].tolist(),
                                     np.searchsorted(files, keep).tolist()):
        if not n or n.startswith((".L", "$")):
            continue
        if n.startswith("__lb_"):  # layoutbench's own markers: used to map objects, not diffed
            markers[n] = (v, by_index[idx].name)
            continue
        bind = BIND.get(inf >> 4, "global")
        syms.append(Sym(n, v, sz, STT[inf & 0xF], bind, by_index[idx], fnames[f] if bind == "local" else "",
                        tls=inf & 0xF == STT_TLS))
    img = Image(path, label or str(path), sorted(sections, key=lambda s: (s.addr, s.index)), syms, elf.data,
                order="little" if elf.little else "big")
    img.tls_base = min((addr[i] for i in range(len(types)) if flags[i] & SHF_ALLOC and flags[i] & SHF_TLS),
                       default=0)
    img.markers = markers
    img.absolute = {v: min(names) for v, names in absval.items() if len(names) == 1}
    return img
