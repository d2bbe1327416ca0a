"""Quirks: listed by `layoutbench quirks`, applied to the commits in range, recorded with
the build; a patch, an environment or a command repairs a commit that does not build,
and `skip` keeps a commit from being built at all.  Real builds of a generated history."""

from __future__ import annotations

import json

import pytest

from conftest import lb, script

make_history = script("kernels/minikernel/make_history.py").make_history


@pytest.fixture(scope="module")
def hist(tmp_path_factory, workdir):
    """Commits 2..3 do not build (an unused variable under -Werror); 4 fixes them."""
    d = tmp_path_factory.mktemp("qhist")
    return make_history(d / "repo", 5, seed=3, regression=False, layout_only=[], broken_range=(2, 4))


def build(m, rev, quirks, check=False):
    return lb("build", "minikernel", "--repo", m["repo"], "--commit", rev, "--layout", "default", "--image", "hosted",
              "--json", env={"LAYOUTBENCH_QUIRKS": str(quirks)}, check=check)


def test_quirks_lists_name_range_actions_reason(hist):
    env = {"LAYOUTBENCH_QUIRKS": hist["quirks"]}
    out = lb("quirks", "minikernel", env=env).stdout
    for word in ("unused-variable", "env EXTRA_CFLAGS=-Wno-error=unused-variable", "-Werror rejects it",
                 hist["broken"][0][:12]):
        assert word in out, out
    j = json.loads(lb("quirks", "minikernel", "--json", env=env).stdout)
    assert [q["name"] for q in j["quirks"]] == ["unused-variable"]
    assert j["quirks"][0]["from"] == hist["broken"][0]
    # which apply to a commit: the range is [from, until)
    c = hist["commits"]
    for i, applies in ((1, False), (2, True), (3, True), (4, False), (5, False)):
        j = json.loads(lb("quirks", "minikernel", "--repo", hist["repo"], "--commit", c[i]["sha"], "--json",
                          env=env).stdout)
        assert bool(j["quirks"]) == applies, (i, j)


def test_a_broken_commit_fails_without_a_quirk(hist, tmp_path):
    p = build(hist, hist["broken"][0], tmp_path / "none.toml")
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("layoutbench: error:")]
    assert p.returncode == 2 and len(errors) == 1 and "unused variable" in errors[0]


def test_env_quirk_repairs_the_range_and_is_recorded_with_the_build(hist):
    j = json.loads(build(hist, hist["broken"][1], hist["quirks"], check=True).stdout)
    assert j["build"]["quirks"] == ["unused-variable"]
    j = json.loads(build(hist, hist["commits"][4]["sha"], hist["quirks"], check=True).stdout)
    assert j["build"]["quirks"] == []


def test_patch_quirk_repairs_the_range(hist):
    j = json.loads(build(hist, hist["broken"][0], hist["quirks_patch"], check=True).stdout)
    assert j["build"]["quirks"] == ["unused-variable-patch"]


def test_run_and_skip_quirks(hist, tmp_path):
    q = tmp_path / "q.toml"
    q.write_text(f'''
[[quirk]]
name = "sed-it"
reason = "drop the unused variable with a command"
commits = ["{hist['broken'][0][:10]}"]
run = "sed -i '/unused_scratch/d' lib/bitmap.c"

[[quirk]]
name = "never"
reason = "this commit is not worth building"
commits = ["{hist['broken'][1]}"]
skip = true
''')
    j = json.loads(build(hist, hist["broken"][0], q, check=True).stdout)
    assert j["build"]["quirks"] == ["sed-it"]
    p = build(hist, hist["broken"][1], q)
    assert p.returncode != 0 and "skipped by quirk never" in p.stderr
    out = lb("quirks", "minikernel", env={"LAYOUTBENCH_QUIRKS": str(q)}).stdout
    assert "run " in out and "skip" in out


def test_a_bad_quirks_file_is_one_line(hist, tmp_path):
    q = tmp_path / "q.toml"
    q.write_text('[[quirk]]\nname = "x"\nfrom = "abc"\n')
    p = lb("quirks", "minikernel", env={"LAYOUTBENCH_QUIRKS": str(q)}, check=False)
    assert p.returncode == 2 and "does nothing" in p.stderr


# -- the quirks' own parts, in process, on a small real repository --------------------------------

