"""Hostile ELF files against symdiff: every crafted input and 200 byte-flipped ones (fixed seed)
are clean -- the command and the helper alone give the same bytes, or the command refuses in one
line naming the file where the helper declined -- with no traceback, no crash or panic of the helper, no run past 1 GiB of address
space, no hang, no temporary file left behind (bench/hostile/elf_cases.py makes and judges them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.hostile import elf_cases as hostile_elf


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, native_helper) -> dict:
    return dict(hostile_elf.cases(tmp_path_factory.mktemp("hostile")))


def run_all(inputs: dict, prefix: str) -> tuple[dict, list, list]:
    counts = dict.fromkeys(hostile_elf.OUTCOMES, 0)
    bad, seen = [], []
    for name, run in inputs.items():
        if name.startswith(prefix):
            r = run()
            counts[r] += 1
            seen.append(dict(hostile_elf.LAST))
            if r != "clean":
                bad.append((name, r, {k: v for k, v in hostile_elf.LAST.items() if k != "same"}))
    return counts, bad, seen


def test_crafted_inputs_are_clean(inputs):
    """Bad headers, sections past the end or wrapping, string tables without a NUL (one of 16 MB
    named by 2000 symbols: 32 GB of names), names past the table or not UTF-8, symbol sizes up to
    2**64-1, a FIFO, paths starting with - or @, a symbol named `helper @FILE` (llvm-objdump must
    not read FILE), a name holding a terminal's escape sequence (the text shows it, never sends it)..."""
    counts, bad, seen = run_all(inputs, "crafted/")
    special, sbad, sseen = run_all(inputs, "special/")
    assert not bad + sbad, bad + sbad
    assert counts["clean"] >= 55 and special["clean"] == sum(n.startswith("special/") for n in inputs)
    # the 16 MB tables were refused (the helper declined: exit 125, the command's one line)
    refused = [d for d in seen if d["command"] == 2]
    assert any("NUL" in d["command_err"] for d in refused) and any("add up to" in d["command_err"] for d in refused)
    assert any("FIFO" in d["command_err"] for d in sseen)


def test_images_of_other_machines_and_kinds_are_refused(inputs):
    """An x86-64 image against the same program linked for AArch64, RISC-V, i386 (ELF32) and PowerPC 64
    (big-endian), or against one of its own .o files, either way round: refused (the helper declines,
    the command says one line naming both files), never a diff."""
    counts, bad, seen = run_all(inputs, "machine/")
    assert not bad, bad
    assert counts["clean"] == 2 * (len(hostile_elf.OTHER_MACHINES) + 1)
    assert all(d["command"] == 2 and d["native"] == 125 for d in seen), seen
    said = [d["command_err"] for d in seen]
    for words in ("AArch64 ELF64 little-endian", "RISC-V", "i386 ELF32", "PowerPC 64 ELF64 big-endian",
                  "relocatable object (.o)"):
        assert any(words in e for e in said), (words, said)


def test_byte_flips_are_clean(inputs):
    counts, bad, seen = run_all(inputs, "flip/")
    assert not bad, bad
    assert counts["clean"] == hostile_elf.FLIPS
    # not vacuous: the flips give refusals and answers
    assert sum(d["command"] == 2 for d in seen) >= 20
    assert sum(d["command"] in (0, 1) and d["native"] in (0, 1) for d in seen) >= 20


def test_file_truncated_while_read(tmp_path, native_helper):
    """Another process cuts the file short and rewrites it, again and again, while the helper and the
    command read it: each run answers or refuses (the helper: exit 125, the command words it); none
    dies of SIGBUS."""
    seen = hostile_elf.truncated_while_read(Path(tmp_path))
    assert seen and all(s in (0, 1, 2, 125) for _, s in seen), seen
