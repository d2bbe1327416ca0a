"""A store several machines share: a real PostgreSQL server (Debian's postgresql, a temporary
data directory, a Unix socket), the same schema and resume rule as SQLite, concurrent writers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from bench.labs.postgres import serve as _postgres_serve

from conftest import lb, require_module
from test_bisect import make_history

require_module("psycopg")

from layoutbench import bisect  # noqa: E402
from layoutbench.store import RunKey, Store  # noqa: E402

CG = ["--target", "cachegrind", "--args", "iterations=300"]


@pytest.fixture(scope="module")
def pg():
    """A real PostgreSQL server (bench/labs/postgres.py)."""
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


def test_opening_a_complete_store_takes_no_lock_on_its_tables(pg):
    """A worker opening the store while another holds a write lock on every table (a run being
    stored, a bisection reading): the open reads the catalog and takes no table lock, so it is
    not queued behind them (ALTER TABLE ... IF NOT EXISTS on every open waited here, and beside
    a running bisection the two deadlocked).  A store with a column missing is still completed."""
    import threading

    import psycopg

    Store(pg).close()  # the schema, complete
    holder = psycopg.connect(pg)
    try:
        for table in ("builds", "runs", "samples", "state", "configs", "machine_checks"):
            holder.execute(f"LOCK TABLE {table} IN ROW EXCLUSIVE MODE")  # held until the rollback below
        opened: dict = {}
        t = threading.Thread(target=lambda: opened.setdefault("store", Store(pg)), daemon=True)
        t.start()
        t.join(timeout=120)  # a hang guard: an open queued behind the lock waits until it is released
        assert "store" in opened, "opening a complete store waited for a lock on its tables"
        opened["store"].close()
    finally:
        holder.rollback()
        holder.close()
    with psycopg.connect(pg, autocommit=True) as c:
        c.execute("ALTER TABLE runs DROP COLUMN deploy_seconds")
    st = Store(pg)
    try:
        assert any(r["column_name"] == "deploy_seconds" for r in st.db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"))
    finally:
        st.close()


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
        t = threading.Thread(target=lambda: out.setdefault("b", b._retry(lambda: tx(b, "b", "dl:2", "dl:1"), "test")))
        t.start()
        out["a"] = a._retry(lambda: tx(a, "a", "dl:1", "dl:2"), "test")
        t.join(timeout=60)
        assert out == {"a": "a", "b": "b"}
        assert sorted(tries.values()) == [1, 2]  # one was rolled back by the server and ran again

        calls = []

        def unique():
            calls.append(1)
            a.db.execute("INSERT INTO configs (hash, text, created) VALUES (?,?,?)", ("dup", "x", 0.0))

        unique()
        with pytest.raises(Exception) as e:
            a._retry(unique, "test")
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
            lite._retry(boom, "test")
        assert n == [1]
    finally:
        lite.close()


# -- every write of the store is retried, single autocommit statements too -------------------------

def _raw(pg: str):
    """A connection of the test's own (its statements are not counted by ``_statements``)."""
    import psycopg

    return psycopg.connect(pg, autocommit=True, application_name="lb-test")


@contextlib.contextmanager
def _statements(pg: str, table: str, event: str = "INSERT", fail_first: str | None = None, every: bool = False):
    """Count, on the server, the store's ``event`` statements on ``table`` (not the test's own
    connections'): a statement-level BEFORE trigger advances a sequence (nextval is never rolled
    back, so a statement the server then rolls back still counts).  With ``fail_first`` (an
    SQLSTATE) the trigger raises that error from the first statement only (``every``: from every
    statement).  Yields a function returning the count; the trigger goes after."""
    raw = _raw(pg)
    fail = (f"IF n = 1 OR {every} THEN RAISE EXCEPTION 'first statement refused' USING ERRCODE = '{fail_first}'; "
            f"END IF;") if fail_first else ""
    raw.execute(f"""CREATE SEQUENCE lb_tries;
        CREATE FUNCTION lb_count() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE n bigint; BEGIN
        IF current_setting('application_name') = 'lb-test' THEN RETURN NULL; END IF;
        n := nextval('lb_tries'); {fail} RETURN NULL; END $$;
        CREATE TRIGGER lb_count BEFORE {event} ON {table} FOR EACH STATEMENT
        EXECUTE FUNCTION lb_count()""")
    try:
        yield lambda: raw.execute("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM lb_tries").fetchone()[0]
    finally:
        raw.execute(f"DROP TRIGGER lb_count ON {table}; DROP FUNCTION lb_count(); DROP SEQUENCE lb_tries")
        raw.close()


def _wait_for_lock(x, pid: int) -> None:
    """Until the backend ``pid`` waits for a lock (the store's statement is blocked)."""
    deadline = time.time() + 60
    while x.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid=%s", (pid,)).fetchone()[0] != "Lock":
        assert time.time() < deadline, "the store's statement never waited for the lock"
        time.sleep(0.005)


