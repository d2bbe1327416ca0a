"""ELF facts: the sections and symbols of objects and linked images.

Everything here reads a file once and returns plain data, so the layout, placement
and symdiff code never parses ELF itself.  :func:`read_elf` is the one reader: it reads the
file (a regular file only; never mapped, so that a file cut short while it is read is an error,
not SIGBUS) and decodes the section headers and the symbol table with numpy, whole tables at a
time (a vmlinux has tens of thousands of symbols; a pyelftools symbol object costs ~25 us).
Hostile files get one line each: sections past the end of the file or of the address space,
string tables without a final NUL, names past their table or adding up to more than it holds
(:func:`check_strings`: a 16 MB table without a NUL would make 2000 names 32 GB), symbols that
run past 2**64.
pyelftools stays as the reference: :func:`read_image_reference` and the slow path of
:func:`read_object` read the same facts one symbol at a time, and the tests check that both
agree on real images.  pyelftools is imported only on those paths.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import LayoutbenchError
from .fmt import printable

SHF_ALLOC, SHF_EXECINSTR, SHF_MERGE = 0x2, 0x4, 0x10
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 0, 1, 2, 3, 8
MASK64 = (1 << 64) - 1
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFF00, 0xFFF1, 0xFFF2, 0xFFFF
STT_OBJECT, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS = 1, 3, 4, 5, 6
STB_GLOBAL, STB_WEAK = 1, 2
NATIVE_LITTLE = sys.byteorder == "little"
#: symbol type and binding names as pyelftools gives them (without STT_/STB_, lower case)
STT_NAMES = {0: "notype", 1: "object", 2: "func", 3: "section", 4: "file", 5: "common", 6: "tls", 7: "num",
             8: "relc", 9: "srelc", 10: "loos", 12: "hios", 13: "loproc", 15: "hiproc"}
STB_NAMES = {0: "local", 1: "global", 2: "weak", 3: "num", 10: "loos", 12: "hios", 13: "loproc", 15: "hiproc"}


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int  #: offset in its section (objects) or address (images)
    size: int
    kind: str  #: ``func``, ``object``, ``notype``...
    bind: str  #: ``global``, ``local``, ``weak``
    section: str  #: name of the section that defines it


@dataclass
class InputSection:
    """A section of an object file, as the linker sees it."""

    name: str
    size: int
    align: int
    flags: int
    symbols: list[Symbol] = field(default_factory=list)

    @property
    def mergeable(self) -> bool:
        return bool(self.flags & SHF_MERGE)


@dataclass
class ObjectInfo:
    """One object file: its allocatable sections in file order, and the data globals it defines."""

    path: str  #: as given on the linker command line
    sections: list[InputSection]
    #: (name, tentative) of each defined non-local data symbol (STT_OBJECT, STT_TLS, STT_COMMON) in a
    #: section that is not code, or common; tentative: weak or common (another definition may win)
    data_globals: list[tuple[str, bool]] = field(default_factory=list)


def open_file(path: Path):
    """``open(path, "rb")`` with the user's errors as one line each.  Only a regular file is opened:
    a FIFO would block until something writes to it, a device never end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LayoutbenchError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise LayoutbenchError(f"{path}: is a directory, not an ELF file") from None
    except OSError as e:
        raise LayoutbenchError(f"{path}: cannot read ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
                "not a regular file")
        raise LayoutbenchError(f"{path}: is {what}, not an ELF file; give the image's file")
    return os.fdopen(fd, "rb")


