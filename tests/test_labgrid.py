"""The ``labgrid`` target: real labgrid (from PyPI) boots the minikernel with its QEMUDriver
(TCG, isa-debug-exit) through layoutbench's strategy, and the metrics come from labgrid's console."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from conftest import ROOT, lb, require, require_module
from bench.labs.remote import profile

require_module("labgrid")
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _qemu():
    require(None if shutil.which("qemu-system-x86_64") else "qemu-system-x86_64 is not installed")

ENV = ROOT / "kernels" / "minikernel" / "labgrid-qemu.yaml"


def test_compare_through_labgrid_qemu_driver(workdir, tmp_path):
    toml = profile(tmp_path / "prof", f"""[targets.lab]
kind = "labgrid"
image = "kernel"
timeout = 120
env = "{ENV}"
boot_args = "iterations=2000"
""")
    db = tmp_path / "r.sqlite"
    rep = json.loads(lb("compare", str(toml), "--layouts", "default,random:1", "--runs", "1", "--target", "lab",
                        "--store", str(db), "--json").stdout)
    assert rep["runs"] == {"ok": 2} and rep["accelerators"] == ["tcg"]
    assert rep["host"].startswith("labgrid:main@")
    assert any("QEMU TCG" in w for w in rep["warnings"])
    with sqlite3.connect(db) as c:
        runs = c.execute("SELECT status, exit_code, log_path FROM runs").fetchall()
        metrics = {m for (m,) in c.execute("SELECT DISTINCT metric FROM samples")}
    assert {(s, code) for s, code, _ in runs} == {("ok", 33)}  # QEMU ended by isa-debug-exit
    assert "cycles_per_packet" in metrics
    log = open(runs[0][2]).read()
    assert log.startswith("# labgrid ") and "platform=qemu" in log and "LAYOUTBENCH end status=ok" in log


def test_a_kernel_that_never_ends_is_a_timeout(workdir, tmp_path):
    """A console that never prints the end line: killed at the timeout, and QEMU is gone afterwards."""
    from layoutbench import build, profile as profmod, source, targets

    toml = profile(tmp_path / "prof", f"""[targets.lab]
kind = "labgrid"
image = "kernel"
timeout = 3
env = "{ENV}"
boot_args = "iterations=100000000"
""")
    prof = profmod.load(str(toml))
    objs = build.compile_objects(prof, source.resolve(prof, None, None, None))
    v = build.link_variant(objs, "kernel", "default")
    r = targets.make(prof, "lab").run(v.elf, tmp_path / "run.log")
    assert r.status == "timeout" and r.samples == []
    import subprocess
    assert str(v.elf) not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
