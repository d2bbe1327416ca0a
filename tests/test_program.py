"""An ordinary C program (static glibc: crt files, init arrays, TLS) relinked in every layout.

The test writes a small program of several .c files (-ffunction-sections), a profile with
an image of kind ``program`` (the compiler driver links it with linker-scripts/program-text.ld,
which INCLUDEs the layout fragment into .text), and checks that every layout links, passes
the placement check, and runs natively (``local``) and under ``cachegrind``.  The same
program linked by a ``link_command`` (the user's own link with the same partial script)
keeps its execute bit and runs under both targets too.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from _programs import makefile, program_profile
from conftest import lb
from layoutbench import build, elfinfo, layout, metrics, placement, profile, source

ALL = ["default", "sorted", "aligned", "random", "function-aligned", "padded", "shuffled"]

MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
unsigned long mix(unsigned long x);
unsigned long table_sum(int n);
extern __thread int tls_calls;          /* TLS from another object */
static int ready;
__attribute__((constructor)) static void init(void) { ready = 42; }   /* an init array entry */
int main(int argc, char **argv) {
    long n = 20000;
    int timed = 1;   /* notime: no clock, so that the instruction count does not depend on the time */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "iterations=", 11) == 0) n = atol(argv[i] + 11);
        if (strcmp(argv[i], "notime") == 0) timed = 0;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    unsigned long h = 0;
    for (long i = 0; i < n; i++) h = mix(h + (unsigned long)i) ^ table_sum((int)(i & 63));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("LAYOUTBENCH build kernel=prog version=1 platform=hosted\n");
    if (timed) printf("LAYOUTBENCH metric name=ns_per_iter value=%.3f unit=ns better=lower\n", ns);
    printf("LAYOUTBENCH check name=hash value=0x%016lx\n", h);
    printf("LAYOUTBENCH check name=ctor_tls value=%d/%d\n", ready, tls_calls);
    printf("LAYOUTBENCH end status=%s\n", ready == 42 && tls_calls == n ? "ok" : "panic");
    return 0;
}
"""

MIX_C = r"""
__thread int tls_calls;
static unsigned long rot(unsigned long x, int r) { return (x << r) | (x >> (64 - r)); }
unsigned long mix(unsigned long x) { tls_calls++; x ^= rot(x, 13); x *= 0x9E3779B97F4A7C15ul; return x ^ rot(x, 29); }
"""

TABLE_C = r"""
static unsigned long table[64];
static void fill(void) { for (int i = 0; i < 64; i++) table[i] = (unsigned long)i * i + 7; }
unsigned long table_sum(int n) { if (!table[1]) fill(); unsigned long s = 0; for (int i = 0; i < n; i++) s += table[i]; return s; }
unsigned long unused_helper(int n) { return table_sum(n) * 3; }
"""

MAKEFILE = makefile("main.c mix.c table.c")

#: the same program, linked by the user's own command with the same script
BYHAND = """\
[images.byhand]
objects = "prog.objs"
kinds = ["text"]
link_command = "cd {objdir} && {cc} -static -fuse-ld=lld --ld-path={ld} -Wl,-T,{linker_scripts}/program-text.ld -Wl,-L,{fragment_dir} -o prog $(cat prog.objs)"
output = "prog"
"""

TARGETS = """\
[targets.cachegrind]
kind = "cachegrind"
image = "prog"
args = ["iterations=2000", "notime"]
i1 = "2048,2,64"

[targets.local-byhand]
kind = "local"
image = "byhand"
args = ["iterations=2000"]

[targets.cachegrind-byhand]
kind = "cachegrind"
image = "byhand"
args = ["iterations=2000", "notime"]
"""

#: the program's profile (its image ``prog`` linked by the compiler driver with linker-scripts/program-text.ld)
PROG = dict(description="a static-glibc C program (test)", images=BYHAND, args=("iterations=20000",), targets=TARGETS,
            metric="ns_per_iter")
PROFILE = program_profile("prog", **PROG)


@pytest.fixture(scope="module")
def prog(tmp_path_factory, workdir) -> Path:
    d = tmp_path_factory.mktemp("prog")
    (d / "src").mkdir()
    for name, text in {"main.c": MAIN_C, "mix.c": MIX_C, "table.c": TABLE_C, "Makefile": MAKEFILE}.items():
        (d / "src" / name).write_text(text)
    (d / "kernel.toml").write_text(PROFILE)
    return d / "kernel.toml"