def _open(path: Path):
    """The file and pyelftools' ELFFile of it (the reference reader)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    f = open_file(path)
    try:
        return f, ELFFile(f)
    except ELFError as e:
        f.close()
        raise LayoutbenchError(f"{path}: not an ELF file ({e})") from None


def _sym(s, secname: str) -> Symbol:
    return Symbol(
        name=s.name,
        value=s["st_value"],
        size=s["st_size"],
        kind=s["st_info"]["type"].removeprefix("STT_").lower(),
        bind=s["st_info"]["bind"].removeprefix("STB_").lower(),
        section=secname,
    )


BIND = {0: "local", 1: "global", 2: "weak", 10: "global"}  # STB_GNU_UNIQUE reads as global
_OBJECTS: dict[tuple, ObjectInfo] = {}


def _shdr_dtype(elfclass: int, e: str) -> np.dtype:
    w = "u8" if elfclass == 64 else "u4"
    return np.dtype([("name", e + "u4"), ("type", e + "u4"), ("flags", e + w), ("addr", e + w),
                     ("offset", e + w), ("size", e + w), ("link", e + "u4"), ("info", e + "u4"),
                     ("align", e + w), ("entsize", e + w)])


def symtab_dtype(elfclass: int, little: bool) -> np.dtype:
    """One ELF symbol-table entry (Elf64_Sym or Elf32_Sym) as a numpy record."""
    e = "<" if little else ">"
    if elfclass == 64:
        return np.dtype([("name", e + "u4"), ("info", "u1"), ("other", "u1"), ("shndx", e + "u2"),
                         ("value", e + "u8"), ("size", e + "u8")])
    return np.dtype([("name", e + "u4"), ("value", e + "u4"), ("size", e + "u4"), ("info", "u1"),
                     ("other", "u1"), ("shndx", e + "u2")])


def string_at(tab: bytes, off: int) -> str:
    """The NUL-terminated string at ``off`` of a string table."""
    end = tab.find(b"\0", off)
    return tab[off:end if end >= 0 else None].decode("utf-8", "replace")


def strings(tab: bytes, offsets: list[int]) -> list[str]:
    """:func:`string_at` of each offset: the table decoded once, its NULs found with numpy.  An offset
    at or past the table's end is "" (:func:`check_strings` refuses such tables first)."""
    if not tab.isascii():
        return [string_at(tab, off) if off < len(tab) else "" for off in offsets]
    nul = np.append(np.flatnonzero(np.frombuffer(tab, np.uint8) == 0), len(tab))
    ends = nul[np.minimum(np.searchsorted(nul, offsets), len(nul) - 1)].tolist()
    text = tab.decode("ascii")
    return [text[a:b] for a, b in zip(offsets, ends)]


#: What the names of one string table may add up to beyond twice its size (names share bytes when
#: one is the tail of another, or when symbols repeat a name): more is a table built to make its
#: reader allocate without bound (2000 symbols named into 16 MB without a NUL are 32 GB of names).
NAME_SLACK = 64 << 20


def check_strings(path: Path, what: str, tab: bytes, offsets: np.ndarray) -> None:
    """Refuse a string table whose names cannot be read as a linker wrote them: one that does not
    end with a NUL, a name that starts past its end, or names that add up to more than twice its
    size + :data:`NAME_SLACK`.  The native helper (native/symdiff/src/elf.rs ``check_strings``)
    refuses the same tables."""
    n = len(tab)
    if n and tab[-1] != 0:
        raise LayoutbenchError(f"{path}: corrupt ELF: {what} does not end with a NUL byte")
    off = offsets[offsets != 0].astype(np.int64)
    if not off.size:
        return
    past = np.flatnonzero(off >= n)
    if past.size:
        raise LayoutbenchError(f"{path}: corrupt ELF: a name starts at byte {int(off[past[0]])} of {what}, "
                               f"which has {n} bytes")
    nul = np.flatnonzero(np.frombuffer(tab, np.uint8) == 0)
    total = int((nul[np.searchsorted(nul, off)] - off).sum())
    if total > 2 * n + NAME_SLACK:
        raise LayoutbenchError(f"{path}: corrupt ELF: the names in {what} add up to {total} bytes, "
                               f"more than a {n}-byte table can hold")


