"""A store several machines share: a real PostgreSQL server (Debian's postgresql, a temporary
data directory, a Unix socket), the same schema and resume rule as SQLite, concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from _postgres import serve as _postgres_serve

from conftest import lb
from test_bisect import make_history

pytest.importorskip("psycopg", reason="pip install 'psycopg[binary]' (the test extra has it)")

from layoutbench import bisect  # noqa: E402
from layoutbench.store import Store  # noqa: E402

CG = ["--target", "cachegrind", "--args", "iterations=300"]


@pytest.fixture(scope="module")
def pg():
    """A real PostgreSQL server (tests/_postgres.py)."""
    yield from _postgres_serve()


def _count(url: str, **where) -> int:
    st = Store(url)
    try:
        return len(st.runs(**where))
    finally:
        st.close()


def test_compare_resumes_from_a_postgresql_store_and_two_workers_write_at_once(pg, workdir):
    # two workers measure at the same time into the one store (different layouts, same builds table)
    procs = [subprocess.Popen([sys.executable, "-m", "layoutbench.cli", "compare", "minikernel", *CG, "--layouts",
                               lay, "--runs", "2", "--store", pg, "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for lay in ("default,random:2", "sorted,random:2")]
    outs = [p.communicate(timeout=900) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    reps = [json.loads(o[0]) for o in outs]
    assert all(r["runs"] == {"ok": 6} for r in reps), [r["runs"] for r in reps]
    # random:1 and random:2 were linked by both workers: one build row each, the runs of both kept apart
    st = Store(pg)
    builds = st.builds(kernel="minikernel")
    st.close()
    assert len({(b["layout"], b["seed"]) for b in builds}) == len(builds) == 4  # default, sorted, random:1, random:2
    assert _count(pg, kernel="minikernel", target="cachegrind") == 8  # 2 runs x 4 variants: nothing run twice
    # the same command again resumes: every run is stored, none is made
    again = lb("compare", "minikernel", *CG, "--layouts", "default,random:2", "--runs", "2", "--store", pg, "--json")
    assert "6 run(s) were already in the store; 0 run now" in again.stderr
    assert json.loads(again.stdout)["metrics"] == reps[0]["metrics"]
    assert _count(pg, kernel="minikernel", target="cachegrind") == 8


def test_a_bisection_interrupted_against_postgresql_resumes(pg, tmp_path_factory, workdir):
    hist = make_history(tmp_path_factory.mktemp("pghist") / "repo", 6, seed=5, regression_at=3, regression_pct=4.0,
                        layout_only=[1, 4])
    cmd = [sys.executable, "-m", "layoutbench.cli", "bisect", "minikernel", f"{hist['good']}..{hist['bad']}",
           "--repo", hist["repo"], *CG, "--store", pg, "--no-shadow", "--json"]

    def marks() -> list:
        st = Store(pg)
        try:
            bs = [b for b in bisect.stored(st) if b.s.repo == hist["repo"]]
        finally:
            st.close()
        return [(e["verb"], e["commit"]) for b in bs for e in b.log if e["verb"] in ("good", "bad", "skip")]

    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline, first = time.time() + 600, []
    while time.time() < deadline and p.poll() is None and not first:
        time.sleep(0.5)
        first = marks()
    assert p.poll() is None, "the bisection ended before it could be interrupted"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    first = marks()
    runs_before = _count(pg, kernel="minikernel")
    assert first and runs_before > 0
    v = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    after = marks()
    assert after[:len(first)] == first  # what was decided stays decided
    assert len({c for _, c in after}) == len(after)  # no commit probed twice
    assert v["culprit"] == hist["regression"], v.get("message")
    assert v["cost"]["ran_now"] < v["cost"]["runs"]  # the runs stored before the kill were not run again


def test_an_unreachable_postgresql_store_is_one_line(tmp_path):
    p = lb("results", "--store", f"postgresql://nobody@/nodb?host={tmp_path}", check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "cannot connect to the store" in p.stderr


def test_a_transaction_the_server_rolled_back_as_a_deadlock_runs_again(pg, tmp_path):
    """Two workers' transactions that take the same two rows in opposite orders: PostgreSQL
    detects the deadlock and rolls one back (a real 40P01 from the server, after its 1 s
    deadlock_timeout); Store._retry runs that transaction again and both finish.  Any other
    error, and every error of an SQLite store, is raised at once."""
    import threading

    a, b = Store(pg), Store(pg)
    try:
        for k in ("dl:1", "dl:2"):
            a.set_state(k, 0)
        tries = {"a": 0, "b": 0}
        ready = threading.Barrier(2)

        def tx(st: Store, me: str, first: str, second: str) -> str:
            tries[me] += 1
            with st._tx():
                st.db.execute("UPDATE state SET value=? WHERE key=?", (json.dumps(me), first))
                if tries[me] == 1:
                    ready.wait(timeout=30)  # both hold their first row
                st.db.execute("UPDATE state SET value=? WHERE key=?", (json.dumps(me), second))
            return me

        out: dict = {}
        t = threading.Thread(target=lambda: out.setdefault("b", b._retry(lambda: tx(b, "b", "dl:2", "dl:1"))))
        t.start()
        out["a"] = a._retry(lambda: tx(a, "a", "dl:1", "dl:2"))
        t.join(timeout=60)
        assert out == {"a": "a", "b": "b"}
        assert sorted(tries.values()) == [1, 2]  # one was rolled back by the server and ran again

        calls = []

        def unique():
            calls.append(1)
            a.db.execute("INSERT INTO configs (hash, text, created) VALUES (?,?,?)", ("dup", "x", 0.0))

        unique()
        with pytest.raises(Exception) as e:
            a._retry(unique)
        assert e.value.sqlstate == "23505" and len(calls) == 2  # a unique violation: raised at once
    finally:
        a.close()
        b.close()
    lite = Store(tmp_path / "r.sqlite")
    try:
        n = []

        def boom():
            n.append(1)
            raise sqlite3.OperationalError("database is locked")

        with pytest.raises(sqlite3.OperationalError):
            lite._retry(boom)
        assert n == [1]
    finally:
        lite.close()
