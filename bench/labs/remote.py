"""A minikernel profile with remote targets (ssh, labgrid, OpenBSD), and the farm's cachegrind
command: what the remote-target tests and bench/farm_bisect.py write out."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MINI_SRC = ROOT / "kernels" / "minikernel" / "src"


def profile(path: Path, targets: str) -> Path:
    """A kernel.toml for the minikernel source with the given [targets.*] tables."""
    base = (ROOT / "kernels" / "minikernel" / "kernel.toml").read_text()
    head = re.sub(r"(?m)^default_target\s*=.*$", "", base.split("[targets.")[0]).replace('repo = "../.."', "").replace(
        'subdir = "kernels/minikernel/src"', f'tree = "{MINI_SRC}"')
    path.mkdir(parents=True, exist_ok=True)
    (path / "kernel.toml").write_text(head + targets + '\n[metrics]\nprefix = "LAYOUTBENCH"\n'
                                      'default = "cycles_per_packet"\n')
    return path / "kernel.toml"


def ssh_target(name: str, lab, alias: str, tmp: Path, **extra) -> str:
    """A ``[targets.NAME]`` table of kind ssh for the hosted minikernel on ``alias``, a machine of the
    sshd ``lab`` (:class:`bench.labs.sshd.Lab`), with the settings ``extra``."""
    lines = [f"[targets.{name}]", 'kind = "ssh"', 'image = "hosted"', "timeout = 60", f'host = "{alias}"',
             f'ssh_config = "{lab.config}"', f'remote_dir = "{tmp}/remote-{name}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n\n"


#: the benchmark under cachegrind on the remote side, its summary turned into the cg_cost metric
CG = ("out=$(valgrind --tool=cachegrind --cache-sim=yes --I1=4096,2,64 --D1=32768,8,64 --LL=1048576,16,64 "
      "--cachegrind-out-file=/dev/null \"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; "
      "printf '%s\\n' \"$out\" | awk '/ I *refs:/{gsub(\",\",\"\",$NF); ir=$NF} / I1 *misses:/{gsub(\",\",\"\",$NF); "
      "m=$NF} END{if (ir != \"\") printf \"LAYOUTBENCH metric name=cg_cost value=%d unit=events better=lower\\n\", "
      "ir + 20 * m}'; exit $rc")
COMMAND = ["sh", "-c", CG, "cg", "{image}"]
ARGS = "iterations=300"


def farm_profile(lab, tmp: Path) -> Path:
    """A profile of one ssh target a machine of ``lab`` (``m0``, ``m1``, ...), each running COMMAND."""
    return profile(tmp / "prof", "".join(ssh_target(f"m{i}", lab, f"bench{i}", tmp, command=COMMAND)
                                         for i in range(len(lab.servers))))
