"""A bisection continued without GOOD..BAD: the options given either apply (a budget raised,
changed or removed; --first-only, --thorough, --prove-null, --shadow) or are refused in one
line naming what the bisection in progress uses and how to start one with the option given.

A real bisection of a small C program in a real git repository: commit 3 doubles the metric,
which also varies with the address of ``hot`` (a layout effect), so the bisection is quick and
finds its culprit.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from conftest import git, lb

sys.path.insert(0, str(Path(__file__).parent))
from bench.hostile import cli_cases as hostile_cli  # noqa: E402


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cont") / "repo"
    hostile_cli.write_tiny_history(d, git)
    return d


def bisect(repo: Path, store: Path, workdir: Path, *args: str, check: bool = True):
    return lb("bisect", str(repo / "kernel.toml"), *args, "--store", str(store), "--no-shadow",
              env={"LAYOUTBENCH_DIR": str(workdir)}, check=check)


def state(store: Path) -> dict:
    with sqlite3.connect(store) as c:
        (value,) = c.execute("SELECT value FROM state WHERE key LIKE 'bisect:%' AND key != 'bisect:current'").fetchone()
    return json.loads(value)


@pytest.fixture(scope="module")
def first(repo, workdir, tmp_path_factory) -> Path:
    """A store holding a bisection that ended at its budget (16 runs: the endpoints' first look, the
    least a budget may be) before a probe decided."""
    store = tmp_path_factory.mktemp("first") / "s.sqlite"
    v = json.loads(bisect(repo, store, workdir, "HEAD~3..HEAD", "--target", "prog", "--budget", "16", "--json").stdout)
    assert v["status"] == "budget" and v["budget"]["spent"] == 16
    return store


@pytest.fixture
def interrupted(first, tmp_path) -> Path:
    """A copy of that store for one test."""
    store = tmp_path / "s.sqlite"
    with sqlite3.connect(first) as src, sqlite3.connect(store) as dst:
        src.backup(dst)
    return store


@pytest.mark.parametrize("given,uses", [(("--metric", "score"), "--metric t"), (("--metric", "nosuch"), "--metric t"),
                                        (("--target", "echo"), "--target prog"), (("--layouts", "6"), "--layouts 4"),
                                        (("--seed", "9"), "--seed 1"), (("--confidence", "0.9"), "--confidence 0.95"),
                                        (("--min-effect", "0.2%"), "--min-effect 0.5%"),
                                        (("--layout", "shuffled"), "--layout random")])
def test_a_measured_setting_given_to_a_continued_bisection_is_refused_in_one_line(repo, workdir, interrupted,
                                                                                  given, uses):
    before = state(interrupted)
    p = bisect(repo, interrupted, workdir, *given, check=False)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("layoutbench: error:")]
    assert p.returncode == 2 and len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"in progress uses {uses} " in errors[0] and f"{' '.join(given)}`" in errors[0], errors[0]
    assert "HEAD" not in errors[0] and "..".join(c[:12] for c in (before["log"][0]["good"], before["log"][0]["bad"])) \
        in errors[0]  # the command to start one names the range in progress
    assert state(interrupted) == before  # nothing measured, nothing changed


def test_the_same_measured_setting_given_again_continues(repo, workdir, interrupted):
    p = bisect(repo, interrupted, workdir, "--metric", "t", "--target", "prog", "--budget", "2")
    assert "continuing the bisection" in p.stderr and "not decided at this budget" in p.stdout


def test_a_budget_can_be_raised_changed_and_removed(repo, workdir, interrupted):
    p = bisect(repo, interrupted, workdir, "--budget", "3", "--json")
    v = json.loads(p.stdout)
    assert "applying --budget 3" in p.stderr and v["status"] == "budget" and v["budget"]["runs"] == 3
    assert v["runs_spent"] == v["budget"]["spent"] > 0  # a number, not null
    p = bisect(repo, interrupted, workdir, "--budget", "1h", "--plan")
    assert "applying --budget 1h" in p.stderr and state(interrupted)["settings"]["budget"] is None
    assert state(interrupted)["settings"]["budget_time"] == 3600
    p = bisect(repo, interrupted, workdir, "--budget", "none", "--json")
    v = json.loads(p.stdout)
    assert "applying --budget none" in p.stderr and v["status"] == "found", v.get("message")
    assert v["culprit"] == git(repo, "rev-parse", "HEAD~1") and v["budget"]["runs"] is None
    s = state(interrupted)["settings"]
    assert s["budget"] is None and s["budget_time"] is None


def test_given_with_its_range_a_changed_measured_setting_starts_again(repo, workdir, interrupted):
    p = bisect(repo, interrupted, workdir, "HEAD~3..HEAD", "--target", "prog", "--layouts", "5", "--budget", "20")
    assert "replacing the earlier bisection" in p.stderr and "--layouts 4" in p.stderr
    assert state(interrupted)["settings"]["layouts"] == 5


def test_first_only_with_thorough_is_refused_also_when_one_is_kept_from_before(repo, workdir, interrupted):
    p = bisect(repo, interrupted, workdir, "--first-only", "--thorough", check=False)
    assert p.returncode == 2 and "--first-only and --thorough cannot be used together" in p.stderr
    bisect(repo, interrupted, workdir, "--first-only", "--budget", "2")
    p = bisect(repo, interrupted, workdir, "--thorough", check=False)
    assert p.returncode == 2 and "--first-only and --thorough cannot be used together" in p.stderr
    assert not state(interrupted)["settings"]["thorough"]


@pytest.mark.parametrize("how", [("--plan",), ("--exit-code",), ("--json",)])
def test_a_budget_below_the_first_look_is_one_line_before_anything_runs(repo, workdir, tmp_path, how):
    """One rule for a plan and a run: the endpoints' first look (4 layouts x 2 runs a side while
    the runs per layout are chosen from the costs) is the least a budget pays for."""
    store = tmp_path / "p.sqlite"
    p = bisect(repo, store, workdir, "HEAD~3..HEAD", "--target", "prog", *how, "--budget", "5", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--budget 5 runs does not pay for the endpoints' first look (16 runs" in p.stderr
    with sqlite3.connect(store) as c:
        assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    p = bisect(repo, store, workdir, "HEAD~3..HEAD", "--target", "prog", "--runs", "1", *how, "--budget", "5",
               check=False)  # R given: 4 layouts x 1 run a side
    assert p.returncode == 2 and "first look (8 runs: 4 layouts x 1 run(s) a side)" in p.stderr, p.stderr


def test_a_finished_verdict_stays_whatever_budget_is_given_later(repo, workdir, tmp_path):
    store = tmp_path / "f.sqlite"
    v = json.loads(bisect(repo, store, workdir, "HEAD~3..HEAD", "--target", "prog", "--json").stdout)
    assert v["status"] == "found"
    for given in (("--budget", "1"), ("--budget", "1s"), ("HEAD~3..HEAD", "--target", "prog", "--budget", "10")):
        p = bisect(repo, store, workdir, *given, "--json", "--exit-code", check=False)
        assert p.returncode == 1 and json.loads(p.stdout)["culprit"] == v["culprit"], p.stderr
        assert "the bisection is finished (found): a --budget limits the runs still to measure" in p.stderr
    p = bisect(repo, store, workdir, "--json", "--exit-code", check=False)
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == "found"
