"""A profile given by its folder, outside the search path (getting-started.md: any command takes the
profile's folder): the commands that later find it by the name the work folder holds under it (the
report of a history, the cache view of two builds, whose plans name the profile) find it too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import git, lb

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "guide" / "example"


@pytest.fixture
def myprog(tmp_path):
    """The guide's example program as a profile ``myprog`` in a folder of its own, its source a
    git repository of two commits (the second changes a comment only); a work folder of its own."""
    d = tmp_path / "elsewhere" / "myprog"
    shutil.copytree(EXAMPLE, d)
    toml = (d / "kernel.toml").read_text()
    (d / "kernel.toml").write_text(toml.replace('name = "example"', 'name = "myprog"')
                                   .replace('tree = "src"', 'repo = "src"'))
    src = d / "src"
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "one")
    readme = src / "README"
    readme.write_text("the example program\n")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "two")
    env = {"LAYOUTBENCH_DIR": str(tmp_path / "work"), "LAYOUTBENCH_PROFILES": ""}
    return d, env, tmp_path


def test_report_and_the_cache_view_find_a_profile_given_by_its_folder(myprog):
    d, env, tmp = myprog
    prof = f"./{d.name}"
    cwd = d.parent
    lb("history", prof, "HEAD~1..HEAD", "--target", "cachegrind", "--layouts", "default,random:1", "--runs", "1",
       env=env, cwd=cwd)
    for given in (prof, f"{prof}/kernel.toml", "myprog"):  # the folder, its kernel.toml, the name it stored
        site = tmp / f"site-{len(given)}"
        p = lb("report", given, "-o", str(site), env=env, cwd=cwd, check=False)
        assert p.returncode == 0 and (site / "index.html").is_file(), (given, p.stderr)
    p = lb("symdiff", f"{prof}@HEAD:default", f"{prof}@HEAD:random:1", "--cache", "2048,2,64", "--json",
           env=env, cwd=cwd, check=False)
    assert p.returncode in (0, 1), p.stderr
    view = json.loads(p.stdout)["cache"]
    assert view["counts_from"] == "cachegrind" and view["functions"], view.get("counts_from")
    assert any(f["name"] == "main" for f in view["functions"]), [f["name"] for f in view["functions"]]


def test_a_name_remembered_from_a_folder_that_moved_is_unknown_again(myprog):
    d, env, tmp = myprog
    (tmp / "work").mkdir()
    lb("kernels", env=env)  # a command that loads no profile remembers none
    assert not (tmp / "work" / "profiles.json").exists()
    lb("build", str(d), "--layout", "default", env=env, cwd=tmp)
    assert json.loads((tmp / "work" / "profiles.json").read_text()) == {"myprog": str(d / "kernel.toml")}
    d.rename(d.parent / "moved")
    p = lb("build", "myprog", "--layout", "default", env=env, cwd=tmp, check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "unknown kernel 'myprog'" in p.stderr, p.stderr
