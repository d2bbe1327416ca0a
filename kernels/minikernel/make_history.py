#!/usr/bin/env python3
"""Make a git history of the minikernel to bisect: seeded, with one or two planted regressions.

    python kernels/minikernel/make_history.py /tmp/hist --commits 10 --seed 3 \\
        [--regression-at 6] [--regression-pct 3] [--layout-only 2,4,8] [--broken 3:5] [--no-regression]
    python kernels/minikernel/make_history.py /tmp/hist --commits 16 --seed 3 \\
        [--regression-at 5,11] --regression-pct 1,3

The repository gets the minikernel's tree at its top (use it with
``layoutbench ... --repo /tmp/hist``) and ``1 + commits`` commits:

- commit 0 imports the minikernel as it is (the GOOD end);
- ``layout-only`` commits change where code lands but not what it does: either an unused
  driver object (``dev/aa<n>_*.c``, linked early in the default order) or an unrelated
  cold function that grows;
- one ``regression`` commit makes the hot path slower: ``cksum_fold`` (called for every
  checksum of every packet) spins a calibrated number of extra iterations;
- or two (``--regression-pct 1,3``: two sizes, in order): the first adds the loop as above,
  the second raises its count by the second size's iterations (two change points in one
  function; their commits default to a seeded one in each of the second and third quarters);
- a ``broken`` range ``A:B``: commit A adds a helper with an unused variable, which
  ``-Werror`` turns into a build failure, and commit B (exclusive end) fixes it; a quirk
  file that repairs the range (``EXTRA_CFLAGS=-Wno-error=unused-variable``) and one with
  a patch are written beside the repository;
- every other commit is ordinary (comments and notes: the objects do not change).

Commit dates are fixed, so the same arguments give the same commit ids.  A manifest (JSON) is written to ``<repo>.manifest.json`` beside the repository and
returned by :func:`make_history`: every commit's kind, the regression, the layout-only
commits, the broken range and the quirk files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

SRC = Path(__file__).resolve().parent / "src"

#: extra ``cksum_fold`` iterations per 1% of cg_cost (hosted build, cachegrind target,
#: iterations=300, default link); measured with ``--calibrate``
ITERS_PER_PCT = 50.0

GIT_ENV = {"GIT_AUTHOR_NAME": "history", "GIT_AUTHOR_EMAIL": "history@example.org",
           "GIT_COMMITTER_NAME": "history", "GIT_COMMITTER_EMAIL": "history@example.org"}

DRIVERS = ["aaudio", "aacard", "aahci", "aamux", "aaled", "aapwm", "aaspi", "aatpm", "aausb", "aawdt", "aaxen",
           "aabt", "aacan", "aadma", "aagpio", "aai2c", "aaipmi", "aamdio", "aanvme", "aaphy"]

REGRESSION_OLD = "u16 cksum_fold(u64 sum)\n{\n"
#: the planted loop; clang-19 -O2 unrolls a constant count below 50 in full, and the unrolled empty
#: asm statements leave no instruction: without the pragma a step under 1% compiled to nothing
#: (0.5-0.8% planted, +0.0x% measured); from 50 up the machine code is the same with it or without
REGRESSION_NEW = ("u16 cksum_fold(u64 sum)\n{\n"
                  "\t/* fold the carries again before trusting them (paranoid) */\n"
                  "#pragma clang loop unroll(disable)\n"
                  "\tfor (u32 lb_i = 0; lb_i < {n}u; lb_i++)\n"
                  "\t\t__asm__ volatile(\"\" : \"+r\"(sum));\n")

BROKEN_FILE = "lib/bitmap.c"
BROKEN_ADD = """
/* count the bits set in the first n words */
u32 bitmap_weight_words(const u64 *map, u32 n)
{
	u32 w = 0;
	u32 unused_scratch;

	for (u32 i = 0; i < n; i++)
		for (u64 x = map[i]; x; x &= x - 1)
			w++;
	return w;
}
"""
BROKEN_FIXED = BROKEN_ADD.replace("\tu32 unused_scratch;\n", "")

QUIRK_ENV = """# quirks for the generated history {name}: its commits {a}..{b} do not build
# (an unused variable under -Werror); this makes them build without changing their code.
[[quirk]]
name = "unused-variable"
reason = "bitmap_weight_words() had an unused variable until {b_short}; -Werror rejects it"
from = "{a}"
until = "{b}"
env = {{ EXTRA_CFLAGS = "-Wno-error=unused-variable" }}
"""

QUIRK_PATCH = """# quirks for the generated history {name}: repair {a}..{b} with a patch instead
[[quirk]]
name = "unused-variable-patch"
reason = "bitmap_weight_words() had an unused variable until {b_short}"
from = "{a}"
until = "{b}"
patch = "{patch}"
"""


def _git(repo: Path, *args: str, when: int = 0) -> str:
    import os

    date = "2026-01-01T00:00:00Z" if not when else f"@{1767225600 + 60 * when} +0000"
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}).stdout.strip()


def _stores(rng: random.Random, n: int) -> str:
    return "".join(f"\tp[{i % 61}] = 0x{rng.getrandbits(32):08x}u;\n" for i in range(n))


def _add_to_list(makefile: Path, var: str, path: str) -> None:
    text = makefile.read_text()
    m = re.search(rf"^{var}\s*:=\s*", text, re.M)
    if m is None:
        raise RuntimeError(f"the Makefile has no {var} list; update make_history.py")
    makefile.write_text(text[:m.end()] + path + " " + text[m.end():])


def _pair(x, what: str) -> list | None:
    """Two values given as a list/tuple (two regressions); None for one value."""
    if not isinstance(x, (list, tuple)):
        return None
    if len(x) == 1:
        return None
    if len(x) != 2:
        raise ValueError(f"{what}: one or two values, not {len(x)}")
    return list(x)


def make_history(path, n_commits: int = 10, seed: int = 0, regression_at: int | list[int] | None = None,
                 regression_pct: float | list[float] = 3.0, layout_only: list[int] | None = None,
                 broken_range: tuple[int, int] | None = None, regression: bool = True,
                 src: Path = SRC) -> dict:
    """Create the repository at ``path`` (replaced if it exists) and return its manifest.

    Commit indices count from 1 (commit 0 is the import).  ``regression_at`` defaults to
    a seeded commit in the middle third; ``layout_only`` defaults to about 40% of the other
    commits, seeded; ``broken_range=(a, b)`` makes commits a..b-1 fail to build (b fixes it).

    Two regressions: ``regression_pct=[p1, p2]`` with ``regression_at=[i1, i2]`` (i1 < i2) or
    None (seeded): commit i1 plants a step of p1%, commit i2 a further step of p2%.
    """
    path = Path(path).resolve()
    rng = random.Random(seed)
    if path.exists():
        shutil.rmtree(path)
    shutil.copytree(src, path, ignore=shutil.ignore_patterns("*.o", "*.d"))
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "import minikernel")
    idx = list(range(1, n_commits + 1))
    pcts, ats = _pair(regression_pct, "regression_pct"), _pair(regression_at, "regression_at")
    if isinstance(regression_pct, (list, tuple)) and pcts is None:
        regression_pct = regression_pct[0]
    if isinstance(regression_at, (list, tuple)) and ats is None:
        regression_at = regression_at[0]
    if ats is not None and pcts is None:
        raise ValueError("two regression commits need two sizes (regression_pct=[p1, p2])")
    second = None  # (index, iterations) of the second regression
    if pcts is not None and regression:
        if ats is None:
            q = max(1, n_commits // 4)
            ats = [rng.randint(q, max(q, 2 * q)), 0]
            ats[1] = rng.randint(max(ats[0] + 1, 2 * q + 1), max(ats[0] + 1, 2 * q + 1, 3 * q))
        if not (1 <= ats[0] < ats[1] <= n_commits):
            raise ValueError(f"regression commits {ats[0]},{ats[1]} must satisfy 1 <= first < second <= {n_commits}")
        regression_at, regression_pct = ats[0], pcts[0]
        second = (ats[1], max(1, round(ITERS_PER_PCT * pcts[1])))
    if regression and regression_at is None:
        lo, hi = max(1, n_commits // 3), max(1, (2 * n_commits) // 3)
        regression_at = rng.randint(lo, max(lo, hi))
    if not regression:
        regression_at = None
    if layout_only is None:
        others = [i for i in idx if i != regression_at and (second is None or i != second[0])]
        layout_only = sorted(rng.sample(others, k=max(1, round(0.4 * len(others))))) if others else []
    if broken_range is not None:
        a, b = broken_range
        if not (1 <= a < b <= n_commits):
            raise ValueError(f"broken range {a}:{b} must satisfy 1 <= a < b <= {n_commits}")
    iters = max(1, round(ITERS_PER_PCT * regression_pct)) if regression_at else 0
    commits = [{"index": 0, "sha": _git(path, "rev-parse", "HEAD"), "kind": "import", "subject": "import minikernel"}]
    drivers = list(DRIVERS)
    rng.shuffle(drivers)
    grown = 0
    for i in idx:
        kinds = []
        subject = []
        if broken_range and i == broken_range[0]:
            f = path / BROKEN_FILE
            f.write_text(f.read_text() + BROKEN_ADD)
            kinds.append("breaks-build")
            subject.append("bitmap: add bitmap_weight_words()")
        if broken_range and i == broken_range[1]:
            f = path / BROKEN_FILE
            f.write_text(f.read_text().replace(BROKEN_ADD, BROKEN_FIXED))
            kinds.append("fixes-build")
            subject.append("bitmap: drop an unused variable (fixes the build)")
        if i == regression_at:
            f = path / "lib" / "checksum.c"
            text = f.read_text()
            if REGRESSION_OLD not in text:
                raise RuntimeError("lib/checksum.c has no cksum_fold() to slow down; update make_history.py")
            f.write_text(text.replace(REGRESSION_OLD, REGRESSION_NEW.replace("{n}", str(iters)), 1))
            kinds.append("regression")
            subject.append("checksum: fold carries defensively")
        if second is not None and i == second[0]:
            f = path / "lib" / "checksum.c"
            text = f.read_text()
            old = REGRESSION_NEW.replace("{n}", str(iters))
            if old not in text:
                raise RuntimeError("lib/checksum.c lost the first regression's loop; update make_history.py")
            f.write_text(text.replace(old, REGRESSION_NEW.replace("{n}", str(iters + second[1])), 1))
            kinds.append("regression")
            subject.append("checksum: fold the carries more times (paranoid)")
        if i in layout_only:
            if rng.random() < 0.5 and drivers:
                name = drivers.pop()
                rel = f"dev/{name}.c"
                (path / rel).write_text(
                    f"/* {rel} - {name} driver stub (not probed on this platform) */\n#include \"types.h\"\n\n"
                    f"void {name}_attach(volatile u32 *p)\n{{\n{_stores(rng, rng.randint(16, 160))}}}\n")
                _add_to_list(path / "Makefile", "DEV_SRCS", rel)
                kinds.append("layout-only:driver")
                subject.append(f"dev: add {name} driver stub")
            else:
                grown += 1
                f = path / "kern" / "cmdline.c"
                text = f.read_text()
                if "void cmdline_diag(volatile u32 *p)" not in text:
                    text += "\n/* command line diagnostics (cold) */\nvoid cmdline_diag(volatile u32 *p)\n{\n}\n"
                text = text.replace("void cmdline_diag(volatile u32 *p)\n{\n",
                                    "void cmdline_diag(volatile u32 *p)\n{\n" + _stores(rng, rng.randint(16, 120)), 1)
                f.write_text(text)
                kinds.append("layout-only:grow")
                subject.append(f"cmdline: more diagnostics ({grown})")
        if not kinds:
            notes = path / "NOTES"
            with open(notes, "a") as f:
                f.write(f"note {i}: {rng.choice(['tidy', 'doc', 'comment', 'typo', 'style'])} {rng.getrandbits(24):06x}\n")
            kinds.append("ordinary")
            subject.append(f"notes: entry {i}")
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", "; ".join(subject), when=i)
        commits.append({"index": i, "sha": _git(path, "rev-parse", "HEAD"), "kind": ",".join(kinds),
                        "subject": "; ".join(subject)})
    by = {c["index"]: c["sha"] for c in commits}
    manifest = {
        "repo": str(path), "seed": seed, "commits": commits, "good": by[0], "bad": by[n_commits],
        "regression": by.get(regression_at) if regression_at else None, "regression_index": regression_at,
        "regression_pct": regression_pct if regression_at else 0.0, "regression_iterations": iters,
        # every planted step in order: commit, index, size (percent of cg_cost) and the iterations it adds
        "regressions": ([{"sha": by[regression_at], "index": regression_at, "pct": regression_pct,
                          "iterations": iters}] if regression_at else [])
        + ([{"sha": by[second[0]], "index": second[0], "pct": pcts[1], "iterations": second[1]}] if second else []),
        "layout_only": [by[i] for i in layout_only], "layout_only_indices": list(layout_only),
        "broken": [by[i] for i in range(*broken_range)] if broken_range else [],
        "broken_range": list(broken_range) if broken_range else None, "quirks": None, "quirks_patch": None,
    }
    if broken_range:
        a, b = by[broken_range[0]], by[broken_range[1]]
        q = path.parent / f"{path.name}.quirks.toml"
        q.write_text(QUIRK_ENV.format(name=path.name, a=a, b=b, b_short=b[:12]))
        patch = path.parent / f"{path.name}.unused-variable.patch"
        patch.write_text(_git(path, "diff", a + "~0", b, "--", BROKEN_FILE) + "\n")
        qp = path.parent / f"{path.name}.quirks-patch.toml"
        qp.write_text(QUIRK_PATCH.format(name=path.name, a=a, b=b, b_short=b[:12], patch=patch.name))
        manifest.update(quirks=str(q), quirks_patch=str(qp))
    (path.parent / f"{path.name}.manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def calibrate(workdir: Path, iters: int = 200) -> float:
    """Measure how many extra iterations cost 1% of cg_cost (default link, cachegrind)."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        m = make_history(Path(tmp) / "cal", 1, 0, regression_at=1, regression_pct=iters / ITERS_PER_PCT,
                         layout_only=[])
        env = {**os.environ, "LAYOUTBENCH_DIR": str(Path(tmp) / "lb")}
        vals = []
        for sha in (m["good"], m["bad"]):
            out = subprocess.run(["layoutbench", "compare", "minikernel", "--repo", m["repo"], "--commit", sha,
                                  "--target", "cachegrind", "--layouts", "default", "--runs", "1",
                                  "--metric", "cg_cost", "--args", "iterations=300", "--json"], capture_output=True, text=True, env=env,
                                 check=True).stdout
            vals.append(json.loads(out)["metrics"][0]["rows"][0]["summary"]["median"])
        pct = 100 * (vals[1] / vals[0] - 1)
        print(f"{iters} iterations: cg_cost {vals[0]:.0f} -> {vals[1]:.0f} (+{pct:.2f}%): "
              f"{iters / pct:.2f} iterations per 1%")
        return iters / pct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path, help="where to create the repository (replaced if it exists)")
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--regression-at", help="the regression's commit index; two (e.g. 3,9) with two sizes")
    ap.add_argument("--regression-pct", default="3", help="its size in %% of cg_cost; two (e.g. 1,3): two regressions")
    ap.add_argument("--no-regression", action="store_true", help="only layout-only and ordinary commits")
    ap.add_argument("--layout-only", help="comma-separated commit indices (default: seeded, ~40%%)")
    ap.add_argument("--broken", help="A:B: commits A..B-1 do not build, B fixes them")
    ap.add_argument("--calibrate", action="store_true", help="measure ITERS_PER_PCT instead (path: a scratch dir)")
    a = ap.parse_args()
    if a.calibrate:
        a.path.mkdir(parents=True, exist_ok=True)
        calibrate(a.path)
        return
    lo = [int(x) for x in a.layout_only.split(",") if x] if a.layout_only is not None else None
    br = tuple(int(x) for x in a.broken.split(":")) if a.broken else None
    try:
        pct = [float(x) for x in a.regression_pct.split(",")]
        at = [int(x) for x in a.regression_at.split(",")] if a.regression_at else None
    except ValueError:
        raise SystemExit(f"--regression-at {a.regression_at} / --regression-pct {a.regression_pct}: "
                         "give numbers, one or two comma-separated (e.g. --regression-at 3,9 --regression-pct 1,3)")
    if at is not None and len(at) != len(pct):
        raise SystemExit(f"--regression-at {a.regression_at} names {len(at)} commit(s) but --regression-pct "
                         f"{a.regression_pct} {len(pct)} size(s): give as many of each")
    try:
        m = make_history(a.path, a.commits, a.seed, at if at is None or len(at) > 1 else at[0],
                         pct if len(pct) > 1 else pct[0], lo, br, not a.no_regression)
    except ValueError as e:
        raise SystemExit(f"make_history: {e}")
    for c in m["commits"]:
        print(f"{c['index']:3} {c['sha'][:12]} {c['kind']:22} {c['subject']}")
    print(f"manifest: {a.path.resolve().parent / (a.path.resolve().name + '.manifest.json')}")
    if m["quirks"]:
        print(f"quirks:   {m['quirks']} (or {m['quirks_patch']})")


if __name__ == "__main__":
    main()
