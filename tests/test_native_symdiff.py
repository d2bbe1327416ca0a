"""`layoutbench symdiff OLD NEW [--json]` is the helper's diff (native/symdiff, the diff's one
implementation), JSON and text (rendered by the front end from the helper's JSON) with one exit
status: on minikernel pairs over all six layouts, pairs with real code changes (a grown function, a
changed constant, a new object), a static-glibc program (objects from STT_FILE symbols, and from
its plan when its profile is found; libc's archive members), a hosted executable, ELF32 and
big-endian images.  The command is run as a user runs it (``python -m layoutbench.cli``; the
helper says so on stderr under LAYOUTBENCH_NATIVE_TRACE=1).  A plan it cannot read is a note; a
file it cannot diff is one line worded by the front end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import lb
from layoutbench import build, layout, native, placement, profile, source
from test_program import MAIN_C, MAKEFILE, MIX_C, PROFILE, TABLE_C
from test_symdiff import HELLO, image, repo  # noqa: F401  (repo: the minikernel fixture)
from test_symdiff_cache import NAMES_C, RELINKED, _program

LAYOUTS = ["default", "sorted", "aligned", "random", "function-aligned", "padded", "shuffled"]
NATIVE_SAYS = "layoutbench-symdiff: native"
WORDED = "layoutbench-symdiff: the front end words it"


@pytest.fixture(scope="module", autouse=True)
def helper(native_helper):
    """Every test here runs the helper: it is built first (conftest)."""
    return native_helper


def both(a, b, env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run `symdiff A B --json` and `symdiff A B` (the text): both are the helper's diff (it says so
    under the trace), with one exit status, 0 or 1; the JSON, parsed."""
    fast = lb("symdiff", str(a), str(b), "--json", env={**(env or {}), "LAYOUTBENCH_NATIVE_TRACE": "1"},
              check=False, cwd=cwd)
    assert NATIVE_SAYS in fast.stderr and WORDED not in fast.stderr, fast.stderr
    assert fast.returncode in (0, 1), fast.stderr
    d = json.loads(fast.stdout)
    assert (fast.returncode == 0) == d["placement_identical"]
    text = lb("symdiff", str(a), str(b), env={**(env or {}), "LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False, cwd=cwd)
    assert text.returncode == fast.returncode, text.stderr
    assert NATIVE_SAYS in text.stderr and "per object" in text.stdout
    assert f"{d['counts']['moved']} moved" in text.stdout
    return d


@contextmanager
def without_units(*elfs: Path):
    """The images as linked by a layoutbench that recorded no units (units.json set aside)."""
    moved = []
    try:
        for elf in elfs:
            rec = Path(elf).parent / placement.UNITS
            if rec.is_file() and not any(rec == m for m, _ in moved):
                rec.rename(rec.with_name("units.json.aside"))
                moved.append((rec, rec.with_name("units.json.aside")))
        yield
    finally:
        for rec, aside in moved:
            aside.rename(rec)


@pytest.mark.parametrize("i", range(len(LAYOUTS)))
def test_minikernel_every_layout(repo, i):  # noqa: F811
    """Each layout against the next one (seeded ones with seed 1, and 2 for the pair of two randoms):
    with the units recorded beside each image at link time, and with the plan replayed over the
    objects instead (no units.json): the same answer."""
    a, b = image(repo, "base", LAYOUTS[i]), image(repo, "base", LAYOUTS[(i + 1) % len(LAYOUTS)])
    assert (a.parent / placement.UNITS).is_file() and (b.parent / placement.UNITS).is_file()
    d = both(a, b)
    assert d["mapping"] == "plan" and d["counts"]["changed"] == 0
    assert d["compared"]["same_after_masking"] > 0
    with without_units(a, b):
        assert both(a, b) == d


def test_minikernel_units_record_that_is_not_of_the_image(repo, tmp_path):  # noqa: F811
    """A units.json of another plan or another image size, a broken or odd one, is not used: the
    plan is replayed instead (same answer); a usable one is used."""
    a, b = image(repo, "base", "sorted"), image(repo, "base", "random", 3)
    rec = b.parent / placement.UNITS
    good = rec.read_text()
    # an image linked before units were recorded gets them when its build is asked for again
    rec.unlink()
    assert image(repo, "base", "random", 3) == b and rec.read_text() == good
    # and so does one whose record names no data global's object
    rec.write_text(json.dumps({k: v for k, v in json.loads(good).items() if k != "globals"}))
    assert image(repo, "base", "random", 3) == b and rec.read_text() == good
    with without_units(a, b):
        want = both(a, b)
    # a record that would change the answer if used: two text units' objects swapped
    data = json.loads(good)
    starts = [list(u) for u in data["starts"]]
    text = [u for u in starts if u[0] == "text"]
    text[1][1], text[2][1] = text[2][1], text[1][1]
    data["starts"] = starts
    assert len(data["markers"]) >= 2  # (a record whose first marker is not this image's is not used)
    try:
        for bad in ({**data, "plan_id": "0x0000000"}, {**data, "image_size": data["image_size"] + 1},
                    {**data, "format": 2}, {**data, "format": 1.0}, {**data, "markers": {"__lb_text_units": 1}},
                    {**data, "markers": {**data["markers"], "__lb_nonesuch_units": 4096}},
                    {**data, "markers": {k: a + 4096 * (i == 0) for i, (k, a) in enumerate(data["markers"].items())}},
                    {**data, "starts": [[k, o, str(a)] for k, o, a in starts]}, [data], "{",
                    {**data, "globals": ["x"]}, {**data, "globals": {"a.o": "x"}}, {**data, "globals": {"a.o": [1]}},
                    {**data, "globals": {"a.o": ["x"], "b.o": ["x"]}}, {**data, "globals": {"a.o": ["x", "x"]}}):
            rec.write_text(bad if isinstance(bad, str) else json.dumps(bad))
            assert both(a, b) == want, bad
        # used when it belongs to the image (trusted, not checked: the record is written only
        # after the placement check): the swapped objects show
        rec.write_text(json.dumps(data))
        d = both(a, b)
        objs = {s["name"]: s["object"] for s in d["symbols"]}
        assert d != want and any(objs[s["name"]] != s["object"] for s in want["symbols"])
    finally:
        rec.write_text(good)


def test_minikernel_same_layout_two_seeds_and_itself(repo):  # noqa: F811
    d = both(image(repo, "base", "random", 1), image(repo, "base", "random", 2))
    assert d["counts"]["moved"] > 0
    d = both(image(repo, "base", "padded", 1), image(repo, "base", "padded", 1))
    assert d["placement_identical"]


@pytest.mark.parametrize("commit,layouts", [("edit", ("sorted", "sorted")), ("edit", ("default", "random")),
                                            ("const", ("sorted", "sorted")), ("addobj", ("sorted", "aligned"))])
def test_minikernel_code_changes(repo, commit, layouts):  # noqa: F811
    """A function grown, a constant changed in place, an object added."""
    d = both(image(repo, "base", layouts[0]), image(repo, commit, layouts[1]))
    if commit == "const":
        assert d["counts"]["changed"] >= 1
    elif commit == "edit":
        assert d["counts"]["resized"] >= 1
    else:
        assert d["counts"]["added"] > 0 and d["shift_origin"]["cause"] in ("added-object", "added-symbol", "layout")


@pytest.fixture(scope="module")
def prog(tmp_path_factory, workdir):
    """The static-glibc program of test_program.py, linked sorted and random:1."""
    root = tmp_path_factory.mktemp("profiles")
    d = root / "prog"
    (d / "src").mkdir(parents=True)
    for name, text in {"main.c": MAIN_C, "mix.c": MIX_C, "table.c": TABLE_C, "Makefile": MAKEFILE}.items():
        (d / "src" / name).write_text(text)
    (d / "kernel.toml").write_text(PROFILE)
    prof = profile.load(str(d / "kernel.toml"))
    _, variants = build.build_variants(prof, source.resolve(prof, None), layout.parse_specs(["sorted", "random"], 1),
                                       ["prog"])
    return root, [v.elf for v in variants]


def test_static_glibc_program(prog):
    """A profile given by path: the units recorded beside each image at link time map its
    symbols; without them, the helper finds the profile by the name the work folder remembers
    for it (profiles.json) and read its objects; with that forgotten too: STT_FILE mapping (and a
    note). glibc's TLS data symbols (values are offsets in the TLS block) are compared natively
    too, and libc's symbols go to their libc.a members."""
    _, (a, b) = prog
    d = both(a, b)
    assert {s["object"] for s in d["symbols"] if s["name"] == "strcmp"} == {"libc.a(strcmp.o)"}
    assert d["mapping"] == "plan" and not d["notes"]
    assert d["counts"]["moved"] > 100  # libc's code moves with the plan's units before it
    remembered = Path(os.environ["LAYOUTBENCH_DIR"]) / profile.REMEMBERED
    assert "prog" in json.loads(remembered.read_text())
    with without_units(a, b):
        d = both(a, b)
        assert d["mapping"] == "plan" and not d["notes"]
        assert {s["object"] for s in d["symbols"] if s["name"] == "main"} == {"main.o"}
        aside = remembered.with_name("profiles.aside")
        remembered.rename(aside)
        try:
            d = both(a, b)
        finally:
            aside.rename(remembered)
    assert d["mapping"] == "file" and d["notes"]
    assert d["counts"]["moved"] > 100


def test_own_only_is_the_helpers_diff_too(prog):
    """--own-only: the helper leaves the C library's archive members and the crt files out of both
    images (what an address into the C library names is then looked up without its symbols), and
    the new side's note says how many."""
    _, (a, b) = prog
    got = {}
    for extra in ("--json", "--symbols"):
        p = lb("symdiff", str(a), str(b), "--own-only", extra, env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
        assert NATIVE_SAYS in p.stderr and p.returncode == 1, p.stderr
        got[extra] = p.stdout
    d, whole = json.loads(got["--json"]), both(a, b)
    def foreign(o: str) -> bool:
        return o.endswith(".o)") or o in ("crt1.o", "crti.o", "crtbeginT.o", "crtend.o", "crtn.o", "crtstuff.c",
                                          "(toolchain / archives)")

    objs = {s["object"] for s in d["symbols"]}
    assert "main.o" in objs and not any(foreign(o) for o in objs), objs
    out = [sum(s[f"{side}_addr"] is not None and foreign(s["object"]) for s in whole["symbols"])
           for side in ("old", "new")]
    assert out[0] > 100 and len(whole["symbols"]) - len(d["symbols"]) == sum(foreign(s["object"])
                                                                             for s in whole["symbols"])
    assert d["notes"] == [f"--own-only: {out[0]} and {out[1]} symbol(s) of the toolchain's archives and crt "
                          "files left out"]
    assert "strcmp" not in got["--symbols"] and "main.o" in got["--symbols"]


def test_static_glibc_program_with_its_profile(prog):
    """With its profile folder on LAYOUTBENCH_PROFILES the objects are found: the plan maps them."""
    root, (a, b) = prog
    with without_units(a, b):
        d = both(a, b, env={"LAYOUTBENCH_PROFILES": str(root)})
    assert d["mapping"] == "plan" and not d["notes"]


@pytest.fixture(scope="module")
def relinked(tmp_path_factory, workdir):
    """test_symdiff_cache's static program with a data-only object, in four layouts of its text."""
    return _program(tmp_path_factory.mktemp("relinked"), False, RELINKED, NAMES_C)


def test_relinked_static_program_keeps_every_row(relinked):
    """Its layouts against the default one: nothing added or removed
    (the data-only object's statics and libc's members keep their rows in every layout)."""
    for elf in relinked[1:]:
        d = both(relinked[0], elf)
        assert d["counts"]["added"] == d["counts"]["removed"] == 0, d["counts"]


TLS_C = """
__thread int tls_counter = INIT;          /* .tdata: its initial value is in the file */
__thread long tls_zero;                  /* .tbss */
__thread char tls_name[16] = "layoutbench";
int main(int argc, char **argv) { (void)argv; tls_zero += argc; return tls_counter + tls_name[argc] + (int)tls_zero; }
"""


@pytest.mark.parametrize("init, status", [("1", "unchanged"), ("2", "changed")])
def test_static_glibc_tls_initial_values(tmp_path, init, status):
    """TLS symbols' values are offsets in the TLS block: their bytes (initial values) are read at
    the TLS segment's start + value.  The same initial value is unchanged, another one is changed;
    glibc's own TLS symbols are unchanged."""
    exes = []
    for name, value in (("a", "1"), ("b", init)):
        src = tmp_path / f"{name}.c"
        src.write_text(TLS_C.replace("INIT", value))
        subprocess.run(["clang-19", "-O1", "-static", "-o", str(tmp_path / name), str(src)], check=True)
        exes.append(tmp_path / name)
    d = both(*exes)
    by = {s["name"]: s for s in d["symbols"]}
    assert by["tls_counter"]["status"] == status
    assert by["tls_name"]["status"] == by["tls_zero"]["status"] == "unchanged"
    assert by["tls_counter"]["old_addr"] < 0x1000  # nm's value: the offset in the TLS block
    # glibc's TLS variables (errno's, the locale's...) are all compared, and the same
    tls = [s for s in d["symbols"] if s["section"] in (".tdata", ".tbss")]
    assert len(tls) > 5 and all(s["status"] == "unchanged" for s in tls if not s["name"] == "tls_counter")
    assert d["counts"]["changed"] == (status == "changed")


READ_INT_C = """
#include <stdio.h>
__attribute__((noinline, used)) static int read_int(const char *s) { int v = 0; while (*s) v = v * BASE + *s++ - '0'; return v; }
int main(int argc, char **argv) { printf("%d\\n", read_int(argc > 1 ? argv[1] : "42")); return 0; }
"""


def test_a_users_local_named_as_a_c_library_members_local_stays_the_users(tmp_path):
    """u.c defines a static read_int, and so do several members of libc.a that printf links: the
    user's (first in the link) is u.c's, every other one a libc.a member's, in both images; the
    user's changed code shows on its own row."""
    exes = []
    for name, base in (("a", "10"), ("b", "8")):
        (tmp_path / "u.c").write_text(READ_INT_C.replace("BASE", base))
        subprocess.run(["clang-19", "-O1", "-static", "-o", str(tmp_path / name), str(tmp_path / "u.c")], check=True)
        exes.append(tmp_path / name)
    d = both(*exes)
    rows = [(s["object"], s["status"]) for s in d["symbols"] if s["name"] == "read_int"]
    assert len(rows) >= 3 and sum(o == "u.c" for o, _ in rows) == 1, rows
    assert all(o.startswith("libc.a(") for o, _ in rows if o != "u.c"), rows
    assert dict(rows)["u.c"] in ("changed", "resized") and {st for o, st in rows if o != "u.c"} == {"unchanged"}, rows


STUB_C = r"""
__attribute__((noinline)) int g(int x) { return x * 3 + 1; }
__attribute__((noinline)) int f(int x) {   /* jumps into code with no symbol of its own, and back */
    asm volatile("jmp 1f\n\t.pushsection .stubs,\"ax\",@progbits\n\tPAD\n1:\tjmp 2f\n\tjmp 3f\n"
                 "\t.fill 40, 1, 0x90\n\t.popsection\n2:\n\tnop\n3:\n" ::: "memory");
    return g(x) + 1;
}
__attribute__((noinline)) int h(int x) { return f(x) ^ g(x + 1); }
void _start(void) { int r = h(3); asm volatile("mov $60, %%eax\n\tsyscall" :: "D"(r & 1) : "rax"); }
"""


@pytest.mark.parametrize("pad, order, f_status", [("nop", "_start h g f", "moved"), ("nop; nop", "f g h _start", "changed")])
def test_jump_into_code_without_a_symbol(tmp_path, pad, order, f_status):
    """f jumps into .stubs (an output section with no symbol, like vmlinux's .altinstr_aux), whose
    code jumps back into f.  Reordered (the stub's bytes differ, no neighbour moved by the stub's
    shift), f still jumps to .stubs+1: it moved, explained by masking (the address is named
    section + offset), not by llvm-objdump.  Jumping to .stubs+2 instead is a change."""
    exes = []
    for name, text, fn_order in (("a", STUB_C.replace("PAD", "nop"), "f g h _start"), ("b", STUB_C.replace("PAD", pad), order)):
        (tmp_path / f"{name}.c").write_text(text)
        (tmp_path / f"{name}.order").write_text(fn_order.replace(" ", "\n") + "\n")
        subprocess.run(["clang-19", "-O1", "-ffunction-sections", "-fno-asynchronous-unwind-tables", "-nostdlib",
                        "-static", "-fuse-ld=lld", f"-Wl,--symbol-ordering-file={tmp_path / name}.order",
                        "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")], check=True)
        exes.append(tmp_path / name)
    d = both(*exes)
    by = {s["name"]: s for s in d["symbols"]}
    assert by["f"]["status"] == f_status
    assert d["compared"]["llvm_objdump"] == (f_status == "changed")
    if f_status == "moved":
        assert by["f"]["old_addr"] != by["f"]["new_addr"] and d["counts"]["changed"] == 0


@pytest.mark.parametrize("target, f_status", [("ptr", "moved"), ("ptr2", "changed")])
def test_a_moved_functions_tail_call_through_a_pointer_is_compared_by_its_own_end(tmp_path, target, f_status):
    """test_symdiff_rules' tail_call_pair: llvm-objdump decides f (its bytes differ
    where no address explains them) and f's last instruction, ``jmp *ptr(%rip)``, is followed by h,
    the next function printed, 3 bytes past f's end in one image and 5 in the other: the (%rip)
    target is taken from f's end, so f moved; through another pointer it changed."""
    from test_symdiff_rules import tail_call_pair

    d = both(*tail_call_pair(tmp_path, target))
    by = {s["name"]: s["status"] for s in d["symbols"]}
    assert (by["f"], by["g"], by["h"]) == (f_status, "resized", "moved")
    assert d["compared"]["llvm_objdump"] == 2 and d["compared"]["same_after_masking"] == 0


def test_hosted_executable(tmp_path):
    """Two dynamically linked programs, one function added: no plan at all."""
    exes = []
    for name, extra in (("a", ""), ("b", "int extra_fn(int x) { return x * 7 + counter; }")):
        src = tmp_path / f"{name}.c"
        src.write_text(HELLO.replace("EXTRA", extra))
        subprocess.run(["clang-19", "-O1", "-o", str(tmp_path / name), str(src)], check=True)
        exes.append(tmp_path / name)
    d = both(*exes)
    assert [s["name"] for s in d["symbols"] if s["status"] == "added"] == ["extra_fn"]


def test_relative_paths_and_a_plan_it_cannot_read_are_noted(repo, tmp_path):  # noqa: F811
    """A plan.json of another shape (or not JSON, or not UTF-8): the helper notes it, maps that side
    by STT_FILE symbols, and shows each path as given, normalized."""
    for name, layout_name in (("old", "sorted"), ("new", "random")):
        (tmp_path / name).mkdir()
        shutil.copy(image(repo, "base", layout_name), tmp_path / name / "image.elf")
    plan = tmp_path / "new" / "plan.json"
    for bad in (json.dumps({"kernel": "minikernel", "surprise": 1}).encode(), b"{", b"\xff\xfe"):
        plan.write_bytes(bad)
        d = both("old//image.elf", "./new/image.elf", cwd=tmp_path)
        assert d["old"]["path"] == "old/image.elf" and d["new"]["mapping"] == "file"
        assert [n for n in d["notes"] if "new/plan.json: unreadable plan (" in n], d["notes"]


def test_bad_input_is_one_line(repo, tmp_path):  # noqa: F811
    """A file that is not ELF, cut short, stripped, of another machine: one line from the front end
    (the package's ELF reader names the file and what is wrong), exit 2, nothing on stdout; the
    same line for --json (the helper runs the front end in its place) and the text."""
    a = image(repo, "base", "sorted")
    notelf = tmp_path / "notes.txt"
    notelf.write_text("just text\n")
    short = tmp_path / "short.elf"
    short.write_bytes(Path(a).read_bytes()[:3000])
    stripped = tmp_path / "stripped.elf"
    subprocess.run(["llvm-objcopy-19", "--strip-all", str(a), str(stripped)], check=True)
    other = tmp_path / "other.o"
    (tmp_path / "o.c").write_text("int f(int x) { return x + 1; }\n")
    subprocess.run(["clang-19", "--target=aarch64-unknown-none-elf", "-c", str(tmp_path / "o.c"), "-o", str(other)],
                   check=True)
    for bad, words in ((notelf, "not an ELF file"), (short, "truncated"), (stripped, "has no symbol table"),
                       (other, "AArch64 ELF64 little-endian relocatable object (.o) and")):
        lines = []
        for extra in (["--json"], []):
            p = lb("symdiff", str(a), str(bad), *extra, env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
            assert p.returncode == 2 and p.stdout == "", p.stderr
            assert WORDED in p.stderr, p.stderr
            errors = [line for line in p.stderr.splitlines() if not line.startswith("layoutbench-symdiff")]
            assert len(errors) == 1 and errors[0].startswith("layoutbench: error: ") and words in errors[0], p.stderr
            lines.append(errors[0])
        assert lines[0] == lines[1] and str(bad) in lines[0]


def test_the_symbol_table_is_rendered_from_the_helpers_json(repo):  # noqa: F811
    """--symbols: the helper diffs, the front end prints every symbol but the unchanged ones; --own-only
    too (the helper leaves the toolchain's symbols out)."""
    a, b = image(repo, "base", "sorted"), image(repo, "base", "aligned")
    fast = lb("symdiff", str(a), str(b), "--symbols", env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
    assert NATIVE_SAYS in fast.stderr and fast.returncode == 1
    rows = fast.stdout.split("per symbol (all but unchanged)\n")[1].splitlines()[1:]
    d = json.loads(lb("symdiff", str(a), str(b), "--json", check=False).stdout)
    assert len(rows) == sum(s["status"] != "unchanged" for s in d["symbols"]) > 0
    p = lb("symdiff", str(a), str(b), "--own-only", env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
    assert p.returncode == 1 and "per object" in p.stdout and NATIVE_SAYS in p.stderr
    assert native.supported(["symdiff", str(a), str(b), "--json"])
    assert not native.supported(["symdiff", str(a), str(b)])  # text: the front end prints the helper's JSON
    assert not native.supported(["symdiff", str(a), str(b), "--json", "--symbols"])
    assert not native.supported(["symdiff", str(a), "minikernel@HEAD:sorted", "--json"])


def test_a_stale_or_missing_helper_is_built_and_without_cargo_one_line(tmp_path, monkeypatch):
    """Older than one of its sources (or absent): binary() is None and built() builds it with cargo;
    with no cargo to build it, one line that says to run setup.sh."""
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text("")
    (crate / "src" / "main.rs").write_text("")
    exe = crate / "target" / "release" / "layoutbench-symdiff"
    monkeypatch.setattr(native, "CRATE", str(crate))
    monkeypatch.setattr(native, "BINARY", str(exe))
    assert native.binary() is None
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    os.utime(crate / "src" / "main.rs", ns=(1, 1))
    os.utime(crate / "Cargo.toml", ns=(1, 1))
    assert native.binary() == str(exe) == native.built()
    os.utime(crate / "src" / "main.rs")
    os.utime(exe, ns=(2, 2))
    assert native.binary() is None
    monkeypatch.setenv("PATH", str(tmp_path))  # no cargo here
    with pytest.raises(native.Failed, match=r"no cargo to build it: run \./setup\.sh"):
        native.built()


def test_a_missing_helper_is_built_on_first_use(tmp_path):
    """A checkout whose helper was never built: the first diff builds it (cargo, offline), says so in
    one line on stderr, and answers."""
    root = Path(native.ROOT)
    copy = tmp_path / "checkout"
    shutil.copytree(root / "native" / "symdiff", copy / "native" / "symdiff", ignore=shutil.ignore_patterns("target"))
    shutil.copytree(root / "layoutbench", copy / "layoutbench", ignore=shutil.ignore_patterns("__pycache__"))
    exe = copy / "native" / "symdiff" / "target" / "release" / "layoutbench-symdiff"
    env = {**{k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}, "PYTHONPATH": str(copy)}
    a = shutil.which("true")
    p = subprocess.run([sys.executable, "-P", "-m", "layoutbench.cli", "symdiff", a, a, "--json"], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "building the symdiff helper" in p.stderr, p.stderr
    assert exe.is_file()
    assert "has no symbol table" in p.stderr.splitlines()[-1], p.stderr


def test_a_plan_that_does_not_match_its_image(repo):  # noqa: F811
    """The sorted image beside the random plan, in the work dir (its objects are found): the
    replay fails, the note says so and that side falls back to STT_FILE symbols."""
    a, b = Path(image(repo, "base", "sorted")), Path(image(repo, "base", "random"))
    fake = a.parent.parent / "mismatch-9"
    fake.mkdir(exist_ok=True)
    shutil.copy(a, fake / "image.elf")
    shutil.copy(b.parent / "plan.json", fake / "plan.json")
    d = both(b, fake / "image.elf")
    assert any("does not match its plan" in n and "should be at" in n for n in d["notes"]), d["notes"]
    assert d["new"]["mapping"] == "file" and d["old"]["mapping"] == "plan"


#: names.c (the one more object of test_symdiff_cache's program): code and a data global of each
#: kind, that lld places among other objects' data where no local of names.c surrounds them
MATCH_C = r"""
int match_calls;                                    /* .bss */
int match_seen[4] = {1, 2, 3, 4};                   /* .data */
const int match_limit[2] = {7, 9};                  /* .rodata */
__thread int match_depth;                           /* .tbss */
int match(int x) { match_calls++; match_depth++; return x * match_limit[x & 1] + match_seen[x & 3]; }
"""
MATCH_DATA = ("match_calls", "match_seen", "match_limit", "match_depth")


@pytest.fixture(scope="module")
def matcher(tmp_path_factory, workdir):
    """test_symdiff_cache's static program with match.c, and with its hot function grown."""
    root = tmp_path_factory.mktemp("matcher")
    return _program(root, False, ("sorted",), MATCH_C), _program(root, True, ("sorted",), MATCH_C)


def test_data_globals_are_on_the_object_that_defines_them(matcher):
    """Each data global of names.o (.bss, .data, .rodata, TLS), which the plan's units (code) do not
    place, is on names.o's row in --json and in the text: with the record beside
    the images (units.json) and with the objects read instead.  (Its .bss and .data move with
    the grown code before them; its .rodata and TLS stay.)"""
    for ctx in (contextlib.nullcontext, lambda: without_units(*matcher)):
        with ctx():
            d = both(*matcher)
            objs = {s["name"]: s["object"] for s in d["symbols"]}
            assert {objs[n] for n in MATCH_DATA} == {"names.o"}, objs
            row = {o["object"]: o["total"] for o in d["objects"]}
            assert row["names.o"] == 1 + len(MATCH_DATA)  # match() and its data
            text = lb("symdiff", str(matcher[0]), str(matcher[1]), env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
            assert NATIVE_SAYS in text.stderr
            assert "names.o 5 3 2 +192" in " ".join(text.stdout.split())
            rows = lb("symdiff", str(matcher[0]), str(matcher[1]), "--symbols", check=False).stdout.splitlines()
            assert any(r.split()[:3] == ["moved", "match_calls", "names.o"] for r in rows), rows


#: names.c: a weak zz_keep, which zz_extra.c's strong one overrides in the link
WEAK_C = "__attribute__((weak)) void zz_keep(int n) { (void)n; }\nint names_weak_user(int n) { zz_keep(n); return n; }\n"


def test_a_weak_definition_the_link_overrode_is_not_looked_for_where_the_plan_puts_it(tmp_path_factory, workdir):
    """names.o's weak zz_keep loses to zz_extra.o's strong one: replaying the plan over the objects (no
    units.json) finds each unit where the plan puts it and does not look for names.o's zz_keep, which
    the image does not hold there: the plan maps every symbol, without a note."""
    elf = _program(tmp_path_factory.mktemp("weak"), False, ("sorted",), WEAK_C)
    with without_units(elf):
        d = both(elf, elf)
    assert d["mapping"] == "plan" and d["notes"] == [], d["notes"]
    assert {s["object"] for s in d["symbols"] if s["name"] == "zz_keep"} == {"zz_extra.o"}


def test_two_build_specs_are_diffed_by_the_helper_under_their_labels(repo):  # noqa: F811
    """Build specs name images in the work dir: the helper diffs them (JSON and text), each side shown as
    its spec (kernel@commit:layout (image)), not as the path it was built to."""
    args = ("symdiff", f"minikernel@{repo['base']}:sorted", f"minikernel@{repo['edit']}:random:3",
            "--repo", str(repo["path"]))
    for extra in (("--json",), ()):
        fast = lb(*args, *extra, env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
        assert NATIVE_SAYS in fast.stderr and fast.returncode == 1, fast.stderr
    d = json.loads(lb(*args, "--json", check=False).stdout)
    assert d["old"]["label"] == f"minikernel@{repo['base'][:12]}:sorted (kernel)", d["old"]
    assert d["new"]["label"] == f"minikernel@{repo['edit'][:12]}:random:3 (kernel)", d["new"]
    assert d["old"]["path"].endswith("image.elf") and d["mapping"] == "plan"
    assert "crc32c" in {s["name"] for s in d["symbols"] if s["status"] in ("changed", "resized")}
    from layoutbench import specs  # a spec without a seed is the layout's seed 1; a REV may hold colons

    assert specs.parse_spec("minikernel@HEAD:random") == ("minikernel", "HEAD", "random", 1)
    assert specs.parse_spec("minikernel@v1:2:sorted:7") == ("minikernel", "v1:2", "sorted", 7)


def test_every_diff_of_the_package_is_the_helpers(repo, tmp_path, monkeypatch, capfd):  # noqa: F811
    """symdiff.diff_files (a bisection's code evidence, a report's page, the command) runs the helper;
    the labels name the sides; a file it cannot diff is a LayoutbenchError of one line."""
    from layoutbench import symdiff
    from layoutbench.errors import LayoutbenchError

    a, b = image(repo, "base", "sorted"), image(repo, "edit", "sorted")
    capfd.readouterr()
    monkeypatch.setenv("LAYOUTBENCH_NATIVE_TRACE", "1")
    res = symdiff.diff_files(a, b, ("parent", None))
    assert NATIVE_SAYS in capfd.readouterr().err
    assert (res.old.label, res.new.label) == ("parent", str(b)) and not res.placement_identical
    assert "crc32c" in {s.name for s in res.symbols if s.status in ("changed", "resized")}
    short = tmp_path / "short.elf"
    short.write_bytes(Path(b).read_bytes()[:100])
    with pytest.raises(LayoutbenchError, match=f"^{short}: truncated") as e:
        symdiff.diff_files(a, short)
    assert "\n" not in str(e.value)
    # two files the package's reader reads well, that the helper still cannot diff: its words, one line
    fake = tmp_path / "helper"
    fake.write_text("#!/bin/sh\necho 'layoutbench-symdiff: internal error at src/x.rs:1: boom' >&2\nexit 125\n")
    fake.chmod(0o755)
    monkeypatch.setattr(native, "binary", lambda: str(fake))
    with pytest.raises(LayoutbenchError, match=r"^the symdiff helper cannot diff .* \(internal error at src/x\.rs:1: "
                                               r"boom\); please report it with both files$"):
        symdiff.diff_files(a, b)


FLAVOUR_A = ("int g[4]; const char *names[2] = {\"a\", \"b\"};\n"
             "__attribute__((noinline)) static int h(int x) { return x * 3; }\n"
             "__attribute__((noinline)) int f(int x) { return h(x) + g[x & 3] + names[x & 1][0]; }\n"
             "void _start(void) { f(1); for (;;); }\n")
FLAVOUR_B = ("int k = 5;\n__attribute__((noinline)) int q(int x) { return x + k; }\n"
             "__attribute__((noinline)) int r(int x) { return q(x) * KMUL; }\n")


@pytest.mark.parametrize("target", ["i686-unknown-none-elf", "powerpc64-unknown-none-elf"])
def test_32_bit_and_big_endian_images_are_the_helpers_too(tmp_path, target):
    """ELF32 (i386) and big-endian (PowerPC 64) images: the helper reads them, JSON and text: two link
    orders of the same objects (what moved is moved:
    an address in their bytes is read in the file's byte order), and a function added."""
    def obj(name: str, text: str, mul: int) -> Path:
        src, o = tmp_path / f"{name}.c", tmp_path / f"{name}-{mul}.o"
        src.write_text(text)
        subprocess.run(["clang-19", f"--target={target}", "-ffreestanding", "-O1", f"-DKMUL={mul}", "-c", str(src),
                        "-o", str(o)], check=True)
        return o

    def link(out: str, *objs: Path) -> Path:
        elf = tmp_path / out
        subprocess.run(["ld.lld-19", "-e", "_start", "-o", str(elf), *map(str, objs)], check=True)
        return elf

    a, b, b2 = obj("a", FLAVOUR_A, 3), obj("b", FLAVOUR_B, 3), obj("b", FLAVOUR_B + "int pad(int x) { return "
                                                                    "x * x * x + 7 * x; }\n", 1000003)
    ab, ba, grown = link("ab.elf", a, b), link("ba.elf", b, a), link("grown.elf", a, b2)
    d = both(ab, ba)
    moved = {s["name"] for s in d["symbols"] if s["status"] == "moved"}
    assert {"k", "names"} <= moved, d["symbols"]  # data that moved with the link order
    if target.startswith("i686"):  # code too
        assert {"q", "r", "f", "h", "_start"} <= moved, d["symbols"]
    else:  # PowerPC 64's function symbols are descriptors in .opd that hold their code's address, 8 bytes
        # big-endian: read in the file's byte order, those whose bytes lie within one descriptor are moved
        assert {"q", "h", "_start"} <= moved and d["compared"]["address_fields"] > 0, d["symbols"]
    d = both(ab, grown)
    assert d["counts"]["added"] == 1 and {s["name"] for s in d["symbols"] if s["status"] == "added"} == {"pad"}
