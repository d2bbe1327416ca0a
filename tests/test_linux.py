"""Real Linux: Debian's linux-source-6.1 built once with LLVM, vmlinux relinked in several
layouts, each placement verified, each booted under QEMU to its benchmark's metric lines,
and two of them diffed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import lb, require
from layoutbench import build, elfinfo, layout, placement, profile, source, targets

TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
LAYOUTS = [("default", 0), ("sorted", 0), ("random", 1), ("function-aligned", 0)]

pytestmark = [
    pytest.mark.linux,
]


@pytest.fixture(autouse=True)
def _linux_source():
    require(None if TARBALL.is_file() else "Debian's linux-source-6.1 is not installed")


@pytest.fixture(scope="module")
def linux(workdir):
    prof = profile.load("linux")
    co = source.resolve(prof, None)
    objs, variants = build.build_variants(prof, co, LAYOUTS)
    return prof, objs, {v.layout: v for v in variants}


def test_relinked_layouts_obey_their_plans(linux):
    _, objs, v = linux
    objects = {o.path: o for o in objs.objects("vmlinux")}
    assert len(objects) > 500, "vmlinux is linked from hundreds of objects"
    assert sum(1 for o in objects.values() for s in o.sections if layout.section_kind(s) == "text") > 5000
    images = {}
    for name, var in v.items():
        plan = layout.LayoutPlan.from_json(var.plan_path.read_text())
        images[name] = elfinfo.read_image(var.elf)
        placement.check(plan, objects, images[name])  # raises on the first misplaced symbol
    # the layouts really differ, and the default one is the kernel's own order
    assert len({var.sha256 for var in v.values()}) == len(v)
    start = {name: img.symbol("__lb_text_units").value for name, img in images.items()}
    order = {name: layout.LayoutPlan.from_json(var.plan_path.read_text()).object_order() for name, var in v.items()}
    assert order["sorted"] == sorted(order["default"]) and order["random"] != order["sorted"]
    assert len(set(start.values())) == 1, "the layout starts at the same place in every variant"
    fa = images["function-aligned"]
    funcs = [s for s in fa.symbols if s.kind == "func" and s.section == ".text"]
    in_units = [s for s in funcs if start["function-aligned"] <= s.value < fa.symbol("__lb_text_units_end").value]
    at_section_start = {sym.name for o in objects.values() for sec in o.sections
                        if layout.section_kind(sec) == "text" for sym in sec.symbols if sym.value == 0}
    checked = [s for s in in_units if s.name in at_section_start]
    assert len(checked) > 3000 and all(s.value % 64 == 0 for s in checked)


@pytest.mark.parametrize("name", [n for n, _ in LAYOUTS])
def test_each_layout_boots_to_its_benchmark(linux, name, tmp_path):
    prof, _, v = linux
    target = targets.make(prof, "qemu")
    r = target.run(v[name].elf, tmp_path / "boot.log")
    assert r.status == "ok", f"{r.status}: {r.message}\n{r.output[-3000:]}"
    assert {s.metric for s in r.samples} >= {"getppid", "pipe_rtt", "tcp_rtt"}
    assert r.build.get("kernel") == "linux"


def test_symdiff_of_two_vmlinux_layouts(linux):
    _, _, v = linux
    p = lb("symdiff", str(v["sorted"].elf), str(v["random"].elf), "--json", check=False)
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    assert d["counts"]["moved"] > 1000 and d["counts"]["changed"] == 0, d["counts"]
    # both images are layoutbench's, each with its plan.json: symbols map to objects by the plans
    assert d["mapping"] == "plan" and d["shift_origin"] is not None, d["mapping"]
    same = lb("symdiff", str(v["default"].elf), str(v["default"].elf), check=False)
    assert same.returncode == 0, same.stdout + same.stderr
    # the native helper (layoutbench/native.py) prints what the Python path prints
    for a, b in (("sorted", "random"), ("default", "function-aligned")):
        args = ("symdiff", str(v[a].elf), str(v[b].elf), "--json")
        fast = lb(*args, env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
        slow = lb(*args, env={"LAYOUTBENCH_NATIVE": "0"}, check=False)
        assert "layoutbench-symdiff: native" in fast.stderr or os.environ.get("CI") is None, fast.stderr
        assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout), (a, b, fast.stderr)
        # every function is explained by address masking (jumps into .altinstr_aux, which has no
        # symbol, are named section + offset): none is left for llvm-objdump
        assert json.loads(fast.stdout)["compared"]["llvm_objdump"] == 0, (a, b)
        # the unit starts recorded at link time (units.json) map symbols as the replay of the
        # plan over the objects does
        recs = [v[x].elf.parent / placement.UNITS for x in (a, b)]
        assert all(r.is_file() for r in recs)
        for r in recs:
            r.rename(r.with_name("units.json.aside"))
        try:
            replayed = lb(*args, check=False)
        finally:
            for r in recs:
                r.with_name("units.json.aside").rename(r)
        assert (replayed.returncode, replayed.stdout) == (fast.returncode, fast.stdout), (a, b)


def test_fast_reader_agrees_with_pyelftools_on_vmlinux(linux):
    _, _, v = linux
    elf = v["sorted"].elf
    fast, ref = elfinfo.read_image(elf), elfinfo.read_image_reference(elf)
    assert fast.sections == ref.sections and fast.files == ref.files
    assert fast.symbols == ref.symbols and len(fast.symbols) > 10000


def test_a_relink_is_reproducible(linux):
    """The same layout and seed relinked from the same objects gives the same bytes."""
    _, objs, v = linux
    before = v["random"].elf.read_bytes()
    shutil.rmtree(v["random"].elf.parent)
    again = build.link_variant(objs, "vmlinux", "random", 1)
    assert again.linked_now and again.elf.read_bytes() == before


def test_the_cache_model_is_deterministic_and_sees_the_layout_of_linux(linux, tmp_path):
    """qemu-icache on vmlinux: the /init benchmark's syscalls (lbmodel: 1/100 of the iterations)
    between the markers, under -icount. Two boots of one image give the same counts; the layouts
    give different I1 misses for (nearly) the same instructions."""
    prof, _, v = linux
    target = targets.make(prof, "qemu-icache")

    def counts(name: str, n: int) -> dict[str, float]:
        r = target.run(v[name].elf, tmp_path / f"{name}-{n}.log")
        assert r.status == "ok", f"{r.status}: {r.message}\n{r.output[-3000:]}"
        return {s.metric: s.value for s in r.samples}

    first, again = counts("default", 1), counts("default", 2)
    assert set(first) == {"ic_cost", "ic_ir", "ic_i1_misses"}
    assert first == again, "two boots of one vmlinux give identical counts"
    runs = {"default": first, **{name: counts(name, 1) for name in ("random", "function-aligned")}}
    misses = {name: r["ic_i1_misses"] for name, r in runs.items()}
    assert len(set(misses.values())) == len(runs), f"every layout has its own miss count: {misses}"
    assert max(misses.values()) / min(misses.values()) > 1.001, misses
    irs = [r["ic_ir"] for r in runs.values()]
    assert max(irs) / min(irs) < 1.001, f"the layout hardly changes what runs: {irs}"
    assert first["ic_ir"] > 10_000_000, "the region holds the three benchmarks, kernel and user"
