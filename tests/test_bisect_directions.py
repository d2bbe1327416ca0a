"""Real bisections of a change in each direction: a speedup of a lower-is-better cost (a planted
step reverted), and a regression of a higher-is-better rate that the program prints itself.  Both
are the path a confirmed *decrease* of the measured value takes (the confirmation's one-sided
interval is (0, hi)); each ends at the right commit with exit 1, its words saying the direction.

The properties of every direction x interval shape x status are tested in tests/test_directions.py
(hypothesis); here real builds, real ld.lld links in random layouts and real runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _programs import BUILD_SH_COMMAND, program_profile
from conftest import git, lb, script


@pytest.fixture(scope="module")
def reverted(tmp_path_factory) -> dict:
    """A minikernel history with a planted 3% cg_cost regression at commit 2, and on top of it the
    revert of that commit: from the regression on, the range holds one speedup."""
    d = tmp_path_factory.mktemp("reverted")
    m = script("kernels/minikernel/make_history.py").make_history(d / "repo", 8, seed=101, regression_at=2,
                                                                   regression_pct=3.0)
    planted = next(c["sha"] for c in m["commits"] if c["index"] == 2)
    git(d / "repo", "revert", "--no-edit", planted)
    return {"repo": str(d / "repo"), "planted": planted, "revert": git(d / "repo", "rev-parse", "HEAD"),
            "work": d / "work"}


def test_a_speedup_is_bisected_to_the_revert(reverted):
    """cg_cost (lower is better) falls at the revert: the verdict names it, says faster, and its
    interval is the one-sided (0, hi) of a decrease; exit 1 (a change shown), every render agrees."""
    r = reverted
    args = ["bisect", "run", "minikernel", f"{r['planted']}..HEAD", "--repo", r["repo"], "--target", "cachegrind",
            "--args", "iterations=300", "--exit-code"]
    env = {"LAYOUTBENCH_DIR": str(r["work"])}
    p = lb(*args, "--json", env=env, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr[-3000:]
    v = json.loads(p.stdout)
    assert v["status"] == "found" and v["culprit"] == r["revert"] and v["exit_code"] == 1
    e = v["effect"]
    assert e["verdict"] == "faster" and e["ratio"] < 0.995 and e["sided"] == -1
    assert e["ci_low"] == 0 and e["ci_high"] < 1 / 1.005  # the decrease's one-sided interval, beyond the band
    assert "faster" in e["describe"] and "slower" not in e["describe"] and "one-sided" in e["describe"]
    assert v["endpoints"]["ratio"] < 1 and "faster" in v["endpoints"]["describe"]
    assert v["headline"].startswith(f"first bad commit {r['revert'][:12]}")
    # the same command again: the stored verdict as text, the same culprit and words
    t = lb(*args, env=env, check=False)
    assert t.returncode == 1, t.stderr[-2000:]
    assert f"verdict: first bad commit {r['revert']}" in t.stdout
    assert "…0." in t.stdout and "faster, one-sided, pooled over" in t.stdout and "0.0000…" not in t.stdout


# -- a higher-is-better rate, printed by the program --------------------------------------------------

MAIN_C = r"""
#include <stdio.h>
#include <stdint.h>
unsigned long work_units(void);
unsigned long hot_a(unsigned long), hot_b(unsigned long), hot_c(unsigned long);
int main(void) {
    /* a deterministic rate whose cost depends on the work (the code) and, by up to about 1%, on
       where the hot functions are placed (their cache-line offsets): layout noise without timing */
    uintptr_t f[3] = {(uintptr_t)hot_a, (uintptr_t)hot_b, (uintptr_t)hot_c};
    double pen = 0;
    for (int i = 0; i < 3; i++) pen += (double)((f[i] >> 4) % 61) / 60.0 / 300.0;
    unsigned long h = 0;
    for (unsigned long i = 0; i < 1000; i++) h = hot_a(h + i) ^ hot_b(i) ^ hot_c(h);
    double cost = (double)work_units() * (1.0 + pen);
    printf("LAYOUTBENCH build kernel=rate version=1 platform=hosted\n");
    printf("LAYOUTBENCH metric name=pkts_per_ms value=%.4f unit=pkts/ms better=higher\n", 1e6 / cost);
    printf("LAYOUTBENCH check name=hash value=0x%016lx\n", h);
    printf("LAYOUTBENCH end status=ok\n");
    return 0;
}
"""

HOT_C = ("unsigned long hot_{n}(unsigned long x) {{ x ^= x >> {s}; x *= 0x9E3779B97F4A7C15ul; return x ^ (x >> 29); }}\n"
         "{pad}")
WORK_C = "unsigned long work_units(void) {{ return {units}; }}\n"

BUILD_SH = """#!/bin/sh
set -eu
src=$1 obj=$2 cc=$3
: > "$obj/prog.objs"
for f in $(cd "$src" && ls *.c | LC_ALL=C sort); do
  o=$(echo "$f" | sed 's/[.]c$/.o/')
  "$cc" -O2 -ffunction-sections -c "$src/$f" -o "$obj/$o"
  echo "$o" >> "$obj/prog.objs"
