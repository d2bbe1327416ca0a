"""A bisection over labgrid places, on a real coordinator, exporters and PostgreSQL.

A real ``labgrid-coordinator`` and three ``labgrid-exporter`` processes on 127.0.0.1 (each
exporting a NetworkService that points to its own throw-away sshd), three places tagged
``pool=bench``, one PostgreSQL store.  A k-ary bisection runs over the pool; in its middle
one exporter is killed, and a ``compare`` on the same pool and store starts and needs a
place.  The bisection names the planted culprit; every mark names its place, and that
place measured the probe, GOOD and BAD itself; the lost place is in the log and verdict
and judges nothing after its loss; what it stored before is still stored, no failed run
was kept for it; and no place ever ran two runs at once (the compare and the bisection
took turns).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench.labs.postgres import serve as _postgres_serve

from bench.labs import labgrid_lab as _labgrid_lab
from bench.labs.remote import profile
from conftest import ROOT, require, require_module, script
from bench.labs.remote import ARGS, COMMAND

for _module in ("labgrid", "asyncssh", "psycopg"):
    require_module(_module)

from layoutbench.store import Store  # noqa: E402



@pytest.fixture(autouse=True)
def _lab_tools():
    require(_labgrid_lab.available())


@pytest.fixture
def lab(tmp_path):
    lab = _labgrid_lab.LabgridLab(tmp_path / "lab", 3)
    yield lab
    lab.stop()


@pytest.fixture
def pg():
    """A real PostgreSQL server (bench/labs/postgres.py)."""
    yield from _postgres_serve()


def query(url: str, sql: str, *params) -> list[tuple]:
    st = Store(url)
    try:
        return [tuple(r.values()) for r in st.db.execute(sql, params).fetchall()]
    finally:
        st.close()


STARTED: list[subprocess.Popen] = []


def start(*args: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-m", "layoutbench.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
    STARTED.append(p)
    return p


@pytest.fixture
def no_leftovers():
    """A failed test leaves no layoutbench process behind (one waiting for a place, say)."""
    yield
    while STARTED:
        p = STARTED.pop()
        if p.poll() is None:
            p.kill()
            p.communicate()


def finish(p: subprocess.Popen, what: str, timeout: float = 1800) -> str:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"{what} exited {p.returncode}\n{err[-4000:]}"
    return out


def test_a_bisection_over_labgrid_places_survives_a_lost_exporter_and_shares_the_places(workdir, tmp_path, lab, pg,
                                                                                        no_leftovers):
    m = script("kernels/minikernel/make_history.py").make_history(
        tmp_path / "repo", 8, seed=11, regression_at=3, regression_pct=3.0, layout_only=[1, 5, 7])
    toml = profile(tmp_path / "prof", lab.target_table("lab", tmp_path, command=COMMAND))

    bis = start("bisect", str(toml), f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--target", "lab",
                "--metric", "cg_cost", "--args", ARGS, "--no-shadow", "--store", pg, "--json")
    # in the middle of it the exporter of p1 dies
    deadline = time.monotonic() + 1800  # a hang guard: it builds both ends first, minutes on a loaded machine
    while not query(pg, "SELECT id FROM runs WHERE host = 'labgrid:p1'"):
        assert bis.poll() is None and time.monotonic() < deadline, bis.communicate()
        time.sleep(0.1)
    lab.kill_exporter("p1")
    before = query(pg, "SELECT id FROM runs WHERE host = 'labgrid:p1'")
    # and a compare on the same pool and store wants a place while the bisection holds them all
    cmp = start("compare", str(toml), "--layouts", "random:2", "--runs", "2", "--target", "lab", "--args", ARGS,
                "--metric", "cg_cost", "--store", pg, "--json")

    rep = json.loads(finish(cmp, "compare"))
    v = json.loads(finish(bis, "bisect"))

    assert rep["host"] in ("labgrid:p0", "labgrid:p2"), rep["host"]
    assert v["status"] == "found" and v["culprit"] == m["regression"], v["message"]
    assert v["targets"] == ["lab"] and v["rounds"] >= 1 and v["probes"] > v["rounds"]
    assert set(v["places"]["lost"]) == {"p1"}, v["places"]
    assert "exporter" in v["places"]["lost"]["p1"]
    assert v["places"]["slots"] == 3 and v["places"]["slots_at_end"] == 2

    # the log: each mark names its place; the loss is there, and p1 judged nothing after it
    state = [json.loads(val) for key, val in query(pg, "SELECT key, value FROM state") if key != "bisect:current"]
    log = state[0]["log"]
    lost_at = next(i for i, e in enumerate(log) if e["verb"] == "place")
    assert log[lost_at]["place"] == "p1" and "lost" in log[lost_at]["note"]
    marks = [(i, e) for i, e in enumerate(log) if e["verb"] in ("good", "bad", "skip")]
    assert marks and all(e.get("place") in ("p0", "p1", "p2") for _, e in marks), marks
    assert not any(e["place"] == "p1" for i, e in marks if i > lost_at), marks
    assert len({e["place"] for _, e in marks}) >= 2
    assert sum(d["probes"] for d in v["places"]["per_place"].values()) == len(marks)

    # the place that judged a probe measured the probe, GOOD and BAD itself, on the same seeds
    for _, e in marks:
        for sha in (e["commit"], m["good"], m["bad"]):
            seeds = {s for (s,) in query(pg, "SELECT DISTINCT b.seed FROM runs r JOIN builds b ON b.id = r.build_id "
                                             "WHERE b.commit_sha = ? AND r.host = ? AND r.status = 'ok' AND "
                                             "b.layout = 'random'", sha, f"labgrid:{e['place']}")}
            assert len(seeds) >= e["layouts"], (e, sha, seeds)

    # nothing lost: what p1 stored before its exporter died is still there, and every stored run is ok
    after = {r for (r,) in query(pg, "SELECT id FROM runs WHERE host = 'labgrid:p1'")}
    assert {r for (r,) in before} <= after
    assert {s for (s,) in query(pg, "SELECT DISTINCT status FROM runs")} == {"ok"}
    assert query(pg, "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM samples s WHERE s.run_id = r.id)"
                 ) == [(0,)]

    # the compare got a place while the bisection was still running (the bisection gives its places
    # back between rounds), and never two runs at once on one place: they took turns
    runs = query(pg, "SELECT host, started, duration, log_path FROM runs ORDER BY host, started")
    pid = {Path(lp).suffixes[-2][1:] for _, _, _, lp in runs}
    assert pid == {str(bis.pid), str(cmp.pid)}, pid  # the two processes (their pid is in each log's name)
    mine = [r for r in runs if Path(r[3]).suffixes[-2][1:] == str(bis.pid)]
    theirs = [r for r in runs if Path(r[3]).suffixes[-2][1:] == str(cmp.pid)]
    assert min(r[1] for r in theirs) < max(r[1] + r[2] for r in mine), "the compare waited for the whole bisection"
    for a, b in zip(runs, runs[1:]):
        if a[0] == b[0]:
            assert b[1] >= a[1] + a[2], (a, b)

    # the text verdict and the log say where each probe ran
    t = subprocess.run([sys.executable, "-m", "layoutbench.cli", "bisect", str(toml), "--repo", m["repo"],
                        "--store", pg], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "labgrid places (" in t and "lost p1:" in t, t
    lg = subprocess.run([sys.executable, "-m", "layoutbench.cli", "bisect", "log", "--store", pg],
                        capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "# place: labgrid place p1 lost" in lg and "# bad on p" in lg, lg


def test_an_unreachable_coordinator_is_one_line(workdir, tmp_path):
    from bench.labs import sshd as _sshd

    port = _sshd.free_port()  # nothing listens there
    toml = profile(tmp_path / "prof", f'[targets.lab]\nkind = "labgrid-places"\nimage = "hosted"\n'
                                      f'coordinator = "127.0.0.1:{port}"\ncommand = ["true"]\n')
    p = subprocess.run([sys.executable, "-m", "layoutbench.cli", "compare", str(toml), "--layouts", "default",
                        "--runs", "1", "--target", "lab", "--store", str(tmp_path / "s.sqlite")],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode != 0
    err = [ln for ln in p.stderr.splitlines() if not ln.startswith("·")]
    assert err == [f"layoutbench: error: cannot reach the labgrid coordinator at 127.0.0.1:{port}: connection "
                   "refused; is labgrid-coordinator running there (LG_COORDINATOR, or the target's coordinator "
                   "setting)?"], p.stderr
