"""docs/debian-history.md's tables: a real kernel history nobody wrote for layoutbench, Debian's ``linux`` source package as git.

Debian's ``linux`` source package is the upstream 6.1.x tarball plus the series of patches in
``debian/patches/series`` (bug fixes, hardening, features, each with its author and
description).  This script

1. ``fetch``: downloads the package with ``apt-get source --download-only`` through a private
   apt configuration in WORKDIR (a ``deb-src`` line for the machine's main Debian suite, read
   from /etc/apt; the machine's own apt setup is not touched), once;
2. ``repo``: makes WORKDIR/repo-VERSION, a git repository with the upstream tarball as its
   first commit and one commit per patch of the series, in order (author, date and subject
   from the patch's header, the patch's path as a ``Debian-Patch:`` trailer; fixed committer
   dates, so the hashes are the same on every machine).  Idempotent and resumable: a finished
   repository is tagged ``debian/VERSION`` and reused, an unfinished one continues after its
   last applied patch;
3. ``touching``: tells which commits change a file the profile's Linux build reads (the
   dependency files ``.*.cmd`` of one build of the tree, e.g. the Linux test tier's), i.e. the
   only commits whose vmlinux can differ from their parent's; every other commit is, by
   construction, equal in instruction count to its parent (ground truth "same");
4. ``plant``: a branch ``layoutbench/planted-N``: one planted change the /init benchmark sees
   (getppid() made slower by N turns of a loop, kernel/sys.c) after ``--plant-after``, the
   commits up to ``--plant-until`` replayed on top (used when a range holds no change the
   benchmark sees); ``--plant-after A,B --loops N1,N2``: two planted steps, branch
   ``layoutbench/planted-N1-N2``;
5. ``sweep``: ``layoutbench history linux --repo REPO RANGE --every-commit --target qemu-icache``
   (the cache-model metrics, the default link and seeded layouts);
6. ``bisect``: ``layoutbench bisect run`` of the range with ``ic_cost`` over K seeded layouts,
   beside the single-layout (default link) bisection it runs as its shadow;
7. ``table``: one row per commit: the ground truth (``ic_ir`` of the default link against the
   previous commit's: a commit whose ``ic_ir`` is unchanged must never be named), the default
   link's ``ic_cost`` step (layout-only jumps), the seeded layouts' paired step; then each
   bisection's culprit checked against the truth, with its cost;
8. ``phases --since T0 --until T1``: where the minutes of a command that ran then went (compiles,
   links, boots+runs, the rest), from what it left in the work folder.

Every probed commit that changes a build input is a Linux build; the others link a built
neighbour's objects (layoutbench's object reuse, ``[build] untracked_inputs`` in the linux
profile), and kernels/linux/build.sh compiles through ccache, so a neighbouring commit's build
recompiles only what changed.  Measured runs: docs/debian-history.md.

    nice -n 10 python3 -m bench.debian_linux_history --workdir /tmp/lb-debian fetch repo
    nice -n 10 python3 -m bench.debian_linux_history --workdir /tmp/lb-debian plant \
        --plant-after 2bb0fc5b9 --plant-until 0c327b742
    nice -n 10 python3 -m bench.debian_linux_history --workdir /tmp/lb-debian \
        --range 893865746..layoutbench/planted-10 --layouts default,random:3 sweep bisect table --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATE = "2026-01-01T00:00:00+00:00"  #: committer date of every commit (reproducible hashes)


# -- 1. fetch ------------------------------------------------------------------------------------

def main_suite() -> tuple[str, str, str]:
    """(URI, suite, components) of the machine's main Debian suite (not -security/-updates)."""
    stanzas = []
    d = Path("/etc/apt/sources.list.d")
    for f in sorted(d.glob("*.sources")) if d.is_dir() else []:
        for block in f.read_text().split("\n\n"):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", block, re.M))
            if "deb" in fields.get("Types", "").split():
                for suite in fields.get("Suites", "").split():
                    for uri in fields.get("URIs", "").split():
                        stanzas.append((uri, suite, fields.get("Components", "main")))
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        for line in legacy.read_text().splitlines():
            w = line.split("#")[0].split()
            if len(w) >= 4 and w[0] == "deb" and not w[1].startswith("["):
                stanzas.append((w[1], w[2], " ".join(w[3:])))
    for uri, suite, comps in stanzas:
        if "debian" in uri and "security" not in uri and "-" not in suite:
            return uri, suite, comps
    sys.exit("error: no main Debian suite in /etc/apt (a 'deb http://deb.debian.org/debian SUITE main' line); "
             "add one or pass --version with a reachable mirror")


