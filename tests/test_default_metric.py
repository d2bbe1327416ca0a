"""The metric a command follows, chosen per target kind, and a metric the target cannot print
refused in one line before anything is built.

The cache-model targets print their own counts (``cachegrind``: cg_*, ``qemu-icache``: ic_*) and
follow their cost metric when no ``--metric`` is given; every command that measures refuses a
metric they cannot print before a compile.  A target whose benchmark decides what it prints
(``local``) stops at its first run instead.  Real git repositories, real builds, real valgrind
and QEMU runs of the minikernel; the Linux profile's resolution is read from its kernel.toml
without building Linux."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MINI_TOML, ROOT, git, lb, mini_repo
from layoutbench import build, profile, source, targets
from layoutbench.errors import LayoutbenchError

CACHE_MODELS = {"cachegrind": ("cg_cost", {"cg_cost", "cg_ir", "cg_i1_misses"}),
                "qemu-icache": ("ic_cost", {"ic_cost", "ic_ir", "ic_i1_misses"})}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The minikernel as a git repository of two commits (the second changes one function)."""
    r = mini_repo(tmp_path_factory.mktemp("dm") / "repo")
    f = r / "net" / "arp.c"
    f.write_text(f.read_text() + "\nint layoutbench_extra(int x) { return x * 3 + 1; }\n")
    git(r, "commit", "-qam", "one more function")
    return r


def _no_build(workdir: Path) -> None:
    """Nothing compiled, linked or run in the work directory (a bisection's progress log, logs/bisect,
    holds what the command said, not a build's or a run's log)."""
    made = sorted(p.relative_to(workdir).as_posix() for p in workdir.rglob("*")) if workdir.exists() else []
    made = [p for p in made if p not in ("logs", "logs/bisect") and not p.startswith("logs/bisect/")]
    assert not [p for p in made if p.split("/")[0] in ("objects", "images", "logs")], made


# -- the Linux profile: kernel.toml read, nothing built --------------------------------------------

def test_linux_follows_ic_cost_under_the_cache_model_and_getppid_when_booted():
    """kernels/linux/kernel.toml names getppid (what its /init prints); under qemu-icache, which
    prints only the model's counts, the metric followed is ic_cost, and getppid is refused."""
    prof = profile.load("linux")
    assert prof.default_metric == "getppid"
    assert targets.default_metric(prof, "qemu-icache") == "ic_cost"
    assert targets.default_metric(prof, "qemu") == "getppid"
    assert targets.default_metric(prof) == "getppid", "the default target is qemu"
    icache = targets.make(prof, "qemu-icache")
    assert set(icache.prints()) == CACHE_MODELS["qemu-icache"][1]
    assert targets.make(prof, "qemu").prints() is None, "what /init prints is known only from a run"
    with pytest.raises(LayoutbenchError) as e:
        targets.check_metric(prof, icache, "getppid", "the default metric")
    assert str(e.value) == ("the default metric 'getppid': target qemu-icache (qemu-icache) of linux prints no such "
                            "metric; it prints ic_cost, ic_i1_misses, ic_ir; pass --metric ic_cost")


def test_linux_bisect_under_the_cache_model_starts_on_ic_cost_and_refuses_getppid_before_a_build(
        repo, fresh_workdir, tmp_path):
    """The command a user types: `bisect start linux ... --target qemu-icache` follows ic_cost;
    `bisect run linux A..B --target qemu-icache --metric getppid` is one line, exit 2, and the work
    directory holds no object, image or run (the tree is the minikernel's: nothing of it is built)."""
    store = tmp_path / "s.sqlite"
    p = lb("bisect", "start", "linux", "HEAD", "HEAD~1", "--repo", str(repo), "--target", "qemu-icache",
           "--store", str(store))
    assert "started (metric ic_cost)" in p.stdout, p.stdout
    p = lb("bisect", "run", "linux", "HEAD~1..HEAD", "--repo", str(repo), "--target", "qemu-icache",
           "--metric", "getppid", "--store", str(store), check=False)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    assert p.stderr.splitlines() == ["layoutbench: error: --metric 'getppid': target qemu-icache (qemu-icache) of "
                                     "linux prints no such metric; it prints ic_cost, ic_i1_misses, ic_ir; pass "
                                     "--metric ic_cost"], p.stderr
    _no_build(fresh_workdir)


# -- the minikernel under the two cache models ------------------------------------------------------