@pytest.fixture(scope="module")
def linked(prog):
    prof = profile.load(str(prog))
    objs, variants = build.build_variants(prof, source.resolve(prof, None), layout.parse_specs(ALL, 3), ["prog"])
    return prof, objs, {v.layout: v for v in variants}


def test_program_image_kind_is_read_from_the_profile(prog):
    img = profile.load(str(prog)).image("prog")
    assert img.kind == "program" and img.kinds == ("text",)
    assert img.template.name == "program-text.ld" and img.driver and img.static


def test_every_layout_relinks_with_libc_and_passes_the_placement_check(linked):
    prof, objs, variants = linked
    assert set(variants) == set(ALL)
    objects = {o.path: o for o in objs.objects("prog")}
    addrs = {}
    for name, v in variants.items():
        plan = layout.LayoutPlan.from_json(v.plan_path.read_text())
        img = elfinfo.read_image(v.elf)
        placement.check(plan, objects, img)  # raises on any misplaced unit
        # a static glibc program: libc's code is linked too, outside the plan (after its units)
        start, end = img.symbol("__lb_text_units").value, img.symbol("__lb_text_units_end").value
        libc = [a for a in img.addresses().get("__libc_start_main", set())]
        assert libc and all(not (start <= a < end) for a in libc)
        assert os.access(v.elf, os.X_OK)
        addrs[name] = img.symbol("mix").value
    # the layouts really differ: mix() is not at the same place in all of them
    assert len(set(addrs.values())) > 2
    # function-aligned: every function of the plan's objects on 64 bytes
    img = elfinfo.read_image(variants["function-aligned"].elf)
    assert all(a % 64 == 0 for f in ("mix", "table_sum", "main", "unused_helper") for a in img.addresses()[f])


def test_a_misplaced_unit_is_caught(linked):
    """The check is not vacuous: the sorted plan does not describe the random image."""
    prof, objs, variants = linked
    plan = layout.LayoutPlan.from_json(variants["sorted"].plan_path.read_text())
    with pytest.raises(Exception, match="placement check failed"):
        placement.check(plan, {o.path: o for o in objs.objects("prog")}, elfinfo.read_image(variants["random"].elf))


@pytest.mark.parametrize("name", ALL)
def test_every_layout_runs_natively(linked, name):
    p = subprocess.run([str(linked[2][name].elf), "iterations=3000"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    parsed = metrics.parse(p.stdout)
    assert parsed.end == "ok" and parsed.checks["ctor_tls"] == "42/3000"
    assert [s.metric for s in parsed.samples] == ["ns_per_iter"]


def test_same_output_in_every_layout(linked):
    hashes = set()
    for v in linked[2].values():
        out = subprocess.run([str(v.elf), "iterations=500"], capture_output=True, text=True, timeout=60).stdout
        hashes.add(metrics.parse(out).checks["hash"])
    assert len(hashes) == 1


@pytest.mark.parametrize("layout_name", ALL)
def test_runs_under_local_and_cachegrind_targets(prog, linked, layout_name):
    for target in ("local", "cachegrind"):
        p = lb("run", str(prog), "--layout", layout_name, "--target", target, timeout=300)
        assert "-- ok" in p.stdout, p.stdout
        if target == "cachegrind":
            assert "name=cg_ir" in p.stdout and "name=cg_i1_misses" in p.stdout


def test_cachegrind_instruction_count_is_the_same_in_every_layout_and_misses_differ(linked, tmp_path):
    """Every layout runs the same instructions, and misses a small I1 differently.  Each image
    is run from the same path: glibc's start-up code reads the program's path (argv[0]), so
    a longer variant folder name (function-aligned-0) alone adds a few instructions."""
    import shutil

    from layoutbench.targets.cachegrind import read_summary

    ir, misses = {}, {}
    for name, v in linked[2].items():
        exe = tmp_path / "image.elf"
        shutil.copy2(v.elf, exe)
        out = tmp_path / f"{name}.cg"
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--I1=2048,2,64",
                        f"--cachegrind-out-file={out}", str(exe), "iterations=2000", "notime"],
                       check=True, capture_output=True, timeout=300)
        totals = read_summary(out)
        ir[name], misses[name] = totals["Ir"], totals["I1mr"]
    assert len(set(ir.values())) == 1, ir
    assert len(set(misses.values())) > 1, misses


