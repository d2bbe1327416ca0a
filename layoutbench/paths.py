"""Where layoutbench finds its own data and keeps its work."""

import os
from pathlib import Path

#: the repository (or installed tree) that holds kernels/, linker-scripts/, quirks/
ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
LINKER_SCRIPTS = ROOT / "linker-scripts"
QUIRKS = ROOT / "quirks"


def workdir() -> Path:
    """The working directory for caches, images and the store.

    ``$LAYOUTBENCH_DIR`` or ``./.layoutbench``.
    """
    return Path(os.environ.get("LAYOUTBENCH_DIR", ".layoutbench")).resolve()
