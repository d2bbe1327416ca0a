"""The cache model (target kind qemu-icache, native/qemu-icache): the minikernel booted under
QEMU TCG with the L1 instruction-cache plugin, counting between the markers of its benchmark loop.
Real boots, real plugin, real layouts; each boot takes a second or two."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import MINI_SRC, MINI_TOML, lb
from layoutbench import build, elfinfo, profile, source, targets

LAYOUTS = [("default", 0), ("random", 1), ("random", 2), ("sorted", 0)]
ITER = 300


@pytest.fixture(scope="module")
def kern(workdir):
    prof = profile.load("minikernel")
    co = source.resolve(prof, None)
    _, variants = build.build_variants(prof, co, LAYOUTS, images=["kernel"])
    return prof, {(v.layout, v.seed): v for v in variants if v.image == "kernel"}


def boot(prof, var, tmp_path: Path, name: str, **settings) -> dict[str, float]:
    t = targets.make(prof, "qemu-icache", overrides={"append": f"iterations={ITER} quiet", **settings})
    r = t.run(var.elf, tmp_path / f"{name}.log")
    assert r.status == "ok", f"{r.status}: {r.message}\n{r.output[-2000:]}"
    assert r.accelerator == "tcg"
    return {s.metric: s.value for s in r.samples}


def test_counts_are_identical_boot_to_boot_and_layouts_move_only_the_misses(kern, tmp_path):
    prof, v = kern
    first = boot(prof, v["default", 0], tmp_path, "a")
    again = boot(prof, v["default", 0], tmp_path, "b")
    assert set(first) == {"ic_cost", "ic_ir", "ic_i1_misses"}, "only the model's counts (guest_metrics = false)"
    assert first == again, "two boots of one image give the same counts"
    assert first["ic_cost"] == first["ic_ir"] + 20 * first["ic_i1_misses"]
    runs = {key: boot(prof, var, tmp_path, f"{key[0]}-{key[1]}") for key, var in v.items() if key != ("default", 0)}
    runs["default", 0] = first
    assert {r["ic_ir"] for r in runs.values()} == {first["ic_ir"]}, "the layout does not change what runs"
    misses = sorted(r["ic_i1_misses"] for r in runs.values())
    assert len(set(misses)) == len(runs), f"every layout has its own miss count: {misses}"
    assert misses[-1] / misses[0] > 1.002, misses
    assert first["ic_i1_misses"] > ITER * 100, "a 4 KiB I1 cannot hold the ~180 KiB hot path"


def test_the_instruction_count_is_qemus(kern, tmp_path):
    """Under -icount shift=0 the guest's TSC advances one tick per instruction, so the kernel's own
    cycles_per_packet (not quiet) times packets is the instruction count of its loop, by QEMU."""
    prof, v = kern
    got = boot(prof, v["random", 1], tmp_path, "loud", append=f"iterations={ITER}", guest_metrics=True)
    assert "cycles_per_packet" in got, "guest_metrics = true keeps the kernel's own lines"
    assert abs(got["ic_ir"] - got["cycles_per_packet"] * ITER) < 20, got


def test_a_cache_that_holds_the_hot_path_misses_each_line_once(kern, tmp_path):
    """A 256 KiB I1 holds the whole kernel text: only cold misses, at most one per line of text,
    the same number 8-way and direct-mapped.  (A wrong set index or a broken LRU would evict
    lines and miss more.)"""
    prof, v = kern
    var = v["random", 2]
    big = boot(prof, var, tmp_path, "big", i1="262144,8,64")
    img = elfinfo.read_image(var.elf)
    text = sum(size for name, (_, size) in img.sections.items() if name.startswith(".text"))
    assert 1000 < big["ic_i1_misses"] <= text // 64 + 1, (big, text)
    # the text is one contiguous range under 256 KiB: direct-mapped, every line has a set of its own
    assert text < 262144
    direct = boot(prof, var, tmp_path, "direct", i1="262144,1,64")
    assert direct == big, "cold misses only, one per line touched, whatever the associativity"


def _tree_without(tmp_path: Path, drop: list[str]) -> Path:
    """A profile on a copy of the minikernel tree whose benchmark lacks the given marker calls."""
    src = tmp_path / "src"
    shutil.copytree(MINI_SRC, src)
    bench = src / "kern" / "bench.c"
    text = bench.read_text()
    for call in drop:
        assert call in text
        text = text.replace(call, "")
    bench.write_text(text)
    toml = tmp_path / "kernel.toml"
    toml.write_text(MINI_TOML.read_text().replace('repo = "../.."', "")
                    .replace('subdir = "kernels/minikernel/src"', f'tree = "{src}"'))
    return toml


def test_a_kernel_without_markers_fails_in_one_line(workdir, tmp_path):
    toml = _tree_without(tmp_path, ["plat_mark_begin();", "plat_mark_end();"])
    says = "never ran the cache model's begin marker"
    p = lb("run", str(toml), "--target", "qemu-icache", check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    err = [line for line in p.stderr.splitlines() if "error:" in line]
    assert len(err) == 1 and says in err[0], p.stderr
    assert "time the emulator" not in p.stderr, "the model's counts are not timings"
    assert "ic_ir" not in p.stdout, "no counts without both markers"
