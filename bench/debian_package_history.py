"""A Debian source package as a git history: its upstream tarball, then one commit per patch of its series.

Real histories nobody wrote for layoutbench, for ``bench/real_history.py`` (docs/real-history.md):

    python3 -m bench.debian_package_history --workdir /tmp/rh dash=0.5.12-12
    python3 -m bench.debian_package_history --workdir /tmp/rh xz-utils=5.4.1-1+deb12u1 xz-utils=5.8.1-1+deb13u1

downloads the source package once (``apt-get source --download-only`` through a private apt
configuration in WORKDIR: ``deb-src`` lines for the machine's Debian mirror and the suites given
by ``--suites``, default bookworm trixie sid; the machine's own apt setup is not touched), and
makes WORKDIR/PACKAGE/repo: the orig tarball as the first commit, then each patch of
``debian/patches/series`` in order (several versions, oldest first: each one's orig tarball
replaces the tree in one commit, then its patches follow) (author, date and subject from its header, the patch's name
as a ``Debian-Patch:`` trailer, fixed committer dates: the same hashes on every machine), tagged
``debian/VERSION``.  Run again, it does nothing.  It prints the repository's path.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from bench.debian_linux_history import DATE, git, patch_header


def apt_opts(workdir: Path) -> list[str]:
    a = workdir / "apt"
    return ["-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={a / 'parts'}",
            "-o", f"Dir::State::Lists={a / 'lists'}", "-o", f"Dir::Cache={a / 'cache'}"]


def fetch(workdir: Path, package: str, version: str, suites: str, mirror: str) -> Path:
    """WORKDIR/PACKAGE/src holding PACKAGE_VERSION.dsc and its files (downloaded once)."""
    src = workdir / package / "src" / version.replace(":", "%")
    if (src / f"{package}_{version.split(':')[-1]}.dsc").is_file():
        return src
    a = workdir / "apt"
    for sub in ("parts", "lists/partial", "cache/archives/partial"):
        (a / sub).mkdir(parents=True, exist_ok=True)
    (a / "parts" / "layoutbench-src.sources").write_text(
        f"Types: deb-src\nURIs: {mirror}\nSuites: {suites}\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    if not any((a / "lists").glob("*Sources*")):
        p = subprocess.run(["apt-get", *apt_opts(workdir), "update"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"error: apt-get update for deb-src {mirror} {suites} failed: {p.stderr.strip()[-300:]}")
    src.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["apt-get", *apt_opts(workdir), "source", "--download-only", f"{package}={version}"],
                       cwd=src, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: apt-get source {package}={version} failed: {p.stderr.strip()[-300:]}")
    return src


def make_repo(workdir: Path, package: str, versions: list[tuple[str, Path]]) -> Path:
    """WORKDIR/PACKAGE/repo: for each version in turn, its orig tarball as one commit (the tree
    replaced by it), then one commit per patch of its series; each version tagged ``debian/VERSION``."""
    repo = workdir / package / "repo"
    fixed = {"GIT_COMMITTER_DATE": DATE, "GIT_COMMITTER_NAME": "layoutbench",
             "GIT_COMMITTER_EMAIL": "layoutbench@localhost"}
    for n, (version, src) in enumerate(versions):
        tag = f"debian/{version.replace(':', '%')}"
        if (repo / ".git").is_dir() and git(repo, "tag", "-l", tag):
            continue
        if n == 0 and (repo / ".git").is_dir():
            sys.exit(f"error: {repo} exists without its tag {tag}: remove it and run again")
        orig = sorted(src.glob(f"{package}_*.orig.tar.*"))
        orig = [o for o in orig if not o.name.endswith(".asc") and ".orig-" not in o.name]
        debian = sorted(src.glob(f"{package}_{version.split(':')[-1]}.debian.tar.*"))
        if len(orig) != 1 or len(debian) != 1:
            sys.exit(f"error: {src} holds no single orig and debian tarball of {package} {version} (a native "
                     f"package has no patch series): choose a package with debian/patches/series")
        repo.mkdir(parents=True, exist_ok=True)
        if n == 0:
            git(repo, "init", "-q", "-b", "main")
        else:
            git(repo, "rm", "-rq", "--ignore-unmatch", ".")
            git(repo, "clean", "-fdxq")
        subprocess.run(["tar", "-xf", str(orig[0]), "--strip-components=1", "-C", str(repo)], check=True)
        deb = workdir / package / f"debian-{version}"
        if not deb.is_dir():
            with tarfile.open(debian[0]) as t:
                t.extractall(workdir / package / f"debian-{version}.tmp", filter="data")
            (workdir / package / f"debian-{version}.tmp" / "debian").rename(deb)
        git(repo, "add", "-A", "-f")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{package} {orig[0].name} (Debian's orig tarball)",
            env={**fixed, "GIT_AUTHOR_NAME": f"{package} upstream", "GIT_AUTHOR_EMAIL": "upstream@localhost",
                 "GIT_AUTHOR_DATE": DATE})
        series_file = deb / "patches" / "series"
        series = [ln.split()[0] for ln in series_file.read_text().splitlines()
                  if ln.strip() and not ln.lstrip().startswith("#")] if series_file.is_file() else []
        for i, name in enumerate(series, 1):
            commit_patch(repo, deb / "patches" / name, f"{i} of {len(series)}", fixed)
        git(repo, "tag", tag)
    return repo


def commit_patch(repo: Path, path: Path, where: str, fixed: dict) -> None:
    """Apply one patch of a series and commit it with its own author, date and subject."""
    p = subprocess.run(["patch", "-p1", "-s", "-N", "--no-backup-if-mismatch", "-i", str(path)],
                       cwd=repo, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: debian/patches/{path.name} does not apply (patch {where}): "
                 f"{(p.stdout + p.stderr).strip().splitlines()[:2]}")
    author, email, date, subject = patch_header(path.read_text(errors="replace"))
    git(repo, "add", "-A", "-f")
    env = {**os.environ, **fixed, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date or DATE}
    msg = f"{subject or path.name}\n\nDebian-Patch: {path.name}\n"
    r = subprocess.run(["git", "commit", "-q", "--allow-empty", "-F", "-"], input=msg, cwd=repo, text=True,
                       capture_output=True, env=env)
    if r.returncode != 0:  # an author date git cannot parse: the fixed one
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-F", "-"], input=msg, cwd=repo, text=True,
                       check=True, capture_output=True, env={**env, "GIT_AUTHOR_DATE": DATE})


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="+", help="PACKAGE=VERSION, e.g. dash=0.5.12-12; several versions of one "
                    "package (oldest first) follow each other in one history")
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--suites", default="bookworm trixie sid")
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    a = ap.parse_args()
    versions, package = [], None
    for word in a.versions:
        name, _, version = word.partition("=")
        if not version or not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", name) or package not in (None, name):
            sys.exit(f"error: {word!r}: give PACKAGE=VERSION, one package (apt-cache showsrc PACKAGE lists the "
                     f"versions)")
        package = name
        versions.append((version, fetch(a.workdir.resolve(), name, version, a.suites, a.mirror)))
    print(make_repo(a.workdir.resolve(), package, versions))


if __name__ == "__main__":
    main()
