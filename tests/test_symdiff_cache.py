"""symdiff on a static program linked against Debian's libc.a (clang-19 -static, ld.lld-19): the
C library's archive members are attributed to their members, never to a user object, one row per
object; the shift origin in .text is told first.  And ``symdiff --cache``: the minikernel's hosted
image in two layouts run under the profile's cachegrind target (a 4096-byte 2-way I1), its hot
functions' sets, the pairs that share sets in one image only, and the per-function misses.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from _programs import makefile, program_profile
from conftest import lb
from layoutbench import build, layout, profile, source

MAIN_C = r"""
#include <stdio.h>
int hot_step(int i);
int main(void) { int s = 0; for (int i = 0; i < 1000; i++) s += hot_step(i); printf("%d\n", s); return 0; }
"""
STAGE_C = r"""
#include <string.h>
static char buf[256];
static int cmp(const char *a, const char *b) { return strcmp(a, b); }
int hot_step(int i) { buf[i & 255] = (char)i; GROW return cmp(buf, "x") + (int)strlen(buf); }
"""
EXTRA_C = r"""
#include <stdlib.h>
static void *kept;
void zz_keep(int n) { free(kept); kept = malloc((size_t)n); }
"""
MAKEFILE = makefile("main.c stage_d.c zz_extra.c")
PROFILE = program_profile("stagep", description="a static program against libc.a (test)")
GROWN = ("for (int k = 0; k < (i & 7); k++) buf[(i + k * 31) & 255] ^= (char)(k * i + (i >> 3)); "
         "if (memchr(buf, i, 9) && strrchr(buf, 'q')) buf[1]++;")  # two more IFUNCs: .rela.iplt and .init move


def _program(root, grow: bool, layouts=("default",), names_c: str | None = None):
    """The static program built once and linked in ``layouts``; ``names_c``: one more object
    (names.c), linked after the others."""
    d = root / (("grown" if grow else "base") + ("-names" if names_c else ""))
    (d / "src").mkdir(parents=True)
    files = {"main.c": MAIN_C, "stage_d.c": STAGE_C.replace("GROW", GROWN if grow else ""), "zz_extra.c": EXTRA_C,
             "Makefile": makefile("main.c stage_d.c zz_extra.c names.c") if names_c else MAKEFILE}
    if names_c:
        files["names.c"] = names_c
    for name, text in files.items():
        (d / "src" / name).write_text(text)
    (d / "kernel.toml").write_text(PROFILE)
    prof = profile.load(str(d / "kernel.toml"))
    _, vs = build.build_variants(prof, source.resolve(prof, None), layout.parse_specs(list(layouts), 1), ["prog"])
    return vs[0].elf if len(vs) == 1 else [v.elf for v in vs]


@pytest.fixture(scope="module")
def static_pair(tmp_path_factory, workdir):
    root = tmp_path_factory.mktemp("staticlibc")
    return _program(root, False), _program(root, True)


#: an object with data only: a layout that places text (function-aligned) has no unit of it; its
#: static ``lock`` has the name of a local of glibc's random.o, which its pointer to rand links in
NAMES_C = r"""
#include <stdlib.h>
static const char *names_tab[4] = {"a", "b", "c", "d"};
static int names_hits[16];
static int lock[2] = {1, 2};
const char **names_ptr = names_tab;
int *names_count = names_hits;
int *names_lock = lock;
int (*names_rand)(void) = rand;
"""
RELINKED = ("default", "function-aligned", "random", "sorted")


@pytest.fixture(scope="module")
def relinked(tmp_path_factory, workdir):
    """The static program with a data-only object, linked in four layouts of its text."""
    return dict(zip(RELINKED, _program(tmp_path_factory.mktemp("relinked"), False, RELINKED, NAMES_C)))


def test_relinked_static_program_keeps_every_symbol_on_its_object(relinked):
    """Layouts of the same objects: nothing added, removed or changed between them, and every
    symbol on the same object row in each image, whatever the layout's units (function-aligned
    has no unit of names.o, which holds data only) or the order it places them in.  names.o's
    globals are on its row (the data globals recorded beside each image name their object) and
    so are its statics (its file's row is its object's), never on a libc member or a crt file;
    libc's on their members."""
    for lay in RELINKED[1:]:
        d = json.loads(lb("symdiff", str(relinked["default"]), str(relinked[lay]), "--json", check=False).stdout)
        assert d["mapping"] == "plan" and not d["notes"], (lay, d["notes"])
        c = d["counts"]
        assert c["added"] == c["removed"] == c["changed"] == 0, (lay, c)
    rows = {}
    for lay, elf in relinked.items():
        d = json.loads(lb("symdiff", str(elf), str(elf), "--json", check=False).stdout)
        rows[lay] = sorted((s["name"], s["object"]) for s in d["symbols"])
        by = dict(rows[lay])
        assert by["names_ptr"] == by["names_count"] == by["names_rand"] == "names.o", lay
        assert by["names_tab"] == by["names_hits"] == "names.o", lay
        # the user's static lock stays on its object (no unit places code of names.o: the symbol
        # table's order tells); glibc's of the same name (several members define one) go to libc
        # members, none to a user's object
        locks = [o for n, o in rows[lay] if n == "lock"]
        assert locks.count("names.o") == 1 and len(locks) > 1, (lay, locks)
        assert all(o == "names.o" or o.startswith("libc.a(") for o in locks), (lay, locks)
        assert by["strcmp"] == "libc.a(strcmp.o)" and by["hot_step"] == by["buf"] == "stage_d.o", lay
        assert "stage_d.c" not in {o["object"] for o in d["objects"]}, lay
    assert rows["default"] == rows["function-aligned"] == rows["random"] == rows["sorted"]


