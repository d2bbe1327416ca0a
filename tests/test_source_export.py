"""A commit's tree written out for a build (``source.export``): the files, their modes and links as
git holds them, a subdirectory alone when the kernel lives in one, and a refusal in one line when
git cannot write it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import git
from layoutbench import source
from layoutbench.errors import LayoutbenchError


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "repo"
    (r / "kernel" / "sub dir").mkdir(parents=True)
    (r / "kernel" / "sub dir" / "naïve file.c").write_text("int x;\n")
    (r / "kernel" / "build.sh").write_text("#!/bin/sh\necho built\n")
    (r / "kernel" / "build.sh").chmod(0o755)
    (r / "kernel" / "link.h").symlink_to("sub dir/naïve file.c")
    (r / "README").write_text("top\n")
    (r / ".gitignore").write_text("*.o\n")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "one")
    (r / "README").write_text("top, again\n")
    git(r, "commit", "-q", "-am", "two")
    return r


def _tree(path: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = ("exec" if os.access(p, os.X_OK) else "file", p.read_text())
    return out


def test_a_commit_is_written_as_git_holds_it(repo, tmp_path):
    first = git(repo, "rev-list", "--max-parents=0", "HEAD")
    got = _tree(source.export(source.Checkout(repo, "", first, None), tmp_path / "a"))
    assert got == {".gitignore": ("file", "*.o\n"), "README": ("file", "top\n"),
                   "kernel/build.sh": ("exec", "#!/bin/sh\necho built\n"),
                   "kernel/link.h": ("link", "sub dir/naïve file.c"),
                   "kernel/sub dir/naïve file.c": ("file", "int x;\n")}
    head = git(repo, "rev-parse", "HEAD")
    assert _tree(source.export(source.Checkout(repo, "", head, None), tmp_path / "b"))["README"] == ("file", "top, again\n")


def test_a_kernel_in_a_subdirectory_is_written_alone(repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD")
    tree = source.export(source.Checkout(repo, "kernel", head, None), tmp_path / "k")
    assert tree == tmp_path / "k" / "kernel" and sorted(_tree(tmp_path / "k")) == [
        "kernel/build.sh", "kernel/link.h", "kernel/sub dir/naïve file.c"]


def test_a_tree_git_cannot_write_is_one_line_naming_it(repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(LayoutbenchError) as e:
        source.export(source.Checkout(repo, "no-such-dir", head, None), tmp_path / "x")
    msg = str(e.value)
    assert msg.startswith(f"cannot export no-such-dir at {head[:12]} from {repo}: ") and "\n" not in msg, msg
    assert "no-such-dir" in msg.split(": ", 1)[1], msg  # git's own reason, naming the path
