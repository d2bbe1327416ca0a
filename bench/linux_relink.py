#!/usr/bin/env python3
"""Linux: full build vs relink per layout, measured side by side in one run.

    python bench/linux_relink.py [--workdir DIR] [--layouts default,sorted,aligned,random:1,function-aligned,padded]

The full build unpacks Debian's linux-source-6.1, applies the quirks, configures and
compiles (LLVM=1, tinyconfig + kernels/linux/config.fragment) in a fresh work directory.
Each relink renders the layout, relinks vmlinux through kbuild (three lld passes for
kallsyms) and checks the placement of every text section.  Prints each time and the
ratio of the full build to the median relink.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from layoutbench import build, layout, profile, source  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", help="work directory (default: a fresh temporary one)")
    ap.add_argument("--layouts", default="default,sorted,aligned,random:1,function-aligned,padded")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    tmp = None
    if a.workdir is None:
        tmp = tempfile.TemporaryDirectory()
        a.workdir = tmp.name
    os.environ["LAYOUTBENCH_DIR"] = str(Path(a.workdir).resolve())

    prof = profile.load("linux")
    co = source.resolve(prof, None)
    t0 = time.perf_counter()
    objs = build.compile_objects(prof, co, a.jobs, print)
    full = time.perf_counter() - t0
    print(f"full build (unpack + quirks + configure + compile + default link): {full:.1f} s"
          + ("" if objs.compiled_now else "  (objects were cached: use a fresh --workdir)"))
    times = {}
    for name, seed in layout.parse_specs([a.layouts]):
        t0 = time.perf_counter()
        v = build.link_variant(objs, "vmlinux", name, seed)
        times[v.label] = time.perf_counter() - t0
        print(f"relink {v.label:18} {times[v.label]:6.1f} s  (placement checked, plan {v.plan_id})")
    med = statistics.median(times.values())
    print(f"median relink {med:.1f} s; ratio full build / relink: {full / med:.1f}x")


if __name__ == "__main__":
    main()
