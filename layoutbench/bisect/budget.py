"""A bisection's cost: the runs per layout, the budget's clock, the runs the endpoints still need,
and `bisect run --plan` (the endpoints' first look and what the whole bisection will likely cost)."""

from __future__ import annotations

import math
import statistics

from .. import build as buildmod
from .. import costs, decide, forecast
from ..decide import Skip
from ..errors import LayoutbenchError
from ..profile import Profile
from ..verdict.record import BisectionRecord, BudgetSpent, Cost, PlanRecord
from .prober import Prober
from .render import missed_lines
from .settings import Settings
from .state import Bisection, keep


def target_costs(prober: Prober, settings: Settings) -> costs.Costs:
    """The layout and run cost of the prober's target: as the profile states them, else as
    measured (the medians of the links of this kernel's image and of the ok runs of this kernel
    on this target, mode and arguments that the store holds, the bisection's own included)."""
    lc, rc = costs.target_costs(prober.target.spec.settings)
    if lc is not None and rc is not None:
        return costs.choose(lc, rc)
    m = costs.measured(prober.store.link_seconds(prober.profile.name, prober.target.spec.image),
                       prober.store.run_seconds(prober.profile.name, prober.target.spec.name, settings.mode,
                                                " ".join(prober.extra)),
                       getattr(prober.target, "run_noun", "runs"))
    return costs.choose(lc, rc, m)


def _beside(prober: Prober) -> bool:
    """The next image links while a run goes on (Prober.links_beside_runs; a stand-in prober may lack it)."""
    return bool(getattr(prober, "links_beside_runs", False))


