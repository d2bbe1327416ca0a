"""docs/guide/internals.md, "Builds: compile once, link many": a full build vs a relink, side by side in one run.

    python3 -m bench.relink [--kernel minikernel] [--repeat 3]

A full build = export nothing, compile every object from scratch, link the default layout.
A relink = link one more layout (a new random seed) from the compiled objects, with the
placement check.  Prints the median of each and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from layoutbench import build, profile, source


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="minikernel")
    ap.add_argument("--image", default=None, help="image to link (default: the profile's first)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()

    prof = profile.load(a.kernel)
    image = a.image or next(iter(prof.images))
    full, relink = [], []
    for i in range(a.repeat):
        with tempfile.TemporaryDirectory() as d:
            os.environ["LAYOUTBENCH_DIR"] = d
            co = source.resolve(prof, None)
            t0 = time.perf_counter()
            objs = build.compile_objects(prof, co, a.jobs)
            build.link_variant(objs, image, "default", 0)
            full.append(time.perf_counter() - t0)
            for seed in range(1, 4):
                t0 = time.perf_counter()
                build.link_variant(objs, image, "random", 1000 * i + seed)
                relink.append(time.perf_counter() - t0)
    f, r = statistics.median(full), statistics.median(relink)
    print(f"kernel {prof.name}, image {image}, {a.jobs} jobs, {a.repeat} full builds, {len(relink)} relinks")
    print(f"full build (compile + link): median {f:8.3f} s  (min {min(full):.3f}, max {max(full):.3f})")
    print(f"relink (link + check):       median {r:8.3f} s  (min {min(relink):.3f}, max {max(relink):.3f})")
    print(f"ratio full/relink: {f / r:.1f}x")


if __name__ == "__main__":
    main()
