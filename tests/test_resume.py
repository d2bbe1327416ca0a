"""Resuming and re-running a measurement (measure_commit, the path compare, history and bisect
share), on a real minikernel build and the local target running its hosted executable: what the
store holds is skipped, more repetitions add only the missing ones, runs stored as failed are
kept unless --retry-failed, and a changed target configuration measures again and says what it
left out.  The target's command succeeds only once a flag file exists, so a run fails or
succeeds on demand with the same configuration."""

from __future__ import annotations

import hashlib

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


def _measure(b, store, *, runs=2, mode="rerun", retry=False, iterations=1000, specs=SPECS, said=None,
             check_machine=False, ticks=None):
    prof, _ = _target(b, iterations=iterations)
    req = measure.MeasureRequest(prof, b["checkout"], specs, runs=runs, mode=mode, target="t", retry_failed=retry,
                                 check_machine=check_machine)
    with req.make_target() as t:
        return measure.measure_commit(req, store, t, objs=b["objs"], say=(said.append if said is not None
                                                                          else lambda m: None),
                                      progress=(lambda: ticks.append(1)) if ticks is not None else None)


def test_a_rerun_skips_what_is_stored_and_more_repetitions_add_only_the_new(built, tmp_path):
    built["flag"].touch()
    store = Store(tmp_path / "s.sqlite")
    ticks = []
    m = _measure(built, store, runs=2, ticks=ticks)
    assert (m.ran, m.skipped, m.failed) == (6, 0, 0) and len(ticks) == 6  # progress: once per job
    assert m.findings == [] and store.last_machine_check(m.key) == []  # no machine check asked for
    assert sorted((r["layout"], r["seed"], r["rep"]) for r in m.runs) == sorted(
        (n, s, r) for n, s in SPECS for r in range(2))
    g = m.groups(m.samples[0]["metric"])
    assert sorted(g) == ["default", "random:1", "random:2"] and all(len(v) == 2 for v in g.values())
    ticks.clear()
    again = _measure(built, store, runs=2, ticks=ticks)
    assert (again.ran, again.skipped) == (0, 6) and len(again.runs) == 6 and again.samples == m.samples
    assert len(ticks) == 6  # a skipped job is progress too
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


def test_an_edited_benchmark_script_the_target_names_is_another_configuration(built, tmp_path):
    script = tmp_path / "bench.sh"
    script.write_text('exec "$1" iterations=1000\n')
    spec = profile.Target("s", "local", "hosted", 60.0, {"command": ["sh", str(script), "{image}"]})
    prof = dataclasses.replace(built["profile"], targets={**built["profile"].targets, "s": spec})
    store = Store(tmp_path / "s.sqlite")

    def measure_once():
        req = measure.MeasureRequest(prof, built["checkout"], SPECS, runs=1, mode="rerun", target="s")
        with req.make_target() as t:
            return measure.measure_commit(req, store, t, objs=built["objs"])

    first = measure_once()
    assert first.ran == 3 and store.configs([first.key.config])[first.key.config]["inputs"] == {
        str(script): hashlib.sha256(script.read_bytes()).hexdigest()}
    assert measure_once().ran == 0  # the same script: its runs are reused
    script.write_text('exec "$1" iterations=2000\n')  # edited: its stored runs are another configuration's
    edited = measure_once()
    assert (edited.ran, edited.skipped) == (3, 0) and edited.other_configs == {first.key.config: 3}
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


def test_the_machine_check_is_taken_once_before_the_first_run_and_kept(built, tmp_path):
    built["flag"].touch()
    store = Store(tmp_path / "s.sqlite")
    said = []
    m = _measure(built, store, runs=1, check_machine=True, said=said)
    assert m.ran == 3 and m.findings and m.findings == store.last_machine_check(m.key)
    assert store.db.execute("SELECT count(*) AS n FROM machine_checks").fetchone()["n"] == 1
    bad = [f["check"] for f in m.findings if f["problem"]]
    noise = [line for line in said if line.startswith(f"machine {m.key.host}: ")]
    assert noise == ([f"machine {m.key.host}: {len(bad)} condition(s) that add noise: {', '.join(bad)} "
                      f"(each with its fix in the report)"] if bad else [])
    # nothing runs the second time: no new check, the stored one is reported with the stored runs
    again = _measure(built, store, runs=1, check_machine=True)
    assert again.ran == 0 and again.findings == m.findings
    assert store.db.execute("SELECT count(*) AS n FROM machine_checks").fetchone()["n"] == 1
    store.close()


