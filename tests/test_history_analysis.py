"""history's analysis from a real store: which samples a point pools (the series' target, host,
mode, arguments, image, layouts and each point's own target configuration -- nothing else), how
consecutive points are compared (paired over the random seeds, Holm-adjusted across every step and
metric), and the noise rule (a change only single layouts show is "within layout noise").
The store is a real SQLite file filled through Store.add_run; the commits are a real git repository."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from layoutbench import history, layout, metrics, stats
from layoutbench.build import Variant
from layoutbench.errors import LayoutbenchError
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult

from conftest import git

SPECS = [("sorted", 0), ("random", 1), ("random", 2), ("random", 3), ("random", 4)]
#: per random seed, a layout effect shared by every commit (what pairing cancels)
LAYOUT = {1: 1.00, 2: 1.03, 3: 0.98, 4: 1.05}
RUN = [1.000, 1.002, 0.998]  #: three runs of every variant


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(6):
        (r / "f.txt").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-qm", f"commit {i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    return r, shas


def _variant(tmp: Path, commit: str, name: str, seed: int) -> Variant:
    plan = layout.LayoutPlan("k", "hosted", commit, name, seed, {"text": []})
    out = tmp / "v" / f"{commit[:8]}-{name}-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(plan.to_json())
    return Variant("k", commit, "hosted", name, seed, out / "image.elf", out / "plan.json", out / "link.ld",
                   f"{commit[:8]}{name}{seed}".ljust(64, "0"), f"0x{plan.plan_id:07x}", True)


def _measure(store, tmp, commit, values: dict, *, target="local", host="h1", mode="rerun", args="", config="cfgA",
             image="hosted", status="ok", only=None):
    """Store runs of `commit`: values maps (layout, seed) -> the variant's center; cycles (lower is
    better) and ops (higher is better, its inverse)."""
    for (name, seed), center in values.items():
        v = _variant(tmp, commit, name, seed)
        v = Variant(v.kernel, v.commit, image, v.layout, v.seed, v.elf, v.plan_path, v.script, v.sha256, v.plan_id,
                    True)
        bid = store.build_id(v, {"quirks": []})
        for rep, f in enumerate(RUN):
            x = center * f
            samples = [metrics.Sample("cycles", x, "cycles", False), metrics.Sample("ops", 1e6 / x, "1/s", True)]
            samples = [m for m in samples if only is None or m.metric == only]
            store.add_run(bid, RunKey(target, host, mode, args, config), rep,
                          RunResult(status, 0, "", 0.1, "native", host, samples if status == "ok" else []),
                          Path("/dev/null"), 0.0)


#: a quiet benchmark: layout effects within +-0.2%
QUIET = {1: 1.000, 2: 1.002, 3: 0.998, 4: 1.001}


def _values(factor: float, sorted_factor: float | None = None, jitter=None, layouts=None) -> dict:
    out = {("sorted", 0): 1000.0 * (sorted_factor if sorted_factor is not None else factor)}
    for s, e in (layouts or LAYOUT).items():
        out[("random", s)] = 1000.0 * factor * e * (jitter[s - 1] if jitter else 1.0)
    return out


def _series(repo_path, shas, points, configs=None) -> history.Series:
    return history.Series("k", str(repo_path), "", shas[0], shas[-1], shas, "local", "h1", "hosted", "rerun", "",
                          SPECS, 3, {c: {"status": "ok", "config": (configs or {}).get(c, "cfgA")} for c in points})


def test_a_point_pools_exactly_the_series_runs(repo, tmp_path):
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0))
    _measure(store, tmp_path, shas[1], _values(1.0))
    # runs the series must leave out: every one of them would show as a 50% change
    for other in ({"target": "qemu"}, {"host": "h2"}, {"mode": "reboot"}, {"args": "n=5"}, {"config": "cfgB"},
                  {"image": "kernel"}):
        _measure(store, tmp_path, shas[1], _values(1.5), **other)
    _measure(store, tmp_path, shas[1], {("random", 9): 1500.0})  # a seed the series does not hold
    _measure(store, tmp_path, shas[2], _values(1.5))  # a commit that is not a point
    h = history.analyse(store, _series(r, shas, [shas[0], shas[1]]))
    p = h.point(shas[1][:10])
    assert p.groups["cycles"] == {layout.label(n, s): [v * f for f in RUN] for (n, s), v in _values(1.0).items()}
    assert len(p.runs) == 15 and len(p.samples) == 30
    assert [(x["rep"], x["layout"], x["seed"]) for x in p.runs[:6]] == [
        (0, "sorted", 0), (0, "random", 1), (0, "random", 2), (0, "random", 3), (0, "random", 4), (1, "sorted", 0)]
    assert h.changes == []
    assert h.metrics == {"cycles": {"unit": "cycles", "higher_is_better": False},
                         "ops": {"unit": "1/s", "higher_is_better": True}}
    assert (p.index, p.info["subject"], p.status) == (1, "commit 1", "ok")
    # a point measured under another configuration is read under its own
    h = history.analyse(store, _series(r, shas, [shas[0], shas[1]], {shas[1]: "cfgB"}))
    assert h.point(shas[1]).groups["cycles"]["random:2"] == [1500.0 * 1.03 * f for f in RUN]
    # only the metrics asked for; an unknown one is a one-line error
    assert list(history.analyse(store, _series(r, shas, [shas[0]]), metrics=["ops"]).metrics) == ["ops"]
    with pytest.raises(LayoutbenchError, match="no samples of metric 'nope' in this history; metrics are: cycles, ops"):
        history.analyse(store, _series(r, shas, [shas[0]]), metrics=["nope"])
    store.close()


def test_steps_are_judged_over_the_pooled_layout_noise(repo, tmp_path):
    """A quiet benchmark: a 5% step of every layout is a code change; a step only the sorted layout
    makes is listed (a one-layout benchmark would report it) and, its random layouts' change of 1%
    or more ruled out by the equivalence test, within layout noise; a flat step is not listed."""
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0, layouts=QUIET))
    _measure(store, tmp_path, shas[2], _values(1.0, layouts=QUIET))                      # 0 -> 2: nothing
    _measure(store, tmp_path, shas[3], _values(1.05, layouts=QUIET))                     # 2 -> 3: 5% slower
    _measure(store, tmp_path, shas[5], _values(1.05, sorted_factor=1.0, layouts=QUIET))  # 3 -> 5: sorted alone
    h = history.analyse(store, _series(r, shas, [shas[0], shas[2], shas[3], shas[5]]), min_effect=0.01)
    got = {(c.commit, c.metric): c for c in h.changes}
    assert set(got) == {(shas[3], "cycles"), (shas[3], "ops"), (shas[5], "cycles"), (shas[5], "ops")}
    c = got[shas[3], "cycles"]
    assert (c.kind, c.verdict, c.prev, c.commits_between) == ("code change", "slower", shas[2], 1)
    assert c.ratio == pytest.approx(1.05) and math.log(c.ci_low) > math.log(1.01)  # beyond the band
    assert (c.family, c.level, c.layouts) == (6, pytest.approx(0.05 / 6), (4, 4))
    assert c.single_layout == {k: pytest.approx(1.05) for k in ("sorted", "random:1", "random:2", "random:3",
                                                               "random:4")}
    assert got[shas[3], "ops"].verdict == "slower" and got[shas[3], "ops"].ratio == pytest.approx(1 / 1.05)
    n = got[shas[5], "cycles"]
    assert (n.kind, n.worst_single, n.commits_between, n.prev) == ("within layout noise", "sorted", 2, shas[3])
    assert n.single_layout["sorted"] == pytest.approx(1 / 1.05) and n.ratio == pytest.approx(1.0)
    assert 1 / 1.01 < n.ci_low <= n.ci_high < 1.01 and n.confidence == pytest.approx(1 - 2 * 0.05 / 6)
    assert n.to_dict()["kind"] == "within layout noise" and c.effect == pytest.approx(0.05)
    # the step 0 -> 2 is tested (within layout noise), not listed
    flat = h.step(shas[2], "cycles")
    assert flat.kind == "within layout noise" and not flat.listed and flat not in h.changes
    assert h.to_dict()["steps"] == {"code change": 2, "below the minimum effect": 0, "within layout noise": 4,
                                    "not shown": 0}
    # with a minimum effect above 5%: the 5% step is seen, below the minimum effect, and still listed
    h6 = history.analyse(store, _series(r, shas, [shas[0], shas[2], shas[3], shas[5]]), min_effect=0.06)
    assert h6.step(shas[3], "cycles").kind == "below the minimum effect" and h6.step(shas[3], "cycles").listed
    text = history.summary_text(h, "cycles")
    assert "changes (minimum effect 1%; confidence 95% over the history's 6 step test(s), each at level 0.833%" in text
    assert "code change" in text and "within layout noise" in text
    assert f"somewhere in 2 commits after {shas[3][:12]}" in text
    assert "  other steps: 1 within layout noise" in text
    store.close()


def test_a_layout_only_step_every_paired_layout_shows_is_not_a_code_change(repo, tmp_path):
    """A commit that only moves code (adds an unused function) shifts every seed's layout alike: the
    three paired layouts all move by +3% while the layouts differ by several percent among
    themselves.  Paired over the seeds, the step looked certain (a code change at P(layout alone)
    0.55); judged against the layout noise, as a bisection judges, it is not shown either way."""
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    wide = {1: 1.00, 2: 1.06, 3: 0.95}
    specs = [("random", 1), ("random", 2), ("random", 3)]
    for i, (f, shift) in enumerate([(1.0, (1, 1, 1)), (1.0, (1.031, 1.028, 1.034)), (1.0, (1.031, 1.028, 1.034))]):
        _measure(store, tmp_path, shas[i], {("random", s): 1000.0 * f * wide[s] * shift[s - 1] for s in wide},
                 only="cycles")
    s = _series(r, shas, shas[:3])
    s.specs = specs
    h = history.analyse(store, s, min_effect=0.005)
    st = h.step(shas[1], "cycles")
    assert st.kind == "not shown" and st.ratio == pytest.approx(1.031, abs=0.002)
    assert st.listed  # every single layout moved by more than 0.5%: a one-layout benchmark would report it
    assert 0.03 < st.could_miss < 1 and "may have been missed" in st.says()
    assert st.explained_by_layout > 0.3
    line = next(ln for ln in history.summary_text(h).splitlines() if ln.startswith(f"  {shas[1][:12]}"))
    assert "not shown" in line and f"a step below {100 * st.could_miss:.2f}% may have been missed" in line
    store.close()


def test_a_small_step_at_few_layouts_is_not_shown_and_says_what_it_could_miss(repo, tmp_path):
    """A real +0.78% step at 3 layouts of a noisy metric: nothing is shown either way, so the step
    is "not shown" (never "within layout noise", which needs an equivalence test to pass)."""
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    wide = {1: 1.00, 2: 1.04, 3: 0.97}
    for i, f in enumerate([1.0, 1.0078]):
        _measure(store, tmp_path, shas[i], {("random", s): 1000.0 * f * e for s, e in wide.items()}, only="cycles")
    s = _series(r, shas, shas[:2])
    s.specs = [("random", 1), ("random", 2), ("random", 3)]
    st = history.analyse(store, s, min_effect=0.005).step(shas[1], "cycles")
    assert st.kind == "not shown" and st.could_miss > 0.005
    assert st.ci_low < 1 < st.ci_high
    store.close()


def test_the_minimum_effect_is_one_default_and_the_historys_own(repo, tmp_path):
    from layoutbench import validate

    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0, layouts=QUIET), only="cycles")
    _measure(store, tmp_path, shas[1], _values(1.0093, layouts=QUIET), only="cycles")  # a 0.93% step
    s = _series(r, shas, shas[:2])
    assert history.DEFAULT_MIN_EFFECT == stats.DEFAULT_MIN_EFFECT == validate.DEFAULT_MIN_EFFECT == 0.005
    h = history.analyse(store, s)
    assert h.min_effect == 0.005 and h.step(shas[1], "cycles").kind == "code change"
    # at a minimum effect of 1% the step is seen and said to be below it, not dropped
    s.min_effect = 0.01  # as a sweep with --min-effect 1 keeps it
    h = history.analyse(store, s)
    st = h.step(shas[1], "cycles")
    assert h.min_effect == 0.01 and st.kind == "below the minimum effect" and st in h.changes
    assert "a change seen, not shown to be at least the 1% minimum effect" in history.summary_text(h)
    assert history.analyse(store, s, min_effect=0.005).min_effect == 0.005  # given: it decides
    store.close()


def test_a_point_whose_runs_all_failed_and_one_not_built(repo, tmp_path):
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0))
    _measure(store, tmp_path, shas[1], _values(1.0), status="timeout")
    _measure(store, tmp_path, shas[3], _values(1.0))
    s = _series(r, shas, [shas[0], shas[1], shas[2], shas[3]])
    s.points[shas[2]] = {"status": "build-failed", "message": "lib/x.c: error: boom"}
    h = history.analyse(store, s)
    assert [p.status for p in h.points] == ["ok", "runs-failed", "build-failed", "ok"]
    assert [p.commit for p in h.measured()] == [shas[0], shas[3]]
    assert h.previous(h.point(shas[3])) is h.point(shas[0]) and h.previous(h.point(shas[0])) is None
    text = history.summary_text(h)
    assert "not measured:" in text and f"{shas[2][:12]}  build-failed: lib/x.c: error: boom" in text
    d = h.to_dict()
    assert [p["status"] for p in d["points"]] == ["ok", "runs-failed", "build-failed", "ok"]
    assert d["points"][0]["subject"] == "commit 0" and "commit" not in d["points"][0]["values"]
    store.close()


def test_a_step_is_judged_over_the_seeds_or_else_the_common_layouts():
    from layoutbench.history import evidence

    a = {"sorted": [100.0, 100.2], "random:1": [100.0, 100.1], "random:2": [101.0, 101.1]}
    b = {"sorted": [110.0, 110.2], "random:1": [100.0, 100.1], "random:2": [101.0, 101.1]}
    assert evidence._ids(a, b) == ["random:1", "random:2"]  # sorted left out
    assert evidence._ids({"sorted": [1.0], "aligned": [2.0]}, {"sorted": [1.2], "aligned": [2.4]}) == \
        ["sorted", "aligned"]  # no two seeds in common: the fixed layouts
    pa, pb = history.Point("a" * 40, 0, "ok", "", [], {}), history.Point("b" * 40, 1, "ok", "", [], {})
    assert history.judge_steps([(pa, pb, "m", "u", False, {"random:1": [1.0]}, {"random:2": [1.0]})], 0.05, 0.01) == []
    assert history.judge_steps([(pa, pb, "m", "u", False, {"random:1": [-1.0]}, {"random:1": [1.0]})], 0.05, 0.01) == []
    st, = history.judge_steps([(pa, pb, "m", "u", False, a, b)], 0.05, 0.01)
    assert st.ratio == pytest.approx(1.0) and st.worst_single == "sorted" and st.listed


def test_every_step_and_metric_of_the_history_share_its_error_budget(repo, tmp_path):
    """A step shown beyond the minimum effect when it is the history's only test is not once the
    history holds six (each then at level 0.05 / 6)."""
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    noisy = {1: 1.0, 2: 1.012, 3: 0.99, 4: 1.004}
    for i, f in enumerate([1.0, 1.0, 1.0, 1.023]):
        _measure(store, tmp_path, shas[i], _values(f, layouts=noisy))
    pts = shas[:4]
    alone = history.analyse(store, _series(r, shas, pts[2:]), metrics=["cycles"], min_effect=0.005)
    assert [(c.kind, c.family) for c in alone.steps] == [("code change", 1)]
    h = history.analyse(store, _series(r, shas, pts), min_effect=0.005)
    st = h.step(shas[3], "cycles")
    assert (st.family, st.level) == (6, pytest.approx(0.05 / 6))
    assert st.kind != "code change" and st.ci_low < alone.steps[0].ci_low
    store.close()


def test_parse_interval_and_choose_by_date():
    assert [history.parse_interval(t) for t in ("90s", "2m", "1.5h", "1d", "2w")] == [90, 120, 5400, 86400, 1209600]
    with pytest.raises(LayoutbenchError, match="--every 'soon' is not an interval"):
        history.parse_interval("soon")
    dates = {"a": 0.0, "b": 3600.0, "c": 86400.0, "d": 86400.0 + 10, "e": 2 * 86400.0}
    assert history.choose(list(dates), every=86400.0, dates=dates) == ["a", "c", "e"]
    assert history.choose(list(dates), step=2) == ["a", "c", "e"]
    assert history.choose(list(dates), step=3) == ["a", "d", "e"]
    assert math.isfinite(history.parse_interval(" 3 d "))


# -- sweeping: the series' bookkeeping, on a real repository whose commits a quirk keeps from building --

def test_a_sweep_records_every_point_and_refine_measures_only_what_is_missing(repo, tmp_path, monkeypatch):
    from layoutbench import profile

    r, shas = repo
    q = tmp_path / "q.toml"
    q.write_text('[[quirk]]\nname = "nobuild"\nreason = "not built in this test"\nall = true\nskip = true\n')
    monkeypatch.setenv("LAYOUTBENCH_QUIRKS", str(q))
    prof = profile.load("minikernel")
    store = Store(tmp_path / "s.sqlite")
    opts = history.SweepOptions(spec=f"{shas[0]}..{shas[5]}", repo=str(r), target="local", specs=(("random", 1),),
                                runs=1)
    commits = history.full_range(prof, opts.spec, opts.repo)
    assert commits == shas
    points = history.choose(commits, step=2)
    said = []
    out = history.sweep(prof, store, points, opts, say=said.append)
    assert out.measured == out.new == out.build_failed == points == [shas[0], shas[2], shas[4], shas[5]]
    assert (out.ran, out.skipped, out.failed_runs) == (0, 0, 0)
    assert said[0].startswith("target ") and said[0].endswith("4 point(s), layouts random:1, 1 run(s) each")
    s = history.load_series(store, "minikernel", r)
    assert s.commits == shas and s.specs == [("random", 1)] and s.runs == 1 and s.target == "local"
    assert [s.points[c]["status"] for c in points] == ["skipped"] * 4
    assert s.points[shas[0]]["quirks"] == ["nobuild"] and "skipped by quirk nobuild" in s.points[shas[0]]["message"]
    assert history.load_series(store).key == s.key  # the only history: found without naming it
    # refine: only the commits between two points that the series lacks
    again = history.refine(prof, store, f"{shas[0]}..{shas[4]}", history.SweepOptions(repo=str(r)), step=3)
    assert again.measured == again.new == [shas[3]]  # every 3rd commit inside 0..4: 3
    again = history.refine(prof, store, f"{shas[2]}..{shas[5]}", history.SweepOptions(repo=str(r)))
    assert again.measured == []  # 3 and 4 are points already
    again = history.refine(prof, store, f"{shas[0]}..{shas[5]}", history.SweepOptions(repo=str(r)))
    assert again.measured == [shas[1]]
    assert history.refine(prof, store, f"{shas[0]}..{shas[5]}", history.SweepOptions(repo=str(r))).measured == []
    for spec, msg in ((shas[2], "must look like X..Y"), (f"{shas[4]}..{shas[2]}", "must come before"),
                      (f"{shas[2]}..{shas[2]}", "must come before")):
        with pytest.raises(LayoutbenchError, match=msg):
            history.refine(prof, store, spec, history.SweepOptions(repo=str(r)))
    narrow = history.load_series(store, "minikernel", r)
    narrow.commits, narrow.start = shas[1:], shas[1]
    history.save_series(store, narrow)
    with pytest.raises(LayoutbenchError) as e:
        history.refine(prof, store, f"{shas[0]}..{shas[2]}", history.SweepOptions(repo=str(r)))
    assert str(e.value) == (f"{shas[0]} is not in the history's range {shas[1][:12]}..{shas[5][:12]}; "
                            f"sweep a range that holds it first")
    narrow.commits, narrow.start = shas, shas[0]
    history.save_series(store, narrow)
    # sweeping the same range again keeps the points; a sweep changes no point it did not probe
    out = history.sweep(prof, store, [shas[5]], opts)
    assert out.measured == [shas[5]] and out.new == []
    assert sorted(history.load_series(store, "minikernel", r).points) == sorted(shas)
    h = history.analyse(store, history.load_series(store, "minikernel", r))
    assert [p.status for p in h.points] == ["skipped"] * 6 and h.changes == []
    assert history.summary_text(h).count("skipped: commit ") == 6
    store.close()


def test_no_history_is_one_line(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    with pytest.raises(LayoutbenchError, match=r"no history of k in /nowhere in .*s.sqlite; run `layoutbench history "
                                               r"k A..B` first"):
        history.load_series(store, "k", "/nowhere")
    with pytest.raises(LayoutbenchError, match="no history in .*; run `layoutbench history KERNEL A..B` first"):
        history.load_series(store)
    for k in ("k1", "k2"):
        store.set_state(history.series_key(k, "/r"), _series(Path("/r"), ["a" * 40, "b" * 40], []).to_dict() | {
            "kernel": k})
    with pytest.raises(LayoutbenchError, match=r"several kernels \(k1, k2\); name one"):
        history.load_series(store)
    assert history.load_series(store, "k2").kernel == "k2"
    s = history.load_series(store, "k1", "/r")
    assert s.specs == SPECS and isinstance(s.specs[0], tuple)  # JSON lists back to (layout, seed)
    store.close()


def test_a_probe_records_a_measured_point_and_one_whose_runs_all_failed(built, tmp_path):  # noqa: F811
    from layoutbench import measure

    store = Store(tmp_path / "s.sqlite")
    prof, _ = _target(built)
    req = measure.MeasureRequest(prof, built["checkout"], (("default", 0), ("random", 1)), runs=1, target="t",
                                 check_machine=False)
    built["flag"].unlink(missing_ok=True)
    with req.make_target() as t:
        rec = history.probe(req, t, store)
    assert (rec["status"], rec["message"], rec["ran"], rec["failed"], rec["quirks"]) == (
        "runs-failed", "all 2 runs failed", 2, 2, [])
    built["flag"].touch()
    with req.make_target() as t:
        rec = history.probe(req, t, store)
    assert (rec["status"], rec["ran"], rec["skipped"], rec["failed"]) == ("ok", 0, 2, 0)  # failed runs are kept
    with measure.MeasureRequest(prof, built["checkout"], (("default", 0), ("random", 2)), runs=1, target="t",
                                check_machine=False).make_target() as t:
        rec = history.probe(req.__class__(prof, built["checkout"], (("default", 0), ("random", 2)), runs=1,
                                          target="t", check_machine=False), t, store)
    assert (rec["status"], rec["ran"], rec["skipped"], rec["failed"]) == ("ok", 1, 1, 0)
    assert rec["config"] and rec["message"] == ""
    store.close()


from test_resume import _target, built  # noqa: E402,F401  (a minikernel compiled once, a local target)


def test_the_summary_names_points_changes_and_quirks(repo, tmp_path, monkeypatch):
    from layoutbench import profile

    r, shas = repo
    q = tmp_path / "q.toml"
    q.write_text(f'[[quirk]]\nname = "q1"\nreason = "needs a flag"\nfrom = "{shas[2]}"\nuntil = "{shas[4]}"\n'
                 f'env = {{ A = "1" }}\n')
    monkeypatch.setenv("LAYOUTBENCH_QUIRKS", str(q))
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0))
    _measure(store, tmp_path, shas[3], _values(1.25))
    s = _series(r, shas, [shas[0], shas[3]])
    s.points[shas[5]] = {"status": "build-failed", "message": "boom"}
    h = history.analyse(store, s, profile=profile.load("minikernel"), metrics=["cycles"], min_effect=0.01)
    assert h.quirks == [{"name": "q1", "reason": "needs a flag", "from": shas[2], "until": shas[4], "commits": [],
                         "all": False, "actions": "env A=1", "first": 2, "last": 3, "first_commit": shas[2],
                         "last_commit": shas[3], "points": [shas[3]]}]
    lines = history.summary_text(h).splitlines()
    assert lines[:4] == [f"k history {shas[0][:12]}..{shas[5][:12]} (6 commits, 3 measured)",
                         "target local on h1, mode rerun, layouts sorted,random:1,random:2,random:3,random:4, "
                         "3 run(s) each", "", "cycles (cycles, lower is better)"]
    rows = [ln for ln in lines if ln.startswith("     0  ") or ln.startswith("     3  ") or ln.startswith("     5  ")]
    assert rows[0].split() == ["0", shas[0][:12], "1015.0", "6.90%", "1000.0", "commit", "0"]
    assert rows[2].split()[:3] == ["5", shas[5][:12], "build-failed"]
    i = lines.index("changes (minimum effect 1%; confidence 95% over the history's 1 step test(s), each at level 5%, "
                    "with the layout noise pooled over every point):")
    assert lines[i + 1].split()[:2] == [shas[3][:12], "cycles"] and "code change" in lines[i + 1]
    assert lines[i + 1].endswith("commit 3") and "somewhere in 3 commits after" in lines[i + 1]
    assert lines[i + 2:i + 5] == ["", "quirks:", f"  q1: needs a flag (env A=1); commits 2..3 ({shas[2][:12]}.."
                                                 f"{shas[3][:12]})"]
    assert lines[-3:] == ["", "not measured:", f"  {shas[5][:12]}  build-failed: boom"]
    assert history.summary_text(h).endswith("boom\n")
    # two random layouts are enough for a spread: (1030 - 1000) / 1015
    two = _series(r, shas, [shas[0]])
    two.specs = SPECS[:3]
    row = [ln for ln in history.summary_text(history.analyse(store, two)).splitlines() if ln.startswith("     0  ")]
    assert row[0].split()[2:5] == ["1015.0", "2.96%", "1000.0"]
    store.close()


def test_a_probe_with_some_runs_failed_is_still_measured(built, tmp_path):  # noqa: F811
    from layoutbench import measure, profile as profmod, targets

    store = Store(tmp_path / "s.sqlite")
    cmd = ["sh", "-c", 'case "$0" in *random*) exit 3;; esac; exec "$0" iterations=1000', "{image}"]
    spec = profmod.Target("half", "local", "hosted", 60.0, {"command": cmd})
    prof = dataclasses.replace(built["profile"], targets={**built["profile"].targets, "half": spec})
    req = measure.MeasureRequest(prof, built["checkout"], (("default", 0), ("random", 1)), runs=1, target="half",
                                 check_machine=False)
    with targets.make(prof, "half") as t:
        rec = history.probe(req, t, store)
    assert (rec["status"], rec["ran"], rec["failed"], rec["message"]) == ("ok", 2, 1, "")
    store.close()


def test_a_change_below_the_minimum_effect_is_said_so_not_dropped(repo, tmp_path):
    """Every layout 0.995% faster: the change is shown (its interval excludes 1) but not to be 1%:
    below the minimum effect, listed as such; a further 1.5% step is a code change."""
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0, layouts=QUIET))
    _measure(store, tmp_path, shas[1], _values(0.99005, layouts=QUIET))
    h = history.analyse(store, _series(r, shas, [shas[0], shas[1]]), metrics=["cycles"], min_effect=0.01)
    assert [(c.commit, c.kind, c.verdict) for c in h.changes] == [(shas[1], "below the minimum effect", "no difference")]
    assert h.changes[0].ci_high < 1 and h.quirks == [] and h.verdicts == []
    assert h.to_dict()["quirks"] == [] and h.to_dict()["changes"][0]["kind"] == "below the minimum effect"
    _measure(store, tmp_path, shas[2], _values(0.99005 * 0.985, layouts=QUIET))
    h = history.analyse(store, _series(r, shas, [shas[0], shas[1], shas[2]]), metrics=["cycles"], min_effect=0.01)
    assert [(c.commit, c.kind) for c in h.changes] == [(shas[1], "below the minimum effect"), (shas[2], "code change")]
    store.close()


def test_points_outside_the_range_and_quirks_that_touch_nothing(repo, tmp_path, monkeypatch):
    from layoutbench import profile

    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0))
    _measure(store, tmp_path, shas[5], _values(1.0))
    s = _series(r, shas[:5], [shas[0], shas[5]])  # shas[5] was measured, the range ends before it
    monkeypatch.setenv("LAYOUTBENCH_QUIRKS", str(tmp_path / "none.toml"))
    h = history.analyse(store, s, profile=profile.load("minikernel"))
    assert [(p.commit, p.index) for p in h.points] == [(shas[5], -1), (shas[0], 0)]
    assert h.quirks == []
    (tmp_path / "none.toml").write_text(f'[[quirk]]\nname = "x"\ncommits = ["{shas[5]}"]\nskip = true\n')
    assert history.analyse(store, s, profile=profile.load("minikernel")).quirks == []  # not in the range
    store.close()


def test_a_metric_one_point_lacks_is_not_compared_there(repo, tmp_path):
    r, shas = repo
    store = Store(tmp_path / "s.sqlite")
    _measure(store, tmp_path, shas[0], _values(1.0, layouts=QUIET))
    _measure(store, tmp_path, shas[1], _values(1.05, layouts=QUIET), only="cycles")
    h = history.analyse(store, _series(r, shas, [shas[0], shas[1]]), min_effect=0.01)
    assert [(c.metric, c.kind) for c in h.changes] == [("cycles", "code change")]
    assert list(h.point(shas[1]).groups) == ["cycles"]
    store.close()


# -- small parts with exact expectations ----------------------------------------------------------

def _bare_series(commits: list[str]) -> history.Series:
    return history.Series(kernel="k", repo="/r", subdir="", start=commits[0], end=commits[-1], commits=commits,
                          target="t", host="h", image="i", mode="rerun", args="", specs=[("random", 1)], runs=1)


def test_a_points_center_is_the_mean_of_its_layouts_medians_seeded_or_not():
    p = history.Point("c" * 40, 0, "ok", "", [], {},
                      groups={"m": {"default": [5.0, 7.0, 6.0], "random:1": [2.0, 2.0, 9.0], "random:2": [4.0]}})
    assert p.center("m") == 3.0  # (median 2 + median 4) / 2: the seeded layouts only
    assert p.center("m", seeded=False) == 6.0  # the default link alone
    assert p.center("other") is None


def test_a_sweeps_outcome_as_json():
    s = _bare_series(["a" * 40, "b" * 40])
    o = history.SweepOutcome(s, ["b" * 40], ["b" * 40], ran=3, skipped=1, copied=4, failed_runs=2, build_failed=["x"])
    assert o.to_dict() == {"series": s.key, "measured": ["b" * 40], "new": ["b" * 40], "ran": 3, "skipped": 1,
                           "copied": 4, "failed_runs": 2, "build_failed": ["x"]}


def test_a_stored_bisection_marks_its_candidates_and_every_probe_on_the_history(tmp_path):
    from contextlib import closing

    from layoutbench import bisect
    from layoutbench.store import Store

    c = [f"{i + 1:x}" * 40 for i in range(5)]
    with closing(Store(tmp_path / "s.sqlite")) as store:
        log = [{"verb": "start", "bad": c[4], "good": c[0]}, {"verb": "good", "commit": c[1]},
               {"verb": "skip", "commit": c[2]}, {"verb": "bad", "commit": c[4][:12]}, {"verb": "note", "commit": c[3]},
               "not a mark"]
        bisect.Bisection(store, bisect.Settings(kernel="k", metric="m"), log,
                         {"status": "range", "range": [c[2][:12], c[3]], "metric": "m"}).save()
        bisect.Bisection(store, bisect.Settings(kernel="other", metric="m", repo="/o"), [],
                         {"status": "found", "culprit": c[3]}).save()  # another kernel's: not on this history
        got = history.bisect_verdicts(store, _bare_series(c))
    span = f"layoutbench bisect {c[0][:12]}..{c[4][:12]}"
    assert [(g.commit, g.index, g.kind, g.text) for g in got] == [
        (None, None, "verdict", f"{span}: the first bad commit is one of 2 (m; the others skipped)"),
        (c[2], 2, "candidate", f"{span}: not ruled out (range)"), (c[3], 3, "candidate", f"{span}: not ruled out (range)"),
        (c[1], 1, "probe", "bisect: good"), (c[2], 2, "probe", "bisect: skip"), (c[4], 4, "probe", "bisect: bad")]
