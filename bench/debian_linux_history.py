#!/usr/bin/env python3
"""A real kernel history nobody wrote for layoutbench: Debian's ``linux`` source package as git.

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
4. ``sweep``: ``layoutbench history linux --repo REPO RANGE --target qemu-icache`` over a range
   (the cache-model metric, default link and seeded layouts) and prints it; the ground truth
   of each step is the ``ic_ir`` of its default link against its parent's (a step whose
   ``ic_ir`` is unchanged must never be named a code change);
5. ``bisect``: ``layoutbench bisect run`` of a range with ``ic_cost`` over K seeded layouts.

Done and measured here: ``fetch``, ``repo`` and ``touching`` (docs/debian-history.md).  NOT run
yet: ``sweep`` and ``bisect`` (each probed commit is a full Linux build, ~17 minutes on this
shared machine), the check of their culprits against ``ic_ir``, and the single default-link
bisection beside them; they call the commands above as they are.

    nice -n 10 python bench/debian_linux_history.py --workdir /tmp/lb-debian fetch repo
    nice -n 10 python bench/debian_linux_history.py --workdir /tmp/lb-debian touching --objdir OBJ
    nice -n 10 python bench/debian_linux_history.py --workdir /tmp/lb-debian sweep --range A..B

Every Linux build is a full one (7-10 minutes on 2 shared cores): a sweep of the whole series
is hours; ``touching`` names the commits worth building.
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
    """Paths (relative to the source tree) of every file the build read, from its .*.cmd files."""
    tree_s = str(tree.resolve())
    inputs: set[str] = set()
    for cmd in objdir.rglob(".*.cmd"):
        for word in re.findall(r"(\S+)", cmd.read_text(errors="replace")):
            w = word.rstrip("\\:,) ")
            if w.startswith(tree_s + "/"):
                inputs.add(w[len(tree_s) + 1:])
    return inputs


def touching(repo: Path, objdir: Path, tree: Path, rev_range: str) -> list[dict]:
    """Each commit of RANGE (first parents) with the build inputs it changes."""
    inputs = build_inputs(objdir, tree)
    rows = []
    for line in git(repo, "log", "--first-parent", "--reverse", "--format=%H %s", rev_range).splitlines():
        sha, subject = line.split(" ", 1)
        files = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).splitlines()
        hit = sorted(f for f in files if f in inputs or f.startswith(("Makefile", "scripts/", "arch/x86/Makefile")))
        rows.append({"commit": sha[:12], "subject": subject, "files": len(files), "build_inputs": hit})
    return rows


# -- plant: one change the benchmark sees, if the series holds none ------------------------------

PLANT_LOOPS = 100  #: two instructions each: ~200 more per getppid(), ~18% of the /init region's ic_cost
GETPPID = """\trcu_read_lock();
\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));
\trcu_read_unlock();

\treturn pid;
}
"""
PLANTED = """\trcu_read_lock();
\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));
\trcu_read_unlock();