def _libc_globals() -> set[str]:
    lib = subprocess.run(["clang-19", "-print-file-name=libc.a"], capture_output=True, text=True).stdout.strip()
    out = subprocess.run(["llvm-nm-19", "-g", "--defined-only", "-P", lib], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line and not line.endswith(":")}


USER = {"main.o", "stage_d.o", "zz_extra.o"}


def test_static_libc_members_are_not_user_objects(static_pair):
    """Every symbol libc.a defines is attributed to a libc.a member, the toolchain row or crt file,
    never to a user object; strcmp to libc.a(strcmp.o); the user's objects are one row each,
    named by the plan (no stage_d.c beside stage_d.o), holding exactly their own symbols."""
    a, b = static_pair
    d = json.loads(lb("symdiff", str(a), str(b), "--json", check=False).stdout)
    libc = _libc_globals()
    by = {}
    for s in d["symbols"]:
        by.setdefault(s["name"], []).append(s["object"])
    wrong = sorted(n for n, objs in by.items() if n in libc and any(o in USER or o.endswith(".c") for o in objs))
    assert not wrong, wrong[:20]
    assert by["strcmp"] == ["libc.a(strcmp.o)"]
    assert by["__libc_start_main"] == ["libc.a(libc-start.o)"]
    assert all(o.startswith("libc.a(") for o in by["free_mem"])  # a static function of several members
    rows = {o["object"] for o in d["objects"]}
    assert USER <= rows and not any(r.endswith(".c") and r != "crtstuff.c" for r in rows), sorted(rows)[:20]
    mine = {s["name"] for s in d["symbols"] if s["object"] in USER}
    assert mine == {"main", "hot_step", "zz_keep", "buf", "kept"}, mine


