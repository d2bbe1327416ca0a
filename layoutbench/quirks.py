"""Quirks: what old commits need in order to build.

``quirks/<kernel>.toml`` (or the file named by the profile's ``quirks`` key, or by
``$LAYOUTBENCH_QUIRKS``) holds a list of entries::

    [[quirk]]
    name = "werror-clang19"            # short id, shown as a marker in reports
    reason = "warnings became errors"  # why it exists
    from = "1a2b3c"                    # first commit that needs it (inclusive)
    until = "4d5e6f"                   # first commit that no longer needs it (exclusive; optional)
    commits = ["7a8b9c"]               # or/and: exactly these commits
    all = true                         # or: every build (commits and source tarballs alike)
    patch = "minikernel/fix.patch"     # apply with `git apply -p1` (path relative to the quirks file)
    env = { EXTRA_CFLAGS = "-Wno-error" }  # set for the build
    run = "sed -i 's/x/y/' Makefile"   # shell command run in the tree before the build
    skip = false                       # true: do not build these commits at all (bisect skips them)

A commit C is in range when ``from`` is an ancestor of C (or C itself) and ``until``
is not.  Quirks are applied to the exported tree of a commit, never to a working tree.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import paths, procs
from .errors import BuildFailed, LayoutbenchError
from .source import git  # GitPython, imported on first use


@dataclass(frozen=True)
class Quirk:
    name: str
    reason: str
    file: Path
    start: str | None = None
    until: str | None = None
    commits: tuple[str, ...] = ()
    patch: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    run: str | None = None
    skip: bool = False
    always: bool = False

    def key(self) -> str:
        """What changes the build: part of the object cache key."""
        patch = (self.file.parent / self.patch).read_text() if self.patch else ""
        return repr((self.name, patch, self.env, self.run, self.skip))

    def actions(self) -> str:
        acts = []
        if self.patch:
            acts.append(f"patch {self.patch}")
        if self.env:
            acts.append("env " + " ".join(f"{k}={v}" for k, v in self.env))
        if self.run:
            acts.append(f"run {self.run!r}")
        if self.skip:
            acts.append("skip")
        return ", ".join(acts)

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason, "from": self.start, "until": self.until,
                "commits": list(self.commits), "all": self.always, "actions": self.actions()}


def quirks_file(profile) -> Path:
    env = os.environ.get("LAYOUTBENCH_QUIRKS")
    if env:
        return Path(env).resolve()
    if getattr(profile, "quirks", None):
        return profile.quirks
    return paths.QUIRKS / f"{profile.name}.toml"


def load(profile) -> list[Quirk]:
    file = quirks_file(profile)
    if not file.is_file():
        return []
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise LayoutbenchError(f"{file}: not valid TOML ({e}); fix the file") from None
    out = []
    for i, q in enumerate(data.get("quirk", [])):
        name = q.get("name") or f"quirk-{i + 1}"
        if not isinstance(q, dict) or not ({"from", "commits", "all"} & q.keys()):
            raise LayoutbenchError(f"{file}: quirk {name!r} needs 'from' (a commit), 'commits' (a list) or 'all = true'")
        patch = q.get("patch")
        if patch and not (file.parent / patch).is_file():
            raise LayoutbenchError(f"{file}: quirk {name!r} names patch {patch!r}, which does not exist")
        if not any(k in q for k in ("patch", "env", "run", "skip")):
            raise LayoutbenchError(f"{file}: quirk {name!r} does nothing; give patch, env, run or skip")
        out.append(Quirk(
            name=name, reason=q.get("reason", ""), file=file, start=q.get("from"), until=q.get("until"),
            commits=tuple(q.get("commits", [])), patch=patch,
            env=tuple(sorted((k, str(v)) for k, v in q.get("env", {}).items())),
            run=q.get("run"), skip=bool(q.get("skip", False)), always=bool(q.get("all", False)),
        ))
    return out


def _is_ancestor(repo: git.Repo, a: str, b: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", a, b)
        return True
    except git.GitCommandError as e:
        if e.status == 1:
            return False
        raise LayoutbenchError(f"quirk commit {a!r} is not in {repo.working_dir}; fix the quirks file") from None


def matches(q: Quirk, repo: git.Repo | None, commit: str) -> bool:
    if q.always:
        return True
    if repo is None:
        return False
    if any(commit.startswith(c) or repo.commit(c).hexsha == commit for c in q.commits):
        return True
    if q.start is None:
        return False
    return _is_ancestor(repo, q.start, commit) and not (q.until and _is_ancestor(repo, q.until, commit))


def applicable(profile, checkout) -> list[Quirk]:
    """The quirks that apply to a commit or source tarball (none for a working-tree build:
    layoutbench never changes the user's own files)."""
    if checkout.commit == "worktree":
        return []
    qs = load(profile)
    if not qs:
        return []
    repo = git.Repo(checkout.repo) if checkout.repo is not None else None
    return [q for q in qs if matches(q, repo, checkout.commit)]


def prepare(applied: list[Quirk], src: Path, log: Path, timeout: float | None = None) -> dict[str, str]:
    """Apply patches and commands to an exported tree; return the variables the quirks set, in
    their order (a later quirk's value wins): what the build adds to its environment and what
    build.json records, never the rest of the caller's environment.  A command runs in its own
    process group, killed whole after ``timeout`` seconds."""
    env: dict[str, str] = {}
    with open(log, "a") as out:
        for q in applied:
            out.write(f"# quirk {q.name}: {q.reason} ({q.actions()})\n")
            out.flush()
            if q.patch:
                patch = (q.file.parent / q.patch).resolve()
                # the exported tree is not a repository; keep git from finding one around it (this
                # environment is git's alone: the build gets only the quirks' own variables)
                git_env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(Path(src).resolve().parent)}
                p = subprocess.run(["git", "apply", "-p1", "--whitespace=nowarn", str(patch)], cwd=src,
                                   stdout=out, stderr=subprocess.STDOUT, env=git_env)
                if p.returncode != 0:
                    raise BuildFailed(f"quirk {q.name}: patch {q.patch} does not apply; see {log}")
            if q.run:
                p = procs.start(q.run, shell=True, cwd=src, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
                if procs.finish(p, timeout):
                    raise BuildFailed(f"quirk {q.name}: command {q.run!r} timed out after {timeout:.0f}s; see {log}")
                if p.returncode != 0:
                    raise BuildFailed(f"quirk {q.name}: command {q.run!r} failed (exit {p.returncode}); see {log}")
            env.update(dict(q.env))
    return env
