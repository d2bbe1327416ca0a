"""The store's own promises, on real SQLite files: a run is keyed by build, target, host, mode,
repetition, arguments and configuration (a repetition stored again replaces the old one), what
`done` and `other_configs` report for a resume, the state table the history and bisection keep
their progress in, the quiet-machine checks, and a file that is no store."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from layoutbench.safety import redact_url
from bench.labs.postgres import serve as _postgres_serve

from layoutbench import layout, metrics, store as storemod
from layoutbench.build import Variant
from layoutbench.errors import LayoutbenchError
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult


def _variant(tmp: Path, commit: str, name: str, seed: int) -> Variant:
    plan = layout.LayoutPlan("k", "hosted", commit, name, seed, {"text": []})
    out = tmp / f"{commit}-{name}-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(plan.to_json())
    return Variant("k", commit, "hosted", name, seed, out / "image.elf", out / "plan.json", out / "link.ld",
                   f"{commit}{name}{seed}".ljust(64, "0"), f"0x{plan.plan_id:07x}", True)


def _result(status="ok", value=1.0, host="h1"):
    return RunResult(status, 0 if status == "ok" else 1, "" if status == "ok" else "boom", 0.5, "native", host,
                     [metrics.Sample("cycles", value, "cycles", False), metrics.Sample("ops", 2 * value, "1/s", True)]
                     if status == "ok" else [])


@pytest.fixture(scope="module")
def pg():
    """A real PostgreSQL server (bench/labs/postgres.py)."""
    yield from _postgres_serve()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """A new, empty store: an SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        s = Store(tmp_path / "r.sqlite")
    else:
        import psycopg

        url = request.getfixturevalue("pg")
        db = "t_" + tmp_path.name.replace("-", "_").lower()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {db}")
        s = Store(url.replace("/layoutbench?", f"/{db}?"))
    yield s
    s.close()


def test_store_a_repetition_stored_again_replaces_the_old_one(store, tmp_path):
    v = _variant(tmp_path, "aaaa1111", "random", 1)
    bid = store.build_id(v, {"cc": "clang 19", "ld": "lld 19", "quirks": ["q1"]})
    assert store.build_id(v, {}) == bid
    row = store.builds(build_id=[bid])[0]
    assert json.loads(row["toolchain"]) == {"cc": "clang 19", "ld": "lld 19"} and json.loads(row["quirks"]) == ["q1"]
    assert json.loads(row["plan"])["seed"] == 1 and row["plan_id"] == v.plan_id
    key = RunKey("local", "h1", "rerun", "n=5", "cfg1")
    store.add_run(bid, key, 0, _result("timeout"), Path("/tmp/log0"), 10.0)
    assert store.done(bid, key) == {0: "timeout"}
    store.add_run(bid, key, 0, _result("ok", 3.0), Path("/tmp/log1"), 11.0)
    assert store.done(bid, key) == {0: "ok"}
    runs = store.runs(build_id=bid)
    assert len(runs) == 1 and runs[0]["log_path"] == "/tmp/log1" and runs[0]["started"] == 11.0
    assert [(s["metric"], s["value"]) for s in store.samples(build_id=bid)] == [("cycles", 3.0), ("ops", 6.0)]
    store.add_run(bid, key, 1, _result("ok", 4.0), Path("/tmp/log2"), 12.0)
    assert store.done(bid, key) == {0: "ok", 1: "ok"}
    rid = store.add_run(bid, key, 1, _result("ok", 7.0), Path("/tmp/log2b"), 12.5)  # replaced: no sample left behind
    assert [r["id"] for r in store.runs(build_id=bid) if r["rep"] == 1] == [rid]
    assert sorted(s["value"] for s in store.samples(build_id=bid)) == [3.0, 6.0, 7.0, 14.0]
    assert store.db.execute("SELECT count(*) AS n FROM samples").fetchone()["n"] == 4
    # the run is stored under the host it ran on, whatever the key said
    store.add_run(bid, key, 0, _result("ok", 5.0, host="h9"), Path("/tmp/log3"), 13.0)
    assert store.done(bid, RunKey("local", "h9", "rerun", "n=5", "cfg1")) == {0: "ok"}
    # every part of the key keeps runs apart
    for other in (RunKey("qemu", "h1", "rerun", "n=5", "cfg1"), RunKey("local", "h2", "rerun", "n=5", "cfg1"),
                  RunKey("local", "h1", "reboot", "n=5", "cfg1"), RunKey("local", "h1", "rerun", "", "cfg1"),
                  RunKey("local", "h1", "rerun", "n=5", "cfg2")):
        assert store.done(bid, other) == {}, other


