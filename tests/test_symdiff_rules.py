"""symdiff's classification rules, one pair of small real images per rule: clang-19 compiles two
freestanding C files, ld.lld-19 links them, and the pair differs by exactly what the rule is
about (a function grown, one added before another, a variable moved from .bss to .data, a
function placed in a data section whose code refers to moved symbols, an object added...).  Each
pair is diffed as every caller diffs it: :func:`layoutbench.symdiff.diff_files`, the helper's diff."""

from __future__ import annotations

import subprocess

import pytest

from layoutbench import symdiff

A_C = """
int counter = COUNTER_INIT;
long table[4];
PAD
__attribute__((noinline, used)) static int helper(int x) { return x * HELPER_MUL + 1; }
__attribute__((noinline, used)) int after(int x) { return helper(x) ^ "symdiff!"[x & 7]; }
__attribute__((section(".data.code"), noinline, used)) int in_data(int x) { counter = 5; return helper(x) + 5; }
long (*const ptrs[2])(int) = { (long (*)(int))helper, (long (*)(int))after };
void _start(void) { for (;;) { table[0] = in_data((int)table[1]) + ptrs[0](1); table[2] = (long)&table[3]; } }
"""
B_C = """
BALIGN __attribute__((noinline, used)) static int b_local(int x) { return x - 7; }
__attribute__((noinline, used)) int b_global(int x) { return b_local(x) * 9; }
"""
C_C = """
__attribute__((noinline, used)) static int c_local(int x) { return x + 11; }
__attribute__((noinline, used)) int c_global(int x) { return c_local(x) * 13; }
"""
BASE = {"COUNTER_INIT": "0", "PAD": "", "HELPER_MUL": "3"}
VARIANTS = {
    "base": {},
    "pad": {"PAD": "__attribute__((noinline, used)) int pad(int x) { return x ^ 0x55; }"},
    "data": {"COUNTER_INIT": "1"},
    "grow": {"HELPER_MUL": "(x >> 3) * 11 + (x << 2) * 13 + x * 7 + (x ^ 0x5a5a) * 19 + 3"},
    "const": {"HELPER_MUL": "5"},
    "newobj": {},
    "al": {},  # b.o's first function on 256 bytes: what grows before it is absorbed
    "al-grow": {"HELPER_MUL": "(x >> 3) * 11 + (x << 2) * 13 + x * 7 + (x ^ 0x5a5a) * 19 + 3"},
    "zero": {},  # base + z.o: a function symbol of size 0 (hand-written assembly)
    "rebased": {},  # base, linked 0x01230000 higher: every address moves, bytes 2 and 3 of an address differ
    "lbl2": {},  # base + l2.o: a function with a label inside it, adding 2 after the label
    "lbl3": {},  # base + l3.o: the same, adding 3
}
Z_S = ".text\n.globl zero_fn\n.type zero_fn,@function\nzero_fn:\n"
L_S = (".text\n.globl lbl_fn\n.type lbl_fn,@function\nlbl_fn:\n\tmovl $1, %eax\nlbl_inner:\n\taddl $K, %eax\n\tret\n"
       ".size lbl_fn, .-lbl_fn\n")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("sdrules")
    (d / "a.c").write_text(A_C)
    (d / "b.c").write_text(B_C)
    (d / "c.c").write_text(C_C)
    (d / "z.s").write_text(Z_S)
    cc = ["clang-19", "-O1", "-fno-pic", "-ffreestanding", "-fno-asynchronous-unwind-tables", "-ffunction-sections",
          "-fdata-sections", "-c"]
    subprocess.run([*cc, "-DBALIGN=", "b.c", "-o", "b.o"], cwd=d, check=True)
    subprocess.run([*cc, "-DBALIGN=__attribute__((aligned(256)))", "b.c", "-o", "b-al.o"], cwd=d, check=True)
    subprocess.run([*cc, "c.c", "-o", "c.o"], cwd=d, check=True)
    subprocess.run(["clang-19", "-c", "z.s", "-o", "z.o"], cwd=d, check=True)
    for k in (2, 3):
        (d / f"l{k}.s").write_text(L_S.replace("$K", f"${k}"))
        subprocess.run(["clang-19", "-c", f"l{k}.s", "-o", f"l{k}.o"], cwd=d, check=True)
    out = {}
    for name, change in VARIANTS.items():
        defs = [f"-D{k}={v}" for k, v in {**BASE, **change}.items()]
        subprocess.run([*cc, *defs, "a.c", "-o", f"a-{name}.o"], cwd=d, check=True)
        # the compiler marks a function's section executable whatever its name: make .data.code data
        subprocess.run(["llvm-objcopy-19", "--set-section-flags=.data.code=alloc,contents,data", f"a-{name}.o"],
                       cwd=d, check=True)
        linked = [f"a-{name}.o", *(["c.o"] if name == "newobj" else []), "b-al.o" if name.startswith("al") else "b.o",
                  *(["z.o"] if name == "zero" else []), *([f"l{name[3]}.o"] if name.startswith("lbl") else [])]
        # linked high, so that an absolute address takes all four bytes of its field
        base = "0x11230000" if name == "rebased" else "0x10000000"
        subprocess.run(["ld.lld-19", "-static", "-e", "_start", f"--image-base={base}", "-o", f"{name}.elf",
                        *linked], cwd=d, check=True)
        out[name] = d / f"{name}.elf"
    return out


