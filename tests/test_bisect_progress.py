"""What a person watching `bisect run` reads: real minikernel bisections through the command line
(real builds, real cachegrind runs), their progress lines on stderr and in the bisection's progress
log.  One history serves every test: the import, three commits that only add unused code, the 3%
step, then three commits that change only README.md, which the profile names unread: a probe of one
links the objects of BAD (the images of those objects, linked for BAD's layouts, need no link)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from conftest import MINI_TOML, ROOT, git, lb, script
from layoutbench import costs

ARGS = "iterations=300"
make_history = script("kernels/minikernel/make_history.py").make_history


@pytest.fixture(scope="module")
def hist(tmp_path_factory, workdir):
    d = tmp_path_factory.mktemp("progress")
    m = make_history(d / "repo", 4, seed=21, regression_at=4, regression_pct=3.0, layout_only=[1, 2, 3])
    repo = Path(m["repo"])
    for i in range(3):
        (repo / "README.md").write_text(f"minikernel, edition {i}\n")
        git(repo, "add", "README.md")
        git(repo, "commit", "-qm", f"readme {i}")
    m["bad"] = git(repo, "rev-parse", "HEAD")
    m["range"] = git(repo, "rev-list", "--reverse", f"{m['good']}..{m['bad']}").split()
    # the minikernel profile, README.md unread by its build, the cachegrind target's costs stated (a
    # layout 3 s, a run 1 s: the time left is exact arithmetic)
    text = MINI_TOML.read_text().replace('repo = "../.."', f'repo = "{ROOT}"')
    text = text.replace("timeout = 600\n", 'timeout = 600\nunread_files = ["README.md"]\n', 1)
    text = text.replace("miss_weight = 20\n\n[targets.qemu-icache]",
                        "miss_weight = 20\nlayout_cost = 3\nrun_cost = 1\n\n[targets.qemu-icache]")
    assert text.count("unread_files") == 1 and text.count("layout_cost = 3") == 1
    (d / "profiles" / "minikernel").mkdir(parents=True)
    (d / "profiles" / "minikernel" / "kernel.toml").write_text(text)
    # a work folder of its own: objects compiled and images linked by earlier tests of the session
    # (the same minikernel sources) would be reused, and the compiles and links counted here not made
    m["env"] = {"LAYOUTBENCH_PROFILES": str(d / "profiles"), "LAYOUTBENCH_QUIRKS": "/nonexistent/quirks.toml",
                "LAYOUTBENCH_DIR": str(d / "work")}
    return m


def said(stderr: str) -> list[str]:
    return [ln[2:] for ln in stderr.splitlines() if ln.startswith("· ")]


@pytest.fixture(scope="module")
def runs(hist, tmp_path_factory):
    """`bisect start`, `bisect run --plan` twice, the bisection itself (with its naive shadow), then
    a mark by hand and the same command again: each command's stderr and the verdict."""
    store = str(tmp_path_factory.mktemp("store") / "r.sqlite")
    span = f"{hist['good']}..{hist['bad']}"
    where = ["--repo", hist["repo"], "--target", "cachegrind", "--args", ARGS, "--store", store]
    out = {"store": store}
    lb("bisect", "start", "minikernel", hist["bad"], hist["good"], *where, env=hist["env"])
    for name in ("plan", "plan again"):
        out[name] = lb("bisect", "run", "minikernel", span, *where, "--plan", env=hist["env"]).stderr
    p = lb("bisect", "run", "minikernel", span, *where, "--json", env=hist["env"])
    out["run"], out["v"] = p.stderr, json.loads(p.stdout)
    lb("bisect", "good", hist["range"][0], "--kernel", "minikernel", "--repo", hist["repo"], "--store", store,
       env=hist["env"])
    out["resumed"] = lb("bisect", "run", "minikernel", span, *where, "--no-shadow", env=hist["env"]).stderr
    return out


def test_the_first_line_says_what_the_bisection_starts_or_resumes_from(hist, runs):
    """A log with no mark is never "resuming": a bisection started by `bisect start` plans, a second
    --plan plans again from what the first measured, the run after them starts from its plan, and a
    bisection with entries in its log says how many it resumes from."""
    span = f"minikernel {hist['good'][:12]}..{hist['bad'][:12]}"
    assert said(runs["plan"])[0] == (f"planning the bisection of {span} (its log holds no mark yet; runs of its "
                                     "commits already in the store are not measured again)"), runs["plan"]
    assert said(runs["plan again"])[0] == (f"planning the bisection of {span} again (what --plan measured is in the "
                                           "store and is not measured again)")
    assert said(runs["run"])[0] == (f"starting the bisection of {span} from its plan (what --plan measured is in the "
                                    "store and is not measured again)")
    first = said(runs["resumed"])[0]
    got = re.fullmatch(rf"resuming the bisection of {span} \((\d+) log entries: (\d+) mark\(s\) and the endpoints' "
                       r"test\)", first)
    assert got is not None, first
    n_marks = int(got[2])
    assert int(got[1]) == n_marks + 1 and n_marks >= 2  # the run's marks, the one by hand, the endpoints' entry
    assert not any("resuming" in m for r in ("plan", "plan again", "run") for m in said(runs[r]))


