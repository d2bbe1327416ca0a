"""A sample is keyed by everything that shapes it.  Changing a target
setting and measuring again makes new runs instead of reusing the stored ones; runs of
an older store are kept but never reused; ``results`` shows the configurations."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import MINI_TOML, lb, mini_repo

from layoutbench.build import Variant
from layoutbench.metrics import Sample
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult

CG = ["--target", "cachegrind", "--layouts", "default,random:2", "--runs", "1", "--args", "iterations=300"]


def count(db: Path, sql: str):
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


def test_changing_the_cache_geometry_measures_again(workdir, tmp_path):
    repo = mini_repo(tmp_path / "mini")
    db = tmp_path / "r.sqlite"
    base = ["--repo", str(repo), "--commit", "HEAD", *CG, "--store", str(db), "--json"]

    first = json.loads(lb("compare", "minikernel", *base).stdout)
    assert count(db, "SELECT count(*) FROM runs")[0][0] == 3
    again = lb("compare", "minikernel", *base)
    assert count(db, "SELECT count(*) FROM runs")[0][0] == 3, "the same configuration must reuse its runs"
    assert json.loads(again.stdout)["config"] == first["config"]

    # the same profile with a smaller, direct-mapped I1: a copy that differs in one setting
    text = MINI_TOML.read_text()
    assert 'i1 = "4096,2,64"' in text
    toml = tmp_path / "profile" / "kernel.toml"
    toml.parent.mkdir()
    toml.write_text(text.replace('i1 = "4096,2,64"', 'i1 = "1024,1,64"')
                    .replace('repo = "../.."', f'repo = "{MINI_TOML.parent.parent.parent}"'))
    changed = lb("compare", str(toml), *base)
    runs = count(db, "SELECT config, count(*) FROM runs GROUP BY config ORDER BY config")
    assert len(runs) == 2 and [n for _, n in runs] == [3, 3], runs
    new = json.loads(changed.stdout)
    assert new["config"] != first["config"]
    assert "another target configuration" in changed.stderr and first["config"] in changed.stderr
    # the new numbers come from the new cache: more misses, and no stored sample was mixed in
    misses = {r["config"]: [v for vs in m["rows"][0]["values"].values() for v in vs]
              for r in (first, new) for m in r["metrics"] if m["metric"] == "cg_i1_misses"}
    assert len(misses[new["config"]]) == 1 and misses[new["config"]][0] > misses[first["config"]][0]

    # results shows which configuration every sample was made under, and what each one is
    rows = json.loads(lb("results", "--store", str(db), "--metric", "cg_i1_misses", "--format", "json").stdout)
    assert sorted({r["config"] for r in rows}) == sorted({first["config"], new["config"]})
    configs = json.loads(lb("results", "--store", str(db), "--configs", "--format", "json").stdout)
    i1 = {c["config"]: json.loads(c["settings"])["settings"]["i1"] for c in configs}
    assert i1 == {first["config"]: "4096,2,64", new["config"]: "1024,1,64"}

    # back to the first profile: its runs are still there and reused
    lb("compare", "minikernel", *base)
    assert count(db, "SELECT count(*) FROM runs")[0][0] == 6


def test_an_older_store_keeps_its_runs_but_does_not_reuse_them(tmp_path):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as c:  # the schema before runs were keyed by configuration
        c.executescript("""
            CREATE TABLE builds (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, commit_sha TEXT NOT NULL,
                image TEXT NOT NULL, layout TEXT NOT NULL, seed INTEGER NOT NULL, plan_id TEXT NOT NULL,
                plan TEXT NOT NULL, image_sha256 TEXT NOT NULL, elf_path TEXT NOT NULL, toolchain TEXT NOT NULL,
                quirks TEXT NOT NULL, created REAL NOT NULL,
                UNIQUE (kernel, commit_sha, image, layout, seed, image_sha256));
            CREATE TABLE runs (id INTEGER PRIMARY KEY, build_id INTEGER NOT NULL REFERENCES builds(id),
                target TEXT NOT NULL, host TEXT NOT NULL, accelerator TEXT NOT NULL, mode TEXT NOT NULL,
                rep INTEGER NOT NULL, args TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, exit_code INTEGER,
                message TEXT NOT NULL DEFAULT '', started REAL NOT NULL, duration REAL NOT NULL,
                log_path TEXT NOT NULL, UNIQUE (build_id, target, host, mode, rep, args));
            CREATE TABLE samples (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
                metric TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, higher_is_better INTEGER NOT NULL);
            INSERT INTO builds VALUES (1, 'k', 'c0ffee', 'hosted', 'default', 0, '0x1', '{}', 'ab', '/x', '{}', '[]', 0);
            INSERT INTO runs VALUES (7, 1, 'cachegrind', 'h', 'valgrind', 'rerun', 0, '', 'ok', 0, '', 0, 1, '/l');
            INSERT INTO samples VALUES (1, 7, 'cg_cost', 100.0, 'events', 0);
        """)
    st = Store(db)
    key = RunKey("cachegrind", "h", "rerun", "", st.config_id({"kind": "cachegrind", "settings": {"i1": "1024,1,64"}}))
    assert [r["config"] for r in st.runs()] == [""] and st.samples()[0]["value"] == 100.0
    assert st.done(1, key) == {}, "a run of unknown configuration must not count as done"
    assert st.other_configs([1], key) == {"": 1}
    result = RunResult("ok", 0, "", 1.0, "valgrind", "h", [Sample("cg_cost", 120.0, "events", False)])
    st.add_run(1, key, 0, result, Path("/l2"), 1.0)
    assert st.done(1, key) == {0: "ok"}
    assert sorted((s["config"], s["value"]) for s in st.samples()) == [("", 100.0), (key.config, 120.0)]
    st.close()
    assert Store(db).runs(config=key.config)[0]["rep"] == 0  # opening a migrated store again is fine


def test_job_planning_interleaves_repetitions_and_relink_draws_fresh_seeds():
    from layoutbench.measure import plan_jobs

    jobs = plan_jobs([("default", 0), ("random", 1), ("random", 2)], 2, "rerun")
    assert [(j.layout, j.seed, j.rep) for j in jobs] == [
        ("default", 0, 0), ("random", 1, 0), ("random", 2, 0), ("default", 0, 1), ("random", 1, 1), ("random", 2, 1)]
    jobs = plan_jobs([("sorted", 0), ("random", 1), ("random", 2)], 3, "relink")
    assert sorted(j.seed for j in jobs if j.layout == "random") == [1, 2, 3, 4, 5, 6]
    assert {j.rep for j in jobs if j.layout == "random"} == {0}
    assert [j.rep for j in jobs if j.layout == "sorted"] == [0, 1, 2]


def test_store_filters(tmp_path):
    st = Store(tmp_path / "s.sqlite")
    ids = []
    for commit, layout_, seed in (("c0ffee11", "sorted", 0), ("c0ffee22", "random", 1), ("badbad33", "random", 2)):
        plan = tmp_path / f"plan-{commit}.json"
        plan.write_text("{}")
        v = Variant("k", commit, "img", layout_, seed, tmp_path / "image.elf", plan, tmp_path / "link.ld",
                    f"{commit}{seed}", "0x1", True)
        ids.append(st.build_id(v, {"cc": "clang", "ld": "lld"}))
    key = RunKey("t", "h", "rerun", "n=1", st.config_id({"kind": "local"}))
    for i, b in enumerate(ids):
        st.add_run(b, key, 0, RunResult("ok", 0, "", 1.0, "native", "h", [Sample("m", float(i), "s", False)]),
                   Path("/l"), 0.0)
    assert [s["value"] for s in st.samples(commit="c0ffee")] == [0.0, 1.0]  # a commit is a prefix
    assert [s["value"] for s in st.samples(build_id=[ids[0], ids[2]])] == [0.0, 2.0]
    assert [s["value"] for s in st.samples(layout="random", args="n=1", config=key.config)] == [1.0, 2.0]
    assert st.samples(config="other") == [] and st.samples(args="") == []
    assert [b["layout"] for b in st.builds(build_id=ids[1:])] == ["random", "random"]



def test_a_count_target_links_the_next_image_while_one_runs_and_a_timing_target_never(tmp_path):
    """Under a cache model (counts, not timings) the images after the first are linked while the
    first runs, so two cores link and run at once; on a target that times the benchmark every
    image is linked before the first run starts (a link beside a run would be in its timing)."""
    repo = mini_repo(tmp_path / "mini")
    for target, beside in (("cachegrind", True), ("local", False)):
        db = tmp_path / f"{target}.sqlite"
        lb("--workdir", str(tmp_path / target), "compare", "minikernel", "--repo", str(repo), "--commit", "HEAD",
           "--target", target, "--layouts", "default,random:3", "--runs", "1", "--args", "iterations=300",
           "--store", str(db))
        first_run = count(db, "SELECT min(started) FROM runs")[0][0]
        linked = [Path(p).stat().st_mtime for (p,) in count(db, "SELECT elf_path FROM builds")]
        assert len(linked) == 4 and count(db, "SELECT count(*) FROM runs WHERE status='ok'")[0][0] == 4
        assert (max(linked) > first_run) is beside, (target, max(linked) - first_run)


def test_a_measurements_values_come_in_the_requests_order_whatever_order_the_runs_ended_in():
    """Two runs side by side end in either order and are stored so; the values of each variant come
    back in the request's order of variants and by repetition (the same seeds are paired by position)."""
    from layoutbench import measure, profile

    prof = profile.load("minikernel")
    specs = (("random", 3), ("random", 1), ("random", 2))
    req = measure.MeasureRequest(prof, None, specs, runs=2)
    ended = [("random", 2, 1), ("random", 1, 0), ("random", 2, 0), ("random", 3, 1), ("random", 1, 1), ("random", 3, 0)]
    samples = [{"metric": "m", "layout": lay, "seed": sd, "rep": rep, "value": 10 * sd + rep, "sample_id": i}
               for i, (lay, sd, rep) in enumerate(ended)]
    samples.append({"metric": "other", "layout": "random", "seed": 1, "rep": 0, "value": -1.0, "sample_id": 9})
    m = measure.Measurement(req, None, [], None, {}, samples=samples)
    assert m.groups("m") == {"random:3": [30, 31], "random:1": [10, 11], "random:2": [20, 21]}
    assert list(m.groups("m")) == ["random:3", "random:1", "random:2"] and m.groups("m", max_rep=1) == {
        "random:3": [30], "random:1": [10], "random:2": [20]}