def apt(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """apt-get with WORKDIR/apt as its whole configuration: the deb-src line, lists and cache."""
    a = workdir / "apt"
    opts = ["-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={a / 'parts'}",
            "-o", f"Dir::State::Lists={a / 'lists'}", "-o", f"Dir::Cache={a / 'cache'}"]
    return subprocess.run(["apt-get", *opts, *args], capture_output=True, text=True)


def fetch(workdir: Path, version: str | None) -> tuple[str, Path]:
    """Download Debian's linux source package (VERSION, or the newest the main suite serves) into
    WORKDIR/src once; return (version, folder)."""
    src = workdir / "src"
    if version and (src / f"linux_{version}.dsc").is_file():
        return version, src
    a = workdir / "apt"
    for sub in ("parts", "lists/partial", "cache/archives/partial"):
        (a / sub).mkdir(parents=True, exist_ok=True)
    uri, suite, comps = main_suite()
    (a / "parts" / "layoutbench-src.sources").write_text(
        f"Types: deb-src\nURIs: {uri}\nSuites: {suite}\nComponents: {comps}\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    if not any((a / "lists").glob("*Sources*")):
        p = apt(workdir, "update")
        if p.returncode != 0:
            sys.exit(f"error: apt-get update for deb-src {uri} {suite} failed: {p.stderr.strip().splitlines()[-1:]}")
    if version is None:
        p = subprocess.run(["apt-cache", "-o", f"Dir::Etc::SourceParts={a / 'parts'}", "-o",
                            "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::State::Lists={a / 'lists'}",
                            "-o", f"Dir::Cache={a / 'cache'}", "showsrc", "linux"], capture_output=True, text=True)
        versions = re.findall(r"^Version: (\S+)$", p.stdout, re.M)
        if not versions:
            sys.exit(f"error: {suite} serves no source package 'linux'")
        version = max(versions, key=lambda v: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)])
    if not (src / f"linux_{version}.dsc").is_file():
        src.mkdir(parents=True, exist_ok=True)
        print(f"· apt-get source --download-only linux={version} (about 140 MB)", flush=True)
        p = subprocess.run(["apt-get", "-o", "Dir::Etc::SourceList=/dev/null", "-o",
                            f"Dir::Etc::SourceParts={a / 'parts'}", "-o", f"Dir::State::Lists={a / 'lists'}",
                            "-o", f"Dir::Cache={a / 'cache'}", "source", "--download-only", f"linux={version}"],
                           cwd=src, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"error: apt-get source linux={version} failed: {p.stderr.strip().splitlines()[-1:]}")
    return version, src


# -- 2. repo -------------------------------------------------------------------------------------

def git(repo: Path, *args: str, env: dict | None = None, check: bool = True) -> str:
    p = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    if check and p.returncode != 0:
        raise SystemExit(f"error: git {' '.join(args[:3])} in {repo}: {p.stderr.strip()}")
    return p.stdout.strip()


