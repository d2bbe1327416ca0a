"""`layoutbench symdiff` on real images built by layoutbench from the minikernel, on a hosted
(glibc) executable, on a stripped image and on bad input.

The minikernel is copied into a temporary git repository with three commits:
``base``; ``addobj`` (base + one new object, lib/aaa_extra.o, listed in the Makefile);
``edit`` (base + one function, crc32c, made longer).  Each is compiled once per session.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from layoutbench import build, elfinfo, profile, source, symdiff
from layoutbench.cli import main

from conftest import git, mini_repo


EXTRA_C = """/* lib/aaa_extra.c - an object added by a commit */
#include "lib.h"

u32 aaa_extra_mix(u32 x)
{
	for (int i = 0; i < 7; i++)
		x = (x << 5) ^ (x >> 3) ^ 0x9e3779b9u;
	return x;
}

u32 aaa_extra_table[64];
"""


@pytest.fixture(scope="session")
def repo(tmp_path_factory, workdir) -> dict:
    """A minikernel repository with commits base, addobj (new object) and edit (one function grown)."""
    r = mini_repo(tmp_path_factory.mktemp("symdiff") / "mini")
    base = git(r, "rev-parse", "HEAD")
    (r / "lib" / "aaa_extra.c").write_text(EXTRA_C)
    mk = (r / "Makefile").read_text()
    assert "lib/crc32.c" in mk
    (r / "Makefile").write_text(mk.replace("lib/crc32.c", "lib/crc32.c lib/aaa_extra.c", 1))
    git(r, "add", "-A")
    git(r, "commit", "-qm", "add lib/aaa_extra.c")
    addobj = git(r, "rev-parse", "HEAD")
    git(r, "checkout", "-q", base)
    c = (r / "lib" / "crc32.c").read_text()
    old = "\treturn ~crc;\n}"
    assert old in c
    c = c.replace(old, "\tcrc = (crc << 7) | (crc >> 25);\n\tcrc ^= crc >> 11;\n\tcrc *= 0x2545f491u;\n"
                       "\treturn ~crc;\n}", 1)
    (r / "lib" / "crc32.c").write_text(c)
    git(r, "commit", "-qam", "crc32c: mix the result")
    edit = git(r, "rev-parse", "HEAD")
    git(r, "checkout", "-q", base)
    c = (r / "lib" / "crc32.c").read_text()
    assert "0x82f63b78u" in c
    (r / "lib" / "crc32.c").write_text(c.replace("0x82f63b78u", "0x82f63b79u"))
    git(r, "commit", "-qam", "crc32c: another polynomial")
    const = git(r, "rev-parse", "HEAD")
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "addobj": addobj, "edit": edit, "const": const}


def image(repo: dict, commit: str, layout: str, seed: int = 1, img: str = "kernel") -> symdiff.Image:
    prof = profile.load("minikernel")
    co = source.resolve(prof, repo[commit], str(repo["path"]))
    _, (v,) = build.build_variants(prof, co, [(layout, seed)], [img])
    return v.elf


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["symdiff", *map(str, args)])
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.output


def diff_json(a, b) -> dict:
    code, text = run(a, b, "--json")
    d = json.loads(text)
    d["_exit"] = code
    return d


def by_status(d: dict, status: str) -> list[dict]:
    return [s for s in d["symbols"] if s["status"] == status]


# -- layouts of one commit -------------------------------------------------------------------------

def test_sorted_vs_aligned_everything_moves_nothing_changes(repo):
    a, b = image(repo, "base", "sorted"), image(repo, "base", "aligned")
    d = diff_json(a, b)
    c = d["counts"]
    assert d["_exit"] == 1
    assert c["changed"] == c["resized"] == c["added"] == c["removed"] == 0
    assert c["moved"] > 500
    assert d["mapping"] == "plan"
    # only what the layout pins first can stay in place
    assert {s["object"] for s in by_status(d, "unchanged")} <= {"boot/pvh.o", "boot/platform.o", "boot/start_info.o",
                                                                   "boot/serial.o"}
    assert d["shift_origin"]["section"] == ".text"
    assert d["shift_origin"]["cause"] == "layout"
    assert "aligned to 4096" in d["shift_origin"]["detail"]
    assert d["text"]["unchanged_share"] < 0.05
    # the human view: summary first, then the per-object table
    code, text = run(a, b)
    assert code == 1
    lines = text.splitlines()
    assert lines[2].startswith("placement differs:") and "0 changed" in lines[2]
    assert any(ln.startswith("shift origin .text") for ln in lines)
    assert any(ln.startswith("per object") for ln in lines)


def test_same_image_is_placement_identical(repo):
    a = image(repo, "base", "sorted")
    code, text = run(a, a)
    assert code == 0
    assert "placement identical" in text


def test_two_random_seeds(repo):
    a, b = image(repo, "base", "random", 1), image(repo, "base", "random", 2)
    d = diff_json(a, b)
    c = d["counts"]
    assert d["_exit"] == 1
    assert c["changed"] == c["resized"] == c["added"] == c["removed"] == 0
    assert c["moved"] > 500
    assert d["shift_origin"]["cause"] == "layout"
    assert "random:1 -> random:2" in d["shift_origin"]["detail"]


# -- a commit that adds one object -----------------------------------------------------------------

def test_added_object_sorted_shifts_everything_above_it(repo):
    a, b = image(repo, "base", "sorted"), image(repo, "addobj", "sorted")
    d = diff_json(a, b)
    o = d["shift_origin"]
    assert d["_exit"] == 1
    assert o["section"] == ".text"
    assert o["cause"] == "added-object" and o["responsible"] == "lib/aaa_extra.o"
    added = {s["name"] for s in by_status(d, "added")}
    assert {"aaa_extra_mix", "aaa_extra_table"} <= added
    assert d["counts"]["changed"] == d["counts"]["resized"] == d["counts"]["removed"] == 0
    text = [s for s in d["symbols"] if s["section"] == ".text" and s["status"] != "added"]
    below = [s for s in text if s["old_addr"] < o["address"]]
    above = [s for s in text if s["old_addr"] >= o["address"]]
    assert below and above
    assert all(s["status"] == "unchanged" for s in below)
    assert all(s["status"] == "moved" for s in above)
    assert d["propagation"]["to_end"] is True
    assert 0 < d["text"]["unchanged_share"] < 1
    per = {x["object"]: x for x in d["objects"]}
    assert per["lib/aaa_extra.o"]["added"] >= 2
    assert per["net/udp.o"]["moved"] > 0 and per["net/udp.o"]["unchanged"] == 0
    assert per["dev/ring.o"]["unchanged"] > 0 and per["dev/ring.o"]["moved"] == 0


def test_added_object_aligned_moves_by_whole_pages(repo):
    a, b = image(repo, "base", "aligned"), image(repo, "addobj", "aligned")
    d = diff_json(a, b)
    assert d["shift_origin"]["cause"] == "added-object"
    assert d["shift_origin"]["responsible"] == "lib/aaa_extra.o"
    assert d["moved"]["text_whole_pages"] is True
    assert d["moved"]["text_by"] and all(int(k) % 4096 == 0 for k in d["moved"]["text_by"])
    share = d["text"]["unchanged_share"]
    assert 0 < share < 1
    code, text = run(a, b)
    assert "code moved by whole pages only" in text
    assert f"text unchanged: {100 * share:.1f}%" in text


# -- a commit that edits one function --------------------------------------------------------------

@pytest.mark.parametrize("layout", ["sorted", "default"])
def test_edited_function_is_the_only_change(repo, layout):
    a, b = image(repo, "base", layout), image(repo, "edit", layout)
    d = diff_json(a, b)
    different = [s for s in d["symbols"] if s["status"] not in ("moved", "unchanged")]
    assert [(s["name"], s["object"]) for s in different] == [("crc32c", "lib/crc32.o")]
    assert different[0]["status"] in ("changed", "resized")
    assert d["counts"]["moved"] > 0  # it grew: what follows it moved
    o = d["shift_origin"]
    assert o["cause"] == "resized" and o["responsible"] == "lib/crc32.o:crc32c"
    assert d["_exit"] == 1


def test_same_size_edit_is_changed_in_place(repo):
    """A constant changed: same size, so nothing moves (exit 0), but the code differs; the bytes
    cannot be explained as addresses, so llvm-objdump's instruction view decides."""
    a, b = image(repo, "base", "sorted"), image(repo, "const", "sorted")
    d = diff_json(a, b)
    changed = by_status(d, "changed")
    assert changed and all(s["object"] == "lib/crc32.o" for s in changed)
    assert d["counts"]["moved"] == d["counts"]["resized"] == d["counts"]["added"] == d["counts"]["removed"] == 0
    assert d["compared"]["llvm_objdump"] >= 1
    assert d["placement_identical"] is True and d["_exit"] == 0
    assert d["shift_origin"] is None


