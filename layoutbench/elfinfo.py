"""ELF facts with pyelftools: the sections and symbols of objects and linked images.

Everything here reads a file once and returns plain data, so the layout, placement
and symdiff code never touches pyelftools directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from .errors import LayoutbenchError


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
        return bool(self.flags & SH_FLAGS.SHF_MERGE)


@dataclass
class ObjectInfo:
    """One object file: its allocatable sections in file order."""

    path: str  #: as given on the linker command line
    sections: list[InputSection]


def open_file(path: Path):
    """``open(path, "rb")`` with the user's errors as one line each."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise LayoutbenchError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise LayoutbenchError(f"{path}: is a directory, not an ELF file") from None
    except OSError as e:
        raise LayoutbenchError(f"{path}: cannot read ({e.strerror})") from None


def _open(path: Path):
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
SHF_ALLOC = 0x2
_OBJECTS: dict[tuple, ObjectInfo] = {}
_SHDR = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("addr", "<u8"), ("offset", "<u8"),
                  ("size", "<u8"), ("link", "<u4"), ("info", "<u4"), ("align", "<u8"), ("entsize", "<u8")])


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
    """:func:`string_at` of each offset: the table decoded once, its NULs found with numpy."""
    if not tab.isascii():
        return [string_at(tab, off) for off in offsets]
    nul = np.append(np.flatnonzero(np.frombuffer(tab, np.uint8) == 0), len(tab))
    ends = nul[np.searchsorted(nul, offsets)].tolist()
    text = tab.decode("ascii")
    return [text[a:b] for a, b in zip(offsets, ends)]


def read_object(path: Path, name: str) -> ObjectInfo:
    """Allocatable sections of a relocatable object, with the symbols each defines.

    ELF64 little-endian objects are read directly (numpy over the section headers and the
    symbol table: an object built with -ffunction-sections has hundreds of sections, and a
    kernel thousands of objects); anything else goes through pyelftools.  Cached by path,
    modification time and size.
    """
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        raise LayoutbenchError(f"{path}: no such file") from None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _OBJECTS:
        data = Path(path).read_bytes()
        fast = data[:4] == b"\x7fELF" and len(data) > 0x40 and data[4] == 2 and data[5] == 1
        _OBJECTS[key] = _read_object_fast(data, name) if fast else _read_object_slow(path, name)
    return _OBJECTS[key]


def _read_object_fast(data: bytes, name: str) -> ObjectInfo:
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    shstrndx = int.from_bytes(data[0x3E:0x40], "little")
    sh = np.frombuffer(data, dtype=_SHDR, count=shnum, offset=shoff)
    sh_offset, sh_size = sh["offset"].tolist(), sh["size"].tolist()
    strs = data[sh_offset[shstrndx]:sh_offset[shstrndx] + sh_size[shstrndx]]
    keep = np.flatnonzero((sh["flags"] & SHF_ALLOC != 0) & np.isin(sh["type"], (1, 8)))  # PROGBITS, NOBITS
    secs: dict[int, InputSection] = {}
    for i, nm, fl, al in zip(keep.tolist(), strings(strs, sh["name"][keep].tolist()), sh["flags"][keep].tolist(),
                             sh["align"][keep].tolist()):
        secs[i] = InputSection(nm, sh_size[i], max(1, al), fl)
    symtabs = np.flatnonzero(sh["type"] == 2).tolist()
    if symtabs:
        symtab = symtabs[-1]
        o, n, link = sh_offset[symtab], sh_size[symtab], int(sh["link"][symtab])
        strtab = data[sh_offset[link]:sh_offset[link] + sh_size[link]]
        raw = np.frombuffer(data[o:o + n], dtype=symtab_dtype(64, True))[1:]
        for r, sname in zip(raw.tolist(), strings(strtab, raw["name"].tolist())):
            nm, inf, _, idx, val, size = r
            t = inf & 0xF
            if idx in secs and nm and t in (0, 1, 2):  # NOTYPE, OBJECT, FUNC
                sec = secs[idx]
                sec.symbols.append(Symbol(sname, val, size, ("notype", "object", "func")[t],
                                          BIND.get(inf >> 4, "global"), sec.name))
    return ObjectInfo(name, [secs[i] for i in sorted(secs)])


def _read_object_slow(path: Path, name: str) -> ObjectInfo:
    f, elf = _open(path)
    try:
        secs: dict[int, InputSection] = {}
        order: list[int] = []
        for i, s in enumerate(elf.iter_sections()):
            if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_type"] in ("SHT_PROGBITS", "SHT_NOBITS"):
                secs[i] = InputSection(s.name, s["sh_size"], max(1, s["sh_addralign"]), s["sh_flags"])
                order.append(i)
        symtab = elf.get_section_by_name(".symtab")
        if symtab is not None:
            for s in symtab.iter_symbols():
                idx = s["st_shndx"]
                if isinstance(idx, int) and idx in secs and s.name and \
                        s["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                    secs[idx].symbols.append(_sym(s, secs[idx].name))
        return ObjectInfo(name, [secs[i] for i in order])
    except ELFError as e:
        raise LayoutbenchError(f"{path}: corrupt ELF object ({e})") from None
    finally:
        f.close()


@dataclass
class ImageInfo:
    """A linked image: output sections and its symbol table."""

    path: Path
    sections: dict[str, tuple[int, int]]  #: name → (address, size)
    symbols: list[Symbol]  #: defined symbols with addresses, in symbol-table order
    files: list[str]  #: for each symbol: the STT_FILE name that precedes it ("" for globals)

    def addresses(self) -> dict[str, set[int]]:
        """Symbol name → every address a symbol of that name has (static names repeat)."""
        out: dict[str, set[int]] = {}
        for s in self.symbols:
            out.setdefault(s.name, set()).add(s.value)
        return out

    def symbol(self, name: str) -> Symbol:
        for s in self.symbols:
            if s.name == name:
                return s
        raise LayoutbenchError(f"{self.path}: no symbol {name!r}; was it linked with a layoutbench script?")


def read_image(path: Path) -> ImageInfo:
    """Sections and symbols of a linked image (kernel or executable)."""
    f, elf = _open(path)
    try:
        sections = {
            s.name: (s["sh_addr"], s["sh_size"]) for s in elf.iter_sections() if s["sh_flags"] & SH_FLAGS.SHF_ALLOC
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
