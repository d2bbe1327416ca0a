"""kernels/minikernel/make_history.py with two planted regressions: a real git
repository whose hot function changes at the two planted commits and nowhere else, compiled
with the minikernel's own flags."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, git, script

MH = ROOT / "kernels" / "minikernel" / "make_history.py"


def cksum_fold(repo, sha, out):
    """The machine code of cksum_fold() at commit ``sha`` (the Makefile's flags, clang-19)."""
    git(repo, "checkout", "-q", sha)
    obj = out / sha[:12] / "lib" / "checksum.o"
    subprocess.run(["make", "-s", "-C", str(repo), f"OBJDIR={out / sha[:12]}", str(obj)], check=True,
                   capture_output=True)
    code = out / f"{sha[:12]}.bin"
    subprocess.run(["llvm-objcopy-19", "-O", "binary", "--only-section=.text.cksum_fold", str(obj), str(code)],
                   check=True)
    return code.read_bytes()


def test_two_regressions_change_the_hot_function_at_the_two_planted_commits_only(tmp_path):
    p = subprocess.run([sys.executable, str(MH), str(tmp_path / "h"), "--commits", "8", "--seed", "1",
                        "--regression-at", "3,6", "--regression-pct", "1,3"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "h.manifest.json").read_text())
    assert [(r["index"], r["pct"], r["iterations"]) for r in m["regressions"]] == [(3, 1.0, 50), (6, 3.0, 150)]
    assert m["regression_index"] == 3 and m["regression"] == m["regressions"][0]["sha"]
    sha = {c["index"]: c["sha"] for c in m["commits"]}
    assert [c["index"] for c in m["commits"] if c["kind"] == "regression"] == [3, 6]
    assert not set(m["layout_only_indices"]) & {3, 6}
    repo = m["repo"]
    touched = [i for i in range(1, 9)
               if "lib/checksum.c" in git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha[i]).split()]
    assert touched == [3, 6]
    loops = {i: git(repo, "show", f"{sha[i]}:lib/checksum.c").count(f"lb_i < {n}u")
             for i, n in ((2, 50), (3, 50), (5, 50), (6, 200), (8, 200))}
    assert loops == {2: 0, 3: 1, 5: 1, 6: 1, 8: 1}
    code = {i: cksum_fold(repo, sha[i], tmp_path / "o") for i in (2, 3, 5, 6, 8)}
    assert code[2] != code[3] != code[6] != code[2]  # each planted commit changes the compiled function
    assert code[3] == code[5] and code[6] == code[8]  # and no other commit does


def test_one_size_in_a_list_is_the_one_step_history_and_bad_pairs_get_one_line(tmp_path):
    mh = script("kernels/minikernel/make_history.py")
    a = mh.make_history(tmp_path / "a", 4, seed=9, regression_pct=2.0)
    b = mh.make_history(tmp_path / "b", 4, seed=9, regression_pct=[2.0])
    assert [c["sha"] for c in a["commits"]] == [c["sha"] for c in b["commits"]]
    assert [r["index"] for r in a["regressions"]] == [a["regression_index"]]
    for args, word in ((["--regression-at", "6,2", "--regression-pct", "1,3"], "first < second"),
                       (["--regression-at", "2,6", "--regression-pct", "1"], "as many of each")):
        p = subprocess.run([sys.executable, str(MH), str(tmp_path / "c"), "--commits", "8", *args],
                           capture_output=True, text=True)
        assert p.returncode != 0 and word in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_step_under_one_percent_is_a_loop_in_the_compiled_function(tmp_path):
    """0.5% is 25 iterations: clang-19 unrolled a constant count below 50 in full and the empty
    asm statements left no instruction, so a planted step under 1% compiled to the function it
    replaced (measured +0.05% for 0.8% planted); the planted commit now changes the machine code
    and grows it (the loop is there)."""
    p = subprocess.run([sys.executable, str(MH), str(tmp_path / "h"), "--commits", "3", "--seed", "1",
                        "--regression-at", "2", "--regression-pct", "0.5"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "h.manifest.json").read_text())
    assert [(r["index"], r["iterations"]) for r in m["regressions"]] == [(2, 25)]
    sha = {c["index"]: c["sha"] for c in m["commits"]}
    before, after = (cksum_fold(m["repo"], sha[i], tmp_path / "o") for i in (1, 2))
    assert len(after) > len(before)
