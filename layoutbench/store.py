"""The results store: SQLite, append-only, one transaction per run.

Tables:

- ``builds``: one row per linked image (kernel, commit, image, layout, seed, plan, image hash,
  toolchain, quirks applied);
- ``runs``: one row per execution of an image on a target (host, accelerator, mode,
  repetition, arguments, target configuration, status, exit code, duration, console log path);
- ``samples``: the metrics a run printed (metric, value, unit, direction);
- ``configs``: the target configurations runs were made under (hash → JSON text: the
  resolved target table without its timeout, the metrics prefix, the toolchain, the
  quirks; see ``measure.target_config``);
- ``state``: small JSON values (history series, bisection logs), owned by their modules.

A run and its samples are committed together the moment the run ends, so a killed
session loses at most the run in flight; running the same command again skips every
(build, target, host, mode, repetition, arguments, configuration) already stored.  A run
stored under another configuration is never reused: changing a target setting measures
again.

Every SQL statement of the package lives in this module.
"""

from __future__ import annotations

import hashlib
import contextlib
import json
import math
import os
import random
import re
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

from .errors import LayoutbenchError
from .metrics import refuse
from .postgres import RETRIES, RETRY_SQLSTATES, Postgres, conninfo_keys, is_url
from .safety import redact_url, regular_or_missing

SCHEMA = """
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, commit_sha TEXT NOT NULL, image TEXT NOT NULL,
    layout TEXT NOT NULL, seed INTEGER NOT NULL, plan_id TEXT NOT NULL, plan TEXT NOT NULL,
    image_sha256 TEXT NOT NULL, elf_path TEXT NOT NULL,
    toolchain TEXT NOT NULL, quirks TEXT NOT NULL, created REAL NOT NULL, link_seconds REAL, objects_of TEXT,
    UNIQUE (kernel, commit_sha, image, layout, seed, image_sha256)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, build_id INTEGER NOT NULL REFERENCES builds(id),
    target TEXT NOT NULL, host TEXT NOT NULL, accelerator TEXT NOT NULL, mode TEXT NOT NULL,
    rep INTEGER NOT NULL, args TEXT NOT NULL DEFAULT '', config TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, exit_code INTEGER, message TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL, duration REAL NOT NULL, log_path TEXT NOT NULL, boot_seconds REAL, deploy_seconds REAL,
    UNIQUE (build_id, target, host, mode, rep, args, config)
);
CREATE TABLE IF NOT EXISTS configs (
    hash TEXT PRIMARY KEY, text TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, higher_is_better INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
CREATE TABLE IF NOT EXISTS state (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS machine_checks (
    id INTEGER PRIMARY KEY, target TEXT NOT NULL, host TEXT NOT NULL, config TEXT NOT NULL,
    taken REAL NOT NULL, findings TEXT NOT NULL
);
"""

#: columns added since a table was first written (table, column, type): a store without them gets
#: them when it is opened, NULL in the rows it holds (not measured)
_ADDED_COLUMNS = (("builds", "link_seconds", "REAL"), ("runs", "boot_seconds", "REAL"),
                  ("runs", "deploy_seconds", "REAL"), ("builds", "objects_of", "TEXT"))

#: columns of a runs table written before runs were keyed by their target configuration
_OLD_RUN_COLUMNS = ("id, build_id, target, host, accelerator, mode, rep, args, status, exit_code, message, "
                    "started, duration, log_path")


@dataclass(frozen=True)
class RunKey:
    """What a stored run is keyed by, besides its build and its repetition."""

    target: str  #: the profile's name for the target
    host: str  #: where it runs
    mode: str  #: rerun, reboot or relink
    args: str = ""  #: extra program arguments, one string
    config: str = ""  #: hash of the target configuration (``Store.config_id``); "" for runs stored before it