def test_build_spec_sides(repo):
    code, text = run(f"minikernel@{repo['base']}:sorted", f"minikernel@{repo['edit']}:sorted",
                     "--repo", repo["path"], "--symbols")
    assert code == 1
    assert "crc32c" in text and "lib/crc32.o" in text
    code, text = run(f"minikernel@{repo['base']}:random:3", f"minikernel@{repo['base']}:random:3",
                     "--repo", repo["path"], "--image", "hosted")
    assert code == 0, text


# -- other ELF files -------------------------------------------------------------------------------

HELLO = r"""
#include <stdio.h>
static int twice(int x) { return 2 * x; }
int counter = 3;
EXTRA
int main(int argc, char **argv) { printf("hello %d\n", twice(argc) + counter); return 0; }
"""


def test_hosted_executable(tmp_path):
    """A dynamically linked glibc program: parsed, symbols from STT_FILE, no plan."""
    outs = []
    for name, extra in (("a", ""), ("b", "int extra_fn(int x) { return x * 7 + counter; }")):
        src = tmp_path / f"{name}.c"
        src.write_text(HELLO.replace("EXTRA", extra))
        exe = tmp_path / name
        subprocess.run(["clang-19", "-O1", "-o", str(exe), str(src)], check=True)
        outs.append(exe)
    code, text = run(outs[0], outs[0])
    assert code == 0 and "placement identical" in text
    d = diff_json(*outs)
    assert d["_exit"] == 1
    assert d["mapping"] == "file"
    assert [s["name"] for s in by_status(d, "added")] == ["extra_fn"]
    assert d["counts"]["removed"] == 0
    assert d["shift_origin"]["cause"] == "added-symbol"