\t/* layoutbench: a planted regression, %d turns of a two-instruction loop per call */
\t{
\t\tunsigned long n = %d;

\t\tasm volatile("1: dec %%0; jnz 1b" : "+r" (n));
\t}
\treturn pid;
}
""" % (PLANT_LOOPS, PLANT_LOOPS)


def plant(repo: Path, after: str, until: str) -> str:
    """A branch ``layoutbench/planted``: commit AFTER, then one planted commit (getppid() made slower
    in kernel/sys.c, the syscall the /init benchmark calls most), then the commits AFTER..UNTIL
    replayed on top with their messages and authors (none of them touches kernel/sys.c).  Made
    with git plumbing (the work tree is not touched), fixed dates: the same hashes everywhere.
    Returns the branch's last commit; run again, it returns the branch as it is."""
    branch = "layoutbench/planted"
    have = git(repo, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False)
    if have:
        return have
    base, replay = git(repo, "rev-parse", after), git(repo, "rev-list", "--reverse", f"{after}..{until}").split()
    for c in replay:
        if "kernel/sys.c" in git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", c).splitlines():
            sys.exit(f"error: {c[:12]} changes kernel/sys.c: the planted change cannot be replayed under it")
    text = git(repo, "show", f"{base}:kernel/sys.c") + "\n"
    if text.count(GETPPID) != 1:
        sys.exit("error: getppid() in kernel/sys.c is not as expected: cannot plant the change")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text.replace(GETPPID, PLANTED),
                          capture_output=True, text=True, check=True).stdout.strip()
    index = repo / ".git" / "layoutbench-plant.index"
    fixed = {"GIT_COMMITTER_DATE": DATE, "GIT_COMMITTER_NAME": "layoutbench",
             "GIT_COMMITTER_EMAIL": "layoutbench@localhost", "GIT_INDEX_FILE": str(index)}

    def commit(tree_of: str, parent: str, msg: str, author: tuple[str, str, str]) -> str:
        git(repo, "read-tree", tree_of, env=fixed)
        git(repo, "update-index", "--cacheinfo", f"100644,{blob},kernel/sys.c", env=fixed)
        tree = git(repo, "write-tree", env=fixed)
        env = {**fixed, "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": author[2]}
        return subprocess.run(["git", "commit-tree", tree, "-p", parent, "-F", "-"], cwd=repo, input=msg, text=True,
                              capture_output=True, check=True, env={**os.environ, **env}).stdout.strip()

    head = commit(base, base, f"getppid: planted regression ({PLANT_LOOPS} turns of a 2-instruction loop)\n\n"
                  "Not a Debian patch: layoutbench plants it (bench/debian_linux_history.py plant) so that the\n"
                  "history holds one change the /init benchmark measures beyond layout noise.\n",
                  ("layoutbench", "layoutbench@localhost", DATE))
    for c in replay:
        name, email, date = git(repo, "log", "-1", "--format=%an%x00%ae%x00%aI", c).split("\0")
        head = commit(c, head, git(repo, "log", "-1", "--format=%B", c) + "\n", (name, email, date))
    index.unlink(missing_ok=True)
    git(repo, "branch", branch, head)
    return head


# -- 4./5. sweep and bisect ----------------------------------------------------------------------

def lb(*args: str, workdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAYOUTBENCH_DIR": str(workdir / "lb")}
    return subprocess.run([sys.executable, "-m", "layoutbench.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", nargs="+", choices=["fetch", "repo", "touching", "plant", "sweep", "bisect", "table"])
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--version", help="the linux source package version (default: the newest served)")
    ap.add_argument("--objdir", type=Path, help="touching: a Linux build's object folder (with .*.cmd files)")
    ap.add_argument("--tree", type=Path, help="touching: the source tree that build compiled (default: OBJDIR/../src/*)")
    ap.add_argument("--range", default=None, help="a range of the repository (default: the whole series)")
    ap.add_argument("--plant-after", help="plant: the commit the planted change follows")
    ap.add_argument("--plant-until", help="plant: the last commit replayed on top of it")
    ap.add_argument("--layouts", default="default,random:4", help="sweep: the layouts of every commit")
    ap.add_argument("--k", type=int, default=4, help="bisect: seeded layouts per probe")
    ap.add_argument("--json", type=Path, help="write the results here")
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
        out["planted"] = {"after": git(repo, "rev-parse", o.plant_after), "tip": plant(repo, o.plant_after, o.plant_until),
                          "branch": "layoutbench/planted", "loops": PLANT_LOOPS}
        print(f"planted: layoutbench/planted = {out['planted']['tip'][:12]} (after {o.plant_after})")
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
    if "sweep" in o.steps:
        p = lb("history", "linux", "--repo", str(repo), rng, "--every-commit", "--target", "qemu-icache",
               "--layouts", o.layouts, "--runs", "1", "--metric", "ic_cost", "--json", workdir=o.workdir)
        if p.returncode != 0:
            sys.exit(f"error: layoutbench history failed: {p.stderr.strip().splitlines()[-1:]}")
        out["history"] = json.loads(p.stdout)
        print(p.stdout[:4000])
    if "bisect" in o.steps:
        p = lb("bisect", "run", "linux", rng, "--repo", str(repo), "--target", "qemu-icache",
               "--layouts", str(o.k), "--metric", "ic_cost", workdir=o.workdir)
        out["bisect"] = {"returncode": p.returncode, "stdout": p.stdout[-4000:], "stderr": p.stderr[-2000:]}
        print(p.stdout[-4000:] or p.stderr[-2000:])
    if o.json:
        o.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