done
"""

PROFILE = program_profile("rate", description="a program that prints a higher-is-better rate (test)", source='repo = "repo"',
                          command=BUILD_SH_COMMAND, inputs=("build.sh",), metric="pkts_per_ms")


def _cold(n: int, k: int) -> str:
    """``k`` cold functions of object ``n``: code that only moves the others."""
    return "".join(f"unsigned long cold_{n}_{i}(unsigned long x) {{ return x * {i + 3} + {n}; }}\n" for i in range(k))


@pytest.fixture(scope="module")
def rate(tmp_path_factory) -> dict:
    """c0 the program; c1 a cold function (moves code); c2 a note; c3 4% more work (the regression:
    the rate falls); c4 more cold code; c5 a note."""
    d = tmp_path_factory.mktemp("rate")
    repo = d / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "main.c").write_text(MAIN_C)
    for n, s in (("a", 31), ("b", 27), ("c", 33)):
        (repo / f"hot_{n}.c").write_text(HOT_C.format(n=n, s=s, pad=_cold(ord(n), 3)))
    (repo / "work.c").write_text(WORK_C.format(units=1000))
    shas = []

    def commit(msg: str) -> None:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", msg)
        shas.append(git(repo, "rev-parse", "HEAD"))

    commit("rate: the program")
    (repo / "hot_b.c").write_text(HOT_C.format(n="b", s=27, pad=_cold(ord("b"), 9)))
    commit("hot_b: more cold helpers")
    (repo / "NOTES").write_text("notes\n")
    commit("notes")
    (repo / "work.c").write_text(WORK_C.format(units=1040))
    commit("work: check every packet twice")
    (repo / "cold.c").write_text(_cold(7, 12))
    commit("cold: diagnostics")
    (repo / "NOTES").write_text("notes, more\n")
    commit("notes again")
    (d / "main.c").write_text(MAIN_C)
    (d / "build.sh").write_text(BUILD_SH)
    (d / "kernel.toml").write_text(PROFILE)
    return {"profile": str(d / "kernel.toml"), "repo": str(repo), "shas": shas, "work": d / "work"}


def test_a_regression_of_a_higher_is_better_rate_is_bisected_to_its_commit(rate):
    """The rate the program prints (higher is better) falls by about 4% at c3, while the commits
    that only add cold code move it by layout alone: the verdict names c3, says slower (the value
    fell), with the one-sided interval (0, hi) of a decrease; exit 1."""
    s = rate["shas"]
    p = lb("bisect", "run", rate["profile"], f"{s[0]}..{s[-1]}", "--repo", rate["repo"], "--target", "local",
           "--exit-code", "--json", env={"LAYOUTBENCH_DIR": str(rate["work"])}, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr[-3000:]
    v = json.loads(p.stdout)
    assert v["metric"] == "pkts_per_ms" and v["status"] == "found" and v["culprit"] == s[3], v["message"]
    e = v["effect"]
    assert e["verdict"] == "slower" and e["ratio"] < 0.97 and e["sided"] == -1 and e["ci_low"] == 0
    assert "slower" in e["describe"] and "faster" not in e["describe"]
    assert "slower" in v["endpoints"]["describe"] and v["endpoints"]["ratio"] < 1
    assert Path(rate["work"]).is_dir()