def config_text(config: dict) -> str:
    """A configuration as canonical JSON: equal settings give equal text and hash."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def config_hash(config: dict) -> str:
    return hashlib.sha256(config_text(config).encode()).hexdigest()[:12]


_opened: Path | None = None  #: the SQLite store opened last (what an error of a later query is about)
_opened_db: sqlite3.Connection | None = None  #: its connection


def explain(e: Exception, path=None, checkpoint: bool = False) -> str:
    """One line for an SQLite error of the store at ``path``: what is wrong and what to do.

    Only a file that is not a database is "not a layoutbench store"; a healthy store on a full or
    read-only disk, or one with a damaged page, gets its own advice.  With ``checkpoint`` (a query
    of the store opened last failed), a full disk first folds the store's write-ahead log back into
    it (the log only grows while the disk fills, and freeing space elsewhere may not be enough)."""
    line = _explain(e, path)
    if checkpoint and path is None and _opened is not None and line.startswith(f"{_opened}: the disk is full"):
        line += _fold_wal()
    return line


def _fold_wal() -> str:
    """Checkpoint the store opened last into its file and truncate its write-ahead log; what it freed,
    or how large the log still is (what to free besides)."""
    wal = Path(f"{_opened}-wal")
    size = lambda: wal.stat().st_size if wal.exists() else 0  # noqa: E731
    before = size()
    with contextlib.suppress(sqlite3.Error, AttributeError):
        _opened_db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    after = size()
    if after < before:
        return f" (its write-ahead log {wal.name} was folded back into it: {(before - after) >> 10} KiB freed)"
    if after:
        return f" (its write-ahead log {wal} holds {after >> 10} KiB: free more than that)"
    return ""


def _explain(e: Exception, path=None) -> str:
    path = path or _opened or "the store"
    why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    low = why.lower()
    try:  # what the file system says beats what SQLite guesses ("unable to open", "I/O error")
        st = os.statvfs(Path(path).parent)
        if st.f_flag & os.ST_RDONLY:
            return f"{path}: the store is on a read-only file system ({why}); remount it read-write " \
                   f"or use --store elsewhere"
        if st.f_bavail * st.f_frsize < (1 << 20) and ("full" in low or "i/o" in low or "unable to open" in low):
            return f"{path}: the disk is full ({why}); free some space and run the same command again"
    except (OSError, TypeError):
        pass
    if "full" in low:
        return f"{path}: the disk is full ({why}); free some space and run the same command again"
    if "readonly" in low or "read-only" in low:
        return f"{path}: the store cannot be written ({why}): a read-only disk or file; make it writable " \
               f"or use --store elsewhere"
    if "unable to open" in low:
        return f"{path}: the store cannot be opened ({why}); check that its folder is writable and has space, " \
               f"or use --store elsewhere"
    if "malformed" in low or "corrupt" in low:
        return f"{path}: the store is damaged ({why}); restore it from a copy, or salvage it with " \
               f"`sqlite3 {path} .recover | sqlite3 new.sqlite` and use --store new.sqlite"
    if "not a database" in low or "file is encrypted" in low:
        return f"{path}: not a layoutbench store ({why}); move it away or use --store"
    if "i/o error" in low:
        return f"{path}: the store could not be read or written ({why}): a full or failing disk? " \
               f"check free space and the disk, then run the same command again"
    if "locked" in low or "busy" in low:
        return f"{path}: the store is locked by another process ({why}); run again when it is done"
    return f"{path}: store error ({why})"


def error_line(e: Exception) -> str:
    """One line for an error of a PostgreSQL store: the store operation that failed (when a write
    raised it), after how many tries, the server's first line, and what to do."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    op, tries = getattr(e, "store_op", None), getattr(e, "store_tries", 1)
    if op is None:
        return f"the PostgreSQL store failed: {first}; run the same command again when the server is back " \
               f"(what was stored is kept)"
    said = f"store: {op} failed after {tries} {'try' if tries == 1 else 'tries'}: {first}"
    if getattr(e, "sqlstate", None) in Store.RETRY_SQLSTATES:
        return f"{said}; other workers kept writing the same rows: run the same command again (what was stored is kept)"
    return f"{said}; run the same command again when the server is back (what was stored is kept)"


