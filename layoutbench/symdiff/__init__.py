"""Diff two linked images symbol by symbol: unchanged, moved, changed, resized, added, removed.

A side is an ELF image (a kernel or any linked executable) or a build layoutbench made
(``KERNEL@REV:LAYOUT[:SEED]``, resolved and built by :mod:`layoutbench.specs`).  The diff itself is
computed in one place, the compiled helper ``native/symdiff`` (Rust, std only; run by
:mod:`layoutbench.native`), which prints it as JSON.  This package: :mod:`.files` asks the helper
for the diff of two files (and words, in one line, a file it cannot diff), :mod:`.model` is the
result (parsed from the helper's JSON, and written back as JSON), :mod:`.render` its text.  The
cache view (``--cache``: hot functions' sets in both images, their I1 misses) is
:mod:`layoutbench.cacheview`'s.  What the helper does, each image read once
(``native/symdiff/src``: ``elf.rs`` reads, ``image.rs`` a side, ``plan.rs`` the objects and keys,
``samecode.rs`` same code, ``archives.rs`` the toolchain's archive members, ``main.rs`` the
classes, origins and JSON):

* **Symbols.**  The section headers and the ``.symtab`` entries of either ELF class and byte
  order.  Function, object and untyped
  (label) symbols with an address are kept.  layoutbench's ``__lb_*`` markers are not
  diffed (they only help map objects and name addresses), nor are absolute symbols,
  though a field holding an absolute symbol's value (``__lb_plan_id``) names that symbol.

* **Which object a symbol came from.**  With a layout plan (``plan.json`` beside the
  image, or the build spec's variant), where each object's units start is read from the
  record the build wrote beside the image after its placement check
  (``units.json``, as :func:`layoutbench.placement.read_record` reads it: used only when its plan
  id, markers and the image's size are this image's), else found by replaying the plan over
  the objects it was linked from (as :func:`layoutbench.placement.replay` does); a symbol belongs
  to the unit whose range holds its address, and a data global outside the units to the
  object that defines it (recorded there too: :func:`layoutbench.placement.data_owners`).
  A plan.json that cannot be read, or objects not found, leave a note and the ``STT_FILE`` rule.
  Without one,
  local symbols belong to the ``STT_FILE`` symbol before them (a source file name,
  ``ring.c``); a global belongs to a file only when the nearest local symbols on both
  sides of it (by address, same section) come from that file, else it is shown as
  ``(global)``.  Symbols are matched between the images by key: a global by its name
  (unique in a link), a local by (object, name) -- the plan's object when both sides
  have one, else the ``STT_FILE`` name -- and, when that still repeats, by its
  occurrence in address order.  Outside the plan's units, a source file's symbols belong to the
  object compiled from it, of those the units place (``stage_d.c`` → ``stage_d.o``: one row per
  object; the same in every layout of the same objects).  In an image
  that links a C library statically, the archive members' symbols are attributed to their
  members (``libc.a(strcmp.o)``) or ``(toolchain / archives)``, never to a user's object.

* **Same code.**  A linked image has no relocations left, so the fields that held
  them are found by explaining differences.  A pair of same-size symbols is compared
  byte by byte; identical bytes are the same code.  Otherwise every run of
  differing bytes must be covered by a 4-byte field that, read as a PC-relative
  displacement (instruction end 0, 1, 2 or 4 bytes after the field) or as a
  sign-extended absolute address, or an 8-byte absolute address (each read in the
  file's byte order), names the *same target* in both images: the same symbol at the same offset, or for addresses
  outside every symbol (merged strings and constants) the same bytes in the same
  output section (for a table of addresses, what those addresses name) or, in code, the
  same nm-style label: the nearest symbol at or before it in its section (the section
  when there is none) + offset -- code with no symbol of its own, like vmlinux's
  ``.altinstr_aux``, whose own jumps back differ -- or -- for
  ``sym+addend`` that points past ``sym`` -- an address whose shift equals that of a
  symbol next to it.  When every difference is explained the code is the same.  Any
  function left unexplained is decided by the instruction view: ONE ``llvm-objdump
  --disassemble-symbols`` call per image over just those functions, where every
  operand that is an address in the image (and every ``(%rip)`` displacement, through
  llvm-objdump's ``# 0xADDR`` comment) is replaced by the symbol+offset it names, and
  the instruction texts are compared.  Data objects are decided by bytes and masking
  alone.  A TLS symbol's value is its offset in the TLS block: its bytes (initial value)
  are read at the start of the TLS image (the lowest SHF_TLS section, PT_TLS) + value.
  The same-size pairs are compared on two threads.  A symbol whose bytes run past the end of
  the file is the same only when the bytes there are identical.  Limits: identical bytes are
  taken as the same code even if an address they
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
  plans place that object differently (order, alignment, gap), else padding.  The origins
  are told ``.text`` (and ``.text.*``) first, then other code, then data, each by address.
"""

from __future__ import annotations

import importlib

#: the package's names and the module that holds each: imported when first used
_WHERE = {
    **{n: "model" for n in ("STATUSES", "ObjectDiff", "Propagation", "ShiftOrigin", "SideInfo", "SymbolDiff",
                            "SymdiffResult")},
    **{n: "files" for n in ("diff_files", "unreadable")},
    **{n: "render" for n in ("summary_lines", "text")},
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
