"""Kernel sources with GitPython: resolve revisions and ranges, export trees, read logs."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import LayoutbenchError
from .profile import Profile


class _LazyGit:
    """GitPython, imported on first use: it takes ~60 ms, and commands reading only ELF files need none of it."""

    def __getattr__(self, name: str):
        import git as module

        return getattr(module, name)


git = _LazyGit()

WORKTREE = "worktree"  #: the commit name of a build from the working tree as it is


@dataclass(frozen=True)
class Checkout:
    """A resolved kernel source: a commit of a repository, or a working tree."""

    repo: Path | None
    subdir: str
    commit: str  #: full sha, ``worktree``, or ``tarball-<hash>``
    tree: Path | None  #: for a working-tree build: the folder to build in place
    tarball: Path | None = None  #: for a tarball source: the archive to unpack

    @property
    def short(self) -> str:
        return self.commit[:12]

    @property
    def key(self) -> str:
        """Names this source in the work directory: a commit's short id, or for a working
        tree ``worktree-<hash of its path>``, so that two trees never share objects."""
        if self.commit == WORKTREE and self.tree is not None:
            return f"worktree-{hashlib.sha256(str(self.tree.resolve()).encode()).hexdigest()[:8]}"
        return self.short


def _open(repo: Path) -> git.Repo:
    try:
        return git.Repo(repo)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise LayoutbenchError(f"{repo} is not a git repository; give one with --repo") from None


def repo_for(profile: Profile, repo: str | None = None, subdir: str | None = None) -> tuple[Path | None, str]:
    """The repository and subdir to use: ``--repo`` (tree at its top unless ``--subdir``) or the profile's."""
    if repo is not None:
        return Path(repo).resolve(), subdir or ""
    return profile.source.repo, profile.source.subdir if subdir is None else subdir


def resolve(profile: Profile, rev: str | None, repo: str | None = None, subdir: str | None = None) -> Checkout:
    """Resolve ``rev`` (None: the working tree as it is) to a :class:`Checkout`."""
    repo_path, sub = repo_for(profile, repo, subdir)
    if repo is None and profile.source.tarball is not None and rev in (None, WORKTREE, "tarball"):
        tb = profile.source.tarball
        if not tb.is_file():
            raise LayoutbenchError(f"source tarball {tb} does not exist; install it (see {profile.path}) or give --repo")
        st = tb.stat()
        key = hashlib.sha256(f"{tb}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:12]
        return Checkout(None, "", f"tarball-{key}", None, tb)
    if rev is None or rev == WORKTREE:
        base = repo_path if repo_path is not None else profile.source.tree
        tree = base / sub if sub else base
        if not tree.is_dir():
            raise LayoutbenchError(f"kernel tree {tree} does not exist; check [source] in {profile.path} or --repo")
        return Checkout(repo_path, sub, WORKTREE, tree)
    if repo_path is None:
        raise LayoutbenchError(f"kernel {profile.name} has no git repository; --commit needs --repo")
    return Checkout(repo_path, sub, _commit(_open(repo_path), rev, repo_path).hexsha, None)


def _commit(r: git.Repo, rev: str, repo_path: Path) -> git.Commit:
    """The commit ``rev`` names, read (GitPython takes a full-length name on trust), or the error
    that names it."""
    try:
        c = r.commit(rev)
        c.tree  # reading the object: a full-length name of a missing commit fails here
        return c
    except (git.BadName, ValueError, git.GitCommandError):
        raise LayoutbenchError(f"commit {rev!r} does not exist in {repo_path}; check the revision (git log)") from None


def export(checkout: Checkout, dest: Path) -> Path:
    """Write the commit's kernel tree into ``dest`` (``git archive`` streamed into ``tar -x``, or the
    unpacked tarball); return the tree's folder."""
    dest.mkdir(parents=True, exist_ok=True)
    if checkout.tarball is not None:
        p = subprocess.run(["tar", "-xf", str(checkout.tarball), "-C", str(dest)], capture_output=True, text=True)
        if p.returncode != 0:
            raise LayoutbenchError(f"cannot unpack {checkout.tarball}: {p.stderr.strip()[:200]}")
        tops = [d for d in dest.iterdir() if d.is_dir()]
        return tops[0] if len(tops) == 1 else dest
    assert checkout.repo is not None and checkout.commit != WORKTREE
    # a pipe, not a tar in memory: a Linux tree is 1.5 GB
    with tempfile.TemporaryFile() as git_err:
        archive = subprocess.Popen(["git", "-C", str(checkout.repo), "archive", "--format=tar", checkout.commit,
                                    *([checkout.subdir] if checkout.subdir else [])],
                                   stdout=subprocess.PIPE, stderr=git_err)
        untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True, text=True)
        archive.stdout.close()
        archive.wait()
        git_err.seek(0)
        err = git_err.read().decode(errors="replace").strip()
    if archive.returncode != 0 or untar.returncode != 0:
        why = err.splitlines()[-1] if err else untar.stderr.strip()[:200] or f"git archive exited {archive.returncode}"
        raise LayoutbenchError(f"cannot export {checkout.subdir or 'the tree'} at {checkout.short} from "
                               f"{checkout.repo}: {why}")
    return dest / checkout.subdir if checkout.subdir else dest


def split_range(spec: str, shape: str = "GOOD..BAD") -> tuple[str, str]:
    """``A..B`` into its two ends; git's ``A...B`` (the symmetric difference) is refused in one line."""
    if "..." in spec:
        raise LayoutbenchError(f"range {spec!r}: A...B (git's symmetric difference) has no single direction to "
                               f"bisect or sweep; give {shape} with two dots")
    if ".." not in spec:
        raise LayoutbenchError(f"range {spec!r} must look like {shape}")
    a, b = spec.split("..", 1)
    return a, b


def rev_range(profile: Profile, spec: str, repo: str | None = None, subdir: str | None = None) -> list[str]:
    """The commits of ``A..B`` oldest first, A excluded (as git), following first parents."""
    repo_path, _ = repo_for(profile, repo, subdir)
    if repo_path is None:
        raise LayoutbenchError(f"kernel {profile.name} has no git repository; give one with --repo")
    a, b = split_range(spec)
    r = _open(repo_path)
    for rev in (a, b):
        _commit(r, rev, repo_path)
    shas = r.git.rev_list("--first-parent", "--reverse", f"{a}..{b}").split()
    return shas


def describe(checkout: Checkout) -> dict:
    """Subject, author and date of a commit, for reports."""
    if checkout.commit == WORKTREE or checkout.repo is None:
        return {"commit": checkout.commit, "subject": "working tree"}
    c = _open(checkout.repo).commit(checkout.commit)
    return {
        "commit": c.hexsha,
        "subject": c.summary,
        "author": c.author.name,
        "date": c.committed_datetime.isoformat(),
    }


def log_between(repo: Path, a: str, b: str) -> list[dict]:
    """The commits in ``a..b``, newest first, as dicts (sha, subject, author, date)."""
    r = _open(repo)
    return [
        {"commit": c.hexsha, "subject": c.summary, "author": c.author.name,
         "date": c.committed_datetime.isoformat()}
        for c in r.iter_commits(f"{a}..{b}")
    ]