def patch_header(text: str) -> tuple[str, str, str, str]:
    """(author name, email, date or "", subject) from a patch's mail or DEP-3 header."""
    head = text.split("\n---", 1)[0].split("\ndiff ", 1)[0]
    name, email, date, subject = "Debian kernel team", "debian-kernel@lists.debian.org", "", ""
    m = re.search(r"^(?:From|Author):\s*(.+?)\s*<([^>]+)>", head, re.M)
    if m:
        name, email = m.group(1).strip().strip('"') or name, m.group(2)
    m = re.search(r"^Date:\s*(.+)$", head, re.M)
    if m:
        date = m.group(1).strip()
    m = re.search(r"^(?:Subject|Description):\s*(.+)$", head, re.M)
    if m:
        subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", m.group(1).strip())
    return name, email, date, subject


def make_repo(workdir: Path, version: str, src: Path) -> Path:
    """WORKDIR/repo-VERSION: the upstream tarball, then one commit per patch of the series."""
    repo = workdir / f"repo-{version}"
    tag = f"debian/{version}"
    if (repo / ".git").is_dir() and git(repo, "tag", "-l", tag):
        return repo
    upstream = version.split("-")[0]
    deb = workdir / f"debian-{version}"
    if not (deb / "patches" / "series").is_file():
        with tarfile.open(src / f"linux_{version}.debian.tar.xz") as t:
            t.extractall(workdir / f"debian-{version}.tmp", filter="data")
        (workdir / f"debian-{version}.tmp" / "debian").rename(deb)
        (workdir / f"debian-{version}.tmp").rmdir()
    series = [ln.split()[0] for ln in (deb / "patches" / "series").read_text().splitlines()
              if ln.strip() and not ln.lstrip().startswith("#")]
    fixed = {"GIT_COMMITTER_DATE": DATE, "GIT_COMMITTER_NAME": "layoutbench",
             "GIT_COMMITTER_EMAIL": "layoutbench@localhost"}
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        print(f"· unpacking linux_{upstream}.orig.tar.xz into {repo}", flush=True)
        subprocess.run(["tar", "-xJf", str(src / f"linux_{upstream}.orig.tar.xz"), "--strip-components=1",
                        "-C", str(repo)], check=True)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "config", "core.autocrlf", "false")
        git(repo, "add", "-A", "-f")
        git(repo, "commit", "-q", "-m", f"Linux {upstream} (Debian's orig tarball)",
            env={**fixed, "GIT_AUTHOR_NAME": "Linux upstream", "GIT_AUTHOR_EMAIL": "linux-kernel@vger.kernel.org",
                 "GIT_AUTHOR_DATE": DATE})
    done = set(re.findall(r"^Debian-Patch: (\S+)$", git(repo, "log", "--format=%B"), re.M))
    for i, name in enumerate(series, 1):
        if name in done:
            continue
        path = deb / "patches" / name
        text = path.read_text(errors="replace")
        p = subprocess.run(["patch", "-p1", "-s", "-F0", "-N", "--no-backup-if-mismatch", "-i", str(path)],
                           cwd=repo, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"error: debian/patches/{name} does not apply to {repo} (patch {i} of "
                             f"{len(series)}): {(p.stdout + p.stderr).strip().splitlines()[:2]}")
        author, email, date, subject = patch_header(text)
        git(repo, "add", "-A", "-f")
        env = {**fixed, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date or DATE}
        msg = f"{subject or name}\n\nDebian-Patch: {name}\n"
        r = subprocess.run(["git", "commit", "-q", "--allow-empty", "-F", "-"], input=msg, cwd=repo, text=True,
                           capture_output=True, env={**os.environ, **env})
        if r.returncode != 0:  # an unparseable author date: keep the fixed one
            env["GIT_AUTHOR_DATE"] = DATE
            subprocess.run(["git", "commit", "-q", "--allow-empty", "-F", "-"], input=msg, cwd=repo, text=True,
                           check=True, capture_output=True, env={**os.environ, **env})
        print(f"· {i}/{len(series)} {name}", flush=True)
    git(repo, "tag", tag)
    return repo


# -- 3. touching ---------------------------------------------------------------------------------

