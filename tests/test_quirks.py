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
