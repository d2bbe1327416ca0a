"""The native helper in ``native/symdiff``: the diff of two ELF files, as JSON.

Starting Python and importing numpy alone costs about twice what ``llvm-nm -n A; llvm-nm -n B;
diff`` takes on a 32k-symbol kernel, so the whole diff of two ELF files is done by a compiled
program (Rust, std only: ``native/symdiff``, built by setup.sh with ``cargo build --release``)
that prints the same JSON, byte for byte, as :mod:`layoutbench.symdiff`.  This module is imported
before anything heavy (it uses only ``os`` and ``sys``): for ``symdiff OLD NEW --json``, when the
helper is built and not older than its sources, the process becomes the helper (``os.execve``,
:func:`fast_path`).  For the text, the command runs the helper (:func:`diff_json`) and renders its
JSON with :mod:`layoutbench.symdiff.render` (:func:`layoutbench.symdiff.files.text_fast_path`): one
renderer for both paths.  This module imports nothing of the package.  Whatever the helper does
not handle itself (an unusual plan, a file cut short or not ELF...) it hands back before
printing anything: under :func:`fast_path` by running ``python -m layoutbench.cli`` with
``LAYOUTBENCH_NATIVE=0``, under :func:`diff_json` by exit status 125 (the Python path then diffs).
``LAYOUTBENCH_NATIVE=0`` forces the Python path; ``LAYOUTBENCH_NATIVE_TRACE=1`` makes the helper say
on stderr that it ran.
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


#: the helper already handed this command's pair back (or is not built): the Python path answers,
#: without running the helper a second time
_declined = False


def wanted() -> bool:
    """Not turned off (``LAYOUTBENCH_NATIVE=0``), and not declined already by this command."""
    return not _declined and os.environ.get("LAYOUTBENCH_NATIVE", "1") != "0"


def _files(args: list[str], flag: str) -> list[str] | None:
    """OLD and NEW of ``symdiff OLD NEW`` with at most ``flag`` beside them (in any order), when both
    are existing files; else None."""
    if not args or args[0] != "symdiff":
        return None
    pos = [a for a in args[1:] if a != flag]
    ok = len(pos) == 2 and not any(a.startswith("-") for a in pos) and all(os.path.isfile(p) for p in pos)
    return pos if ok else None


def supported(args: list[str]) -> bool:
    """``symdiff OLD NEW --json`` (in any order) with OLD and NEW existing files: the helper prints it."""
    return "--json" in args[1:] and _files(args, "--json") is not None


def diff_json(old: str, new: str, symbols: bool = True, own_only: bool = False) -> dict | None:
    """The helper's diff of the ELF files ``old`` and ``new`` (its ``--json``, parsed; without
    ``symbols`` its list of symbols is empty; ``own_only``: without the symbols of the toolchain's
    archives and crt files); None when it is not built, turned off, or hands the
    pair back (the Python path answers then).  Under ``LAYOUTBENCH_NATIVE_TRACE`` what it says on
    stderr is passed on."""
    exe = binary() if wanted() else None
    if exe is None or not (os.path.isfile(old) and os.path.isfile(new)):
        return None
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "LAYOUTBENCH_PYTHON"}
    env["LAYOUTBENCH_ROOT"] = ROOT
    flags = [*([] if symbols else ["--no-symbols"]), *(["--own-only"] if own_only else [])]
    p = subprocess.run([exe, old, new, "--json", *flags], env=env, capture_output=True)
    if os.environ.get("LAYOUTBENCH_NATIVE_TRACE", "0") not in ("", "0"):
        sys.stderr.write(p.stderr.decode(errors="replace"))
    if p.returncode not in (0, 1):  # 125: handed back; anything else (a crash): the Python path
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:  # not the helper's JSON (cut short): the Python path answers
        return None


def text_pair(args: list[str]) -> list[str] | None:
    """OLD and NEW of ``symdiff OLD NEW [--symbols]`` of two existing files (whose text the front end
    renders from the helper's JSON: :func:`layoutbench.symdiff.files.text_fast_path`), when the helper
    is wanted; else None."""
    return _files(args, "--symbols") if wanted() else None


def decline() -> None:
    """The helper gave this command no diff: the Python path answers, without running it again."""
    global _declined
    _declined = True


def fast_path(args: list[str]) -> None:
    """Answer ``symdiff OLD NEW --json`` of two ELF files with the native helper: become it; return
    when it cannot (the command line answers)."""
    if not wanted():
        return
    exe = binary() if supported(args) else None
    if exe is None:
        return
    env = {**os.environ, "LAYOUTBENCH_PYTHON": sys.executable, "LAYOUTBENCH_ROOT": ROOT}
    sys.stdout.flush()
    os.execve(exe, [exe, *args[1:]], env)

