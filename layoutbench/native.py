"""The fast path of ``layoutbench symdiff OLD NEW [--json]``: the native helper in ``native/symdiff``.

Starting Python and importing numpy alone costs about twice what ``llvm-nm -n A; llvm-nm -n B;
diff`` takes on a 32k-symbol kernel, so the whole diff of two ELF files is done by a compiled
program (Rust, std only: ``native/symdiff``, built by setup.sh with ``cargo build --release``)
that prints the same JSON and text, byte for byte, as :mod:`layoutbench.symdiff`.  This module is imported
before anything heavy (it uses only ``os`` and ``sys``): when the command line is one the helper
supports and the helper is built and not older than its sources, the process becomes the helper
(``os.execve``).  Whatever the helper does not handle itself (another ELF flavour, an unusual
plan, a file cut short, text for a terminal...) it hands back before printing anything, by running
``python -m layoutbench.cli`` with ``LAYOUTBENCH_NATIVE=0``.  ``LAYOUTBENCH_NATIVE=0`` forces the
Python path; ``LAYOUTBENCH_NATIVE_TRACE=1`` makes the helper say on stderr that it ran.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "native", "symdiff")
BINARY = os.path.join(CRATE, "target", "release", "layoutbench-symdiff")


def _sources() -> list[str]:
    src = os.path.join(CRATE, "src")
    names = sorted(os.listdir(src)) if os.path.isdir(src) else []
    return [os.path.join(CRATE, "Cargo.toml")] + [os.path.join(src, n) for n in names if n.endswith(".rs")]


def binary() -> str | None:
    """The helper, or None when it is not built or older than one of its sources."""
    try:
        built = os.stat(BINARY).st_mtime_ns
        return BINARY if all(os.stat(p).st_mtime_ns <= built for p in _sources()) else None
    except OSError:
        return None


def supported(args: list[str]) -> bool:
    """``symdiff OLD NEW [--json]`` (in any order) with OLD and NEW existing files."""
    if not args or args[0] != "symdiff":
        return False
    pos = [a for a in args[1:] if a != "--json"]
    return len(pos) == 2 and not any(a.startswith("-") for a in pos) and all(os.path.isfile(p) for p in pos)


def fast_path(args: list[str]) -> None:
    """Become the native helper when it can answer this command line; return otherwise."""
    if os.environ.get("LAYOUTBENCH_NATIVE", "1") == "0" or not supported(args):
        return
    exe = binary()
    if exe is None:
        return
    env = {**os.environ, "LAYOUTBENCH_PYTHON": sys.executable, "LAYOUTBENCH_ROOT": ROOT}
    sys.stdout.flush()
    os.execve(exe, [exe, *args[1:]], env)

