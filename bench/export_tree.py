"""docs/guide/internals.md, "Exporting a commit": what writing a commit's tree for its build costs,
side by side in one run: ``source.export`` (``git archive`` streamed into ``tar -x``) beside the
same tree read into memory whole through GitPython and unpacked with Python's tarfile.

    python3 -m bench.export_tree REPO COMMIT [--repeat 3]

Prints the median seconds of each and their ratio.  Each export starts after the page cache's
dirty pages of the one before are written out (``os.sync``), the two ways alternating.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

from layoutbench import profile, source

ROOT = Path(__file__).resolve().parent.parent


def in_memory(co: source.Checkout, dest: Path) -> None:
    """The tree as one tar in memory (GitPython), unpacked by tarfile."""
    buf = io.BytesIO()
    source.git.Repo(co.repo).archive(buf, treeish=co.commit, format="tar")
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        tar.extractall(dest, filter="tar")


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo")
    ap.add_argument("commit")
    ap.add_argument("--repeat", type=int, default=3)
    o = ap.parse_args()
    repo = Path(o.repo).resolve()
    co = source.resolve(profile.load("linux"), o.commit, str(repo))  # a commit of the Linux profile's history
    ways = {"source.export (git archive | tar -x)": lambda d: source.export(co, d),
            "in memory (GitPython + tarfile)": lambda d: in_memory(co, d)}
    times: dict[str, list[float]] = {w: [] for w in ways}
    with tempfile.TemporaryDirectory(dir=repo.parent) as tmp:
        for i in range(o.repeat):
            for name, fn in ways.items():  # alternating: a slow spell of the disk falls on both
                dest = Path(tmp) / "t"
                os.sync()
                t0 = time.monotonic()
                fn(dest)
                times[name].append(time.monotonic() - t0)
                shutil.rmtree(dest)
    files = int(source.git.Repo(repo).git.ls_tree("-r", "--name-only", co.commit).count("\n")) + 1
    print(f"{co.short} of {repo}: {files} files, {o.repeat} exports each way")
    med = {w: statistics.median(x) for w, x in times.items()}
    for w in ways:
        print(f"  {w:40s} median {med[w]:7.2f} s  ({', '.join(f'{x:.1f}' for x in times[w])})")
    a, b = med.values()
    print(f"  ratio in memory / export: {b / a:.2f}x")


if __name__ == "__main__":
    main()