def diff(images, a, b):
    return symdiff.diff_files(images[a], images[b])


def status(r) -> dict[str, str]:
    return {s.name: s.status for s in r.symbols}


def origin(r, section=".text"):
    return next(o for o in r.origins if o.section == section)


def test_the_same_image_is_placement_identical(images):
    r = diff(images, "base", "base")
    assert r.placement_identical and r.counts == {"unchanged": 9, "moved": 0, "changed": 0, "resized": 0, "added": 0,
                                                  "removed": 0}
    assert r.origins == [] and r.propagation is None and r.moved_by == {}
    assert (r.text_functions, r.text_unchanged_functions, r.text_unchanged_share) == (5, 5, 1.0)
    assert r.compared == {"identical_bytes": 7, "same_after_masking": 0, "address_fields": 0, "llvm_objdump": 0}
    d = r.to_dict()
    assert d["placement_identical"] is True and d["shift_origin"] is None and d["moved"]["min"] is None
    assert r.to_dict(all_symbols=False)["symbols"] == []


def test_a_function_added_before_others_moves_them_and_is_the_origin(images):
    r = diff(images, "base", "pad")
    st = status(r)
    assert st.pop("pad") == "added" and st.pop("ptrs") == "unchanged"
    assert set(st.values()) == {"moved"}, st  # the code after it, and the data after the code
    assert r.moved_by == {16: 8} and r.text_moved_by == {16: 5} and not r.page_quantized
    o = origin(r)
    assert (o.cause, o.symbol, o.responsible, o.detail) == ("added-symbol", "pad", "pad", "new func pad (6 bytes)")
    assert [g.section for g in r.origins] == [".text", ".data", ".bss"]  # code first, then by address
    assert origin(r, ".bss").cause == "section" and origin(r, ".bss").detail.startswith(".bss starts at 0x")
    p = r.propagation
    assert (p.section, p.moved, p.stayed, p.to_end, p.absorbed_at) == (".text", 5, 0, True, None)
    assert p.first == o.address and p.last == max(s.new_addr for s in r.symbols if s.status == "moved"
                                                  and s.section == ".text")
    assert (r.text_functions, r.text_unchanged_functions, r.text_unchanged_share) == (6, 0, 0.0)
    helper = next(s for s in r.symbols if s.name == "helper")
    assert (helper.object, helper.delta, helper.to_dict()["delta"]) == ("a.c", 16, 16)
    assert [(ob.object, ob.counts["moved"], ob.counts["added"], ob.deltas) for ob in r.objects] == [
        ("(global)", 6, 1, {16: 6}), ("a.c", 1, 0, {16: 1}), ("b.c", 1, 0, {16: 1})]
    d = r.to_dict()
    assert d["moved"] == {"symbols": 8, "by": {"16": 8}, "min": 16, "max": 16, "text_by": {"16": 5},
                          "text_whole_pages": False}
    assert d["shift_origin"]["cause"] == "added-symbol" and d["objects"][0]["total"] == 8
    assert d["propagation"] == {"section": ".text", "moved": 5, "stayed": 0, "first": p.first, "last": p.last,
                                "to_end": True, "absorbed_at": None}


def test_a_removed_function_is_the_origin(images):
    r = diff(images, "pad", "base")
    assert status(r)["pad"] == "removed" and r.counts["removed"] == 1 and r.moved_by == {-16: 8}
    o = origin(r)
    assert (o.cause, o.responsible, o.detail) == ("removed-symbol", "pad", "func pad (6 bytes) is gone")