class Clock:
    """The budget in runs and in time: a ``--budget 8h`` turned into runs at the time a run takes
    (costs.seconds_per_run of ``target_costs``: the target's stated costs, else the costs
    measured in the store, the bisection's own first runs included), updated as runs are
    measured; and the progress text (runs spent / planned, time left)."""

    def __init__(self, prober: Prober, settings: Settings, ledger):
        self.p, self.s, self.ledger = prober, settings, ledger
        self.likely: int | None = None  #: the plan's likely cost in runs, when known
        #: the likely cost made again at the noise and change measured so far (set by the runner)
        self.replan = None
        #: False, True (made again past the plan) or "endpoints" (made again once their test decided)
        self.replanned: bool | str = False
        #: the runs of the naive single-layout bisection still to come after this one's (the time left)
        self.naive = 0
        self.update()

    def per_run(self) -> tuple[float | None, str]:
        return costs.seconds_per_run(target_costs(self.p, self.s), self.s.runs, _beside(self.p))

    def update(self) -> None:
        """Set the ledger's budget in runs from a duration budget (once a run's time is known)."""
        if self.s.budget_time is not None:
            sec, _ = self.per_run()
            if sec is not None:
                self.ledger.budget = costs.runs_for(self.s.budget_time, sec)
        elif self.s.budget is not None:
            self.ledger.budget = self.s.budget

    def assumes(self) -> str:
        """What the budget assumes before the bisection spends anything (one line)."""
        sec, why = self.per_run()
        if self.s.budget_time is None and self.s.budget is None:
            return ""
        given = (f"budget {costs.duration_text(self.s.budget_time)}" if self.s.budget_time is not None
                 else f"budget {self.s.budget} runs")
        if sec is None and self.s.budget_time is None:
            return f"{given} (the time a run takes is not measured yet)"
        if sec is None:
            return (f"{given}: the time a run takes is not measured yet (no stored run of this kernel and "
                    f"target); the budget in runs is set after the endpoints' first runs")
        runs = self.ledger.budget
        return f"{given}: {runs} runs at {sec:.3g} s a run ({why})" + (
            f", about {costs.duration_text(runs * sec)}" if self.s.budget_time is None else "")

    def progress(self) -> str:
        """'; N runs planned, about T left at X s a run (est.)' for a progress line."""
        sec, _ = self.per_run()
        lg = self.ledger
        planned = lg.budget if lg.budget is not None else self.likely
        if planned is None:
            return ""
        # with a budget the engine's line already says "N runs spent of B"
        if lg.budget is None and lg.spent > planned and self.replan is not None:  # plan again at what is known now
            again = self.replan()
            if again is not None and again > lg.spent:
                self.likely, self.replanned, planned = again, True, again
        if lg.budget is None and lg.spent > planned:  # beyond even that: no time left to estimate
            return (f"; {lg.spent}/{planned} runs spent/planned (beyond the plan's likely cost, at the noise measured "
                    "so far too: the step may be near the minimum effect; --budget bounds it)")
        what = ("the plan's likely cost, made again at the noise measured so far" if self.replanned is True else
                "the likely cost once the endpoints' test decided" if self.replanned == "endpoints" else
                "the plan's likely cost")
        out = "" if lg.budget is not None else f"; {lg.spent}/{planned} runs spent/planned ({what})"
        if sec is not None:
            out += "; " + self.left(max(0, planned - lg.spent))[1]
        return out

    def left(self, runs: int, naive: int | None = None) -> tuple[float | None, str]:
        """The time ``runs`` more runs likely take (and ``naive`` runs of the single-layout bisection
        after them, one image each; default: ``self.naive``), and the words for it: each run's cost,
        and a link's for the share of their new images that this command had to link so far (a
        layout linked before, or the images of a neighbour's objects, need none); the two summed, or
        the longer of the two where the next image links beside a run (``links_beside_runs``: "N runs
        at r s beside L links at l s"); with no link to make, half the runs' time where two run at once
        (``runs_side_by_side``: "N runs at r s two at a time"); compiles not counted."""
        c = target_costs(self.p, self.s)
        if c.run is None:
            return None, ""
        naive = self.naive if naive is None else naive
        images = math.ceil(runs / max(1, self.s.runs)) + naive if c.layout else 0
        made, new = self.p.links_now, self.p.images_new
        links = round(images * made / new) if new else images
        beside = bool(_beside(self.p) and links and c.layout)
        # no link to make (every image linked before, or a neighbour's): two runs at once where they can be
        two = bool(getattr(self.p, "runs_side_by_side", False) and not (links and c.layout))
        sec = (max if beside else sum)(((runs + naive) * c.run / (2 if two else 1), links * (c.layout or 0.0)))
        share = (f"{made} of the {new} new images this command measured were linked" if new
                 else "this command has measured no new image yet")
        n = runs + naive
        return sec, (f"about {costs.duration_text(sec)} left: {n} run{'s' * (n != 1)} at {c.run:.3g} s"
                     + (" two at a time" if two else "")
                     + (f" {'beside' if beside else '+'} {links} link{'s' * (links != 1)} at {c.layout:.3g} s "
                        f"({share})" if c.layout else "")
                     + (f"; the naive bisection's {naive} run{'s' * (naive != 1)} included" if naive else "")
                     + " (estimated; compiles not counted)")

    def summary(self) -> dict:
        """The budget, spent and the time estimate, for the verdict's JSON."""
        sec, why = self.per_run()
        lg = self.ledger
        return {"runs": lg.budget, "duration": self.s.budget_time,
                "duration_text": None if self.s.budget_time is None else costs.duration_text(self.s.budget_time),
                "spent": lg.spent, "likely_runs": self.likely, "seconds_per_run": sec, "seconds_per_run_from": why,
                "time_spent_estimate": None if sec is None else lg.spent * sec,
                "time_left_estimate": None if sec is None or lg.budget is None else self.left(max(0, lg.budget - lg.spent))[0]}


