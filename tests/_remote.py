"""Helpers of the remote-target tests (ssh, labgrid, OpenBSD)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import MINI_SRC, ROOT


def profile(path: Path, targets: str) -> Path:
    """A kernel.toml for the minikernel source with the given [targets.*] tables."""
    base = (ROOT / "kernels" / "minikernel" / "kernel.toml").read_text()
    head = re.sub(r"(?m)^default_target\s*=.*$", "", base.split("[targets.")[0]).replace('repo = "../.."', "").replace(
        'subdir = "kernels/minikernel/src"', f'tree = "{MINI_SRC}"')
    path.mkdir(parents=True, exist_ok=True)
    (path / "kernel.toml").write_text(head + targets + '\n[metrics]\nprefix = "LAYOUTBENCH"\n'
                                      'default = "cycles_per_packet"\n')
    return path / "kernel.toml"
