"""docs/guide/internals.md, "The placement check": what recording the data globals' objects
beside an image costs a link, on a real image and its objects, side by side.

    python3 -m bench.units_record WORK/images/K/<commit>-<config>/I/L-S [--repeat 5]

Times reading every linked object as the link's check does (elfinfo.read_object, in a fresh
process: nothing cached) beside the part of it that reads their data globals (for the record:
elfinfo.read_data_globals over the symbol tables already read), and writing the image's ``units.json`` (into a copy of its folder) without and
with the data globals.  Prints the median of each, their ratio, and the record's size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layoutbench import elfinfo, placement, reuse
from layoutbench.layout import LayoutPlan

ROOT = Path(__file__).resolve().parent.parent

READ = """
import sys, time
from pathlib import Path
from layoutbench import elfinfo
objdir = Path(sys.argv[1])
paths = [(objdir / w[-1], w[0]) for w in (line.split() for line in Path(sys.argv[2]).read_text().splitlines()) if w]
if sys.argv[3] == "objects":
    t = time.perf_counter()
    for p, name in paths:
        elfinfo.read_object(p, name)
else:  # the symbol tables as read_object has them, then the data globals' part alone
    tabs = [(elf, *elf.symtab()) for elf in (elfinfo.read_elf(p) for p, _ in paths)]
    t = time.perf_counter()
    for elf, raw, strtab in tabs:
        elfinfo.read_data_globals(raw[1:], strtab, elfinfo.data_sections(elf))
print(time.perf_counter() - t)
"""


def read_time(what: str, objdir: Path, listing: Path) -> float:
    out = subprocess.run([sys.executable, "-c", READ, str(objdir), str(listing), what], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tempfile.gettempdir())
    return float(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant", type=Path, help="a linked variant's folder (image.elf and plan.json)")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()

    elf = a.variant / "image.elf"
    plan = LayoutPlan.from_dict(json.loads((a.variant / "plan.json").read_text()))
    work, key = elf.resolve().parents[5], elf.resolve().parents[2].name
    objdir = work / "objects" / plan.kernel / key / "obj"
    listing = next(objdir.glob("*.objs"))
    entries = dict(reuse.object_entries(listing))
    names = dict.fromkeys([*(u.object for units in plan.groups.values() for u in units), *entries])
    objects = {n: elfinfo.read_object(objdir / entries.get(n, n), n) for n in names}
    print(f"{elf}: {len(objects)} objects, {sum(len(o.data_globals) for o in objects.values())} data globals, "
          f"{len(placement.data_owners(objects))} with one object")

    reads = {what: statistics.median(read_time(what, objdir, listing) for _ in range(a.repeat))
             for what in ("objects", "data globals")}
    print(f"read every linked object: {1000 * reads['objects']:.0f} ms; of which reading their data globals "
          f"{1000 * reads['data globals']:.0f} ms  "
          f"ratio {reads['data globals'] / reads['objects']:.2f}")

    with tempfile.TemporaryDirectory() as d:
        copy = Path(d) / "image.elf"
        shutil.copyfile(elf, copy)
        info = elfinfo.read_image(copy)
        where = placement.replay(plan, objects, info)
        assert not where.problems, where.problems[0]
        times, sizes = {}, {}
        for name, objs in (("without globals", None), ("with globals", objects)):
            runs = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                placement.record(copy, plan, where, info, objs)
                runs.append(time.perf_counter() - t)
            times[name], sizes[name] = statistics.median(runs), (Path(d) / placement.UNITS).stat().st_size
    print("write units.json: " + "  ".join(f"{n} {1000 * s:.1f} ms ({sizes[n]} bytes)" for n, s in times.items())
          + f"  ratio {times['with globals'] / times['without globals']:.2f}")


if __name__ == "__main__":
    main()
