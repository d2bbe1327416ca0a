"""``qemu``: boot a kernel image with qemu-system-x86_64 and read its serial console.

KVM is used only where real hardware virtualization is loaded (``kvm_intel`` or
``kvm_amd``).  The ``kvm_pvm`` software hypervisor that some cloud machines expose
as /dev/kvm crashes guests and runs them ~1000x slow, so it is never used: such
machines boot with TCG, which proves an image runs but times the emulator.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import Target
from ..errors import LayoutbenchError


def detect_accelerator() -> tuple[str, str]:
    """("kvm" | "tcg", why)."""
    mods = Path("/sys/module")
    has = {m for m in ("kvm_intel", "kvm_amd", "kvm_pvm") if (mods / m).exists()}
    if "kvm_pvm" in has and not has & {"kvm_intel", "kvm_amd"}:
        return "tcg", "/dev/kvm is the kvm_pvm software hypervisor, which breaks guests: using TCG"
    if has & {"kvm_intel", "kvm_amd"}:
        if os.access("/dev/kvm", os.R_OK | os.W_OK):
            return "kvm", f"{sorted(has & {'kvm_intel', 'kvm_amd'})[0]} is loaded"
        return "tcg", "kvm is loaded but /dev/kvm is not accessible: using TCG"
    return "tcg", "no kvm_intel/kvm_amd: using TCG (emulation)"


def host_tsc_khz() -> int:
    """The host's TSC frequency in kHz, for a guest that cannot calibrate its own under TCG
    (Linux without ACPI: ``tsc_early_khz={host_tsc_khz}`` in the target's ``append``)."""
    f = Path("/sys/devices/system/cpu/cpu0/tsc_freq_khz")
    if f.is_file():
        return int(f.read_text().strip())
    try:
        import re
        import subprocess
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"tsc: (?:Refined TSC clocksource calibration|Detected): ([0-9.]+) MHz", log)
        if m:
            return int(float(m.group(1)) * 1000)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("cpu MHz"):
            return int(float(line.split(":")[1]) * 1000)
    raise LayoutbenchError("cannot tell the host's TSC frequency for {host_tsc_khz}; write the value into append")


class QemuTarget(Target):
    """Settings: ``append`` (kernel command line), ``memory``, ``machine``, ``cpu``, ``accel``
    (auto, kvm, tcg), ``initrd``, ``debug_exit`` (add isa-debug-exit at 0xf4; default true),
    ``success_exit``, ``qemu`` (binary), ``extra_args``."""

    kind = "qemu"
    run_noun = "boots+runs"  #: every run boots the image: a rerun costs a boot too
    success_exit = 33

    def __init__(self, spec, profile):
        super().__init__(spec, profile)
        want = str(spec.settings.get("accel", os.environ.get("LAYOUTBENCH_ACCEL", "auto")))
        auto, self.why = detect_accelerator()
        if want == "auto":
            self._accel = auto
        elif want in ("kvm", "tcg"):
            if want == "kvm" and auto != "kvm":
                raise LayoutbenchError(f"target {spec.name}: accel=kvm asked, but {self.why}")
            self._accel, self.why = want, f"accel={want} asked"
        else:
            raise LayoutbenchError(f"target {spec.name}: accel must be auto, kvm or tcg, not {want!r}")
        from ..validate import memory_bytes

        need, have = memory_bytes(spec.settings.get("memory", "128M")), os.sysconf("SC_PHYS_PAGES") * os.sysconf(
            "SC_PAGE_SIZE")
        if need is not None and need > have:  # QEMU would fail to allocate it at every boot
            raise LayoutbenchError(f"{profile.path}: [targets.{spec.name}] memory = {spec.settings['memory']!r} is "
                                   f"more than this machine has ({have >> 20} MiB); give a smaller guest memory")

    @property
    def accelerator(self) -> str:
        return self._accel

    def command(self, image: Path, extra: list[str]) -> list[str]:
        s = self.spec.settings
        kvm = self._accel == "kvm"
        cmd = [s.get("qemu", "qemu-system-x86_64"), "-accel", self._accel,
               "-machine", s.get("machine", "q35"), "-m", str(s.get("memory", "128M")),
               "-cpu", s.get("cpu", "host" if kvm else "max"),
               "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
               "-kernel", str(image)]
        if s.get("debug_exit", True):
            cmd += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
        if s.get("initrd"):
            initrd = Path(str(s["initrd"]).replace("{image_dir}", str(image.parent)))
            cmd += ["-initrd", str(initrd)]
        append = " ".join([str(s.get("append", "")), *extra]).strip()
        if "{host_tsc_khz}" in append:
            append = append.replace("{host_tsc_khz}", str(host_tsc_khz()))
        if append:
            cmd += ["-append", append]
        return cmd + [str(a) for a in s.get("extra_args", [])]

    def describe(self) -> str:
        return f"{self.spec.name} (qemu, {self._accel}: {self.why})"
