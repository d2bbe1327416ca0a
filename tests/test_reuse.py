"""Object reuse across commits (``[build] untracked_inputs`` / ``unread_files``): real builds of a
small C program in a real git repository.  The program prints a number computed from its headers
and from a ``VERSION`` file the Makefile reads, so a commit that links stale objects prints the
wrong number.  A changed file may be skipped only on positive evidence: it is named by the profile
as unread, or it is a C source or header that no dependency file names while every object of the
image has one; anything else compiles the commit.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from _programs import makefile, program_profile
from conftest import git, lb
from layoutbench import profile, reuse, source
from layoutbench.store import Store

MAIN_C = r"""
#include <stdio.h>
#include "%(header)s"
#ifndef VERSION
#define VERSION 0
#endif
int other(void);
int main(void) {
    printf("LAYOUTBENCH build kernel=prog version=1 platform=hosted\n");
    printf("LAYOUTBENCH metric name=value value=%%d unit=n better=lower\n", VALUE * 1000 + VERSION + other());
    printf("LAYOUTBENCH end status=ok\n");
    return 0;
}
"""

OTHER_C = "int other(void) { return 0; }\n"

def _program(tmp_path: Path, header: str = "val.h", deps: str = "-MMD", version: str = "",
             more: str = "") -> tuple[Path, Path]:
    """A git repository holding the program (its first commit: VALUE 1) and its profile."""
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    files = {"main.c": MAIN_C % {"header": header}, "other.c": OTHER_C, header: "#define VALUE 1\n",
             "Makefile": makefile("main.c other.c", cflags=f"-O1 {deps} $(VFLAGS)", head=version), "VERSION": "7\n",
             "README.md": "A program.\n", "unused.h": "#define UNUSED 1\n"}
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "import")
    toml = tmp_path / "prog" / "kernel.toml"
    toml.parent.mkdir()
    toml.write_text(program_profile("prog", build="untracked_inputs = []" + (f"\n{more}" if more else ""), metric="value"))
    return repo, toml


def _commit(repo: Path, path: str, text: str) -> str:
    (repo / path).write_text(text)
    git(repo, "commit", "-qam", f"change {path}")
    return git(repo, "rev-parse", "HEAD")


def _built(toml: Path, repo: Path, rev: str) -> tuple[dict, int]:
    """Build ``rev``: its build record and the value its program prints."""
    p = lb("build", str(toml), "--repo", str(repo), "--commit", rev, "--layout", "default", "--json")
    doc = json.loads(p.stdout)
    out = subprocess.run([doc["variants"][0]["elf"]], capture_output=True, text=True, timeout=120).stdout
    value = next(int(ln.split("value=")[1].split()[0]) for ln in out.splitlines() if "name=value" in ln)
    return doc, value


# -- make's escaping in dependency files -------------------------------------------------------------

def test_dependency_files_are_read_with_makes_escaping(tmp_path):
    """Continuation lines, several targets, ``\\ ``, ``\\#``, ``$$``, ``\\\\`` before a space, comments."""
    text = ("/o/a.o /o/b.o: src/a.c src/we,ird.h \\\n  src/sp\\ ace.h src/ha\\#sh.h src/dol$$lar.h \\\n"
            "  src/back\\\\\\ slash.h src/tail\\\\ src/x.h # a comment\nsrc/x.h:\n")
    rules = reuse.make_rules(text)
    assert rules == [(["/o/a.o", "/o/b.o"], ["src/a.c", "src/we,ird.h", "src/sp ace.h", "src/ha#sh.h",
                                            "src/dol$lar.h", "src/back\\ slash.h", "src/tail\\", "src/x.h"]),
                     (["src/x.h"], [])]
    cmd = ("savedcmd_kernel/fork.o := clang -c -o kernel/fork.o ../src/kernel/fork.c\n\n"
           "source_kernel/fork.o := ../src/kernel/fork.c\n\n"
           "deps_kernel/fork.o := \\\n  ../src/include/linux/kconfig.h \\\n"
           "    $(wildcard include/config/CPU_BIG_ENDIAN) \\\n  ../src/include/linux/fork.h \\\n\n"
           "kernel/fork.o: $(deps_kernel/fork.o)\n\n$(deps_kernel/fork.o):\n")
    rules = reuse.make_rules(cmd)
    assert (["kernel/fork.o"], ["../src/include/linux/kconfig.h", "../src/include/linux/fork.h"]) in rules
    assert (["kernel/fork.o"], ["../src/kernel/fork.c"]) in rules
    assert reuse.make_rules("a.o:: b.c\tc\\:d.h $(wildcard $(x) y.h) ${Z} e\\f.h\n\n# all comment\nnot a rule\n"
                            "v = one two\n") == [(["a.o"], ["b.c", "c:d.h", "e\\f.h"]), ([], ["one", "two"])]
    assert reuse.make_rules("x.o:\\\n\n") == [(["x.o"], [])]  # a continuation into an empty last line
    assert reuse.make_rules("x.o: a$") == [(["x.o"], ["a$"])]  # a lone $ at the end is itself
    assert reuse.make_rules("x.o: a.h $(wildcard b.h") == [(["x.o"], ["a.h"])]  # an unclosed reference ends the line
    assert reuse.make_rules("x.o: a.h \\") == [(["x.o"], ["a.h"])]  # a continuation at the end of the file
    # a reference inside a word: its literal part still counts as a name the build may read
    assert reuse.make_rules("x.o: inc/$(ARCH)/a.h b.h") == [(["x.o"], ["inc/", "/a.h", "b.h"])]
    # an even run of backslashes ends the line (a backslash before no space, # or : is itself)
    assert reuse.make_rules("x.o: a.h\\\\\n") == [(["x.o"], ["a.h\\\\"])]