@pytest.mark.parametrize("target", CACHE_MODELS)
def test_a_cache_model_is_bisected_on_its_cost_with_no_metric_given(target, repo, workdir, tmp_path):
    """With no --metric a bisection on a cache model follows its cost metric (the profile's own
    default, cycles_per_packet, is not printed there); compare, which shows what the profile names,
    shows every count of the model, the cost among them, and only the one a profile names for the
    kind in ``[metrics] default_by_kind``."""
    cost, printed = CACHE_MODELS[target]
    store = tmp_path / "s.sqlite"
    p = lb("bisect", "start", "minikernel", "HEAD", "HEAD~1", "--repo", str(repo), "--target", target,
           "--store", str(store))
    assert f"started (metric {cost})" in p.stdout, p.stdout
    compare = ("compare", "minikernel", "--repo", str(repo), "--commit", "HEAD", "--target", target,
               "--layouts", "default,random:2", "--runs", "1", "--store", str(store), "--json")
    rep = json.loads(lb(*compare).stdout)
    assert {m["metric"] for m in rep["metrics"]} == printed, rep["metrics"]
    with sqlite3.connect(store) as c:
        stored = {r[0] for r in c.execute("SELECT DISTINCT metric FROM samples")}
    assert stored == printed, "the program's own (timed) lines are not kept"
    _profile(tmp_path, f'\n[metrics.default_by_kind]\n{target} = "{cost.replace("cost", "ir")}"\n')
    env = {"LAYOUTBENCH_PROFILES": str(tmp_path / "profiles")}
    rep = json.loads(lb(*compare, env=env).stdout)
    assert [m["metric"] for m in rep["metrics"]] == [cost.replace("cost", "ir")], rep["metrics"]
    p = lb("bisect", "start", "minikernel", "HEAD", "HEAD~1", "--repo", str(repo), "--target", target,
           "--store", str(store), env=env)
    assert f"started (metric {cost.replace('cost', 'ir')})" in p.stdout, p.stdout


#: every command that measures, with the options that make it measure HEAD of the repository
COMMANDS = {
    "bisect run": ["bisect", "run", "minikernel", "HEAD~1..HEAD"],
    "bisect start": ["bisect", "start", "minikernel", "HEAD", "HEAD~1"],
    "judge": ["judge", "minikernel", "--commit", "HEAD", "--good", "HEAD~1", "--bad", "HEAD"],
    "compare": ["compare", "minikernel", "--commit", "HEAD", "--layouts", "default,random:2", "--runs", "1"],
    "compare --commits": ["compare", "minikernel", "--commits", "HEAD~1,HEAD", "--layouts", "random:2"],
    "history": ["history", "minikernel", "HEAD~1..HEAD"],
    "run": ["run", "minikernel", "--commit", "HEAD"],
}


@pytest.mark.parametrize("target", CACHE_MODELS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_metric_the_target_cannot_print_is_refused_before_anything_is_built(command, target, repo, fresh_workdir,
                                                                             tmp_path):
    """Each command that measures, under each cache model, given the minikernel's own metric: one
    line naming the metric, the target, what it prints and what to pass; exit 2 (judge: 128, which
    stops `git bisect run`); nothing compiled, linked or run."""
    cost, printed = CACHE_MODELS[target]
    store = [] if command == "run" else ["--store", str(tmp_path / "s.sqlite")]
    p = lb(*COMMANDS[command], "--repo", str(repo), "--target", target, "--metric", "cycles_per_packet", *store,
           check=False)
    assert p.returncode == (128 if command == "judge" else 2), (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].endswith(f"--metric 'cycles_per_packet': target {target} ({target}) of minikernel prints no "
                             f"such metric; it prints {', '.join(sorted(printed))}; pass --metric {cost}"), lines
    _no_build(fresh_workdir)


def test_a_continued_bisection_whose_target_no_longer_prints_its_metric_is_refused_before_a_build(
        repo, fresh_workdir, tmp_path):
    """A bisection started while its cachegrind target kept the program's own lines follows
    cycles_per_packet; once the profile drops them (guest_metrics back to false), continuing it
    (`bisect run` with no range: its stored settings) is the one line, before any compile."""
    store, env = tmp_path / "s.sqlite", {"LAYOUTBENCH_PROFILES": str(tmp_path / "profiles")}
    _profile(tmp_path, guest=True)
    p = lb("bisect", "start", "minikernel", "HEAD", "HEAD~1", "--repo", str(repo), "--target", "cachegrind",
           "--metric", "cycles_per_packet", "--store", str(store), env=env)
    assert "started (metric cycles_per_packet)" in p.stdout
    _profile(tmp_path)
    p = lb("bisect", "run", "minikernel", "--repo", str(repo), "--store", str(store), env=env, check=False)
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines()[-1] == (
        "layoutbench: error: the bisection's metric 'cycles_per_packet': target cachegrind (cachegrind) of "
        "minikernel prints no such metric; it prints cg_cost, cg_i1_misses, cg_ir; pass --metric cg_cost"), p.stderr
    _no_build(fresh_workdir)


def test_a_benchmark_that_prints_other_metrics_stops_after_its_first_run(repo, workdir, tmp_path):
    """Where only a run tells what the benchmark prints (target local: the hosted minikernel), a
    bisection with a metric it does not print stops after the first run of the first image (one run
    stored, not the K layouts of the first commit), in the same one line naming what it printed."""
    store = tmp_path / "s.sqlite"
    p = lb("bisect", "run", "minikernel", "HEAD~1..HEAD", "--repo", str(repo), "--target", "local", "--layouts",
           "4", "--metric", "getppid", "--store", str(store), check=False)
    assert p.returncode == 2, p.stderr
    last = p.stderr.splitlines()[-1]
    assert last.startswith("layoutbench: error: --metric 'getppid': target local (local) of minikernel printed no "
                           "such metric in its first run; it printed cycles_per_packet, "), last
    assert last.endswith("; pass --metric cycles_per_packet"), last
    with sqlite3.connect(store) as c:
        runs = c.execute("SELECT status FROM runs").fetchall()
    assert runs == [("ok",)], "the first run is kept, and no other is made"


# -- what a target prints, and the default per kind a profile names -------------------------------

def _profile(tmp_path: Path, extra_metrics: str = "", guest: bool = False) -> profile.Profile:
    d = tmp_path / "profiles" / "minikernel"
    d.mkdir(parents=True, exist_ok=True)
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    if guest:
        text = text.replace('args = ["iterations=2000", "quiet"]', 'args = ["iterations=2000"]\nguest_metrics = true')
    (d / "kernel.toml").write_text(text + extra_metrics)
    return profile.load(str(d / "kernel.toml"))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(CACHE_MODELS)), metric=st.one_of(
    st.sampled_from(sorted(set().union(*(p for _, p in CACHE_MODELS.values())) | {"cycles_per_packet", "all"})),
    st.text(min_size=1, max_size=12)))
