"""What a bisection costs: --budget as runs or a duration, the time a run takes, and the
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
    for s, t in [(9000, "2h30m"), (5400, "1h30m"), (45, "45s"), (3605, "1h5s"), (0, "0s"), (60, "1m"),
                 (0.02, "0.02s"), (0.25, "0.25s")]:  # a positive duration never reads 0s
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


def _m(links=(), deploys=(), durations=(), boots=(), noun="runs"):
    rows = [{"duration": d, "boot_seconds": b, "deploy_seconds": None} for d, b in
            zip(durations, list(boots) + [None] * (len(durations) - len(boots)))]
    rows += [{"duration": None, "boot_seconds": None, "deploy_seconds": x} for x in deploys]
    return costs.measured(links, rows, noun)


def test_the_time_a_run_takes():
    measured = _m(links=[0.5, 0.1, 0.3], durations=[1.0, 2.0, 6.0])  # median link 0.3 s, median run 2 s
    # stated costs first (always, over measured ones): a layout's cost shared by its R runs
    assert costs.seconds_per_run(costs.choose(60, 5, measured), 4) == (
        20.0, "run_cost 5 s + layout_cost 60 s / 4 run(s) per layout (the profile)")
    assert costs.seconds_per_run(costs.choose(None, 5), 4)[0] == 5.0
    # a stated run_cost and a measured layout: each its own
    assert costs.seconds_per_run(costs.choose(None, 5, measured), 2) == (
        pytest.approx(5 + 0.3 / 2), "a run 5 s + a layout 0.3 s / 2 run(s) per layout; a layout measured: median of "
                                    "3 link(s) 0.3 s, run_cost 5 s stated")
    assert costs.seconds_per_run(costs.choose(None, 5), 2) == (5.0, "run_cost 5 s (the profile)")
    assert costs.seconds_per_run(costs.choose(None, None, measured), 1)[0] == pytest.approx(2.3)  # R = 1: a whole link
    assert costs.seconds_per_run(costs.choose(None, None, measured), 0)[0] == pytest.approx(2.3)  # R below 1: as 1
    # then the measured medians (not means: 6 s is an outlier); then nothing
    sec, why = costs.seconds_per_run(costs.choose(None, None, measured), 3)
    assert sec == pytest.approx(2.0 + 0.3 / 3)
    assert why == "a run 2 s + a layout 0.3 s / 3 run(s) per layout; measured: median of 3 link(s) 0.3 s, 3 runs 2 s"
    assert costs.seconds_per_run(costs.choose(None, None, _m(durations=[4.0])), 1) == (
        4.0, "a run 4 s; a layout not measured yet, a run measured: median of 1 runs 4 s")
    assert costs.seconds_per_run(costs.choose(60, None, _m(links=[1.0])), 1) == (None, "not measured yet")
    assert costs.runs_for(8 * 3600, 12.5) == 2304 and costs.runs_for(10, 60) == 1


def test_the_costs_measured_are_medians_of_their_pieces_and_say_where_they_came_from():
    # a QEMU target: every run is a boot; its duration holds the boot
    m = _m(links=[0.2, 0.4, 0.3, 9.0], durations=[3.0, 3.2, 2.9], noun="boots+runs")
    assert (m.layout, m.run) == (pytest.approx(0.35), pytest.approx(3.0))
    c = costs.choose(None, None, m)
    assert (c.layout_from, c.run_from, c.stated) == ("measured", "measured", False)
    assert c.text == "measured: median of 4 link(s) 0.35 s, 3 boots+runs 3 s"
    # ssh rebooting per run: the install and reboot before the benchmark are part of a run
    m = _m(links=[1.0], durations=[2.0, 2.0], boots=[50.0, 60.0], noun="reboots+runs")
    assert m.run == pytest.approx(57.0) and m.layout == 1.0
    # ssh without reboot: a new image's copy is part of a new layout, not of a rerun
    m = _m(links=[1.0, 3.0], deploys=[0.5], durations=[2.0])
    assert m.layout == pytest.approx(2.5) and m.run == 2.0
    assert costs.choose(None, None, m).text == "measured: median of 2 link(s) 2 s + 1 deploy(s) 0.5 s, 1 runs 2 s"
    # stated wins, each on its own; nothing measured, nothing stated: unknown
    assert costs.choose(60, 5, m).text == "stated: layout_cost 60 s, run_cost 5 s" and costs.choose(60, 5, m).stated
    c = costs.choose(60, None, m)
    assert (c.layout, c.run, c.layout_from, c.run_from) == (60, 2.0, "stated", "measured")
    assert c.text == "layout_cost 60 s stated, a run measured: median of 1 runs 2 s"
    c = costs.choose(None, None, _m())
    assert (c.layout, c.run, c.layout_from, c.run_from) == (None, None, "", "")
    # the second run a layout that splits the noise: with both costs stated always; measured, only
    # where a new layout costs more than a rerun
    assert costs.worth_splitting(costs.choose(5, 60))
    assert costs.worth_splitting(costs.choose(None, None, _m(links=[0.2], durations=[0.1])))
    assert not costs.worth_splitting(costs.choose(None, None, _m(links=[0.1], durations=[0.1])))
    assert not costs.worth_splitting(costs.choose(None, None, _m(links=[0.06], durations=[0.57], noun="boots+runs")))
    assert costs.worth_splitting(costs.choose(30, None, _m(durations=[0.04])))
    assert not costs.worth_splitting(costs.choose(None, None, _m(durations=[0.04])))  # no link measured
    assert not costs.worth_splitting(costs.choose(None, None, _m(links=[0.5])))  # no run measured
    assert not costs.worth_splitting(costs.choose(None, None, _m(links=[0.5], durations=[0.0])))  # no ratio
    # what is not a time is left out: a run without a duration, a negative or NaN piece
    m = costs.measured([0.1, float("nan"), -1.0], [{"duration": None}, {"duration": 1.0, "boot_seconds": None}])
    assert m.links == (0.1,) and m.runs == (1.0,)
    assert costs.measured([0.0], [{"duration": 0.0}]).links == (0.0,)  # 0 s is a time (a cached step)
    assert costs.choose(None, None, _m(links=[1.0], durations=[2.0])).to_dict() == {
        "layout": 1.0, "run": 2.0, "layout_from": "measured", "run_from": "measured",
        "text": "measured: median of 1 link(s) 1 s, 1 runs 2 s"}


@pytest.mark.parametrize("value", ["0", "8x", "-3", "2h-1m"])
def test_bisect_refuses_a_bad_budget_in_one_line(value):
    p = lb("bisect", "minikernel", "HEAD~1..HEAD", "--budget", value, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1 and f"--budget {value!r} is not allowed" in line, p.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e9"])
def test_bisect_refuses_a_bad_timeout_in_one_line(value):
    p = lb("bisect", "run", "minikernel", "HEAD~1..HEAD", "--timeout", value, "--plan", check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1 and "--timeout " in line and "is not allowed" in line, p.stderr


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
    assert f"[targets.cachegrind] {key} = {shown} must be a finite number of seconds from 1e-06 to 31622400" in line, line


def test_a_link_beside_a_run_costs_the_longer_of_the_two():
    """Where the next layout links while a run goes on (two cores, a count target), a run costs the
    longer of its own time and its share of a link, not their sum, and says so."""
    measured = _m(links=[12.0, 13.0, 12.6], durations=[16.0, 16.2, 16.1])
    c = costs.choose(None, None, measured)
    assert costs.seconds_per_run(c, 1)[0] == pytest.approx(16.1 + 12.6)
    sec, why = costs.seconds_per_run(c, 1, beside=True)
    assert sec == pytest.approx(16.1) and why.startswith("a run 16.1 s beside a layout 12.6 s / 1 run(s) per layout")
    slow_link = costs.choose(None, None, _m(links=[30.0], durations=[10.0]))
    assert costs.seconds_per_run(slow_link, 2, beside=True)[0] == pytest.approx(15.0)  # the link's share is longer
    assert costs.seconds_per_run(costs.choose(40, 5), 1, beside=True) == (
        40.0, "run_cost 5 s beside layout_cost 40 s / 1 run(s) per layout (the profile)")
