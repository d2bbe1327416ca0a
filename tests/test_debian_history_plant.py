"""bench/debian_linux_history.py's ``plant`` on a real git repository: the planted getppid()
loop appears at the planted commits and nowhere else, the replayed commits keep their own
changes, two places give two steps (the second adds its turns), and the hashes are the same
when the same history is planted again."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT, git, script

dlh = script("bench/debian_linux_history.py")

SYS_C = "long sys_getppid(void)\n{\n\tint pid;\n\n" + dlh.GETPPID


def history(path):
    """A repository: kernel/sys.c with Linux's getppid() body, then four commits touching other files."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "kernel").mkdir()
    (path / "kernel" / "sys.c").write_text(SYS_C)
    (path / "Makefile").write_text("v = 0\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    for i in range(1, 5):
        (path / "Makefile").write_text(f"v = {i}\n")
        (path / f"f{i}.c").write_text(f"int f{i};\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"patch {i}")
    return path


def loops_at(repo, rev) -> int:
    """The planted turns in getppid() at REV (0: none)."""
    m = re.search(r"unsigned long n = (\d+);", git(repo, "show", f"{rev}:kernel/sys.c"))
    return int(m.group(1)) if m else 0


def test_two_places_plant_two_steps_and_the_replayed_commits_keep_their_changes(tmp_path):
    repo = history(tmp_path / "h")
    first = git(repo, "rev-parse", "HEAD~3")  # patch 1
    second = git(repo, "rev-parse", "HEAD~1")  # patch 3
    tip = dlh.plant(repo, [first, second], "main", [50, 30])
    assert git(repo, "rev-parse", "layoutbench/planted-50-30") == tip
    log = git(repo, "log", "--reverse", "--format=%H %s", f"{first}..{tip}").splitlines()
    subjects = [line.split(" ", 1)[1] for line in log]
    assert subjects == ["getppid: planted regression (50 turns of a 2-instruction loop)", "patch 2", "patch 3",
                        "getppid: planted regression (30 more turns of a 2-instruction loop, 80 in all)", "patch 4"]
    assert [loops_at(repo, line.split()[0]) for line in log] == [50, 50, 50, 80, 80]
    for line in log:  # every replayed commit has its original's files, sys.c aside
        sha, subject = line.split(" ", 1)
        if subject.startswith("patch"):
            orig = git(repo, "log", "--format=%H", "--grep", f"^{subject}$", "main")
            assert git(repo, "diff", "--name-only", orig, sha) == "kernel/sys.c"
    assert loops_at(repo, "main") == 0


def test_the_same_plant_gives_the_same_hashes_and_a_single_place_keeps_its_branch_name(tmp_path):
    tips = []
    for name in ("a", "b"):
        repo = history(tmp_path / name)
        tips.append(dlh.plant(repo, git(repo, "rev-parse", "HEAD~2"), "main", 25))
        assert git(repo, "rev-parse", "layoutbench/planted-25") == tips[-1]
        assert dlh.plant(repo, "HEAD~2", "main", 25) == tips[-1]  # run again: the branch as it is
    assert tips[0] == tips[1]


@pytest.mark.parametrize("afters, loops, says", [
    ("HEAD~3,HEAD~1", "50", "2 --plant-after place(s) but 1 --loops value(s)"),
    ("HEAD~1,HEAD~3", "50,30", "is not between"),
])
def test_places_and_loops_that_do_not_fit_are_one_line_errors(tmp_path, afters, loops, says):
    repo = history(tmp_path / "h")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "linux_1-1.dsc").write_text("")
    (tmp_path / "repo-1-1").symlink_to(repo)
    git(repo, "tag", "debian/1-1")
    p = subprocess.run([sys.executable, "-m", "bench.debian_linux_history", "--workdir", str(tmp_path),
                        "--version", "1-1", "plant", "--plant-after", afters, "--plant-until", "main",
                        "--loops", loops], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode != 0 and says in p.stderr and "Traceback" not in p.stderr
