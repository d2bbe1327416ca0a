"""The fast ELF reader (numpy over whole tables) against pyelftools, one symbol at a time, on
real files: the minikernel's kernel and hosted images and their objects, a static glibc
program, and 32-bit and big-endian images linked by ld.lld; bad input gives one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from layoutbench import build, elfinfo, layout, placement, profile, source
from layoutbench.errors import LayoutbenchError

SMALL_C = "int g[4]; static int h(int x) { return x * 3; }\nint f(int x) { return h(x) + g[x & 3]; }\n" \
          "void _start(void) { f(1); for (;;); }\n"
STATIC_C = '#include <stdio.h>\n__attribute__((noinline)) static int twice(int x) { return 2 * x; }\nint counter = 3;\n' \
           'int main(int argc, char **argv) { printf("%d\\n", twice(argc) + counter); return 0; }\n'


def same_image(path: Path) -> elfinfo.ImageInfo:
    fast, ref = elfinfo.read_image(path), elfinfo.read_image_reference(path)
    assert fast.sections == ref.sections
    assert fast.symbols == ref.symbols
    assert fast.files == ref.files
    assert fast.addresses() == ref.addresses()
    return fast


@pytest.fixture(scope="module")
def mini(workdir):
    prof = profile.load("minikernel")
    co = source.resolve(prof, None)
    objs, variants = build.build_variants(prof, co, [("sorted", 0), ("random", 1)])
    return objs, variants


def test_minikernel_images_and_objects_agree_with_pyelftools(mini):
    objs, variants = mini
    for v in variants:
        img = same_image(v.elf)
        assert len(img.symbols) > 100 and any(f for f in img.files)
        assert img.symbol("__lb_text_units").section == ".text"
        plan = layout.LayoutPlan.from_json(v.plan_path.read_text())
        objects = {o.path: o for o in objs.objects(v.image)}
        placement.check(plan, objects, img)  # the placement check reads the fast image
        placement.check(plan, objects, elfinfo.read_image_reference(v.elf))
    for image in {v.image for v in variants}:
        for name, rel in objs.entries(image):
            assert elfinfo.read_object(objs.objdir / rel, name) == \
                elfinfo.read_object_reference(objs.objdir / rel, name)


def test_static_glibc_program(tmp_path):
    src = tmp_path / "hello.c"
    src.write_text(STATIC_C)
    exe = tmp_path / "hello"
    subprocess.run(["clang-19", "-static", "-O1", "-o", str(exe), str(src)], check=True)
    img = same_image(exe)
    kinds = {s.kind for s in img.symbols}
    assert len(img.symbols) > 1000 and {"func", "object", "tls"} <= kinds  # glibc has TLS and IFUNC symbols
    assert any(s.section == "*ABS*" for s in img.symbols)
    assert img.symbol("twice").bind == "local" and img.files[img.symbols.index(img.symbol("twice"))] == "hello.c"


@pytest.mark.parametrize("target", ["i686-unknown-none-elf", "powerpc64-unknown-none-elf"])
def test_32_bit_and_big_endian(tmp_path, target):
    src, obj, elf = tmp_path / "t.c", tmp_path / "t.o", tmp_path / "t.elf"
    src.write_text(SMALL_C)
    subprocess.run(["clang-19", f"--target={target}", "-ffreestanding", "-O1", "-c", str(src), "-o", str(obj)],
                   check=True)
    subprocess.run(["ld.lld-19", "-e", "_start", "-o", str(elf), str(obj)], check=True)
    img = same_image(elf)
    assert {"f", "g", "_start"} <= {s.name for s in img.symbols}
    assert elfinfo.read_object(obj, "t.o") == elfinfo.read_object_reference(obj, "t.o")
    f = elfinfo.read_elf(elf)
    assert f.elfclass == (32 if target.startswith("i686") else 64) and f.little == target.startswith("i686")


def test_bad_input(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("just text\n")
    short = tmp_path / "short.elf"
    short.write_bytes(Path("/bin/true").read_bytes()[:3000])
    tiny = tmp_path / "tiny.elf"
    tiny.write_bytes(b"\x7fELF\x02\x01")
    for path, words in ((tmp_path / "nope", "no such file"), (tmp_path, "is a directory"),
                        (text, "not an ELF file"), (short, "truncated"), (tiny, "truncated")):
        with pytest.raises(LayoutbenchError, match=words) as e:
            elfinfo.read_image(path)
        assert "\n" not in str(e.value)
    with pytest.raises(LayoutbenchError, match="no symbol table"):
        elfinfo.read_image(Path("/bin/true"))  # stripped
