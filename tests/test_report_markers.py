"""Two culprits told right in the history and the report, and the report's labels readable: a real
minikernel history with two 2% steps (commits 1 and 3) and a layout-only commit (4), bisected under
cachegrind (both steps named; the naive single-layout bisection blames the second), a second
bisection of a sub-range kept beside it, the history swept at every commit, the report written and
measured in headless Chromium (no two marker labels overlap, no text leaves its plot)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import require, script

import _chromium
import _history_repo as H

CG = ["--target", "cachegrind", "--args", H.ARGS]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    base = tmp_path_factory.mktemp("two-culprits")
    m = script("kernels/minikernel/make_history.py").make_history(
        base / "repo", 4, seed=100, regression_at=[1, 3], regression_pct=[2.0, 2.0], layout_only=[4])
    e = H.env(base / "wd", {**m, "quirks": str(base / "no-quirks.toml")})
    store = str(base / "s.sqlite")
    whole = H.as_json(H.lb(["bisect", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], *CG,
                            "--store", store, "--json"], e))
    sub = H.as_json(H.lb(["bisect", "minikernel", f"{H.sha(m, 2)}..{m['bad']}", "--repo", m["repo"], *CG,
                          "--store", store, "--json"], e))
    H.lb(["history", "minikernel", f"{m['good']}..{m['bad']}", "--repo", m["repo"], *CG, "--layouts", "sorted,random:3",
          "--runs", "1", "--every-commit", "--min-effect", "0.6", "--store", store], e)
    summary = H.lb(["history", "minikernel", "--repo", m["repo"], "--summary", "--store", store], e).stdout
    site = base / "site"
    H.lb(["report", "minikernel", "--repo", m["repo"], "--store", store, "-o", str(site)], e)
    return {"m": m, "whole": whole, "sub": sub, "summary": summary, "site": site}


def test_each_culprit_is_named_with_its_own_effect_in_the_history(two):
    m, v = two["m"], two["whole"]
    steps = [s for s in v["steps"] if s["status"] == "found"]
    assert [s["culprit"] for s in steps] == v["culprits"] == [H.sha(m, 1), H.sha(m, 3)], v["message"]
    assert v["single_layout"]["culprit"] == H.sha(m, 3)  # the naive choice is the second culprit
    lines = two["summary"].splitlines()
    span = f"{m['good'][:12]}..{m['bad'][:12]}"
    for i, st in enumerate(steps):
        mine = [ln for ln in lines if ln.startswith(f"  {st['culprit'][:12]}  layoutbench bisect {span}:")]
        assert len(mine) == 1, lines
        assert f"change point {i + 1} of 2" in mine[0] and f"x{st['effect']['ratio']:.4f}" in mine[0]
        other = steps[1 - i]
        assert other["culprit"][:12] not in mine[0] and f"x{other['effect']['ratio']:.4f}" not in mine[0]
    naive = [ln for ln in lines if f"naive: a naive single-layout bisection of {span}" in ln]
    assert naive == [f"  {H.sha(m, 3)[:12]}  naive: a naive single-layout bisection of {span} would blame this "
                     "(layoutbench blames it too)"]
    assert not any("(layoutbench does not)" in ln and ln.strip()[:12] in {c[:12] for c in v["culprits"]}
                   for ln in lines)


def test_the_summary_and_the_report_judge_by_the_minimum_effect_the_history_was_swept_with(two):
    """Swept with --min-effect 0.6: --summary and report, given none, judge by 0.6% and say so."""
    assert "changes (minimum effect 0.6%; confidence 95% over the history's 12 step test(s)" in two["summary"]
    index = (two["site"] / "index.html").read_text()
    assert "<b>Minimum effect 0.60%</b>" in index and "interval lies beyond ±0.60%" in index
    data = json.loads((two["site"] / "history.json").read_text())
    assert data["min_effect"] == 0.006 and data["series"]["min_effect"] == 0.006
    assert all(c["min_effect"] == 0.006 for c in data["changes"])


def test_the_reports_markers_name_each_culprit_and_never_call_one_naive_only(two):
    m, v = two["m"], two["whole"]
    steps = [s for s in v["steps"] if s["status"] == "found"]
    svg = (two["site"] / "plots" / "cg_cost.svg").read_text()
    for i, st in enumerate(steps):
        g = re.search(rf'<g class="bisect" data-commit="{st["culprit"]}" data-kind="verdict">(.*?)</g>', svg, re.S)
        assert g, st["culprit"]
        label = re.search(r'<text class="marker-label"[^>]*>([^<]*)</text>', g.group(1)).group(1)
        assert label.startswith("layoutbench: ") and f"change {i + 1} of 2, x{st['effect']['ratio']:.4f}" in label
    # the sub-range's own verdict on commit 3 (its first bad commit, its own effect) joins the same label
    label3 = re.search(rf'data-commit="{H.sha(m, 3)}" data-kind="verdict">.*?<text class="marker-label"[^>]*>([^<]*)<',
                       svg, re.S).group(1)
    assert f"first bad, x{two['sub']['effect']['ratio']:.4f}" in label3 and two["sub"]["culprit"] == H.sha(m, 3)
    # one marker per commit and kind: the sub-range's bisection blames commit 3 too, its marker is shared
    assert svg.count(f'data-commit="{H.sha(m, 3)}" data-kind="verdict"') == 1
    assert svg.count(f'data-commit="{H.sha(m, 3)}" data-kind="shadow"') == 1
    shadow = re.search(rf'<g class="bisect-shadow" data-commit="{H.sha(m, 3)}" data-kind="shadow">(.*?)</g>', svg, re.S)
    assert "naive bisection would blame (so does layoutbench)" in shadow.group(1)
    assert "layoutbench does not" not in shadow.group(1)
    data = json.loads((two["site"] / "history.json").read_text())
    verdicts = [d for d in data["verdicts"] if d["kind"] == "verdict" and d["commit"]]
    assert {(d["commit"], d["effect"]["ratio"]) for d in verdicts if d["range"].startswith(m["good"][:12])} == {
        (s["culprit"], s["effect"]["ratio"]) for s in steps}
    assert {d["range"] for d in verdicts} == {f"{m['good'][:12]}..{m['bad'][:12]}", f"{H.sha(m, 2)[:12]}..{m['bad'][:12]}"}


def test_no_two_labels_overlap_and_no_text_leaves_its_plot_in_chromium(two, tmp_path):
    exe = _chromium.find()
    if exe is None:
        require("chromium is not installed")
    measure = """(() => [...document.querySelectorAll('svg.history-plot')].map(svg => {
        const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
        return {metric: svg.dataset.metric, svg: box(svg),
                labels: [...svg.querySelectorAll('text.marker-label')].map(t => [t.textContent, box(t)]),
                texts: [...svg.querySelectorAll('text')].map(t => [t.textContent, box(t)])};
    }))()"""
    b = _chromium.Browser(exe, tmp_path / "profile")
    try:
        r = b.load((two["site"] / "index.html").as_uri())
        assert r["errors"] == []
        plots = b.eval(measure)
        # and in a wide font (a reader's sans-serif may be as wide as this one): nothing clipped either
        b.eval("document.head.insertAdjacentHTML('beforeend', "
               "'<style>svg.history-plot text{font-family:monospace !important}</style>')")
        plots += b.eval(measure)
    finally:
        b.close()
    assert {p["metric"] for p in plots} == {"cg_cost", "cg_ir", "cg_i1_misses"} and len(plots) == 6
    for p in plots:
        left, top, right, bottom = p["svg"]
        if p["metric"] == "cg_cost":  # the bisections' metric: both culprits and the naive choice
            assert len(p["labels"]) >= 3
        for text, (x0, y0, x1, y1) in p["texts"]:
            assert left - 0.5 <= x0 and x1 <= right + 0.5 and top - 0.5 <= y0 and y1 <= bottom + 0.5, (p["metric"], text)
        labels = p["labels"]
        for i, (ta, a) in enumerate(labels):
            for tb, c in labels[i + 1:]:
                assert not (a[0] < c[2] and c[0] < a[2] and a[1] < c[3] and c[1] < a[3]), (p["metric"], ta, tb)


def test_labels_are_placed_in_rows_and_turned_at_the_right_edge():
    from layoutbench.report import plot

    got = plot.place_labels([(100, "layoutbench: first bad"), (100, "naive bisection would blame"),
                             (400, "quirk q"), (880, "layoutbench: change 2 of 2")], 84, 900)
    assert [row for _, _, row in got] == [0, 1, 0, 0]
    assert got[0][:2] == (103, "start") and got[3][:2] == (877, "end")
    w = plot.text_width("naive bisection would blame")
    assert w == pytest.approx(0.62 * 10 * 27)
    # a label that would overlap one placed in row 0 (within the gap) goes to the next row
    near = plot.place_labels([(100, "a" * 10), (100 + 3 + plot.text_width("a" * 10) + 2, "b")], 0, 2000)
    assert [row for _, _, row in near] == [0, 1]
