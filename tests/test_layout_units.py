"""Layouts, linker scripts and the placement check on a real link small enough for the mutation
runner: clang-19 compiles four objects (one with -ffunction-sections, one with a weak function,
data, rodata and bss in each), every layout's plan is rendered with the minikernel's template,
ld.lld-19 links it, and the placement check must accept the image -- and reject it the moment
the plan and the image disagree."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from layoutbench import elfinfo, layout, linkscript, placement, profile
from layoutbench.errors import LayoutbenchError
from layoutbench.layout import PAGE, LayoutPlan, Unit

SOURCES = {
    "boot/start.c": "void _start(void) { for (;;) ; }\nint boot_flag = 1;\n",
    "kern/main.c": ("int main_counter = 3;\nconst int main_table[4] = {1, 2, 3, 4};\nlong main_scratch[8];\n"
                    "int kmain(int x) { return x * main_table[x & 3] + main_counter++; }\n"
                    "int kidle(int x) { return x ^ 0x5a; }\n"
                    "__attribute__((weak)) int kweak(int x) { return x + 1; }\n"),
    "net/ip.c": ("int ip_count;\nconst char ip_name[16] = \"ip\";\n"
                 "int ip_input(int x) { ip_count += x; return ip_count * 3; }\n"
                 "int ip_output(int x) { return ip_input(x) - 1; }\n"),
    "dev/nic.c": "long nic_ring[32];\nint nic_rx(int x) { nic_ring[x & 31] = x; return 0; }\n",
}
ORDER = ["boot/start.o", "kern/main.o", "net/ip.o", "dev/nic.o"]


@pytest.fixture(scope="module")
def objs(tmp_path_factory):
    d = tmp_path_factory.mktemp("lunits")
    for src, text in SOURCES.items():
        (d / src).parent.mkdir(parents=True, exist_ok=True)
        (d / src).write_text(text)
        flags = ["-ffunction-sections", "-fdata-sections"] if src != "dev/nic.c" else []
        subprocess.run(["clang-19", "-O1", "-fno-pic", "-ffreestanding", "-fno-asynchronous-unwind-tables",
                        *flags, "-c", src, "-o", src.replace(".c", ".o")], cwd=d, check=True)
    infos = [elfinfo.read_object(d / o, o) for o in ORDER]
    img = profile.load("minikernel").image("kernel")
    img = dataclasses.replace(img, entry="_start", base=0x400000)
    return {"dir": d, "objects": infos, "by_name": {o.path: o for o in infos}, "image": img}


def link(objs, plan: LayoutPlan, name: str):
    d = objs["dir"]
    script = d / f"{name}.ld"
    script.write_text(linkscript.render(plan, objs["image"]))
    out = d / name / "image.elf"
    out.parent.mkdir(exist_ok=True)
    linkscript.link("ld.lld-19", script, ORDER, d, out)
    return out, elfinfo.read_image(out)


@pytest.mark.parametrize("name,seed", [("default", 0), ("sorted", 0), ("aligned", 0), ("random", 3),
                                       ("function-aligned", 0), ("padded", 2), ("shuffled", 5)])
def test_every_layout_links_as_planned_and_keeps_its_promise(objs, name, seed):
    plan = layout.make_plan(objs["objects"], name, seed, kernel="k", image="kernel", commit="c" * 40,
                            pin_first=("boot/start.o",))
    elf, image = link(objs, plan, f"{name}-{seed}")
    got = placement.check(plan, objs["by_name"], image)
    assert got.problems == []
    assert image.symbol("__lb_plan_id").value == plan.plan_id
    # every unit of every kind has a start, boot/start.o's code first
    for kind in layout.KINDS:
        assert {o for k, o in got.starts if k == kind} == {u.object for u in plan.groups[kind]}, kind
    first = plan.groups["text"][0]  # the pinned boot code, on a page here: only padded pads before it
    assert first.object == "boot/start.o"
    assert got.starts[("text", "boot/start.o")] == image.symbol("__lb_text_units").value + first.gap
    text = [(got.starts[("text", "boot/start.o")], "boot/start.o")] + layout.text_order(plan, got.starts)
    if name in ("sorted", "aligned"):
        assert [o for _, o in text] == ["boot/start.o", "dev/nic.o", "kern/main.o", "net/ip.o"]
    if name == "aligned":
        assert all(a % PAGE == 0 for a, _ in text)
    if name == "random":
        lead = plan.groups["text"][1].gap
        assert lead > 0 and text[1][0] - text[0][0] >= lead
    if name == "function-aligned":
        assert all(image.symbol(f).value % 64 == 0 for f in ("kmain", "kidle", "ip_input", "ip_output"))
    # the record written beside the image is read back for this image only
    rec = placement.record(elf, plan, got, image)
    marks = placement.markers(plan, image)
    assert placement.recorded(elf, f"0x{plan.plan_id:07x}", marks) == got.starts
    assert placement.recorded(elf, f"0x{plan.plan_id + 1:07x}", marks) is None
    moved = {**marks, "__lb_text_units": marks["__lb_text_units"] + 16}
    assert placement.recorded(elf, f"0x{plan.plan_id:07x}", moved) is None
    data = json.loads(rec.read_text())
    assert data["format"] == 1 and data["image_size"] == elf.stat().st_size


def test_a_plan_the_image_does_not_follow_is_rejected_naming_the_symbol(objs):
    plan = layout.make_plan(objs["objects"], "sorted", 0, pin_first=("boot/start.o",))
    elf, image = link(objs, plan, "sorted-check")
    # the same objects in another order: the replay puts kern/main.o elsewhere
    other = layout.make_plan(objs["objects"], "default", 0, pin_first=("boot/start.o",))
    with pytest.raises(LayoutbenchError, match=r"placement check failed for image.elf \(default, seed 0\): "
                                               r"kern/main.o \.text\.kmain: kmain should be at 0x[0-9a-f]+ by the plan "
                                               r"\(text unit 1\), but is at 0x[0-9a-f]+ \(and \d+ more\)"):
        placement.check(other, objs["by_name"], image)
    # one gap more before a unit: everything after it is off, and the text end too
    shifted = layout.make_plan(objs["objects"], "sorted", 0, pin_first=("boot/start.o",))
    shifted.groups["text"][2].gap += 16
    problems = placement.replay(shifted, objs["by_name"], image).problems
    assert problems[-1].startswith("text units end at 0x")
    # every function from the shifted unit on (the weak kweak is not checked), none before it
    assert [p.split(":")[1].split()[0] for p in problems[:-1]] == ["kmain", "kidle", "ip_input", "ip_output"]
    assert problems[0].startswith("kern/main.o .text.kmain: kmain should be at")
    # only the last unit off: its one function and the text end, "(and 1 more)"
    last = layout.make_plan(objs["objects"], "sorted", 0, pin_first=("boot/start.o",))
    last.groups["text"][-1].gap += 16
    with pytest.raises(LayoutbenchError, match=r"net/ip.o \.text\.ip_input: ip_input should be at .* \(and 2 more\)$"):
        placement.check(last, objs["by_name"], image)
    nic_last = layout.make_plan(objs["objects"], "default", 0, pin_first=("boot/start.o",))
    elf2, image2 = link(objs, nic_last, "default-check")
    nic_last.groups["text"][-1].gap += 16
    with pytest.raises(LayoutbenchError, match=r"dev/nic.o \.text: nic_rx should be at .* \(and 1 more\)$"):
        placement.check(nic_last, objs["by_name"], image2)
    one = layout.make_plan(objs["objects"], "default", 0, pin_first=("boot/start.o",))
    one.groups["data"][-1].gap += 8  # the last data unit: one problem, no "more"
    with pytest.raises(LayoutbenchError, match=r"kern/main.o \.data\.main_counter: main_counter should be at "
                                               r"0x[0-9a-f]+ by the plan \(data unit 1\), but is at 0x[0-9a-f]+$"):
        placement.check(one, objs["by_name"], image2)
    # an object the link did not have
    missing = layout.make_plan(objs["objects"], "sorted", 0)
    missing.groups["data"].append(Unit("lib/gone.o"))
    assert "data unit 2: object lib/gone.o is not among the linked objects" in \
        placement.replay(missing, objs["by_name"], image).problems
    # the layout's promise is checked too: a sorted plan whose objects are not sorted
    fake = dataclasses.replace(other, layout="sorted")
    assert any("not sorted" in p for p in placement.promise(fake, objs["by_name"],
                                                             placement.replay(other, objs["by_name"], image),
                                                             image))


def test_a_weak_definition_is_not_checked_where_a_strong_one_may_win(objs):
    plan = layout.make_plan(objs["objects"], "default", 0)
    _, image = link(objs, plan, "weak")
    assert placement.replay(plan, objs["by_name"], image).problems == []
    sec = next(s for s in objs["by_name"]["kern/main.o"].sections if s.name == ".text.kweak")
    assert [s.bind for s in sec.symbols] == ["weak"]


def test_recorded_refuses_a_record_that_is_not_whole(objs, tmp_path):
    plan = layout.make_plan(objs["objects"], "default", 0)
    elf, image = link(objs, plan, "rec")
    got = placement.check(plan, objs["by_name"], image)
    rec = placement.record(elf, plan, got, image)
    pid, marks = f"0x{plan.plan_id:07x}", placement.markers(plan, image)
    good = json.loads(rec.read_text())
    assert set(marks) == {"__lb_text_units", "__lb_text_units_end", "__lb_rodata_units", "__lb_data_units",
                          "__lb_bss_units"}
    for bad in ({**good, "format": 2}, {**good, "format": True}, {**good, "image_size": good["image_size"] + 1},
                {**good, "markers": {**good["markers"], "__lb_nowhere": 1}}, {**good, "markers": []},
                {**good, "starts": good["starts"] + [good["starts"][0]]},
                {**good, "starts": [["text", "boot/start.o", 1.5]]}, {**good, "starts": [["text", 3, 1]]}):
        rec.write_text(json.dumps(bad))
        assert placement.recorded(elf, pid, marks) is None, bad
    rec.write_text("{not json")
    assert placement.recorded(elf, pid, marks) is None
    rec.unlink()
    assert placement.recorded(elf, pid, marks) is None


def test_render_writes_each_unit_as_the_linker_needs_it(objs):
    plan = LayoutPlan("k", "kernel", "0123456789abcdef", "padded", 4, groups={
        "text": [Unit("a.o", None, 1, 0), Unit("b.o", [".text.f", ".text.g"], 64, 32)], "rodata": [Unit("c.o", None, 2)],
        "data": [Unit("a.o", None, PAGE, 0)], "bss": []})
    s = linkscript.render(plan, objs["image"])
    assert s.startswith(f"/* layoutbench: kernel=k image=kernel commit=0123456789ab layout=padded seed=4 "
                        f"plan=0x{plan.plan_id:07x} */\n")
    assert '    "a.o"(.text .text.[0-9a-zA-Z_]*)\n    . = ALIGN(64);\n    . += 32;\n    "b.o"(.text.f .text.g)\n' in s
    assert '    . = ALIGN(4096);\n    "a.o"(.data .data.[0-9a-zA-Z_]*)\n' in s
    assert '    . = ALIGN(2);\n    "c.o"(.rodata .rodata.[0-9a-zA-Z_]*)\n' in s
    assert "ENTRY(_start)" in s and ". = 0x400000;" in s and f"__lb_plan_id = 0x{plan.plan_id:07x};" in s
    f = linkscript.render_fragment(plan)
    assert f.splitlines()[0] == (f"/* layoutbench: kernel=k commit=0123456789ab layout=padded seed=4 "
                                 f"plan=0x{plan.plan_id:07x} */")
    assert f.splitlines()[1:] == ["__lb_text_units = .;", '"a.o"(.text .text.[0-9a-zA-Z_]*)', ". = ALIGN(64);",
                                  ". += 32;", '"b.o"(.text.f .text.g)', "__lb_text_units_end = .;"]
    bad = objs["dir"] / "bad.ld.in"
    bad.write_text("ENTRY(${entry}) ${nonsense}\n")
    with pytest.raises(LayoutbenchError, match=r"bad.ld.in: bad placeholder 'nonsense'; use \$\{entry\}"):
        linkscript.render(plan, dataclasses.replace(objs["image"], template=bad))


def test_a_failing_link_is_one_line(objs):
    d = objs["dir"]
    script = d / "fail.ld"
    script.write_text(linkscript.render(layout.make_plan(objs["objects"], "default", 0), objs["image"]))
    with pytest.raises(LayoutbenchError, match=r"linking out.elf with fail.ld failed: .*no-such.o") as e:
        linkscript.link("ld.lld-19", script, ["no-such.o", "nor-this.o"], d, d / "out.elf")
    assert "\n" not in str(e.value) and "nor-this.o" not in str(e.value)  # the first error line alone
    with pytest.raises(LayoutbenchError, match="linker 'no-such-ld' not found; install lld-19"):
        linkscript.link("no-such-ld", script, ORDER, d, d / "out.elf")


_LINK_ON_TMPFS = """
import os, sys
from pathlib import Path
from layoutbench import linkscript
from layoutbench.errors import LayoutbenchError
script, objdir, out, *objects = sys.argv[1:]
try:
    linkscript.link("ld.lld-19", Path(script), objects, Path(objdir), Path(out))
    print("linked")
