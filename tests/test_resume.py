"""Resuming and re-running a measurement (measure_commit, the path compare, history and bisect
share), on a real minikernel build and the local target running its hosted executable: what the
store holds is skipped, more repetitions add only the missing ones, runs stored as failed are
kept unless --retry-failed, and a changed target configuration measures again and says what it
left out.  The target's command succeeds only once a flag file exists, so a run fails or
succeeds on demand with the same configuration."""

from __future__ import annotations

import dataclasses

import pytest

from layoutbench import measure, profile, source, targets
from layoutbench.store import Store

from conftest import mini_repo

SPECS = (("default", 0), ("random", 1), ("random", 2))


@pytest.fixture(scope="module")
def built(workdir, tmp_path_factory):
    from layoutbench import build

    d = tmp_path_factory.mktemp("resume")
    repo = mini_repo(d / "mini")
    prof = profile.load("minikernel")
    co = source.resolve(prof, "HEAD", str(repo))
    objs = build.compile_objects(prof, co)
    return {"dir": d, "profile": prof, "checkout": co, "objs": objs, "flag": d / "flag"}


def _target(b, *, iterations=1000, name="t"):
    cmd = ["sh", "-c", f'test -e {b["flag"]} && exec "$0" iterations={iterations} || exit 3', "{image}"]
    spec = profile.Target(name, "local", "hosted", 60.0, {"command": cmd})
    prof = dataclasses.replace(b["profile"], targets={**b["profile"].targets, name: spec})
    return prof, targets.make(prof, name)


def _measure(b, store, *, runs=2, mode="rerun", retry=False, iterations=1000, specs=SPECS, said=None):
    prof, t = _target(b, iterations=iterations)
    req = measure.MeasureRequest(prof, b["checkout"], specs, runs=runs, mode=mode, target="t", retry_failed=retry,
                                 check_machine=False)
    with t:
        return measure.measure_commit(req, store, t, objs=b["objs"], say=(said.append if said is not None
                                                                          else lambda m: None))


def test_a_rerun_skips_what_is_stored_and_more_repetitions_add_only_the_new(built, tmp_path):
    built["flag"].touch()
    store = Store(tmp_path / "s.sqlite")
    m = _measure(built, store, runs=2)
    assert (m.ran, m.skipped, m.failed) == (6, 0, 0)
    assert sorted((r["layout"], r["seed"], r["rep"]) for r in m.runs) == sorted(
        (n, s, r) for n, s in SPECS for r in range(2))
    g = m.groups(m.samples[0]["metric"])
    assert sorted(g) == ["default", "random:1", "random:2"] and all(len(v) == 2 for v in g.values())
    again = _measure(built, store, runs=2)
    assert (again.ran, again.skipped) == (0, 6) and len(again.runs) == 6 and again.samples == m.samples
    more = _measure(built, store, runs=3)
    assert (more.ran, more.skipped) == (3, 6)
    assert sorted(r["rep"] for r in more.runs if r["layout"] == "random" and r["seed"] == 2) == [0, 1, 2]
    assert all(len(v) == 3 for v in more.groups(m.samples[0]["metric"]).values())
    assert all(len(v) == 2 for v in more.groups(m.samples[0]["metric"], max_rep=2).values())
    assert more.key == m.key and more.other_configs == {}
    # another mode is another run: nothing of rerun's is reused for reboot
    rb = _measure(built, store, runs=1, mode="reboot")
    assert (rb.ran, rb.skipped) == (3, 0) and {r["mode"] for r in rb.runs} == {"reboot"}
    store.close()


def test_failed_runs_are_kept_and_run_again_only_with_retry_failed(built, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    built["flag"].unlink(missing_ok=True)
    said = []
    m = _measure(built, store, runs=1, said=said)
    assert (m.ran, m.failed) == (3, 3) and m.samples == [] and {r["status"] for r in m.runs} == {"failed"}
    assert len(said) == 3 and said[0].startswith("default run 0: failed")
    built["flag"].touch()
    kept = _measure(built, store, runs=1)
    assert (kept.ran, kept.skipped, kept.failed) == (0, 3, 0) and kept.samples == []
    retried = _measure(built, store, runs=1, retry=True)
    assert (retried.ran, retried.skipped, retried.failed) == (3, 0, 0)
    assert {r["status"] for r in retried.runs} == {"ok"} and len(retried.runs) == 3  # replaced, not added
    again = _measure(built, store, runs=1, retry=True)
    assert (again.ran, again.skipped) == (0, 3)  # ok runs are never run again
    store.close()


def test_a_changed_target_configuration_on_resume_measures_again(built, tmp_path):
    built["flag"].touch()
    store = Store(tmp_path / "s.sqlite")
    first = _measure(built, store, runs=1)
    said = []
    other = _measure(built, store, runs=1, iterations=2000, said=said)
    assert (other.ran, other.skipped) == (3, 0) and other.key.config != first.key.config
    assert other.other_configs == {first.key.config: 3}
    assert {r["config"] for r in other.runs} == {other.key.config} and len(other.samples) == len(first.samples)
    assert said == [f"3 stored run(s) of these variants on t were made under another target configuration "
                    f"({first.key.config}; now {other.key.config}) and are not used; `layoutbench results "
                    f"--configs` shows them"]
    cfg = store.configs([other.key.config])[other.key.config]
    assert cfg["kind"] == "local" and "iterations=2000" in cfg["settings"]["command"][2]
    assert cfg["toolchain"]["cc"] == built["objs"].info["cc"] and cfg["quirks"] == []
    # back to the first configuration: its runs are there, nothing runs
    back = _measure(built, store, runs=1)
    assert (back.ran, back.skipped) == (0, 3) and back.other_configs == {other.key.config: 3}
    store.close()


def test_relink_gives_each_repetition_a_seed_of_its_own(built, tmp_path):
    built["flag"].touch()
    store = Store(tmp_path / "s.sqlite")
    m = _measure(built, store, runs=2, mode="relink")
    assert sorted((r["layout"], r["seed"], r["rep"]) for r in m.runs) == [
        ("default", 0, 0), ("default", 0, 1), ("random", 1, 0), ("random", 2, 0), ("random", 3, 0), ("random", 4, 0)]
    assert sorted(m.build_ids) == [("default", 0), ("random", 1), ("random", 2), ("random", 3), ("random", 4)]
    store.close()
