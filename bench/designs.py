"""Designs measured beside the engine's and not adopted: what each would cost and buy.

    nice -n 10 python3 -m bench.designs [--histories 300] [--only confirmation,bisection] [--paths 20000] [--json]

Each alternative is put in place of one function of ``layoutbench.decide`` while it is measured and
the original is put back afterwards; everything else is the engine's code, run against
``bench/simulate.py``'s synthetic histories (16 commits, sigma_L 1%, sigma_R 0.3%, one run a layout,
~40% layout-only commits), history i drawn from seed ``--seed0`` + i for every design.

1. **confirmation** -- the first confirmation alone, at its level (``CONFIRM_FIRST`` x alpha, one-sided),
   a layout's value of variance sigma_L^2 + sigma_R^2, for true steps of f x the minimum effect: the
   chance it shows the step beyond the minimum effect and its mean runs, on ``--paths`` simulated paths.
   The group-sequential designs are simulated by ``decide.confirm_forecast`` (the engine's boundary and
   futility stop); they differ only in their looks: as shipped (``decide.confirm_looks``: from
   ``Plan.layouts``, x1.5 to the cap, x1.25 on to 4x the cap), and a first look at F layouts a side
   with x1.15 beyond the cap.  Beside them Wald's SPRT of "the step is the minimum effect" against
   "twice it", asked at every layout pair, its lower boundary at beta = the level, stopped at the
   shipped design's last look: the best a test can do at the step it was built for.
2. **bisection** -- whole bisections (``side_frontier.one``: runs by phase) of the rows ``--rows`` names
   (default: single steps of 1 and 2 sigma_L and of 1.2x the minimum effect), under the engine as
   shipped and the designs ``--designs`` names (default: all):
   *first look from the estimate*: the confirmation's first look at FIRST_AT layouts a side (x1.15
   beyond the cap) unless the search's estimate of the step (``decide.search_estimate``, measured
   before any fresh layout, so the test keeps its level) is at least 3x the minimum effect;
   *posterior search*: in place of the probes (``rounds._rounds``, one prober), a Bayesian
   change-point search -- a single step, a uniform prior over where, GOOD's and BAD's levels unknown
   (flat priors, integrated out), every layout of the segment as evidence -- that measures one more
   layout at the commit whose side is the most uncertain (and one at GOOD or BAD while the far side
   of that commit holds fewer layouts than it) until one place holds all but POSTERIOR_EPS of the
   mass.  ``search`` is every run neither the endpoints, the confirmations nor the
   side tests asked for (the probes, or the posterior search).  *both*: the two together.  *oracle
   search*: not a design but a bound: the search replaced by the history's truth at no run (the
   endpoints, the confirmation and the side tests as shipped; a confirmation unbounded by the runs
   spent before it, which no search spent), what the rest of a bisection costs.
   *loose probes + final pair again*: the engine's binary search with each probe at LOOSE x its level
   (at most LOOSE_TOP), then the two marked commits that end the window judged again at the planned
   probes' level as shipped (with one step, a wrong window holds its misjudged commit in that pair); a
   changed mark moves the window and the search goes on.  *endpoints as a screen*: the range's
   endpoints at level SCREEN (the side tests as shipped; the confirmation alone bounds a false name).
   *first look + loose + screen*: the three together.

A default run takes about 6 minutes of CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import time

import numpy as np

from bench import side_frontier as F
from bench import simulate as S
from layoutbench import decide
from layoutbench.decide import plan as P
from layoutbench.decide import rounds as RD
from layoutbench.decide import sequential as Q
from layoutbench.decide.model import ztest
from layoutbench.decide.outcome import marked_window
from layoutbench.decide.tracked import measure_at, pool_of

STEPS = (0.0, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0)  #: true steps of the confirmation table, x the minimum effect
FIRSTS = (12, 16, 24)  #: first looks of the confirmation table's designs
GROWTH_FAR = 1.15  #: their looks' growth beyond the cap
FIRST_AT = 12  #: the first look from the estimate: this many layouts a side ...
BIG = 3.0  #: ... unless the search's estimate is at least BIG x the minimum effect
POSTERIOR_EPS = 0.02  #: the posterior search stops once one place holds 1 - this of the mass
LOOSE = 4.0  #: loose probes: each at this many times its level as shipped ...
LOOSE_TOP = 0.2  #: ... at most this
SCREEN = 0.2  #: the endpoints as a screen: their level
ROWS = (1, 2, 6)  #: simulate.min_effect_rows: 1σL, 2σL, 1.2x the minimum effect


# -- 1. the confirmation alone ------------------------------------------------------------------------

def first_looks(looks, plan: decide.Plan, first: int, *args) -> tuple:
    """``looks`` (``decide.confirm_looks``, the engine's) of a design that looks first at ``first`` layouts
    a side and grows x GROWTH_FAR a look beyond the cap: the engine's design with ``Plan.layouts`` =
    ``first`` and CONFIRM_GROWTH = GROWTH_FAR (its cap, reach and share bound the engine's for that plan:
    the shipped ones at a quiet benchmark; at a noisy one the noise cap reads looks from ``first``)."""
    with patched(P, CONFIRM_GROWTH=GROWTH_FAR):
        return looks(dataclasses.replace(plan, layouts=first), *args)


def sprt(step: float, s2: float, m: float, level: float, last: int, paths: int, seed: int = 20261205) -> dict:
    """Wald's SPRT of "the step is m" against "it is 2m" on pairs of fresh layouts (a pair's difference
    N(step, 2 s2)), asked after every pair; upper boundary log(1/level) (its level whatever the stop),
    lower log(level); not shown at ``last`` pairs.  The chance it shows the step and its mean runs."""
    rng = np.random.default_rng(seed)
    d1 = 2.0 * m
    llr = np.cumsum((d1 - m) / (2.0 * s2) * (rng.standard_normal((paths, last)) * math.sqrt(2.0 * s2) + step
                                             - (m + d1) / 2.0), axis=1)
    up, low = llr >= math.log(1.0 / level), llr <= math.log(level)
    stop = up | low
    stop[:, -1] = True
    at = stop.argmax(axis=1)
    return {"p_beyond": float(up[np.arange(paths), at].mean()), "mean_runs": float((at + 1).mean()) * 2}


def confirmation_table(paths: int) -> dict:
    plan = decide.Plan()
    sc = S.min_effect_rows()[1]
    s2 = sc.sigma_l ** 2 + sc.sigma_r ** 2 / sc.runs
    m = math.log1p(plan.min_effect)
    level = decide.confirm_level(plan.alpha, 1)
    shipped, _ = decide.confirm_looks(plan, s2, level, 1)
    designs = {"as shipped": shipped} | {f"first look {f}, x{GROWTH_FAR:g} beyond":
                                         first_looks(decide.confirm_looks, plan, f, s2, level, 1)[0] for f in FIRSTS}
    out = {"level": level, "s": math.sqrt(s2), "rows": []}
    for name, ns in designs.items():
        cells = [decide.confirm_forecast(f * m, s2, ns, level, m, paths=paths) for f in STEPS]
        out["rows"].append({"design": name, "looks": list(ns), "boundary": decide.gs_boundary(ns, level, True),
                            "cells": [{"p": c["p_beyond"], "runs": c["mean_runs"]} for c in cells]})
    cells = [sprt(f * m, s2, m, level, shipped[-1], paths) for f in STEPS]
    out["rows"].append({"design": "Wald's SPRT, m against 2m", "looks": None, "boundary": math.log(1.0 / level),
                        "cells": [{"p": c["p_beyond"], "runs": c["mean_runs"]} for c in cells]})
    return out


# -- 2. whole bisections ------------------------------------------------------------------------------

@contextlib.contextmanager
def patched(module, **fns):
    """``module``'s attributes ``fns`` replaced while inside, put back afterwards."""
    saved = {k: getattr(module, k) for k in fns}
    for k, v in fns.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(module, k, v)


