"""A bisection's window and next probe from its marks (stored, and read back), and the seeded
layout its settings name."""

from __future__ import annotations

import pytest

from layoutbench import bisect
from layoutbench.errors import LayoutbenchError
from layoutbench.store import Store

COMMITS = [f"c{i}" for i in range(10)]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    yield s
    s.close()


def test_bisection_window_and_next_probe_follow_the_marks(store):
    b = bisect.Bisection(store, bisect.Settings(kernel="minikernel"))
    assert b.window(COMMITS) == (0, 9, list(range(1, 9)))
    assert b.next_probe(COMMITS) == 4  # nearest the middle of 0..9, the lower one on a tie
    b.mark("good", "c4")
    assert b.window(COMMITS) == (4, 9, [5, 6, 7, 8])
    assert b.next_probe(COMMITS) == 6
    b.mark("bad", "c6")
    b.mark("skip", "c5")
    assert b.window(COMMITS) == (4, 6, [])
    assert b.next_probe(COMMITS) is None
    # the marks were saved in the store, and a bisection loaded from it sees the same window
    again = bisect.Bisection.load(store, b.key)
    assert again.window(COMMITS) == (4, 6, []) and again.marks()["c5"]["verb"] == "skip"


def test_bisection_window_ignores_a_bad_mark_before_the_last_good_one(store):
    b = bisect.Bisection(store, bisect.Settings(kernel="minikernel"))
    b.mark("bad", "c2")
    b.mark("good", "c5")
    assert b.window(COMMITS) == (5, 9, [6, 7, 8])
    assert b.next_probe(COMMITS) == 7


def test_a_bisection_names_its_seeded_layout_and_an_older_state_is_random():
    old = {k: v for k, v in bisect.Settings(kernel="minikernel").to_dict().items() if k != "layout"}
    assert bisect.Settings.from_dict(old).layout == "random"  # a state written before --layout
    s = bisect.Settings(kernel="minikernel", layout="shuffled")
    assert "--layout shuffled" in s.start_line("b", "g")  # so that a replay bisects the same layouts
    s.check()
    with pytest.raises(LayoutbenchError, match="--layout sorted takes no seed"):
        bisect.Settings(kernel="minikernel", layout="sorted").check()
