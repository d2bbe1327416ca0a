"""``layoutbench report -o D`` writes only a folder it owns: real folders, files and symbolic
links around a real (two-commit) history of the tiny program.

A folder holding anything layoutbench did not write is refused in one line and left as it was;
a link is never written through (a linked ``D`` is refused, links planted inside an owned ``D``
are replaced, their targets untouched); ``/`` and the home folder are refused; a second report
on its own output replaces it whole; the new folder is built beside ``D`` and swapped in, and an
error while writing leaves ``D`` as it was with nothing left beside it.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hostile import cli_cases as hostile_cli
from conftest import git, lb
from layoutbench import owned
from layoutbench.errors import LayoutbenchError


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A store holding a history of two commits of the tiny program; ``report(dest)`` runs
    ``layoutbench report tiny -o dest`` as a process and returns it finished."""
    d = tmp_path_factory.mktemp("owned")
    hostile_cli.write_tiny(d / "profiles" / "tiny")
    src = d / "profiles" / "tiny" / "src"
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "one")
    with open(src / "hot.c", "a") as f:
        f.write("/* two */\n")
    git(src, "commit", "-qam", "two")
    env = {"LAYOUTBENCH_DIR": str(d / "work"), "LAYOUTBENCH_PROFILES": str(d / "profiles"),
           "LAYOUTBENCH_STORE": str(d / "s.sqlite"), "HOME": str(d / "home"),
           "CCACHE_DIR": str(d / "ccache")}  # the build's compiler cache is kept out of the home folder
    (d / "home").mkdir()
    lb("history", "tiny", "HEAD~1..HEAD", "--repo", str(src), "--layouts", "default", "--runs", "1",
       "--args", "5", env=env, timeout=300)

    def report(dest, cwd=None):
        return lb("report", "tiny", "-o", str(dest), env=env, check=False, timeout=300, cwd=cwd)

    def report_under_readonly_root(dest):
        """The same in a private mount namespace where ``/`` is read-only (only this test's
        folder is writable): a report that would write into ``/`` cannot."""
        cmd = " ".join(shlex.quote(w) for w in (sys.executable, "-m", "layoutbench.cli", "report", "tiny", "-o", dest))
        q = shlex.quote(str(d))
        script = (f"mount --bind / / && mount -o remount,bind,ro / && mount --bind {q} {q} && "
                  f"mount -o remount,bind,rw {q} && exec {cmd}")
        return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=300)
    return {"dir": d, "env": env, "report": report, "report_ro_root": report_under_readonly_root}


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links not followed): relative path → file text or link target."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for n in dirs + files:
            p = Path(root) / n
            rel = str(p.relative_to(folder))
            out[rel] = ("-> " + os.readlink(p)) if p.is_symlink() else p.read_text() if p.is_file() else "/"
    return out


def _refused(p, *words):
    """One error line, no traceback, a non-zero exit, naming each of ``words``."""
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("layoutbench: error: ")]
    assert len(lines) == 1, p.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _leftovers(parent: Path, name: str) -> list[str]:
    return [n for n in os.listdir(parent) if n.startswith(f".{name}.")]


def test_a_folder_holding_other_files_is_refused_and_kept(site, tmp_path):
    d = tmp_path / "D"
    (d / "files").mkdir(parents=True)
    (d / "files" / "thesis.txt").write_text("three years of work\n")
    (d / "index.html").write_text("my own page\n")
    before = _tree(d)
    line = _refused(site["report"](d), str(d), "did not write", "new folder")
    assert "-o" in line
    assert _tree(d) == before
    assert _leftovers(tmp_path, "D") == []


def test_a_linked_folder_is_refused_and_its_target_untouched(site, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "D").symlink_to(target)
    _refused(site["report"](tmp_path / "D"), str(tmp_path / "D"), "symbolic link")
    assert os.listdir(target) == [] and (tmp_path / "D").is_symlink()


def test_links_planted_in_its_own_output_are_not_followed(site, tmp_path):
    d = tmp_path / "D"
    assert site["report"](d).returncode == 0
    victims = tmp_path / "victims"
    (victims / "files").mkdir(parents=True)
    (victims / "files" / "thesis.txt").write_text("thesis\n")
    for n in ("index.html", "style.css", "history.json"):
        (victims / n).write_text(f"the user's {n}\n")
        (d / n).unlink()
        (d / n).symlink_to(victims / n)
    os.rename(d / "files", tmp_path / "old-files")
    (d / "files").symlink_to(victims / "files")
    before = _tree(victims)
    p = site["report"](d)
    assert p.returncode == 0, p.stderr
    assert _tree(victims) == before
    for n in ("index.html", "style.css", "history.json", "files"):
        assert not (d / n).is_symlink()
    assert "<html" in (d / "index.html").read_text()
    assert _leftovers(tmp_path, "D") == []


