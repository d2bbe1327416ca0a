"""A real PostgreSQL server for the tests: Debian's postgresql binaries, a temporary data
directory, a Unix socket only (no TCP port), trust authentication, stopped afterwards.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(Debian's package creates it) in a directory that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class Server:
    def __init__(self) -> None:
        b = bindir()
        if b is None:
            raise FileNotFoundError("initdb (apt-get install postgresql)")
        self.bin = b
        self.dir = Path(tempfile.mkdtemp(prefix="lb-pg-"))
        self.data = self.dir / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.dir, 0o755)

    def _run(self, *cmd: str) -> None:
        subprocess.run([*self.as_user, *cmd], check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> str:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "lb", "--no-sync")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-o",
                  f"-k {self.dir} -c listen_addresses='' -c fsync=off", "start")
        self._run(str(self.bin / "createdb"), "-h", str(self.dir), "-U", "lb", "layoutbench")
        return f"postgresql://lb@/layoutbench?host={self.dir}"

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def serve():
    """For a fixture (``yield from serve()``): a started server's URL, the server stopped after;
    a skip where PostgreSQL is not installed (a failure in CI, where setup.sh installs it)."""
    import pytest

    if bindir() is None:
        pytest.fail("PostgreSQL is not installed: run `bash setup.sh`, which installs postgresql", pytrace=False)
    s = Server()
    try:
        yield s.start()
    finally:
        s.stop()
