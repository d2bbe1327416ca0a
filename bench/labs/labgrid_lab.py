"""A real labgrid lab on 127.0.0.1 for the place tests and bench/farm_bisect.py.

``labgrid-coordinator`` (gRPC, from the labgrid package on PyPI) listens on a free port of
127.0.0.1; one ``labgrid-exporter`` per place exports a ``NetworkService`` resource that
points to one of the throw-away sshd servers of ``_sshd.Lab``; ``labgrid-client`` creates
the places (``p0``, ``p1`` ...), matches each to its exporter's group and tags them
``pool=bench``.  Everything is stopped afterwards; an exporter can be killed on its own
(the place is then lost: the coordinator drops its resources).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from . import sshd as _sshd


def available() -> str | None:
    """None when a lab can be started here, else why not."""
    for tool in ("labgrid-coordinator", "labgrid-exporter", "labgrid-client"):
        if shutil.which(tool) is None:
            return f"no {tool} (pip install labgrid)"
    return _sshd.available()


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


class LabgridLab:
    def __init__(self, root: Path, n: int = 3):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ssh = _sshd.Lab(root / "ssh", n)
        self.procs: list[subprocess.Popen] = []
        self.exporters: dict[str, subprocess.Popen] = {}
        try:
            self._start(n)
        except BaseException:
            self.stop()
            raise

    def _start(self, n: int) -> None:
        self.port = _sshd.free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "LG_COORDINATOR": self.address}
        cdir = self.root / "coordinator"
        cdir.mkdir()
        self.coordinator = self._spawn(["labgrid-coordinator", "-l", self.address], cdir, "coordinator.log")
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if self.coordinator.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"labgrid-coordinator did not start: {(cdir / 'coordinator.log').read_text()}")
                time.sleep(0.2)
        self.places = [f"p{i}" for i in range(n)]
        for place, server in zip(self.places, self.ssh.servers):
            self.start_exporter(place, server.port)
        for place in self.places:
            self.client("-p", place, "create")
            self.client("-p", place, "add-match", f"*/{place}/*")
            self.client("-p", place, "set-tags", "pool=bench")
        deadline = time.monotonic() + 120
        while self.client("resources").stdout.count("NetworkService") < n:
            if time.monotonic() > deadline:
                raise RuntimeError("the exporters' resources did not reach the coordinator")
            time.sleep(0.3)

    def _spawn(self, cmd: list[str], cwd: Path, log: str) -> subprocess.Popen:
        p = subprocess.Popen(cmd, cwd=cwd, env=self.env, stdout=open(cwd / log, "wb"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def start_exporter(self, place: str, port: int) -> None:
        d = self.root / f"exporter-{place}"
        d.mkdir(exist_ok=True)
        (d / "exporter.yaml").write_text(f"{place}:\n  NetworkService:\n    address: 127.0.0.1\n"
                                         f"    username: root\n    port: {port}\n")
        self.exporters[place] = self._spawn(["labgrid-exporter", "-c", self.address, "-n", f"exporter-{place}",
                                             "--hostname", "127.0.0.1", "exporter.yaml"], d, "exporter.log")

    def kill_exporter(self, place: str) -> None:
        """The exporter of ``place`` dies (SIGKILL): the coordinator drops its resources."""
        p = self.exporters[place]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()

    def client(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["labgrid-client", "-x", self.address, *args], env=self.env, capture_output=True,
                              text=True, check=True, timeout=60)

    def target_table(self, name: str, tmp: Path, **extra) -> str:
        """A [targets.NAME] table of kind labgrid-places over this lab's pool."""
        import json

        lines = [f"[targets.{name}]", 'kind = "labgrid-places"', 'image = "hosted"', "timeout = 60",
                 f'coordinator = "{self.address}"', 'tags = { pool = "bench" }',
                 f'identity = "{self.ssh.key}"', f'known_hosts = "{self.ssh.known_hosts}"',
                 f'remote_dir = "{tmp}/remote-{name}-{{place}}"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
        return "\n".join(lines) + "\n\n"

    def stop(self) -> None:
        for p in reversed(self.procs):
            _stop(p)
        self.ssh.stop()
