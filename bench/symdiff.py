"""docs/guide/internals.md's symdiff timing table: `layoutbench symdiff` against `llvm-nm -n A > a; llvm-nm -n B > b; diff a b`.

    python3 -m bench.symdiff [OLD NEW]...   [--runs N] [--functions N[,N...]] [--cache SIZE,WAYS,LINE]

Without arguments it builds (once per size, cached in $LAYOUTBENCH_BENCH_DIR or
/tmp/layoutbench-bench) generated kernels with --functions functions (default 8000, 32000 and
128000: the cost should grow about linearly) in 320 objects, linked by layoutbench in the
`sorted` and `random` layouts, and diffs those two images; every
function calls two others and reads a global, so almost every function's bytes differ
between the two layouts and must be explained by address masking.  Pairs of ELF files
given on the command line are timed instead (e.g. two vmlinux).  --baseline DIR also times
the symdiff of another layoutbench checkout in the same rotation (before/after a change).  Both commands are run as a
user runs them (a new process each: interpreter start and imports count), alternately, --runs
times each; the best wall time of each is reported, and the ratio symdiff / (nm + diff) of the
best times and of the median times, then
the same for CPU time (user + system), which a loaded machine disturbs less.  Three floor
lines first: starting Python (what any Python front end costs before its first line runs),
starting it and importing numpy, and `layoutbench --help` (every import).

`layoutbench symdiff OLD NEW --json` of two ELF files runs the native helper (native/symdiff,
built by setup.sh: the diff's one implementation); `text` times `layoutbench symdiff OLD NEW` (the
helper's JSON, without its symbol list, rendered by the Python front end) and its ratio to nm +
diff; `bloat-o-meter` times Linux's scripts/bloat-o-meter (nm plus a script: the symbol sizes that
changed, read from Debian's linux-source package when installed) on the same pair, and `text/it`
the text's ratio to it.  --cache SIZE,WAYS,LINE adds a line per pair
timing the cache view (``symdiff --cache`` with the 8 largest functions named, no cachegrind
run: the helper's diff, the view read from its symbols), its cost over the plain diff, and with
--baseline the other checkout's ``--cache`` in the same rotation.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import shutil
import subprocess
import sys
import time
from pathlib import Path

NM = shutil.which("llvm-nm-19") or "llvm-nm"


def bloat_o_meter(base: Path) -> Path | None:
    """Linux's ``scripts/bloat-o-meter`` (binutils ``nm --size-sort`` of both files and a Python
    script: the sizes that changed), read from Debian's linux-source package when it is installed
    (``apt-get install linux-source-6.1``) into ``base``; None without it."""
    out = base / "bloat-o-meter"
    if out.is_file():
        return out
    for tarball in sorted(Path("/usr/src").glob("linux-source-*.tar.xz")):
        member = f"{tarball.name.removesuffix('.tar.xz')}/scripts/bloat-o-meter"
        got = subprocess.run(["tar", "-xJOf", str(tarball), member], capture_output=True)
        if got.returncode == 0 and got.stdout:
            base.mkdir(parents=True, exist_ok=True)
            out.write_bytes(got.stdout)
            return out
    return None

MAKEFILE = """SRCS := $(wildcard o*/*.c) start.S
OBJS := start.o $(sort $(patsubst %.c,%.o,$(wildcard o*/*.c)))
CFLAGS := --target=x86_64-unknown-none-elf -ffreestanding -fno-pic -O1 -ffunction-sections -fdata-sections \\
          -fno-asynchronous-unwind-tables
