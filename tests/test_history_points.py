"""The commits a history measures (history.choose): every STEP-th and the last, or one per
interval of dates; a step below one refused."""

from __future__ import annotations

import pytest

from layoutbench import history
from layoutbench.errors import LayoutbenchError

COMMITS = [f"c{i}" for i in range(10)]


@pytest.mark.parametrize("step,want", [(1, COMMITS), (3, ["c0", "c3", "c6", "c9"]), (4, ["c0", "c4", "c8", "c9"]),
                                       (20, ["c0", "c9"])])
def test_choose_takes_every_step_th_commit_and_always_the_last(step, want):
    assert history.choose(COMMITS, step) == want


def test_choose_by_date_takes_one_commit_per_interval():
    dates = {c: t for c, t in zip(COMMITS, [0, 10, 20, 100, 101, 150, 230, 240, 250, 251])}
    assert history.choose(COMMITS, every=100, dates=dates) == ["c0", "c3", "c6", "c9"]  # c9: the last


def test_choose_refuses_a_step_below_one():
    with pytest.raises(LayoutbenchError, match="--step"):
        history.choose(COMMITS, 0)
