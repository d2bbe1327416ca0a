"""docs/guide/remote.md, "Several targets at once": two ssh targets one after the other vs in parallel.

Starts two throw-away sshd on 127.0.0.1 (as tests/test_ssh.py does; needs root and
openssh-server), then runs the same `layoutbench compare` of the hosted minikernel
(a) on target a, then on target b, each into its own store, and (b) on both at once
(`--target a,b`).  Prints the three wall times and sequential/parallel.  Each run
sleeps SLEEP seconds before the benchmark, standing in for a slower machine, so the
ratio shows the overlap rather than this 2-core machine's contention.

    python3 -m bench.parallel_targets [--runs 3] [--sleep 0.5]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.labs import sshd as _sshd

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--layouts", default="default,sorted,random:4")
    ap.add_argument("--sleep", type=float, default=0.5, help="seconds each run waits before the benchmark")
    a = ap.parse_args()
    why = _sshd.available()
    if why:
        print(f"cannot start sshd here: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lab = _sshd.Lab(tmp / "lab", 2)
        try:
            base = (ROOT / "kernels" / "minikernel" / "kernel.toml").read_text().split("[targets.")[0]
            base = re.sub(r"(?m)^default_target\s*=.*$", "", base)
            base = base.replace('repo = "../.."', "").replace(
                'subdir = "kernels/minikernel/src"', f'tree = "{ROOT / "kernels/minikernel/src"}"')
            cmd = f'["sh", "-c", "sleep {a.sleep}; exec \\"$0\\" \\"$@\\"", "{{image}}", "iterations=2000"]'
            targets = "".join(
                f'[targets.{n}]\nkind = "ssh"\nimage = "hosted"\ntimeout = 60\nhost = "{s.alias}"\n'
                f'ssh_config = "{lab.config}"\nremote_dir = "{tmp}/remote-{n}"\ncommand = {cmd}\n\n'
                for n, s in zip("ab", lab.servers))
            (tmp / "prof").mkdir()
            toml = tmp / "prof" / "kernel.toml"
            toml.write_text(base + targets + '[metrics]\nprefix = "LAYOUTBENCH"\n')
            env_work = ["--workdir", str(tmp / "work")]

            def compare(targets: str, store: str) -> float:
                t0 = time.monotonic()
                subprocess.run([sys.executable, "-m", "layoutbench.cli", *env_work, "compare", str(toml),
                                "--layouts", a.layouts, "--runs", str(a.runs), "--target", targets,
                                "--store", str(tmp / store), "--json"], check=True, capture_output=True)
                return time.monotonic() - t0

            compare("a", "warm.sqlite")  # compile and link once, outside the timings
            seq = compare("a", "s1.sqlite") + compare("b", "s2.sqlite")
            par = compare("a,b", "p.sqlite")
        finally:
            lab.stop()
    print(f"sequential (a then b): {seq:.2f}s")
    print(f"parallel   (a and b):  {par:.2f}s")
    print(f"sequential / parallel: {seq / par:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
