"""``layoutbench report``: the static site of a generated minikernel history, checked as files
and in headless Chromium (no network): pages load without console errors, the plots hold
one point per stored run, every link resolves."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import require

import _chromium
import _history_repo as H

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("cg_cost", "cg_ir", "cg_i1_misses")
POINTS = (0, 2, 4, 5, 6, 8)


@pytest.fixture(scope="session")
def hist(tmp_path_factory):
    return H.swept(tmp_path_factory.getbasetemp() / "history")


def _samples(store: str, metric: str, manifest: dict) -> int:
    """The stored samples the history's plot shows: its commits, its layouts (the bisection in
    the same store measured a fourth random layout and commits in between as well)."""
    db = sqlite3.connect(store)
    commits = [H.sha(manifest, i) for i in POINTS]
    return db.execute(
        "SELECT COUNT(*) FROM samples s JOIN runs r ON r.id = s.run_id JOIN builds b ON b.id = r.build_id "
        f"WHERE s.metric=? AND b.layout IN ('sorted','aligned','random') AND b.seed <= 3 "
        f"AND b.commit_sha IN ({','.join('?' * len(commits))})", (metric, *commits)).fetchone()[0]


def test_report_has_a_page_per_measured_commit(hist):
    m, site = hist["manifest"], Path(hist["site"])
    pages = sorted(p.stem for p in (site / "commits").glob("*.html"))
    assert pages == sorted(H.sha(m, i)[:12] for i in POINTS)
    page = (site / "commits" / f"{m['regression'][:12]}.html").read_text()
    for what in ("Layout plans", "quirks applied", "Runs", "console:", "Commits since the previous measured point"):
        assert what in page
    assert "checksum: fold carries defensively" in page  # the commit log between the points
    # the symdiff against the previous point (its images are still on disk): the regression changed code
    assert 'id="symdiff"' in page and "symdiff not available" not in page
    assert '<pre class="symdiff">' in page and "placement differs: " in page
    assert 'class="cache-view"' not in page  # it changed code: no cache view of a layout-only commit
    # what shaped the samples: the target configuration of the runs (with its settings), and that
    # cachegrind has no machine of its own to check
    with sqlite3.connect(hist["store"]) as db:
        cfgs = {r[0] for r in db.execute("SELECT DISTINCT r.config FROM runs r JOIN builds b ON b.id = r.build_id "
                                           "WHERE b.commit_sha = ?", (m["regression"],))}
    assert len(cfgs) == 1 and "Where it ran" in page
    assert f'<code class="config">{cfgs.pop()}</code>' in page and "&#34;i1&#34;" in page
    assert "not checked" in page
    quirky = (site / "commits" / f"{H.sha(m, 2)[:12]}.html").read_text()
    assert 'class="quirk-applied" data-quirk="unused-variable"' in quirky
    # every run's console log is copied beside the pages
    logs = list((site / "files").glob("*/run-*.log.txt"))
    assert len(logs) == len(POINTS) * 5


def test_report_marks_every_quirk_and_lists_the_regression(hist):
    m, site = hist["manifest"], Path(hist["site"])
    index = (site / "index.html").read_text()
    quirk_names = re.findall(r'^name = "([^"]+)"', Path(m["quirks"]).read_text(), re.M)
    assert quirk_names
    for q in quirk_names:
        for metric in METRICS:
            svg = (site / "plots" / f"{metric}.svg").read_text()
            assert f'<g class="quirk" data-quirk="{q}">' in svg
        assert index.count(f'<g class="quirk" data-quirk="{q}">') == len(METRICS)
    row = re.search(rf'<tr class="code-change" data-commit="{m["regression"]}" data-metric="cg_cost" '
                    rf'data-kind="code change">', index)
    assert row, "the planted regression is not in the summary table"
    assert not re.search(r'<tr class="code-change" data-commit="(?!%s)' % m["regression"], index)


def test_report_in_headless_chromium(hist, tmp_path):
    exe = _chromium.find()
    if exe is None:
        require("chromium is not installed")
    site = Path(hist["site"])
    b = _chromium.Browser(exe, tmp_path / "profile")
    try:
        index = (site / "index.html").as_uri()
        r = b.load(index)
        assert r["errors"] == []
        assert all(u.startswith(("file:", "data:", "about:")) for u in r["requests"]), r["requests"]
        assert b.eval("getComputedStyle(document.body).fontFamily") != ""  # the stylesheet loaded
        for metric in METRICS:
            n = b.eval(f'document.querySelectorAll(\'svg.history-plot[data-metric="{metric}"] circle.run\').length')
            assert n == _samples(hist["store"], metric, hist["manifest"]) == len(POINTS) * 5
            box = b.eval(f'(() => {{ const r = document.querySelector(\'svg.history-plot[data-metric="{metric}"]\')'
                         f'.getBoundingClientRect(); return [r.width, r.height]; }})()')
            assert box[0] > 300 and box[1] > 150
            assert b.eval(f'document.querySelectorAll(\'svg[data-metric="{metric}"] .noise-band\').length') >= 1
        b.screenshot(tmp_path / "report.png")
        assert (tmp_path / "report.png").stat().st_size > 10_000
        if os.environ.get("LAYOUTBENCH_SCREENSHOT"):
            shutil.copyfile(tmp_path / "report.png", ROOT / "docs" / "report.png")

        # follow every link: files exist, every page loads without errors
        seen, todo = set(), [index]
        while todo:
            url = todo.pop()
            if url in seen:
                continue
            seen.add(url)
            r = b.load(url)
            assert r["errors"] == [], f"{url}: {r['errors']}"
            links = b.eval("[...document.querySelectorAll('a[href]')]"
                           ".map(a => new URL(a.getAttribute('href'), document.baseURI).href)")
            for link in links:
                u = urlparse(link.split("#")[0])
                assert u.scheme == "file", f"{url} links outside the site: {link}"
                path = Path(unquote(u.path))
                assert path.is_file(), f"{url}: broken link {link}"
                assert site in path.parents, f"{url}: link leaves the site: {link}"
                if path.suffix == ".html":
                    todo.append(path.as_uri())
        pages = {Path(urlparse(u).path).name for u in seen}
        assert {f"{H.sha(hist['manifest'], i)[:12]}.html" for i in POINTS} <= pages
    finally:
        b.close()


def test_report_marks_the_bisection_verdict_on_the_commit_it_names(hist):
    m, site = hist["manifest"], Path(hist["site"])
    culprit = hist["bisection"]["culprit"]
    assert culprit == m["regression"], hist["bisection"]
    svg = (site / "plots" / "cg_cost.svg").read_text()
    assert svg.count(f'<g class="bisect" data-commit="{culprit}" data-kind="verdict">') == 1
    assert f'data-commit="{culprit}"' in (site / "index.html").read_text()


def test_a_layout_only_commits_page_links_its_cache_view(hist):
    """A commit whose symdiff against the previous point changed no function's code links the
    cache view of the two images: a page beside its own, from the kept cachegrind runs, with the
    hot functions' sets in the 4096-byte 2-way I1, their misses side by side, and the command."""
    site = Path(hist["site"])
    linked = []
    for f in sorted((site / "commits").glob("*.html")):
        page = f.read_text()
        m = re.search(r'<p class="cache-view">.*?<a href="([^"]+)">', page, re.S)
        if m:
            linked.append((site / "commits" / m.group(1)).read_text())
    assert linked, "no layout-only commit page links a cache view"
    for view in linked:
        assert "cache: 4096 bytes, 2-way, 64-byte lines = 32 sets" in view
        assert "I1 misses per function (cachegrind), by change" in view
        assert "layoutbench symdiff " in view and "--cache L1I --target cachegrind" in view  # the runs' own target
        assert f"--target cachegrind --args {H.ARGS}" in view  # ... and arguments: the command counts the same
