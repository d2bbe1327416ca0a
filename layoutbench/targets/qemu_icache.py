"""``qemu-icache``: boot a kernel under QEMU TCG with layoutbench's L1 instruction-cache model.

The model is a TCG plugin (``native/qemu-icache``, C, GPL-2.0-or-later like QEMU's plugin API):
it simulates a small set-associative LRU I1 cache (``i1 = "size,assoc,line"``, as cachegrind's
``--I1``) over the guest's instruction fetches, by guest virtual address, and counts only between
two marker instructions the guest executes around its benchmark (8-byte NOPs with a magic
displacement: ``nopl 0x4c42b001(%rax,%rax,1)`` begins, ``nopl 0x4c42b002(%rax,%rax,1)`` ends;
nothing on a real CPU).  QEMU runs single-threaded with ``-icount shift=0,sleep=off``: guest time
is the instruction count, so timer interrupts land at the same instruction in every boot; and
the real-time clock starts at a fixed date and runs on guest time (``-rtc``), so the guest's
wall-clock time (Linux seeds its random numbers with it) is the same in every boot.  The counts
are identical run to run.  It reports, as metrics (all lower is better):

- ``ic_ir``: guest instructions executed between the markers (kernel and user, every process),
- ``ic_i1_misses``: misses of the simulated I1,
- ``ic_cost``: ``ic_ir + miss_weight * ic_i1_misses`` (the default metric).

These are counts, not timings: they do not time the emulator (no emulation warning for them).
A guest that never runs the markers fails with a one-line error saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from . import RunResult
from .qemu import QemuTarget
from ..errors import LayoutbenchError

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "native" / "qemu-icache"
PLUGIN = PLUGIN_DIR / "libicache.so"
#: the metrics this target adds: instruction and miss counts of the model, not timings
METRICS = ("ic_cost", "ic_ir", "ic_i1_misses")
MARKERS = "nopl 0x4c42b001(%rax,%rax,1) ... nopl 0x4c42b002(%rax,%rax,1)"


def plugin_path() -> Path:
    """The plugin, built now (``make -C native/qemu-icache``) when missing or older than its sources."""
    sources = [PLUGIN_DIR / "icache.c", PLUGIN_DIR / "plugin-api.h", PLUGIN_DIR / "Makefile"]
    try:
        built = PLUGIN.stat().st_mtime_ns
        if all(s.stat().st_mtime_ns <= built for s in sources):
            return PLUGIN
    except OSError:
        pass
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("clang-19") or "cc"
    p = subprocess.run(["make", "-s", "-C", str(PLUGIN_DIR), f"CC={cc}"], capture_output=True, text=True)
    if p.returncode != 0 or not PLUGIN.is_file():
        last = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        raise LayoutbenchError(f"cannot build the cache-model plugin in {PLUGIN_DIR} ({last[0]}); "
                               f"install a C compiler and make (setup.sh does)")
    return PLUGIN


def read_result(path: Path) -> dict[str, str]:
    """The plugin's result file: one ``key=value`` per line."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def parse_i1(value) -> tuple[int, int, int]:
    try:
        size, assoc, line = (int(x) for x in str(value).split(","))
    except ValueError:
        raise LayoutbenchError(f"i1 must be \"size,assoc,line\" in bytes, ways, bytes (like \"4096,2,64\"), "
                               f"not {value!r}") from None
    sets = size // (assoc * line) if assoc > 0 and line > 0 else 0
    if sets <= 0 or size % (assoc * line) or sets & (sets - 1) or line & (line - 1):
        raise LayoutbenchError(f"i1 = {value!r}: the line size and the number of sets (size / (assoc x line)) "
                               f"must be powers of two")
    return size, assoc, line


