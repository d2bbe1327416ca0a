"""The ``layoutbench`` command: parse, call one function, print. No logic lives here.

The commands live in :mod:`layoutbench.commands`, one module a job; this module is the entry
``python -m layoutbench.cli`` and the name ``main`` the rest of the code imports.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # python -m layoutbench.cli: symdiff of two ELF files goes native before any import
    from layoutbench import native

    native.fast_path(sys.argv[1:])

from .commands import main  # noqa: E402

__all__ = ["main"]

if __name__ == "__main__":
    main()
