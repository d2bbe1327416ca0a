"""A PostgreSQL store's connection: telling a URL or a libpq connection string from an SQLite
file name, and a psycopg connection with the small part of sqlite3's interface that
:class:`store.Store` uses.  No SQL statement lives here; every one is in ``store.py``."""

from __future__ import annotations

import random
import re
import time

from .errors import LayoutbenchError
from .safety import redact_text, redact_url

#: SQLSTATEs of a deadlock and a serialization failure: the statement is tried again
RETRY_SQLSTATES = ("40P01", "40001")
#: tries of one statement or transaction, a short random wait between them
RETRIES = 6

#: libpq's connection keywords: ``host=db user=lb password=...`` is a PostgreSQL connection string
_LIBPQ_KEYS = ("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "sslcert", "sslkey",
               "sslrootcert", "sslpassword", "service", "connect_timeout", "options", "application_name",
               "target_session_attrs", "gssencmode", "channel_binding", "requiressl")
_CONNINFO_WORD = re.compile(r"(\w+)\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']*)")


def conninfo_keys(text: str) -> list[str] | None:
    """The keywords of a libpq ``key=value ...`` connection string, or None when ``text`` is not one
    (a file name holding ``=`` is not, unless every word is ``key=value`` and one key is libpq's)."""
    words, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _CONNINFO_WORD.match(text, pos)
        if m is None:
            return None
        words.append(m.group(1).lower())
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return words if words and any(w in _LIBPQ_KEYS for w in words) else None


def is_url(path) -> bool:
    """A PostgreSQL URL rather than an SQLite file."""
    return str(path).startswith(("postgresql://", "postgres://"))


class Postgres:
    """A psycopg connection with the small part of sqlite3's interface the store uses:
    ``execute`` with ``?`` placeholders returning a cursor of dict rows, ``executemany``."""

    def __init__(self, url: str):
        try:
            import psycopg
            from psycopg.rows import dict_row
        except ImportError:
            raise LayoutbenchError("a PostgreSQL store needs psycopg: pip install 'psycopg[binary]'") from None
        self.errors = psycopg.Error
        from psycopg.pq import TransactionStatus

        self._idle = TransactionStatus.IDLE
        try:
            self.conn = psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=15)
        except psycopg.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise LayoutbenchError(f"cannot connect to the store {redact_url(url)}: {redact_text(first, url)}") from None

    def execute(self, sql: str, params=()):
        """The statement; a read outside a transaction that the server rolled back as a deadlock
        or a serialization failure runs again (a few times, after a short random wait): it
        changed nothing.  Writes are run again by ``Store._retry``, whole."""
        sql = sql.replace("?", "%s")
        read = sql.lstrip().upper().startswith("SELECT")
        for i in range(RETRIES):
            try:
                return self.conn.execute(sql, params)
            except self.errors as e:
                if (not read or getattr(e, "sqlstate", None) not in RETRY_SQLSTATES or i == RETRIES - 1
                        or self.conn.info.transaction_status != self._idle):
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (i + 1))

    def executemany(self, sql: str, rows) -> None:
        with self.conn.cursor() as c:
            c.executemany(sql.replace("?", "%s"), rows)

    def close(self) -> None:
        self.conn.close()