class QemuIcacheTarget(QemuTarget):
    """Settings of ``qemu`` (``accel`` must be tcg or auto), plus ``i1`` (``size,assoc,line``,
    default ``4096,2,64``), ``miss_weight`` (default 20), ``icount`` (the ``-icount`` option,
    default ``shift=0,sleep=off``), ``rtc`` (the ``-rtc`` option, default a fixed date on the guest's
    clock: the wall-clock time a guest reads must not be the host's, or its random seeds and
    whatever they steer differ from boot to boot), ``guest_metrics`` (keep the metrics the guest prints itself, default
    false: under TCG they time the emulator) and ``plugin`` (a built plugin instead of layoutbench's)."""

    kind = "qemu-icache"
    METRICS = METRICS
    DEFAULT_METRIC = "ic_cost"
    DEFAULTS = {"i1": "4096,2,64", "miss_weight": 20, "icount": "shift=0,sleep=off",
                "rtc": "base=2026-01-01T00:00:00,clock=vm", "guest_metrics": False}

    def __init__(self, spec, profile):
        if str(spec.settings.get("accel", "auto")) not in ("auto", "tcg"):
            raise LayoutbenchError(f"target {spec.name} (kind qemu-icache): the cache model runs under TCG only; "
                                   f"remove accel = {spec.settings['accel']!r}")
        super().__init__(spec, profile)
        self._accel, self.why = "tcg", "the cache model is a TCG plugin"
        self.i1 = parse_i1(self.setting("i1"))

    def setting(self, name):
        return self.spec.settings.get(name, self.DEFAULTS.get(name))

    #: also write the per-block counts (blocks_file) beside the result: symdiff --cache asks for them
    #: for one run; a measurement does not (a booted kernel's blocks are hundreds of thousands of lines)
    blocks = False

    def _out(self, log: Path) -> Path:
        return log.with_suffix(".icache")

    def blocks_file(self, log: Path) -> Path:
        """Where a run with :attr:`blocks` set writes its per-block counts."""
        return log.with_suffix(".icache.blocks")

    def command(self, image: Path, extra: list[str], log: Path | None = None) -> list[str]:
        cmd = super().command(image, extra)
        cmd[cmd.index("-accel") + 1] = "tcg,thread=single"
        plugin = (self.profile.path.parent / str(self.spec.settings["plugin"]) if self.spec.settings.get("plugin")
                  else plugin_path())  # a profile's path is relative to its folder
        size, assoc, line = self.i1
        out = str(self._out(log)) if log else os.devnull
        # QEMU's option syntax: a comma inside a value is written twice
        args = f"size={size},assoc={assoc},line={line},out={out.replace(',', ',,')}" + (",blocks=on" if self.blocks else "")
        return cmd + ["-icount", str(self.setting("icount")), "-rtc", str(self.setting("rtc")),
                      "-plugin", f"file={str(plugin).replace(',', ',,')},{args}"]

    def run(self, image: Path, log: Path, extra: list[str] | None = None) -> RunResult:
        from . import run_command

        out = self._out(log)
        out.unlink(missing_ok=True)
        self.blocks_file(log).unlink(missing_ok=True)
        code, output, secs, timed_out = run_command(self.command(image, list(extra or []), log), self.timeout, log)
        note = ""
        if not timed_out:
            res = read_result(out) if out.is_file() else {}
            status = res.get("status")
            if status == "ok":
                w = float(self.setting("miss_weight"))
                ir, misses = int(res["ir"]), int(res["i1_misses"])
                p = self.profile.metric_prefix
                lines = [f"{p} metric name=ic_cost value={ir + w * misses:.0f} unit=events better=lower",
                         f"{p} metric name=ic_ir value={ir} unit=instructions better=lower",
                         f"{p} metric name=ic_i1_misses value={misses} unit=misses better=lower"]
                text = "\n".join(["", f"# from the cache model (I1 {res.get('i1')}, {res.get('regions')} region(s)):",
                                  *lines, ""])
                output += text
                with open(log, "a") as f:
                    f.write(text)
            elif status == "no-begin":
                note = (f"the guest never ran the cache model's begin marker ({MARKERS}): "
                        f"put the markers around the benchmark (native/qemu-icache/icache.c)")
            elif status == "no-end":
                note = (f"the guest ran the cache model's begin marker but not its end marker ({MARKERS}): "
                        f"put the end marker after the benchmark")
            else:
                note = f"the cache model wrote no result ({out}); see the log"
        r = self.finish(output, code, timed_out, secs, log)
        if note and (r.status == "ok" or r.message == "no metric lines in the output"):
            r.status, r.message, r.samples = "failed", note, []
        if not self.setting("guest_metrics"):
            r.samples = [x for x in r.samples if x.metric in METRICS]
        return r

    def describe(self) -> str:
        size, assoc, line = self.i1
        return f"{self.spec.name} (qemu-icache, tcg: I1 {size},{assoc},{line} model, -icount {self.setting('icount')})"