all: $(addprefix $(OBJDIR)/,$(OBJS))
\tprintf '%s\\n' $(OBJS) > $(OBJDIR)/big.objs
$(OBJDIR)/%.o: %.c
\t@mkdir -p $(dir $@); $(CC) $(CFLAGS) -c $< -o $@
$(OBJDIR)/%.o: %.S
\t@mkdir -p $(dir $@); $(CC) $(CFLAGS) -c $< -o $@
"""

TOML = """name = "symdiffbench"
[source]
tree = "src"
[build]
command = "make -s -C {src} OBJDIR={objdir} CC={cc} -j{jobs}"
timeout = 3600
[images.big]
objects = "big.objs"
template = "elf-x86_64.ld.in"
entry = "_start"
base = 0x400000
pin_first = ["start.o"]
"""


def generate(root: Path, functions: int, objects: int = 320) -> Path:
    """A kernel profile + tree with `functions` functions; returns the kernel.toml."""
    toml = root / "kernel.toml"
    stamp = root / f"generated-{functions}"
    if stamp.exists():
        return toml
    if root.exists():
        shutil.rmtree(root)
    src = root / "src"
    src.mkdir(parents=True)
    rnd = random.Random(1)
    per = functions // objects
    names = [[f"f{o}_{i}" for i in range(per)] for o in range(objects)]
    for o in range(objects):
        d = src / f"o{o // 32:02d}"
        d.mkdir(exist_ok=True)
        lines = ["typedef unsigned long u64;"]
        callees = set()
        body = []
        body.append(f"u64 g{o}[8];")
        body.append(f"static const char *msg{o} = \"object {o}\";")
        body.append("static u64 helper(u64 x) { return x * 3 + 1; }")  # same static name in every object
        for i, fn in enumerate(names[o]):
            a = names[rnd.randrange(objects)][rnd.randrange(per)]
            b = names[o][rnd.randrange(per)]
            callees.update([a, b])
            body.append(f"__attribute__((noinline)) u64 {fn}(u64 x) {{ if (x > {i + 100}) return {a}(x >> 1) "
                        f"+ {b}(x - 1) + g{o}[x & 7] + msg{o}[x & 3]; return helper(x) ^ {i}; }}")
        lines += [f"u64 {c}(u64);" for c in sorted(callees)]
        (d / f"m{o}.c").write_text("\n".join(lines + body) + "\n")
    (src / "start.S").write_text(".text\n.globl _start\n_start:\n  mov $60, %eax\n  syscall\n")
    (src / "Makefile").write_text(MAKEFILE)
    toml.write_text(TOML)
    stamp.write_text("ok\n")
    return toml


def build_pair(toml: Path, work: Path) -> tuple[Path, Path]:
    env = {**os.environ, "LAYOUTBENCH_DIR": str(work), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run([sys.executable, "-m", "layoutbench.cli", "build", str(toml), "--layout",
                          "sorted,random", "--seed", "1", "--json"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"building the generated kernel failed:\n{out.stderr}")
    import json
    v = json.loads(out.stdout)["variants"]
    return Path(v[0]["elf"]), Path(v[1]["elf"])


def timed(cmd, shell: bool = False, env: dict | None = None) -> tuple[float, float, int]:
    """Wall time and CPU time (user + system of the process and everything it waited for)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, shell=shell, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.returncode


def side_by_side(cmds: list[tuple], runs: int) -> list[tuple[float, float, int, float]]:
    """Best wall time, best CPU time, the exit status and the median wall time of each
    (cmd, shell, env), run in turn."""
    walls: list[list[float]] = [[] for _ in cmds]
    out = [(float("inf"), float("inf"), 0, 0.0)] * len(cmds)
    for _ in range(runs):
        for i, (cmd, shell, env) in enumerate(cmds):
            wall, cpu, rc = timed(cmd, shell, env)
            walls[i].append(wall)
            out[i] = (min(out[i][0], wall), min(out[i][1], cpu), rc, 0.0)
    return [(w, c, rc, statistics.median(ws)) for (w, c, rc, _), ws in zip(out, walls)]