def test_own_only_leaves_the_c_library_out(static_pair):
    """--own-only: the static program's own objects are diffed and nothing of libc.a or the crt
    files is listed, in the JSON or the text; a note says how many symbols were left out."""
    a, b = static_pair
    whole = json.loads(lb("symdiff", str(a), str(b), "--json", check=False).stdout)
    d = json.loads(lb("symdiff", str(a), str(b), "--json", "--own-only", check=False).stdout)
    objs = {s["object"] for s in d["symbols"]}
    assert objs and not any(o.startswith("libc.a(") or o in ("crt1.o", "(toolchain / archives)") for o in objs), objs
    assert {"main", "hot_step", "buf"} <= {s["name"] for s in d["symbols"]}
    assert 0 < len(d["symbols"]) < len(whole["symbols"]) and sum(d["counts"].values()) < sum(whole["counts"].values())
    assert any(n.startswith("--own-only: ") for n in d["notes"]), d["notes"]
    text = lb("symdiff", str(a), str(b), "--symbols", "--own-only", check=False).stdout
    assert "libc.a(" not in text and "main.o" in text, text[:2000]


def test_static_libc_members_without_a_plan(static_pair, tmp_path):
    """The same images as bare ELF files (no plan beside them: objects from STT_FILE symbols):
    the source files' rows hold only their own symbols, libc's are on libc.a members."""
    sides = []
    for i, elf in enumerate(static_pair):
        (tmp_path / str(i)).mkdir()
        sides.append(tmp_path / str(i) / "prog")
        sides[-1].write_bytes(elf.read_bytes())
    d = json.loads(lb("symdiff", *map(str, sides), "--json", check=False).stdout)
    assert d["mapping"] == "file"
    files = {s["name"] for s in d["symbols"] if s["object"] in ("main.c", "stage_d.c", "zz_extra.c")}
    assert files and files <= {"main", "hot_step", "zz_keep", "buf", "kept", "cmp"}, sorted(files)[:20]
    by = {s["name"]: s["object"] for s in d["symbols"]}
    assert by["strcmp"] == "libc.a(strcmp.o)" and by["_start"] == "crt1.o" and by["buf"] == "stage_d.c"


def test_static_libc_origin_in_text_first_and_said_plainly(static_pair):
    """hot_step grew and calls two more IFUNCs of libc (memchr, strrchr): .init, placed before
    .text, starts later too (the IFUNC relocations before it grew), but the first shift origin
    is in .text and names hot_step; .init's is told after it."""
    a, b = static_pair
    d = json.loads(lb("symdiff", str(a), str(b), "--json", check=False).stdout)
    first = d["shift_origins"][0]
    assert first["section"] == ".text", d["shift_origins"][:3]
    assert first["cause"] == "resized" and first["responsible"] == "stage_d.o:hot_step", first
    assert any(g["section"] == ".init" for g in d["shift_origins"][1:]), d["shift_origins"]
    assert all("nothing" not in g["detail"] for g in d["shift_origins"])


# -- the cache view -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mini(tmp_path_factory, workdir):
    from conftest import mini_repo

    return mini_repo(tmp_path_factory.mktemp("cacheview") / "mini")


def _view(mini, *extra):
    p = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo", str(mini),
           "--cache", "L1I", "--json", *extra, check=False)
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)["cache"]


def test_cache_view_names_the_colliding_pairs_and_the_misses_that_moved(mini):
    """default vs aligned of the minikernel's hosted image, each run under the profile's cachegrind
    target (i1 = 4096,2,64: 32 sets): twice, the same counts to the miss.  The function whose
    misses changed most is named with the hot functions it shares sets with in the image where
    it misses more, and does not share them with in the other; the per-function misses add up
    to cachegrind's totals."""
    v1, v2 = _view(mini), _view(mini)
    assert v1 == v2
    assert v1["geometry"] == {"size": 4096, "ways": 2, "line": 64, "sets": 32,
                              "source": "minikernel's target cachegrind (cachegrind) i1"}
    tot = v1["total"]["i1_misses"]
    assert tot["old"] != tot["new"] and tot["delta"] == sum(m["delta"] for m in v1["misses"])
    top = v1["misses"][0]
    assert abs(top["delta"]) == max(abs(m["delta"]) for m in v1["misses"])
    assert top["partners"], top
    worse = "new" if top["delta"] > 0 else "old"
    other = "old" if worse == "new" else "new"
    funcs = {f["name"]: f for f in v1["functions"]}
    for partner in top["partners"]:
        shared = set(funcs[top["name"]][worse]["sets"]) & set(funcs[partner][worse]["sets"])
        assert shared and not set(funcs[top["name"]][other]["sets"]) & set(funcs[partner][other]["sets"])
        pair = next(p for p in v1["pairs"] if {p["a"], p["b"]} == {top["name"], partner})
        assert pair["in"] == worse and pair["shared_sets"][worse] == sorted(shared)
    for f in v1["functions"]:  # sets are the lines modulo 32
        for side in ("old", "new"):
            first, last = f[side]["lines"]
            assert f[side]["sets"] == sorted({ln % 32 for ln in range(first, last + 1)})


