"""``labgrid``: boot an image through a labgrid environment and read the metrics on its console.

A lab that already has labgrid (exporters, a coordinator, places, strategies) runs
layoutbench jobs without new glue: the target's ``env`` is a labgrid environment YAML;
for every run layoutbench

1. loads the environment and puts the image's path under ``images: <image_key>`` (the key
   the drivers boot from: QEMUDriver's ``kernel``, a TFTP/USB-storage driver's image...),
2. asks the target's strategy for ``state`` (default ``booted``),
3. reads the console (labgrid's ``ConsoleProtocol``) until the ``LAYOUTBENCH end`` line,
   the console closes, or the timeout,
4. asks the strategy for ``off_state`` (default ``off``) and cleans the environment up.

For places behind a coordinator, the environment names a ``RemotePlace`` resource (and
``LG_COORDINATOR`` is set, as for ``labgrid-client``); acquire the place first
(``labgrid-client -p PLACE acquire``).

``LayoutbenchStrategy`` below is a minimal strategy for targets whose power driver also
boots the image (QEMUDriver, or a power switch plus a board that boots what it is given):
``off`` powers off, ``booted`` powers on with the console active.  QEMU that exits by
itself (isa-debug-exit) is noticed, and its exit status is the run's exit status.
"""

from __future__ import annotations

import enum
import socket
import time
from pathlib import Path

import attr
from labgrid import Environment, target_factory
from labgrid.step import step
from labgrid.strategy import Strategy, StrategyError
from pexpect import TIMEOUT

from . import RunResult, Target, require
from ..errors import LayoutbenchError


class Status(enum.Enum):
    unknown = 0
    off = 1
    booted = 2


def _exited(power) -> int | None:
    """The exit status of a QEMUDriver's QEMU that has exited on its own, else None."""
    child = getattr(power, "_child", None)
    if child is not None and child.poll() is not None:
        return child.returncode
    return None


@target_factory.reg_driver
@attr.s(eq=False)
class LayoutbenchStrategy(Strategy):
    """off ↔ booted: power off; power on with the console active.  Remembers the exit
    status of a QEMU that ended by itself (``exit_code``)."""

    bindings = {"power": "PowerProtocol", "console": "ConsoleProtocol"}
    status = attr.ib(default=Status.unknown)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.exit_code = None

    def reap(self) -> None:
        """Note a QEMU that exited by itself and mark it off, so ``off`` does not ask it to quit."""
        code = _exited(self.power)
        if code is not None:
            self.exit_code = code
            self.power._child = None
            self.power.status = 0

    @step(args=["status"])
    def transition(self, status, *, step):  # noqa: A002 - labgrid's signature
        if not isinstance(status, Status):
            status = Status[status]
        if status == Status.unknown:
            raise StrategyError(f"can not transition to {status}")
        if status == Status.off:
            self.target.activate(self.power)
            self.reap()
            self.power.off()
        elif status == Status.booted:
            self.transition(Status.off)
            self.exit_code = None
            self.target.activate(self.console)
            self.power.on()
        self.status = status


def _place(config: dict) -> str | None:
    """The RemotePlace a target config names, if any."""
    res = config.get("resources") or {}
    items = res.items() if isinstance(res, dict) else [kv for r in res for kv in r.items()]
    for kind, args in items:
        if kind == "RemotePlace":
            return str((args or {}).get("name", ""))
    return None