def test_a_link_command_image_keeps_its_execute_bit_and_runs(prog, workdir):
    """The image a link_command writes is copied into the variant folder with its mode."""
    prof = profile.load(str(prog))
    objs = build.compile_objects(prof, source.resolve(prof, None))
    for name in ("default", "random"):
        v = build.link_variant(objs, "byhand", name, 5)
        assert os.stat(v.elf).st_mode & stat.S_IXUSR
        plan = layout.LayoutPlan.from_json(v.plan_path.read_text())
        placement.check(plan, {o.path: o for o in objs.objects("byhand")}, elfinfo.read_image(v.elf))
    for target in ("local-byhand", "cachegrind-byhand"):
        p = lb("run", str(prog), "--layout", "random", "--seed", "5", "--target", target, timeout=300)
        assert "-- ok" in p.stdout, p.stdout


def test_a_profile_found_by_name_through_layoutbench_profiles(prog, tmp_path):
    """LAYOUTBENCH_PROFILES names folders holding profile folders: `prog` is found by name."""
    p = lb("kernels", env={"LAYOUTBENCH_PROFILES": str(prog.parent.parent)})
    assert "a static-glibc C program (test)" in p.stdout
    bad = lb("build", "no-such-profile", check=False)
    assert bad.returncode != 0 and "unknown kernel 'no-such-profile'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_bad_image_kind_is_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "kernel.toml").write_text(PROFILE.replace('kind = "program"', 'kind = "exe"'))
    p = lb("build", str(tmp_path / "kernel.toml"), check=False)
    assert p.returncode != 0 and "kind 'exe' is not one of script, command, program" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_build_inputs_key_the_object_cache(tmp_path, fresh_workdir):
    """A file named in [build] inputs (a driver, a build script) is part of the objects' key."""
    (tmp_path / "src").mkdir()
    for name, text in {"main.c": MAIN_C, "mix.c": MIX_C, "table.c": TABLE_C, "Makefile": MAKEFILE}.items():
        (tmp_path / "src" / name).write_text(text)
    (tmp_path / "flags.mk").write_text("# v1\n")
    (tmp_path / "kernel.toml").write_text(program_profile("prog", **PROG, inputs=("flags.mk",)))
    prof = profile.load(str(tmp_path / "kernel.toml"))
    assert prof.build.inputs == ((tmp_path / "flags.mk").resolve(),)
    first = build.compile_objects(prof, source.resolve(prof, None)).info["config"]
    again = build.compile_objects(prof, source.resolve(prof, None)).info["config"]
    (tmp_path / "flags.mk").write_text("# v2\n")
    changed = build.compile_objects(prof, source.resolve(prof, None)).info["config"]
    assert first == again != changed
    (tmp_path / "kernel.toml").write_text(program_profile("prog", **PROG, inputs=("nope.mk",)))
    p = lb("build", str(tmp_path / "kernel.toml"), check=False)
    assert p.returncode != 0 and "inputs names" in p.stderr and "nope.mk" in p.stderr and "Traceback" not in p.stderr


def test_static_false_links_a_dynamic_pie_that_passes_the_check_and_runs(tmp_path, fresh_workdir):
    (tmp_path / "src").mkdir()
    for name, text in {"main.c": MAIN_C, "mix.c": MIX_C, "table.c": TABLE_C, "Makefile": MAKEFILE}.items():
        (tmp_path / "src" / name).write_text(text)
    (tmp_path / "kernel.toml").write_text(program_profile("prog", **PROG, image="static = false"))
    prof = profile.load(str(tmp_path / "kernel.toml"))
    assert prof.image("prog").static is False
    _, variants = build.build_variants(prof, source.resolve(prof, None), layout.parse_specs(["default,random"], 2),
                                       ["prog"])
    for v in variants:  # link_variant ran the placement check
        assert elfinfo.read_image(v.elf).symbol("__lb_text_units") is not None
        kind = subprocess.run(["readelf", "-h", str(v.elf)], capture_output=True, text=True).stdout
        assert "DYN" in kind  # a position-independent executable, libc linked dynamically
        p = subprocess.run([str(v.elf), "iterations=100"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and metrics.parse(p.stdout).end == "ok", p.stdout + p.stderr