def test_a_table_of_addresses_naming_moved_functions_is_unchanged(images):
    """ptrs (.rodata, before the code) holds the addresses of helper and after, which moved: its
    bytes differ, but every difference is an address naming the same function."""
    r = diff(images, "base", "pad")
    assert status(r)["ptrs"] == "unchanged"
    # and _start's absolute address of table[3] (moved with .bss): masked too
    assert r.compared == {"identical_bytes": 5, "same_after_masking": 2, "address_fields": 3, "llvm_objdump": 0}


def test_a_code_symbol_in_a_data_section_is_explained_as_code(images):
    """in_data is a function linked into .data (a data section: not executable): its
    `movl $5, counter(%rip)` has an immediate after the displacement (the instruction ends 4 bytes
    past the field), which only code is read for.  With counter = 1, counter moves from .bss into
    .data and the displacement differs; it names the same variable: unchanged, not changed, by a
    masked field."""
    flags = subprocess.run(["llvm-readelf-19", "-S", str(images["base"])], capture_output=True, text=True,
                           check=True).stdout
    assert "X" not in next(ln for ln in flags.splitlines() if " .data " in ln).split()[-4]
    r = diff(images, "base", "data")
    s = next(s for s in r.symbols if s.name == "in_data")
    assert (s.section, s.kind, s.status, s.delta) == (".data", "func", "unchanged", 0)
    assert r.compared["same_after_masking"] >= 1 and r.compared["llvm_objdump"] == 0


def test_a_variable_moved_from_bss_to_data_is_changed(images):
    """counter = 0 lives in .bss; counter = 1 in .data: same size, but its initial value is now
    1, not the zero .bss stands for."""
    r = diff(images, "base", "data")
    s = next(s for s in r.symbols if s.name == "counter")
    assert (s.status, s.section) == ("changed", ".data")
    st = status(r)
    assert st["table"] == "moved" and st["in_data"] == "unchanged" and r.counts["changed"] == 1
    # .bss lost counter: table, now its first symbol, moved with the section's start, not after a change
    b = origin(r, ".bss")
    assert (b.cause, b.symbol) == ("padding", "table")
    assert b.detail == "the bytes before table changed (alignment, padding or unlabelled code/data)"


def test_a_same_size_edit_is_changed_by_its_instructions(images):
    r = diff(images, "base", "const")
    st = status(r)
    assert st.pop("helper") == "changed" and set(st.values()) == {"unchanged"}
    assert r.compared["llvm_objdump"] == 1 and r.origins == []
    assert (r.text_unchanged_functions, r.text_functions) == (4, 5)
    assert r.text_unchanged_share == pytest.approx(89 / 95)


def test_a_grown_function_is_resized_and_the_origin_of_the_shift(images):
    r = diff(images, "base", "grow")
    h = next(s for s in r.symbols if s.name == "helper")
    assert (h.status, h.old_size, h.new_size, h.delta) == ("resized", 6, 37, 0)
    assert status(r)["after"] == "moved" and r.moved_by == {32: 7}
    o = origin(r)
    assert (o.cause, o.symbol, o.responsible, o.detail) == ("resized", "after", "a.c:helper",
                                                            "helper grew by 31 bytes (6 -> 37)")
    assert r.text_bytes == 37 + 22 + 52 + 4 + 11 and r.text_unchanged_bytes == 0  # in_data is in .data


def test_an_added_and_a_removed_object(images):
    r = diff(images, "base", "newobj")
    st = status(r)
    assert (st["c_local"], st["c_global"], st["helper"], st["b_local"]) == ("added", "added", "unchanged", "moved")
    o = origin(r)
    assert (o.cause, o.responsible, o.detail) == ("added-object", "c.c", "object c.c is new (4 bytes of symbols in .text)")
    assert [ob.object for ob in r.objects] == ["(global)", "a.c", "c.c", "b.c"]  # by first address
    r = diff(images, "newobj", "base")
    o = origin(r)
    assert (o.cause, o.responsible, o.detail) == ("removed-object", "c.c", "object c.c is gone")
    assert r.counts["removed"] == 2 and r.propagation.moved == 2