def choose_runs(prober: Prober, bisection: "Bisection", settings: Settings, cos: dict, say) -> dict | None:
    """Runs per layout from the costs, when --runs was not given and the bisection has not
    measured its endpoints yet.  The costs are ``target_costs``: stated in the profile, or
    measured -- then GOOD and BAD are first measured at their first look with 1 run a layout
    (the endpoints' own first look, so the links and runs of this bisection count), and where
    a new layout costs no more than a run, R = 1 and no run is spent on splitting the noise;
    so too on a target whose metric is exact (``s.exact``: a second run repeats the first).
    Otherwise (and always with both costs stated) GOOD and BAD are measured at their first
    look with 2 runs a layout (the least that splits the noise), and R = costs.runs_per_layout
    of the measured layout and run variance.  Sets ``s.runs``; returns the choice (kept in
    the settings: a resumed bisection keeps it), or None."""
    k = max(decide.MIN_LAYOUTS, settings.layouts)

    def look(runs: int) -> list[dict]:
        say(f"the endpoints' first look: {k} layouts x {runs} run(s) of {bisection.good[:12]} and of "
            f"{bisection.bad[:12]}"
            + (" (2 runs a layout split the noise: the runs per layout are chosen from it)" if runs == 2 else ""))
        try:  # (a resumed bisection reads them from the store: its cost counts them as the first run did)
            return [prober.groups(cos[c], k, runs) for c in (bisection.good, bisection.bad)]
        except Skip as e:
            raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None

    if settings.runs_choice:
        look(settings.runs_choice.get("look_runs", 2))
        return settings.runs_choice
    if not settings.runs_auto or bisection.entry("endpoints") is not None:
        return None
    if settings.exact:  # nothing to split: a second run of an image prints what the first did
        text = (f"runs per layout: 1: {settings.exact} (a second run of an image prints what the first did), so no run "
                "is spent splitting the noise")
        say(text)
        look(1)
        c = target_costs(prober, settings)  # (those of the look just measured, where the profile states none)
        choice = {"runs": 1, "optimum": None, "layout_cost": c.layout, "run_cost": c.run, "costs": c.to_dict(),
                  "look_runs": 1, "max": costs.MAX_RUNS_PER_LAYOUT, "exact": settings.exact, "text": text}
        settings.runs, settings.runs_choice = 1, choice
        return choice
    c = target_costs(prober, settings)
    if not c.stated:
        look(1)
        c = target_costs(prober, settings)
        if c.layout is None or c.run is None or c.run <= 0:
            return None
        if not costs.worth_splitting(c):
            choice = {"runs": 1, "optimum": None, "layout_cost": c.layout, "run_cost": c.run, "costs": c.to_dict(),
                      "look_runs": 1, "max": costs.MAX_RUNS_PER_LAYOUT,
                      "text": (f"runs per layout: 1: a new layout ({c.layout:.3g} s) costs no more than a run "
                               f"({c.run:.3g} s), so no run is spent splitting the noise (costs {c.text})")}
            settings.runs, settings.runs_choice = 1, choice
            say(choice["text"])
            return choice
    groups = look(2)
    split = costs.noise_split(groups)
    if split is None:
        return None
    lc, rc = c.layout, c.run
    r, raw = costs.runs_per_layout(lc, rc, split.var_run, split.var_layout)
    noise = (f"(run noise {100 * math.sqrt(split.var_run):.3g}% / layout noise "
             f"{100 * math.sqrt(split.var_layout):.3g}%)^2) = {raw:.3g}, rounded, within 1..{costs.MAX_RUNS_PER_LAYOUT}")
    where = f"noise measured on GOOD and BAD, {k} layouts x 2 runs"
    text = (f"runs per layout: {r} = sqrt((layout_cost {lc:g} s / run_cost {rc:g} s) x {noise} (costs {c.text}; "
            f"{where})" if c.stated else
            f"runs per layout: {r} = sqrt((a layout {lc:.3g} s / a run {rc:.3g} s) x {noise} (costs {c.text}; {where})")
    choice = {"runs": r, "optimum": raw, "layout_cost": lc, "run_cost": rc, "costs": c.to_dict(), "look_runs": 2,
              "layout_noise": math.sqrt(split.var_layout), "run_noise": math.sqrt(split.var_run),
              "max": costs.MAX_RUNS_PER_LAYOUT, "measured": f"GOOD and BAD, {k} layouts x 2 runs", "text": text}
    settings.runs, settings.max_runs, settings.runs_choice = r, max(settings.max_runs, r), choice
    say(choice["text"])
    return choice