def test_check_metric_refuses_exactly_what_the_target_does_not_print(kind, metric):
    """Over both cache models and any metric name (spaces, newlines, quotes...): refused exactly when
    the target does not print it, in one line holding the name as typed (quoted), the target, every
    metric it prints and the one to pass; a name printed, or ``all``, passes."""
    prof = profile.load("minikernel")
    t = targets.make(prof, kind)
    cost, printed = CACHE_MODELS[kind]
    try:
        targets.check_metric(prof, t, metric)
    except LayoutbenchError as e:
        line = str(e)
        assert metric not in printed and metric != "all"
        assert "\n" not in line and repr(metric) in line and f"target {kind} ({kind})" in line
        assert f"it prints {', '.join(sorted(printed))}; pass --metric {cost}" in line
    else:
        assert metric in printed or metric == "all"


def test_a_profile_names_the_default_of_a_kind_and_a_kind_that_keeps_its_guests_lines_is_not_refused(tmp_path):
    """``[metrics] default_by_kind`` wins over the kind's own and over ``default``; a kind not in
    the list is one line naming the file; with ``guest_metrics = true`` what a cache model prints is
    known only from a run, so a metric is not refused before it."""
    prof = _profile(tmp_path, '\n[metrics.default_by_kind]\ncachegrind = "cg_ir"\nlocal = "rx_cycles_per_packet"\n')
    assert targets.default_metric(prof, "cachegrind") == "cg_ir"
    assert targets.default_metric(prof, "local") == "rx_cycles_per_packet"
    assert targets.default_metric(prof, "qemu-icache") == "ic_cost"
    assert targets.default_metric(prof, "qemu") == "cycles_per_packet"
    with pytest.raises(LayoutbenchError) as e:
        _profile(tmp_path / "bad", '\n[metrics.default_by_kind]\nqemu-icach = "ic_cost"\n')
    assert "[metrics] default_by_kind names 'qemu-icach', not a target kind" in str(e.value)
    assert "kernel.toml" in str(e.value) and "\n" not in str(e.value)
    loud = _profile(tmp_path / "loud", guest=True)
    t = targets.make(loud, "cachegrind")
    assert t.prints() is None
    targets.check_metric(loud, t, "cycles_per_packet")  # decided at the first run


def test_cachegrind_keeps_the_programs_own_lines_only_when_asked(workdir, tmp_path):
    """The hosted minikernel not quiet prints its timed metrics; under valgrind they time the
    simulator: the cachegrind target keeps the counts only, unless guest_metrics = true."""
    prof = profile.load("minikernel")
    co = source.resolve(prof, None)
    _, variants = build.build_variants(prof, co, [("default", 0)], images=["hosted"])
    elf = variants[0].elf
    got = {}
    for guest in (False, True):
        t = targets.make(prof, "cachegrind", overrides={"args": ["iterations=300"], "guest_metrics": guest})
        r = t.run(elf, tmp_path / f"g{guest}.log")
        assert r.status == "ok", r.message
        got[guest] = {s.metric for s in r.samples}
    assert got[False] == CACHE_MODELS["cachegrind"][1]
    assert got[True] >= CACHE_MODELS["cachegrind"][1] | {"cycles_per_packet"}, got[True]