def test_a_shift_absorbed_by_alignment_stops_the_propagation(images):
    """b.o's first function is on 256 bytes: helper growing by 31 bytes moves what follows it in
    a.o, and b_local stays where it was."""
    r = diff(images, "al", "al-grow")
    st = status(r)
    assert (st["helper"], st["after"], st["_start"], st["b_local"], st["b_global"]) == (
        "resized", "moved", "moved", "unchanged", "unchanged")
    p = r.propagation
    assert (p.moved, p.stayed, p.to_end, p.absorbed_at) == (2, 2, False, "b_local")
    assert p.last == next(s.new_addr for s in r.symbols if s.name == "_start")
    assert [(g.section, g.cause) for g in r.origins] == [(".text", "resized")]


# -- images with plans: objects from the plan, shifts explained by the plans ---------------------

from test_layout_units import link as link_plan, objs  # noqa: E402,F401  (the fixture: four real objects)

from layoutbench import layout, placement  # noqa: E402


def plan_side(objs, name, seed):  # noqa: F811
    """An image linked by a plan, with its plan.json and the record of its units beside it, as a build
    leaves them (the objects are not in a work dir, so the record is what maps them)."""
    plan = layout.make_plan(objs["objects"], name, seed, kernel="k", image="kernel", commit="c" * 40,
                            pin_first=("boot/start.o",))
    elf, image = link_plan(objs, plan, f"sd-{name}-{seed}")
    (elf.parent / "plan.json").write_text(plan.to_json())
    placement.record(elf, plan, placement.check(plan, objs["by_name"], image), image, objs["by_name"])
    return elf


def plan_diff(objs, a, b):  # noqa: F811
    return symdiff.diff_files(plan_side(objs, *a), plan_side(objs, *b))


def test_the_plans_say_how_a_layout_moved_an_object(objs):  # noqa: F811
    r = plan_diff(objs, ("sorted", 0), ("random", 3))
    assert r.mapping == "plan" and r.counts == {"unchanged": 2, "moved": 12, "changed": 0, "resized": 0, "added": 0,
                                                "removed": 0}
    obj = {s.name: s.object for s in r.symbols}
    assert (obj["kweak"], obj["ip_output"], obj["nic_ring"], obj["_start"]) == (
        "kern/main.o", "net/ip.o", "dev/nic.o", "boot/start.o")  # globals too: by the plan's units
    got = {g.section: (g.cause, g.responsible, g.detail) for g in r.origins}
    assert got[".text"] == ("layout", "dev/nic.o",
                            "layout sorted:0 -> random:3: dev/nic.o now follows net/ip.o (was after boot/start.o)")
    assert got[".data"] == ("layout", "kern/main.o", "layout sorted:0 -> random:3: gap before kern/main.o is 3664 "
                                                     "bytes (was 0)")
    assert got[".rodata"][2] == "layout sorted:0 -> random:3: kern/main.o now follows net/ip.o (was first in its section)"
    assert r.old.layout == "sorted:0" and r.new.layout == "random:3" and r.new.plan_id.startswith("0x")
    r = plan_diff(objs, ("sorted", 0), ("aligned", 0))
    got = {g.section: (g.cause, g.responsible, g.detail) for g in r.origins}
    assert got[".text"] == ("layout", "dev/nic.o", "layout sorted:0 -> aligned:0: dev/nic.o aligned to 4096 (was 1)")
    assert got[".rodata"] == ("section", ".rodata", ".rodata starts at 0x404000 (was 0x401000): what is placed "
                                                    "before it changed size")
    moved = {s.name: s.delta for s in r.symbols if s.status == "moved" and s.section == ".text"}
    assert moved == {"nic_rx": 4080, "kmain": 8144, "kidle": 8144, "kweak": 8144, "ip_input": 12176,
                     "ip_output": 12176}
    assert not r.page_quantized  # the pinned boot code sits before the first page-aligned object
    r = plan_diff(objs, ("random", 3), ("random", 4))
    assert origin(r).detail == "layout random:3 -> random:4: gap before kern/main.o is 2672 bytes (was 0)"


