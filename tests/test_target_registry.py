"""The target registry: kinds looked up in one table, bad or missing settings refused in one
line, the TCG warning only for timings, remote targets' modules imported only when used."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from layoutbench import profile, targets
from layoutbench.errors import LayoutbenchError

ROOT = Path(__file__).resolve().parent.parent


def _with_target(kind: str, **settings) -> profile.Profile:
    prof = profile.load("minikernel")
    spec = profile.Target("t", kind, "hosted", 30.0, settings)
    return dataclasses.replace(prof, targets={**prof.targets, "t": spec})


def test_target_kinds_are_looked_up_in_one_table():
    assert set(targets.KINDS) == {"local", "qemu", "qemu-icache", "cachegrind", "ssh", "labgrid", "labgrid-places"}
    t = targets.make(profile.load("minikernel"), "local", timeout=7)
    assert type(t).__name__ == "LocalTarget" and t.kind == "local" and t.timeout == 7
    with pytest.raises(LayoutbenchError, match="target t has unknown kind 'telnet'; kinds are: local, qemu"):
        targets.make(_with_target("telnet"), "t")


@pytest.mark.parametrize("settings,says", [({"i1": "4096,3,64"}, "must be powers of two"),
                                            ({"i1": "4k"}, 'i1 must be "size,assoc,line"'),
                                            ({"accel": "kvm"}, "runs under TCG only")])
def test_the_cache_model_refuses_bad_settings_in_one_line(settings, says):
    with pytest.raises(LayoutbenchError, match=says):
        targets.make(_with_target("qemu-icache", **settings), "t")


def test_the_tcg_warning_is_for_timings_not_for_the_cache_models_counts():
    from layoutbench.compare import emulation_warning

    assert emulation_warning(["tcg"], ["ic_cost", "ic_i1_misses"]) is None
    assert "time the emulator" in emulation_warning(["tcg"], ["ic_cost", "cycles_per_packet"])
    assert "time the emulator" in emulation_warning(["tcg"], [])
    assert emulation_warning(["kvm"], ["cycles_per_packet"]) is None


@pytest.mark.parametrize("kind,setting,what", [("ssh", "host", "a host name or an alias from ~/.ssh/config"),
                                               ("labgrid", "env", "a labgrid environment YAML")])
def test_a_missing_required_setting_is_one_line_naming_it(kind, setting, what):
    with pytest.raises(LayoutbenchError) as e:
        targets.make(_with_target(kind), "t")
    assert str(e.value).endswith(f"kernel.toml: [targets.t] kind {kind} needs '{setting}' ({what})")


def test_remote_target_modules_are_imported_only_when_used():
    code = ("import sys; from layoutbench import profile, targets; "
            "targets.make(profile.load('minikernel'), 'cachegrind'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncssh', 'labgrid') "
            "or m in ('layoutbench.targets.ssh', 'layoutbench.targets.labgrid', 'layoutbench.targets.qemu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