def build_inputs(objdir: Path, tree: Path) -> set[str]:
    """Paths (relative to the source tree) of every file the build read, from its dependency
    files: layoutbench's own reader (reuse.build_inputs, what object reuse decides with)."""
    from layoutbench.reuse import build_inputs as read

    return read(objdir, tree)


def _untracked(path: str) -> bool:
    """A file the build reads that no dependency file names: the linux profile's untracked_inputs."""
    from layoutbench import profile, reuse

    return reuse._matches(path, tuple(profile.load("linux").build.untracked_inputs or ()))


def touching(repo: Path, objdir: Path, tree: Path, rev_range: str) -> list[dict]:
    """Each commit of RANGE (first parents) with the build inputs it changes."""
    inputs = build_inputs(objdir, tree)
    rows = []
    for line in git(repo, "log", "--first-parent", "--reverse", "--format=%H %s", rev_range).splitlines():
        sha, subject = line.split(" ", 1)
        files = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).splitlines()
        hit = sorted(f for f in files if f in inputs or _untracked(f))
        rows.append({"commit": sha[:12], "subject": subject, "files": len(files), "build_inputs": hit})
    return rows


# -- plant: one change the benchmark sees, if the series holds none ------------------------------

PLANT_LOOPS = 10  #: two instructions each: 20 more per getppid(), ~1.9% of the /init region's ic_cost (~0.4 sigma_L of this kernel)
GETPPID = """\trcu_read_lock();
\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));
\trcu_read_unlock();

\treturn pid;
}
"""
PLANTED_TEMPLATE = """\trcu_read_lock();
\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));
\trcu_read_unlock();

\t/* layoutbench: a planted regression, %d turns of a two-instruction loop per call */
\t{
\t\tunsigned long n = %d;

\t\tasm volatile("1: dec %%0; jnz 1b" : "+r" (n));
\t}
\treturn pid;
}
"""


def branch_name(loops: list[int]) -> str:
    """``layoutbench/planted-50``; two steps (50 turns, then 50 more): ``layoutbench/planted-50-50``."""
    return "layoutbench/planted-" + "-".join(str(n) for n in loops)


def plant(repo: Path, after: str | list[str], until: str, loops: int | list[int] = PLANT_LOOPS) -> str:
    """A branch ``layoutbench/planted-LOOPS``: commit AFTER, then one planted commit (getppid() made slower
    in kernel/sys.c, the syscall the /init benchmark calls most), then the commits AFTER..UNTIL
    replayed on top with their messages and authors (none of them touches kernel/sys.c).  With
    several places (AFTER and LOOPS lists, in history order), a planted commit follows each: the
    second adds its turns to the first's, so each is a step of its own size.  Made with git
    plumbing (the work tree is not touched), fixed dates: the same hashes everywhere.
    Returns the branch's last commit; run again, it returns the branch as it is."""
    afters = [after] if isinstance(after, str) else list(after)
    steps = [loops] if isinstance(loops, int) else list(loops)
    if len(afters) != len(steps):
        sys.exit(f"error: {len(afters)} --plant-after place(s) but {len(steps)} --loops value(s): give one each")
    branch = branch_name(steps)
    have = git(repo, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False)
    if have:
        return have
    bases = [git(repo, "rev-parse", a) for a in afters]
    replay = git(repo, "rev-list", "--reverse", f"{bases[0]}..{until}").split()
    for b in bases[1:]:
        if b not in replay:
            sys.exit(f"error: --plant-after {b[:12]} is not between {bases[0][:12]} and {until}: give the places in order")
    for c in replay:
        if "kernel/sys.c" in git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", c).splitlines():
            sys.exit(f"error: {c[:12]} changes kernel/sys.c: the planted change cannot be replayed under it")
    text = git(repo, "show", f"{bases[0]}:kernel/sys.c") + "\n"
    if text.count(GETPPID) != 1:
        sys.exit("error: getppid() in kernel/sys.c is not as expected: cannot plant the change")
    writer = _PlantWriter(repo, text)
    head, total = bases[0], 0
    for c in [bases[0], *replay]:
        if c != bases[0]:
            head = writer.commit(c, head, git(repo, "log", "-1", "--format=%B", c) + "\n",
                                 tuple(git(repo, "log", "-1", "--format=%an%x00%ae%x00%aI", c).split("\0")))
        if c in bases:
            n = steps[bases.index(c)]
            total += n
            more = f"{n} more turns of a 2-instruction loop, {total} in all" if total != n else \
                f"{n} turns of a 2-instruction loop"
            head = writer.commit(c, head, f"getppid: planted regression ({more})\n\n"
                                 "Not a Debian patch: layoutbench plants it (bench/debian_linux_history.py plant) so that the\n"
                                 f"history holds {'one change' if len(steps) == 1 else 'changes'} the /init benchmark "
                                 "measures beyond layout noise.\n",
                                 ("layoutbench", "layoutbench@localhost", DATE), loops=total)
    writer.close()
    git(repo, "branch", branch, head)
    return head