PATCH_NOTE = """diff --git a/note.txt b/note.txt
new file mode 100644
--- /dev/null
+++ b/note.txt
@@ -0,0 +1 @@
+patched by a quirk
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A repository of five commits c1..c5 (one file changing), and a patch that applies to each."""
    from conftest import git

    d = tmp_path_factory.mktemp("qsmall")
    repo = d / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 6):
        (repo / "a.txt").write_text(f"commit {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"c{i}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    (d / "note.patch").write_text(PATCH_NOTE)
    (d / "bad.patch").write_text(PATCH_NOTE.replace("new file mode 100644\n--- /dev/null", "--- a/note.txt")
                                 .replace("@@ -0,0 +1 @@", "@@ -1 +1 @@\n-not there"))
    return {"dir": d, "repo": repo, "shas": shas}


def _load(small, name, text):
    from types import SimpleNamespace

    from layoutbench import quirks

    f = small["dir"] / name
    f.write_text(text)
    return quirks.load(SimpleNamespace(name="x", quirks=f))


def _checkout(small, i):
    from layoutbench.source import Checkout

    return Checkout(small["repo"], "", small["shas"][i - 1], None)


def test_prepare_returns_the_quirks_variables_only_and_keeps_an_earlier_quirks(small, tmp_path, monkeypatch):
    """A patch quirk between two env quirks: the build environment is the quirks' variables in
    order (a later value wins), none of the caller's shell (a token there must not reach build.json)."""
    from layoutbench import quirks, source

    monkeypatch.setenv("LB_TEST_SHELL_TOKEN", "secret")
    qs = _load(small, "order.toml", '''
[[quirk]]
name = "first-env"
all = true
env = { EXTRA_CFLAGS = "-Wno-error", SHARED = "first" }

[[quirk]]
name = "the-patch"
all = true
patch = "note.patch"

[[quirk]]
name = "last-env"
all = true
env = { SHARED = "last", LATE = 3 }
run = "echo ran > ran.txt"
''')
    src = source.export(_checkout(small, 2), tmp_path / "src")
    log = tmp_path / "build.log"
    env = quirks.prepare(qs, src, log)
    assert env == {"EXTRA_CFLAGS": "-Wno-error", "SHARED": "last", "LATE": "3"}
    assert (src / "note.txt").read_text() == "patched by a quirk\n" and (src / "ran.txt").read_text() == "ran\n"
    assert [ln for ln in log.read_text().splitlines() if ln.startswith("# quirk")] == [
        "# quirk first-env:  (env EXTRA_CFLAGS=-Wno-error SHARED=first)",
        "# quirk the-patch:  (patch note.patch)",
        "# quirk last-env:  (env LATE=3 SHARED=last, run 'echo ran > ran.txt')",
    ]
    # the patch first, then the variables: still none of the shell's
    src2 = source.export(_checkout(small, 3), tmp_path / "src2")
    assert quirks.prepare([qs[1], qs[0]], src2, log) == {"EXTRA_CFLAGS": "-Wno-error", "SHARED": "first"}


def test_quirk_from_until_commits_and_all(small):
    from layoutbench import quirks

    c = small["shas"]
    qs = _load(small, "range.toml", f'''
[[quirk]]
name = "range"
from = "{c[1]}"
until = "{c[3]}"
env = {{ A = "1" }}

[[quirk]]
name = "open-range"
from = "{c[3]}"
env = {{ A = "2" }}

[[quirk]]
name = "listed"
commits = ["{c[0][:10]}", "main~1"]
run = "true"

[[quirk]]
name = "everywhere"
all = true
skip = true
''')
    names = {i: [q.name for q in quirks.applicable(_Prof(small, "range.toml"), _checkout(small, i))]
             for i in range(1, 6)}
    assert names == {1: ["listed", "everywhere"], 2: ["range", "everywhere"], 3: ["range", "everywhere"],
                     4: ["open-range", "listed", "everywhere"], 5: ["open-range", "everywhere"]}
    # a working-tree build gets none (layoutbench never changes the user's files); a tarball only `all`
    from layoutbench.source import Checkout

    assert quirks.applicable(_Prof(small, "range.toml"), Checkout(small["repo"], "", "worktree", small["repo"])) == []
    assert [q.name for q in quirks.applicable(_Prof(small, "range.toml"), Checkout(None, "", "tarball-1", None))] \
        == ["everywhere"]
    assert [q.actions() for q in qs] == ["env A=1", "env A=2", "run 'true'", "skip"]
    assert qs[0].to_dict() == {"name": "range", "reason": "", "from": c[1], "until": c[3], "commits": [],
                               "all": False, "actions": "env A=1"}


class _Prof:
    def __init__(self, small, name):
        self.name = "x"
        self.quirks = small["dir"] / name


def test_a_quirk_naming_a_commit_the_repository_lacks_is_one_line(small):
    from layoutbench import quirks
    from layoutbench.errors import LayoutbenchError

    _load(small, "gone.toml", '[[quirk]]\nname = "gone"\nfrom = "' + "ab" * 20 + '"\nenv = { A = "1" }\n')
    with pytest.raises(LayoutbenchError, match="quirk commit 'abab.*' is not in .*fix the quirks file"):
        quirks.applicable(_Prof(small, "gone.toml"), _checkout(small, 3))


def test_quirks_file_errors_and_cache_key(small, tmp_path, monkeypatch):
    from layoutbench import quirks
    from layoutbench.errors import BuildFailed, LayoutbenchError

    for text, msg in (("[[quirk]\n", "not valid TOML"),
                      ('[[quirk]]\nname = "p"\nall = true\npatch = "none.patch"\n', "names patch 'none.patch', which does not exist"),
                      ('[[quirk]]\nenv = { A = "1" }\n', "quirk 'quirk-1' needs 'from'"),
                      ('[[quirk]]\nname = "idle"\nall = true\n', "quirk 'idle' does nothing")):
        with pytest.raises(LayoutbenchError, match=msg):
            _load(small, "err.toml", text)
    # no file: no quirks; $LAYOUTBENCH_QUIRKS wins over the profile's key
    assert _load(small, "empty.toml", "") == []
    monkeypatch.setenv("LAYOUTBENCH_QUIRKS", str(small["dir"] / "nowhere.toml"))
    assert quirks.load(_Prof(small, "order.toml")) == []
    monkeypatch.delenv("LAYOUTBENCH_QUIRKS")
    # what the build did not survive is a one-line error naming the quirk
    qs = _load(small, "fail.toml", '[[quirk]]\nname = "bad-patch"\nall = true\npatch = "bad.patch"\n'
                                   '[[quirk]]\nname = "bad-run"\nall = true\nrun = "exit 7"\n')
    from layoutbench import source

    src = source.export(_checkout(small, 1), tmp_path / "src")
    with pytest.raises(BuildFailed, match="quirk bad-patch: patch bad.patch does not apply"):
        quirks.prepare(qs[:1], src, tmp_path / "log")
    with pytest.raises(BuildFailed, match=r"quirk bad-run: command 'exit 7' failed \(exit 7\)"):
        quirks.prepare(qs[1:], src, tmp_path / "log")
    # the cache key follows what changes the build: the patch's text, the variables
    k = _load(small, "k.toml", '[[quirk]]\nname = "k"\nall = true\npatch = "note.patch"\nenv = { A = "1" }\n')[0].key()
    assert _load(small, "k.toml", '[[quirk]]\nname = "k"\nall = true\npatch = "note.patch"\nenv = { A = "2" }\n')[0].key() != k
    (small["dir"] / "note2.patch").write_text(PATCH_NOTE.replace("by a quirk", "otherwise"))
    assert _load(small, "k.toml", '[[quirk]]\nname = "k"\nall = true\npatch = "note2.patch"\nenv = { A = "1" }\n')[0].key() != k


def test_build_records_the_quirks_variables_not_the_shell(hist, tmp_path):
    """A patch quirk after the env quirk that repairs the commit: the build still gets the
    variable (else -Werror fails it) and build.json records the quirks' variables alone."""
    (tmp_path / "note.patch").write_text(PATCH_NOTE)
    q = tmp_path / "q.toml"
    q.write_text(f'''
[[quirk]]
name = "werror"
commits = ["{hist['broken'][0]}"]
env = {{ EXTRA_CFLAGS = "-Wno-error=unused-variable" }}

[[quirk]]
name = "note"
commits = ["{hist['broken'][0]}"]
patch = "note.patch"
''')
    p = lb("build", "minikernel", "--repo", hist["repo"], "--commit", hist["broken"][0], "--layout", "default",
           "--image", "hosted", "--json", env={"LAYOUTBENCH_QUIRKS": str(q), "LB_TEST_SHELL_TOKEN": "secret"})
    j = json.loads(p.stdout)
    assert j["build"]["quirks"] == ["werror", "note"]
    assert j["build"]["env"] == {"EXTRA_CFLAGS": "-Wno-error=unused-variable"}
    from pathlib import Path

    record = json.loads((Path(j["objdir"]).parent / "build.json").read_text())
    assert record["env"] == j["build"]["env"]
    assert "secret" not in p.stdout and "LB_TEST_SHELL_TOKEN" not in (Path(j["objdir"]).parent / "build.json").read_text()