def test_a_request_keeps_its_arguments_and_moves_to_another_commit(built):
    prof, _ = _target(built)
    req = measure.MeasureRequest(prof, built["checkout"], [["default", 0], ["random", 1]], args=["n=5", "quiet"],
                                 target="t")
    assert req.specs == (("default", 0), ("random", 1)) and req.arg_text == "n=5 quiet" and req.runs == 1
    assert [(j.layout, j.seed, j.rep) for j in req.jobs_planned()] == [("default", 0, 0), ("random", 1, 0)]
    assert measure.MeasureRequest(prof, built["checkout"], [("default", 0)], args=None).args == ()
    other = source.Checkout(built["checkout"].repo, "", "f" * 40, None)
    moved = req.at(other)
    assert moved.checkout is other and moved.specs == req.specs and req.checkout is built["checkout"]
    t = req.make_target()
    assert t.spec.name == "t" and t.kind == "local"
    cfg = measure.target_config(t)
    assert "toolchain" not in cfg and cfg["kind"] == "local" and cfg["image"] == "hosted"
    assert measure.target_config(t, built["objs"])["toolchain"] == {"cc": built["objs"].info["cc"],
                                                                    "ld": built["objs"].info["ld"]}
    with measure.progress(None, 3, "x") as tick:
        assert tick is None
    seen = []
    with measure.progress(lambda n, what: _Bar(seen, n, what), 3, "runs") as tick:
        assert tick == "tick"
    assert seen == [(3, "runs")]


class _Bar:
    def __init__(self, seen, n, what):
        seen.append((n, what))

    def __enter__(self):
        return "tick"

    def __exit__(self, *exc):
        return False


def test_a_count_target_runs_two_at_once_while_a_core_is_spare_and_counts_the_same(built, tmp_path):
    """On a target whose metrics are counts it makes itself (cachegrind's), with two cores: two runs at
    once while the request's ``spare()`` says a core is free, one at a time when it says none is (a
    compile running) or when nothing is said; the counts are the same either way and every run is
    stored; the values come back in the request's order."""
    two = measure.side_by_side(targets.make(built["profile"], "cachegrind")) >= 2  # one core: never side by side
    specs = tuple(("random", i) for i in range(1, 7))
    got = {}
    for name, spare in (("spare", lambda n: True), ("busy", lambda n: False), ("none", None)):
        store = Store(tmp_path / f"{name}.sqlite")
        req = measure.MeasureRequest(built["profile"], built["checkout"], specs, runs=1, target="cachegrind",
                                     args=("iterations=300",), spare=spare)
        with req.make_target() as t:
            m = measure.measure_commit(req, store, t, objs=built["objs"])
        assert (m.ran, m.failed) == (6, 0)
        # the variants in the request's order, whatever order their runs ended in (seeds pair by position)
        assert list(m.groups("cg_cost")) == [f"random:{i}" for i in range(1, 7)]
        spans = sorted((r["started"], r["started"] + r["duration"]) for r in m.runs)
        overlaps = sum(b[0] < a[1] for a, b in zip(spans, spans[1:]))
        got[name] = (overlaps, sorted((s["layout"], s["seed"], s["value"]) for s in m.samples
                                      if s["metric"] == "cg_cost"))
        store.close()
    assert (got["spare"][0] >= 1 if two else got["spare"][0] == 0) and got["busy"][0] == 0 and got["none"][0] == 0, {k: v[0] for k, v in got.items()}
    assert len(got["spare"][1]) == 6 and got["spare"][1] == got["busy"][1] == got["none"][1]


def test_other_work_running_is_counted_from_the_runnable_threads():
    """procs.others_running: two processes that spin are at least two threads of other work (a second run
    would wait for a core)."""
    import subprocess
    import sys

    from layoutbench import procs

    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        import time
        time.sleep(0.5)
        assert procs.others_running(0) >= 2
    finally:
        for p in spin:
            p.kill()
            p.wait()