def test_a_plan_without_its_recorded_id_is_known_by_the_id_it_hashes_to(objs):  # noqa: F811
    """A plan.json without the ``plan_id`` layoutbench writes into it (an older layoutbench's): the helper
    hashes the plan to the id linked into the image, so the units recorded beside it are this image's
    and map its symbols (its objects are nowhere to be found: without the record, STT_FILE and a note)."""
    import json

    sides = [plan_side(objs, "sorted", 0), plan_side(objs, "random", 3)]
    ids = []
    for elf in sides:
        d = json.loads((elf.parent / "plan.json").read_text())
        ids.append(d.pop("plan_id"))
        (elf.parent / "plan.json").write_text(json.dumps(d))
    r = symdiff.diff_files(*sides)
    assert (r.old.plan_id, r.new.plan_id) == tuple(ids) and r.old.plan_id != r.new.plan_id
    assert r.mapping == "plan" and r.notes == [], r.notes
    (sides[1].parent / "plan.json").write_text(json.dumps({**d, "seed": 4}))  # another plan: not this image's
    r = symdiff.diff_files(*sides)
    assert r.new.mapping == "file" and any("objects of its plan were not found" in n for n in r.notes), r.notes


END_C = """
__attribute__((noinline, used)) int grows(int x) { return x * GROW; }
__attribute__((noinline, used)) long past_end(void) { long v; asm("movl $_end+0x1000, %k0" : "=r"(v)); return v; }
char buf[64];
void _start(void) { buf[0] = grows(3) + (int)past_end(); for (;;); }
"""


def test_an_address_on_the_page_past_the_images_end_names_nothing(tmp_path):
    """past_end holds `_end + 4096`, an address on the page after the one past the image's last (_end
    moves with the grown function before it): an address in no section and more than a page from
    every symbol names nothing, so the two values are a change, decided without a crash."""
    elfs = []
    for name, grow in (("a", "3"), ("b", "(x >> 3) * 11 + (x << 2) * 13 + x * 7")):
        (tmp_path / f"{name}.c").write_text(END_C.replace("GROW", grow))
        subprocess.run(["clang-19", "-O1", "-fno-pic", "-ffreestanding", "-fno-asynchronous-unwind-tables", "-c",
                        f"{name}.c", "-o", f"{name}.o"], cwd=tmp_path, check=True)
        subprocess.run(["ld.lld-19", "-static", "-e", "_start", "--image-base=0x10000000", "-o", f"{name}.elf",
                        f"{name}.o"], cwd=tmp_path, check=True)
        elfs.append(tmp_path / f"{name}.elf")
    r = symdiff.diff_files(*elfs)
    st = status(r)
    assert (st["grows"], st["past_end"], st["_start"], st["buf"]) == ("resized", "changed", "moved", "moved"), st


def test_the_instruction_view_names_addresses_by_what_they_point_at(images, tmp_path, monkeypatch):
    """What decides a function the byte masking cannot: ONE llvm-objdump per image, its address
    operands compared by what they name.  helper with another constant: its instructions differ
    (changed, by llvm-objdump).  An llvm-objdump that is not there is one line that says what to
    install; one that fails, one line with its first words."""
    from layoutbench.errors import LayoutbenchError

    r = diff(images, "base", "const")
    assert status(r)["helper"] == "changed" and r.compared["llvm_objdump"] == 1
    assert diff(images, "base", "pad").compared["llvm_objdump"] == 0  # what masking explains needs none
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LayoutbenchError, match=r"^cannot run llvm-objdump-19 \(.*\); install Debian's llvm-19"):
        diff(images, "base", "const")
    (tmp_path / "llvm-objdump-19").write_text("#!/bin/sh\necho 'bad disassembly' >&2\nexit 3\n")
    (tmp_path / "llvm-objdump-19").chmod(0o755)
    with pytest.raises(LayoutbenchError, match=r"^llvm-objdump failed on .*base\.elf: bad disassembly$"):
        diff(images, "base", "const")


def test_a_function_of_size_zero_counts_as_a_function_of_no_bytes(images):
    r = diff(images, "base", "zero")
    z = next(s for s in r.symbols if s.name == "zero_fn")
    assert (z.status, z.kind, z.new_size) == ("added", "func", 0)
    funcs = [s for s in r.symbols if s.kind == "func" and s.section == ".text"]
    assert r.text_functions == len(funcs) == 6
    assert r.text_bytes == sum(s.new_size for s in funcs) == r.text_unchanged_bytes  # the rest is unchanged
    assert r.placement_identical is False and r.counts["added"] == 1 and r.origins[0].cause == "added-symbol"


