"""A real history: lz4 commits from ../shared/histories/lz4.bundle built with the
bench/real/lz4 profile (an ordinary static-glibc program: lib/*.c + a driver) and relinked
in two layouts, placement verified, each run once natively.  Keeps the program path alive
on a project nobody wrote for layoutbench: three eras of lz4, with a file set that changes
(lib/lz4file.c appears in v1.10.0) and an API that changes (a quirk builds r128)."""

from __future__ import annotations

import os

import subprocess
from pathlib import Path

import pytest

from conftest import lb
from layoutbench import build, elfinfo, layout, metrics, placement, profile, source

#: the lz4 history: $LAYOUTBENCH_LZ4_BUNDLE, else shared/histories/ beside this checkout
BUNDLE = Path(os.environ.get("LAYOUTBENCH_LZ4_BUNDLE")
              or Path(__file__).resolve().parents[2] / "shared" / "histories" / "lz4.bundle")
COMMITS = ["r128", "v1.9.2", "v1.10.0"]  # 2015 (needs the old-api quirk), 2019, 2024


@pytest.fixture(scope="module")
def lz4_repo(tmp_path_factory) -> Path:
    if not BUNDLE.is_file():
        pytest.skip(f"{BUNDLE} is not here (the lz4 history bundle)")
    dest = tmp_path_factory.mktemp("lz4") / "lz4"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(dest)], check=True)
    return dest


@pytest.fixture(scope="module")
def built(lz4_repo, workdir):
    prof = profile.load("lz4")
    out = {}
    for rev in COMMITS:
        co = source.resolve(prof, rev, str(lz4_repo))
        out[rev] = build.build_variants(prof, co, layout.parse_specs(["default,random"], 7), jobs=2)
    return prof, out


def test_the_lz4_profile_is_found_by_name_and_is_a_program():
    prof = profile.load("lz4")
    assert prof.path.parent.name == "lz4" and prof.path.parent.parent.name == "real"
    assert prof.image("bench").kind == "program"
    assert "lz4" in lb("kernels").stdout


@pytest.mark.parametrize("rev", COMMITS)
def test_each_commit_builds_relinks_in_two_layouts_and_runs(built, rev):
    prof, out = built
    objs, variants = out[rev]
    assert [v.layout for v in variants] == ["default", "random"]
    objects = {o.path: o for o in objs.objects("bench")}
    starts = []
    for v in variants:
        img = elfinfo.read_image(v.elf)
        # link_variant checked the placement already; checked again here so that the test says so
        placement.check(layout.LayoutPlan.from_json(v.plan_path.read_text()), objects, img)
        starts.append(min(img.addresses()["LZ4_decompress_safe"]))
        p = subprocess.run([str(v.elf), "rounds=1"], capture_output=True, text=True, timeout=60)
        parsed = metrics.parse(p.stdout)
        assert p.returncode == 0 and parsed.end == "ok", p.stdout + p.stderr
        assert {s.metric for s in parsed.samples} == {"compress_mbps", "decompress_mbps"}
    assert starts[0] != starts[1], "the random layout placed LZ4_decompress_safe where the default link did"


def test_the_file_set_follows_the_commit(built):
    _, out = built
    lists = {rev: out[rev][0].object_list("bench") for rev in COMMITS}
    assert lists["r128"][0] == "bench.o" and "lib/lz4.o" in lists["r128"]
    assert "lib/lz4file.o" not in lists["v1.9.2"] and "lib/lz4file.o" in lists["v1.10.0"]


def test_quirks_follow_the_commit(built):
    """r128 predates LZ4_compress_default(): the old-api quirk of bench/real/lz4/quirks.toml builds it."""
    _, out = built
    assert out["r128"][0].info["quirks"] == ["old-api"]
    assert out["v1.9.2"][0].info["quirks"] == [] and out["v1.10.0"][0].info["quirks"] == []


def test_the_compressed_output_is_the_same_in_both_layouts(built):
    _, out = built
    sizes = set()
    for v in out["v1.9.2"][1]:
        p = subprocess.run([str(v.elf), "rounds=1", "notime"], capture_output=True, text=True, timeout=60)
        sizes.add(metrics.parse(p.stdout).checks["compressed_size"])
    assert len(sizes) == 1