def test_other_work_leaves_out_the_reader_and_this_commands_runs_and_takes_the_least_read(tmp_path, monkeypatch):
    """The count is the least of the reads, less the reader and ``mine`` (this command's own runs), never
    below 0; a file that is not /proc/loadavg's shape means nothing is known (0). Read from a file whose
    runnable count changes between reads, so that what other tests run beside this one cannot move it."""
    from layoutbench import procs

    loadavg = tmp_path / "loadavg"
    counts = iter([7, 5, 9])

    def sleep(_):
        loadavg.write_text(f"0.50 0.40 0.30 {next(counts)}/300 4242\n")

    monkeypatch.setattr(procs.time, "sleep", sleep)
    sleep(0)
    assert procs.others_running(2, reads=3, loadavg=str(loadavg)) == 5 - 1 - 2
    counts = iter([3])
    sleep(0)
    assert procs.others_running(0, reads=1, loadavg=str(loadavg)) == 2
    counts = iter([2])
    sleep(0)
    assert procs.others_running(4, reads=1, loadavg=str(loadavg)) == 0
    loadavg.write_text("not a loadavg\n")
    assert procs.others_running(0, loadavg=str(loadavg)) == 0
    assert procs.others_running(0, loadavg=str(tmp_path / "missing")) == 0


INTERRUPTED = """
import sys
from layoutbench import build, measure, profile, source
from layoutbench.store import Store

repo, db = sys.argv[1:3]
prof = profile.load("minikernel")
co = source.resolve(prof, "HEAD", repo)
objs = build.compile_objects(prof, co)
req = measure.MeasureRequest(prof, co, tuple(("random", i) for i in range(1, 5)), runs=1, target="cachegrind",
                             args=("iterations=100000",), spare=lambda n: True)
with req.make_target() as t:
    measure.measure_commit(req, Store(db), t, objs=objs)
"""


def test_an_interrupt_stops_both_runs_going_and_stores_neither(built, tmp_path):
    """Ctrl-C while two runs go side by side: both benchmarks are stopped at once (not waited for),
    neither is stored (the same measurement again runs them; a run that ended before them is), and no
    process of theirs is left.  On one core, where runs never go side by side, the one run going is
    stopped and not stored."""
    import signal
    import subprocess
    import sys
    import time

    from layoutbench import paths

    going = measure.side_by_side(targets.make(built["profile"], "cachegrind"))  # runs at once: 2, or 1 on one core

    def last_slot() -> list:  # the run lock of the last run that can go: slot 1 (".1.lock"), or slot 0
        locks = (paths.workdir() / "locks").glob("minikernel.cachegrind.*.lock")
        return [x for x in locks if x.name.endswith(".1.lock") == (going >= 2)]

    db = tmp_path / "i.sqlite"
    mark = {x: x.stat().st_mtime for x in last_slot()}
    p = subprocess.Popen([sys.executable, "-c", INTERRUPTED, str(built["checkout"].repo), str(db)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(1200):  # the last slot's run lock written: as many runs as can go are going
        now = last_slot()
        if any(x not in mark or x.stat().st_mtime > mark[x] for x in now) or p.poll() is not None:
            break
        time.sleep(0.25)
    assert p.poll() is None, p.communicate()[0]
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=600)[0]
    assert p.returncode != 0 and "KeyboardInterrupt" in out, out
    logs = list((paths.workdir() / "logs").glob(f"minikernel/*/*-cachegrind-*.{p.pid}.log"))
    # cachegrind prints its counts ("I   refs:") last: a log without them is a run stopped before its end.
    # The runs going side by side were stopped; a run that ended before they went side by side (the
    # first may go alone while the later images link) is stored, and no other
    ended = {str(x) for x in logs if "refs:" in x.read_text()}
    assert len(logs) - len(ended) >= going, [x.name for x in logs]
    s = Store(db)
    assert {r["log_path"] for r in s.runs()} == ended, "an interrupted run is never stored"
    s.close()
    left = subprocess.run(["pgrep", "-f", f"valgrind.*{paths.workdir()}"], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
