"""An ordinary program's own history, generated here, through the program path: what a real
project's history brings that a single tree does not.

The history (a small C library under ``lib/`` and a driver kept in the profile's folder, like
a benchmark harness written against the library's API):

    c0  lib/mix.c with the old API ``mix_old()``          (needs the quirk ``old-api``)
    c1  the API renamed to ``mix()``                       (the driver's name: no quirk)
     |\\
     | b1  lib/table.c added on a branch
     | b2  table.c tuned
    c2  the branch merged (--no-ff)                        (the file set grows: lib/table.o)
    c3  an ordinary commit

Each first-parent commit is built once, relinked in the default and a random layout, checked
against its plan and run natively; the quirk rewrites the API call for c0 only; the range
c0..c3 is walked along first parents (the merge is one step, b1 and b2 are not probed).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from _programs import BUILD_SH_COMMAND, program_profile
from conftest import git
from layoutbench import build, elfinfo, history, layout, metrics, placement, profile, source

DRIVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mix.h"
__attribute__((weak)) unsigned long table_sum(int n);   /* lib/table.c, from c2 on */
int main(int argc, char **argv) {
    long n = 5000;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "iterations=", 11) == 0) n = atol(argv[i] + 11);
    unsigned long h = 0;
    for (long i = 0; i < n; i++) h = mix(h + (unsigned long)i) ^ (table_sum ? table_sum((int)(i & 31)) : 0);
    printf("LAYOUTBENCH build kernel=lib version=1 platform=hosted\n");
    printf("LAYOUTBENCH metric name=work value=%ld unit=iter better=higher\n", n);
    printf("LAYOUTBENCH check name=hash value=0x%016lx\n", h);
    printf("LAYOUTBENCH check name=table value=%d\n", table_sum ? 1 : 0);
    printf("LAYOUTBENCH end status=ok\n");
    return 0;
}
"""

BUILD_SH = """#!/bin/sh
# build.sh SRC OBJDIR CC: the commit's lib/*.c and the driver; OBJDIR/prog.objs lists them in link order
set -eu
src=$1 obj=$2 cc=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$obj/lib"
"$cc" -O2 -ffunction-sections -I"$src/lib" -c "$here/driver.c" -o "$obj/driver.o"
echo driver.o > "$obj/prog.objs"
for f in $(cd "$src" && ls lib/*.c | LC_ALL=C sort); do
  o=$(echo "$f" | sed 's/[.]c$/.o/')
  "$cc" -O2 -ffunction-sections -I"$src/lib" -c "$src/$f" -o "$obj/$o"
  echo "$o" >> "$obj/prog.objs"
done
"""

PROFILE = program_profile("libhist", description="a small library with a history (test)", top='quirks = "quirks.toml"',
                          source='repo = "repo"', command=BUILD_SH_COMMAND, inputs=("build.sh", "driver.c"),
                          args=("iterations=5000",), metric="work")

QUIRKS = """\
[[quirk]]
name = "old-api"
reason = "before the rename the library has no mix(); mix_old() does the same"
from = "{c0}"
until = "{c1}"
run = "printf '\\\\n#define mix mix_old\\\\n' >> lib/mix.h"
"""

MIX_OLD = ("unsigned long mix_old(unsigned long x) { x ^= x >> 31; x *= 0x9E3779B97F4A7C15ul; return x ^ (x >> 29); }\n")
TABLE_C = ("static unsigned long t[32];\n"
           "unsigned long table_sum(int n) { unsigned long s = 0; for (int i = 0; i < n; i++) s += t[i] + i; "
           "return s; }\n")


