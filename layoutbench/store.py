"""The results store: SQLite, append-only, one transaction per run.

Tables:

- ``builds``: one row per linked image (kernel, commit, image, layout, seed, plan, image hash,
  toolchain, quirks applied);
- ``runs``: one row per execution of an image on a target (host, accelerator, mode,
  repetition, status, exit code, duration, console log path);
- ``samples``: the metrics a run printed (metric, value, unit, direction).

A run and its samples are committed together the moment the run ends, so a killed
session loses at most the run in flight; running the same command again skips every
(build, target, host, mode, repetition) already stored.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from .errors import LayoutbenchError

SCHEMA = """
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY,
    kernel TEXT NOT NULL, commit_sha TEXT NOT NULL, image TEXT NOT NULL,
    layout TEXT NOT NULL, seed INTEGER NOT NULL, plan_id TEXT NOT NULL, plan TEXT NOT NULL,
    image_sha256 TEXT NOT NULL, elf_path TEXT NOT NULL,
    toolchain TEXT NOT NULL, quirks TEXT NOT NULL, created REAL NOT NULL,
    UNIQUE (kernel, commit_sha, image, layout, seed, image_sha256)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    build_id INTEGER NOT NULL REFERENCES builds(id),
    target TEXT NOT NULL, host TEXT NOT NULL, accelerator TEXT NOT NULL, mode TEXT NOT NULL,
    rep INTEGER NOT NULL, args TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, exit_code INTEGER, message TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL, duration REAL NOT NULL, log_path TEXT NOT NULL,
    UNIQUE (build_id, target, host, mode, rep, args)
);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, higher_is_better INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
CREATE TABLE IF NOT EXISTS state (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL
);
"""


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise LayoutbenchError(f"{self.path}: not a layoutbench store ({e}); move it away or use --store") from None

    def close(self) -> None:
        self.db.close()

    # -- builds ----------------------------------------------------------------------------------
    def build_id(self, variant, build_info: dict) -> int:
        row = self.db.execute(
            "SELECT id FROM builds WHERE kernel=? AND commit_sha=? AND image=? AND layout=? AND seed=? "
            "AND image_sha256=?",
            (variant.kernel, variant.commit, variant.image, variant.layout, variant.seed, variant.sha256),
        ).fetchone()
        if row:
            return row["id"]
        cur = self.db.execute(
            "INSERT INTO builds (kernel, commit_sha, image, layout, seed, plan_id, plan, image_sha256, elf_path,"
            " toolchain, quirks, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (variant.kernel, variant.commit, variant.image, variant.layout, variant.seed, variant.plan_id,
             Path(variant.plan_path).read_text(), variant.sha256, str(variant.elf),
             json.dumps({"cc": build_info.get("cc"), "ld": build_info.get("ld")}),
             json.dumps(build_info.get("quirks", [])), time.time()),
        )
        return cur.lastrowid

    # -- runs ------------------------------------------------------------------------------------
    def done(self, build_id: int, target: str, host: str, mode: str, args: str = "") -> dict[int, str]:
        """The repetitions already stored for this build on this target, with their status."""
        rows = self.db.execute("SELECT rep, status FROM runs WHERE build_id=? AND target=? AND host=? AND mode=? "
                               "AND args=?", (build_id, target, host, mode, args))
        return {r["rep"]: r["status"] for r in rows}

    def add_run(self, build_id: int, target: str, mode: str, rep: int, result, log: Path, started: float,
                args: str = "") -> int:
        """Store a finished run with its samples in one transaction."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM samples WHERE run_id IN (SELECT id FROM runs WHERE build_id=? AND "
                            "target=? AND host=? AND mode=? AND rep=? AND args=?)",
                            (build_id, target, result.host, mode, rep, args))
            self.db.execute("DELETE FROM runs WHERE build_id=? AND target=? AND host=? AND mode=? AND rep=? AND args=?",
                            (build_id, target, result.host, mode, rep, args))
            cur = self.db.execute(
                "INSERT INTO runs (build_id, target, host, accelerator, mode, rep, args, status, exit_code, message,"
                " started, duration, log_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (build_id, target, result.host, result.accelerator, mode, rep, args, result.status,
                 result.exit_code, result.message, started, result.duration, str(log)),
            )
            run_id = cur.lastrowid
            self.db.executemany(
                "INSERT INTO samples (run_id, metric, value, unit, higher_is_better) VALUES (?,?,?,?,?)",
                [(run_id, s.metric, s.value, s.unit, int(s.higher_is_better)) for s in result.samples],
            )
        return run_id

    # -- queries ---------------------------------------------------------------------------------
    def runs(self, **where) -> list[dict]:
        sql, params = _where(where)
        return [dict(r) for r in self.db.execute(
            "SELECT runs.*, builds.kernel, builds.commit_sha, builds.image, builds.layout, builds.seed, "
            "builds.plan_id FROM runs JOIN builds ON builds.id = runs.build_id" + sql + " ORDER BY runs.id", params)]

    def samples(self, **where) -> list[dict]:
        sql, params = _where(where)
        return [dict(r) for r in self.db.execute(
            "SELECT samples.id AS sample_id, samples.metric, samples.value, samples.unit, samples.higher_is_better, "
            "runs.id AS run_id, runs.target, runs.host, runs.accelerator, runs.mode, runs.rep, runs.status, "
            "runs.started, builds.kernel, builds.commit_sha, builds.image, builds.layout, builds.seed, "
            "builds.plan_id, builds.id AS build_id FROM samples JOIN runs ON runs.id = samples.run_id "
            "JOIN builds ON builds.id = runs.build_id" + sql + " ORDER BY samples.id", params)]

    # -- small key/value state (bisection logs) --------------------------------------------------
    def get_state(self, key: str):
        row = self.db.execute("SELECT value FROM state WHERE key=?", (key,)).fetchone()
        return json.loads(row["value"]) if row else None

    def set_state(self, key: str, value) -> None:
        self.db.execute("INSERT INTO state (key, value, updated) VALUES (?,?,?) ON CONFLICT(key) DO UPDATE SET "
                        "value=excluded.value, updated=excluded.updated", (key, json.dumps(value), time.time()))

    def del_state(self, key: str) -> None:
        self.db.execute("DELETE FROM state WHERE key=?", (key,))


COLUMNS = {"kernel": "builds.kernel", "commit": "builds.commit_sha", "image": "builds.image",
           "layout": "builds.layout", "seed": "builds.seed", "target": "runs.target", "host": "runs.host",
           "mode": "runs.mode", "status": "runs.status", "metric": "samples.metric", "build_id": "builds.id"}


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