except LayoutbenchError as e:
    st = os.statvfs(Path(out).parent)
    print(st.f_bavail * st.f_frsize)
    print(e)
"""


def _link_on_tmpfs(objs, size: str, objects: list[str]) -> tuple[int, str]:
    """Link into a fresh tmpfs of ``size`` (a real small disk, in a private mount namespace):
    (bytes left on it after the link, the error), or (-1, "linked")."""
    from pathlib import Path

    d = objs["dir"]
    script = d / "tmpfs.ld"
    script.write_text(linkscript.render(layout.make_plan(objs["objects"], "aligned", 0), objs["image"]))
    mnt = d / f"mnt-{size}-{len(objects)}"
    mnt.mkdir(exist_ok=True)
    root = Path(__file__).resolve().parent.parent
    p = subprocess.run(["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o size={size} tmpfs "$0" && exec "$@"', str(mnt),
                        sys.executable, "-c", _LINK_ON_TMPFS, str(script), str(d), str(mnt / "image.elf"), *objects],
                       cwd=root, capture_output=True, text=True, check=True)
    lines = p.stdout.splitlines()
    return (-1, "linked") if lines == ["linked"] else (int(lines[0]), lines[1])


def test_a_linker_that_hangs_crashes_or_fails_silently_is_one_line_with_the_reason(objs, monkeypatch):
    """Real processes standing in for a broken linker (the part under test is how link() reports
    them): one that never ends is stopped at LINK_TIMEOUT, one killed by a signal and one that
    exits 1 without a word each get a line that says so, never a traceback or an empty reason."""
    d = objs["dir"]
    script = d / "ok.ld"
    script.write_text(linkscript.render(layout.make_plan(objs["objects"], "default", 0), objs["image"]))
    fake = {}
    for name, body in {"hang": "exec sleep 30", "crash": "kill -SEGV $$", "quiet": "exit 1",
                       "babble": "printf '%0400d' 7 >&2; exit 1"}.items():
        f = d / f"ld-{name}"
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(0o755)
        fake[name] = str(f)
    monkeypatch.setattr(linkscript, "LINK_TIMEOUT", 1)
    with pytest.raises(LayoutbenchError, match=r"^linking out.elf with ok.ld did not end within 1 s and was stopped; "
                                               r"run the linker's command by hand \(cd .*ld-hang -T") as e:
        linkscript.link(fake["hang"], script, ORDER, d, d / "out.elf")
    assert "\n" not in str(e.value)
    with pytest.raises(LayoutbenchError, match=r"^linking out.elf with ok.ld failed: the linker was killed by SIGSEGV "
                                               r"and printed nothing$"):
        linkscript.link(fake["crash"], script, ORDER, d, d / "out.elf")
    with pytest.raises(LayoutbenchError, match=r"^linking out.elf with ok.ld failed: the linker exited 1 and printed "
                                               r"nothing$"):
        linkscript.link(fake["quiet"], script, ORDER, d, d / "out.elf")
    with pytest.raises(LayoutbenchError) as e:  # no line with "error": its output, cut at 300 characters
        linkscript.link(fake["babble"], script, ORDER, d, d / "out.elf")
    assert str(e.value) == "linking out.elf with ok.ld failed: " + "0" * 300  # 399 zeros and a 7 printed


def test_a_link_that_fails_on_a_full_disk_says_the_disk_is_full(objs):
    """A real tmpfs too small for the image: lld's write fails, and the error names the disk and
    what is left on it.  Below 4 MiB left any failed link is blamed on the disk; above, the
    linker's own first error line is the message."""
    mnt = objs["dir"] / "mnt-8k-4"
    left, err = _link_on_tmpfs(objs, "8k", ORDER)
    assert err == (f"linking image.elf failed: the disk holding {mnt} is full ({left // 1024} KiB left); free some "
                   "space and run the same command again") and left <= 8192
    left, err = _link_on_tmpfs(objs, "3584k", ["no-such.o"])
    assert (left, err) == (3584 << 10, f"linking image.elf failed: the disk holding {objs['dir'] / 'mnt-3584k-1'} is "
                                       "full (3584 KiB left); free some space and run the same command again")
    left, err = _link_on_tmpfs(objs, "4608k", ["no-such.o"])
    assert (left, err) == (4608 << 10, "linking image.elf with tmpfs.ld failed: ld.lld-19: error: cannot open "
                                       "no-such.o: No such file or directory")
    assert _link_on_tmpfs(objs, "4608k", ORDER) == (-1, "linked")