class _PlantWriter:
    """Commits with git plumbing (a private index, fixed committer): a tree with kernel/sys.c's
    getppid() carrying the loop count planted so far."""

    def __init__(self, repo: Path, sys_c: str):
        self.repo, self.sys_c, self.loops, self.blob = repo, sys_c, 0, None
        self.index = repo / ".git" / "layoutbench-plant.index"
        self.env = {"GIT_COMMITTER_DATE": DATE, "GIT_COMMITTER_NAME": "layoutbench",
                    "GIT_COMMITTER_EMAIL": "layoutbench@localhost", "GIT_INDEX_FILE": str(self.index)}

    def commit(self, tree_of: str, parent: str, msg: str, author: tuple, loops: int | None = None) -> str:
        if loops is not None:
            self.loops = loops
            self.blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=self.repo, capture_output=True,
                                       input=self.sys_c.replace(GETPPID, PLANTED_TEMPLATE % (loops, loops)),
                                       text=True, check=True).stdout.strip()
        git(self.repo, "read-tree", tree_of, env=self.env)
        git(self.repo, "update-index", "--cacheinfo", f"100644,{self.blob},kernel/sys.c", env=self.env)
        tree = git(self.repo, "write-tree", env=self.env)
        env = {**self.env, "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": author[2]}
        return subprocess.run(["git", "commit-tree", tree, "-p", parent, "-F", "-"], cwd=self.repo, input=msg,
                              text=True, capture_output=True, check=True, env={**os.environ, **env}).stdout.strip()

    def close(self) -> None:
        self.index.unlink(missing_ok=True)


# -- 4./5. sweep and bisect ----------------------------------------------------------------------

