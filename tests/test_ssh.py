"""The ``ssh`` target against real OpenSSH servers started here on 127.0.0.1 (throw-away keys).

- a compare of the hosted minikernel over ssh stores samples tagged with the remote host;
- an unreachable host and a refused key each give one clear line, and the reachable
  target's samples are stored all the same (the command exits non-zero at the end);
- two targets run in parallel: their runs overlap in time, and each host is its own report;
- reboot-and-wait (a stand-in reboot that changes the boot id) and kill-at-timeout.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from bench.labs import sshd as _sshd
from bench.labs.remote import profile, ssh_target
from conftest import lb, require, require_module

require_module("asyncssh")


@pytest.fixture(autouse=True)
def _sshd_installed():
    require(_sshd.available())

SMALL = "iterations=2000"


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


@pytest.fixture
def lab(tmp_path):
    lab = _sshd.Lab(tmp_path / "lab", 2)
    yield lab
    lab.stop()


def test_compare_over_ssh_stores_samples_of_the_remote_host(workdir, tmp_path, lab):
    toml = profile(tmp_path / "prof", ssh_target("remote", lab, "bench0", tmp_path))
    db = tmp_path / "r.sqlite"
    p = lb("compare", str(toml), "--layouts", "default,random:2", "--runs", "2", "--target", "remote",
           "--args", SMALL, "--store", str(db), "--json")
    rep = json.loads(p.stdout)
    host = f"root@127.0.0.1:{lab.servers[0].port}"
    assert rep["host"] == host and rep["runs"] == {"ok": 6}
    assert rows(db, "SELECT DISTINCT target, host, accelerator FROM runs") == [("remote", host, "native")]
    assert rows(db, "SELECT count(*) FROM samples")[0][0] >= 6
    # the image went over sftp into remote_dir, once per variant, and the log says what ran
    assert len(list((tmp_path / "remote-remote").iterdir())) == 3
    # the copy is a new image's cost (a layout's), stored with the run that made it; a rerun skips it
    assert rows(db, "SELECT rep, count(*), sum(deploy_seconds > 0), sum(deploy_seconds IS NULL), "
                    "sum(boot_seconds IS NULL) FROM runs GROUP BY rep") == [(0, 3, 3, 0, 3), (1, 3, None, 3, 3)]
    log = Path(rows(db, "SELECT log_path FROM runs LIMIT 1")[0][0]).read_text()
    assert f"# ssh {host} (bench0)" in log and "LAYOUTBENCH metric name=cycles_per_packet" in log
    # resumable as any compare: nothing runs again
    lb("compare", str(toml), "--layouts", "default,random:2", "--runs", "2", "--target", "remote",
       "--args", SMALL, "--store", str(db))
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == 6


def test_unreachable_host_and_refused_key_lose_no_other_samples(workdir, tmp_path, lab):
    other_key = _sshd.keygen(tmp_path / "not-authorized")
    closed = _sshd.free_port()
    toml = profile(tmp_path / "prof",
                   ssh_target("good", lab, "bench0", tmp_path)
                   + ssh_target("down", lab, "127.0.0.1", tmp_path, port=closed, user="root", connect_timeout=5)
                   + ssh_target("badkey", lab, "bench1", tmp_path, identity=str(other_key)))
    db = tmp_path / "r.sqlite"
    p = lb("compare", str(toml), "--layouts", "default,sorted", "--runs", "2", "--target", "good,down",
           "--target", "badkey", "--args", SMALL, "--store", str(db), check=False)
    assert p.returncode != 0
    err = p.stderr
    down = [ln for ln in err.splitlines() if "ssh target down:" in ln]
    bad = [ln for ln in err.splitlines() if "ssh target badkey:" in ln]
    assert any(f"ssh target down: cannot connect to 127.0.0.1:{closed}: connection refused" in ln for ln in down), err
    assert any(f"ssh target badkey: cannot connect to 127.0.0.1:{lab.servers[1].port}: permission denied" in ln
               for ln in bad), err
    assert "Traceback" not in err
    good = f"root@127.0.0.1:{lab.servers[0].port}"
    assert rows(db, "SELECT target, host, status, count(*) FROM runs GROUP BY 1, 2, 3") == [("good", good, "ok", 4)]
    assert "target good on " + good in p.stdout and "cycles_per_packet" in p.stdout


def test_two_targets_in_parallel_overlap_and_stay_apart(workdir, tmp_path, lab):
    # each run lasts a little (a sleep before the benchmark), so that overlap is unambiguous
    slow = {"command": ["sh", "-c", 'sleep 0.4; exec "$0" "$@"', "{image}"]}
    toml = profile(tmp_path / "prof", ssh_target("a", lab, "bench0", tmp_path, **slow)
                   + ssh_target("b", lab, "bench1", tmp_path, **slow))
    db = tmp_path / "r.sqlite"
    p = lb("compare", str(toml), "--layouts", "default,random:2", "--runs", "2", "--target", "a,b",
           "--args", SMALL, "--store", str(db), "--json")
    multi = json.loads(p.stdout)
    hosts = {f"root@127.0.0.1:{s.port}" for s in lab.servers}
    assert {(r["target"], r["host"]) for r in multi["reports"]} == {
        ("a", f"root@127.0.0.1:{lab.servers[0].port}"), ("b", f"root@127.0.0.1:{lab.servers[1].port}")}
    assert multi["failed_targets"] == []
    # statistics never pool hosts: each report's values are exactly its own host's samples
    for r in multi["reports"]:
        m = next(m for m in r["metrics"] if m["metric"] == "cycles_per_packet")
        values = sorted(v for row in m["rows"] for vs in row["values"].values() for v in vs)
        stored = sorted(v for (v,) in rows(db, "SELECT value FROM samples JOIN runs ON runs.id = run_id WHERE "
                                               f"metric='cycles_per_packet' AND host='{r['host']}'"))
        assert values == stored and len(values) == 6
    assert {h["host"] for h in multi["per_host"] if h["metric"] == "cycles_per_packet"} == hosts
    # the two hosts ran at the same time: some run on one overlaps some run on the other
    spans = {h: [(s, s + d) for s, d in rows(db, f"SELECT started, duration FROM runs WHERE host='{h}'")]
             for h in hosts}
    ha, hb = sorted(hosts)
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans[ha] for b0, b1 in spans[hb]), spans


def test_reboot_and_wait_then_run_the_installed_image(workdir, tmp_path, lab):
    """A stand-in reboot: it changes the boot id after a moment, as a real one does when the machine is back."""
    from layoutbench import build, profile as profmod, source, targets

    state = tmp_path / "machine"
    state.mkdir()
    (state / "boot_id").write_text("boot-1\n")
    toml = profile(tmp_path / "prof", ssh_target(
        "box", lab, "bench0", tmp_path, install=f"cp {{image}} {state}/installed",
        reboot=True, reboot_command=f"sleep 1; date +%s%N > {state}/boot_id", boot_id_command=f"cat {state}/boot_id",
        boot_poll=0.5, boot_timeout=30, command=[f"{state}/installed", SMALL], collect=["echo collected"]))
    prof = profmod.load(str(toml))
    objs = build.compile_objects(prof, source.resolve(prof, None, None, None))
    v = build.link_variant(objs, "hosted", "default")
    t = targets.make(prof, "box")
    try:
        r = t.run(v.elf, tmp_path / "run.log")
    finally:
        t.close()
    log = (tmp_path / "run.log").read_text()
    assert r.status == "ok", (r.message, log)
    assert (state / "installed").read_bytes() == v.elf.read_bytes()
    assert (state / "boot_id").read_text() != "boot-1\n"
    assert "# reboot:" in log and "# back after" in log and "collected" in log
    assert r.host == f"root@127.0.0.1:{lab.servers[0].port}"
    # the copy, install and reboot (its command sleeps 1 s) are a run's cost, not in its duration
    assert r.boot_seconds >= 1.0 and r.deploy_seconds is None and t.run_noun == "reboots+runs"


def test_a_hanging_remote_run_is_killed_with_its_process_group(workdir, tmp_path, lab):
    from layoutbench import profile as profmod, targets

    marker = f"lb-hang-{time.monotonic_ns()}"
    hang = tmp_path / "hang.sh"
    hang.write_text(f"#!/bin/sh\nsh -c 'sleep 300; : {marker}' &\nsh -c 'sleep 301; : {marker}'\n")
    hang.chmod(0o755)
    toml = profile(tmp_path / "prof", ssh_target("h", lab, "bench0", tmp_path, command=["{image}"]))
    t = targets.make(profmod.load(str(toml)), "h", timeout=10)
    try:
        r = t.run(hang, tmp_path / "hang.log")
    finally:
        t.close()
    # it waited for the timeout, and ended long before the 300 s sleeps would have
    assert r.status == "timeout" and 10 <= r.duration < 200
    deadline = time.monotonic() + 60
    while (left := subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], left
