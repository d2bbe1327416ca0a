"""The search for every change point of a range: the probes, the confirmations, the residual tests
beside each found step, the budget."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import sequential
from .model import Pool
from .outcome import Outcome
from .plan import MIN_LAYOUTS, RESIDUAL_FAR, SIDE_STEP, OutOfBudget, Plan, Skip, family_level
from .rounds import SearchContext, k_step
from .sequential import Ends, SideStop
from .tracked import Tracked


def bisect_range(prober, commits: list[str], plan: Plan, journal, segment: str | None = None,
                 say=lambda m: None, ends: Ends | None = None) -> Outcome:
    """Bisect ``commits`` (GOOD first, BAD last) for every change point of at least the
    minimum effect (``plan.first_only``: the first one found): a step is searched, confirmed,
    then the sub-ranges before and after it are tested and, when they differ, searched too.

    ``prober`` may be a list of k probers (one per machine): each round then judges up to k
    probes in parallel (:func:`k_step`); the endpoints, the confirmations and the residual
    tests run on the first.  ``plan.budget`` caps the runs: the outcome is then ``budget``
    with the candidates left and their probabilities."""
    probers = [p if isinstance(p, Tracked) else Tracked(p)
               for p in (prober if isinstance(prober, (list, tuple)) else [prober])]
    for p in probers:
        p.say = say
    prober = probers[0]
    if plan.budget is not None and prober.ledger.budget is None:
        prober.ledger.budget = plan.budget
    for p in probers[1:]:
        p.ledger = prober.ledger
    try:
        if ends is None:
            ends = sequential.endpoints(prober, commits[0], commits[-1], plan, say=lambda m: say(f"endpoints: {m}"))
    except OutOfBudget:
        out = Outcome("budget", None, alpha=plan.alpha, k=len(probers), runs=prober.ledger.spent)
        out.note = "not decided at this budget: the endpoints' test has not shown a change yet"
        return out
    out = Outcome(ends.status, ends, alpha=plan.alpha, k=len(probers))
    if ends.status != "differs":
        out.runs = prober.ledger.spent
        return out
    ctx = SearchContext(probers, commits, plan, journal, say, out)
    try:
        _search(ctx, commits, segment)
    except OutOfBudget:
        out.status = "budget"
        if ctx.window is not None:
            sub, lo, hi = ctx.window
            out.candidates = posterior(prober.pool, sub, lo, hi)
            out.note = ("not decided at this budget: the step is among " + ", ".join(
                f"{c[:12]} ({100 * p:.0f}%)" for c, p in out.candidates) + f"; about {_more_runs(ctx, sub, lo, hi)} "
                "more runs would decide")
    total = float(prober.pool.y[commits[-1]].mean() - prober.pool.y[commits[0]].mean())
    for s in out.steps:
        s.share = s.effect / total if total and math.isfinite(s.effect) else math.nan
    out.steps.sort(key=lambda s: commits.index(s.culprit) if s.culprit in commits else len(commits))
    found = [s for s in out.steps if s.status == "found"]
    if out.status != "budget":
        out.status = "found" if found else (out.steps[0].status if out.steps else "uncertain")
    out.share = sum(s.share for s in found if math.isfinite(s.share)) if found else math.nan
    located = {(s.last_good, s.culprit) for s in found}
    out.several = len(found) > 1 or any((r["good"], r["bad"]) not in located and r.get("unlocated")
                                        for r in out.residual)
    out.runs = prober.ledger.spent
    return out


def _search(ctx: SearchContext, sub: list[str], segment: str | None) -> None:
    """Find the step of ``sub`` (its ends differ), then test the sub-ranges beside it."""
    plan, prober, out = ctx.plan, ctx.probers[0], ctx.out
    st, probes, rounds = k_step(ctx.probers, sub, plan, ctx.journal, segment, ctx.say, ctx)
    out.probes += probes
    out.rounds += rounds
    out.steps.append(st)
    if st.culprit is None or (plan.first_only and st.status == "found"):
        return  # skipped commits in the way; or --first-only  (an unconfirmed step: look beside it too)
    lo, hi = sub.index(st.last_good), sub.index(st.culprit)
    pool = prober.pool
    # the sides are tested like endpoints, the likelier first (at the larger of the family's levels);
    # each looks further only while its measured commits suggest a step (an always-valid test may)
    c0, c1 = ctx.commits[0], ctx.commits[-1]
    y0 = pool.y
    sign = 1.0 if float(y0[c1].mean() - y0[c0].mean()) >= 0 else -1.0
    d1 = SIDE_STEP * math.log1p(plan.min_effect)  # the step a side test looks for (log scale)

    for side in sorted((sub[:lo + 1], sub[hi:]), key=lambda sd: side_evidence(pool, sd, sign), reverse=True):
        if len(side) < 2 or (plan.first_only and any(s.status == "found" for s in out.steps)):
            continue
        a, b = side[0], side[-1]
        have = max(plan.side_first, min(pool.n(a), pool.n(b)))  # the first look buys no layout it need not
        cap = max(MIN_LAYOUTS, min(plan.max_layouts, max(have, RESIDUAL_FAR)))
        prober.ledger.residuals += 1
        level = family_level(plan.alpha, prober.ledger.residuals)
        where = "before" if b == st.last_good else "after"
        ctx.say(f"side test {a[:12]}..{b[:12]} (the range {where} the step at {st.culprit[:12]}; "
                f"{prober.ledger.spent} runs spent" + (f" of {prober.ledger.budget}" if prober.ledger.budget else "") + ")")
        try:
            e = sequential.endpoints(prober, a, b, dataclasses.replace(plan, layouts=min(have, cap), prove_null=False),
                          level=level, cap=cap,
                          stop=SideStop(lambda k, side=side: side_llr(pool, side, sign, d1) > math.log(plan.side_a),
                                        (d1, sign)),
                          say=lambda m, name=f"side test {a[:12]}..{b[:12]}": ctx.say(f"{name}: {m}"))
        except Skip:
            continue
        c = e.comparison
        out.sides.append({"good": a, "bad": b, "status": e.status, "ratio": c.ratio, "ci_low": c.ci_low,
                          "ci_high": c.ci_high, "confidence": c.confidence, "layouts": e.layouts, "level": level,
                          "cap": cap, "futile": e.futile,
                          "reach": math.expm1(e.reach) if math.isfinite(e.reach) else None,
                          "shows": math.expm1(e.shows) if math.isfinite(e.shows) else None})
        if e.status != "differs":
            continue
        rec = {"good": a, "bad": b, "ratio": c.ratio, "level": level}
        out.residual.append(rec)
        n0 = len([s for s in out.steps if s.status == "found"])
        _search(ctx, side, f"{a}..{b}")
        rec["unlocated"] = len([s for s in out.steps if s.status == "found"]) == n0


def side_llr(pool: Pool, side: list, sign: float, d1: float) -> float:
    """When to stop looking, not a claim: the log likelihood ratio of "a step of ``d1`` (log scale)
    in the direction ``sign`` at one of the places a step could split the measured commits of
    ``side``, each place equally likely" against "no step", from the difference of the mean after
    the split and the mean before it (each commit's mean weighted by its layouts, pooled variance
    s^2): per split (d * d1 - d1^2 / 2) / (s^2 (1/n_before + 1/n_after)), averaged as likelihood
    ratios.  Under no step it drifts down as layouts are added (Wald's test stops at its lower
    boundary); under a step of d1 it drifts up.  -inf with fewer than two measured commits."""
    split = _splits(pool, side, sign)
    if split is None:
        return -math.inf
    d, v = split
    ll = (d * d1 - d1 * d1 / 2.0) / v
    top = float(ll.max())
    return top + math.log(float(np.mean(np.exp(ll - top))))


def side_evidence(pool: Pool, side: list, sign: float) -> float:
    """Where to look, not a claim: how strongly the commits of ``side`` measured so far (its ends,
    the probes in it, a confirmation's layouts) suggest a step in the direction ``sign``: the
    largest z over the places a step could split them, of the mean of the commits after the split
    minus the mean of those before (each commit's mean weighted by its layouts, pooled variance).
    -inf when fewer than two of its commits are measured."""
    split = _splits(pool, side, sign)
    if split is None:
        return -math.inf
    d, v = split
    return float(np.max(d / np.sqrt(v)))


def _splits(pool: Pool, side: list, sign: float):
    """For each place a step could split the measured commits of ``side`` (in order): the mean of
    the commits after it minus the mean of those before (each commit's mean weighted by its
    layouts), in the direction ``sign``, and that difference's variance under the pooled s^2.
    None with fewer than two measured commits or no variance yet."""
    ms = [pool.y[c] for c in side if c in pool.y and pool.y[c].size]
    s2, _ = pool.var()
    if len(ms) < 2 or not s2 > 0:
        return None
    n = np.array([y.size for y in ms], dtype=float)
    cum = np.cumsum([y.sum() for y in ms])
    nl = np.cumsum(n)[:-1]
    nr = n.sum() - nl
    return sign * ((cum[-1] - cum[:-1]) / nr - cum[:-1] / nl), s2 * (1.0 / nl + 1.0 / nr)


def posterior(pool: Pool, sub: list[str], lo: int, hi: int) -> list[tuple[str, float]]:
    """P(the step is at commit i) for i in lo+1..hi of ``sub``: a single step between the levels
    of sub[lo] and sub[hi], a uniform prior, every measured commit of the window as evidence
    (normal, pooled variance)."""
    s2, _ = pool.var()
    g, b = sub[lo], sub[hi]
    if g not in pool.y or b not in pool.y or not s2 > 0:
        n = hi - lo
        return [(sub[i], 1.0 / n) for i in range(lo + 1, hi + 1)]
    mg, mb = pool.y[g].mean(), pool.y[b].mean()
    ll = []
    for i in range(lo + 1, hi + 1):
        x = 0.0
        for j in range(lo + 1, hi):
            y = pool.y.get(sub[j])
            if y is None or y.size == 0:
                continue
            mu = mg if j < i else mb
            x -= float(np.sum((y - mu) ** 2)) / (2 * s2)
        ll.append(x)
    ll = np.array(ll)
    p = np.exp(ll - ll.max())
    p /= p.sum()
    return [(sub[i], float(q)) for i, q in zip(range(lo + 1, hi + 1), p)]


def _more_runs(ctx: SearchContext, sub, lo, hi) -> int:
    """About how many runs the rest of the search would take: the probes left at the layouts
    the last probes took, and a confirmation."""
    marks = [e for e in ctx.journal.log] if hasattr(ctx.journal, "log") else []
    k = max([e.get("layouts", 0) for e in marks] + [ctx.plan.layouts])
    left = max(1, math.ceil(math.log2(max(2, hi - lo))))
    return (left + 2) * k * ctx.plan.runs