def _commit(repo: Path, msg: str, *more: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", msg, *more)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def libhist(tmp_path_factory, workdir):
    d = tmp_path_factory.mktemp("libhist")
    repo = d / "repo"
    (repo / "lib").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "lib" / "mix.h").write_text("unsigned long mix_old(unsigned long x);\n")
    (repo / "lib" / "mix.c").write_text(MIX_OLD)
    c = {"c0": _commit(repo, "mix: the old API")}
    (repo / "lib" / "mix.h").write_text("unsigned long mix(unsigned long x);\n")
    (repo / "lib" / "mix.c").write_text(MIX_OLD.replace("mix_old", "mix"))
    c["c1"] = _commit(repo, "mix: rename mix_old() to mix()")
    git(repo, "checkout", "-q", "-b", "table")
    (repo / "lib" / "table.c").write_text(TABLE_C)
    c["b1"] = _commit(repo, "table: a table of sums")
    (repo / "lib" / "table.c").write_text(TABLE_C.replace("t[i] + i", "t[i] + 2 * i"))
    c["b2"] = _commit(repo, "table: tune")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch 'table'", "table")
    c["c2"] = git(repo, "rev-parse", "HEAD")
    (repo / "NOTES").write_text("notes\n")
    c["c3"] = _commit(repo, "notes")
    (d / "driver.c").write_text(DRIVER_C)
    (d / "build.sh").write_text(BUILD_SH)
    (d / "quirks.toml").write_text(QUIRKS.format(**c))
    (d / "kernel.toml").write_text(PROFILE)
    prof = profile.load(str(d / "kernel.toml"))
    out = {}
    for name in ("c0", "c1", "c2", "c3"):
        co = source.resolve(prof, c[name], str(repo))
        out[name] = build.build_variants(prof, co, layout.parse_specs(["default,random"], 7), jobs=2)
    return prof, repo, c, out


def test_the_range_is_walked_along_first_parents(libhist):
    prof, repo, c, _ = libhist
    walked = history.full_range(prof, f"{c['c0']}..{c['c3']}", str(repo))
    assert walked == [c["c0"], c["c1"], c["c2"], c["c3"]]  # the merge is one step; b1, b2 are not probed
    everything = git(repo, "rev-list", "--reverse", f"{c['c0']}..{c['c3']}").split()
    assert c["b1"] in everything and c["b2"] in everything  # they are in the DAG all the same


@pytest.mark.parametrize("name", ["c0", "c1", "c2", "c3"])
def test_each_commit_builds_relinks_in_two_layouts_and_runs(libhist, name):
    _, _, _, out = libhist
    objs, variants = out[name]
    assert [v.layout for v in variants] == ["default", "random"]
    objects = {o.path: o for o in objs.objects("prog")}
    starts, hashes = [], set()
    for v in variants:
        img = elfinfo.read_image(v.elf)
        placement.check(layout.LayoutPlan.from_json(v.plan_path.read_text()), objects, img)
        starts.append(min(img.addresses()["main"]))
        p = subprocess.run([str(v.elf), "iterations=5000"], capture_output=True, text=True, timeout=60)
        parsed = metrics.parse(p.stdout)
        assert p.returncode == 0 and parsed.end == "ok", p.stdout + p.stderr
        hashes.add(parsed.checks["hash"])
    assert starts[0] != starts[1], "the random layout placed main() where the default link did"
    assert len(hashes) == 1, "the two layouts computed different results"


def test_the_file_set_follows_the_commit(libhist):
    _, _, _, out = libhist
    lists = {name: out[name][0].object_list("prog") for name in out}
    assert lists["c0"] == lists["c1"] == ["driver.o", "lib/mix.o"]
    assert lists["c2"] == lists["c3"] == ["driver.o", "lib/mix.o", "lib/table.o"]


def test_the_quirk_rewrites_the_api_call_for_the_old_commits_only(libhist):
    _, _, _, out = libhist
    assert out["c0"][0].info["quirks"] == ["old-api"]
    assert all(out[n][0].info["quirks"] == [] for n in ("c1", "c2", "c3"))
    # the old commit's driver call went to mix_old(): the library there has no mix()
    syms = elfinfo.read_image(out["c0"][1][0].elf).addresses()
    assert "mix_old" in syms and "mix" not in syms
    assert "mix" in elfinfo.read_image(out["c1"][1][0].elf).addresses()
