"""Several probers: k probes a round, each against GOOD and BAD measured on its own prober."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import sequential
from .outcome import Step, marked_window
from .plan import CONFIRM_LATER, NEAR, Plan, Skip, confirm_level, confirm_looks, planned_probes, probe_level, split
from .power import confirm_forecast
from .tracked import measure_at


class SearchContext:
    """What one bisection carries through its segments: the plan, the probers, the journal."""

    def __init__(self, probers, commits, plan, journal, say, out):
        self.probers, self.commits, self.plan, self.journal, self.say, self.out = \
            probers, commits, plan, journal, say, out
        self.planned = planned_probes(len(commits), len(probers))
        self.window: tuple | None = None  #: (segment commits, lo, hi) being searched


def k_step(probers: list, commits: list[str], plan: Plan, journal, segment, say,
           ctx: SearchContext | None = None) -> tuple[Step, int, int]:
    """One change point with k probers: each round splits the window lo..hi (k+1)-ary
    (:func:`split`), probe j judged by prober j against GOOD and BAD measured by the same
    prober (never two machines in one comparison), the k judgements in parallel threads;
    then the marks are recorded in probe order (with the name of the prober that judged it)
    and the window narrows to the last good / first bad mark.  Each probe is judged at its
    own level (:func:`probe_level`: every probe of the bisection counts).  The confirmation
    runs on the first prober.  Returns (step, probes, rounds)."""
    k = len(probers)
    pool = ThreadPoolExecutor(max_workers=k - 1, thread_name_prefix="probe") if k > 1 else None
    try:
        probes, rounds = _rounds(probers, commits, plan, journal, segment, say, ctx, pool)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    marks = journal.marks(segment)
    lo, hi, _ = marked_window(commits, marks)
    skipped = [{"commit": commits[i], "why": marks[commits[i]].get("why", ""),
                "note": marks[commits[i]].get("note", "")}
               for i in range(lo + 1, hi) if marks.get(commits[i], {}).get("verb") == "skip"]
    if skipped:
        return Step("range", commits[lo], None, commits[lo + 1:hi + 1], skipped), probes, rounds
    return _confirmed(probers[0], commits, plan, marks, (lo, hi), say), probes, rounds


def _rounds(probers: list, commits: list[str], plan: Plan, journal, segment, say, ctx,
            pool) -> tuple[int, int]:
    """The probing rounds of :func:`k_step` until the window holds no commit left to test (or a probe
    is undecided); the marks of an interrupted run are counted first.  Returns (probes, rounds)."""
    probes = rounds = 0
    good, bad = commits[0], commits[-1]
    k = len(probers)
    planned = ctx.planned if ctx is not None else planned_probes(len(commits), k)
    prober = probers[0]
    ledger = prober.ledger
    marks = journal.marks(segment)
    # marks an interrupted run of this bisection recorded here: probes all the same, counted against
    # the error budget and in the verdict as if never interrupted
    ledger.probes += len(marks)
    probes += len(marks)
    rounds += -(-len(marks) // k)
    _reload(probers, marks, good, bad, plan)
    while True:
        lo, hi, cand = marked_window(commits, marks)
        if ctx is not None:
            ctx.window = (commits, lo, hi)
        if not cand:
            return probes, rounds
        picks = split(lo, hi, cand, k)
        rounds += 1
        levels = []
        for _ in picks:
            ledger.probes += 1
            levels.append(probe_level(plan.alpha, ledger.probes, planned))
        for i, pr in zip(picks, probers):
            where = f" on {pr.name}" if k > 1 and pr.name else ""
            say(f"probe {commits[i][:12]}{where} ({len(cand)} commit(s) left to test; "
                f"{ledger.spent} runs spent" + (f" of {ledger.budget}" if ledger.budget else "") + ")")
        futs = [pool.submit(sequential.judge_probe, pr, commits[i], good, bad, plan, lv)
                for i, pr, lv in zip(picks[1:], probers[1:], levels[1:])] if pool else []
        first = sequential.judge_probe(prober, commits[picks[0]], good, bad, plan, levels[0])  # this thread
        judged = [first] + [f.result() for f in futs]
        for i, pr, j in zip(picks, probers, judged):
            probes += 1
            journal.record(segment, commits[i], j, pr.name)
            say(f"{commits[i][:12]}: {j.describe()}" + (f" [{pr.name}]" if k > 1 and pr.name else ""))
        if any(j.verdict == "uncertain" for j in judged):
            # a probe undecided at 2x the test cap: its neighbours share most of its layouts and
            # would be as undecided; the window is the answer (a range), not more probes
            return probes, rounds
        marks = journal.marks(segment)


def _confirmed(prober, commits: list[str], plan: Plan, marks: dict, window: tuple[int, int], say) -> Step:
    """The step last good -> culprit of the window, confirmed on fresh layouts (:func:`sequential.confirm`)
    at the next confirmation's level."""
    lo, hi = window
    good, bad = commits[0], commits[-1]
    culprit = commits[hi]
    ledger = prober.ledger
    # fresh seeds: beyond every seed any decision of this bisection (this run or an interrupted
    # one) used on *any* commit -- neighbouring commits share much of their layouts, so a seed
    # selected on one is not fresh on the next.  ledger.top is the highest seed any prober of this
    # bisection measured (they share one ledger); the marks' layouts cover an interrupted run
    used = max([plan.layouts, ledger.top] + [e.get("layouts", 0) for e in marks.values()])
    ledger.confirmations += 1
    y = prober.pool.y
    sign = int(np.sign(y[bad].mean() - y[good].mean())) if good in y and bad in y else 0
    level = confirm_level(plan.alpha, ledger.confirmations)
    cap = None if ledger.confirmations == 1 else min(plan.max_layouts, max(plan.cap, CONFIRM_LATER))
    fc = _near(prober, plan, (commits[lo], culprit), sign, level, cap, say)
    say(f"confirmation {commits[lo][:12]}..{culprit[:12]} on fresh layouts ({ledger.spent} runs spent"
        + (f" of {ledger.budget}" if ledger.budget else "") + ")")
    got = sequential.confirm(prober, commits[lo], culprit, plan, used, level=level, sign=sign, cap=cap)
    c, kc, effect = got
    return Step("found" if (c is not None and c.significant) else "uncertain", commits[lo], culprit,
                confirmation=c, confirm_layouts=kc, effect=effect, shown=got.shown, bounded=got.at_bound,
                forecast=fc)