@contextlib.contextmanager
def first_look_from_estimate():
    """The confirmation's first look at FIRST_AT layouts a side (x GROWTH_FAR beyond the cap) unless the
    search's estimate of its step is at least BIG x the minimum effect (then the shipped looks)."""
    confirm, looks, est = Q.confirm, Q.confirm_looks, {}

    def wrapped_confirm(prober, last_good, culprit, plan, used, level=None, sign=0, cap=None):
        est["x"] = Q.search_estimate(pool_of(prober)[1], last_good, culprit, sign)
        return confirm(prober, last_good, culprit, plan, used, level=level, sign=sign, cap=cap)

    def confirm_looks(plan, s2, level, sign=0, cap=None, spent=None):
        x = est.get("x", math.nan)
        if x < BIG * math.log1p(plan.min_effect) and plan.layouts < FIRST_AT:  # (nan, no estimate: not below)
            return first_looks(looks, plan, FIRST_AT, s2, level, sign, cap, spent)
        return looks(plan, s2, level, sign, cap, spent)

    with patched(Q, confirm=wrapped_confirm, confirm_looks=confirm_looks), patched(RD, confirm_looks=confirm_looks):
        yield


def boundary_posterior(pool, commits: list, s2: float) -> np.ndarray:
    """p[i - 1] = P(commits[i] is the first after the step | every layout of ``commits``), i = 1..n-1: one
    step, a uniform prior over where, the levels before and after it unknown (flat priors, integrated out:
    each side contributes -SS/(2 s2) - log(n)/2), a layout's value N(level, s2)."""
    n = len(commits)
    cnt, sm, sq = np.zeros(n), np.zeros(n), np.zeros(n)
    for j, c in enumerate(commits):
        y = pool.y.get(c)
        if y is not None and y.size:
            cnt[j], sm[j], sq[j] = y.size, y.sum(), float((y * y).sum())
    cc, cs, cq = np.cumsum(cnt), np.cumsum(sm), np.cumsum(sq)
    ll = np.full(n - 1, -np.inf)
    for i in range(1, n):
        ng, nb = cc[i - 1], cc[-1] - cc[i - 1]
        if ng > 0 and nb > 0:
            sg, sb = cs[i - 1], cs[-1] - cs[i - 1]
            ss = (cq[i - 1] - sg * sg / ng) + (cq[-1] - cq[i - 1] - sb * sb / nb)
            ll[i - 1] = -ss / (2.0 * s2) - 0.5 * math.log(ng) - 0.5 * math.log(nb)
    p = np.exp(ll - ll.max())
    return p / p.sum()


