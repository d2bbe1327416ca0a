"""docs/guide/internals.md, "Linux: the relink": a full Linux build vs a relink per layout, side by side in one run.

    python3 -m bench.linux_relink [--workdir DIR] [--layouts default,sorted,aligned,random:1,function-aligned,padded]

The full build unpacks Debian's linux-source-6.1, applies the quirks, configures and
compiles (LLVM=1, tinyconfig + kernels/linux/config.fragment) in a fresh work directory.
Each relink renders the layout, relinks vmlinux through kbuild (three lld passes for
kallsyms) and checks the placement of every text section.  Prints each time and the
ratio of the full build to the median relink.

Then the placement check of each relinked image, side by side: reading the image with
pyelftools one symbol at a time (``elfinfo.read_image_reference``, the reader the check
used before) and with the fast reader (``elfinfo.read_image``, numpy over whole tables),
each followed by the same ``placement.check``; best of --runs, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from layoutbench import build, elfinfo, layout, placement, profile, source


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", help="work directory (default: a fresh temporary one)")
    ap.add_argument("--layouts", default="default,sorted,aligned,random:1,function-aligned,padded")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3, help="runs of each placement check (best is shown)")
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
    times, variants = {}, []
    for name, seed in layout.parse_specs([a.layouts]):
        t0 = time.perf_counter()
        v = build.link_variant(objs, "vmlinux", name, seed)
        times[v.label] = time.perf_counter() - t0
        variants.append(v)
        print(f"relink {v.label:18} {times[v.label]:6.1f} s  ({'linked' if v.linked_now else 'reused'}, "
              f"placement checked, plan {v.plan_id})")
    med = statistics.median(times.values())
    print(f"median relink {med:.1f} s; ratio full build / relink: {full / med:.1f}x")

    objects = {o.path: o for o in objs.objects("vmlinux")}
    print(f"placement check (read the image + check every unit), best of {a.runs}:")
    print(f"  {'variant':18} {'symbols':>8} {'pyelftools':>11} {'fast reader':>12} {'ratio':>7}")
    for v in variants:
        plan = layout.LayoutPlan.from_json(v.plan_path.read_text())
        best = {}
        for reader in (elfinfo.read_image_reference, elfinfo.read_image) * a.runs:  # alternately
            t0 = time.perf_counter()
            img = reader(v.elf)
            placement.check(plan, objects, img)
            best[reader] = min(best.get(reader, float("inf")), time.perf_counter() - t0)
        before, after = best[elfinfo.read_image_reference], best[elfinfo.read_image]
        print(f"  {v.label:18} {len(img.columns['name']):>8} {before:>10.2f}s {after:>11.2f}s {before / after:>6.1f}x")


if __name__ == "__main__":
    main()
