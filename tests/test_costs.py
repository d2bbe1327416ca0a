"""Issue 21 part 4 and the price: --budget as runs or a duration, the time a run takes, and the
runs per layout that the two costs a target states make cheapest (layoutbench/costs.py).
Exact expectations, worked by hand from the formulas in the module's docstring."""

from __future__ import annotations

import math

import pytest
from conftest import lb

from layoutbench import costs
from layoutbench.errors import LayoutbenchError


@pytest.mark.parametrize("text,runs,seconds", [
    ("500", 500, None), ("1", 1, None), ("8h", None, 28800.0), ("90m", None, 5400.0), ("2h30m", None, 9000.0),
    ("45s", None, 45.0), ("1h0m5s", None, 3605.0), ("1.5h", None, 5400.0), (" 2H ", None, 7200.0),
])
def test_a_budget_is_runs_or_a_duration(text, runs, seconds):
    assert costs.parse_budget(text) == costs.Budget(runs=runs, seconds=seconds)


@pytest.mark.parametrize("text", ["0", "-5", "8x", "0h", "0m0s", "", "h", "1e3", "2h-30m", "5 runs", "30m2h",
                                  "10000001", "9000h"])
def test_a_bad_budget_is_one_line_naming_the_option(text):
    with pytest.raises(LayoutbenchError) as e:
        costs.parse_budget(text)
    assert str(e.value).startswith(f"--budget {text!r} is not allowed") and "\n" not in str(e.value)


def test_a_duration_prints_as_the_option_takes_it():
    for s, t in [(9000, "2h30m"), (5400, "1h30m"), (45, "45s"), (3605, "1h5s"), (0, "0s"), (60, "1m")]:
        assert costs.duration_text(s) == t
        assert s == 0 or costs.parse_budget(t).seconds == s


def test_runs_per_layout_is_the_two_stage_optimum_rounded_and_clamped():
    # R* = sqrt((c_L / c_R) * (s_R^2 / s_L^2))
    assert costs.runs_per_layout(60, 5, 4e-4, 1e-4) == (7, math.sqrt(48))  # 6.93 -> 7
    assert costs.runs_per_layout(5, 60, 4e-4, 1e-4)[0] == 1  # 0.58: a layout cheaper than a run -> 1
    assert costs.runs_per_layout(25, 4, 1e-4, 1e-4) == (3, 2.5)  # half up, not to the even 2
    assert costs.runs_per_layout(30, 1, 9e-4, 1e-4) == (16, math.sqrt(270))  # 16.4 -> the clamp
    assert costs.runs_per_layout(30, 1, 9e-4, 1e-4, max_runs=8)[0] == 8
    assert costs.runs_per_layout(10, 10, 2.25e-4, 1e-4) == (2, 1.5)
    assert costs.runs_per_layout(60, 5, 0.0, 1e-4) == (1, 0.0)  # no run noise: one run
    assert costs.runs_per_layout(60, 5, 1e-4, 0.0) == (costs.MAX_RUNS_PER_LAYOUT, math.inf)  # no layout noise


def test_the_noise_split_is_the_one_way_anova():
    e = math.exp
    # commit 1: layouts at 0 and 0.1 on the log scale, runs +-0.01 around them
    c1 = {"random:1": [e(-0.01), e(0.01)], "random:2": [e(0.09), e(0.11)]}
    # commit 2: one layout at 0.5 (a commit's own level does not count), runs +-0.02
    c2 = {"random:1": [e(0.48), e(0.52)], "random:2": [e(0.48), e(0.52)]}
    sp = costs.noise_split([c1, c2])
    # within: (4 runs x 0.01^2 + 4 runs x 0.02^2) / 4 layouts' (2-1) df = 2e-3 / 4
    assert sp.var_run == pytest.approx(5e-4, rel=1e-9) and sp.df_run == 4
    # between: the layout means 0 and 0.1 (c1), 0.5 and 0.5 (c2): (2 x 0.05^2 + 0) / 2 df; minus s_R^2 / 2
    assert sp.var_layout == pytest.approx(0.005 / 2 - 5e-4 / 2, rel=1e-9) and sp.df_layout == 2
    assert sp.runs == 2
    assert costs.noise_split([{"random:1": [1.0], "random:2": [2.0]}]) is None  # one run a layout: no split
    same = costs.noise_split([{"a": [e(0.0), e(0.02)], "b": [e(0.0), e(0.02)]}])
    assert same.var_layout == 0.0 and same.var_run == pytest.approx(2e-4)  # floored at 0, never negative


def test_the_time_a_run_takes():
    # stated costs first: a layout's cost shared by its R runs
    assert costs.seconds_per_run(60, 5, 4, [100.0]) == (20.0, "run_cost 5 s + layout_cost 60 s / 4 run(s) per "
                                                              "layout (the profile)")
    assert costs.seconds_per_run(None, 5, 4, [])[0] == 5.0
    # then the measured runs' mean; then nothing
    assert costs.seconds_per_run(None, None, 4, [1.0, 2.0, 6.0]) == (3.0, "the mean duration of 3 measured run(s)")
    assert costs.seconds_per_run(60, None, 1, []) == (None, "not measured yet")
    assert costs.runs_for(8 * 3600, 12.5) == 2304 and costs.runs_for(10, 60) == 1


@pytest.mark.parametrize("value", ["0", "8x", "-3", "2h-1m"])
def test_bisect_refuses_a_bad_budget_in_one_line(value):
    p = lb("bisect", "minikernel", "HEAD~1..HEAD", "--budget", value, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1 and f"--budget {value!r} is not allowed" in line, p.stderr


@pytest.mark.parametrize("key,value,shown", [("layout_cost", "0", "0"), ("run_cost", "-60", "-60"),
                                             ("layout_cost", '"60"', "'60'"), ("run_cost", "true", "True"),
                                             ("run_cost", "nan", "nan")])
def test_a_bad_cost_in_the_profile_is_one_line(tmp_path, key, value, shown):
    from conftest import MINI_TOML, ROOT

    d = tmp_path / "minikernel"
    d.mkdir()
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    (d / "kernel.toml").write_text(text.replace("miss_weight = 20\n", f"miss_weight = 20\n{key} = {value}\n", 1))
    p = lb("bisect", "minikernel", "HEAD~1..HEAD", "--plan", check=False, env={"LAYOUTBENCH_PROFILES": str(tmp_path)})
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1, p.stderr
    assert f"[targets.cachegrind] {key} = {shown} must be a finite number > 0 (seconds)" in line, line