def test_the_root_and_the_home_folder_are_refused(site, tmp_path):
    """``report -o /`` runs with / read-only in a private mount namespace, so that a wrong answer
    cannot write there; where no namespace can be made, the same refusal is asked of owned.check,
    which every writer calls first, and nothing is run against /."""
    before = sorted(os.listdir("/"))
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0:
        _refused(site["report_ro_root"]("/"), "into /,", "root folder")
    else:
        with pytest.raises(LayoutbenchError, match="into /, the root folder"):
            owned.check(Path("/"), "report")
    assert sorted(os.listdir("/")) == before
    home = Path(site["env"]["HOME"])
    assert os.listdir(home) == []
    _refused(site["report"](home), str(home), "home folder")  # empty, and still refused
    assert os.listdir(home) == []
    _refused(site["report"]("..", cwd=home), str(home.parent))  # the folder above: not a report


def test_a_second_report_replaces_its_own_output_whole(site, tmp_path):
    d = tmp_path / "D"
    d.mkdir()  # an empty folder is taken
    p = site["report"](d)
    assert p.returncode == 0, p.stderr
    first = _tree(d)
    assert owned.MARKER in first and "index.html" in first and any(k.startswith("commits/") for k in first)
    listed = (d / owned.MARKER).read_text().splitlines()[1:]
    assert sorted(ln.removeprefix(owned.FILE) for ln in listed) == sorted(k for k in first if k != owned.MARKER) \
        and "commits" in [ln.removeprefix(owned.FILE) for ln in listed]  # its folders too
    p = site["report"](d)
    assert p.returncode == 0, p.stderr
    second = _tree(d)
    assert set(second) == set(first)
    assert _leftovers(tmp_path, "D") == []
    assert "wrote" in p.stdout and str(d / "index.html") in p.stdout
    # a file the report did not write (a page copied in, notes): named, kept, the report refused
    (d / "commits" / "notes.html").write_text("my notes\n")
    (d / "copy").mkdir()
    _refused(site["report"](d), str(d), "commits/notes.html, copy")
    assert (d / "commits" / "notes.html").read_text() == "my notes\n" and _tree(d).keys() - {"commits/notes.html", "copy"} \
        == second.keys() and _leftovers(tmp_path, "D") == []


# -- the module itself, on real folders ------------------------------------------------------------

def test_an_error_while_writing_leaves_the_folder_as_it_was(tmp_path):
    d = tmp_path / "D"
    saved = os.umask(0o002)
    try:
        with owned.replacing(d, "report") as tmp:
            (tmp / "a.txt").write_text("first\n")
        assert os.umask(0o002) == 0o002  # the mask is read, and left as it was
    finally:
        os.umask(saved)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o775  # as mkdir under that mask makes it, not mkdtemp's 0700
    before = _tree(d)
    with pytest.raises(RuntimeError):
        with owned.replacing(d, "report") as tmp:
            (tmp / "a.txt").write_text("second\n")
            raise RuntimeError("the writer failed")
    assert _tree(d) == before and _leftovers(tmp_path, "D") == []


def test_a_folder_that_stops_being_its_own_while_writing_is_given_back(tmp_path):
    d = tmp_path / "D"
    with owned.replacing(d, "report") as tmp:
        (tmp / "a.txt").write_text("first\n")
    with pytest.raises(LayoutbenchError, match="changed while"):
        with owned.replacing(d, "report") as tmp:
            (tmp / "a.txt").write_text("second\n")
            (d / owned.MARKER).unlink()  # someone else took the folder over meanwhile
            (d / "thesis.txt").write_text("mine\n")
            d_inode = os.stat(d).st_ino
    assert (d / "thesis.txt").read_text() == "mine\n" and (d / "a.txt").read_text() == "first\n"
    assert os.stat(d).st_ino == d_inode and _leftovers(tmp_path, "D") == []


@pytest.mark.parametrize("made", ["folder", "link", "file"])
def test_a_folder_made_meanwhile_is_judged_like_any_other(tmp_path, made):
    d = tmp_path / "D"
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(LayoutbenchError, match="changed while"):
        with owned.replacing(d, "report") as tmp:
            (tmp / "a.txt").write_text("new\n")
            if made == "folder":
                d.mkdir()
                (d / "thesis.txt").write_text("mine\n")
            elif made == "link":
                d.symlink_to(tmp_path / "elsewhere")
            else:
                d.write_text("mine\n")
    if made == "folder":
        assert _tree(d) == {"thesis.txt": "mine\n"}
    elif made == "link":
        assert d.is_symlink() and os.listdir(tmp_path / "elsewhere") == []
    else:
        assert d.read_text() == "mine\n"
    assert _leftovers(tmp_path, "D") == []