def test_changed_files_are_gits_paths_unquoted(tmp_path):
    """``git diff -z``: a non-ASCII name as it is, with what happened to each file; inside a subdir,
    relative to it."""
    repo = tmp_path / "repo"
    (repo / "k").mkdir(parents=True)
    for name in ("k/ü.h", "k/old.h", "k/same.c", "top.c"):
        (repo / name).write_text("x\n", encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    one = git(repo, "rev-parse", "HEAD")
    (repo / "k" / "ü.h").write_text("y\n", encoding="utf-8")
    (repo / "k" / "new c.c").write_text("y\n")
    (repo / "k" / "old.h").unlink()
    (repo / "top.c").write_text("y\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    two = git(repo, "rev-parse", "HEAD")
    whole = source.Checkout(repo, "", two, None)
    assert sorted(reuse.changed_files(whole, one)) == [("A", "k/new c.c"), ("D", "k/old.h"), ("M", "k/ü.h"),
                                                       ("M", "top.c")]
    assert sorted(reuse.changed_files(source.Checkout(repo, "k/", two, None), one)) == [
        ("A", "new c.c"), ("D", "old.h"), ("M", "ü.h")]
    assert reuse.changed_files(whole, "0" * 40) is None


def test_the_dependency_files_of_a_real_compile_name_its_headers(tmp_path):
    """clang ``-MMD`` into an object folder apart from the tree: every header it read, by its name in
    the tree; the object is the target of a rule.  A kbuild ``.cmd`` file (paths relative to the
    object folder) counts the same way; a file in the tree that no rule names does not."""
    src, obj = tmp_path / "src", tmp_path / "obj"
    (src / "inc").mkdir(parents=True)
    (obj / "k").mkdir(parents=True)
    headers = ["we,ird.h", "ü.h", "sp ace.h", "ha#sh.h", "dol$lar.h", "inc/deep.h"]
    for h in headers + ["unused.h", "k.c", "k.h"]:
        (src / h).write_text("\n", encoding="utf-8")
    (src / "main.c").write_text("".join(f'#include "{h}"\n' for h in headers) + "int main(void) { return 0; }\n",
                                encoding="utf-8")
    (obj / "gen").mkdir()
    (obj / "gen" / "generated.h").write_text("\n")  # a header the build wrote: no file of the tree
    (src / "main.c").write_text((src / "main.c").read_text(encoding="utf-8") + '#include "generated.h"\n',
                                encoding="utf-8")
    subprocess.run(["clang-19", "-MMD", "-I", str(obj / "gen"), "-c", "main.c", "-o", str(obj / "main.o")], cwd=src,
                   check=True)
    (obj / "k" / ".f.o.cmd").write_text("savedcmd_k/f.o := clang -c ../src/k.c\n\nsource_k/f.o := ../src/k.c\n\n"
                                        "deps_k/f.o := \\\n  ../src/k.h \\\n\nk/f.o: $(deps_k/f.o)\n")
    (obj / "k" / "f.o").write_bytes(b"")
    for decoy in ("notes.cmd", ".hidden", "k/.f.o.txt"):  # no dependency files: what they name is not read
        (obj / decoy).write_text(f"{obj}/unused.o: {src}/unused.h\n")
    (obj / "dir.d").mkdir()
    named, covered = reuse.read_dependencies(obj, src)
    assert named == {"main.c", *headers, "k.c", "k.h"}
    assert covered == {"main.o", "k/f.o"}
    assert reuse.build_inputs(obj, src) == named
    base = tmp_path / "base"
    base.mkdir()
    (base / "obj").symlink_to(obj)
    assert reuse._dependencies_of(base, {"src": str(src)}) == (named, covered)
    assert reuse._dependencies_of(base, {"src": str(src)}) == (named, covered)  # from its record beside
    assert reuse._dependencies_of(tmp_path / "gone", {"src": str(src)}) is None
    (base / reuse.DEPS_FILE).write_text("not JSON")
    assert reuse._dependencies_of(base, {"src": str(src)}) is None


RULES_PROFILE = """\
name = "rules"
[source]
tree = "."
[build]
command = "true"
untracked_inputs = ["Makefile", "scripts/"]
unread_files = ["*.md", "docs/"]
[images.a]
kind = "program"
objects = "a.objs"
[images.b]
kind = "program"
objects = "b.objs"
"""


def test_only_a_change_the_build_provably_does_not_read_is_skipped(tmp_path):
    """The rule, file by file: named unread by the profile (unless a dependency file or untracked_inputs
    says it is read), or a C source or header modified in place that no dependency file names while
    every object of every image has one."""
    (tmp_path / "kernel.toml").write_text(RULES_PROFILE)
    prof = profile.load(str(tmp_path / "kernel.toml"))
    named = {"a.c", "inc/a.h"}
    cases = [  # (status, path, complete, unread)
        ("M", "README.md", False, True), ("A", "docs/x.txt", False, True), ("D", "docs/y.c", False, True),
        ("M", "x/notes.md", False, True), ("M", "docs.txt", True, False),
        ("M", "inc/b.h", True, True), ("M", "b.c", True, True), ("M", "b.hpp", True, True), ("M", "b.cc", True, True),
        ("M", "inc/b.h", False, False), ("A", "inc/b.h", True, False), ("D", "b.c", True, False),
        ("T", "b.c", True, False), ("M", "a.c", True, False), ("M", "inc/a.h", True, False),
        ("M", "VERSION", True, False), ("M", "Makefile", True, False), ("M", "scripts/gen.c", True, False),
        ("M", "b.S", True, False), ("M", "b.s", True, False), ("M", "link.ld", True, False),
    ]
    for st, path, complete, unread in cases:
        assert reuse.unread_change(prof, st, path, named, complete) is unread, (st, path, complete)
    assert reuse.unread_change(prof, "M", "a.md", {"a.md"}, True) is False  # a dependency file says it is read
    assert reuse.unread_change(prof, "M", "scripts/x.md", set(), True) is False  # untracked input
    obj = tmp_path / "obj"
    obj.mkdir()
    (obj / "a.objs").write_text("# a comment\nx.o\nlib.a:y.o sub/../y.o\n")
    assert not reuse._every_object_has_dependencies(prof, obj, {"x.o", "y.o"})  # no list of image b
    (obj / "b.objs").write_text("x.o\n")
    assert reuse._every_object_has_dependencies(prof, obj, {"x.o", "y.o"})
    assert not reuse._every_object_has_dependencies(prof, obj, {"x.o"})
    assert not reuse._every_object_has_dependencies(prof, obj, {"y.o"})



def test_a_build_without_dependency_files_is_never_reused(tmp_path, fresh_workdir):
    """No ``-MMD``: nothing says which files the compiler read, so a changed header compiles."""
    repo, toml = _program(tmp_path, deps="")
    base = git(repo, "rev-parse", "HEAD")
    assert _built(toml, repo, base)[1] == 1000
    changed = _commit(repo, "val.h", "#define VALUE 2\n")
    doc, value = _built(toml, repo, changed)
    assert "reused_from" not in doc["build"] and value == 2000


@pytest.mark.parametrize("header", ["we,ird.h", "ü.h", "sp ace.h", "ha#sh.h", "dol$lar.h"])
def test_a_header_whose_name_needs_escaping_is_a_build_input(tmp_path, fresh_workdir, header):
    """The dependency file names the header in make's escaping (``\\ ``, ``\\#``, ``$$``; a comma and
    a non-ASCII name as they are) and git names it unquoted: its change compiles."""
    repo, toml = _program(tmp_path, header=header)
    base = git(repo, "rev-parse", "HEAD")
    assert _built(toml, repo, base)[1] == 1000
    changed = _commit(repo, header, "#define VALUE 3\n")
    doc, value = _built(toml, repo, changed)
    assert "reused_from" not in doc["build"] and value == 3000


VERSION_RULE = "VFLAGS := -DVERSION=$(shell cat VERSION)"


def test_a_file_the_makefile_reads_is_a_build_input(tmp_path, fresh_workdir):
    """``$(shell cat VERSION)``: named by no dependency file and no C file, so its change compiles."""
    repo, toml = _program(tmp_path, version=VERSION_RULE)
    base = git(repo, "rev-parse", "HEAD")
    assert _built(toml, repo, base)[1] == 1007
    changed = _commit(repo, "VERSION", "8\n")
    doc, value = _built(toml, repo, changed)
    assert "reused_from" not in doc["build"] and value == 1008


def test_a_later_commit_links_the_objects_of_its_own_build_not_a_stale_one(tmp_path, fresh_workdir):
    """After a commit that changed VERSION, a README commit links that commit's objects (README.md is
    named unread by the profile), never the first commit's."""
    repo, toml = _program(tmp_path, version=VERSION_RULE, more='unread_files = ["*.md"]')
    base = git(repo, "rev-parse", "HEAD")
    assert _built(toml, repo, base)[1] == 1007
    bumped = _commit(repo, "VERSION", "9\n")
    readme = _commit(repo, "README.md", "A program, explained.\n")
    assert _built(toml, repo, bumped)[1] == 1009
    doc, value = _built(toml, repo, readme)
    assert value == 1009 and doc["build"]["reused_from"] == bumped


def test_a_change_the_build_provably_does_not_read_still_reuses(tmp_path, fresh_workdir):
    """Reuse is not switched off: a README named unread by the profile, and a header no dependency
    file names (every object has one), each link the built neighbour's objects (nothing compiled,
    the same image bytes)."""
    repo, toml = _program(tmp_path, more='unread_files = ["*.md"]')
    base = git(repo, "rev-parse", "HEAD")
    first, value = _built(toml, repo, base)
    readme = _commit(repo, "README.md", "More prose.\n")
    unused = _commit(repo, "unused.h", "#define UNUSED 2\n")
    for rev in (readme, unused):
        doc, v = _built(toml, repo, rev)
        assert doc["build"]["reused_from"] == base and v == value
        assert doc["variants"][0]["sha256"] == first["variants"][0]["sha256"]
        assert doc["variants"][0]["commit"] == rev and doc["variants"][0]["objects_of"] == base
    # a README the profile does not name: the build might read it (nothing says it does not)
    repo2, toml2 = _program(tmp_path / "plain")
    _built(toml2, repo2, git(repo2, "rev-parse", "HEAD"))
    doc, _ = _built(toml2, repo2, _commit(repo2, "README.md", "Other prose.\n"))
    assert "reused_from" not in doc["build"]


def test_a_reused_commit_has_its_own_runs_and_says_whose_objects_they_ran(tmp_path, fresh_workdir):
    """``compare --commit X`` on a commit that links its neighbour's objects stores its runs under X,
    with the neighbour recorded beside them; ``results --commit X`` shows them."""
    repo, toml = _program(tmp_path, more='unread_files = ["*.md"]')
    base = git(repo, "rev-parse", "HEAD")
    readme = _commit(repo, "README.md", "More prose.\n")
    store = tmp_path / "store.sqlite"
    for rev in (base, readme):
        lb("compare", str(toml), "--repo", str(repo), "--commit", rev, "--layouts", "default", "--runs", "1",
           "--store", str(store))
    rows = json.loads(lb("results", "--commit", readme[:12], "--runs", "--format", "json",
                         "--store", str(store)).stdout)
    assert [(r["commit_sha"], r["objects_of"]) for r in rows] == [(readme, base)]
    rows = json.loads(lb("results", "--commit", base[:12], "--runs", "--format", "json",
                         "--store", str(store)).stdout)
    assert [(r["commit_sha"], r["objects_of"]) for r in rows] == [(base, None)]


def test_on_an_exact_target_a_reused_commit_takes_its_neighbours_counts_and_a_timed_run_is_made_again(
        tmp_path, fresh_workdir):
    """A commit that links its neighbour's objects runs the same image files: on cachegrind, whose
    counts a second run repeats, its runs are the neighbour's counts stored again under it (duration
    0, said so in their message; the measured run cost leaves them out), nothing is run; on the timed
    local target its runs are made."""
    repo, toml = _program(tmp_path, more='unread_files = ["*.md"]')
    toml.write_text(toml.read_text() + '\n[targets.cg]\nkind = "cachegrind"\nimage = "prog"\n')
    base = git(repo, "rev-parse", "HEAD")
    readme = _commit(repo, "README.md", "More prose.\n")
    store = tmp_path / "store.sqlite"
    for target in ("cg", "local"):
        for rev in (base, readme):
            lb("compare", str(toml), "--repo", str(repo), "--commit", rev, "--layouts", "default,random:2",
               "--runs", "1", "--target", target, "--store", str(store))
    with sqlite3.connect(store) as db:
        db.row_factory = sqlite3.Row
        runs = db.execute("SELECT r.id, r.target, r.duration, r.message, r.status, b.commit_sha, b.layout, b.seed, "
                          "b.elf_path FROM runs r JOIN builds b ON b.id = r.build_id ORDER BY r.id").fetchall()
        values = {r["id"]: sorted((s["metric"], s["value"]) for s in db.execute(
            "SELECT metric, value FROM samples WHERE run_id = ?", (r["id"],))) for r in runs}
    cg = [r for r in runs if r["target"] == "cg"]
    first = {(r["layout"], r["seed"]): r for r in cg if r["commit_sha"] == base}
    again = [r for r in cg if r["commit_sha"] == readme]
    assert len(first) == len(again) == 3 and all(r["status"] == "ok" for r in cg)
    for r in again:
        src = first[(r["layout"], r["seed"])]
        assert r["elf_path"] == src["elf_path"] and r["duration"] == 0.0 and src["duration"] > 0
        assert r["message"].startswith(f"not run again: run {src['id']} ran this image file on this target"), r["message"]
        assert values[r["id"]] == values[src["id"]] and any(m == "cg_cost" for m, _ in values[r["id"]])
    timed = [r for r in runs if r["target"] == "local"]
    assert len(timed) == 6 and all(r["duration"] > 0 and not r["message"].startswith("not run again") for r in timed)
    with closing(Store(store)) as st:  # the measured run cost: the runs made, not the copies
        assert len(st.run_seconds("prog", "cg", "rerun", "")) == 3


def test_a_bisection_on_an_exact_target_says_which_runs_it_took_from_a_neighbours_image(tmp_path, fresh_workdir):
    """``bisect run`` over README-only commits on cachegrind: the commits that link a neighbour's
    objects take that neighbour's counts (the verdict's cost names them, ``copied_now``, and its text
    says they were not run again); the runs it made and the ones it took add up to the runs it spent
    now, and the step is still found."""
    repo, toml = _program(tmp_path, more='unread_files = ["*.md"]')
    toml.write_text(toml.read_text() + '\n[targets.cg]\nkind = "cachegrind"\nimage = "prog"\n')
    good = git(repo, "rev-parse", "HEAD")
    _commit(repo, "README.md", "More prose.\n")
    step = _commit(repo, "other.c", "int other(void) {\n    volatile int s = 0;\n"
                                    "    for (int i = 0; i < 200000; i++) s += i;\n    return 0;\n}\n")
    bad = _commit(repo, "README.md", "Yet more prose.\n")
    p = lb("bisect", "run", str(toml), f"{good}..{bad}", "--repo", str(repo), "--target", "cg", "--json",
           "--exit-code", "--store", str(tmp_path / "store.sqlite"), check=False)
    assert p.returncode == 1, p.stderr
    v = json.loads(p.stdout)
    assert v["status"] == "found" and v["culprit"] == step, (v["status"], v.get("culprit"))
    c = v["cost"]
    assert c["copied_now"] > 0 and c["ran_now"] > 0, c
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        made = db.execute("SELECT COUNT(*) FROM runs WHERE target = 'cg' AND duration > 0").fetchone()[0]
        copied = db.execute("SELECT COUNT(*) FROM runs WHERE target = 'cg' AND message LIKE 'not run again%'"
                            ).fetchone()[0]
    sl = v["single_layout"]  # the naive bisection beside it counts its own
    assert (made, copied) == (c["ran_now"] + sl["ran_now"], c["copied_now"] + sl["copied_now"])
    def text(store: str) -> str:
        return lb("bisect", "run", str(toml), f"{good}..{bad}", "--repo", str(repo), "--target", "cg",
                  "--store", str(tmp_path / store), check=False).stdout

    cost = next(ln for ln in text("other.sqlite").splitlines() if ln.startswith("cost:"))
    assert re.search(r"\d+ run by this command; [1-9]\d* not run again: a run of the same image file", cost), cost
    assert "not run again" not in text("store.sqlite")  # reprinted: this command made and took nothing