def first_look(settings: Settings) -> tuple[int, int, int]:
    """(runs, layouts a side, runs a layout) of the endpoints' first look: K layouts a side, R runs
    each, or the 2 a layout that choosing R from the costs measures (choose_runs) while it is not chosen."""
    k = max(decide.MIN_LAYOUTS, settings.layouts)
    auto = 2 if settings.runs_auto and not settings.exact else settings.runs
    r = max(settings.runs, (settings.runs_choice or {}).get("look_runs", auto))
    return 2 * k * r, k, r


def refuse_unpaid(bisection: "Bisection | None", settings: Settings) -> None:
    """The one budget rule: a budget in runs below the endpoints' first look, the least a plan or a
    verdict needs, is refused before anything runs (``bisect run`` and ``--plan`` alike).  A budget
    counts every run this command measures, those that choose R included."""
    if settings.budget is None or (bisection is not None and bisection.entry("endpoints") is not None):
        return
    need, k, r = first_look(settings)
    if settings.budget < need:
        chosen = " (while R is chosen from the costs, the first look measures 2 runs a layout)" if settings.runs_auto \
            and not settings.runs_choice and not settings.exact else ""
        raise LayoutbenchError(f"--budget {settings.budget} runs does not pay for the endpoints' first look ({need} "
                               f"runs: {k} layouts x {r} run(s) a side{chosen}), the least a plan or a verdict needs; "
                               f"give --budget {need} or more (or --budget none); nothing was run")


def refuse_unpaid_time(bisection: "Bisection", settings: Settings, prober: Prober) -> None:
    """The same rule for a duration (``--budget 8h``), as soon as it can be turned into runs: the
    time a run takes stated in the profile or measured in the store (before anything runs), else
    measured by the runs that chose R (then they are kept, and said so)."""
    if settings.budget_time is None or bisection.entry("endpoints") is not None:
        return
    sec, _ = costs.seconds_per_run(target_costs(prober, settings), settings.runs, _beside(prober))
    if sec is None:
        return
    runs = costs.runs_for(settings.budget_time, sec)
    need, k, r = first_look(settings)
    if runs < need:
        raise LayoutbenchError(f"--budget {costs.duration_text(settings.budget_time)} ({runs} run(s) at {sec:.3g} s a "
                               f"run) does "
                               f"not pay for the endpoints' first look ({need} runs: {k} layouts x {r} run(s) a side), "
                               f"the least a verdict needs; give --budget {costs.duration_text(math.ceil(need * sec))} "
                               f"or more (or --budget none)"
                               + (f"; the {prober.ran_now} runs measured to choose the runs per layout are kept"
                                  if prober.ran_now else "; nothing was run"))


def _ends_unspent(eng, bisection, settings: Settings, plan, commits: list) -> int:
    """About how many more runs the endpoints alone would need to decide: the look at which
    their test likely decides (forecast.expected_cost at the noise and change measured so far),
    else their first look."""
    # the endpoints' runs measured so far
    have = sum(sum(eng.have.get(c, {}).values()) for c in (bisection.good, bisection.bad))
    y = eng.pool.y
    s2, _ = eng.pool.var()
    if bisection.good not in y or bisection.bad not in y or not math.isfinite(s2) or s2 <= 0:
        return max(1, 2 * max(decide.MIN_LAYOUTS, settings.layouts) * settings.runs - have)
    d = float(y[bisection.bad].mean() - y[bisection.good].mean())
    c = forecast.expected_cost(len(commits), math.exp(d), math.sqrt(s2), plan, _corr(eng, bisection, plan))
    return max(1, 2 * c["endpoint_layouts"] * settings.runs - have)