class LabgridTarget(Target):
    """Settings: ``env`` (labgrid environment YAML, relative to the kernel.toml), ``role``
    (target in it, default ``main``), ``image_key`` (default ``kernel``), ``state`` (default
    ``booted``), ``off_state`` (default ``off``), ``boot_args`` (added to a QEMUDriver's
    kernel command line, with ``--args``), ``host_id``, ``success_exit`` (default 33: the
    minikernel's isa-debug-exit status; a console that ends with ``end status=ok`` but no
    exit status counts as success)."""

    kind = "labgrid"
    run_noun = "boots+runs"  #: every run boots the image: a rerun costs a boot too
    success_exit = 33

    def __init__(self, spec, profile):
        super().__init__(spec, profile)
        s = spec.settings
        env = Path(str(require(spec, profile, "env", "a labgrid environment YAML"))).expanduser()
        self.env_path = env if env.is_absolute() else profile.path.parent / env
        if not self.env_path.is_file():
            raise LayoutbenchError(f"target {spec.name}: labgrid environment {self.env_path} not found")
        self.role = str(s.get("role", "main"))
        self.image_key = str(s.get("image_key", "kernel"))
        self._drivers, self._place = self._read_config()

    def _read_config(self) -> tuple[dict, str | None]:
        from labgrid.config import Config

        try:
            cfg = Config(str(self.env_path)).get_targets().get(self.role)
        except Exception as e:
            raise LayoutbenchError(f"target {self.spec.name}: cannot read {self.env_path}: {e}") from None
        if not cfg:
            raise LayoutbenchError(f"target {self.spec.name}: {self.env_path} has no target {self.role!r}")
        drv = cfg.get("drivers") or {}
        drivers = dict(drv) if isinstance(drv, dict) else {k: v for d in drv for k, v in d.items()}
        return drivers, _place(cfg)

    @property
    def host(self) -> str:
        if "host_id" in self.spec.settings:
            return str(self.spec.settings["host_id"])
        if self._place:
            return f"labgrid:{self._place}"
        return f"labgrid:{self.role}@{socket.gethostname()}"

    @property
    def accelerator(self) -> str:
        q = self._drivers.get("QEMUDriver")
        if q is None:
            return "native"
        args = str((q or {}).get("extra_args", ""))
        return "kvm" if ("kvm" in args and "accel tcg" not in args) else "tcg"

    def describe(self) -> str:
        return f"{self.spec.name} (labgrid {self.env_path.name} role {self.role}, {self.host}, {self.accelerator})"

    def run(self, image: Path, log: Path, extra: list[str] | None = None) -> RunResult:
        s = self.spec.settings
        log.parent.mkdir(parents=True, exist_ok=True)
        prefix = self.profile.metric_prefix
        chunks: list[bytes] = []
        code, timed_out, t0 = None, False, time.monotonic()
        env = None
        with open(log, "wb") as f:
            f.write(f"# labgrid {self.env_path} role {self.role}: {image}\n".encode())
            try:
                env = Environment(config_file=str(self.env_path))
                env.config.data.setdefault("images", {})[self.image_key] = str(image)
                target = env.get_target(self.role)
                if target is None:
                    raise LayoutbenchError(f"{self.env_path} has no target {self.role!r}")
                words = " ".join([str(s.get("boot_args", "")), *(extra or [])]).strip()
                if "QEMUDriver" in self._drivers and words:
                    qemu = target.get_driver("QEMUDriver", activate=False)
                    qemu.boot_args = " ".join(w for w in (qemu.boot_args, words) if w)
                strategy = target.get_driver("Strategy")
                console = target.get_driver("ConsoleProtocol")
                t0 = time.monotonic()
                strategy.transition(str(s.get("state", "booted")))
                deadline = t0 + self.timeout
                end_mark, seen_end, drain_until = f"{prefix} end".encode(), False, None
                while True:
                    now = time.monotonic()
                    if seen_end and now >= drain_until:
                        break
                    if now >= deadline:
                        timed_out = not seen_end
                        break
                    try:
                        data = console.read(size=4096, timeout=min(0.5, deadline - now))
                    except TIMEOUT:
                        data = None
                    if data == b"":  # the console closed: QEMU (or the connection) is gone
                        break
                    if data:
                        chunks.append(data)
                        f.write(data)
                        f.flush()
                        if not seen_end and end_mark in b"".join(chunks[-2:]):
                            seen_end, drain_until = True, time.monotonic() + 3
                    elif seen_end and _exited(getattr(strategy, "power", None)) is not None:
                        break
                secs = time.monotonic() - t0
                reap = getattr(strategy, "reap", None)
                if reap:
                    reap()
                code = getattr(strategy, "exit_code", None)
                try:
                    strategy.transition(str(s.get("off_state", "off")))
                except Exception as e:  # powering off a board that hangs must not lose the run
                    f.write(f"\n# labgrid: off failed: {e}\n".encode())
            except (LayoutbenchError, StrategyError, Exception) as e:
                msg = f"labgrid target {self.spec.name}: {type(e).__name__}: {e}"
                f.write(f"\n# {msg}\n".encode())
                return RunResult("error", None, b"".join(chunks).decode(errors="replace"), time.monotonic() - t0,
                                 self.accelerator, self.host, message=msg.splitlines()[0])
            finally:
                if env is not None:
                    try:
                        env.cleanup()
                    except Exception:
                        pass
        output = b"".join(chunks).decode(errors="replace")
        if code is None and not timed_out and f"{prefix} end status=ok" in output:
            code = int(s.get("success_exit", self.success_exit))  # no exit status on a board: the end line says
        return self.finish(output, code, timed_out, secs, log)