def test_cache_view_named_functions_and_given_geometry(mini):
    """--functions with a geometry given (no cachegrind run): their sets in both images."""
    p = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo", str(mini),
           "--cache", "2048,2,64", "--functions", "crc32c,memcpy", "--json", check=False)
    v = json.loads(p.stdout)["cache"]
    assert [f["name"] for f in v["functions"]] == ["crc32c", "memcpy"] and v["misses"] == []
    assert v["geometry"]["sets"] == 16 and all(s < 16 for f in v["functions"] for s in f["new"]["sets"])
    data = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo",
              str(mini), "--cache", "2048,2,64", "--functions", "crc32c_table", check=False)  # an array: no function
    assert data.returncode == 2 and data.stderr.splitlines()[-1] == ("layoutbench: error: --functions: no function "
                                                                     "crc32c_table in either image"), data.stderr
    bad = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo",
             str(mini), "--cache", "3000,2,64", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("layoutbench: error: cache geometry") and \
        "Traceback" not in bad.stderr


def _cg_annotate(out) -> dict[str, tuple[int, int]]:
    """function → (Ir, I1mr) as valgrind's cg_annotate prints them (functions above its threshold)."""
    text = subprocess.run(["cg_annotate", "--show=Ir,I1mr", str(out)], capture_output=True, text=True,
                          check=True).stdout
    got = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+([\d,]+) \([^)]*\)\s+[^:\s]+:(\S+)$", line)
        if m:
            got[m.group(3)] = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    return got


def test_cache_view_counts_are_cg_annotates(mini, tmp_path):
    """The images run under the profile's cachegrind target here, their output files given with
    --cachegrind-out: every function cg_annotate lists has the same Ir and I1 misses in the view,
    and the view equals the one from symdiff's own cachegrind runs."""
    from layoutbench import targets

    d = json.loads(lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo",
                      str(mini), "--json", check=False).stdout)
    t = targets.make(profile.load("minikernel"), "cachegrind")
    outs = []
    for side in ("old", "new"):
        log = tmp_path / f"{side}.log"
        t.run(Path(d[side]["path"]), log)
        outs.append(log.with_suffix(".cachegrind"))
    v = _view(mini, "--cachegrind-out", str(outs[0]), "--cachegrind-out", str(outs[1]))
    ran = _view(mini)
    assert v["counts_run"] == {"files": [str(f) for f in outs]} and ran["counts_run"] == {"target": "cachegrind",
                                                                                         "args": ""}
    assert {k: x for k, x in v.items() if k != "counts_run"} == {k: x for k, x in ran.items() if k != "counts_run"}
    misses = {m["name"]: m for m in v["misses"]}
    funcs = {f["name"]: f for f in v["functions"]}
    for side, out in zip(("old", "new"), outs):
        listed = _cg_annotate(out)
        assert len(listed) > 20
        for name, (ir, i1mr) in listed.items():
            if name in misses:
                assert misses[name][side] == i1mr, (side, name)
            if name in funcs:
                assert funcs[name]["ir"][side] == ir and funcs[name]["i1_misses"][side] == i1mr, (side, name)
        assert sum(i1mr for _, i1mr in listed.values()) <= v["total"]["i1_misses"][side]