def budget_at_endpoints(eng, bisection: "Bisection", settings: Settings, commits: list, clock: Clock, profile: Profile,
                         prober: Prober) -> BisectionRecord:
    """The verdict when the budget ends before the endpoints decide: not decided, and about how
    many more runs would be needed."""
    more = _ends_unspent(eng, bisection, settings, settings.plan(), commits)
    sec, _ = clock.per_run()
    when = f" (about {costs.duration_text(more * sec)} at {sec:.3g} s a run)" if sec is not None else ""
    note = (f"not decided at this budget ({clock.ledger.spent} of {clock.ledger.budget} runs spent): the endpoints "
            f"have not shown a change yet; about {more} more runs would be needed{when}")
    verdict = BisectionRecord(
        kernel=profile.name, repo=settings.repo, metric=settings.metric, unit=prober.unit,
        target=settings.target or prober.target.spec.name, targets=[prober.name], args=settings.args,
        good=bisection.good, bad=bisection.bad, commits=len(commits) - 1, settings=settings.to_dict(),
        endpoints=None, status="budget", culprit=None, range=[], budget_note=note, more_runs=more, message=note,
        candidates=[], runs_spent=clock.ledger.spent,
        cost=Cost(**prober.cost("layouts"), compiled_now=prober.compiled_now, ran_now=prober.ran_now,
                  copied_now=prober.copied_now),
        budget=BudgetSpent.from_dict(clock.summary()), runs_per_layout=settings.runs_choice,
        costs=None if settings.runs_choice else target_costs(prober, settings).to_dict())
    bisection.result = verdict
    bisection.save()
    keep(bisection.store, bisection)
    return verdict


def _corr(eng, bisection, plan) -> float:
    """The seed correlation a ``--paired`` plan's forecast reads (decide.seed_corr of the endpoints' stored
    values; 0 without --paired or without two seeds in common)."""
    rho = decide.seed_corr(eng.pool, bisection.good, bisection.bad) if plan.paired else 0.0
    return rho if math.isfinite(rho) else 0.0


#: the lines of decide.bisect_range that start a phase or a look in one (progress: runs spent / planned)
PHASES = ("endpoints: ", "probe ", "confirmation ", "side test ")


def look_extra(settings: Settings) -> int:
    """The runs the endpoints' first look measures beyond K layouts x R a side: those of the second run a
    layout while R is chosen from the costs (:func:`choose_runs`), which the plan's simulation at R does not."""
    runs, k, _ = first_look(settings)
    return max(0, runs - 2 * k * settings.runs)


def likely_runs(eng, bisection, plan, commits: list, extra: int = 0) -> int | None:
    """The plan's likely cost in runs (forecast.expected_cost) at the noise and change the endpoints'
    first look measured, plus ``extra`` runs (:func:`look_extra`); None before both ends have two layouts."""
    y = eng.pool.y
    s2, _ = eng.pool.var()
    if bisection.good not in y or bisection.bad not in y or not (math.isfinite(s2) and s2 > 0):
        return None
    ratio = math.exp(float(y[bisection.bad].mean() - y[bisection.good].mean()))
    return extra + forecast.expected_cost(len(commits), ratio, math.sqrt(s2), plan, _corr(eng, bisection, plan))["runs"]


def after_endpoints_runs(eng, bisection, plan, commits: list, status: str) -> int | None:
    """The likely cost in runs once the endpoints' test has decided (forecast.after_endpoints: the
    runs spent so far plus the phases after it at the change and noise that test measured); the
    first look's forecast cannot tell a step near the minimum effect from none, this one can."""
    y = eng.pool.y
    s2, _ = eng.pool.var()
    if bisection.good not in y or bisection.bad not in y or not (math.isfinite(s2) and s2 > 0):
        return None
    ratio = math.exp(float(y[bisection.bad].mean() - y[bisection.good].mean()))
    return forecast.after_endpoints(len(commits), status, eng.ledger.spent, ratio, math.sqrt(s2), plan,
                                    _corr(eng, bisection, plan))["runs"]