def test_stripped_image(repo, tmp_path):
    a = image(repo, "base", "sorted")
    s = tmp_path / "stripped.elf"
    subprocess.run(["llvm-strip-19", "-o", str(s), str(a)], check=True)
    code, text = run(a, s)
    assert code == 2
    assert "no symbol table" in text and "stripped" in text
    assert len(text.strip().splitlines()) == 1


def test_bad_input(repo, tmp_path):
    a = image(repo, "base", "sorted")
    missing = tmp_path / "nope.elf"
    notelf = tmp_path / "notes.txt"
    notelf.write_text("just text\n")
    short = tmp_path / "short.elf"
    short.write_bytes(Path(a).read_bytes()[:3000])
    for bad, words in ((missing, "no such file"), (notelf, "not an ELF file"), (short, "truncated")):
        for args in ((a, bad), (bad, a)):
            code, text = run(*args)
            assert code == 2, (bad, text)
            assert words in text, text
            assert len(text.strip().splitlines()) == 1, text
    code, text = run(a, "minikernel@HEAD")
    assert code == 2 and "KERNEL@REV:LAYOUT" in text


def test_the_helper_reads_the_symbols_pyelftools_reads(repo):
    """The helper's sides hold the same symbols as pyelftools gives, one at a time, for every kept kind
    (func, object, label, TLS, IFUNC) in allocated sections, at the same address and size."""
    path = image(repo, "base", "sorted")
    res, ref = symdiff.diff_files(path, path), elfinfo.read_image_reference(path)
    kinds = {"notype": "label", "object": "object", "func": "func", "tls": "object", "loos": "func"}
    want = sorted((s.name, s.value, s.size, kinds[s.kind], s.section) for s in ref.symbols
                  if s.kind in kinds and s.section in ref.sections and not s.name.startswith((".L", "$", "__lb_")))
    got = sorted((s.name, s.old_addr, s.old_size, s.kind, s.section) for s in res.symbols)
    assert got == want and len(got) > 500
    assert {s.status for s in res.symbols} == {"unchanged"}
