"""The seeded layout family of history and bisect (``--layouts shuffled:K``, ``--layout
shuffled``): honoured, stored under its own name, never mixed with the random layouts of
an earlier sweep or bisection of the same range in the same store.  Real builds and
cachegrind runs on the generated minikernel history of test_history.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import _history_repo as H


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The session's swept history (random layouts, and a random bisection of its range) in a
    store of this module's own."""
    hist = H.swept(tmp_path_factory.getbasetemp() / "history")
    store = tmp_path_factory.mktemp("family") / "store.sqlite"
    with sqlite3.connect(hist["store"]) as src, sqlite3.connect(store) as dst:
        src.backup(dst)
    return hist, store, H.env(Path(hist["env"]["LAYOUTBENCH_DIR"]), hist["manifest"])


def _layouts_run(store, commits) -> set[tuple[str, int]]:
    with sqlite3.connect(store) as db:
        q = ("SELECT DISTINCT builds.layout, builds.seed FROM runs JOIN builds ON builds.id = runs.build_id "
             f"WHERE builds.commit_sha IN ({','.join('?' * len(commits))})")
        return set(db.execute(q, commits).fetchall())


def test_history_measures_and_judges_the_layouts_it_is_given(copy):
    hist, store, e = copy
    m = hist["manifest"]
    a, b = H.sha(m, 4), H.sha(m, 6)
    before = _layouts_run(store, [a, b])
    assert ("random", 1) in before and not any(lay == "shuffled" for lay, _ in before)
    out = H.as_json(H.lb(["history", "minikernel", f"{a}..{b}", "--repo", m["repo"], "--target", "cachegrind",
                          "--layouts", "shuffled:3", "--runs", "1", "--args", H.ARGS, "--store", str(store),
                          "--json"], e))
    assert out["sweep"]["ran"] == 3 * 3 and out["sweep"]["skipped"] == 0  # nothing of random reused
    assert _layouts_run(store, [a, b]) - before == {("shuffled", 1), ("shuffled", 2), ("shuffled", 3)}
    assert out["history"]["series"]["specs"] == [["shuffled", 1], ["shuffled", 2], ["shuffled", 3]]
    for p in out["history"]["points"]:  # judged over the shuffled layouts alone
        assert set(p["values"]["cg_cost"]) == {"shuffled:1", "shuffled:2", "shuffled:3"}
    # the regression at 5 (+5%) is seen over the shuffled layouts too
    code = [c for c in out["history"]["changes"] if c["metric"] == "cg_cost" and c["kind"] == "code change"]
    assert [c["commit"] for c in code] == [H.sha(m, 5)], out["history"]["changes"]


def test_bisect_probes_the_layout_family_it_is_given_and_does_not_resume_another(copy):
    hist, store, e = copy
    m = hist["manifest"]
    with sqlite3.connect(store) as db:
        (old,) = db.execute("SELECT value FROM state WHERE key LIKE 'bisect:minikernel:%'").fetchone()
    assert json.loads(old)["settings"]["layout"] == "random"  # the session's bisection of this range
    args = ["bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], "--target", "cachegrind",
            "--args", H.ARGS, "--store", str(store), "--no-shadow"]
    p = H.lb(args + ["--layout", "shuffled", "--json"], e)
    v = json.loads(p.stdout)
    assert "replacing the earlier bisection" in p.stderr  # not resumed: its marks came from random layouts
    assert v["status"] == "found" and v["culprit"] == H.sha(m, H.REGRESSION_AT), v["message"]
    assert v["settings"]["layout"] == "shuffled"
    assert all(lid.startswith("shuffled:") for lid in v["endpoints"]["per_layout_ratios"])
    with sqlite3.connect(store) as db:
        (state,) = db.execute("SELECT value FROM state WHERE key LIKE 'bisect:minikernel:%'").fetchone()
    assert json.loads(state)["settings"]["layout"] == "shuffled"
    probed = [e["commit"] for e in json.loads(state)["log"] if e["verb"] in ("good", "bad", "skip")]
    assert probed and _layouts_run(store, probed) >= {("shuffled", 1), ("shuffled", 2)}
    # the log's start line names it, so that a replay bisects the same family
    log = H.lb(["bisect", "log", "--store", str(store)], e).stdout
    assert "--layout shuffled" in log
    # a layout without seeds cannot be a bisection's family: one line, before anything is measured
    bad = H.lb(args + ["--layout", "sorted"], e, check=False)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        "layoutbench: error: --layout sorted takes no seed; a bisection needs a seeded layout: "
        "random, padded, shuffled"]
