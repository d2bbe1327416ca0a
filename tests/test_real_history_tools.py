"""bench/real_history.py and bench/real_history_table.py, the tools that check layoutbench against a
ground truth on a user's own history, run on a history the project generates itself: the
minikernel's ``make_history.py`` (a planted regression in the hot path, layout-only commits that
move code without changing what runs), under cachegrind, with ``cg_ir`` (the executed instruction
count, which the tools do not judge) as the truth."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, script

REGRESSION_AT = 4
LAYOUT_ONLY = [1, 2, 5]


@pytest.fixture(scope="module")
def checked(tmp_path_factory, workdir):
    d = tmp_path_factory.mktemp("realhist")
    m = script("kernels/minikernel/make_history.py").make_history(
        d / "repo", 6, seed=5, regression_at=REGRESSION_AT, regression_pct=4.0, layout_only=LAYOUT_ONLY)
    out = d / "random-3.json"
    p = subprocess.run([sys.executable, "-m", "bench.real_history", "--profile", "minikernel",
                        "--repo", m["repo"], "--range", f"{m['good']}..{m['bad']}", "--target", "cachegrind",
                        "--args", "iterations=300", "--metric", "cg_cost", "--layouts", "3", "--window", "6",
                        "--workdir", str(workdir), "--store", str(d / "results.sqlite"), "--json", str(out)],
                       capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    return m, json.loads(out.read_text()), p.stdout, d


def test_the_truth_names_the_planted_regression_and_nothing_else(checked):
    m, res, _, _ = checked
    kinds = {c["index"]: res["truth"][c["sha"]]["kind"] for c in m["commits"] if c["index"] > 0}
    assert kinds[REGRESSION_AT] == "code"
    assert all(kinds[i] == "same" for i in LAYOUT_ONLY), kinds
    assert res["truth"][m["commits"][REGRESSION_AT]["sha"]]["delta"] > 0


def test_the_bisection_is_checked_against_the_truth_and_names_the_regression(checked):
    m, res, out, _ = checked
    (b,) = res["bisections"]
    assert b["culprit"] == m["commits"][REGRESSION_AT]["sha"]
    assert res["results"]["bisect"] == {"named": 1, "changed_truth": 1, "truth_equal": 0, "candidates": 1}
    assert res["results"]["history"]["truth_equal"] == 0  # never a commit whose cg_ir is unchanged
    assert b["runs"] > b["single_runs"] > 0
    assert "1 windows, 1 of them hold a commit that changes cg_ir by >= 0.5%" in out


def test_the_table_reads_the_json_and_the_store(checked):
    m, _, _, d = checked
    p = subprocess.run([sys.executable, "-m", "bench.real_history_table", "--workdir", str(d),
                        "--kinds", "random", "--layouts", "3"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("random:3") and "(code)" in line)
    assert row.split()[1:3] == ["1", "0"]  # culprit right, false claim
    assert m["commits"][REGRESSION_AT]["sha"][:8] in row
    assert "6 first-parent steps; cg_cost, truth cg_ir" in p.stdout


def test_bad_input_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "bench.real_history", "--profile", "nosuch", "--repo",
                        str(tmp_path), "--range", "a..b", "--workdir", str(tmp_path)], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "unknown kernel 'nosuch'" in p.stderr
    p = subprocess.run([sys.executable, "-m", "bench.real_history_table", "--workdir", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode != 0 and "Traceback" not in p.stderr