def _conflict(pg: str, st: Store, how: str, hold: str, call) -> BaseException | None:
    """A second real connection X runs ``hold`` (SQL taking a row) in an open transaction; ``call()``
    (a store write) runs in a thread and waits for X's row; then
    - "serialize": X commits; the store's session runs at REPEATABLE READ, so its statement, whose
      snapshot predates X's commit, is rolled back by the server with 40001;
    - "deadlock": X asks for a SHARE lock on table state, which the waiting statement's ROW
      EXCLUSIVE lock blocks: a cycle; the store's backend, whose deadlock_timeout (2 s; X's 60 s)
      runs out first, is rolled back with 40P01; X then commits.
    Returns what ``call()`` raised (None: it finished)."""
    import threading

    if how == "serialize":
        st.db.execute("SET default_transaction_isolation = 'repeatable read'")
    else:
        st.db.execute("SET deadlock_timeout = '2s'")
    x = _raw(pg)
    x.execute("SET deadlock_timeout = '60s'")
    out: dict = {}

    def run():
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["e"] = e

    try:
        x.execute("BEGIN")
        x.execute(hold)
        t = threading.Thread(target=run)
        t.start()
        with _raw(pg) as watch:
            _wait_for_lock(watch, st.db.conn.info.backend_pid)
        if how == "deadlock":
            x.execute("LOCK TABLE state IN SHARE MODE")  # returns once the server rolled the store's statement back
        x.execute("COMMIT")
        t.join(timeout=60)
        assert not t.is_alive()
    finally:
        x.close()
        st.db.execute("RESET default_transaction_isolation")
        st.db.execute("RESET deadlock_timeout")
    return out.get("e")


def test_a_read_the_server_rolled_back_as_a_deadlock_runs_again(pg):
    """A read outside a transaction (the store's join of builds and runs) holds builds and waits for
    runs, which a second real connection X holds; X then asks for builds: a cycle, and the server
    rolls the read back with 40P01 (its deadlock_timeout, 2 s, runs out first).  The read runs again
    once X is done, and returns its rows; it is not an error of the command."""
    import threading

    st = Store(pg)
    x = _raw(pg)
    out: dict = {}
    join = "SELECT count(*) AS n FROM builds b JOIN runs r ON r.build_id = b.id"
    before = st.db.execute(join).fetchall()

    def read():
        try:
            out["rows"] = st.db.execute(join).fetchall()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["e"] = e

    try:
        st.db.execute("SET deadlock_timeout = '2s'")
        x.execute("SET deadlock_timeout = '60s'")
        x.execute("BEGIN")
        x.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        t = threading.Thread(target=read)
        t.start()
        with _raw(pg) as watch:
            _wait_for_lock(watch, st.db.conn.info.backend_pid)
        x.execute("LOCK TABLE builds IN ACCESS EXCLUSIVE MODE")  # returns once the server rolled the read back
        x.execute("COMMIT")
        t.join(timeout=120)
        assert not t.is_alive()
        assert "e" not in out and out["rows"] == before, out
    finally:
        x.close()
        st.close()


@pytest.mark.parametrize("how", ["serialize", "deadlock"])
def test_a_single_statement_write_the_server_rolled_back_runs_again(pg, how):
    """set_state is one autocommit statement: a real serialization failure (40001) or deadlock
    (40P01) from the server runs it again, and it lands; with one try allowed the same conflict is
    the error, one line naming the store operation.  Inside a caller's transaction it is not run
    again (only the whole transaction could be)."""
    from layoutbench.store import error_line

    st = Store(pg)
    try:
        key = f"retry:{how}"
        st.set_state(key, "before")
        with _statements(pg, "state") as count:
            assert _conflict(pg, st, how, f"UPDATE state SET value='\"x\"' WHERE key='{key}'",
                             lambda: st.set_state(key, "a")) is None
            assert count() == 2  # run twice: rolled back once, then landed
        assert st.get_state(key) == "a"  # over X's committed value

        st.RETRIES = 1
        with _statements(pg, "state") as count:
            e = _conflict(pg, st, how, f"UPDATE state SET value='\"x\"' WHERE key='{key}'",
                          lambda: st.set_state(key, "b"))
            assert count() == 1
        code, first = {"serialize": ("40001", "could not serialize access"),
                       "deadlock": ("40P01", "deadlock detected")}[how]
        assert e is not None and e.sqlstate == code, e
        line = error_line(e)
        assert line.startswith(f"store: set_state failed after 1 try: {first}") and "\n" not in line, line
        assert st.get_state(key) == "x"
        del st.RETRIES

        if how == "serialize":
            def in_tx():
                with st._tx():
                    st.set_state(key, "c")
            with _statements(pg, "state") as count:
                e = _conflict(pg, st, how, f"UPDATE state SET value='\"y\"' WHERE key='{key}'", in_tx)
                assert count() == 1  # not run again inside the caller's transaction
            assert e is not None and e.sqlstate == "40001" and e.store_tries == 1
            assert st.get_state(key) == "y"
    finally:
        st.close()