def test_the_naive_bisection_says_it_starts_and_each_probe_with_the_runs_spent(hist, runs):
    lines = said(runs["run"])
    sl = runs["v"]["single_layout"]
    i = next(i for i, m in enumerate(lines) if m.startswith("naive single-layout bisection: the default link"))
    planned = 2 + math.ceil(math.log2(len(hist["range"])))
    assert lines[i] == (f"naive single-layout bisection: the default link, one run a probe, over {len(hist['range'])} "
                        f"commit(s); about {planned} runs (GOOD and BAD, then one a halving)")
    probes = [m for m in lines[i + 1:] if m.startswith("naive probe ")]
    assert len(probes) == sl["runs"] >= 3
    for n, m in enumerate(probes):
        got = re.match(rf"naive probe {n + 1}: ([0-9a-f]{{12}}) \({n}/{planned} runs spent/planned\); about ", m)
        assert got is not None, m
        assert got[1] in [c[:12] for c in [hist["good"], *hist["range"]]]
    assert probes[0].startswith(f"naive probe 1: {hist['good'][:12]} ") and \
        probes[1].startswith(f"naive probe 2: {hist['bad'][:12]} ")
    assert lines[-1] == f"naive single-layout bisection: blames {sl['culprit'][:12]} ({sl['runs']} runs spent)"
    assert not any(m.startswith("naive ") for m in lines[:i])  # nothing naive before it starts


def _left(m: str) -> dict | None:
    """The time left of a progress line: its text, runs, links, linked images of new ones (None
    before any) and the naive bisection's runs in it; one run or link is said without a plural."""
    got = re.search(r"about (\S+) left: (\d+) (runs?) at 1 s(?: two at a time)? (?:\+|beside) (\d+) (links?) at 3 s \((?:(\d+) of the (\d+) new "
                    r"images this command measured were linked|this command has measured no new image yet)\)"
                    r"(?:; the naive bisection's (\d+) (runs?) included)? \(estimated; compiles not counted\)", m)
    if got is None:
        return None
    for n, word in ((got[2], got[3]), (got[4], got[5]), (got[8], got[9])):
        assert n is None or (int(n) == 1) == (word in ("run", "link")), m
    return {"text": got[1], "runs": int(got[2]), "links": int(got[4]), "made": got[6] and int(got[6]),
            "new": got[7] and int(got[7]), "naive": int(got[8] or 0), "beside": f" s beside {got[4]} link" in m,
            "two": " s two at a time " in m}


def test_the_time_left_costs_a_link_only_for_the_images_still_to_link(hist, runs):
    """Every time left is the runs still planned at 1 s and the links at 3 s (summed, or the longer of
    the two where the next image links beside a run; with no link to make, the runs two at a time
    where two cores allow) for the share of new
    images this command had to link so far (the README commits' images were linked for their
    parent: the share falls below one); the runs spent never decrease; the naive bisection's runs
    are counted until it has spent them."""
    lines = [m for m in said(runs["run"]) if "left: " in m]
    assert len(lines) >= 6
    spent, shares = [], []
    for m in lines:
        got = _left(m)
        assert got is not None, m
        runs_left, links, made, new, naive = (got[k] for k in ("runs", "links", "made", "new", "naive"))
        images = naive + math.ceil((runs_left - naive) / max(1, runs["v"]["settings"]["runs"]))
        assert links == (round(images * made / new) if new else images), m
        # cachegrind links the next image beside a run where two cores allow: the longer of the two, else both
        assert got["beside"] == (links > 0 and (os.cpu_count() or 1) >= 2), m
        # with no link to make, two runs at once where two cores allow (a count target's runs side by side)
        assert got["two"] == (links == 0 and (os.cpu_count() or 1) >= 2), m
        assert got["text"] == costs.duration_text((max if got["beside"] else sum)(
            (runs_left / (2 if got["two"] else 1), 3 * links))), m
        if new:
            shares.append(made / new)
        if (s := re.search(r"(\d+)/(\d+) runs spent/planned", m)) and not m.startswith("naive"):
            spent.append(int(s[1]))
            assert runs_left == int(s[2]) - int(s[1]) + naive, m
    assert spent == sorted(spent) and spent, spent
    # the first new images (a probe compiled now) were all linked; a reused neighbour's images cost no link
    assert shares[0] == 1.0 and min(shares) < 1.0, shares
    assert any(_left(m)["naive"] > 0 for m in lines if not m.startswith("naive"))