def _near(prober, plan: Plan, pair: tuple, sign: int, level: float, cap, say) -> dict | None:
    """When the search's estimate of the step ``pair`` (last good, culprit) is within NEAR x the minimum
    effect (:func:`sequential.search_estimate`): say so
    at once, with the confirmation's forecast at that estimate (:func:`confirm_forecast`: the runs it
    will likely take, its chance of showing the step beyond the minimum effect, its bound) -- a step
    near the minimum effect is the dearest to confirm.  Returns the forecast (None when not near)."""
    last_good, culprit = pair
    m = math.log1p(plan.min_effect)
    prior = sequential.search_estimate(prober.pool, last_good, culprit, sign)
    if not math.isfinite(prior) or prior > math.log1p(NEAR * plan.min_effect):
        return None
    s2, _ = prober.pool.var()
    if not (s2 > 0 and math.isfinite(s2)):
        return None
    ns, last = confirm_looks(plan, s2, level, sign, cap, prober.ledger.spent)
    bounded = last < ns[-1]
    fc = confirm_forecast(max(prior, 0.0), s2, ns, level, m, plan.runs, last)
    fc.update(estimate=math.expm1(prior), bounded=bounded)
    bound = (f"at most {fc['max_runs']} runs: --confirm-share {100 * plan.confirm_share:g}% of the bisection's runs"
             if bounded else f"at most {fc['max_runs']} runs")
    say(f"near the minimum effect: {culprit[:12]} against {last_good[:12]} is x{math.exp(sign * prior if sign else prior):.4f} "
        f"on the search's layouts, within {NEAR:g}x the {100 * plan.min_effect:g}% minimum effect; its confirmation "
        f"will likely take about {fc['runs']} runs ({bound}), showing the step beyond the minimum effect with "
        f"probability {fc['p_beyond']:.2f} if the step is as measured")
    return fc


def _reload(probers: list, marks: dict, good, bad, plan: Plan) -> None:
    """The layouts of the probes an interrupted run judged (its marks), back into the pool of the
    prober that judged them, GOOD and BAD as far (as judge_probe left them): a resumed bisection
    then pools the same layouts, and its later tests and intervals are the uninterrupted one's.
    (They come from the store: nothing is run again.)"""
    for c, e in marks.items():
        kl = int(e.get("layouts") or 0)
        if kl <= 0:
            continue
        pr = next((p for p in probers if getattr(p, "name", None) and p.name == e.get("target")), probers[0])
        r = int(e.get("runs") or plan.runs)
        try:
            for x in (good, bad):
                if pr.pool.y.get(x, np.empty(0)).size < kl:
                    measure_at(pr, x, kl, r)
            measure_at(pr, c, kl, r)
        except Skip:
            continue
