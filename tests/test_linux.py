"""Real Linux: Debian's linux-source-6.1, as the first commit of a short git history, built once
with LLVM, vmlinux relinked in several layouts, each placement verified, each booted under QEMU to
its benchmark's metric lines, two of them diffed; and that history bisected under the cache model
to the commit that slows getppid()."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git, lb, require, script
from layoutbench import build, elfinfo, layout, placement, profile, source, targets

TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
LAYOUTS = [("default", 0), ("sorted", 0), ("random", 1), ("function-aligned", 0)]

pytestmark = [
    pytest.mark.linux,
]


@pytest.fixture(autouse=True)
def _linux_source():
    require(None if TARBALL.is_file() else "Debian's linux-source-6.1 is not installed")


#: the planted step's turns of a two-instruction loop per getppid() (bench/debian_linux_history.py):
#: about +45% of the cache model's ic_cost, so that four layouts a side decide it
STEP_LOOPS = 200


@pytest.fixture(scope="module")
def linux_history(tmp_path_factory) -> tuple[Path, list[str]]:
    """A git repository of four commits: the tarball's tree; a Documentation change (the build reads
    none of it: its neighbour's objects are linked); getppid() slowed by a planted loop; a README
    change.  Returns the repository and the four commits, oldest first."""
    repo = tmp_path_factory.mktemp("linux-history")
    subprocess.run(["tar", "-xf", str(TARBALL), "-C", str(repo), "--strip-components=1"], check=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A", "-f", ".")  # the tree as shipped, whatever its .gitignore files say
    git(repo, "commit", "-q", "-m", "Debian's linux-source-6.1")
    dlh = script("bench/debian_linux_history.py")

    def change(path: str, edit, subject: str) -> None:
        f = repo / path
        f.write_text(edit(f.read_text()))
        git(repo, "commit", "-q", "-a", "-m", subject)

    change("Documentation/process/howto.rst", lambda s: s + "\nA line no build reads.\n", "docs: a line")
    change("kernel/sys.c", lambda s: s.replace(dlh.GETPPID, dlh.PLANTED_TEMPLATE % (STEP_LOOPS, STEP_LOOPS), 1),
           "getppid: a planted loop")
    change("README", lambda s: s + "\nA line no build reads.\n", "README: a line")
    commits = git(repo, "rev-list", "--reverse", "HEAD").split()
    assert len(commits) == 4 and dlh.GETPPID not in git(repo, "show", f"{commits[2]}:kernel/sys.c")
    return repo, commits


@pytest.fixture(scope="module")
def linux(workdir, linux_history):
    repo, commits = linux_history
    prof = profile.load("linux")
    co = source.resolve(prof, commits[0], str(repo))
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


#: booted under the timed target here; the cache-model test below boots the other two (and default)
TIMED_BOOTS = ("default", "sorted")


@pytest.mark.parametrize("name", TIMED_BOOTS)
def test_each_layout_boots_to_its_benchmark(linux, name, tmp_path):
    """Under the timed target (/init's full benchmark, about 30 s of TCG a boot); the layouts not
    booted here boot under the cache model in the test below, so that every layout boots."""
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
    # the native helper (layoutbench/native.py) diffs them
    for a, b in (("sorted", "random"), ("default", "function-aligned")):
        args = ("symdiff", str(v[a].elf), str(v[b].elf), "--json")
        fast = lb(*args, env={"LAYOUTBENCH_NATIVE_TRACE": "1"}, check=False)
        assert "layoutbench-symdiff: native" in fast.stderr and fast.returncode == 1, fast.stderr
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
    others = [n for n, _ in LAYOUTS if n not in TIMED_BOOTS]
    assert others, "every layout boots under one target or the other"
    runs = {"default": first, **{name: counts(name, 1) for name in others}}
    misses = {name: r["ic_i1_misses"] for name, r in runs.items()}
    assert len(set(misses.values())) == len(runs), f"every layout has its own miss count: {misses}"
    assert max(misses.values()) / min(misses.values()) > 1.001, misses
    irs = [r["ic_ir"] for r in runs.values()]
    assert max(irs) / min(irs) < 1.001, f"the layout hardly changes what runs: {irs}"
    assert first["ic_ir"] > 10_000_000, "the region holds the three benchmarks, kernel and user"


def test_a_linux_history_bisects_to_the_commit_that_slows_getppid(linux, linux_history, tmp_path):
    """The plain command on the four commits, under the cache model: the planted commit is named,
    slower, on fresh layouts; the commits that change only files the build does not read link their
    neighbour's objects (one compile beside the first commit's) and take its counts; the naive
    bisection beside it agrees; the same command reprints the verdict with its exit code."""
    repo, commits = linux_history
    args = ("bisect", "run", "linux", f"{commits[0]}..{commits[3]}", "--repo", str(repo), "--target", "qemu-icache",
            "--store", str(tmp_path / "store.sqlite"), "--exit-code")
    p = lb(*args, "--json", check=False, timeout=3000)
    assert p.returncode == 1, p.stderr[-4000:]
    v = json.loads(p.stdout)
    assert v["status"] == "found" and v["culprit"] == commits[2], (v["status"], v.get("culprit"), p.stderr[-4000:])
    assert v["metric"] == "ic_cost" and v["effect"]["verdict"] == "slower" and v["effect"]["ratio"] > 1.2, v["effect"]
    assert v["single_layout"]["culprit"] == commits[2] and v["single_layout"]["agrees"]
    c = v["cost"]
    assert c["compiled_now"] == 1, c  # the first commit's objects are the fixture's; the README commit reuses the plant's
    assert c["copied_now"] > 0, c  # the Documentation and README commits boot their neighbour's very images
    again = lb(*args, check=False)
    assert again.returncode == 1 and f"verdict: first bad commit {commits[2]}" in again.stdout, again.stdout[-3000:]