SYNC = re.compile(r"compiling minikernel at ([0-9a-f]{12}) for (the endpoints|probe (\d+)|the naive probe \d+) \(this "
                  r"command's compile (\d+); the objects of (\d+) commit\(s\) ready before it; (.*)\)")
AHEAD = re.compile(r"compiling minikernel at ([0-9a-f]{12}) for (the endpoints|probe 1), ahead: beside the runs of the "
                   r"commits before it, from ([0-9a-f]{12})'s on \(a count target: a compile beside a run changes none "
                   r"of its counts\)")


def test_a_compile_says_what_it_is_for_and_the_builds_before_it(hist, runs):
    """The line that starts a compile names the phase it is for (the endpoints, probe N after that
    probe's own line) and this command's compile count.  On this count target with a core for the
    runs and one for a compile, BAD compiles ahead, beside GOOD's runs, and the first probe beside the
    endpoints' runs (each line says so); every other commit when its probe needs it."""
    ahead = (os.cpu_count() or 1) >= 2
    plan = [m for m in said(runs["plan"]) if m.startswith("compiling ")]
    g, b = hist["good"][:12], hist["bad"][:12]
    first = SYNC.fullmatch(plan[0])
    assert first is not None and (first[1], first[2], first[4], first[5]) == (g, "the endpoints", "1", "0"), plan
    if ahead:  # the plan measures the endpoints only: BAD is queued, the first probe is not
        assert first[6] == "1 more queued to compile ahead, beside its runs", plan
        assert len(plan) == 2 and AHEAD.fullmatch(plan[1]).group(1, 2, 3) == (b, "the endpoints", g), plan
    else:
        assert first[6] == "none running beside it or queued: a commit is compiled when its probe needs it"
        assert len(plan) == 2 and SYNC.fullmatch(plan[1]).group(1, 2, 3, 4) == (b, "the endpoints", None, "2"), plan
    n, probes = 0, []
    run = [m for m in said(runs["run"]) if m.startswith(("compiling ", "probe "))]
    for m in run:
        if m.startswith("probe "):
            n += 1
            probes.append(m.split()[1])
        elif (got := SYNC.fullmatch(m)) is not None:
            if got[3]:  # a probe's compile comes after its probe's line, and counts this command's compiles
                assert int(got[3]) == n and got[1] == probes[-1] and (n > 1 or not ahead), (m, n, probes)
            assert got[6] == ("none running beside it or queued: BAD and the first probe compile ahead, the other "
                              "commits when their probe needs them" if ahead else
                              "none running beside it or queued: a commit is compiled when its probe needs it"), m
        else:
            got = AHEAD.fullmatch(m)
            assert ahead and got is not None and got[2] == "probe 1" and got[3] == g and n == 0, (m, run)
    one = hist["range"][len(hist["range"]) // 2 - 1]  # the commit nearest the middle of GOOD..BAD, the earlier
    assert probes[0] == one[:12], (probes, one)
    assert any(m.startswith(f"compiling minikernel at {one[:12]} for probe 1") for m in run) and \
        (any(AHEAD.fullmatch(m) for m in run) is ahead), run


def test_a_compile_ahead_runs_beside_the_runs_before_it(hist, runs):
    """What the lines say, in the work folder's records: with two cores, BAD's compile (the plan's)
    began before GOOD's last run ended (with one, after it); the first probe's compile followed BAD's;
    each commit compiled once."""
    import sqlite3

    records = [r for f in Path(hist["env"]["LAYOUTBENCH_DIR"], "objects").rglob("build.json")
               if not (r := json.loads(f.read_text())).get("reused_from")]  # (a reuse copies its neighbour's record)
    started = {r["commit"]: r["started"] for r in records}
    with sqlite3.connect(runs["store"]) as db:
        ends = dict(db.execute("SELECT builds.commit_sha, max(runs.started + runs.duration) FROM runs JOIN builds ON "
                               "builds.id = runs.build_id WHERE builds.layout != 'default' GROUP BY builds.commit_sha"))
    one = hist["range"][len(hist["range"]) // 2 - 1]
    assert (started[hist["bad"]] < ends[hist["good"]]) is ((os.cpu_count() or 1) >= 2), (started, ends)
    assert started[hist["good"]] < started[hist["bad"]] < started[one]
    assert len(started) == len(records) == 3  # one compile a commit: GOOD, BAD, the first probe


def test_every_progress_line_is_also_in_the_progress_log(hist, runs):
    """The progress log (named on stderr) holds each command's lines in order, after a header line
    per command, each with its UTC time."""
    paths = {m.split(": ", 1)[1] for r in ("plan", "plan again", "run", "resumed") for m in said(runs[r])
             if m.startswith("progress log: ")}
    assert len(paths) == 1, paths
    text = Path(paths.pop()).read_text().splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ "
    assert all(re.match(stamp, ln) for ln in text), text[:3]
    body = [re.sub("^" + stamp, "", ln) for ln in text]
    heads = [i for i, ln in enumerate(body) if ln.startswith("-- layoutbench bisect run minikernel ")]
    assert len(heads) == 4 and heads[0] == 0
    for k, r in enumerate(("plan", "plan again", "run", "resumed")):
        end = heads[k + 1] if k + 1 < len(heads) else len(body)
        assert body[heads[k] + 1:end] == said(runs[r]), r


def test_plan_says_when_the_same_seeds_agree_and_paired_does_not_need_saying(hist, tmp_path):
    """From the 3% step to BAD only README.md changes: every seed links the same objects on both ends,
    so the seed-paired standard error (0) is far under the pooled one, and --plan says --paired would
    need fewer layouts; with --paired it has nothing to say."""
    store = str(tmp_path / "p.sqlite")
    span = f"{hist['range'][3]}..{hist['bad']}"
    where = ["--repo", hist["repo"], "--target", "cachegrind", "--args", ARGS, "--store", store]
    plain = lb("bisect", "run", "minikernel", span, *where, "--plan", env=hist["env"]).stdout
    note = [ln for ln in plain.splitlines() if ln.startswith("note: the same seeds agree")]
    assert len(note) == 1 and "--paired reads that" in note[0], plain
    assert re.search(r"seed-paired se 0% against the pooled [0-9.]+%", note[0]), note
    paired = lb("bisect", "run", "minikernel", span, *where, "--plan", "--paired", env=hist["env"]).stdout
    assert "--paired reads that" not in paired, paired
    # the paired plan's forecast reads the seeds' agreement (decide.seed_corr: 0.999 at the most) and
    # expects fewer runs than the pooled plan's, which cannot use it
    assert "the same seeds sharing 99.9% of it across the two commits" in paired, paired
    assert "sharing" not in plain, plain

    def likely(text: str) -> int:
        return int(re.search(r"about (\d+) runs \(", text).group(1))

    assert likely(paired) < likely(plain), (plain, paired)


def test_a_profile_that_says_its_seeds_keep_their_layout_pairs_by_default(hist, tmp_path):
    """A profile with `[bisect] paired = true`: the plain command plans a paired bisection (the plan
    reads the seeds' agreement, the settings say paired) and --no-paired turns it off, as if the key
    were absent; the profile without the key does not pair."""
    prof = tmp_path / "profiles" / "minikernel"
    prof.mkdir(parents=True)
    text = (Path(hist["env"]["LAYOUTBENCH_PROFILES"]) / "minikernel" / "kernel.toml").read_text()
    (prof / "kernel.toml").write_text(text + "\n[bisect]\npaired = true\n")
    span = f"{hist['range'][3]}..{hist['bad']}"

    def plan(*extra, profiles=str(tmp_path / "profiles")) -> dict:
        store = str(tmp_path / f"s{len(list(tmp_path.glob('s*.sqlite')))}.sqlite")
        out = lb("bisect", "run", "minikernel", span, "--repo", hist["repo"], "--target", "cachegrind", "--args",
                 ARGS, "--store", store, "--plan", "--json", *extra,
                 env={**hist["env"], "LAYOUTBENCH_PROFILES": profiles}).stdout
        return json.loads(out)

    on, off, plain = plan(), plan("--no-paired"), plan(profiles=hist["env"]["LAYOUTBENCH_PROFILES"])
    assert on["settings"]["paired"] is True and on["plan"]["seed_corr"] == 0.999, on["settings"]
    assert off["settings"]["paired"] is False and off["plan"]["seed_corr"] == 0.0, off["settings"]
    assert plain["settings"]["paired"] is False and plain["plan"]["seed_corr"] == 0.0
    assert on["plan"]["runs"] < off["plan"]["runs"] == plain["plan"]["runs"]