def count_symbols(elf: Path) -> int:
    out = subprocess.run([NM, "-n", str(elf)], capture_output=True, text=True).stdout
    return out.count("\n")


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*", type=Path, help="OLD NEW ELF files (any number of pairs)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="also time the symdiff of another layoutbench checkout (its top directory), e.g. the "
                         "version before a change: its PYTHONPATH is DIR")
    ap.add_argument("--functions", default="8000,32000,128000",
                    help="sizes of the generated kernels, comma-separated (without OLD NEW pairs)")
    ap.add_argument("--cache", metavar="SIZE,WAYS,LINE",
                    help="also time the cache view (symdiff --cache SIZE,WAYS,LINE --functions of the largest "
                         "functions, no cachegrind run) apart, against the plain diff (and --baseline's --cache)")
    args = ap.parse_args()
    if len(args.pairs) % 2:
        sys.exit("give ELF files in pairs: OLD NEW [OLD NEW]...")
    pairs = [(args.pairs[i].resolve(), args.pairs[i + 1].resolve()) for i in range(0, len(args.pairs), 2)]
    base = Path(os.environ.get("LAYOUTBENCH_BENCH_DIR", "/tmp/layoutbench-bench"))
    if not pairs:
        for n in map(int, args.functions.split(",")):
            print(f"generating and building a kernel with {n} functions in {base} (cached) ...", flush=True)
            t0 = time.perf_counter()
            pairs.append(build_pair(generate(base / f"kernel-{n}", n), base / f"work-{n}"))
            print(f"  ready in {time.perf_counter() - t0:.1f}s", flush=True)
    tmp = base / "nm"
    tmp.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parent.parent
    from layoutbench import native

    # every command runs outside any checkout (`python -m` puts the working directory first on
    # sys.path), with PYTHONPATH naming the checkout it times: this one, or --baseline's
    os.chdir(tmp)
    ours = {**os.environ, "PYTHONPATH": str(root)}

    native.built()  # built before the first timing, not during it
    bom = bloat_o_meter(base)
    if bom is None:
        print("note: no linux-source package in /usr/src (apt-get install linux-source-6.1): no bloat-o-meter column")
    print(f"{'image pair':44} {'symbols':>8} {'symdiff':>8} {'nm+diff':>8} {'ratio':>6} {'median':>6}   "
          f"{'CPU: symdiff':>12} {'nm+diff':>8} {'ratio':>6}   {'text':>7} {'ratio':>6}   "
          f"{'bloat-o-meter':>13} {'text/it':>7}"
          + (f"   {'baseline':>8} {'CPU':>6}" if args.baseline else ""))
    floors = [("(floor) python -c pass", [sys.executable, "-c", "pass"]),
              ("(floor) python -c 'import numpy'", [sys.executable, "-c", "import numpy"]),
              ("(floor) layoutbench --help", [sys.executable, "-m", "layoutbench.cli", "--help"])]
    for (label, _), (wall, cpu, _, _) in zip(floors, side_by_side([(c, False, ours) for _, c in floors], args.runs)):
        print(f"{label:44} {'':>8} {wall:>7.3f}s {'':>8} {'':>6} {'':>6}   {cpu:>11.3f}s")
    for a, b in pairs:
        cmd = [sys.executable, "-m", "layoutbench.cli", "symdiff", str(a), str(b), "--json"]
        cmds = [(cmd, False, ours),
                (f"{NM} -n '{a}' > '{tmp}/a'; {NM} -n '{b}' > '{tmp}/b'; diff '{tmp}/a' '{tmp}/b'", True, None),
                (cmd[:-1], False, ours)]  # the text: the helper's JSON rendered by the front end
        if bom is not None:
            cmds.append(([sys.executable, str(bom), str(a), str(b)], False, None))
        if args.baseline:
            cmds.append((cmd, False, {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}))
        got = side_by_side(cmds, args.runs)
        (sw, sc, rc, sm), (nw, nc, _, nm), (tw, _, trc, _) = got[:3]
        bw = got[3][0] if bom is not None else None
        if rc not in (0, 1) or trc not in (0, 1):
            subprocess.run(cmd[:-1])
            sys.exit(f"symdiff failed (exit {rc}) on {a} {b}")
        label = f"{a.parent.name}/{a.name} vs {b.parent.name}/{b.name}"
        print(f"{label[-44:]:44} {count_symbols(a):>8} {sw:>7.3f}s {nw:>7.3f}s {sw / nw:>5.2f}x {sm / nm:>5.2f}x   "
              f"{sc:>11.3f}s {nc:>7.3f}s {sc / max(nc, 1e-3):>5.2f}x   {tw:>6.3f}s {tw / nw:>5.2f}x   "
              + (f"{bw:>12.3f}s {tw / bw:>6.2f}x" if bw is not None else f"{'n/a':>13} {'':>7}")
              + (f"   {got[-1][0]:>7.3f}s {got[-1][1]:>5.3f}s" if args.baseline else ""), flush=True)
        if args.cache:  # the cache view's own cost: the helper's diff (with its symbols) plus the view
            listed = subprocess.run([NM, "-S", "--size-sort", "--defined-only", str(b)], capture_output=True,
                                    text=True).stdout.splitlines()
            big = [f[3] for f in map(str.split, listed) if len(f) == 4 and f[2] in "tT"][-8:]  # functions
            view = cmd + ["--cache", args.cache, "--functions", ",".join(big)]
            base = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())} if args.baseline else None
            timed = side_by_side([(view, False, ours), (cmd, False, ours)]
                                 + ([(view, False, base)] if base else []), args.runs)
            (vw, vc, vrc, _), (qw, qc, _, _) = timed[:2]
            if vrc not in (0, 1):
                sys.exit(f"symdiff --cache failed (exit {vrc}) on {a} {b}")
            print(f"{'  + --cache ' + args.cache + ' (8 functions)':44} {'':>8} {vw:>7.3f}s {'':>8} {'':>6} {'':>6}   "
                  f"{vc:>11.3f}s   the view: {vw - qw:+.3f}s wall, {vc - qc:+.3f}s CPU over the plain diff"
                  + (f"; baseline's --cache {timed[2][0]:.3f}s (x{vw / timed[2][0]:.2f})" if base else ""),
                  flush=True)


if __name__ == "__main__":
    main()