def test_plan_ids_json_and_gaps():
    objs = [elfinfo.ObjectInfo(f"o{i}.o", [elfinfo.InputSection(".text", 64, 16, 0x6, []),
                                            elfinfo.InputSection(".data", 8, 8, 0x3, [])]) for i in range(6)]
    ids = set()
    text_gaps, data_gaps = [], []
    for seed in range(1, 200):
        p = layout.make_plan(objs, "random", seed)
        ids.add(p.plan_id)
        assert 0 <= p.plan_id < 1 << 28
        text_gaps.append(p.groups["text"][0].gap)
        data_gaps.append(p.groups["data"][0].gap)
        back = LayoutPlan.from_json(p.to_json())
        assert back == p and json.loads(p.to_json())["plan_id"] == f"0x{p.plan_id:07x}"
    assert len(ids) == 199  # distinct plans, distinct ids
    # KARL's gaps: below 3 pages before the code, below a page before rodata/data/bss, multiples of 16
    assert max(text_gaps) < 3 * PAGE and max(text_gaps) >= 2 * PAGE and all(g % 16 == 0 for g in text_gaps)
    assert max(data_gaps) < PAGE and max(data_gaps) >= PAGE // 2 and all(g % 16 == 0 for g in data_gaps)
    assert layout.draw(1, "x", 64) in range(0, 64, 16)
    pad = layout.make_plan([elfinfo.ObjectInfo("f.o", [elfinfo.InputSection(f".text.f{i}", 8, 1, 0x6, [])
                                                      for i in range(300)])], "padded", 1).groups["text"]
    gaps = [u.gap for u in pad]
    assert max(gaps) == layout.MAX_PAD - 16 and min(gaps) == 0 and all(g % 16 == 0 for g in gaps)


