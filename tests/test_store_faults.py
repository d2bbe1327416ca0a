"""A store on a disk that fills, and a store given as a libpq connection string (real file
systems: a tmpfs mounted in a private mount namespace with ``unshare -m``, as root can)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require

from layoutbench import store
from layoutbench.errors import LayoutbenchError

ROOT = Path(__file__).resolve().parent.parent

FILL = r"""
import sqlite3, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from layoutbench import store
d = Path(sys.argv[1])
st = store.Store(d / "s.sqlite")
st.db.execute("PRAGMA wal_autocheckpoint=0")  # as while a reader holds the log: it is not folded back
for i in range(100000):
    try:
        st.set_state(f"k{i}", "x" * 4000)
    except sqlite3.Error as e:
        err = e
        break
print(store.explain(err, checkpoint=True))
wal = d / "s.sqlite-wal"
print(wal.stat().st_size if wal.exists() else 0)
for said in ("disk I/O error", "unable to open database file", "database is locked"):
    print(store.explain(sqlite3.OperationalError(said), d / "s.sqlite"))
"""


def test_a_full_disk_says_how_large_the_write_ahead_log_is_after_trying_to_fold_it_back(tmp_path):
    require(None if shutil.which("unshare") else "unshare (util-linux) is not installed")
    d = tmp_path / "mnt"
    d.mkdir()
    p = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=400k tmpfs {d} && "
                        f"exec {sys.executable} -c '{FILL}' {d} {ROOT}"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    line, wal, io, cannot_open, locked = p.stdout.strip().splitlines()
    assert "the disk is full" in line, line
    assert "write-ahead log" in line and "s.sqlite-wal" in line, line
    assert (f"holds {int(wal) >> 10} KiB: free more than that" in line) or (" KiB freed)" in line), (line, wal)
    # on a full disk, what SQLite calls an I/O error or a file it cannot open is the full disk; a lock is a lock
    assert "the disk is full (disk I/O error)" in io and "the disk is full (unable to open" in cannot_open, (io,
                                                                                                      cannot_open)
    assert "locked by another process (database is locked)" in locked, locked


@pytest.mark.parametrize("conninfo", ["host=db.example.org password=S3cret dbname=lb",
                                      "dbname=lb  password = 'S3 cret'", "user=lb password=S3cret"])
def test_a_libpq_connection_string_is_refused_without_its_password_and_without_a_file(tmp_path, monkeypatch,
                                                                                      conninfo):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LayoutbenchError, match="libpq connection string") as e:
        store.Store(conninfo)
    assert "S3" not in str(e.value) and "password=..." in str(e.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["results=old.sqlite", "a b.sqlite", "x=1 y=2"])
def test_a_file_name_with_an_equals_sign_is_still_a_file(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    store.Store(name).close()
    assert (tmp_path / name).is_file()


READ = r"""
import sys
sys.path.insert(0, sys.argv[2])
from layoutbench import store
st = store.Store(sys.argv[1] + "/s.sqlite")
print(st.readonly, st.get_state("k"), len(st.runs()))
"""


def test_a_store_on_a_read_only_file_system_is_read(tmp_path):
    """A store whose file system was remounted read-only opens for reading (SQLite's immutable
    mode: no -shm or -wal file can be made there) and gives back what it holds."""
    require(None if shutil.which("unshare") else "unshare (util-linux) is not installed")
    d = tmp_path / "mnt"
    d.mkdir()
    make = f"from layoutbench import store; s = store.Store('{d}/s.sqlite'); s.set_state('k', 'v'); s.close()"
    script = (f"mount -t tmpfs tmpfs {d} && cd {ROOT} && {sys.executable} -c \"{make}\" && "
              f"mount -o remount,ro {d} && exec {sys.executable} -c '{READ}' {d} {ROOT}")
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["True", "v", "0"], p.stdout


def test_only_a_full_disk_folds_the_stores_write_ahead_log_back(tmp_path):
    """explain(..., checkpoint=True) folds the opened store's log back only for a full disk: a locked store or a
    damaged page is explained as it is, and its log is left as it was (another process may be writing)."""
    import sqlite3

    st = store.Store(tmp_path / "s.sqlite")
    st.db.execute("PRAGMA wal_autocheckpoint=0")  # the log is not folded back on its own
    for i in range(20):
        st.set_state(f"k{i}", "x" * 4000)
    wal = tmp_path / "s.sqlite-wal"
    held = wal.stat().st_size
    assert held > 0
    for said in ("database is locked", "database disk image is malformed"):
        e = sqlite3.OperationalError(said)
        line = store.explain(e, checkpoint=True)
        assert line == store.explain(e) and "write-ahead log" not in line, line
        assert wal.stat().st_size == held
    st.close()
