"""docs/guide/internals.md's hostile-input table: every case module of bench/hostile (cli, elf, owned), every case run, counted.

Each module exposes ``cases(tmp: pathlib.Path) -> list[tuple[str, Callable[[], str]]]``; a case
runs one bad input and returns ``clean``, ``traceback``, ``wrong-success``, ``hang``, ``leak``,
``outside-write`` or ``verdict-lost``
(bench/hostile/__init__.py says what each means).  Printed per module and in total:

    python3 -m bench.hostile            # a table (from the checkout's top)
    python3 -m bench.hostile --json     # the same counts (and the unclean cases) as JSON
    python3 -m bench.hostile --only cli

Exit status 1 when any case is not clean.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import hostile

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("cli_cases", "elf_cases", "owned_cases")
COLUMNS = ("tried", "clean", "traceback", "wrong-success", "hang", "leak", "outside-write", "verdict-lost")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.hostile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    ap.add_argument("--only", action="append", default=[], help="run only this module (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    a = ap.parse_args()
    os.chdir(ROOT)
    names = [n for n in MODULES if not a.only or {n, n.removesuffix("_cases")} & set(a.only)]
    modules = [importlib.import_module(f"bench.hostile.{n}") for n in names]
    tmp = Path(tempfile.mkdtemp(prefix="lb-hostile-"))
    t0 = time.monotonic()
    report = hostile.run_all(modules, tmp)
    seconds = time.monotonic() - t0
    total = {c: sum(r[c] for r in report.values()) for c in COLUMNS}
    if a.json:
        print(json.dumps({"modules": report, "total": total, "seconds": round(seconds, 1)}, indent=1))
    else:
        w = max([len(n) for n in report] + [6])
        print(f"{'module':{w}}  " + "  ".join(f"{c:>13}" for c in COLUMNS))
        for n, r in report.items():
            print(f"{n:{w}}  " + "  ".join(f"{r[c]:>13}" for c in COLUMNS))
        print(f"{'total':{w}}  " + "  ".join(f"{total[c]:>13}" for c in COLUMNS))
        print(f"({seconds:.0f} s)")
        for n, r in report.items():
            for b in r["bad"]:
                print(f"  {n}: {b['outcome']}: {b['case']}: {b.get('stderr', '')[-300:]!r}")
    if a.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if total["tried"] == total["clean"] else 1


if __name__ == "__main__":
    sys.exit(main())
