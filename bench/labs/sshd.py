"""A throw-away OpenSSH server on 127.0.0.1 for the ssh target's tests.

Each server has its own host key, accepts root with one user key (PermitRootLogin
prohibit-password, StrictModes no, an AuthorizedKeysFile in the tmp folder), and writes an
ssh client config with a host alias per server, so tests connect the way a user would:
``host = "alias"`` plus ``ssh_config``.  Needs Debian's ``openssh-server`` (/usr/sbin/sshd)
and root (sshd's privilege separation).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """None when a test sshd can be started here, else why not."""
    if not Path(SSHD).exists():
        return "no /usr/sbin/sshd (apt-get install openssh-server)"
    if os.geteuid() != 0:
        return "sshd's privilege separation needs root"
    if not shutil.which("ssh-keygen"):
        return "no ssh-keygen (apt-get install openssh-client)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "layoutbench-test", "-f", str(path)],
                   check=True)
    return path


class Sshd:
    def __init__(self, root: Path, user_pub: Path, alias: str):
        self.root, self.alias = root, alias
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.host_key = keygen(root / "host_ed25519")
        shutil.copy(user_pub, root / "authorized_keys")
        self.cfg = root / "sshd_config"
        self.cfg.write_text(f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {self.host_key}
PidFile {root}/sshd.pid
AuthorizedKeysFile {root}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
MaxStartups 50:30:100
LogLevel VERBOSE
""")
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
        self.log = root / "sshd.log"
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.cfg)], stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120  # a loaded machine starts sshd slowly; a healthy one in ms
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError(f"sshd did not listen on {self.port}: {self.log.read_text()}")

    def known_hosts_line(self) -> str:
        pub = (self.root / "host_ed25519.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n"

    def stop(self) -> None:
        """Stop this sshd (its process group: the listener and its sessions)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Lab:
    """Some sshd servers plus a client side: a user key, known_hosts, an ssh config with aliases."""

    def __init__(self, root: Path, n: int = 1):
        self.root = root
        client = root / "client"
        client.mkdir(parents=True)
        self.key = keygen(client / "id_ed25519")
        self.servers = [Sshd(root / f"sshd{i}", client / "id_ed25519.pub", f"bench{i}") for i in range(n)]
        self.known_hosts = client / "known_hosts"
        self.known_hosts.write_text("".join(s.known_hosts_line() for s in self.servers))
        self.config = client / "config"
        self.config.write_text("".join(
            f"Host {s.alias}\n  Hostname 127.0.0.1\n  Port {s.port}\n  User root\n  IdentityFile {self.key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {self.known_hosts}\n\n" for s in self.servers))

    def stop(self) -> None:
        for s in self.servers:
            s.stop()