def test_a_seed_gives_the_same_layout_in_every_version():
    """Stored runs name their layout by seed (``random:3``), and a resumed or extended run adds
    runs to the same seeds: the order and gaps a seed gives are fixed, not just deterministic
    within one version.  These are BLAKE2b keyed with the seed (see the README)."""
    names = ["boot/start.o", "kern/main.o", "net/ip.o", "dev/nic.o", "lib/a.o", "lib/b.o"]
    assert layout.get("random").order(names, 1) == ["kern/main.o", "lib/b.o", "boot/start.o", "lib/a.o", "net/ip.o",
                                                    "dev/nic.o"]
    assert layout.get("random").order(names, 2) == ["lib/a.o", "boot/start.o", "net/ip.o", "kern/main.o", "lib/b.o",
                                                    "dev/nic.o"]
    assert [layout.get("random").lead_gap(k, 2) for k in ("text", "rodata", "data")] == [6704, 1072, 1184]
    assert layout.Shuffled.inner("o.o", [".text.a", ".text.b", ".text.c", ".text.d"], 2) == [
        ".text.b", ".text.c", ".text.a", ".text.d"]
    assert layout.keyed_rank(1, "kern/main.o") == 0x26ad968de2f2d05c


def test_the_promises_name_what_is_out_of_place(objs):
    plan = layout.make_plan(objs["objects"], "sorted", 0, pin_first=("boot/start.o",))
    starts = {("text", "boot/start.o"): 0x1000, ("text", "dev/nic.o"): 0x1100, ("text", "kern/main.o"): 0x1200,
              ("text", "net/ip.o"): 0x1300}
    assert layout.get("sorted").promise(plan, objs["by_name"], starts, {}) == []
    swapped = {**starts, ("text", "kern/main.o"): 0x1050}
    assert layout.get("sorted").promise(plan, objs["by_name"], swapped, {}) == [
        "layout sorted: objects are not sorted by name in the image (first out of place: kern/main.o)"]
    addrs = {"_start": {0x1000}, "kmain": {0x1040}, "kidle": {0x1080}, "kweak": {0x10c0}, "ip_input": {0x1100},
             "ip_output": {0x1140}, "nic_rx": {0x1180}}
    fa = layout.get("function-aligned")
    assert fa.promise(plan, objs["by_name"], starts, addrs) == []
    assert fa.promise(plan, objs["by_name"], starts, {**addrs, "ip_output": {0x1144}}) == [
        "layout function-aligned: ip_output (net/ip.o) is not on 64 bytes"]
    # an empty text section's label (hand-written assembly) is not a function the linker aligned
    empty = elfinfo.ObjectInfo("asm/entry.o", [elfinfo.InputSection(".text", 0, 1, 0x6, [
        elfinfo.Symbol("entry_label", 0, 0, "func", "global", ".text")])])
    assert fa.promise(plan, {**objs["by_name"], "asm/entry.o": empty}, starts, {**addrs, "entry_label": {0x1001}}) == []
    # a name defined twice (a static function in two objects): one address on 64 bytes is enough
    assert fa.promise(plan, objs["by_name"], starts, {**addrs, "kidle": {0x1084, 0x10c0}}) == []


