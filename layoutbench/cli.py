"""The ``layoutbench`` command: parse, call one function, print. No logic lives here.

The commands live in :mod:`layoutbench.commands`, one module a job.  :func:`run` is the installed
``layoutbench`` command and ``python -m layoutbench.cli`` the same; ``main`` (the click group) is
imported from here by whoever needs it.  Both first try the native fast paths of ``symdiff`` of two ELF
files, before anything heavy is imported: ``--json`` becomes the helper (:func:`layoutbench.native.fast_path`),
the text is rendered from its JSON (:func:`layoutbench.symdiff.files.text_fast_path`).
"""

from __future__ import annotations

import sys

from . import native


def run() -> None:
    """The ``layoutbench`` command: the fast path, else the click command line."""
    native.fast_path(sys.argv[1:])
    if native.text_pair(sys.argv[1:]) is not None:  # (other commands do not import the diff's model)
        from .symdiff.files import text_fast_path

        text_fast_path(sys.argv[1:])
    from .commands import main

    main(prog_name="layoutbench")


def __getattr__(name: str):
    if name == "main":  # the click group, imported when asked (not at the command's start)
        from .commands import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    run()