@pytest.mark.parametrize("op", ["del_state", "config_id"])
def test_other_single_statement_writes_rolled_back_by_a_real_conflict_run_again(pg, op):
    """del_state (a DELETE) and config_id (an INSERT ... ON CONFLICT DO NOTHING) under a real
    serialization failure: run again, and the write lands."""
    st = Store(pg)
    try:
        if op == "del_state":
            st.set_state("retry:del", 1)
            table, event, hold, call = "state", "DELETE", "UPDATE state SET value='2' WHERE key='retry:del'", \
                lambda: st.del_state("retry:del")
        else:
            from layoutbench.store import config_hash, config_text
            cfg = {"kind": "retry-test"}
            table, event, hold, call = "configs", "INSERT", f"INSERT INTO configs VALUES ('{config_hash(cfg)}', " \
                                           f"'{config_text(cfg)}', 0)", lambda: st.config_id(cfg)
        with _statements(pg, table, event) as count:
            assert _conflict(pg, st, "serialize", hold, call) is None
            assert count() == 2
        if op == "del_state":
            assert st.get_state("retry:del") is None
        else:
            h = config_hash({"kind": "retry-test"})
            assert st.configs([h]) == {h: {"kind": "retry-test"}}
    finally:
        st.close()


def test_every_write_of_the_store_runs_again_after_a_serialization_failure_and_no_other_error(pg, tmp_path):
    """Each write operation of the store, its first statement refused by the server with 40001
    (a trigger raises it): run again, and it lands.  Refused with another SQLSTATE: raised at
    once, after one statement, naming the operation."""
    import types

    from layoutbench.store import config_hash, error_line

    plan = tmp_path / "plan.txt"
    plan.write_text("plan")
    variant = types.SimpleNamespace(kernel="k", commit="c" * 40, image="img", layout="default", seed=0, sha256="s",
                                    plan_id="p", plan_path=plan, elf=tmp_path / "vmlinux")
    key = RunKey("t", "h", "rerun", "", "cfg")
    result = types.SimpleNamespace(status="failed", message="m", samples=[], host="h", accelerator="tcg",
                                   exit_code=1, duration=0.1)
    st = Store(pg)
    bid = st.build_id(variant, {})
    seeds = iter(range(1, 3))  # a new image each time: a stored one is found without a write
    ops = {  # operation -> (table it writes [statement counted, INSERT unless said], the call, what shows it landed)
        "set_state": ("state", lambda: st.set_state("retry:all", 1), lambda: st.get_state("retry:all") == 1),
        "del_state": ("state DELETE", lambda: st.del_state("retry:all"), lambda: st.get_state("retry:all") is None),
        "config_id": ("configs", lambda: st.config_id({"kind": "all"}),
                    lambda: st.configs([config_hash({"kind": "all"})]) == {config_hash({"kind": "all"}): {"kind": "all"}}),
        "add_machine_check": ("machine_checks", lambda: st.add_machine_check(key, [{"check": "x"}]),
                              lambda: st.last_machine_check(key) == [{"check": "x"}]),
        "build_id": ("builds", lambda: st.build_id(types.SimpleNamespace(**{**vars(variant), "seed": next(seeds)}), {}),
                     lambda: len(st.builds(kernel="k")) == 2),
        "add_run": ("runs", lambda: st.add_run(bid, key, 0, result, tmp_path / "log", 0.0),
                    lambda: len(st.runs(kernel="k")) == 1),
    }
    try:
        for op, (table, call, landed) in ops.items():
            with _statements(pg, *table.split(), fail_first="40001") as count:
                call()
                assert count() == 2 and landed(), op
        for op, (table, call, landed) in ops.items():
            with _statements(pg, *table.split(), fail_first="23514") as count:  # check_violation: not retryable
                with pytest.raises(Exception) as e:
                    call()
                assert count() == 1 and e.value.sqlstate == "23514", op
                assert error_line(e.value).startswith(f"store: {op} failed after 1 try: first statement refused;")
    finally:
        st.close()


def test_a_write_the_server_keeps_refusing_is_one_line_naming_the_operation(pg, workdir):
    """The command's one line says which store operation failed and after how many tries."""
    with _statements(pg, "configs", fail_first="40001", every=True) as count:
        p = lb("compare", "minikernel", *CG, "--layouts", "default", "--runs", "1", "--store", pg, check=False)
        assert count() == Store.RETRIES
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("layoutbench: error: store: config_id failed after 6 tries: first statement refused; "
                           "other workers kept writing the same rows"), p.stderr[-2000:]