def test_its_own_folder_and_an_empty_one_are_replaced_whole(tmp_path):
    d = tmp_path / "new" / "sub" / "D"  # the folders above are made too
    for text in ("first\n", "second\n"):
        with owned.replacing(d, "report") as tmp:
            (tmp / text.strip()).write_text(text)
        assert _tree(d) == {owned.MARKER: owned.MARK.decode() + f"{owned.FILE}{text.strip()}\n", text.strip(): text}
    e = tmp_path / "E"
    e.mkdir()
    with owned.replacing(e, "report") as tmp:
        (tmp / "a").write_text("a\n")
    assert _tree(e) == {owned.MARKER: owned.MARK.decode() + f"{owned.FILE}a\n", "a": "a\n"}
    (e / "b").write_text("mine\n")  # added by a user: never deleted
    with pytest.raises(LayoutbenchError, match=r"did not write \(b\)"):
        with owned.replacing(e, "report") as tmp:
            (tmp / "a").write_text("again\n")
    assert _tree(e) == {owned.MARKER: owned.MARK.decode() + f"{owned.FILE}a\n", "a": "a\n", "b": "mine\n"}
    assert _leftovers(d.parent, "D") == [] and _leftovers(tmp_path, "E") == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_the_swap_exchanges_two_folders(tmp_path, exchange):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a\n")
    (b / "y").write_text("b\n")
    fds = len(os.listdir("/proc/self/fd"))
    assert owned._exchange(a, b, native=exchange) == ("renameat2" if exchange else "renames")
    assert len(os.listdir("/proc/self/fd")) == fds  # the folder's descriptor is closed again
    assert _tree(a) == {"y": "b\n"} and _tree(b) == {"x": "a\n"}
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
    with pytest.raises(OSError):
        owned._exchange(tmp_path / "missing", b, native=exchange)
    assert _tree(b) == {"x": "a\n"} and sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_the_check_refuses_root_home_links_files_and_foreign_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for dest, words in (("/", "root folder"), (tmp_path / "home", "home folder"), (tmp_path / "home" / ".", "home")):
        with pytest.raises(LayoutbenchError, match=words):
            owned.check(dest, "report")
    (tmp_path / "f").write_text("x\n")
    (tmp_path / "L").symlink_to(tmp_path / "home")
    (tmp_path / "D").mkdir()
    (tmp_path / "D" / "a").write_text("x\n")
    for dest, words in (("f", "not a folder"), ("L", "symbolic link"), ("D", "did not write")):
        with pytest.raises(LayoutbenchError, match=words) as e:
            owned.check(tmp_path / dest, "report")
        assert str(tmp_path / dest) in str(e.value) and "give -o a new folder" in str(e.value)
    (tmp_path / "E").mkdir()
    assert owned.check(tmp_path / "E") == tmp_path / "E"
    for dest in (tmp_path / "L" / "x", tmp_path / "L" / "sub" / "x"):  # a link above: never written through
        with pytest.raises(LayoutbenchError, match=f"through {tmp_path / 'L'}: it is a symbolic link"):
            owned.check(dest, "report")
    monkeypatch.chdir(tmp_path / "E")  # the current folder, or one holding it: replaced, the shell's is gone
    for dest in (".", tmp_path / "E", tmp_path):
        with pytest.raises(LayoutbenchError, match="current folder"):
            owned.check(dest, "report")


def test_ownership_needs_the_marker_as_a_file_of_its_own(tmp_path):
    d = tmp_path / "D"
    d.mkdir()
    assert not owned.is_owned(d)
    (d / owned.MARKER).write_text("something else\n")
    assert not owned.is_owned(d)
    (d / owned.MARKER).write_bytes(owned.MARK + b"and more\n")
    assert not owned.is_owned(d)
    (d / owned.MARKER).unlink()
    (tmp_path / "m").write_bytes(owned.MARK)
    (d / owned.MARKER).symlink_to(tmp_path / "m")
    assert not owned.is_owned(d)
    (d / owned.MARKER).unlink()
    (d / owned.MARKER).write_bytes(owned.MARK)
    assert owned.is_owned(d)
    (tmp_path / "L").symlink_to(d)
    assert not owned.is_owned(tmp_path / "L")
    assert owned.check(tmp_path / "new") == tmp_path / "new"
    assert owned.check(d) == d
    with pytest.raises(LayoutbenchError, match="not a folder"):
        owned.check(tmp_path / "m")