def posterior_rounds(probers, commits, plan, journal, segment, say, ctx, pool_ex):
    """In place of ``rounds._rounds`` (one prober, no marks yet; else the original): the posterior
    search, then a mark for every commit it measured (before the most likely place: good, from it: bad)."""
    if len(probers) > 1 or journal.marks(segment):
        return ORIGINAL_ROUNDS(probers, commits, plan, journal, segment, say, ctx, pool_ex)
    prober = probers[0]
    tr, pool = pool_of(prober)
    n, r = len(commits), plan.runs
    good, bad = commits[0], commits[-1]
    cap = min(plan.max_layouts, 2 * decide.noise_cap(plan, pool.var()[0], P.top_looks(plan), plan.alpha))
    measured, skipped = set(), set()
    while True:
        p = boundary_posterior(pool, commits, pool.var()[0])
        if p.max() >= 1.0 - POSTERIOR_EPS:
            break
        cdf = np.cumsum(p)  # cdf[j - 1] = P(commits[j] is after the step)
        open_ = [j for j in range(1, n - 1) if commits[j] not in skipped]
        if not open_:
            break
        j = max(open_, key=lambda i: (min(cdf[i - 1], 1.0 - cdf[i - 1]), -i))
        c = commits[j]
        if pool.n(c) + 1 > cap:
            break
        try:
            measure_at(tr, c, max(P.MIN_LAYOUTS, pool.n(c) + 1), r)
        except P.Skip as e:
            skipped.add(c)
            journal.record(segment, c, Q.Judgement("skip", note=str(e)), getattr(prober, "name", None))
            continue
        measured.add(c)
        after = cdf[j - 1] < 0.5  # c likely before the step: the far side is after it
        far_side, end = (commits[j + 1:], bad) if after else (commits[:j], good)
        if sum(pool.n(x) for x in far_side) < pool.n(c) and pool.n(end) < cap:
            measure_at(tr, end, pool.n(end) + 1, r)
    p = boundary_posterior(pool, commits, pool.var()[0])
    at = int(np.argmax(p)) + 1
    prober.ledger.probes += len(measured)
    for j, c in enumerate(commits):
        if c in measured:
            tg, tb = ztest(pool, good, c), ztest(pool, c, bad)
            journal.record(segment, c, Q.Judgement("bad" if j >= at else "good", pool.n(c), r, tg.p_value(),
                                                   tb.p_value(), level=POSTERIOR_EPS), getattr(prober, "name", None))
    return len(measured), 1