@dataclass
class Elf:
    """An ELF file read once: its bytes, section headers and section names.

    ``sh`` holds the section headers as a numpy record array (fields name, type, flags, addr,
    offset, size, link, info, align, entsize), converted to native byte order when the file's
    is not.  Every section that has bytes in the file (not SHT_NOBITS or SHT_NULL) lies in it."""

    path: Path
    data: bytes
    elfclass: int  #: 32 or 64
    little: bool
    sh: np.ndarray
    names: list[str]  #: section names, by index

    def section(self, i: int) -> bytes:
        """The bytes of section i (empty for SHT_NOBITS and SHT_NULL)."""
        if int(self.sh["type"][i]) in (SHT_NOBITS, SHT_NULL):
            return b""
        o = int(self.sh["offset"][i])
        return self.data[o:o + int(self.sh["size"][i])]

    def symtab(self) -> tuple[np.ndarray, bytes] | None:
        """(the .symtab entries as a native-order numpy record array, its string table), or None
        when the file has no symbol table.  Entry 0 (the null symbol) is included.  A string
        table that is not one, names past it and symbols that run past the end of the address
        space are refused."""
        tabs = np.flatnonzero(self.sh["type"] == SHT_SYMTAB)
        if not tabs.size:
            return None
        i = int(tabs[-1])
        dt = symtab_dtype(self.elfclass, self.little)
        raw = self.section(i)
        raw = np.frombuffer(raw, dtype=dt, count=len(raw) // dt.itemsize)
        link = int(self.sh["link"][i])
        if link >= len(self.names):
            raise LayoutbenchError(f"{self.path}: corrupt ELF: the symbol table's string table is section {link}, "
                                   f"the file has {len(self.names)}")
        if int(self.sh["type"][link]) != SHT_STRTAB:
            raise LayoutbenchError(f"{self.path}: corrupt ELF: the symbol table's string table, section {link} "
                                   f"({printable(self.names[link]) or 'no name'}), is not a string table "
                                   f"(type {int(self.sh['type'][link])})")
        if self.little != NATIVE_LITTLE:  # numpy reads the file's order; convert only when it is not ours
            raw = raw.astype(raw.dtype.newbyteorder("="))
        strtab = self.section(link)
        check_strings(self.path, f"the symbol names' table {printable(self.names[link]) or link}", strtab, raw["name"])
        value, size = raw["value"].astype(np.uint64), raw["size"].astype(np.uint64)
        wraps = np.flatnonzero(size > np.uint64(MASK64) - value)
        if wraps.size:
            k = int(wraps[0])
            raise LayoutbenchError(f"{self.path}: corrupt ELF: symbol {k} ({printable(string_at(strtab, int(raw['name'][k])))}) "
                                   f"at {int(value[k]):#x} of {int(size[k])} bytes runs past the end of the "
                                   f"address space")
        return raw, strtab


def read_file(path: Path) -> bytes:
    """The bytes of a regular file, read (not mapped: a mapped file that is cut short while it is
    read kills the process with SIGBUS), as many as it had when opened."""
    with open_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        return f.read(size)


def read_elf(path: Path) -> Elf:
    """Read an ELF file and decode its section headers.  Bad input is one line naming it."""
    path = Path(path)
    data = read_file(path)
    size = len(data)
    if data[:4] != b"\x7fELF":
        raise LayoutbenchError(f"{path}: not an ELF file (no ELF magic)")
    if size < 0x34 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise LayoutbenchError(f"{path}: truncated or corrupt ELF header ({size} bytes, class {data[4] if size > 4 else '?'})")
    elfclass, little = 64 if data[4] == 2 else 32, data[5] == 1
    e = "<" if little else ">"
    if elfclass == 64:
        if size < 0x40:
            raise LayoutbenchError(f"{path}: truncated ELF header ({size} bytes)")
        shoff, = np.frombuffer(data, e + "u8", 1, 0x28).tolist()
        shentsize, shnum, shstrndx = np.frombuffer(data, e + "u2", 3, 0x3A).tolist()
    else:
        shoff, = np.frombuffer(data, e + "u4", 1, 0x20).tolist()
        shentsize, shnum, shstrndx = np.frombuffer(data, e + "u2", 3, 0x2E).tolist()
    dt = _shdr_dtype(elfclass, e)
    if shoff == 0:
        shnum = 0
    elif shnum == 0 or shstrndx == SHN_XINDEX:  # extended numbering: the real values are in section 0
        if shoff + dt.itemsize > size:
            raise LayoutbenchError(f"{path}: truncated ELF: section headers start at byte {shoff}, the file has {size}")
        first = np.frombuffer(data, dt, 1, shoff)
        shnum = shnum or int(first["size"][0])
        shstrndx = int(first["link"][0]) if shstrndx == SHN_XINDEX else shstrndx
    if shnum and shentsize != dt.itemsize:
        raise LayoutbenchError(f"{path}: corrupt ELF: section header size {shentsize}, expected {dt.itemsize}")
    if shoff + shnum * dt.itemsize > size:
        raise LayoutbenchError(f"{path}: truncated ELF: section headers end at byte "
                               f"{shoff + shnum * dt.itemsize}, the file has {size}")
    sh = np.frombuffer(data, dt, shnum, shoff)
    if little != NATIVE_LITTLE:
        sh = sh.astype(_shdr_dtype(elfclass, "="))
    names = [""] * shnum
    if shnum:
        if shstrndx >= shnum:
            raise LayoutbenchError(f"{path}: corrupt ELF: section names are in section {shstrndx}, "
                                   f"the file has {shnum}")
        off, sz = sh["offset"].astype(np.uint64), sh["size"].astype(np.uint64)
        end = np.uint64(size)
        outside = (off > end) | (sz > end - np.minimum(off, end))  # offset + size > file size, without wrapping
        bad = np.flatnonzero((sh["type"] != SHT_NOBITS) & (sh["type"] != SHT_NULL) & outside)
        if bad.size:
            i = int(bad[0])
            o, n = int(sh["offset"][shstrndx]), int(sh["size"][shstrndx])
            tab = data[o:o + n] if o + n <= size else b""
            at = int(sh["name"][i])
            name = string_at(tab, at) if at < len(tab) else ""
            raise LayoutbenchError(f"{path}: truncated ELF: section {printable(name) or i} ends at byte "
                                   f"{int(sh['offset'][i]) + int(sh['size'][i])}, the file has {size}")
        wraps = np.flatnonzero(sz > np.uint64(MASK64) - sh["addr"].astype(np.uint64))
        if wraps.size:
            i = int(wraps[0])
            raise LayoutbenchError(f"{path}: corrupt ELF: section {i} at {int(sh['addr'][i]):#x} of {int(sz[i])} bytes "
                                   f"runs past the end of the address space")
        if int(sh["type"][shstrndx]) != SHT_STRTAB:
            raise LayoutbenchError(f"{path}: corrupt ELF: the section names' table, section {shstrndx}, is not a "
                                   f"string table (type {int(sh['type'][shstrndx])})")
        o = int(sh["offset"][shstrndx])
        tab = data[o:o + int(sh["size"][shstrndx])]
        check_strings(path, "the section names' table", tab, sh["name"])
        names = strings(tab, sh["name"].tolist())
    return Elf(path, data, elfclass, little, sh, names)


def read_object(path: Path, name: str) -> ObjectInfo:
    """Allocatable sections of a relocatable object, with the symbols each defines.

    Read with :func:`read_elf` (numpy over the section headers and the symbol table: an object
    built with -ffunction-sections has hundreds of sections, and a kernel thousands of objects).
    Cached by path, modification time and size.  :func:`read_object_reference` reads the same with
    pyelftools.
    """
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        raise LayoutbenchError(f"{path}: no such file") from None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _OBJECTS:
        _OBJECTS[key] = _read_object(read_elf(path), name)
    return _OBJECTS[key]


def _read_object(elf: Elf, name: str) -> ObjectInfo:
    sh = elf.sh
    keep = np.flatnonzero((sh["flags"] & SHF_ALLOC != 0) & np.isin(sh["type"], (SHT_PROGBITS, SHT_NOBITS)))
    secs: dict[int, InputSection] = {}
    size = sh["size"].tolist()
    for i, fl, al in zip(keep.tolist(), sh["flags"][keep].tolist(), sh["align"][keep].tolist()):
        secs[i] = InputSection(elf.names[i], size[i], max(1, al), fl)
    tab = elf.symtab()
    data_globals: list[tuple[str, bool]] = []
    if tab is not None:
        raw, strtab = tab
        raw = raw[1:]
        data_globals = read_data_globals(raw, strtab, data_sections(elf))
        t = raw["info"] & 0xF
        want = np.flatnonzero(np.isin(raw["shndx"], keep) & (raw["name"] != 0) & (t <= 2))  # NOTYPE, OBJECT, FUNC
        raw = raw[want]
        for sname, inf, idx, val, sz in zip(strings(strtab, raw["name"].tolist()), raw["info"].tolist(),
                                            raw["shndx"].tolist(), raw["value"].tolist(), raw["size"].tolist()):
            if sname:
                sec = secs[idx]
                sec.symbols.append(Symbol(sname, val, sz, STT_NAMES[inf & 0xF], STB_NAMES.get(inf >> 4, "global"),
                                          sec.name))
    return ObjectInfo(name, [secs[i] for i in sorted(secs)], data_globals)


def data_sections(elf: Elf) -> np.ndarray:
    """Which of an object's sections are allocatable and not code (PROGBITS and NOBITS): a
    boolean per section index."""
    sh = elf.sh
    return (sh["flags"] & SHF_ALLOC != 0) & (sh["flags"] & SHF_EXECINSTR == 0) \
        & ((sh["type"] == SHT_PROGBITS) | (sh["type"] == SHT_NOBITS))


def read_data_globals(raw: np.ndarray, strtab: bytes, data_secs: np.ndarray) -> list[tuple[str, bool]]:
    """(name, tentative) of the data globals in the symbols ``raw`` of an object (without its null
    symbol), defined in a section ``data_secs`` says is data, or common (see
    :attr:`ObjectInfo.data_globals`).  Comparisons only (``np.isin`` costs more than a kernel
    object's whole symbol table at this size)."""
    t, b = raw["info"] & 0xF, raw["info"] >> 4
    raw = raw[((t == STT_OBJECT) | (t == STT_COMMON) | (t == STT_TLS)) & ((b == STB_GLOBAL) | (b == STB_WEAK))
              & (raw["name"] != 0)]
    if not len(raw):
        return []
    idx, n = raw["shndx"], len(data_secs)
    common = idx == SHN_COMMON
    raw = raw[common | ((idx < n) & data_secs[np.minimum(idx, n - 1)])]
    tentative = ((raw["info"] >> 4 == STB_WEAK) | (raw["shndx"] == SHN_COMMON)).tolist()
    return [(name, w) for name, w in zip(strings(strtab, raw["name"].tolist()), tentative) if name]


def read_object_reference(path: Path, name: str) -> ObjectInfo:
    """:func:`read_object` with pyelftools, one symbol at a time (the reference; not cached)."""
    from elftools.common.exceptions import ELFError

    f, elf = _open(path)
    try:
        secs: dict[int, InputSection] = {}
        order: list[int] = []
        for i, s in enumerate(elf.iter_sections()):
            if s["sh_flags"] & SHF_ALLOC and s["sh_type"] in ("SHT_PROGBITS", "SHT_NOBITS"):
                secs[i] = InputSection(s.name, s["sh_size"], max(1, s["sh_addralign"]), s["sh_flags"])
                order.append(i)
        symtab = elf.get_section_by_name(".symtab")
        data: list[tuple[str, bool]] = []
        if symtab is not None:
            for s in symtab.iter_symbols():
                idx = s["st_shndx"]
                if isinstance(idx, int) and idx in secs and s.name and \
                        s["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                    secs[idx].symbols.append(_sym(s, secs[idx].name))
                common = idx == "SHN_COMMON"
                if s.name and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK") and \
                        s["st_info"]["type"] in ("STT_OBJECT", "STT_COMMON", "STT_TLS") and \
                        (common or idx in secs and not secs[idx].flags & SHF_EXECINSTR):
                    data.append((s.name, s["st_info"]["bind"] == "STB_WEAK" or common))
        return ObjectInfo(name, [secs[i] for i in order], data)
    except ELFError as e:
        raise LayoutbenchError(f"{path}: corrupt ELF object ({e})") from None
    finally:
        f.close()


class ImageInfo:
    """A linked image: output sections and its symbol table.

    The symbols are held as columns (names, values, sizes, type and binding codes, section
    names, STT_FILE names); :attr:`symbols` makes :class:`Symbol` objects of them only when asked.
    It can also be made from a list of symbols (``ImageInfo(path, sections, symbols, files)``)."""

    def __init__(self, path: Path, sections: dict[str, tuple[int, int]], symbols: list[Symbol] | None = None,
                 files: list[str] | None = None, *, columns: dict | None = None):
        self.path = Path(path)
        self.sections = sections  #: name → (address, size)
        if columns is None:
            symbols = symbols or []
            columns = {"name": [s.name for s in symbols], "value": [s.value for s in symbols],
                       "size": [s.size for s in symbols], "kind": [s.kind for s in symbols],
                       "bind": [s.bind for s in symbols], "section": [s.section for s in symbols],
                       "file": files if files is not None else [""] * len(symbols)}
        self.columns = columns
        self._symbols = symbols
        self._addresses: dict[str, set[int]] | None = None
        self._first: dict[str, int] | None = None

    @property
    def symbols(self) -> list[Symbol]:
        """Defined symbols with addresses, in symbol-table order."""
        if self._symbols is None:
            c = self.columns
            self._symbols = list(map(Symbol, c["name"], c["value"], c["size"], c["kind"], c["bind"], c["section"]))
        return self._symbols

    @property
    def files(self) -> list[str]:
        """For each symbol: the STT_FILE name that precedes it ("" for globals)."""
        return self.columns["file"]

    def addresses(self) -> dict[str, set[int]]:
        """Symbol name → every address a symbol of that name has (static names repeat)."""
        if self._addresses is None:
            out: dict[str, set[int]] = {}
            for n, v in zip(self.columns["name"], self.columns["value"]):
                got = out.get(n)
                if got is None:
                    out[n] = {v}
                else:
                    got.add(v)
            self._addresses = out
        return self._addresses

    def symbol(self, name: str) -> Symbol:
        """The first symbol of that name in the symbol table."""
        if self._first is None:
            first: dict[str, int] = {}
            for i, n in enumerate(self.columns["name"]):
                first.setdefault(n, i)
            self._first = first
        i = self._first.get(name)
        if i is None:
            raise LayoutbenchError(f"{self.path}: no symbol {name!r}; was it linked with a layoutbench script?")
        c = self.columns
        return Symbol(c["name"][i], c["value"][i], c["size"][i], c["kind"][i], c["bind"][i], c["section"][i])


def read_image(path: Path) -> ImageInfo:
    """Sections and symbols of a linked image (kernel or executable), read with :func:`read_elf`.

    The same facts as :func:`read_image_reference` (pyelftools): every named symbol but
    sections, files and undefined ones; an absolute or common symbol's section is ``*ABS*``."""
    elf = read_elf(path)
    sh = elf.sh
    alloc = np.flatnonzero(sh["flags"] & SHF_ALLOC != 0).tolist()
    addr, size = sh["addr"].tolist(), sh["size"].tolist()
    sections = {elf.names[i]: (addr[i], size[i]) for i in alloc}
    tab = elf.symtab()
    if tab is None:
        raise LayoutbenchError(f"{path}: has no symbol table (stripped?); use an unstripped image")
    raw, strtab = tab
    t = raw["info"] & 0xF
    file_at = np.flatnonzero(t == STT_FILE)
    keep = np.flatnonzero((raw["name"] != 0) & (t != STT_SECTION) & (t != STT_FILE) & (raw["shndx"] != SHN_UNDEF))
    keep = keep[keep > 0]
    names = strings(strtab, raw["name"][keep].tolist())
    ok = [i for i, n in enumerate(names) if n]  # a name offset can point at an empty string
    if len(ok) != len(names):
        keep = keep[ok]
        names = [names[i] for i in ok]
    kept = raw[keep]
    info = kept["info"].tolist()
    bind = [STB_NAMES.get(b >> 4, str(b >> 4)) for b in info]
    secnames = elf.names + ["*ABS*"]
    nsec = len(elf.names)
    shndx = np.where(kept["shndx"] < nsec, kept["shndx"], nsec).tolist()
    # the STT_FILE symbol before each kept one (globals: "")
    fnames = [""] + strings(strtab, raw["name"][file_at].tolist())
    which = np.searchsorted(file_at, keep, "right").tolist()
    files = [fnames[w] if b == "local" else "" for w, b in zip(which, bind)]
    columns = {"name": names, "value": kept["value"].tolist(), "size": kept["size"].tolist(),
               "kind": [STT_NAMES.get(i & 0xF, str(i & 0xF)) for i in info], "bind": bind,
               "section": [secnames[i] for i in shndx], "file": files}
    return ImageInfo(path, sections, columns=columns)


def read_image_reference(path: Path) -> ImageInfo:
    """:func:`read_image` with pyelftools, one symbol at a time: the reference it is checked against."""
    from elftools.common.exceptions import ELFError

    f, elf = _open(path)
    try:
        sections = {
            s.name: (s["sh_addr"], s["sh_size"]) for s in elf.iter_sections() if s["sh_flags"] & SHF_ALLOC
        }
        symtab = elf.get_section_by_name(".symtab")
        if symtab is None:
            raise LayoutbenchError(f"{path}: has no symbol table (stripped?); use an unstripped image")
        names = {i: s.name for i, s in enumerate(elf.iter_sections())}
        symbols, files, current = [], [], ""
        for s in symtab.iter_symbols():
            t = s["st_info"]["type"]
            if t == "STT_FILE":
                current = s.name
                continue
            idx = s["st_shndx"]
            if not s.name or t == "STT_SECTION" or idx == "SHN_UNDEF":
                continue
            sym = _sym(s, names.get(idx, "*ABS*") if isinstance(idx, int) else "*ABS*")
            symbols.append(sym)
            files.append(current if sym.bind == "local" else "")
        return ImageInfo(path, sections, symbols, files)
    except ELFError as e:
        raise LayoutbenchError(f"{path}: corrupt or truncated ELF ({e})") from None
    finally:
        f.close()