def test_cache_view_counts_what_compare_stores_for_the_same_images_and_arguments(mini, tmp_path):
    """The two images measured by `compare` under the cachegrind target with --args iterations=300:
    `symdiff --cache --args iterations=300` counts the I1 misses compare stored for each image, to
    the miss; without the arguments the program runs otherwise, its counts differ, and the view says
    which arguments its runs had."""
    store = tmp_path / "s.sqlite"
    lb("compare", "minikernel", "--repo", str(mini), "--target", "cachegrind", "--layouts",
       "default,aligned", "--runs", "1", "--args", "iterations=300", "--store", str(store), "--json")
    import sqlite3

    with sqlite3.connect(store) as db:
        stored = dict(db.execute("SELECT b.layout, s.value FROM samples s JOIN runs r ON r.id = s.run_id JOIN builds b "
                                 "ON b.id = r.build_id WHERE s.metric = 'cg_i1_misses'").fetchall())
    v = _view(mini, "--args", "iterations=300")
    assert v["counts_run"] == {"target": "cachegrind", "args": "iterations=300"}
    tot = v["total"]["i1_misses"]
    assert (tot["old"], tot["new"]) == (stored["default"], stored["aligned"])
    bare = _view(mini)
    assert bare["counts_run"]["args"] == "" and bare["total"]["i1_misses"]["old"] != stored["default"]
    text = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo", str(mini),
              "--cache", "L1I", "--args", "iterations=300", check=False).stdout
    assert "counts: one cachegrind run of each image made here, with arguments 'iterations=300': a compare or " \
           "history of these images counts the same when run with the same --args" in text
    bad = lb("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--args", "x=1", check=False)
    assert bad.returncode == 2 and "--args go with --cache" in bad.stderr and "Traceback" not in bad.stderr


# -- a crafted pair: two hot functions in one set of a direct-mapped cache, or not ---------------

HOT_C = r"""
#include <stdlib.h>
int hot_f(int x);
int hot_g(int x);
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000;
    int s = 0;
    for (long i = 0; i < n; i++) s = hot_f(s) + hot_g(s);
    return s == 12345;
}
"""
F_C = "int hot_f(int x) { return (x * 3 + 1) & 0xffff; }\n"
G_C = "int hot_g(int x) { return (x ^ 0x55) & 0xfff; }\n"
PAD_S = """\
  .section .text.pad,"ax",@progbits
  .globl pad_block
  .type pad_block,@function
pad_block:
  .fill {n},1,0x90
  .size pad_block, {n}
"""
I1 = (1024, 1, 64)  # 16 sets, direct-mapped: two functions in one set evict each other on every call
CALLS = 10000