ORIGINAL_ROUNDS = RD._rounds


@contextlib.contextmanager
def posterior_search():
    with patched(RD, _rounds=posterior_rounds):
        yield


def oracle_rounds(probers, commits, plan, journal, segment, say, ctx, pool_ex):
    """In place of ``rounds._rounds``: no run spent, the history's first true step in the segment marked
    (its last good commit good, it bad; ``bench/simulate.py``'s prober knows where its steps are), else the
    segment's first commit marked bad.  Not a design: what the rest of the bisection costs with a search
    that is free and never wrong."""
    sim = probers[0].prober
    at = next((i for i in (commits.index(sim.names[j]) for j in sim.steps if sim.names[j] in commits) if i > 0), 1)
    for i in (at - 1, at):
        if 0 < i < len(commits) - 1:
            journal.record(segment, commits[i], Q.Judgement("bad" if i == at else "good"),
                           getattr(probers[0], "name", None))
    return 0, 0


@contextlib.contextmanager
def oracle_search():
    """The oracle's search, and no share bound on a confirmation (the runs it bounds by, the search's, are
    not spent: the confirmation looks as far as it would after a search that cost them)."""
    with patched(RD, _rounds=oracle_rounds), patched(P, share_layouts=lambda plan, spent: None):
        yield


def recheck_rounds(probers, commits, plan, journal, segment, say, ctx, pool_ex):
    """In place of ``rounds._rounds`` (one prober, no marks yet; else the original): the engine's binary
    search with every probe at LOOSE x its level (at most LOOSE_TOP), then each of the two marked commits
    that end the window (GOOD and BAD aside) judged again at the planned probes' level (``judge_probe`` on
    the same layouts and as many more as it needs).  With one step, a window that ends on the wrong pair
    holds a misjudged commit in that pair, so the search's answer rests on two judgements at the shipped
    level; a judgement that changes a mark moves the window and the search goes on."""
    if len(probers) > 1 or journal.marks(segment):
        return ORIGINAL_ROUNDS(probers, commits, plan, journal, segment, say, ctx, pool_ex)
    prober = probers[0]
    ledger, name = prober.ledger, getattr(prober, "name", None)
    good, bad = commits[0], commits[-1]
    planned = ctx.planned if ctx is not None else P.planned_probes(len(commits), 1)
    marks, judged_again, probes = {}, set(), 0
    while True:
        lo, hi, cand = marked_window(commits, marks)
        if ctx is not None:
            ctx.window = (commits, lo, hi)
        if cand:
            i = P.split(lo, hi, cand, 1)[0]
            ledger.probes += 1
            level = min(LOOSE_TOP, LOOSE * P.probe_level(plan.alpha, ledger.probes, planned))
        else:
            again = [i for i in (hi, lo) if 0 < i < len(commits) - 1 and commits[i] not in judged_again]
            if not again:
                return probes, probes
            i = again[0]
            judged_again.add(commits[i])
            level = 0.75 * plan.alpha / planned  # the planned probes' level as shipped
        j = Q.judge_probe(prober, commits[i], good, bad, plan, level)
        probes += 1
        journal.record(segment, commits[i], j, name)
        if j.verdict == "uncertain":
            return probes, probes
        marks = journal.marks(segment)


