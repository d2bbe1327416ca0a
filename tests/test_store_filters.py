"""The store's filters: runs and samples by commit (prefix), layout, seed, status, host, target,
mode, metric and build, lists as IN and None as no filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from layoutbench import build, layout, metrics
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult
from test_layout_registry import objects


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    yield s
    s.close()


def _variant(tmp: Path, commit: str, name: str, seed: int) -> build.Variant:
    plan = layout.make_plan(objects(), name, seed, kernel="k", image="hosted", commit=commit)
    out = tmp / f"{commit}-{name}-{plan.seed}"
    out.mkdir(parents=True)
    (out / "plan.json").write_text(plan.to_json())
    return build.Variant("k", commit, "hosted", name, plan.seed, out / "image.elf", out / "plan.json",
                         out / "link.ld", f"{commit}{name}{seed}".ljust(64, "0"), f"0x{plan.plan_id:07x}", True)


def _run(store: Store, build_id: int, rep: int, status: str = "ok", target: str = "local", host: str = "h1",
         value: float = 1.0) -> None:
    samples = [metrics.Sample("cycles", value, "cycles", False), metrics.Sample("ops", 2 * value, "1/s", True)]
    r = RunResult(status, 0, "", 0.1, "native", host, samples if status == "ok" else [])
    store.add_run(build_id, RunKey(target, host, "rerun"), rep, r, Path("/dev/null"), 0.0)


def test_store_filters_select_exactly_the_rows_asked_for(store, tmp_path):
    ids = {}
    for commit in ("aaaa1111", "bbbb2222"):
        for name, seed in (("sorted", 0), ("random", 1), ("random", 2)):
            ids[commit, name, seed] = store.build_id(_variant(tmp_path, commit, name, seed), {"quirks": []})
    assert len(set(ids.values())) == 6
    assert store.build_id(_variant(tmp_path / "again", "aaaa1111", "sorted", 0), {}) == ids["aaaa1111", "sorted", 0]
    for (commit, name, seed), bid in ids.items():
        _run(store, bid, 0, value=10 * seed + 1)
        _run(store, bid, 1, status="timeout" if name == "sorted" else "ok")
    _run(store, ids["aaaa1111", "random", 1], 0, target="qemu", host="h2")

    assert len(store.runs()) == 13
    assert len(store.runs(commit="aaaa")) == 7  # a commit matches by prefix
    assert {r["commit_sha"] for r in store.runs(commit="bbbb2222")} == {"bbbb2222"}
    assert len(store.runs(layout="random", seed=2)) == 4
    assert len(store.runs(status="timeout")) == 2
    assert [r["target"] for r in store.runs(host="h2")] == ["qemu"]
    assert len(store.runs(target="local", layout=["sorted", "random"], seed=[0, 1])) == 8  # lists: IN
    assert store.runs(kernel="k", commit=None, target="local", mode="reboot") == []  # None: no filter
    # samples: only ok runs have them; metric and build filters
    assert len(store.samples()) == 2 * 11
    cyc = store.samples(metric="cycles", commit="bbbb", layout="random")
    assert sorted(s["value"] for s in cyc) == [1.0, 1.0, 11.0, 21.0]
    assert {s["build_id"] for s in store.samples(build_id=ids["aaaa1111", "random", 2])} == {
        ids["aaaa1111", "random", 2]}
    assert store.samples(metric="no-such-metric") == []