class Store:
    """The results database: an SQLite file (the default) or, for a farm of workers that share
    one store, a PostgreSQL URL (``postgresql://user@host/db``): same schema, same resume rule."""

    def __init__(self, path, create: bool = True):
        text = str(path)
        #: (host, conditions that add noise) already said by a measurement on this store: a bisection
        #: measures many times on one machine and says it once
        self.said_machine: set[tuple[str, tuple[str, ...]]] = set()
        self.url = text if is_url(path) else None
        if self.url is None and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
            raise LayoutbenchError(f"--store {redact_url(text)}: only SQLite files and postgresql:// URLs are "
                                   f"supported; give a file path or a postgresql://user@host/db URL")
        keys = conninfo_keys(text) if self.url is None else None
        if keys:  # never an SQLite file named after it (the name would hold the password)
            raise LayoutbenchError(f"--store holds a libpq connection string ({' '.join(k + '=...' for k in keys)}), "
                                   f"not a file: give the PostgreSQL store as a URL, "
                                   f"postgresql://USER:PASSWORD@HOST:PORT/DBNAME (its password is never shown)")
        #: opened read-only: the file is on a read-only file system or not writable by this user
        #: (reading commands work; a command that writes is refused at its start: ``writable``)
        self.readonly = False
        #: what opens this store again (the URL with its password); never shown: ``path`` is
        self.location = self.url if self.url is not None else Path(path)
        #: the store as shown in messages and reports (a URL's password masked)
        self.path = Path(path) if self.url is None else redact_url(self.url)
        if self.url is not None:
            self.db = Postgres(self.url)
            self._retry(self._create_schema, "open")
            return
        global _opened
        _opened = self.path
        if not regular_or_missing(self.path, "a store (an SQLite file)", "give --store a file path (a new one is "
                                  "created)") and not create:  # a command that only reads creates no store
            raise LayoutbenchError(no_store(self.path, "nothing was measured into it"))
        if self.path.is_file() and not os.access(self.path, os.W_OK):
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LayoutbenchError(f"{self.path}: cannot create its folder ({e.strerror}); "
                                   f"use --store elsewhere") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            global _opened_db
            _opened_db = self.db
            self.db.row_factory = sqlite3.Row
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and not tables & {"runs", "samples", "builds", "state"}:  # never written into
                raise LayoutbenchError(f"{self.path}: not a layoutbench store (an SQLite database of something else: "
                                       f"{', '.join(sorted(tables)[:3])}); use --store elsewhere")
            if not tables and not create:
                raise LayoutbenchError(no_store(self.path, "an empty file or database: nothing was measured into it"))
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self._migrate()
            bad = self.db.execute("PRAGMA quick_check(1)").fetchone()[0]  # a damaged page: said now, once
            if bad != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed: {bad}")
        except sqlite3.Error as e:
            raise LayoutbenchError(explain(e, self.path)) from None

    def _open_read_only(self) -> None:
        """Open a store that cannot be written: SQLite's read-only mode; on a read-only file system
        also ``immutable`` (no -shm or -wal file can be made there, and nothing can change it)."""
        from urllib.parse import quote

        try:
            rofs = bool(os.statvfs(self.path.parent).f_flag & os.ST_RDONLY)
        except OSError:
            rofs = False
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro" + ("&immutable=1" if rofs else "")
        try:
            self.db = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            bad = self.db.execute("PRAGMA quick_check(1)").fetchone()[0]
            if bad != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed: {bad}")
        except sqlite3.Error as e:
            raise LayoutbenchError(explain(e, self.path)) from None
        self.readonly = True

    def writable(self) -> "Store":
        """This store, when it can be written; else one line saying why (before anything is built)."""
        if self.readonly:
            raise LayoutbenchError(explain(sqlite3.OperationalError("attempt to write a readonly database"),
                                           self.path))
        return self

    def _schema_complete(self) -> bool:
        """A PostgreSQL store that already has every table, index and added column: read from the
        catalog, which takes no lock on the tables."""
        want_tables = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
        want_indexes = set(re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", SCHEMA))
        cols = {(r["table_name"], r["column_name"]) for r in self.db.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()")}
        indexes = {r["indexname"] for r in self.db.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        return (want_tables <= {t for t, _ in cols} and want_indexes <= indexes
                and all((t, c) in cols for t, c, _ in _ADDED_COLUMNS))

    def _create_schema(self) -> None:
        """A PostgreSQL store's tables, created by one worker at a time, and only when one is
        missing: ALTER TABLE takes a lock that conflicts with every read and write of the table,
        so a worker opening a complete store beside a running bisection must not take it (the two
        deadlocked: the bisection's read was the one the server rolled back).  A deadlock while
        creating is retried like any write."""
        if self._schema_complete():
            return
        with self._tx():
            self.db.execute("SELECT pg_advisory_xact_lock(7420501)")  # one worker creates the schema
            for stmt in SCHEMA.replace("INTEGER PRIMARY KEY", "SERIAL PRIMARY KEY") \
                    .replace(" REAL", " DOUBLE PRECISION").split(";"):
                if stmt.strip():
                    self.db.execute(stmt)
            for table, column, kind in _ADDED_COLUMNS:  # a store written by an older layoutbench
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} "
                                f"{kind.replace('REAL', 'DOUBLE PRECISION')}")

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def _tx(self):
        """One transaction; SQLite takes the write lock at once (BEGIN IMMEDIATE)."""
        if self.url is not None:
            with self.db.conn.transaction():
                yield
        else:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                yield

    #: PostgreSQL's "deadlock detected" and "could not serialize": the server rolled the
    #: transaction back; running it again is the documented answer (workers storing at once)
    RETRY_SQLSTATES, RETRIES = RETRY_SQLSTATES, RETRIES

    def _retry(self, fn, op: str):
        """``fn()`` (one whole transaction, or one autocommit statement: every write of the store
        goes through here), run again when a PostgreSQL store rolled it back as a deadlock or a
        serialization failure (a short random wait between tries, at most RETRIES tries); any
        other error, an error inside an outer transaction (only all of it could run again), and
        every error of an SQLite store, at once.  A PostgreSQL error raised carries ``store_op``
        (``op``, the store operation) and ``store_tries`` for ``error_line``."""
        for i in range(self.RETRIES):
            try:
                return fn()
            except Exception as e:
                if self.url is None:
                    raise
                if (getattr(e, "sqlstate", None) not in self.RETRY_SQLSTATES or i == self.RETRIES - 1
                        or self._in_transaction()):
                    with contextlib.suppress(AttributeError):  # psycopg's errors take attributes
                        e.store_op, e.store_tries = op, i + 1
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (i + 1))

    def _in_transaction(self) -> bool:
        """A PostgreSQL connection inside an open transaction (a caller's ``_tx``)."""
        from psycopg.pq import TransactionStatus

        return self.db.conn.info.transaction_status != TransactionStatus.IDLE

    def _migrate(self) -> None:
        """Bring an older store up to the schema: key its runs by target configuration (they get
        config '' (unknown), so they are kept and shown but never reused for a configuration
        measured now), and add the columns of the measured costs (NULL: not measured)."""
        self._migrate_config()
        for table, column, kind in _ADDED_COLUMNS:
            if column not in {r["name"] for r in self.db.execute(f"PRAGMA table_info({table})")}:
                with self._tx():
                    if column not in {r["name"] for r in self.db.execute(f"PRAGMA table_info({table})")}:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def _migrate_config(self) -> None:
        if "config" in {r["name"] for r in self.db.execute("PRAGMA table_info(runs)")}:
            return
        runs_table = SCHEMA.split("CREATE TABLE IF NOT EXISTS runs", 1)[1].split(";", 1)[0]
        with self._tx():
            if "config" in {r["name"] for r in self.db.execute("PRAGMA table_info(runs)")}:
                return  # another process migrated it meanwhile
            self.db.execute("CREATE TABLE runs_new" + runs_table)
            self.db.execute(f"INSERT INTO runs_new ({_OLD_RUN_COLUMNS}) SELECT {_OLD_RUN_COLUMNS} FROM runs")
            self.db.execute("DROP TABLE runs")
            self.db.execute("ALTER TABLE runs_new RENAME TO runs")

    # -- builds ----------------------------------------------------------------------------------
    def build_id(self, variant, build_info: dict) -> int:
        """The id of a linked image, registered the first time (several workers may race: the
        unique key decides, and every one gets the same id)."""
        return self._retry(lambda: self._build_id(variant, build_info), "build_id")

    def _build_id(self, variant, build_info: dict) -> int:
        key = (variant.kernel, variant.commit, variant.image, variant.layout, variant.seed, variant.sha256)
        find = ("SELECT id FROM builds WHERE kernel=? AND commit_sha=? AND image=? AND layout=? AND seed=? "
                "AND image_sha256=?")
        row = self.db.execute(find, key).fetchone()
        secs = getattr(variant, "link_seconds", None)
        if row:
            if secs is not None and getattr(variant, "linked_now", False):  # linked again: the newest link's time
                self.db.execute("UPDATE builds SET link_seconds=? WHERE id=?", (secs, row["id"]))
            elif secs is not None:  # a reused image whose row predates the measured links
                self.db.execute("UPDATE builds SET link_seconds=? WHERE id=? AND link_seconds IS NULL",
                                (secs, row["id"]))
            return row["id"]
        self.db.execute(
            "INSERT INTO builds (kernel, commit_sha, image, layout, seed, plan_id, plan, image_sha256, elf_path,"
            " toolchain, quirks, created, link_seconds, objects_of) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT DO NOTHING",
            (variant.kernel, variant.commit, variant.image, variant.layout, variant.seed, variant.plan_id,
             Path(variant.plan_path).read_text(), variant.sha256, str(variant.elf),
             json.dumps({"cc": build_info.get("cc"), "ld": build_info.get("ld")}),
             json.dumps(build_info.get("quirks", [])), time.time(), secs, getattr(variant, "objects_of", None)),
        )
        return self.db.execute(find, key).fetchone()["id"]

    # -- quiet-machine checks -------------------------------------------------------------------
    def add_machine_check(self, key: RunKey, findings: list[dict]) -> int:
        """Store the quiet-machine findings taken before the runs that follow under ``key``."""
        return self._retry(lambda: self.db.execute(
            "INSERT INTO machine_checks (target, host, config, taken, findings) VALUES (?,?,?,?,?) RETURNING id",
            (key.target, key.host, key.config, time.time(), json.dumps(findings))).fetchone()["id"],
            "add_machine_check")

    def last_machine_check(self, key: RunKey) -> list[dict]:
        """The findings of the newest check under ``key`` ([] when none was taken)."""
        row = self.db.execute("SELECT findings FROM machine_checks WHERE target=? AND host=? AND config=? "
                              "ORDER BY id DESC LIMIT 1", (key.target, key.host, key.config)).fetchone()
        return json.loads(row["findings"]) if row else []

    # -- target configurations ------------------------------------------------------------------
    def config_id(self, config: dict) -> str:
        """Store a target configuration (once) and return its hash, the runs' ``config``."""
        h = config_hash(config)
        self._retry(lambda: self.db.execute("INSERT INTO configs (hash, text, created) VALUES (?,?,?) ON CONFLICT "
                                            "DO NOTHING", (h, config_text(config), time.time())), "config_id")
        return h

    def configs(self, hashes=None) -> dict[str, dict]:
        """hash → configuration (all of them, or those named)."""
        rows = self.db.execute("SELECT hash, text FROM configs ORDER BY created")
        return {r["hash"]: json.loads(r["text"]) for r in rows if hashes is None or r["hash"] in hashes}

    # -- runs ------------------------------------------------------------------------------------
    def done(self, build_id: int, key: RunKey) -> dict[int, str]:
        """The repetitions already stored for this build under this key, with their status."""
        rows = self.db.execute("SELECT rep, status FROM runs WHERE build_id=? AND target=? AND host=? AND mode=? "
                               "AND args=? AND config=?",
                               (build_id, key.target, key.host, key.mode, key.args, key.config))
        return {r["rep"]: r["status"] for r in rows}

    def other_configs(self, build_ids, key: RunKey) -> dict[str, int]:
        """Runs of these builds stored under the same key but another target configuration:
        config hash → how many."""
        ids = list(build_ids)
        if not ids:
            return {}
        rows = self.db.execute(
            f"SELECT config, count(*) AS n FROM runs WHERE build_id IN ({','.join('?' * len(ids))}) AND target=? "
            "AND host=? AND mode=? AND args=? AND config != ? GROUP BY config",
            (*ids, key.target, key.host, key.mode, key.args, key.config))
        return {r["config"]: r["n"] for r in rows}

    def add_run(self, build_id: int, key: RunKey, rep: int, result, log: Path, started: float) -> int:
        """Store a finished run with its samples in one transaction (under the host it ran on)."""
        key = replace(key, host=result.host)
        why = refuse(result.samples) if result.status == "ok" else None
        if why:  # the sample gate: the run is stored as failed with the reason, without its samples
            result.status, result.message, result.samples = "failed", why, []
        where = (build_id, key.target, key.host, key.mode, rep, key.args, key.config)
        return self._retry(lambda: self._add_run(key, rep, result, log, started, where), "add_run")

    def _add_run(self, key: RunKey, rep: int, result, log: Path, started: float, where: tuple) -> int:
        build_id = where[0]
        with self._tx():
            if self.url is not None:  # workers storing the same run wait for each other (SQLite: BEGIN IMMEDIATE)
                self.db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (json.dumps(where),))
            self.db.execute("DELETE FROM samples WHERE run_id IN (SELECT id FROM runs WHERE build_id=? AND "
                            "target=? AND host=? AND mode=? AND rep=? AND args=? AND config=?)", where)
            self.db.execute("DELETE FROM runs WHERE build_id=? AND target=? AND host=? AND mode=? AND rep=? "
                            "AND args=? AND config=?", where)
            cur = self.db.execute(
                "INSERT INTO runs (build_id, target, host, accelerator, mode, rep, args, config, status, exit_code,"
                " message, started, duration, log_path, boot_seconds, deploy_seconds) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (build_id, key.target, key.host, result.accelerator, key.mode, rep, key.args, key.config,
                 result.status, result.exit_code, result.message, started, result.duration, str(log),
                 getattr(result, "boot_seconds", None), getattr(result, "deploy_seconds", None)),
            )
            run_id = cur.fetchone()["id"]
            self.db.executemany(
                "INSERT INTO samples (run_id, metric, value, unit, higher_is_better) VALUES (?,?,?,?,?)",
                [(run_id, s.metric, s.value, s.unit, int(s.higher_is_better)) for s in result.samples],
            )
        return run_id

    def copy_twin_run(self, build_id: int, elf_path: str, key: RunKey, rep: int, message: str) -> int | None:
        """Store again under ``build_id`` (``message``, {run}: its id; duration 0) an ok run, not a copy, under ``key``
        and ``rep`` of another build whose image is the same file and bytes: its id, or None when there is none."""
        r = self.db.execute(
            "SELECT runs.* FROM runs JOIN builds ON builds.id = runs.build_id WHERE builds.elf_path=? AND builds.id "
            "!= ? AND builds.image_sha256 = (SELECT image_sha256 FROM builds WHERE id=?) AND runs.target=? AND "
            "runs.host=? AND runs.mode=? AND runs.args=? AND runs.config=? AND runs.rep=? AND runs.status='ok' AND "
            "runs.duration > 0 ORDER BY runs.id LIMIT 1",
            (elf_path, build_id, build_id, key.target, key.host, key.mode, key.args, key.config, rep)).fetchone()
        if r is None:
            return None
        samples = [SimpleNamespace(**dict(x)) for x in self.db.execute(
            "SELECT metric, value, unit, higher_is_better FROM samples WHERE run_id=?", (r["id"],))]
        copy = SimpleNamespace(status="ok", exit_code=r["exit_code"], message=message.format(run=r["id"]),
                               duration=0.0, accelerator=r["accelerator"], samples=samples, host=r["host"])
        self.add_run(build_id, key, rep, copy, Path(r["log_path"]), time.time())
        return int(r["id"])

    # -- measured costs (costs.measured) ----------------------------------------------------------
    def link_seconds(self, kernel: str, image: str, limit: int = 500) -> list[float]:
        """The measured link times of ``kernel``'s ``image`` (the newest ``limit`` images linked)."""
        rows = self.db.execute("SELECT link_seconds FROM builds WHERE kernel=? AND image=? AND link_seconds IS NOT "
                               "NULL ORDER BY id DESC LIMIT ?", (kernel, image, limit))
        return [float(r["link_seconds"]) for r in rows]

    def run_seconds(self, kernel: str, target: str, mode: str, args: str, limit: int = 500) -> list[dict]:
        """The newest ``limit`` ok runs of ``kernel`` on ``target`` (mode, arguments): their
        ``duration``, ``boot_seconds`` and ``deploy_seconds`` (None: not measured)."""
        rows = self.db.execute(
            "SELECT runs.duration, runs.boot_seconds, runs.deploy_seconds FROM runs JOIN builds ON builds.id = "
            "runs.build_id WHERE builds.kernel=? AND runs.target=? AND runs.mode=? AND runs.args=? AND "
            "runs.status='ok' AND runs.duration > 0 ORDER BY runs.id DESC LIMIT ?", (kernel, target, mode, args, limit))
        return [dict(r) for r in rows]

    # -- queries ---------------------------------------------------------------------------------
    def runs(self, **where) -> list[dict]:
        sql, params = _where(where)
        return [dict(r) for r in self.db.execute(
            "SELECT runs.*, builds.kernel, builds.commit_sha, builds.objects_of, builds.image, builds.layout, "
            "builds.seed, builds.plan_id FROM runs JOIN builds ON builds.id = runs.build_id" + sql + " ORDER BY runs.id", params)]

    def samples(self, **where) -> list[dict]:
        sql, params = _where(where)
        return [dict(r) for r in self.db.execute(
            "SELECT samples.id AS sample_id, samples.metric, samples.value, samples.unit, samples.higher_is_better, "
            "runs.id AS run_id, runs.target, runs.host, runs.accelerator, runs.mode, runs.rep, runs.args, "
            "runs.config, runs.status, runs.started, builds.kernel, builds.commit_sha, builds.objects_of, builds.image, "
            "builds.layout, "
            "builds.seed, builds.plan_id, builds.id AS build_id FROM samples JOIN runs ON runs.id = samples.run_id "
            "JOIN builds ON builds.id = runs.build_id" + sql + " ORDER BY samples.id", params)
            if math.isfinite(r["value"])]  # a store written before the sample gate may hold inf

    def builds(self, **where) -> list[dict]:
        """Build rows (plan, image hash, toolchain, quirks...), e.g. ``builds(build_id=[1, 2])``."""
        sql, params = _where(where)
        return [dict(r) for r in self.db.execute("SELECT builds.* FROM builds" + sql + " ORDER BY builds.id", params)]

    # -- small key/value state (history series, bisection logs) ----------------------------------
    def states(self, prefix: str) -> list[tuple[str, object]]:
        """(key, value) of every state whose key starts with ``prefix``, the latest updated first;
        values that are not JSON are left out."""
        out = []
        for r in self.db.execute("SELECT key, value FROM state WHERE substr(key, 1, ?) = ? ORDER BY updated DESC",
                                 (len(prefix), prefix)):
            try:
                out.append((r["key"], json.loads(r["value"])))
            except ValueError:
                continue
        return out

    def get_state(self, key: str):
        row = self.db.execute("SELECT value FROM state WHERE key=?", (key,)).fetchone()
        return json.loads(row["value"]) if row else None

    def set_state(self, key: str, value) -> None:
        text = json.dumps(value)
        self._retry(lambda: self.db.execute("INSERT INTO state (key, value, updated) VALUES (?,?,?) ON CONFLICT(key) "
                                            "DO UPDATE SET value=excluded.value, updated=excluded.updated",
                                            (key, text, time.time())), "set_state")

    def del_state(self, key: str) -> None:
        self._retry(lambda: self.db.execute("DELETE FROM state WHERE key=?", (key,)), "del_state")


COLUMNS = {"kernel": "builds.kernel", "commit": "builds.commit_sha", "image": "builds.image",
           "layout": "builds.layout", "seed": "builds.seed", "target": "runs.target", "host": "runs.host",
           "mode": "runs.mode", "status": "runs.status", "metric": "samples.metric", "build_id": "builds.id",
           "args": "runs.args", "config": "runs.config"}


def no_store(path, why: str) -> str:
    return (f"{path}: no such store ({why}); give --store the store the runs were stored in (this command only "
            f"reads one, and creates none)")


def _where(where: dict) -> tuple[str, list]:
    parts, params = [], []
    for k, v in where.items():
        if v is None:
            continue
        col = COLUMNS[k]
        if k == "commit":
            parts.append(f"{col} LIKE ?")
            params.append(f"{v}%")
        elif isinstance(v, (list, tuple, set)):
            parts.append(f"{col} IN ({','.join('?' * len(v))})")
            params.extend(v)
        else:
            parts.append(f"{col} = ?")
            params.append(v)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def default_path() -> Path:
    from .paths import workdir
    return workdir() / "results.sqlite"