def test_store_other_configurations_are_counted_for_the_resume_message(store, tmp_path):
    a = store.build_id(_variant(tmp_path, "aaaa1111", "random", 1), {})
    b = store.build_id(_variant(tmp_path, "aaaa1111", "random", 2), {})
    c = store.build_id(_variant(tmp_path, "bbbb2222", "random", 1), {})
    for bid in (a, b, c):
        for cfg in ("old1", "old2", "now"):
            for rep in range(2 if cfg == "old1" else 1):
                store.add_run(bid, RunKey("local", "h1", "rerun", "", cfg), rep, _result(), Path("/dev/null"), 0.0)
    store.add_run(a, RunKey("local", "h1", "reboot", "", "old3"), 0, _result(), Path("/dev/null"), 0.0)
    now = RunKey("local", "h1", "rerun", "", "now")
    assert store.other_configs([a, b], now) == {"old1": 4, "old2": 2}
    assert store.other_configs([c], now) == {"old1": 2, "old2": 1}
    assert store.other_configs([], now) == {}
    assert store.other_configs([a], RunKey("local", "h1", "rerun", "", "old1")) == {"now": 1, "old2": 1}


def test_store_configurations_are_stored_once_by_their_canonical_text(store):
    h = store.config_id({"kind": "local", "settings": {"b": 1, "a": [1, 2]}})
    assert h == store.config_id({"settings": {"a": [1, 2], "b": 1}, "kind": "local"}) == storemod.config_hash(
        {"kind": "local", "settings": {"a": [1, 2], "b": 1}})
    assert len(h) == 12 and storemod.config_text({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    g = store.config_id({"kind": "qemu"})
    assert store.configs() == {h: {"kind": "local", "settings": {"a": [1, 2], "b": 1}}, g: {"kind": "qemu"}}
    assert store.configs([g]) == {g: {"kind": "qemu"}}


def test_store_state_keeps_the_latest_value_per_key(store):
    assert store.get_state("history:k:/r") is None and store.states("history:") == []
    store.set_state("history:k:/r", {"points": 1})
    store.set_state("bisect:k:1", [1, 2])
    store.set_state("history:k:/s", {"points": 2})
    store.set_state("history:k:/r", {"points": 3})  # updated: now the latest
    assert store.get_state("history:k:/r") == {"points": 3}
    assert [k for k, _ in store.states("history:")] == ["history:k:/r", "history:k:/s"]
    assert store.states("bisect:") == [("bisect:k:1", [1, 2])]
    store.db.execute("INSERT INTO state (key, value, updated) VALUES ('history:bad', 'not json', 0)")
    assert [k for k, _ in store.states("history:")] == ["history:k:/r", "history:k:/s"]
    store.del_state("history:k:/s")
    assert [k for k, _ in store.states("history")] == ["history:k:/r"]
    assert store.states("history:k:/rx") == []


def test_store_machine_checks_are_per_key_newest_first(store):
    k1, k2 = RunKey("local", "h1", "rerun", "", "c1"), RunKey("local", "h1", "rerun", "", "c2")
    assert store.last_machine_check(k1) == []
    store.add_machine_check(k1, [{"check": "governor", "problem": True}])
    store.add_machine_check(k1, [{"check": "turbo", "problem": False}])
    store.add_machine_check(k2, [{"check": "aslr", "problem": True}])
    assert store.last_machine_check(k1) == [{"check": "turbo", "problem": False}]
    assert store.last_machine_check(k2) == [{"check": "aslr", "problem": True}]
    assert store.last_machine_check(RunKey("local", "h2", "rerun", "", "c1")) == []


def test_store_a_file_that_is_not_a_store_is_one_line(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_bytes(b"just some text, not a database" * 100)
    with pytest.raises(LayoutbenchError, match=r"notes.sqlite: not a layoutbench store \(.*\); move it away or use "
                                               r"--store"):
        Store(bad)
    assert storemod.is_url("postgresql://u@h/db") and storemod.is_url("postgres://h/db")
    assert not storemod.is_url(tmp_path / "r.sqlite")
    assert redact_url("postgresql://bob:secret@db.example/lb") == "postgresql://bob:***@db.example/lb"
    assert redact_url("postgresql://bob@db.example/lb") == "postgresql://bob@db.example/lb"
    s = Store(tmp_path / "sub" / "dir" / "new.sqlite")  # the folders are made
    assert s.runs() == [] and s.path == tmp_path / "sub" / "dir" / "new.sqlite"
    s.close()


def test_store_a_postgresql_store_that_cannot_be_reached_is_one_line_without_its_password():
    with pytest.raises(LayoutbenchError, match=r"cannot connect to the store postgresql://lb:\*\*\*@127.0.0.1:1/x: "
                                               r".*connection") as e:
        Store("postgresql://lb:hunter2@127.0.0.1:1/x")
    assert "hunter2" not in str(e.value) and len(str(e.value).splitlines()) == 1


def test_store_the_default_store_is_in_the_work_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTBENCH_DIR", str(tmp_path / "w"))
    assert storemod.default_path() == tmp_path / "w" / "results.sqlite"


def test_store_a_run_is_stored_whole_or_not_at_all(store, tmp_path):
    """Replacing a repetition deletes the old run and writes the new one with its samples in one
    transaction: when writing a sample fails, the old run and its samples are still there."""
    bid = store.build_id(_variant(tmp_path, "aaaa1111", "random", 1), {})
    key = RunKey("local", "h1", "rerun", "", "c")
    store.add_run(bid, key, 0, _result("ok", 3.0), Path("/tmp/a"), 1.0)
    broken = RunResult("ok", 0, "", 0.5, "native", "h1", [metrics.Sample("cycles", 4.0, "cycles", False),
                                                         metrics.Sample("ops", None, "1/s", True)])
    with pytest.raises(Exception):
        store.add_run(bid, key, 0, broken, Path("/tmp/b"), 2.0)
    assert [(r["log_path"], r["status"]) for r in store.runs(build_id=bid)] == [("/tmp/a", "ok")]
    assert [(s["metric"], s["value"]) for s in store.samples(build_id=bid)] == [("cycles", 3.0), ("ops", 6.0)]


#: the builds, runs and samples tables as a store written before the measured costs holds them
_BEFORE_COSTS = """
CREATE TABLE builds (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, commit_sha TEXT NOT NULL, image TEXT NOT NULL,
    layout TEXT NOT NULL, seed INTEGER NOT NULL, plan_id TEXT NOT NULL, plan TEXT NOT NULL,
    image_sha256 TEXT NOT NULL, elf_path TEXT NOT NULL, toolchain TEXT NOT NULL, quirks TEXT NOT NULL,
    created REAL NOT NULL, UNIQUE (kernel, commit_sha, image, layout, seed, image_sha256));
CREATE TABLE runs (id INTEGER PRIMARY KEY, build_id INTEGER NOT NULL REFERENCES builds(id),
    target TEXT NOT NULL, host TEXT NOT NULL, accelerator TEXT NOT NULL, mode TEXT NOT NULL,
    rep INTEGER NOT NULL, args TEXT NOT NULL DEFAULT '', config TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, exit_code INTEGER, message TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL, duration REAL NOT NULL, log_path TEXT NOT NULL,
    UNIQUE (build_id, target, host, mode, rep, args, config));
CREATE TABLE samples (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, higher_is_better INTEGER NOT NULL);
INSERT INTO builds VALUES (1, 'k', 'c0ffee', 'hosted', 'random', 1, '0x1', '{}', 'ab', '/x', '{}', '[]', 0);
INSERT INTO runs VALUES (7, 1, 'local', 'h1', 'native', 'rerun', 0, '', 'c', 'ok', 0, '', 0, 2.5, '/l');
INSERT INTO samples VALUES (1, 7, 'cycles', 100.0, 'cycles', 0);
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_store_an_older_store_gets_the_columns_of_the_measured_costs(kind, tmp_path, request):
    """A store written before link, boot and deploy seconds were recorded (SQLite and PostgreSQL)
    gets the columns when opened: its rows keep their values with the new ones NULL (not measured,
    left out of the medians), and what is stored now carries them."""
    if kind == "sqlite":
        import sqlite3

        where = tmp_path / "old.sqlite"
        with sqlite3.connect(where) as c:
            c.executescript(_BEFORE_COSTS)
    else:
        import psycopg

        url = request.getfixturevalue("pg")
        db = "old_" + tmp_path.name.replace("-", "_").lower()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {db}")
        where = url.replace("/layoutbench?", f"/{db}?")
        with psycopg.connect(where, autocommit=True) as c:
            for stmt in _BEFORE_COSTS.replace("INTEGER PRIMARY KEY", "SERIAL PRIMARY KEY").replace(
                    " REAL", " DOUBLE PRECISION").split(";"):
                if stmt.strip():
                    c.execute(stmt)
            for table in ("builds", "runs", "samples"):  # the rows above were written with their ids
                c.execute(f"SELECT setval('{table}_id_seq', 100)")
    st = Store(where)
    old = st.runs()[0]
    assert (old["id"], old["duration"], old["boot_seconds"], old["deploy_seconds"]) == (7, 2.5, None, None)
    assert st.builds()[0]["link_seconds"] is None and st.samples()[0]["value"] == 100.0
    assert st.link_seconds("k", "hosted") == []
    assert st.run_seconds("k", "local", "rerun", "") == [{"duration": 2.5, "boot_seconds": None,
                                                          "deploy_seconds": None}]
    # an image of the old store reused (its link time kept in its folder since): stored once, not
    # replaced by a later reuse; linked again: the new link's time
    v = dataclasses.replace(_variant(tmp_path, "c0ffee", "random", 1), sha256="ab", linked_now=False,
                            link_seconds=0.25)
    assert st.build_id(v, {}) == 1 and st.link_seconds("k", "hosted") == [0.25]
    assert st.build_id(dataclasses.replace(v, link_seconds=9.0), {}) == 1 and st.link_seconds("k", "hosted") == [0.25]
    assert st.build_id(dataclasses.replace(v, link_seconds=None), {}) == 1 and st.link_seconds("k", "hosted") == [0.25]
    assert st.build_id(dataclasses.replace(v, linked_now=True, link_seconds=0.5), {}) == 1
    assert st.link_seconds("k", "hosted") == [0.5]
    bid = st.build_id(dataclasses.replace(_variant(tmp_path, "c0ffee", "random", 2), link_seconds=0.75), {})
    assert sorted(st.link_seconds("k", "hosted")) == [0.5, 0.75] and st.link_seconds("k", "kernel") == []
    r = _result("ok", 2.0)
    r.boot_seconds, r.deploy_seconds = 40.0, 1.5
    st.add_run(bid, RunKey("local", "h1", "rerun", "", "c"), 0, r, Path("/tmp/n"), 1.0)
    st.add_run(bid, RunKey("local", "h1", "rerun", "", "c"), 1, _result("failed"), Path("/tmp/f"), 2.0)
    got = st.run_seconds("k", "local", "rerun", "")  # the newest first; ok runs only
    assert got == [{"duration": 0.5, "boot_seconds": 40.0, "deploy_seconds": 1.5},
                   {"duration": 2.5, "boot_seconds": None, "deploy_seconds": None}]
    assert st.run_seconds("k", "local", "rerun", "other args") == [] and st.run_seconds("k", "qemu", "rerun", "") == []
    st.close()
    again = Store(where)  # opening a migrated store again is fine
    assert len(again.runs()) == 3
    again.close()


@pytest.mark.parametrize("said, line", [
    ("database or disk is full", "the disk is full (database or disk is full); free some space"),
    ("attempt to write a readonly database", "the store cannot be written (attempt to write a readonly database)"),
    ("unable to open database file", "the store cannot be opened (unable to open database file); check"),
    ("database disk image is malformed", "the store is damaged (database disk image is malformed); restore"),
    ("the page is corrupt", "the store is damaged (the page is corrupt); restore"),
    ("file is not a database", "not a layoutbench store (file is not a database); move it away"),
    ("disk I/O error", "the store could not be read or written (disk I/O error): a full or failing disk?"),
    ("database is locked", "the store is locked by another process (database is locked); run again"),
    ("database is busy", "the store is locked by another process (database is busy); run again"),
    ("no such table: runs", "store error (no such table: runs)"),
])
def test_store_each_kind_of_sqlite_error_is_its_own_line(tmp_path, said, line):
    """What SQLite says, turned into what is wrong and what to do, naming the store (on a disk with
    room and writable: the file system's own state is not what is wrong)."""
    import sqlite3

    path = tmp_path / "r.sqlite"
    assert storemod.explain(sqlite3.OperationalError(said), path).startswith(f"{path}: {line}")


def test_store_a_postgresql_error_line_names_the_operation_and_its_tries():
    class Refused(Exception):
        pass

    e = Refused("could not serialize access\nDETAIL: more")
    assert storemod.error_line(e).startswith("the PostgreSQL store failed: could not serialize access; run the same")
    e.store_op, e.store_tries = "add_run", 1
    assert storemod.error_line(e).startswith("store: add_run failed after 1 try: could not serialize access")
    e.store_tries = 3
    assert storemod.error_line(e).startswith("store: add_run failed after 3 tries: could not serialize access")


def test_store_an_sqlite_store_logs_ahead_and_takes_the_write_lock_when_a_transaction_begins(tmp_path):
    """Write-ahead logging (readers go on beside a writer), and a transaction holds the write lock
    from its start (BEGIN IMMEDIATE): another writer waits for it instead of failing half-way."""
    import sqlite3

    s = Store(tmp_path / "r.sqlite")
    try:
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        other = sqlite3.connect(tmp_path / "r.sqlite", timeout=0, isolation_level=None)
        with s._tx():
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")  # free once the transaction ended
        other.execute("ROLLBACK")
        other.close()
    finally:
        s.close()


def test_store_a_write_rolled_back_by_the_server_is_tried_again_and_an_sqlite_one_is_not(store):
    """A PostgreSQL write that the server rolled back as a serialization failure runs again, up
    to RETRIES tries; the error that ends it says the operation and how many tries it had.  An
    SQLite store's error is raised at once, as it is."""
    import psycopg

    calls: list[int] = []

    def flaky(n):
        def fn():
            calls.append(1)
            if len(calls) <= n:
                raise psycopg.errors.SerializationFailure("could not serialize access")
            return "landed"
        return fn

    if store.url is None:
        with pytest.raises(psycopg.errors.SerializationFailure) as e:
            store._retry(flaky(1), "set_state")
        assert len(calls) == 1 and not hasattr(e.value, "store_tries")
        return
    assert store._retry(flaky(2), "set_state") == "landed" and len(calls) == 3
    calls.clear()
    with pytest.raises(psycopg.errors.SerializationFailure) as e:
        store._retry(flaky(100), "set_state")
    assert len(calls) == store.RETRIES == e.value.store_tries and e.value.store_op == "set_state"