def first_look_plan(eng, bisection, settings: Settings, plan, commits: list, say,
                    clock: "Clock | None" = None) -> PlanRecord:
    """The endpoints' first look (K layouts each), then the likely cost of the bisection at the
    noise and the change it measured (forecast.plan_look: when the first look cannot price it, the
    endpoints' test goes on and the forecast is from its decision), and a warning when a step of twice
    the minimum effect is likely missed at that noise (forecast.missed_step, :func:`missed_lines`)."""
    k = max(decide.MIN_LAYOUTS, settings.layouts)
    try:
        got = forecast.plan_look(eng, bisection.good, bisection.bad, len(commits), plan, (k, settings.runs), say=say,
                                 go_on=settings.budget is None and settings.budget_time is None)
    except Skip as e:
        raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None
    except decide.OutOfBudget:
        raise LayoutbenchError(f"--budget {eng.ledger.budget} runs does not pay for the endpoints' first look "
                               f"({2 * k * settings.runs} runs: {k} layouts x {settings.runs} run(s) a side), the "
                               f"least a plan or a verdict needs; give a larger --budget (or --budget none)") from None
    cost, rho, noise = got["cost"], got["corr"], got["noise"]
    d = math.log(got["ratio"]) if got["ratio"] > 0 else 0.0
    msg = _plan_message(got, plan, settings, k)
    lines = [msg]
    near = forecast.near_steps(len(commits), noise, plan, 1 if d >= 0 else -1, rho)
    if near:
        lines.append("at this noise, near the minimum effect: " + "; ".join(
            f"a step of {x['times']:g}x it ({100 * x['step']:.3g}%) about {x['runs']} runs (the confirmation "
            f"{x['phase_runs']['confirmation']}), named in {x['named']} of {x['histories']} simulated"
            for x in near) + f" (a confirmation takes at most {100 * plan.confirm_share:g}% of the runs, "
            "--confirm-share)")
    missed = forecast.missed_step(noise, plan)
    if missed is not None and missed["likely_missed"]:
        lines.extend(missed_lines(missed, settings.runs))
    ends = (bisection.good, bisection.bad)
    hint = "" if plan.paired else decide.pairing_hint(eng.pool, *ends, decide.ztest(eng.pool, *ends))
    if hint:
        lines.append(f"note: {hint}")
    if settings.runs_choice:
        lines.append(settings.runs_choice["text"])
    costs_now = budget = None
    if clock is not None:
        # one cost figure: the one the runs per layout were chosen from, else (R given) the target's now
        costs_now = None if settings.runs_choice else target_costs(clock.p, settings).to_dict()
        lines.extend(_plan_time_lines(clock, settings, cost, costs_now))
        budget = clock.summary()
    compiles = None if clock is None else _compiles(clock.p.profile, min(cost["probes"], max(0, len(commits) - 2)))
    if compiles is not None:
        lines.append(compiles["text"])
    extra = {} if clock is None else {"costs": costs_now, "budget": budget, "compiles": compiles}
    cost = {**cost, "first_look": got["first"], "priced_by": got["by"], "endpoints_status": got["ends"]}
    return PlanRecord(kernel=bisection.s.kernel, good=bisection.good, bad=bisection.bad, commits=len(commits) - 1,
                      plan=cost, ratio=math.exp(d), noise=noise, settings=settings.to_dict(),
                      runs_per_layout=settings.runs_choice,
                      missed_step=missed, near_steps=near, message="\n".join(lines), extra=extra)