def test_an_image_linked_elsewhere_moves_every_symbol_and_changes_no_code(images):
    """The same objects linked 0x01230000 higher: every symbol moves by that much, and every
    difference is an absolute address whose bytes 2 and 3 differ (a field found by starting
    before the first differing byte), naming the same symbol: no code changed, no llvm-objdump."""
    r = diff(images, "base", "rebased")
    assert set(status(r).values()) == {"moved"} and r.moved_by == {0x01230000: 9} and r.page_quantized
    assert r.compared["llvm_objdump"] == 0 and r.compared["same_after_masking"] >= 2
    assert r.compared["identical_bytes"] + r.compared["same_after_masking"] == 7
    o = origin(r)
    assert (o.cause, o.responsible) == ("section", ".text")


def test_two_functions_appended_at_the_end_of_the_symbol_table_are_both_added(images, tmp_path):
    """base's objects with one more linked last, whose only symbols are two globals: the new symbol
    table is the old one with two entries at its end (every old key still at its place), and both
    new functions are added, each on its own."""
    d = images["base"].parent
    (tmp_path / "t2.s").write_text(".text\n.globl tail_one\n.type tail_one,@function\ntail_one:\n\tret\n"
                                   ".size tail_one, .-tail_one\n.globl tail_two\n.type tail_two,@function\n"
                                   "tail_two:\n\tnop\n\tret\n.size tail_two, .-tail_two\n")
    subprocess.run(["clang-19", "-c", str(tmp_path / "t2.s"), "-o", str(tmp_path / "t2.o")], check=True)
    out = tmp_path / "tail.elf"
    subprocess.run(["ld.lld-19", "-static", "-e", "_start", "--image-base=0x10000000", "-o", str(out),
                    str(d / "a-base.o"), str(d / "b.o"), str(tmp_path / "t2.o")], check=True)
    r = symdiff.diff_files(images["base"], out)
    st = status(r)
    assert (st.pop("tail_one"), st.pop("tail_two")) == ("added", "added") and set(st.values()) == {"unchanged"}, st
    assert r.counts["added"] == 2 and len(r.symbols) == 11


def test_a_function_renamed_to_a_name_of_the_same_length_is_removed_and_added(tmp_path):
    """Two images whose symbol tables list their symbols in the same order, one function renamed to a
    name as long (`g_two` -> `g_owt`: the same offset in a string table that differs): the old name
    is removed and the new one added, not matched by where its name sits."""
    elfs = []
    for name, g in (("a", "g_two"), ("b", "g_owt")):
        (tmp_path / f"{name}.s").write_text(
            ".text\n.globl _start\n.type _start,@function\n_start:\n\tcall " + g + "\n\tret\n.size _start, .-_start\n"
            ".globl " + g + "\n.type " + g + ",@function\n" + g + ":\n\tret\n.size " + g + ", .-" + g + "\n")
        subprocess.run(["clang-19", "-c", str(tmp_path / f"{name}.s"), "-o", str(tmp_path / f"{name}.o")], check=True)
        subprocess.run(["ld.lld-19", "-static", "-o", str(tmp_path / f"{name}.elf"), str(tmp_path / f"{name}.o")],
                       check=True)
        elfs.append(tmp_path / f"{name}.elf")
    st = status(symdiff.diff_files(*elfs))
    assert (st["g_two"], st["g_owt"], st["_start"]) == ("removed", "added", "unchanged"), st


def test_a_symbol_that_runs_past_the_end_of_the_file_is_the_same_only_when_its_bytes_there_are(images, tmp_path):
    """A symbol whose size runs past the end of the file (a corrupt size): compared on the bytes the
    file holds -- the same when those are identical, changed when one of them differs."""
    from bench.hostile.elf_cases import Elf

    e = Elf(images["base"].read_bytes())
    k = e.sym_index("after")
    e.set_sym(k, size=len(e.b))  # from its address to well past the end of the file
    a, b = e.write(tmp_path / "a.elf"), e.write(tmp_path / "b.elf")
    assert status(symdiff.diff_files(a, b))["after"] == "unchanged"
    data = bytearray(b.read_bytes())
    data[-1] ^= 0xFF  # the last byte of the file: inside after's bytes as far as the file goes
    b.write_bytes(bytes(data))
    assert status(symdiff.diff_files(a, b))["after"] == "changed"


def test_a_function_with_a_label_inside_is_compared_whole(images):
    """lbl_fn (hand-written assembly) has a label, lbl_inner, before its `addl $2` / `addl $3`: the
    one differing byte is no address, so llvm-objdump decides, and it must be asked for the label
    too, or it prints lbl_fn only up to the label, where both are the same."""
    r = diff(images, "lbl2", "lbl3")
    st = status(r)
    assert st.pop("lbl_fn") == "changed" and st.pop("lbl_inner") == "unchanged"
    assert set(st.values()) == {"unchanged"} and r.compared["llvm_objdump"] == 1


