"""Hardware counters through perf stat, and the quiet-machine check: real perf, real sh, real load."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys

import pytest

from conftest import require

from layoutbench import machine, perfstat, profile, targets
from layoutbench.errors import LayoutbenchError

BENCH = ("echo 'LAYOUTBENCH metric name=work value=7 unit=units better=lower'; "
         "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo 'LAYOUTBENCH end status=ok'")


def _target(kind: str = "local", **settings) -> targets.Target:
    prof = profile.load("minikernel")
    spec = dataclasses.replace(prof.target(kind if kind != "local" else "local"),
                               settings={"command": ["sh", "-c", BENCH], **settings})
    prof = dataclasses.replace(prof, targets={**prof.targets, spec.name: spec})
    return targets.make(prof, spec.name)


@pytest.fixture(scope="module")
def perf():
    if not shutil.which("perf"):
        require("perf is not installed")
    return "perf"


def test_perf_counts_software_events_and_names_unsupported_ones(perf, tmp_path):
    events = ("task-clock", "page-faults", "context-switches", "cycles", "instructions", "iTLB-load-misses")
    t = _target(perf=list(events))
    r = t.run(tmp_path / "bench", tmp_path / "run.log")
    assert r.status == "ok", r.message
    got = {s.metric: s for s in r.samples}
    assert got["work"].value == 7  # the benchmark's own metric is still read
    # software events always exist: counted, with perf's units
    assert got["perf.task-clock"].value > 0 and got["perf.task-clock"].unit == "msec"
    assert got["perf.page-faults"].value > 0
    assert "perf.context-switches" in got
    # every asked event is either a metric or named as unsupported, never both, never lost
    counted = {m[len(perfstat.PREFIX):] for m in got if m.startswith(perfstat.PREFIX)} - {"ipc"}
    unsupported = set(perfstat.parse(r.output, events).unsupported)
    assert counted | unsupported == set(events)
    assert not counted & unsupported
    # IPC is derived exactly when both hardware counters were counted
    assert ("perf.ipc" in got) == ({"cycles", "instructions"} <= counted)
    line = perfstat.unsupported_line(unsupported)
    if unsupported:
        assert line.startswith("perf: not supported here") and "cycles" in line
    else:
        assert line is None


def test_perf_parse_reads_only_asked_events_and_derives_ipc():
    out = ("LAYOUTBENCH metric name=x value=1,5,cycles unit=u\n"  # a benchmark line with commas: ignored
           "2000,,cycles:u,100,100.00,,\n1000,,instructions:u,100,100.00,0.5,insn per cycle\n"
           "<not counted>,,branch-misses,0,0.00,,\n3.5,msec,task-clock,1,100.00,1.0,CPUs utilized\n")
    c = perfstat.parse(out, ("cycles", "instructions", "branch-misses", "task-clock", "iTLB-load-misses"))
    vals = {s.metric: s.value for s in c.samples}
    assert vals == {"perf.cycles": 2000, "perf.instructions": 1000, "perf.task-clock": 3.5, "perf.ipc": 0.5}
    assert [s.higher_is_better for s in c.samples if s.metric == "perf.ipc"] == [True]
    assert sorted(c.unsupported) == ["branch-misses", "iTLB-load-misses"]


def test_pin_runs_the_benchmark_on_that_cpu(tmp_path):
    require(None if shutil.which("taskset") else "taskset is not installed")
    prof = profile.load("minikernel")
    script = ("echo LAYOUTBENCH metric name=cpus value=$(taskset -pc $$ | sed 's/.*: //') unit=cpu better=lower;"
              " echo LAYOUTBENCH end status=ok")
    spec = dataclasses.replace(prof.target("local"), settings={"command": ["sh", "-c", script], "pin": "0"})
    t = targets.make(dataclasses.replace(prof, targets={**prof.targets, "local": spec}), "local")
    r = t.run(tmp_path / "x", tmp_path / "run.log")
    assert r.status == "ok", r.output
    assert [s.value for s in r.samples if s.metric == "cpus"] == [0]  # the affinity list is just CPU 0


def test_perf_on_a_qemu_target_is_refused_in_one_line():
    prof = profile.load("minikernel")
    spec = dataclasses.replace(prof.target("qemu"), settings={**prof.target("qemu").settings, "perf": True})
    with pytest.raises(LayoutbenchError, match="cannot count with perf"):
        targets.make(dataclasses.replace(prof, targets={**prof.targets, "qemu": spec}), "qemu")


def test_quiet_check_reads_this_machine():
    found = {f.check: f for f in machine.check_local(pin="0")}
    assert set(found) == {"governor", "boost", "smt", "aslr", "load", "pinning"}
    assert found["pinning"].value.startswith("pinned to 0")
    aslr = open("/proc/sys/kernel/randomize_va_space").read().strip()
    assert bool(found["aslr"].problem) == (aslr != "0")
    assert "CPU(s)" in found["load"].value


def test_a_busy_machine_is_reported_with_a_fix():
    n = (os.cpu_count() or 1) + 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        found = {f.check: f for f in machine.check_local()}
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    load = found["load"]
    assert load.problem.startswith("the machine is busy"), load
    assert "stop other jobs" in load.fix
    assert any(line.startswith("the machine is busy") for line in machine.problems(list(found.values())))
    assert found["pinning"].problem and "--pin" in found["pinning"].fix


@pytest.mark.parametrize("facts, check, bad", [
    ({"governor": "powersave", "ncpu": "4"}, "governor", True),
    ({"governor": "performance", "ncpu": "4"}, "governor", False),
    ({"perfpolicy": "auto", "ncpu": "4"}, "governor", True),
    ({"no_turbo": "0", "ncpu": "4"}, "boost", True),
    ({"no_turbo": "1", "ncpu": "4"}, "boost", False),
    ({"smt": "1", "ncpu": "4"}, "smt", True),
    ({"smt": "0", "ncpu": "4"}, "smt", False),
    ({"aslr": "0", "ncpu": "4"}, "aslr", False),
    ({"loadavg": "3.9 1.0 1.0 1/100 7", "ncpu": "4", "running": ["1"]}, "load", True),
    ({"loadavg": "0.1 1.0 1.0 1/100 7", "ncpu": "4", "running": ["1", "1", "2"]}, "load", False),
])
def test_assess_judges_each_condition(facts, check, bad):
    f = {x.check: x for x in machine.assess(facts, pin=None)}[check]
    assert bool(f.problem) == bad, f
    assert bool(f.fix) == bad


def test_pinning_to_a_cpu_that_is_not_isolated():
    f = {x.check: x for x in machine.assess({"ncpu": "4", "isolated": "2-3"}, pin="1")}["pinning"]
    assert "not isolated" in f.problem and "2,3" in f.fix
    f = {x.check: x for x in machine.assess({"ncpu": "4", "isolated": "2-3"}, pin="3")}["pinning"]
    assert not f.problem and "isolated" in f.value


def test_compare_with_perf_stores_counters_and_warns_on_a_busy_machine(perf, workdir, tmp_path):
    """The issue's check: `compare --target local --perf` stores task-clock and page-faults per run,
    names the unsupported hardware events in one line, and the header shows the quiet-machine
    findings; a busy loop raising the load is reported as a problem with its fix."""
    import json

    from conftest import lb

    store = tmp_path / "s.sqlite"
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range((os.cpu_count() or 1) + 1)]
    try:
        p = lb("compare", "minikernel", "--target", "local", "--perf", "--layouts", "default,sorted", "--runs", "2",
               "--args", "iterations=20000", "--metric", "all", "--json", "--store", str(store))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    rep = json.loads(p.stdout)
    assert {f["check"] for f in rep["machine"]} == {"governor", "boost", "smt", "aslr", "load", "pinning"}
    assert any(w.startswith("the machine is busy") and "fix:" in w for w in rep["warnings"]), rep["warnings"]
    shown = {m["metric"] for m in rep["metrics"]}
    assert {"perf.task-clock", "perf.page-faults"} <= shown
    perf_lines = [w for w in rep["warnings"] if w.startswith("perf:")]
    assert len(perf_lines) <= 1  # one line at most, naming every event left out
    rows = json.loads(lb("results", "--kernel", "minikernel", "--format", "json", "--store", str(store)).stdout)
    per_run: dict[int, set] = {}
    for r in rows:
        per_run.setdefault(r["run_id"], set()).add(r["metric"])
    assert len(per_run) == 4
    assert all({"perf.task-clock", "perf.page-faults", "cycles_per_packet"} <= ms for ms in per_run.values())
    hardware = {"cycles", "instructions", "L1-icache-load-misses", "iTLB-load-misses", "branch-misses"}
    counted = {m[len("perf."):] for ms in per_run.values() for m in ms if m.startswith("perf.")}
    missing = hardware - counted
    assert bool(perf_lines) == bool(missing)
    if missing:
        assert all(e in perf_lines[0] for e in missing)
    # the text header shows the findings too
    t = lb("compare", "minikernel", "--target", "local", "--perf", "--layouts", "default,sorted", "--runs", "2",
           "--args", "iterations=20000", "--store", str(store))
    assert "machine " in t.stdout and "pinning not pinned" in t.stdout
