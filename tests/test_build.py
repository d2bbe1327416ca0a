"""Job 1: layout variants of the minikernel, with real clang, lld, QEMU and valgrind."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import MINI_TOML, git, lb, mini_repo, require
from layoutbench import build, elfinfo, layout, metrics, placement, profile, reuse, source
from layoutbench.errors import LayoutbenchError
from layoutbench.targets import qemu as qemu_target

ALL = ["default", "sorted", "aligned", "random", "function-aligned", "padded", "shuffled"]
QEMU_ITER = "iterations=300"


@pytest.fixture(scope="session")
def mini(workdir):
    """The minikernel's working tree compiled once, and every layout of both images."""
    prof = profile.load("minikernel")
    co = source.resolve(prof, None)
    objs, variants = build.build_variants(prof, co, layout.parse_specs(ALL, 1))
    return prof, objs, {(v.image, v.layout): v for v in variants}


def run_hosted(elf: Path, *args: str) -> metrics.Parsed:
    p = subprocess.run([str(elf), *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return metrics.parse(p.stdout)


def boot(elf: Path, *args: str) -> tuple[int, str]:
    accel, _ = qemu_target.detect_accelerator()
    cmd = ["qemu-system-x86_64", "-accel", accel, "-machine", "q35", "-m", "128M", "-cpu", "max",
           "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-kernel", str(elf), "-append", " ".join(args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout


def test_layouts_command_lists_every_layout():
    out = lb("layouts").stdout.splitlines()
    assert [ln.split()[0] for ln in out] == ALL


def test_minikernel_is_kernel_shaped(mini):
    prof, objs, _ = mini
    kernel = objs.object_list("kernel")
    hosted = objs.object_list("hosted")
    assert len(set(kernel) | set(hosted)) >= 30
    assert {p.split("/")[0] for p in kernel} >= {"boot", "kern", "net", "dev", "lib"}
    # the hot path is well beyond a 32 KiB L1 instruction cache
    text = sum(s.size for o in objs.objects("hosted") for s in o.sections if layout.section_kind(s) == "text")
    assert text > 64 * 1024


@pytest.mark.parametrize("name", ALL)
def test_every_layout_boots_and_prints_metrics(mini, name):
    """Each layout of the kernel boots under QEMU, prints its metrics, its plan id, and the
    same checksum as the hosted default build."""
    _, _, v = mini
    reference = run_hosted(v[("hosted", "default")].elf, QEMU_ITER)
    code, console = boot(v[("kernel", name)].elf, QEMU_ITER)
    parsed = metrics.parse(console)
    assert code == 33, console[-2000:]
    assert parsed.end == "ok"
    assert {s.metric for s in parsed.samples} >= {"cycles_per_packet"}
    assert int(parsed.build["plan"], 16) == int(v[("kernel", name)].plan_id, 16)
    assert parsed.checks["checksum"] == reference.checks["checksum"]
    hosted = run_hosted(v[("hosted", name)].elf, QEMU_ITER)
    assert hosted.checks["checksum"] == reference.checks["checksum"]


def _check(objs, image: str, plan: layout.LayoutPlan, elf: Path) -> None:
    placement.check(plan, {o.path: o for o in objs.objects(image)}, elfinfo.read_image(elf))


@pytest.mark.parametrize("name", ALL)
def test_placement_holds_for_every_layout(mini, name):
    """The check holds; the units recorded beside the image at link time (units.json, what symdiff
    maps symbols to objects by) are the replay's, in its order, and belong to this image only."""
    _, objs, v = mini
    for image in ("kernel", "hosted"):
        var = v[(image, name)]
        plan = layout.LayoutPlan.from_json(var.plan_path.read_text())
        _check(objs, image, plan, var.elf)
        info = elfinfo.read_image(var.elf)
        replayed = placement.replay(plan, {o.path: o for o in objs.objects(image)}, info).starts
        where = placement.markers(plan, info)
        rec = placement.recorded(var.elf, f"0x{plan.plan_id:07x}", where)
        assert rec is not None and list(rec.items()) == list(replayed.items()) and len(rec) > 5
        assert placement.recorded(var.elf, "0x0000000", where) is None
        assert placement.recorded(var.elf, f"0x{plan.plan_id:07x}", {n: a + 1 for n, a in where.items()}) is None
        # and the object of each data global of every linked object: a global of that name in the image
        _, owners = placement.read_record(var.elf, f"0x{plan.plan_id:07x}", where)
        assert owners == placement.data_owners({o.path: o for o in objs.objects(image)}) and owners
        in_image = {s.name for s in info.symbols if s.bind != "local" and s.kind in ("object", "tls")}
        assert set(owners) <= in_image, set(owners) - in_image


def test_layout_promises_seen_in_the_image(mini):
    """Independent of the plan: aligned objects start on pages, functions on 64 bytes, sorted is sorted."""
    _, objs, v = mini
    img = elfinfo.read_image(v[("hosted", "function-aligned")].elf)
    funcs = [s for s in img.symbols if s.kind == "func" and s.section == ".text" and s.size > 0]
    starts = {(o.path, sec.name): sym.name for o in objs.objects("hosted") for sec in o.sections
              for sym in sec.symbols if sym.kind == "func" and sym.value == 0 and layout.section_kind(sec) == "text"}
    at_start = set(starts.values())
    checked = [f for f in funcs if f.name in at_start]
    assert len(checked) > 100
    assert all(f.value % 64 == 0 for f in checked)
    default = elfinfo.read_image(v[("hosted", "default")].elf)
    assert any(f.value % 64 for f in default.symbols if f.kind == "func" and f.name in at_start)

    plan = layout.LayoutPlan.from_json(v[("hosted", "aligned")].plan_path.read_text())
    pl = placement.replay(plan, {o.path: o for o in objs.objects("hosted")},
                          elfinfo.read_image(v[("hosted", "aligned")].elf))
    text_starts = [a for (k, _), a in pl.starts.items() if k == "text"]
    assert text_starts and all(a % 4096 == 0 for a in text_starts)
    order = layout.LayoutPlan.from_json(v[("hosted", "sorted")].plan_path.read_text()).object_order()
    assert order == sorted(order)


def test_wrong_plan_is_caught(mini):
    _, objs, v = mini
    sorted_plan = layout.LayoutPlan.from_json(v[("hosted", "sorted")].plan_path.read_text())
    random_elf = v[("hosted", "random")].elf
    with pytest.raises(LayoutbenchError, match="placement check failed"):
        _check(objs, "hosted", sorted_plan, random_elf)
    # a plan that lies about one gap
    plan = layout.LayoutPlan.from_json(v[("hosted", "random")].plan_path.read_text())
    unit = next(u for u in plan.groups["text"] if u.gap)
    unit.gap += 16
    with pytest.raises(LayoutbenchError, match="should be at"):
        _check(objs, "hosted", plan, random_elf)
    # a plan that claims "aligned" for a sorted image: its own promise fails
    liar = layout.LayoutPlan.from_json(v[("hosted", "sorted")].plan_path.read_text())
    liar.layout = "aligned"
    with pytest.raises(LayoutbenchError, match="page boundary"):
        _check(objs, "hosted", liar, v[("hosted", "sorted")].elf)


def test_same_seed_same_bytes_two_seeds_two_orders(mini, tmp_path, monkeypatch):
    """A second work directory compiles and links again from nothing: same seed, same image bytes."""
    prof, objs, v = mini
    monkeypatch.setenv("LAYOUTBENCH_DIR", str(tmp_path / "again"))
    co = source.resolve(prof, None)
    _, again = build.build_variants(prof, co, [("random", 1), ("random", 2)], ["kernel"])
    assert again[0].sha256 == v[("kernel", "random")].sha256
    assert again[0].elf.read_bytes() == v[("kernel", "random")].elf.read_bytes()
    o1 = layout.LayoutPlan.from_json(again[0].plan_path.read_text()).object_order()
    o2 = layout.LayoutPlan.from_json(again[1].plan_path.read_text()).object_order()
    assert sorted(o1) == sorted(o2) and o1 != o2
    assert again[0].sha256 != again[1].sha256


def test_keyed_order_is_stable_when_an_object_is_added():
    names = [f"net/obj{i}.o" for i in range(40)]
    for seed in range(1, 6):
        before = layout.order_objects(names, "random", seed)
        after = layout.order_objects(names + ["dev/new_driver.o"], "random", seed)
        assert [n for n in after if n != "dev/new_driver.o"] == before


def _cc_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "cc-counting"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec clang-19 "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper, log


def _profile_copy(tmp_path: Path, **build_overrides) -> Path:
    text = MINI_TOML.read_text()
    text = text.replace('repo = "../.."', f'repo = "{MINI_TOML.parent.parent.parent}"')
    for k, v in build_overrides.items():
        text = text.replace(f'{k} = "clang-19"', f'{k} = "{v}"')
    p = tmp_path / "kernel.toml"
    p.write_text(text)
    return p


def test_n_variants_compile_once(tmp_path, fresh_workdir):
    repo = mini_repo(tmp_path / "repo")
    wrapper, log = _cc_wrapper(tmp_path)
    toml = _profile_copy(tmp_path, cc=str(wrapper))
    out = json.loads(lb("build", str(toml), "--repo", str(repo), "--commit", "HEAD",
                        "--layout", "default,sorted,aligned,random:3", "--json").stdout)
    def compiles() -> list[str]:
        return [ln for ln in log.read_text().splitlines() if " -c " in f" {ln} "]

    sources = [p for p in repo.rglob("*") if p.suffix in (".c", ".S")]
    assert len(out["variants"]) == 2 * 6  # two images, six variants each
    assert len(compiles()) == len(sources)  # every source compiled exactly once
    lb("build", str(toml), "--repo", str(repo), "--commit", "HEAD", "--layout", "padded:2,function-aligned")
    assert len(compiles()) == len(sources)  # a relink, not a rebuild


def test_a_working_tree_build_says_whether_it_rebuilt_anything(tmp_path, fresh_workdir):
    """The working tree is handed to its build system every time: the first build writes the
    objects, a second one with nothing changed says it is up to date, and after one source
    changes it says what was written again."""
    repo = mini_repo(tmp_path / "repo")
    toml = _profile_copy(tmp_path)

    def build() -> str:
        return lb("build", str(toml), "--repo", str(repo), "--layout", "default").stderr

    first = build()
    assert "building minikernel at" in first and "file(s) of its objects written" in first, first
    assert "up to date, nothing rebuilt" in build()
    src = next(p for p in repo.rglob("*.c"))
    src.write_text(src.read_text() + "\n/* changed */\n")
    again = build()
    assert "file(s) of its objects written" in again and "up to date" not in again, again


def test_adding_an_object_keeps_the_others_in_order(tmp_path, fresh_workdir):
    repo = mini_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "dev" / "aaa_unused.c").write_text("int aaa_unused_probe(int x) { return x * 3 + 1; }\n")
    mk = (repo / "Makefile").read_text()
    assert "dev/ifnet.c" in mk, "the test adds dev/aaa_unused.c next to dev/ifnet.c in the Makefile"
    (repo / "Makefile").write_text(mk.replace("dev/ifnet.c", "dev/aaa_unused.c dev/ifnet.c", 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "add an unused driver")
    plans = {}
    for rev in (base, "HEAD"):
        out = json.loads(lb("build", "minikernel", "--repo", str(repo), "--commit", rev, "--image", "hosted",
                            "--layout", "random:3", "--json").stdout)
        plans[rev] = [layout.LayoutPlan.from_json(Path(v["plan_path"]).read_text()).object_order()
                      for v in out["variants"]]
    for old, new in zip(plans[base], plans["HEAD"]):
        assert "dev/aaa_unused.o" in new
        assert [n for n in new if n != "dev/aaa_unused.o"] == old


def test_cachegrind_sees_layout_deterministically(mini):
    """Same instructions, different I1 misses: the layout matters, and not by chance."""
    require(None if shutil.which("valgrind") else "valgrind is not installed")
    _, _, v = mini

    def cg(elf: Path) -> tuple[int, int]:
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--I1=4096,2,64",
                              "--D1=32768,8,64", "--LL=1048576,16,64", "--cachegrind-out-file=/dev/stdout",
                              str(elf), "iterations=1000", "quiet"], capture_output=True, text=True, timeout=300)
        summary = next(ln for ln in out.stdout.splitlines() if ln.startswith("summary:")).split()[1:]
        events = next(ln for ln in out.stdout.splitlines() if ln.startswith("events:")).split()[1:]
        totals = dict(zip(events, map(int, summary)))
        return totals["Ir"], totals["I1mr"]

    a = cg(v[("hosted", "sorted")].elf)
    b = cg(v[("hosted", "aligned")].elf)
    c = cg(v[("hosted", "random")].elf)
    assert a[0] == b[0] == c[0], "the instruction count must not depend on the layout"
    assert len({a[1], b[1], c[1]}) > 1, "the I1 misses must depend on the layout"
    assert cg(v[("hosted", "aligned")].elf) == b, "and be identical from run to run"


# -- bad input: one clear line, non-zero exit, no traceback ------------------------------------

def _fails(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("layoutbench: error:")]
    assert len(lines) == 1, p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_bad_inputs(tmp_path, fresh_workdir):
    _fails(lb("build", "nosuchkernel", check=False), "unknown kernel", "nosuchkernel")
    _fails(lb("build", "minikernel", "--layout", "zigzag", check=False), "unknown layout", "zigzag")
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x"\n[build\ncommand = "make"\n')
    _fails(lb("build", str(broken), check=False), "broken.toml", "TOML")
    _fails(lb("build", "minikernel", "--commit", "no-such-rev-123", check=False), "no-such-rev-123", "does not exist")
    repo = mini_repo(tmp_path / "repo")
    # a full-length name of a missing commit (GitPython takes one on trust; source.resolve reads it:
    # test_bisect_units.py::test_the_subject_of_a_commit_that_cannot_be_read_is_empty)
    missing = "0123456789abcdef" * 2 + "01234567"
    _fails(lb("build", "minikernel", "--repo", str(repo), "--commit", missing, check=False), missing, "does not exist")
    _fails(lb("history", "minikernel", f"HEAD..{missing}", "--repo", str(repo), check=False), missing, "does not exist")
    (repo / "kern" / "main.c").write_text((repo / "kern" / "main.c").read_text() + "\nthis is not C;\n")
    git(repo, "commit", "-qam", "break the build")
    _fails(lb("build", "minikernel", "--repo", str(repo), "--commit", "HEAD", check=False), "build of minikernel failed")


def test_a_commit_changing_no_build_input_reuses_its_neighbours_objects(tmp_path, fresh_workdir):
    """Object reuse (``[build] untracked_inputs``, ``unread_files``): real builds of a four-commit
    history.  A commit that changes only a file the profile names unread links its parent's objects
    (no compile, the same image bytes, its own runs); one that changes an included header, or the
    Makefile (an untracked input), is compiled."""
    repo = mini_repo(tmp_path / "repo")
    wrapper, log = _cc_wrapper(tmp_path)
    toml = _profile_copy(tmp_path, cc=str(wrapper))
    toml.write_text(toml.read_text().replace("timeout = 600\n", 'timeout = 600\nuntracked_inputs = ["Makefile"]\n'
                                   'unread_files = ["README.md"]\n', 1))
    base = git(repo, "rev-parse", "HEAD")
    shas = {}
    for name, path, extra in (("doc", "README.md", "\nOne more line of prose.\n"),
                              ("header", "include/rep.h", "\n/* a comment: the preprocessor reads it */\n"),
                              ("makefile", "Makefile", "\n# a comment make reads\n")):
        (repo / path).write_text((repo / path).read_text() + extra)
        git(repo, "commit", "-qam", name)
        shas[name] = git(repo, "rev-parse", "HEAD")

    def built(rev: str) -> tuple[dict, str, int]:
        before = len(log.read_text().splitlines()) if log.exists() else 0
        p = lb("build", str(toml), "--repo", str(repo), "--commit", rev, "--image", "hosted", "--json")
        compiles = sum(" -c " in f" {ln} " for ln in log.read_text().splitlines()[before:])
        return json.loads(p.stdout), p.stderr, compiles

    first, _, n0 = built(base)
    assert n0 > 20
    doc, said, n = built(shas["doc"])
    assert n == 0 and doc["build"]["reused_from"] == base
    assert f"objects of {base[:12]} reused for {shas['doc'][:12]}: the build reads none of the 1 changed files" in said
    # the dependency files are read first (on Linux a minute or more): a line says so before
    asked = (f"reading the dependency files of built commits (first {base[:12]}, 1 files differ): can "
             f"{shas['doc'][:12]} link one's objects?")
    assert said.index(asked) < said.index(f"objects of {base[:12]} reused"), said
    assert doc["variants"][0]["sha256"] == first["variants"][0]["sha256"]
    assert doc["variants"][0]["commit"] == shas["doc"] and doc["variants"][0]["objects_of"] == base
    text = lb("build", str(toml), "--repo", str(repo), "--commit", shas["doc"], "--image", "hosted").stdout
    assert f"objects of {base[:12]} reused (1 changed files, none read by the build)" in text
    # a history over the two measures the base's image at each point: on cachegrind, whose counts repeat, the
    # second point's run is the first's stored again under it, not made again
    h = json.loads(lb("history", str(toml), f"{base}..{shas['doc']}", "--repo", str(repo), "--target", "cachegrind",
                      "--layouts", "default", "--runs", "1", "--args", "iterations=300", "--json").stdout)
    assert (h["sweep"]["ran"], h["sweep"]["copied"], h["sweep"]["skipped"]) == (1, 1, 0), h["sweep"]
    values = [p["values"]["cg_cost"]["default"] for p in h["history"]["points"]]
    assert len(values) == 2 and values[0] == values[1]
    out, said, n = built(shas["header"])  # an included header changed: compiled
    assert n > 0 and "reused_from" not in out["build"] and "reused" not in said
    # the Makefile: an untracked input, and no C file the dependency files could speak for
    prof = profile.load(str(toml))
    cfg = first["build"]["config"]
    assert reuse.reusable(prof, source.resolve(prof, shas["makefile"], str(repo)), cfg) is None


def test_a_long_compile_says_how_far_it_is_and_counts_against_the_last_one(tmp_path, fresh_workdir, monkeypatch):
    """A compile says its progress while it runs (every PROGRESS_EVERY seconds: the time so far and
    the objects written); its build record keeps the objects it wrote, and the next commit's
    compile counts against them."""
    repo = mini_repo(tmp_path / "repo")
    slow = tmp_path / "cc-slow"
    slow.write_text('#!/bin/sh\nsleep 0.3\nexec clang-19 "$@"\n')
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    prof = profile.load(str(_profile_copy(tmp_path, cc=str(slow))))
    monkeypatch.setattr(build, "PROGRESS_EVERY", 0.4)
    said: list[str] = []
    first = build.compile_objects(prof, source.resolve(prof, "HEAD", str(repo)), 1, said.append)
    ticks = [m for m in said if " so far, " in m]
    assert ticks and all(m.startswith("compiling ") and "objects written" in m for m in ticks), said
    assert "of about" not in ticks[0]  # nothing compiled here before: no total to count against
    n = first.info["objects_written"]
    assert n == len(list(first.objdir.rglob("*.o"))) > 0
    src = next(p for p in repo.rglob("*.c"))
    src.write_text(src.read_text() + "\nint layoutbench_progress_test;\n")
    git(repo, "commit", "-qam", "one more symbol")
    said.clear()
    build.compile_objects(prof, source.resolve(prof, "HEAD", str(repo)), 1, said.append)
    assert any(f"of about {n} (the last compile here)" in m for m in said), said


def test_a_neighbouring_commit_compiles_through_ccache_to_the_bytes_a_plain_compile_writes(tmp_path, monkeypatch):
    """With ccache installed (setup.sh), the build command's compiler runs through it: the next
    commit compiles only the file it changed (every other one a cache hit, though it is exported to
    a folder of its own), and its objects and dependency files are those of a compile without ccache.
    A working-tree build stays make's own incremental build, without ccache."""
    require(None if shutil.which("ccache") else "ccache is not installed")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    repo = mini_repo(tmp_path / "repo")
    prof = profile.load(str(_profile_copy(tmp_path)))
    src = repo / "net" / "udp.c"
    src.write_text(src.read_text() + "\nint layoutbench_ccache_test;\n")
    git(repo, "commit", "-qam", "one more symbol")

    def compile_(work: str, rev: str, ccache: bool) -> build.ObjectSet:
        monkeypatch.setenv("LAYOUTBENCH_DIR", str(tmp_path / work))
        monkeypatch.setenv(build.CCACHE_ENV, "1" if ccache else "0")
        return build.compile_objects(prof, source.resolve(prof, rev, str(repo)), 2)

    def stats() -> dict[str, int]:
        out = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True).stdout
        return {k: int(v) for k, v in (ln.split("\t") for ln in out.splitlines() if "\t" in ln)}

    first = compile_("cached", "HEAD~1", True)
    assert first.info["ccache"] is True
    n = first.info["objects_written"]
    before = stats()
    second = compile_("cached", "HEAD", True)
    after = stats()
    hits = sum(after[k] - before.get(k, 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    misses = after["cache_miss"] - before.get("cache_miss", 0)
    assert (hits, misses) == (n - 1, 1), (hits, misses, n)
    plain = compile_("plain", "HEAD", False)
    assert plain.info["ccache"] is False and second.objdir != plain.objdir
    objects = sorted(p.relative_to(plain.objdir) for p in plain.objdir.rglob("*.o"))
    assert len(objects) == n and all((second.objdir / o).read_bytes() == (plain.objdir / o).read_bytes()
                                     for o in objects)
    # what the dependency files say (reuse reads them) is the same, for a miss and for a hit
    tree = build.compile_objects(prof, source.resolve(prof, None), 2)
    assert tree.info["ccache"] is False
    assert reuse.read_dependencies(second.objdir, second.src) == reuse.read_dependencies(plain.objdir, plain.src)
    assert {"net/udp.o", "kern/main.o"} <= reuse.read_dependencies(second.objdir, second.src)[1]


def test_a_ccache_that_cannot_write_its_cache_is_left_out_and_the_commit_compiles(tmp_path, fresh_workdir, monkeypatch):
    """ccache installed but its cache folder impossible (here under a regular file): the compile runs
    the compiler itself instead of failing, and its record says so."""
    require(None if shutil.which("ccache") else "ccache is not installed")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CCACHE_DIR", str(blocker / "ccache"))
    monkeypatch.setattr(build, "_ccache_ok", {})
    repo = mini_repo(tmp_path / "repo")
    prof = profile.load(str(_profile_copy(tmp_path)))
    objs = build.compile_objects(prof, source.resolve(prof, "HEAD", str(repo)), 2)
    assert objs.info["ccache"] is False and objs.info["objects_written"] > 0