def _sets_of(elf: Path, name: str) -> set[int]:
    out = subprocess.run(["llvm-nm-19", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    addr, size = next((int(w[0], 16), int(w[1], 16)) for w in map(str.split, out.splitlines())
                      if len(w) == 4 and w[3] == name)
    return {line % (I1[0] // I1[2]) for line in range(addr // I1[2], (addr + size - 1) // I1[2] + 1)}


@pytest.fixture(scope="module")
def colliding(tmp_path_factory):
    """A static program calling hot_f and hot_g in turn, linked main, hot_f, a block of padding,
    hot_g: with the padding that puts hot_g in hot_f's set ("collide") and with one that does not
    ("apart"); each run once under cachegrind with that I1."""
    d = tmp_path_factory.mktemp("collide")
    for name, text in {"hot.c": HOT_C, "f.c": F_C, "g.c": G_C}.items():
        (d / name).write_text(text)
        subprocess.run(["clang-19", "-O1", "-c", name], cwd=d, check=True)
    out = {}
    for side in ("apart", "collide"):
        elf = d / side
        for pad in range(64, 64 + I1[0], 64):  # the first padding that gives the wanted answer
            (d / "pad.s").write_text(PAD_S.format(n=pad))
            subprocess.run(["clang-19", "-c", "pad.s"], cwd=d, check=True)
            subprocess.run(["clang-19", "-static", "-fuse-ld=lld", "-o", side, "hot.o", "f.o", "pad.o", "g.o"],
                           cwd=d, check=True)
            if bool(_sets_of(elf, "hot_f") & _sets_of(elf, "hot_g")) == (side == "collide"):
                break
        else:
            pytest.fail(f"no padding puts hot_g {side} from hot_f")
        cg = d / f"{side}.cachegrind"
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--I1={','.join(map(str, I1))}",
                        f"--cachegrind-out-file={cg}", str(elf), str(CALLS)], check=True, capture_output=True,
                       timeout=600)
        out[side] = (elf, cg)
    return out


def test_cache_view_of_a_crafted_collision_names_the_pair_and_the_misses(colliding):
    """Apart vs collide: the view names hot_f + hot_g as the pair that shares a set in the new
    image only (the set the symbol addresses give), and their I1 misses side by side, exactly:
    one cold miss each when apart, one per call (10,000) when they collide; those two lines are
    all of the change but a few misses."""
    (a, cga), (b, cgb) = colliding["apart"], colliding["collide"]
    p = lb("symdiff", str(a), str(b), "--cache", ",".join(map(str, I1)), "--cachegrind-out", str(cga),
           "--cachegrind-out", str(cgb), "--json", check=False)
    assert p.returncode in (0, 1), p.stderr
    v = json.loads(p.stdout)["cache"]
    shared = sorted(_sets_of(b, "hot_f") & _sets_of(b, "hot_g"))
    pair = next((x for x in v["pairs"] if {x["a"], x["b"]} == {"hot_f", "hot_g"}), None)
    assert pair is not None and pair["in"] == "new" and pair["shared_sets"] == {"old": [], "new": shared}, pair
    top = {m["name"]: m for m in v["misses"][:2]}
    assert set(top) == {"hot_f", "hot_g"}, v["misses"][:3]
    for name, other in (("hot_f", "hot_g"), ("hot_g", "hot_f")):
        assert (top[name]["old"], top[name]["new"]) == (1, CALLS), top[name]
        assert other in top[name]["partners"], top[name]
    tot = v["total"]["i1_misses"]
    assert 0 <= tot["delta"] - 2 * (CALLS - 1) <= 5, tot
    text = lb("symdiff", str(a), str(b), "--cache", ",".join(map(str, I1)), "--cachegrind-out", str(cga),
              "--cachegrind-out", str(cgb), check=False).stdout
    assert re.search(r"hot_f\s+1\s+10,000\s+\+9,999\s+hot_g", text), text


def test_cache_view_refuses_counts_of_two_models(colliding, tmp_path):
    """A cachegrind output beside a QEMU cache model's .blocks file: one line naming both files, exit 2,
    whichever side each is on (each file is well formed for its kind)."""
    (a, cga), (b, cgb) = colliding["apart"], colliding["collide"]
    blocks = tmp_path / "collide.blocks"
    blocks.write_text("")  # an empty blocks file: no block measured
    for first, second in ((cga, blocks), (blocks, cgb)):
        p = lb("symdiff", str(a), str(b), "--cache", ",".join(map(str, I1)), "--cachegrind-out", str(first),
               "--cachegrind-out", str(second), check=False)
        assert p.returncode == 2 and p.stdout == "", p
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and str(first) in err[0] and str(second) in err[0] and "one kind" in err[0], err


def test_cache_view_from_the_qemu_cache_model_maps_its_blocks_to_functions(mini, tmp_path):
    """The minikernel's bootable image, default vs aligned, booted under the profile's qemu-icache
    target (TCG, -icount, the same 4096-byte 2-way I1): the plugin's per-block counts, given as its
    .blocks files, are summed per function, the same view as symdiff's own runs of the model; the
    misses per function add up to the model's own total but those of the few blocks that hold a
    marker (simulated instruction by instruction, not written per block)."""
    from layoutbench import targets
    from layoutbench.targets.qemu_icache import read_result

    args = ("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "kernel", "--repo", str(mini))
    d = json.loads(lb(*args, "--json", check=False).stdout)
    t = targets.make(profile.load("minikernel"), "qemu-icache")
    measured = tmp_path / "measured.log"
    t.run(Path(d["old"]["path"]), measured)  # a measurement writes its result, not the blocks
    assert measured.with_suffix(".icache").is_file() and not t.blocks_file(measured).exists()
    t.blocks = True
    blocks, totals = [], []
    for side in ("old", "new"):
        log = tmp_path / f"{side}.log"
        t.run(Path(d[side]["path"]), log)
        blocks.append(str(t.blocks_file(log)))
        totals.append(int(read_result(log.with_suffix(".icache"))["i1_misses"]))
    p = lb(*args, "--cache", "L1I", "--target", "qemu-icache", "--cachegrind-out", blocks[0], "--cachegrind-out",
           blocks[1], "--json", check=False)
    v = json.loads(p.stdout)["cache"]
    own = json.loads(lb(*args, "--cache", "L1I", "--target", "qemu-icache", "--json", check=False).stdout)["cache"]
    assert v["counts_run"] == {"files": blocks} and own["counts_run"] == {"target": "qemu-icache", "args": ""}
    assert {k: x for k, x in v.items() if k != "counts_run"} == {k: x for k, x in own.items() if k != "counts_run"}
    assert v["counts_from"] == "qemu-icache"
    tot = v["total"]["i1_misses"]
    for side, model in zip(("old", "new"), totals):
        assert model - 100 <= tot[side] <= model, (side, tot[side], model)
    top = v["misses"][0]
    assert top["delta"] and top["name"] != "(no function)" and top["partners"], top
    funcs = {f["name"]: f for f in v["functions"]}
    assert funcs[top["name"]]["i1_misses"] == {"old": top["old"], "new": top["new"]}


def test_an_images_identity_is_its_code(tmp_path):
    """A cachegrind file is checked against the image by identity: without a build id, a hash of the
    executable sections -- the same code with other data is the same program, other code is not."""
    from layoutbench.cacheview.counts import identity

    def image(name: str, data: int, mul: int) -> Path:
        src, obj, elf = tmp_path / f"{name}.c", tmp_path / f"{name}.o", tmp_path / f"{name}.elf"
        src.write_text(f"int d = {data};\n__attribute__((noinline)) int f(int x) {{ return x * {mul}; }}\n"
                       "void _start(void) { for (;;) d = f(d); }\n")
        subprocess.run(["clang-19", "-ffreestanding", "-O1", "-c", str(src), "-o", str(obj)], check=True)
        subprocess.run(["ld.lld-19", "-e", "_start", "-o", str(elf), str(obj)], check=True)
        return elf

    a, other_data, other_code = image("a", 1, 3), image("b", 2, 3), image("c", 1, 5)
    assert a.read_bytes() != other_data.read_bytes()
    assert identity(a) == identity(other_data) != identity(other_code) and identity(a).startswith("text:")


def test_cache_view_text_names_the_cache_and_its_sets_as_ranges(mini):
    """The text: the cache's geometry first, then each function's sets as ranges (1-3,7)."""
    from layoutbench.cacheview.view import _ranges

    assert (_ranges([7, 1, 3, 2, 3]), _ranges([5]), _ranges([]), _ranges([0, 2, 4])) == ("1-3,7", "5", "", "0,2,4")
    args = ("symdiff", "minikernel@HEAD:default", "minikernel@HEAD:aligned", "--image", "hosted", "--repo", str(mini),
            "--cache", "2048,2,64", "--functions", "crc32c")
    v = json.loads(lb(*args, "--json", check=False).stdout)["cache"]
    text = lb(*args, check=False).stdout
    assert "cache: 2048 bytes, 2-way, 64-byte lines = 16 sets (from " in text, text
    row = next(ln.split() for ln in text.splitlines() if ln.split()[:1] == ["crc32c"])
    assert row[2:4] == [_ranges(v["functions"][0]["old"]["sets"]), _ranges(v["functions"][0]["new"]["sets"])], row