def _plan_message(got: dict, plan, settings: Settings, k: int) -> str:
    """The plan's first line: what its first look measured and, where that could not price the range,
    what the endpoints' test it went on with showed; the likely cost by phase (forecast.plan_look's)."""
    cost, first, rho, noise = got["cost"], got["first"], got["corr"], got["noise"]
    ph = cost["phase_runs"]
    paired = (f", the same seeds sharing {100 * rho:.3g}% of it across the two commits (--paired reads it; four "
              "seeds give a rough figure)") if plan.paired else ""
    look = (f"plan: BAD/GOOD = {first['ratio']:.4f} at the first look ({k} layouts a side), layout noise "
            f"{100 * first['noise']:.2f}%")
    phases = (f"{cost['probes']} probes {ph['probes']} runs, the confirmation {ph['confirmation']} runs "
              f"({cost['confirm_layouts']} fresh layouts a side), the tests of the ranges beside the step "
              f"{ph['sides']} runs: about {cost['runs']} runs ({settings.runs} run(s) per layout)"
              "; every further change point costs about as much again")
    went_on = (f"{look}; the first look could not price the bisection (a step one standard error either side of "
               f"its estimate likely costs {first['low']} to {first['high']} runs), so the endpoints' test went on: ")
    if got["by"] == "endpoints' test" and got["ends"] != "differs":
        msg = (f"{went_on}{cost['endpoint_layouts']} layouts a side, BAD/GOOD = {got['ratio']:.4f}, layout noise "
               f"{100 * noise:.2f}%{paired}: no change of at least {100 * plan.min_effect:g}% shown "
               f"({got['ends']}); the bisection ends there: about {cost['runs']} runs, all measured now (kept)")
    elif got["by"] == "endpoints' test":
        msg = (f"{went_on}it shows a change at {cost['endpoint_layouts']} layouts a side ({ph['endpoints']} runs, measured "
               f"now and kept), BAD/GOOD = {got['ratio']:.4f}, layout noise {100 * noise:.2f}%{paired} (a step of "
               f"{cost['step_in_noise_units']:.1f} x the noise); likely cost (those runs and the median of "
               f"{cost['histories']} bisections simulated at this noise and change for the phases after them): "
               + phases)
    else:
        msg = (f"{look}{paired} (a step of {cost['step_in_noise_units']:.1f} x the noise); likely cost (the median of "
               f"{cost['histories']} bisections simulated at this noise and change): endpoints {ph['endpoints']} runs "
               f"({cost['endpoint_layouts']} layouts a side), " + phases)
        if got["by"] == "budget":
            msg += (f"; not settled: a step one standard error either side of the estimate likely costs "
                    f"{first['low']} to {first['high']} runs (under a budget the plan measures no further than its "
                    "first look: the bisection's runs are the budget's)")
        elif first["low"] != first["high"] or first["low"] != cost["runs"]:
            msg += f" (a step one standard error either side of the estimate: {first['low']} to {first['high']})"
    return msg


def _compiles(profile: Profile, probes: int) -> dict | None:
    """What the probes' compiles likely add to the plan's time: at most one a probe (the endpoints are
    built), each at the median of the compiles of this kernel in the work folder; None before any."""
    secs = buildmod.compile_seconds(profile)
    if not secs or not probes:
        return None
    med = statistics.median(secs)
    return {"at_most": probes, "seconds_each": med, "of": len(secs),
            "text": f"compiles: at most {probes} more (one a probe; a commit whose changes the build does not read "
                    f"links a neighbour's objects instead) at about {costs.duration_text(med)} each (the median of "
                    f"{len(secs)} compile(s) of {profile.name} in this work folder): up to "
                    f"{costs.duration_text(probes * med)} on top of the time above"}


def _plan_time_lines(clock: "Clock", settings: Settings, cost: dict, costs_now: dict | None) -> list[str]:
    """The plan's lines on where the costs came from, the time it likely takes and the budget."""
    lines = []
    if costs_now and costs_now["text"]:
        lines.append(f"costs: {costs_now['text']}")
    clock.likely = cost["runs"]
    sec, why = clock.per_run()
    if sec is not None:
        lines.append(f"time: about {costs.duration_text(cost['runs'] * sec)} at {sec:.3g} s a run ({why})")
    if clock.s.budget_time is not None or clock.s.budget is not None:
        lines.append(clock.assumes() + (" -- the likely cost fits" if clock.ledger.budget is not None
                                        and cost["runs"] <= clock.ledger.budget else
                                        " -- the likely cost does not fit: the verdict may be 'not decided at "
                                        "this budget'" if clock.ledger.budget is not None else ""))
    return lines