@contextlib.contextmanager
def loose_probes():
    with patched(RD, _rounds=recheck_rounds):
        yield


@contextlib.contextmanager
def endpoints_as_a_screen():
    """The range's endpoints tested at SCREEN (the sub-ranges' side tests at their levels as shipped): the
    false-name bound rests on the confirmation alone, at its level as shipped."""
    endpoints = Q.endpoints

    def screened(prober, good, bad, plan, level=None, cap=None, **kw):
        return endpoints(prober, good, bad, plan, level=SCREEN if level is None else level, cap=cap, **kw)

    with patched(Q, endpoints=screened):
        yield


@contextlib.contextmanager
def all_three():
    with first_look_from_estimate(), loose_probes(), endpoints_as_a_screen():
        yield


@contextlib.contextmanager
def both():
    with first_look_from_estimate(), posterior_search():
        yield


DESIGNS = {"as shipped": contextlib.nullcontext, "first look from the estimate": first_look_from_estimate,
           "posterior search": posterior_search, "both": both, "oracle search": oracle_search,
           "loose probes + final pair again": loose_probes, "endpoints as a screen": endpoints_as_a_screen,
           "first look + loose + screen": all_three}


def scenarios(rows: str | None) -> list[S.Scenario]:
    """The rows ``rows`` names (indices of simulate.min_effect_rows, or a two-step row as A+B: 2+2, 1+3,
    3+1), default ROWS; ValueError on a name that is neither."""
    twos = {f"{a:g}+{b:g}": sc for sc, (a, b) in zip(S.twos(), ((2, 2), (1, 3), (3, 1)))}
    singles = S.min_effect_rows()
    out = []
    for x in (rows.split(",") if rows else [str(i) for i in ROWS]):
        x = x.strip()
        if x in twos:
            out.append(twos[x])
        elif x.isdigit() and int(x) < len(singles):
            out.append(singles[int(x)])
        else:
            raise ValueError(f"{x!r} is neither a row of the minimum-effect table (0..{len(singles) - 1}) "
                             f"nor a two-step row ({', '.join(twos)})")
    return out


