"""ELF facts with pyelftools: the sections and symbols of objects and linked images.

Everything here reads a file once and returns plain data, so the layout, placement
and symdiff code never touches pyelftools directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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


def _open(path: Path):
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise LayoutbenchError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise LayoutbenchError(f"{path}: is a directory, not an ELF file") from None
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


def read_object(path: Path, name: str) -> ObjectInfo:
    """Allocatable sections of a relocatable object, with the symbols each defines."""
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
