"""``ssh``: copy an image to a test machine over SSH, run the benchmark there, read its output.

Two ways of using a remote machine, as Bluhm's test machines are used:

- a **hosted executable** (``args`` or ``command``): the image is copied to ``remote_dir``
  (once per image: its name carries the image's sha256) and run; its output is the console;
- a **kernel installed on the target** (``install`` and ``reboot = true``): the image is
  copied, the ``install`` command puts it in place (e.g. ``cp {image} /bsd``), the machine
  is rebooted, layoutbench waits until it is back with a new boot id, and then runs
  ``command`` (the benchmark, on the freshly booted kernel).

Connection settings come from the user's OpenSSH config (``~/.ssh/config``, or the file
``ssh_config`` names): host alias, ``Hostname``, ``Port``, ``User``, ``IdentityFile``,
``ProxyJump``, ``UserKnownHostsFile``.  The SSH protocol is asyncssh's; each target keeps
one connection (its own event loop), so several targets run side by side in threads.

A run is killed at its timeout: the remote command is started as ``exec`` of a shell that
printed its pid first, and sshd makes it a session (process-group) leader, so the whole
group gets SIGKILL through a second channel.  The recorded ``host`` is the remote
identity ``user@host:port`` (after the ssh config is applied), or ``host_id`` if set.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from pathlib import Path

from .. import machine
from . import RunResult, Target, require
from ..build import sha256_file
from ..errors import LayoutbenchError

PID_MARK = "__layoutbench_pid"


class TargetUnreachable(LayoutbenchError):
    """The target cannot be reached at all: none of its runs can happen."""


def _why(e: BaseException) -> str:
    """One short line for a connection error."""
    import asyncssh

    if isinstance(e, asyncssh.PermissionDenied):
        return "permission denied (the key was refused)"
    if isinstance(e, asyncssh.HostKeyNotVerifiable):
        return f"host key not verifiable ({e.reason}); add it to known_hosts or set known_hosts"
    if isinstance(e, asyncssh.DisconnectError):
        return e.reason or type(e).__name__
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(e, OSError):
        return (os.strerror(e.errno).lower() if isinstance(e.errno, int) and e.errno > 0 else e.strerror) \
            or str(e) or type(e).__name__
    return str(e) or type(e).__name__


class SshTarget(Target):
    """Settings: ``host`` (required: a host name or an alias of the ssh config), ``port``,
    ``user``, ``identity`` (key file), ``ssh_config`` (default ``~/.ssh/config``),
    ``known_hosts`` (a file, or ``"none"`` to accept any host key), ``connect_timeout``
    (default 15), ``remote_dir`` (default ``/tmp/layoutbench``), ``args`` or ``command``
    (as for ``local``; ``{image}`` is the remote path), ``install`` (shell command run after
    the copy), ``reboot`` (reboot before each run), ``reboot_command`` (default ``reboot``),
    ``boot_id_command`` (default: Linux's boot_id, else ``sysctl -n kern.boottime``),
    ``boot_timeout`` (default 600), ``collect`` (commands whose output is appended to the
    run's log afterwards, e.g. ``dmesg``), ``host_id``, ``success_exit`` (default 0)."""

    kind = "ssh"
    counts = True

    def __init__(self, spec, profile):
        super().__init__(spec, profile)
        s = spec.settings
        self.alias = str(require(spec, profile, "host", "a host name or an alias from ~/.ssh/config"))
        self.connect_timeout = float(s.get("connect_timeout", 15))
        self.remote_dir = str(s.get("remote_dir", "/tmp/layoutbench"))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn = None
        self._copied: set[str] = set()
        self._addr = self._resolve()

    # -- identity --------------------------------------------------------------------------------
    def _config_paths(self) -> list[str]:
        s = self.spec.settings
        if "ssh_config" in s:
            p = Path(str(s["ssh_config"])).expanduser()
            if not p.is_absolute():
                p = self.profile.path.parent / p
            return [str(p)]
        default = Path("~/.ssh/config").expanduser()
        return [str(default)] if default.is_file() else []

    def _options(self):
        """asyncssh connection options: the ssh config, then the target's own settings on top."""
        import asyncssh

        s = self.spec.settings
        kw: dict = {"config": self._config_paths(), "host": self.alias,
                    "connect_timeout": self.connect_timeout}
        if "port" in s:
            kw["port"] = int(s["port"])
        if "user" in s:
            kw["username"] = str(s["user"])
        if "identity" in s:
            p = Path(str(s["identity"])).expanduser()
            kw["client_keys"] = [str(p if p.is_absolute() else self.profile.path.parent / p)]
        if "known_hosts" in s:
            kh = str(s["known_hosts"])
            kw["known_hosts"] = None if kh == "none" else str(Path(kh).expanduser())
        return asyncssh.SSHClientConnectionOptions(**kw)

    def _resolve(self) -> tuple[str, int, str]:
        """(hostname, port, user) after the ssh config is applied; no network involved."""
        s = self.spec.settings
        try:
            o = self._options()
            return str(o.host), int(o.port), str(o.username)
        except Exception:  # e.g. a key file named in the config is missing: connect says why
            return self.alias, int(s.get("port", 22)), str(s.get("user", os.environ.get("USER", "root")))

    @property
    def host(self) -> str:
        if "host_id" in self.spec.settings:
            return str(self.spec.settings["host_id"])
        h, port, user = self._addr
        return f"{user}@{h}:{port}"

    def describe(self) -> str:
        return f"{self.spec.name} (ssh, {self.host})"

    # -- connection ------------------------------------------------------------------------------
    def _run(self, coro):
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    async def _connect(self):
        import asyncssh

        return await asyncio.wait_for(asyncssh.connect(self.alias, options=self._options()), self.connect_timeout + 5)

    def open(self) -> None:
        """Connect now (or raise TargetUnreachable with one clear line)."""
        if self._conn is not None:
            return
        try:
            self._conn = self._run(self._connect())
        except Exception as e:  # asyncssh.Error, OSError, timeouts, bad key files
            h, port, _ = self._addr
            raise TargetUnreachable(f"ssh target {self.spec.name}: cannot connect to {h}:{port}: {_why(e)}") from None

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
                self._run(conn.wait_closed())
            except Exception:
                pass
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()
        self._loop = None

    async def _exec(self, command: str, timeout: float, sink=None) -> tuple[int | None, str, bool]:
        """Run ``command`` remotely; stream its output to ``sink``; SIGKILL its process group at
        ``timeout``.  Returns (exit status or None, output without the pid line, timed out)."""
        import asyncssh

        proc = await self._conn.create_process(f"echo {PID_MARK} $$; exec {command}", stderr=asyncssh.STDOUT,
                                               encoding=None)
        chunks: list[bytes] = []
        pid = None
        deadline = time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise asyncio.TimeoutError
                data = await asyncio.wait_for(proc.stdout.read(65536), left)
                if not data:
                    break
                if pid is None:
                    head = b"".join(chunks) + data
                    if b"\n" in head:
                        first, _, rest = head.partition(b"\n")
                        if first.startswith(PID_MARK.encode()):
                            pid = int(first.split()[1])
                            chunks, data = [], rest
                        else:
                            pid = -1
                    else:
                        chunks.append(data)
                        continue
                chunks.append(data)
                if sink:
                    sink(data)
            await asyncio.wait_for(proc.wait_closed(), max(1.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            timed_out = True
            if pid and pid > 0:
                try:
                    await asyncio.wait_for(self._conn.run(f"kill -9 -{pid} 2>/dev/null; kill -9 {pid} 2>/dev/null; "
                                                          f"true"), 15)
                except Exception:
                    pass
            proc.close()
        text = b"".join(chunks).decode(errors="replace")
        return (None if timed_out else proc.exit_status), text, timed_out

    async def _put(self, local: Path, remote: str) -> None:
        import asyncssh

        async with self._conn.start_sftp_client() as sftp:
            await sftp.makedirs(self.remote_dir, exist_ok=True)
            tmp = remote + ".part"
            await sftp.put(str(local), tmp)
            await sftp.chmod(tmp, 0o755)
            try:
                await sftp.posix_rename(tmp, remote)
            except asyncssh.SFTPError:  # a server without the OpenSSH extension
                if await sftp.exists(remote):
                    await sftp.remove(remote)
                await sftp.rename(tmp, remote)

    def copied(self, image: Path) -> str | None:
        """The remote path of ``image`` when this connection already copied it there, else None."""
        remote = f"{self.remote_dir}/{image.stem}-{sha256_file(image)[:16]}"
        return remote if remote in self._copied else None

    def copy(self, image: Path) -> str:
        """Copy ``image`` to the target (skipped when that exact image is already there)."""
        sha = sha256_file(image)
        remote = f"{self.remote_dir}/{image.stem}-{sha[:16]}"
        if remote in self._copied:
            return remote
        self._run(self._put(image, remote))
        self._copied.add(remote)
        return remote

    # -- reboot and wait -------------------------------------------------------------------------
    def boot_id(self) -> str:
        cmd = str(self.spec.settings.get(
            "boot_id_command",
            "cat /proc/sys/kernel/random/boot_id 2>/dev/null || sysctl -n kern.boottime"))
        code, out, _ = self._run(self._exec(f"sh -c {shlex.quote(cmd)}", 60))
        return out.strip()

    def reboot_and_wait(self, log) -> float:
        """Reboot, wait for the machine to go and come back with a new boot id; seconds taken."""
        t0 = time.monotonic()
        before = self.boot_id()
        cmd = str(self.spec.settings.get("reboot_command", "reboot"))
        log(f"# reboot: {cmd} (boot id {before})\n")
        try:
            self._run(asyncio.wait_for(self._conn.run(f"sh -c {shlex.quote(cmd)} >/dev/null 2>&1 &"), 30))
        except Exception:
            pass  # the connection may drop while reboot runs
        self.close()
        self._copied.clear()
        limit = float(self.spec.settings.get("boot_timeout", 600))
        while time.monotonic() - t0 < limit:
            time.sleep(float(self.spec.settings.get("boot_poll", 5)))
            try:
                self.open()
                now = self.boot_id()
            except Exception:
                self.close()
                continue
            if now and now != before:
                log(f"# back after {time.monotonic() - t0:.1f}s (boot id {now})\n")
                return time.monotonic() - t0
            self.close()  # not rebooted yet (reboot is still shutting down)
        raise TimeoutError(f"did not come back with a new boot id within {limit:.0f}s after {cmd!r}")

    # -- one run ---------------------------------------------------------------------------------
    def remote_command(self, remote_image: str, extra: list[str]) -> str:
        s = self.spec.settings
        if "command" in s:
            words = [str(w).replace("{image}", remote_image) for w in s["command"]] + extra
        else:
            words = [remote_image, *[str(a) for a in s.get("args", [])], *extra]
        return " ".join(shlex.quote(w) for w in self.wrap(words))

    def machine_check(self) -> list[machine.Finding]:
        """The quiet-machine check, run on the remote machine by its sh."""
        self.open()
        code, out, _ = self._run(self._exec(f"sh -c {shlex.quote(machine.SCRIPT)}", 60))
        if code != 0:
            return [machine.Finding("check", "failed", f"the quiet-machine check failed on {self.host} "
                                    f"(exit {code})", "see that sh runs there")]
        return machine.assess(machine.parse(out), self.pin)

    def run(self, image: Path, log: Path, extra: list[str] | None = None) -> RunResult:
        log.parent.mkdir(parents=True, exist_ok=True)
        s = self.spec.settings
        self.open()  # TargetUnreachable: none of this target's runs can happen
        with open(log, "wb") as f:
            def note(text: str) -> None:
                f.write(text.encode())
                f.flush()

            note(f"# ssh {self.host} ({self.alias})\n")
            steps = {"deploy": 0.0, "boot": 0.0}  # what this run spent before its benchmark, by kind of step
            try:
                t0, fresh = time.monotonic(), self.copied(image) is None
                remote = self.copy(image)
                # a copy a rerun skips is a new layout's cost; with a reboot every run copies again
                steps["boot" if s.get("reboot") or not fresh else "deploy"] += time.monotonic() - t0
                note(f"# copied {image} to {remote}\n")
                t0 = time.monotonic()
                if s.get("install"):
                    cmd = str(s["install"]).replace("{image}", shlex.quote(remote))  # remote_dir is the user's text
                    note(f"# install: {cmd}\n")
                    code, out, timed_out = self._run(self._exec(f"sh -c {shlex.quote(cmd)}", self.timeout))
                    note(out)
                    if code != 0:
                        return self._error(f"install command failed ({'timeout' if timed_out else code}): "
                                           f"{out.strip()[-200:]}", "failed")
                if s.get("reboot"):
                    self.reboot_and_wait(note)
                steps["boot"] += time.monotonic() - t0
                cmd = self.remote_command(remote, list(extra or []))
                note(f"# run: {cmd}\n")
                code, output, secs, timed_out = self._timed(cmd, note)
                for c in s.get("collect", []):
                    note(f"\n# --- {c}\n")
                    try:
                        self._run(self._exec(f"sh -c {shlex.quote(str(c))}", 60, note))
                    except Exception as e:
                        note(f"# failed: {_why(e)}\n")
            except TargetUnreachable as e:
                note(f"# {e}\n")
                return self._error(str(e), "error")
            except TimeoutError as e:  # reboot did not come back
                note(f"# {e}\n")
                return self._error(str(e), "timeout")
            except Exception as e:  # the connection broke in the middle
                self.close()
                note(f"# ssh error: {_why(e)}\n")
                return self._error(f"ssh target {self.spec.name}: {_why(e)}", "error")
        r = self.finish(output, code, timed_out, secs, log)
        r.deploy_seconds = steps["deploy"] if fresh and not s.get("reboot") else None
        r.boot_seconds = steps["boot"] if s.get("install") or s.get("reboot") else None
        return r

    @property
    def run_noun(self) -> str:
        return "reboots+runs" if self.spec.settings.get("reboot") else "runs"

    def _timed(self, cmd: str, sink):
        t0 = time.monotonic()
        code, output, timed_out = self._run(self._exec(cmd, self.timeout, lambda b: sink(b.decode(errors="replace"))))
        return code, output, time.monotonic() - t0, timed_out

    def _error(self, message: str, status: str) -> RunResult:
        return RunResult(status, None, "", 0.0, self.accelerator, self.host, message=message)