def bisection_table(n: int, s0: int, rows: list[S.Scenario] | None = None,
                    designs: list[str] | None = None) -> list[dict]:
    out = []
    for sc in rows or scenarios(None):
        for name in designs or list(DESIGNS):
            ctx = DESIGNS[name]
            with ctx():
                rs = [F.one(sc, decide.Plan(), s0 + i) for i in range(n)]
            # right: the step named (a two-step row: both steps); named: a commit named (a row without a
            # step at or above the minimum effect: every name is a false one)
            right = sum(r["both"] if sc.kind == "two" else r["right"] for r in rs)
            row = {"row": sc.name, "design": name, "right": right / n, "wilson": list(S.wilson(right / n, n)),
                   "named": float(np.mean([r["blame"] or r["wrong"] for r in rs])), "kind": sc.kind}
            row |= {k: float(np.mean([r[k] for r in rs])) for k in ("runs", "endpoints", "confirmation", "sides")}
            rest = row["runs"] - row["endpoints"] - row["confirmation"] - row["sides"]
            row["search"] = round(rest, 9) + 0.0  # (a free search prints 0.0, not -0.0)
            row["confirmations"] = float(np.mean([len(r["confirm_k"]) for r in rs]))
            out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=300)
    ap.add_argument("--seed0", type=int, default=0, help="history i is drawn from seed SEED0 + i (default 0)")
    ap.add_argument("--paths", type=int, default=20000, help="--only confirmation: paths a cell (default 20000)")
    ap.add_argument("--only", help="sections to print: confirmation,bisection (default: both)")
    ap.add_argument("--rows", help="--only bisection: rows of the minimum-effect table (simulate.py --min-effect-rows: "
                    "0 null .. 7 1.5x) and two-step rows (2+2, 1+3, 3+1); default " + ",".join(map(str, ROWS)))
    ap.add_argument("--designs", help="--only bisection: designs, comma-separated (default: all: "
                    + ", ".join(DESIGNS) + ")")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the tables")
    a = ap.parse_args()
    sections = ("confirmation", "bisection")
    only = set(a.only.split(",")) if a.only else set(sections)
    if only - set(sections):
        ap.error(f"--only: unknown section(s) {', '.join(sorted(only - set(sections)))} ({', '.join(sections)})")
    try:
        rows = scenarios(a.rows)
    except ValueError as e:
        ap.error(f"--rows: {e}")
    designs = [d.strip() for d in a.designs.split(",")] if a.designs else list(DESIGNS)
    if set(designs) - set(DESIGNS):
        ap.error(f"--designs: unknown {', '.join(sorted(set(designs) - set(DESIGNS)))} ({', '.join(DESIGNS)})")
    t0 = time.process_time()
    res: dict = {"date": time.strftime("%Y-%m-%d"), "histories": a.histories, "seed0": a.seed0}
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, flush=True))
    if "confirmation" in only:
        c = res["confirmation"] = confirmation_table(a.paths)
        say(f"1. the first confirmation alone, level {c['level']:.3g} one-sided, a layout's sd {100 * c['s']:.3g}%, "
            f"{a.paths} paths a cell: shown beyond the minimum effect / mean runs, at a true step of f x it")
        say(f"{'design':34s} {'boundary':>8s} | " + " | ".join(f"{f:>9g}x" for f in STEPS))
        for row in c["rows"]:
            say(f"{row['design']:34s} {row['boundary']:8.3f} | "
                + " | ".join(f"{x['p']:.3f} {x['runs']:4.0f}" for x in row["cells"]))
        say("boundary: the z boundary of the group-sequential designs (Pocock, every look); the SPRT's log(1/level)")
    if "bisection" in only:
        b = res["bisection"] = bisection_table(a.histories, a.seed0, rows, designs)
        say(f"\n2. whole bisections, {a.histories} histories a row (seeds {a.seed0}..{a.seed0 + a.histories - 1}, "
            "the same for every design): mean runs by phase; right: the step named (two steps: both) [Wilson 95%], "
            "a row without a step of the minimum effect: a commit named (a false name)")
        say(f"{'row':22s} {'design':30s} | {'endpoints':>9s} {'search':>7s} {'confirm':>7s} {'sides':>6s} | "
            f"{'total':>6s} | {'right / named':>21s} | {'confirmations':>13s}")
        for x in b:
            rate = x["named"] if x["kind"] in ("null", "drift") else x["right"]
            lo, hi = S.wilson(rate, a.histories)
            say(f"{x['row']:22s} {x['design']:30s} | {x['endpoints']:9.1f} {x['search']:7.1f} {x['confirmation']:7.1f} "
                f"{x['sides']:6.1f} | {x['runs']:6.1f} | {100 * rate:5.1f}% [{100 * lo:4.1f}-{100 * hi:4.1f}%] | "
                f"{x['confirmations']:13.2f}")
        say("search: the probes (as shipped) or the posterior search; confirmations: per bisection")
    res["cpu_s"] = round(time.process_time() - t0)
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        say(f"\n{res['cpu_s']} s of CPU")


if __name__ == "__main__":
    main()