def test_a_program_is_linked_by_the_driver_with_the_layout_fragment(tmp_path):
    """A `program` image: clang-19 links main.o and two objects with crt files and libc, the
    partial script INCLUDEs the rendered fragment, and the plan's units land in its order."""
    from layoutbench.paths import LINKER_SCRIPTS

    for name, text in (("main.c", "int f1(int); int f2(int);\nint main(int c, char **v) { return f1(c) + f2(c); }\n"),
                       ("one.c", "int f1(int x) { return x * 3; }\n"), ("two.c", "int f2(int x) { return x + 7; }\n")):
        (tmp_path / name).write_text(text)
        subprocess.run(["clang-19", "-O1", "-ffunction-sections", "-c", name, "-o", name.replace(".c", ".o")],
                       cwd=tmp_path, check=True)
    objects = [elfinfo.read_object(tmp_path / o, o) for o in ("main.o", "one.o", "two.o")]
    plan = LayoutPlan("p", "prog", "c" * 40, "sorted", 0, {"text": [Unit("two.o"), Unit("one.o", None, 64, 32),
                                                                    Unit("main.o")]})
    frag = tmp_path / "variant"
    frag.mkdir()
    (frag / "layoutbench-text.lds").write_text(linkscript.render_fragment(plan))
    p = linkscript.ProgramLink("clang-19", "ld.lld-19", LINKER_SCRIPTS / "program-text.ld", frag,
                               ("main.o", "one.o", "two.o"), tmp_path, frag / "prog", static=False)
    cmd = linkscript.program_command(p)
    assert cmd[:2] == ["clang-19", "-fuse-ld=lld"] and cmd[2].startswith("--ld-path=/") and "-static" not in cmd
    assert cmd[cmd.index("-o") + 1:] == [str(frag / "prog"), "main.o", "one.o", "two.o"]
    assert f"-Wl,-T,{p.template}" in cmd and f"-Wl,-L,{frag}" in cmd
    assert "-static" in linkscript.program_command(dataclasses.replace(p, static=True, libs=("-lm",)))
    assert linkscript.program_command(dataclasses.replace(p, libs=("-lm",)))[-1] == "-lm"
    log = frag / "link.log"
    linkscript.link_program(p, log)
    assert log.read_text().startswith("$ clang-19 -fuse-ld=lld")
    image = elfinfo.read_image(frag / "prog")
    got = placement.replay(plan, {o.path: o for o in objects}, image)
    assert got.problems == []
    assert got.starts[("text", "two.o")] < got.starts[("text", "one.o")] < got.starts[("text", "main.o")]
    assert (got.starts[("text", "one.o")] - 32) % 64 == 0  # ALIGN(64), then the 32-byte gap
    assert subprocess.run([str(frag / "prog"), "x"], capture_output=True).returncode == (2 * 3 + 2 + 7) % 256
    long = "m" * 400 + ".o"
    with pytest.raises(LayoutbenchError, match=r"linking prog with program-text.ld failed: .*missing.o.* -- log: ") as e:
        linkscript.link_program(dataclasses.replace(p, objects=("missing.o", long)), log)
    assert "\n" not in str(e.value) and long not in str(e.value)  # the first error line alone
    assert "missing.o" in log.read_text()
    with pytest.raises(LayoutbenchError) as e:
        linkscript.link_program(dataclasses.replace(p, objects=(long,)), log)
    first = next(ln for ln in log.read_text().splitlines() if "error" in ln).strip()
    assert str(e.value) == f"linking prog with program-text.ld failed: {first[:300]} -- log: {log}"
    with pytest.raises(LayoutbenchError, match="compiler driver 'no-such-cc' not found"):
        linkscript.link_program(dataclasses.replace(p, driver="no-such-cc"), log)