def test_an_image_whose_only_sized_symbol_is_a_tls_variable(tmp_path):
    """Hand-written assembly: _start has no size, and the one sized symbol is a TLS variable,
    whose value is no address (it names nothing): its initial value 1 -> 2 is a change."""
    sides = []
    for k in (1, 2):
        (tmp_path / f"t{k}.s").write_text(
            ".text\n.globl _start\n_start:\n\tjmp _start\n"
            f'.section .tdata,"awT",@progbits\n.globl tv\n.type tv,@object\n.size tv,4\ntv:\n\t.long {k}\n')
        subprocess.run(["clang-19", "-c", f"t{k}.s", "-o", f"t{k}.o"], cwd=tmp_path, check=True)
        subprocess.run(["ld.lld-19", "-static", "-e", "_start", "-o", f"t{k}.elf", f"t{k}.o"], cwd=tmp_path,
                       check=True)
        sides.append(tmp_path / f"t{k}.elf")
    r = symdiff.diff_files(*sides)
    assert status(r) == {"_start": "unchanged", "tv": "changed"} and r.counts["changed"] == 1


def tail_call_pair(tmp_path, target: str = "ptr") -> tuple:
    """Two real images (hand-written assembly, ld.lld-19) where f's code is the same, f moved, and
    llvm-objdump decides it: f and h each hold an `addl %eax, %ebx` encoded 01 c3 in one image and
    03 d8 in the other (no address explains those bytes; both print the same instruction), and f
    ends in a tail call through a pointer, ``jmp *ptr(%rip)`` (in the second image through
    `target`).  Between f and h lies g, which grows from 2 to 4 nops: llvm-objdump is not asked
    for g, so the line printed after f's last instruction is h's, 3 bytes past f's end in the
    first image and 5 in the second."""
    sides = []
    for name, add, pad, nops, ptr in (("a", "0x01, 0xc3", 1, 2, "ptr"), ("b", "0x03, 0xd8", 2, 4, target)):
        (tmp_path / f"{name}.s").write_text(
            ".text\n.globl _start\n.type _start,@function\n_start:\n" + " nop\n" * pad + " call f\n ret\n"
            ".size _start, .-_start\n"
            f".globl f\n.type f,@function\nf:\n .byte {add}\n jmp *{ptr}(%rip)\n.size f, .-f\n"
            ".globl g\n.type g,@function\ng:\n" + " nop\n" * nops + " ret\n.size g, .-g\n"
            f".globl h\n.type h,@function\nh:\n .byte {add}\n ret\n.size h, .-h\n"
            ".data\n.skip 8192\n.globl ptr\n.type ptr,@object\nptr: .quad 0\n.size ptr, 8\n"
            ".globl ptr2\n.type ptr2,@object\nptr2: .quad 0\n.size ptr2, 8\n")
        subprocess.run(["clang-19", "-c", "-o", tmp_path / f"{name}.o", tmp_path / f"{name}.s"], check=True)
        subprocess.run(["ld.lld-19", "-static", "-o", tmp_path / f"{name}.elf", tmp_path / f"{name}.o"], check=True)
        sides.append(tmp_path / f"{name}.elf")
    return tuple(sides)


@pytest.mark.parametrize("target, f_status", [("ptr", "moved"), ("ptr2", "changed")])
def test_a_moved_functions_tail_call_through_a_pointer_is_compared_by_its_own_end(tmp_path, target, f_status):
    """The whole diff on tail_call_pair: llvm-objdump decides f and h (2 functions); f's last
    instruction ends at f's end, so its (%rip) target is ptr on both sides and f only moved.  Ended
    at the next line printed (h's), the targets would be ptr+3 and ptr+5: "changed".  A tail call
    through another pointer is a change."""
    r = symdiff.diff_files(*tail_call_pair(tmp_path, target))
    st = status(r)
    assert (st["f"], st["g"], st["h"], st["_start"]) == (f_status, "resized", "moved", "resized")
    assert r.compared["llvm_objdump"] == 2 and r.compared["same_after_masking"] == 0
    f = next(s for s in r.symbols if s.name == "f")
    assert f.old_addr != f.new_addr
