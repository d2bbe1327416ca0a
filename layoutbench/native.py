"""The native helper in ``native/symdiff``: the diff of two ELF files, as JSON -- the diff's one
implementation.

Starting Python and importing numpy alone costs about twice what ``llvm-nm -n A; llvm-nm -n B;
diff`` takes on a 32k-symbol kernel, so the whole diff of two ELF files is done by a compiled
program (Rust, std only: ``native/symdiff``, built by setup.sh with ``cargo build --release``, or
here on first use when cargo is installed) that prints the diff as JSON.  This module is imported
before anything heavy (it uses only ``os`` and ``sys``): for ``symdiff OLD NEW --json`` the process
becomes the helper (``os.execve``, :func:`fast_path`).  Everything else runs it (:func:`diff_json`)
and renders its JSON with :mod:`layoutbench.symdiff.render`
(:func:`layoutbench.symdiff.files.text_fast_path` for the text): one renderer.  This module imports
nothing of the package.  The helper says its own errors in one line (exit 2: :class:`Failed`); a
file it cannot diff as a file (not ELF, cut short, corrupt, another machine: exit 125,
:class:`Unreadable`) is worded by the front end with the package's ELF reader
(:func:`layoutbench.symdiff.files.unreadable`): under :func:`fast_path` the helper runs ``python -m
layoutbench.cli`` in its place with ``LAYOUTBENCH_NATIVE_EXEC=0`` (run the helper, do not become it).
``LAYOUTBENCH_NATIVE_TRACE=1`` makes the helper say on stderr what it does and when.
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


class Failed(Exception):
    """The helper's one-line error (its exit 2), or it is not built and cannot be."""


class Unreadable(Exception):
    """OLD or NEW cannot be diffed as a file (the helper's exit 125): why, in the helper's words."""


def binary() -> str | None:
    """The helper, or None when it is not built or older than one of its sources."""
    try:
        built = os.stat(BINARY).st_mtime_ns
        return BINARY if all(os.stat(p).st_mtime_ns <= built for p in _sources()) else None
    except OSError:
        return None


def built() -> str:
    """The helper, built first when it is missing or older than its sources (cargo, offline: the
    crate uses std only); :class:`Failed` when it cannot be."""
    exe = binary()
    if exe is not None:
        return exe
    import shutil
    import subprocess

    cargo = shutil.which("cargo")
    if cargo is None:
        raise Failed("the symdiff helper (native/symdiff) is not built and there is no cargo to build it: "
                     "run ./setup.sh (it installs Debian's cargo and builds the helper)")
    sys.stderr.write("layoutbench: building the symdiff helper (native/symdiff, once)\n")
    p = subprocess.run([cargo, "build", "--release", "--offline", "--quiet", "--manifest-path",
                        os.path.join(CRATE, "Cargo.toml")], capture_output=True, text=True)
    exe = binary()
    if p.returncode != 0 or exe is None:
        first = next((ln.strip() for ln in p.stderr.splitlines() if ln.strip()), f"exit {p.returncode}")
        raise Failed(f"cannot build the symdiff helper (cargo build in {CRATE}): {first}")
    return exe


#: the error the helper gave for this command's pair, when the text's fast path asked first: the
#: command says it, without running the helper a second time
_declined: Exception | None = None


def _exec_wanted() -> bool:
    """Becoming the helper is not turned off (``LAYOUTBENCH_NATIVE_EXEC=0``)."""
    return os.environ.get("LAYOUTBENCH_NATIVE_EXEC", "1") != "0"


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


def diff_json(old: str, new: str, symbols: bool = True, own_only: bool = False) -> dict:
    """The helper's diff of the ELF files ``old`` and ``new`` (its ``--json``, parsed; without
    ``symbols`` its list of symbols is empty; ``own_only``: without the symbols of the toolchain's
    archives and crt files).  Raises :class:`Unreadable` for a file it cannot diff, :class:`Failed`
    with its one line for anything else.  Under ``LAYOUTBENCH_NATIVE_TRACE`` what it says on stderr
    is passed on."""
    global _declined
    if _declined is not None:
        e, _declined = _declined, None
        raise e
    exe = built()
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "LAYOUTBENCH_PYTHON"}
    env["LAYOUTBENCH_ROOT"] = ROOT
    flags = [*([] if symbols else ["--no-symbols"]), *(["--own-only"] if own_only else [])]
    p = subprocess.run([exe, "--json", *flags, "--", old, new], env=env, capture_output=True)
    said = p.stderr.decode(errors="replace")
    if os.environ.get("LAYOUTBENCH_NATIVE_TRACE", "0") not in ("", "0"):
        sys.stderr.write(said)
    last = next((ln for ln in reversed(said.splitlines()) if ln.strip()), "")
    if p.returncode == 125:
        raise Unreadable(last.removeprefix("layoutbench-symdiff: "))
    if p.returncode < 0:  # a signal: the kernel's out-of-memory killer, a crash
        import signal

        name = signal.Signals(-p.returncode).name if -p.returncode in signal.valid_signals() else -p.returncode
        raise Failed(f"the symdiff helper was killed by {name} while diffing {old} and {new}; if the machine "
                     f"ran out of memory, free some and run the same command again")
    if p.returncode not in (0, 1):
        said_line = last.startswith("layoutbench: error: ")
        raise Failed(last.removeprefix("layoutbench: error: ") if said_line else
                     f"the symdiff helper failed on {old} and {new} (exit {p.returncode}: {last or 'nothing said'})")
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise Failed(f"the symdiff helper printed no diff for {old} and {new} (its output was cut short); "
                     f"run the same command again") from None


def text_pair(args: list[str]) -> list[str] | None:
    """OLD and NEW of ``symdiff OLD NEW [--symbols]`` of two existing files (whose text the front end
    renders from the helper's JSON: :func:`layoutbench.symdiff.files.text_fast_path`); else None."""
    return _files(args, "--symbols")


def decline(error: Exception) -> None:
    """The helper gave this command's pair no diff but ``error``: the command says it (the next
    :func:`diff_json` raises it), without running the helper again."""
    global _declined
    _declined = error


def fast_path(args: list[str]) -> None:
    """Answer ``symdiff OLD NEW --json`` of two ELF files with the native helper: become it; return
    when it cannot (the command line answers)."""
    if not _exec_wanted():
        return
    exe = binary() if supported(args) else None
    if exe is None:
        return
    env = {**os.environ, "LAYOUTBENCH_PYTHON": sys.executable, "LAYOUTBENCH_ROOT": ROOT}
    sys.stdout.flush()
    os.execve(exe, [exe, *args[1:]], env)