def lb(*args: str, lbdir: Path) -> subprocess.CompletedProcess:
    """``layoutbench ARGS`` with LAYOUTBENCH_DIR=LBDIR; its progress goes to this terminal."""
    env = {**os.environ, "LAYOUTBENCH_DIR": str(lbdir)}
    return subprocess.run([sys.executable, "-m", "layoutbench.cli", *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def table(history: dict, verdicts: dict[str, dict], commits: list[str]) -> tuple[list[dict], list[str]]:
    """One row per commit of the sweep, and the text lines: the ground truth (``ic_ir`` of the
    default link against the previous commit's), the default link's ``ic_cost`` step, the seeded
    layouts' paired step (mean of per-seed log ratios) and their spread; then each bisection's
    culprit checked against the truth, with what it cost."""
    import math

    rows, prev = [], None
    # the store keeps one history per repository: another range swept there is merged into it
    by_commit = {p["commit"]: p for p in history["points"]}
    for p in (by_commit[c] for c in commits if c in by_commit):
        v = p.get("values") or {}
        ir, cost = v.get("ic_ir", {}), v.get("ic_cost", {})
        seeded = sorted(k for k in cost if k != "default")
        row = {"commit": p["commit"], "subject": p.get("subject", ""), "status": p["status"],
               "images_of": history["series"].get("points", {}).get(p["commit"], {}).get("images_of"), "ic_ir": _mean(ir.get("default", [])),
               "ic_cost": _mean(cost.get("default", [])),
               "seeded_cost": {k: _mean(cost[k]) for k in seeded}}
        sc = list(row["seeded_cost"].values())
        m = _mean(sc)
        row["layout_sd_pct"] = (100 * math.sqrt(sum((x - m) ** 2 for x in sc) / (len(sc) - 1)) / m
                                if len(sc) > 1 else None)
        if prev is not None:
            row["d_ic_ir"] = row["ic_ir"] - prev["ic_ir"]
            row["truth"] = "code" if row["d_ic_ir"] != 0 else "same"
            row["d_cost_default_pct"] = 100 * (row["ic_cost"] / prev["ic_cost"] - 1)
            logs = [math.log(row["seeded_cost"][k] / prev["seeded_cost"][k]) for k in seeded if k in prev["seeded_cost"]]
            row["d_cost_seeded_pct"] = 100 * (math.exp(_mean(logs)) - 1) if logs else None
        rows.append(row)
        prev = row
    lines = [f"{'commit':12}  {'built':10} {'ic_ir':>11} {'d ic_ir':>9} {'truth':5} {'ic_cost default':>15} "
             f"{'d %':>8} {'K seeds d %':>11} {'sd_L %':>6}  subject"]
    for r in rows:
        built = f"={r['images_of'][:8]}" if r["images_of"] else "compiled"
        def f(x, spec):
            return format(x, spec) if isinstance(x, (int, float)) and x == x else "-"
        lines.append(f"{r['commit'][:12]}  {built:10} {f(r['ic_ir'], '11.0f')} {f(r.get('d_ic_ir'), '+9.0f')} "
                     f"{r.get('truth', 'start'):5} {f(r['ic_cost'], '15.0f')} {f(r.get('d_cost_default_pct'), '+8.3f')} "
                     f"{f(r.get('d_cost_seeded_pct'), '+11.3f')} {f(r['layout_sd_pct'], '6.2f')}  {r['subject'][:48]}")
    only_layout = [r for r in rows if r.get("truth") == "same" and r.get("d_cost_default_pct")]
    lines.append(f"layout-only jumps of the default link (ic_ir unchanged, ic_cost moved): {len(only_layout)}"
                 + "".join(f"; {r['commit'][:12]} {r['d_cost_default_pct']:+.2f}%" for r in only_layout))
    truth = {r["commit"]: r.get("truth") for r in rows}
    for name, v in verdicts.items():
        for label, culprit, cost in ((f"{name} (K seeded layouts)", v.get("culprit") or v.get("candidate"), v.get("cost", {})),
                                     (f"{name} single layout (default link)", (v.get("single_layout") or {}).get("culprit"),
                                      v.get("single_layout") or {})):
            ok = {"code": "right (ic_ir changed there)", "same": "WRONG (ic_ir unchanged there)"}.get(
                truth.get(culprit or ""), "nothing named" if not culprit else "outside the sweep")
            lines.append(f"{label}: status {v.get('status') if 'single' not in label else '-'}, culprit "
                         f"{(culprit or '-')[:12]} -> {ok}; runs {cost.get('runs', '?')} "
                         f"(run now {cost.get('ran_now', '?')}), builds {cost.get('builds', '?')}")
    return rows, lines


def phases(lbdir: Path, since: float, until: float, store: Path | None = None) -> dict:
    """Where the minutes of a command that ran from SINCE to UNTIL (epoch seconds) went, from what it
    left in LBDIR: the compiles (each build.json written then: its ``seconds``; a reused neighbour's
    objects cost nothing), the links (each image.elf written then: its variant.json's
    ``link_seconds``) and the runs (the store's runs started then: their ``duration``; ``store``: the
    command's --store, else LBDIR's results.sqlite)."""
    import sqlite3

    def within(f: Path) -> bool:
        return since <= f.stat().st_mtime <= until

    builds = [json.loads(f.read_text()) for f in (lbdir / "objects" / "linux").glob("*/build.json") if within(f)]
    compiled = [b for b in builds if not b.get("reused_from")]
    links = [json.loads((f.parent / "variant.json").read_text()).get("link_seconds") or 0.0
             for f in (lbdir / "images" / "linux").glob("*/vmlinux/*/image.elf") if within(f)]
    with sqlite3.connect(store or lbdir / "results.sqlite") as db:
        runs = db.execute("SELECT count(*), coalesce(sum(duration), 0) FROM runs WHERE started BETWEEN ? AND ?",
                          (since, until)).fetchone()
    out = {"wall": until - since, "compiled": len(compiled), "compile_seconds": sum(b["seconds"] for b in compiled),
           "reused": len(builds) - len(compiled), "links": len(links), "link_seconds": sum(links),
           "runs": runs[0], "run_seconds": runs[1]}
    out["other_seconds"] = out["wall"] - out["compile_seconds"] - out["link_seconds"] - out["run_seconds"]
    return out


def phases_text(p: dict) -> str:
    m = 60.0
    return (f"wall {p['wall'] / m:.1f} min: compile {p['compile_seconds'] / m:.1f} min ({p['compiled']} compiled, "
            f"{p['reused']} reused a neighbour's objects), link {p['link_seconds'] / m:.1f} min ({p['links']} links), "
            f"boot+run {p['run_seconds'] / m:.1f} min ({p['runs']} runs), the rest (export, decide; negative: "
            f"work beside work: compiles and links beside runs, two runs at once) {p['other_seconds'] / m:+.1f} min")


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", nargs="+", choices=["fetch", "repo", "touching", "plant", "sweep", "bisect", "table",
                                                 "phases"])
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--version", help="the linux source package version (default: the newest served)")
    ap.add_argument("--objdir", type=Path, help="touching: a Linux build's object folder (with .*.cmd files)")
    ap.add_argument("--tree", type=Path, help="touching: the source tree that build compiled (default: OBJDIR/../src/*)")
    ap.add_argument("--range", default=None, help="a range of the repository (default: the whole series)")
    ap.add_argument("--plant-after", help="plant: the commit the planted change follows; A,B: two planted "
                    "changes, after A and after B (in history order), with --loops N1,N2")
    ap.add_argument("--plant-until", help="plant: the last commit replayed on top of it")
    ap.add_argument("--loops", default=str(PLANT_LOOPS),
                    help="plant: turns of the 2-instruction loop per getppid(); N1,N2: the turns each of two places adds")
    ap.add_argument("--layouts", default="default,random:4", help="sweep: the layouts of every commit")
    ap.add_argument("--k", type=int, default=4, help="bisect: seeded layouts per probe")
    ap.add_argument("--max-layouts", type=int, default=8, help="bisect: the most layouts a look may grow to")
    ap.add_argument("--budget", type=int, help="bisect: the most runs it may spend (stored ones count)")
    ap.add_argument("--timeout", type=float, default=900, help="sweep: seconds per boot (a loaded machine is slow)")
    ap.add_argument("--lbdir", type=Path, help="LAYOUTBENCH_DIR of the sweep and bisection (default: WORKDIR/lb)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--since", help="phases: when the command started (UTC, 2026-12-02T01:44:21)")
    ap.add_argument("--until", help="phases: when it ended (UTC)")
    ap.add_argument("--store", type=Path, help="phases: the --store the command wrote (default: LBDIR/results.sqlite)")
    o = ap.parse_args()
    o.workdir.mkdir(parents=True, exist_ok=True)
    version, src = fetch(o.workdir, o.version)
    repo = make_repo(o.workdir, version, src) if set(o.steps) - {"fetch"} else None
    out: dict = {"version": version, "repo": str(repo) if repo else None}
    rng = o.range
    if repo and rng is None:
        rng = f"{git(repo, 'rev-list', '--max-parents=0', 'HEAD')}..debian/{version}"
    if "plant" in o.steps:
        if not (o.plant_after and o.plant_until):
            sys.exit("error: plant needs --plant-after REV and --plant-until REV")
        afters, loops = o.plant_after.split(","), [int(n) for n in o.loops.split(",")]
        out["planted"] = {"after": [git(repo, "rev-parse", a) for a in afters], "loops": loops,
                          "tip": plant(repo, afters, o.plant_until, loops), "branch": branch_name(loops)}
        print(f"planted: {branch_name(loops)} = {out['planted']['tip'][:12]} (after {o.plant_after})")
    if "touching" in o.steps:
        if not o.objdir:
            sys.exit("error: touching needs --objdir (a Linux build's object folder, e.g. from the Linux test tier)")
        tree = o.tree or next((o.objdir.parent / "src").glob("linux*"), o.objdir.parent / "src")
        rows = touching(repo, o.objdir, tree, rng)
        hit = [r for r in rows if r["build_inputs"]]
        print(f"{len(rows)} commits in {rng}; {len(hit)} change a file the build reads:")
        for r in hit:
            print(f"  {r['commit']} {r['subject'][:70]}  ({', '.join(r['build_inputs'][:3])})")
        out["touching"] = rows
    lbdir = o.lbdir or o.workdir / "lb"
    if "sweep" in o.steps:
        p = lb("history", "linux", "--repo", str(repo), rng, "--every-commit", "--target", "qemu-icache",
               "--layouts", o.layouts, "--runs", "1", "--timeout", str(o.timeout), "--json", lbdir=lbdir)
        if p.returncode != 0:
            sys.exit("error: layoutbench history failed (its message is above)")
        out["history"] = json.loads(p.stdout)["history"]
    verdicts = {}
    if "bisect" in o.steps:
        p = lb("bisect", "run", "linux", rng, "--repo", str(repo), "--target", "qemu-icache", "--layouts", str(o.k),
               "--max-layouts", str(o.max_layouts), "--metric", "ic_cost", "--json",
               *(["--budget", str(o.budget)] if o.budget else []), lbdir=lbdir)
        if p.returncode != 0:
            sys.exit("error: layoutbench bisect run failed (its message is above)")
        out["bisect"] = verdicts["ic_cost"] = json.loads(p.stdout)
    if "table" in o.steps:
        if "history" not in out:  # from the store: the same command, nothing runs again
            p = lb("history", "linux", "--repo", str(repo), rng, "--every-commit", "--target", "qemu-icache",
                   "--layouts", o.layouts, "--runs", "1", "--json", lbdir=lbdir)
            out["history"] = json.loads(p.stdout)["history"]
        if not verdicts and o.json and o.json.is_file():
            verdicts = {"ic_cost": json.loads(o.json.read_text()).get("bisect", {})}
            out["bisect"] = verdicts["ic_cost"]
        a = rng.split("..")[0]
        commits = [git(repo, "rev-parse", a)] + git(repo, "rev-list", "--reverse", "--first-parent", rng).split()
        rows, lines = table(out["history"], {k: v for k, v in verdicts.items() if v}, commits)
        out["table"] = rows
        print("\n".join(lines))
    if "phases" in o.steps:
        from datetime import datetime, timezone

        if not (o.since and o.until):
            sys.exit("error: phases needs --since and --until (UTC times, e.g. 2026-12-02T01:44:21)")
        when = [datetime.fromisoformat(t).replace(tzinfo=timezone.utc).timestamp() for t in (o.since, o.until)]
        out["phases"] = phases(o.lbdir or o.workdir / "lb", *when, store=o.store)
        print(phases_text(out["phases"]))
    if o.json:
        o.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
