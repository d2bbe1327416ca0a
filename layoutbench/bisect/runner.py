"""The automatic bisection: `bisect run` from its endpoints to its verdict, beside the single-layout
bisection and the code evidence of what the culprit changed."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shlex
import threading

from .. import build as buildmod
from .. import costs, decide, fmt, measure, source, targets
from .. import farm as farmmod
from ..decide import Skip
from ..errors import LayoutbenchError
from ..profile import Profile
from ..store import Store
from .budget import (PHASES, Clock, after_endpoints_runs, budget_at_endpoints, likely_runs, look_extra, first_look_plan, choose_runs, refuse_unpaid,
                     refuse_unpaid_time, target_costs)
from .progress import Phase, ProgressLog, build_context, log_path, naive_planned
from .prober import Engine, Prober, ThreadStore, farm_cost
from ..verdict import text as vtext
from ..verdict.record import (BisectionRecord, BudgetSpent, Candidate, CodeEvidence, Confirmation, Cost, Effect,
                              Endpoints, PlanRecord, Residual, Shadow, Side, Step)
from .settings import Settings, exclusive, option_value, state_key
from .state import Bisection, Journal, subject_of, keep, normalize, range_key, start, take_back

# -- the automatic bisection ----------------------------------------------------------------------


def single_layout(prober: Prober, commits: list[str], threshold: float | None = None, say=lambda m: None,
                  left=lambda runs: "") -> dict:
    """The bisection a single-layout tool does: default link, one run per probe, each probe
    called good or bad by which bracketing value it is nearer to (as asv find does; it never
    says "no change" unless given an endpoint ``threshold``).  See decide.single_layout.  ``say``
    hears that it starts, each probe with the runs spent before it and ``left(runs still planned)``,
    and what it blames."""
    cos = {c: prober.checkout(c) for c in commits}
    planned, spent = naive_planned(commits), [0]
    say(f"naive single-layout bisection: the default link, one run a probe, over {len(commits) - 1} commit(s); "
        f"about {planned} runs (GOOD and BAD, then one a halving)")

    def one(commit: str) -> float:
        say(f"naive probe {spent[0] + 1}: {commit[:12]} ({spent[0]}/{planned} runs spent/planned)"
            + (f"; {tail}" if (tail := left(max(1, planned - spent[0]))) else ""))
        spent[0] += 1
        return prober.single(cos[commit])

    out = decide.single_layout(one, commits, threshold)
    out.pop("values", None)
    say("naive single-layout bisection: " + (f"blames {out['culprit'][:12]}" if out.get("culprit")
                                              else out.get("note", "blames no commit")) + f" ({spent[0]} runs spent)")
    return {**out, **prober.cost("single")}


def code_evidence(profile: Profile, settings: Settings, parent: str, culprit: str, say=lambda m: None,
                  top: int = 5) -> dict:
    """symdiff between the culprit's parent and the culprit, both linked in the same layout
    (``sorted``): how many functions changed code, and the largest changes."""
    from .. import symdiff
    try:
        elfs = []
        for sha in (parent, culprit):
            co = source.resolve(profile, sha, settings.repo, settings.subdir)
            objs = buildmod.compile_objects(profile, co, None, say)
            elfs.append(buildmod.link_variant(objs, profile.image().name, "sorted", 0).elf)
        d = symdiff.diff_files(elfs[0], elfs[1])
    except (LayoutbenchError, OSError, ValueError) as e:
        return {"error": str(e)}
    funcs = [x for x in d.symbols if x.kind == "func" and x.status in ("changed", "resized", "added", "removed")]
    funcs.sort(key=lambda x: -abs((x.new_size or 0) - (x.old_size or 0)))
    return {"parent": parent, "culprit": culprit, "layout": "sorted:0", "changed_functions": len(funcs),
            "moved_functions": sum(1 for x in d.symbols if x.kind == "func" and x.status == "moved"),
            "top": [{"name": x.name, "object": x.object, "status": x.status, "old_size": x.old_size,
                     "new_size": x.new_size} for x in funcs[:top]]}


def _refuse_conflicts(bisection: "Bisection", settings: Settings, profile: Profile) -> None:
    """A continued bisection (no GOOD..BAD) given a measured setting other than its own: one line
    saying what the bisection in progress uses and how to start one with the setting given."""
    was = bisection.s.conflicts(settings)
    if not was:
        return
    asked = " ".join(f"--{n.replace('_', '-')} {shlex.quote(str(option_value(n, getattr(settings, n))))}"
                     for n in Settings.MEASURED
                     if n in settings.given and getattr(settings, n) != getattr(bisection.s,
                                                                                n)) or f"--target {settings.target}"
    span = f"{bisection.good[:12]}..{bisection.bad[:12]}" if bisection.good and bisection.bad else "GOOD..BAD"
    raise LayoutbenchError(f"the bisection of {profile.name} in progress uses {', '.join(was)} (its marks were "
                           f"measured with it); to bisect with {asked} start a new one: `layoutbench bisect "
                           f"{shlex.quote(settings.kernel)} {span} {asked}` (it replaces this one; `layoutbench bisect "
                           f"reset` forgets it), or leave the option out to continue")


def _decision_flags(bisection, settings: Settings, say) -> Settings:
    """A resumed bisection keeps its measurement settings; the decision flags given now
    (--first-only, --prove-null, --thorough, --budget, --shadow) apply to it, and it says so in one
    line.  ``--budget none`` removes its budget; a new budget replaces the old one."""
    # settings made in code, not by the command line: the flags set are the ones given
    given = settings.given or tuple(k.replace("_time", "") for k in Settings.DECISIONS if getattr(settings,
                                                                                                  k) and k != "shadow")
    now = {k: getattr(settings, k) for k in Settings.DECISIONS
           if (k.replace("_time", "") in given) and (k.startswith("budget") or getattr(settings, k) is not None)}
    changed = {k: v for k, v in now.items() if getattr(bisection.s, k) != v}
    if changed and all(k.startswith("budget") for k in changed) and bisection.result is not None \
            and bisection.result.status not in ("budget", "") and bisection.result.settings == bisection.s.to_dict():
        # a budget limits runs not yet measured: a finished verdict is kept, whatever budget is given now
        spent = bisection.result.runs_spent if bisection.result.runs_spent is not None else "?"
        say(f"the bisection is finished ({bisection.result.status}): a --budget limits the runs still to measure and "
            f"it needs none, so its verdict stands (runs spent: {spent})")
        return bisection.s
    if changed:
        merged = dataclasses.replace(bisection.s, **changed)
        exclusive(merged)
        bisection.s = merged
        bisection.result = None  # a finished verdict no longer answers what is asked now
        bisection.save()
        shown = {k: v for k, v in changed.items() if not (k.startswith("budget") and v is None)}
        no_budget = bisection.s.budget is None and bisection.s.budget_time is None
        if any(k.startswith("budget") for k in changed) and no_budget:
            shown["budget"] = "none"
        say("applying " + ", ".join(f"--{k.replace('_time', '').replace('_', '-')}" + (
            "" if isinstance(v, bool) else f" {costs.duration_text(v)}" if k == "budget_time"
            else f" {v}") if v is not False else f"--no-{k}" for k, v in shown.items()) + " to the resumed bisection")
    return bisection.s


def run(store: Store, profile: Profile, settings: Settings, good: str | None = None, bad: str | None = None,
        say=lambda m: None, plan_only: bool = False, timeout: float | None = None) -> BisectionRecord | PlanRecord:
    """Bisect GOOD..BAD (or continue the bisection in progress); return the verdict's record.  With
    ``plan_only``: measure the endpoints' first look only and return what the bisection will
    likely cost and whether a step of twice the minimum effect is likely missed (status ``plan``).  ``timeout``: seconds before a run is killed (None: the
    target's); a commit whose runs all fail (time out) is skipped."""
    with contextlib.ExitStack() as stack:  # closes the prober's target however the bisection ends
        return _run(stack, store, profile, settings, (good, bad), ProgressLog(say), plan_only, timeout)


def _taken_back(store: Store, settings: Settings, good: str, bad: str) -> Bisection | None:
    """The bisection of GOOD..BAD in s.metric kept beside the one in progress, back in its place,
    when it was measured as ``s`` asks (else None: it is started again)."""
    d = store.get_state(range_key(settings.kernel, settings.repo, settings.subdir, good, bad, settings.metric))
    if not (isinstance(d, dict) and isinstance(d.get("settings"), dict)):
        return None
    kept = Settings.from_dict(d["settings"])
    if (kept.target, kept.args, kept.target_config, kept.layout) != (settings.target, settings.args,
                                                                     settings.target_config, settings.layout) \
            or kept.conflicts(settings):
        return None
    return take_back(store, settings.kernel, settings.repo, settings.subdir, good, bad, settings.metric)


def _run(stack: contextlib.ExitStack, store: Store, profile: Profile, settings: Settings,
         ends: tuple[str | None, str | None], say, plan_only: bool = False,
         timeout: float | None = None) -> BisectionRecord | PlanRecord:
    b, settings = _resume(store, profile, settings, ends, say, plan_only)
    path = log_path(profile.name, b.good, b.bad, b.s.metric, store.location)
    say.open(path, f"layoutbench bisect run {profile.name} {b.good[:12]}..{b.bad[:12]}" + (" --plan" if plan_only else ""))
    if b.result is not None and not plan_only and b.result.settings == b.s.to_dict():
        # finished, and nothing asked of it since: its verdict as it was, nothing measured again
        say("the bisection is finished: its verdict, from the store (no run measured)")
        return _reprinted(b.result)
    say(f"progress log: {path}")
    p, probers, places = _probers(stack, store, profile, settings, b, say, timeout)
    phase = Phase()
    for q in probers:  # a build's line says what it is for and the builds before it
        q.why = lambda: build_context(phase, probers)
    commits = b.commits(profile)
    if len(commits) < 2:
        raise LayoutbenchError(f"{b.good[:12]}..{b.bad[:12]} holds no commit; is GOOD an ancestor of BAD?")
    cos, plan, eng, engines, clock = _measuring(b, settings, p, probers, places, commits, say, plan_only)
    retrying = places.retrying if places is not None else (lambda what, fn: fn())
    if settings.budget is not None or settings.budget_time is not None:
        say(clock.assumes())
    clock.naive = naive_planned(commits) if settings.shadow and not plan_only else 0
    if plan_only:
        rec = first_look_plan(eng, b, settings, plan, commits, say, clock)
        _mark_planned(store, b)
        return rec

    extra = look_extra(settings)  # the R choice's second run a layout: spent, not simulated
    clock.replan = lambda: likely_runs(eng, b, plan, commits, extra)

    def progress(line: str) -> None:  # a phase's line also says the runs spent / planned and the time left
        phase.saw(line)
        if clock.likely is None and line.startswith("endpoints: "):  # the plan, from the first look as --plan makes it
            clock.likely = likely_runs(eng, b, plan, commits, extra)
        say(line + clock.progress() if line.startswith(PHASES) else line)

    try:
        ends = retrying("the endpoints", lambda: decide.endpoints(eng, b.good, b.bad, plan, say=lambda m: progress(f"endpoints: {m}")))
        if places is not None:
            places.release_all()
    except Skip as e:
        raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None
    except decide.OutOfBudget:
        return budget_at_endpoints(eng, b, settings, commits, clock, profile, p)
    again = after_endpoints_runs(eng, b, plan, commits, ends.status)
    if again is not None and settings.budget is None:  # the progress lines count against what is known now
        clock.likely, clock.replanned = again, "endpoints"
    _log_endpoints(b, ends)
    head = dict(kernel=profile.name, repo=settings.repo, metric=settings.metric, unit=p.unit,
                target=settings.target or p.target.spec.name,
                targets=[q.name for q in probers], args=settings.args, good=b.good, bad=b.bad, commits=len(commits) - 1,
                settings=settings.to_dict())
    if ends.status == "differs":
        journal = Journal(b, profile, places)
        out = retrying("the bisection", lambda: decide.bisect_range(
            places.engines(engines) if places is not None else engines, commits, plan,
            journal, None, progress, ends=ends))
        if places is not None:
            places.release_all()
        rec = BisectionRecord(**head, **_searched(out, ends, b, profile, settings, commits, say))
    else:
        rec = _undecided(BisectionRecord(**head), ends, plan)
    _read_stored_probes(b, probers, p, cos, settings)  # the cost counts the probes an interrupted run made
    rec = dataclasses.replace(rec, cost=_cost(probers), budget=BudgetSpent.from_dict(clock.summary()),
                              runs_per_layout=settings.runs_choice,
                              # one cost figure: the one R was chosen from, else (R given) the target's now
                              costs=None if settings.runs_choice else target_costs(p, settings).to_dict())
    if settings.shadow:
        rec = dataclasses.replace(rec, single_layout=_shadow(rec, p, commits, places, retrying, settings,
                                                             lambda m: (phase.saw(m), say(m)), clock))
    if places is not None:
        rec = dataclasses.replace(rec, targets=list(settings.targets), places=places.summary(
            [e for e in b.log if e["verb"] in ("good", "bad", "skip")]))
    rec = dataclasses.replace(rec, message=rec.message or vtext.summary_line(rec))
    b.result = rec
    b.save()
    keep(b.store, b)
    return rec


def _compile_ahead(prober: Prober, bisection: Bisection, cos: dict, commits: list[str], plan_only: bool) -> None:
    """The commits whose turn is known before any decision: BAD (compiled beside GOOD's runs) and, for
    a bisection without marks yet, its first probe (beside BAD's); Prober.compile_ahead decides
    whether the target allows it (counts, a core for each)."""
    prober.compile_ahead(cos[bisection.bad], "the endpoints")
    if not plan_only and len(commits) > 2 and not any(e["verb"] in ("good", "bad", "skip") for e in bisection.log):
        first = decide.split(0, len(commits) - 1, list(range(1, len(commits) - 1)), 1)[0]
        prober.compile_ahead(cos[commits[first]], "probe 1")


def _reprinted(rec: BisectionRecord) -> BisectionRecord:
    """A finished bisection's verdict as it was, marked reprinted: nothing compiled or run by this command."""
    sl = rec.single_layout
    none = {"compiled_now": 0, "ran_now": 0, "copied_now": 0}
    return dataclasses.replace(rec, cost=dataclasses.replace(rec.cost, **none), reprinted=True,
                               single_layout=sl and dataclasses.replace(sl, **none))


def _log_endpoints(bisection: Bisection, ends) -> None:
    """The endpoints' test in the bisection's log, once (its comparison in GOOD/BAD words)."""
    if bisection.entry("endpoints") is None:
        bisection.log.append({"verb": "endpoints", "commit": "", "by": "measured",
                              "note": ends.comparison.describe().replace(
            "B ", "BAD ", 1).replace(" A (", " GOOD (", 1).replace(" A;", " GOOD;"), "layouts": ends.layouts,
            "runs": ends.runs})
        bisection.save()


def _mark_planned(store: Store, bisection: Bisection) -> None:
    """Note on the bisection's start entry that --plan measured its first look (the next run says it
    starts from its plan); the settings --plan chose are not kept (the run chooses them again)."""
    d = store.get_state(bisection.key)
    if isinstance(d, dict) and d.get("log") and d["log"][0].get("verb") == "start":
        d["log"][0]["planned"] = True
        store.set_state(bisection.key, d)


def _first_line(profile: Profile, bisection: Bisection, good: str, bad: str, plan_only: bool) -> str:
    """What the bisection of GOOD..BAD, found in progress, does now: resume from its log's entries,
    start from its plan, plan again, or start with nothing in its log."""
    n = len(bisection.log) - 1
    span = f"{profile.name} {good[:12]}..{bad[:12]}"
    if n:
        marks = sum(1 for e in bisection.log if e["verb"] in ("good", "bad", "skip"))
        ends = " and the endpoints' test" if bisection.entry("endpoints") is not None else ""
        return f"resuming the bisection of {span} ({n} log entries: {marks} mark(s){ends})"
    if bisection.log and bisection.log[0].get("planned"):
        return ((f"planning the bisection of {span} again" if plan_only else f"starting the bisection of {span} "
                 "from its plan") + " (what --plan measured is in the store and is not measured again)")
    return (f"{'planning' if plan_only else 'starting'} the bisection of {span} (its log holds no mark yet; runs "
            "of its commits already in the store are not measured again)")


def _resume(store: Store, profile: Profile, settings: Settings, ends: tuple[str | None, str | None], say,
            plan_only: bool = False) -> tuple[Bisection, Settings]:
    """The bisection asked for: the one in progress resumed (its measurement settings kept, the
    decision flags given now applied), one of GOOD..BAD kept beside it taken back, or a new one."""
    good, bad = ends
    settings = normalize(profile, settings,
                         check_metric=good is not None and bad is not None)  # continued: the prober checks
    key = state_key(settings.kernel, settings.repo, settings.subdir)
    b = Bisection.load(store, key)
    if good is not None and bad is not None:
        g = source.resolve(profile, good, settings.repo, settings.subdir).commit
        bd = source.resolve(profile, bad, settings.repo, settings.subdir).commit
        if b is not None and (b.good, b.bad) == (g, bd) and b.s.metric == settings.metric \
                and b.s.target == settings.target and b.s.args == settings.args \
                and b.s.target_config == settings.target_config and b.s.layout == settings.layout \
                and not b.s.conflicts(settings):
            say(_first_line(profile, b, g, bd, plan_only))
            settings = _decision_flags(b, settings, say)
            refuse_unpaid(b, settings)
        elif (kept := _taken_back(store, settings, g, bd)) is not None:
            b = kept
            say(f"resuming the bisection of {profile.name} {g[:12]}..{bd[:12]} in {settings.metric}, kept beside the "
                f"other ({len(b.log) - 1} entries)")
            settings = _decision_flags(b, settings, say)
            refuse_unpaid(b, settings)
        else:
            refuse_unpaid(None, settings)  # before the bisection is started (or one in progress replaced)
            if b is not None:
                was = b.s.conflicts(settings)
                same = (b.good, b.bad, b.s.metric) == (g, bd, settings.metric)
                say(("replacing the earlier bisection of " if same else "keeping the earlier bisection of ")
                    + f"{profile.name} ({b.good and b.good[:12]}..{b.bad and b.bad[:12]} in {b.s.metric}"
                    + (f", {', '.join(was)}" if was else "") + ")"
                    + ("" if same else "; the same command with its range takes it back"))
            b = start(store, profile, settings, bd, g)
    elif b is None:
        raise LayoutbenchError(f"no bisection of {profile.name} in progress; give GOOD..BAD")
    else:
        _refuse_conflicts(b, settings, profile)
        settings = _decision_flags(b, settings, say)
        refuse_unpaid(b, settings)
        say(f"continuing the bisection of {profile.name} {b.good and b.good[:12]}..{b.bad and b.bad[:12]}")
    if not b.good or not b.bad:
        raise LayoutbenchError("the bisection needs a good and a bad commit; mark them with "
                               "`layoutbench bisect good REV` and `layoutbench bisect bad REV`")
    # (a property of its target and metric, not a choice: a bisection kept from before it was recorded learns it)
    settings.exact = measure.exact_why([targets.make(profile, n) for n in settings.targets], settings.metric)
    return b, settings


def _probers(stack: contextlib.ExitStack, store: Store, profile: Profile, settings: Settings, bisection: Bisection, say,
             timeout: float | None) -> tuple[Prober, list[Prober], "farmmod.Farm | None"]:
    """The machines that measure: one prober per target (or per labgrid place), open until the
    bisection ends; the first is the one the endpoints and the shadow use."""
    names = settings.targets
    if farmmod.pool(profile, names):  # a labgrid-places target: one slot per usable place
        with contextlib.closing(targets.make(profile, names[0])) as pool:
            names = names * pool.slots()
    lock = threading.Lock() if len(names) > 1 else None
    p = Prober(profile, settings, store, say, lock, timeout)  # (of a farm: on its first machine)
    probers = [p] + [Prober(profile, dataclasses.replace(settings, target=n), ThreadStore(store.location), say, lock,
                            timeout) for n in names[1:]]
    places = farmmod.Farm(probers, bisection, say) if farmmod.pool(profile, settings.targets) else None
    for q in probers:
        stack.enter_context(q)
    return p, probers, places


def _measuring(bisection: Bisection, settings: Settings, prober: Prober, probers: list[Prober], places,
               commits: list[str], say,
               plan_only: bool):
    """What the bisection measures with, said in a line or two: the checkouts, the runs per layout
    (chosen from the costs, once), the plan, the engines the decisions probe through (one a machine)
    and the clock of the budget."""
    for q in probers[1:] if places is None else []:
        say(f"also target {q.target.describe()}: {len(probers)} probes per round, one per machine")
    if places is not None:
        places.commits = commits
        say(f"labgrid places: {len(probers)} probes per round, each on a place reserved for it")
    say(f"target {prober.target.describe()}; {len(commits) - 1} commit(s) in range; "
        f"{settings.layouts} layouts x {settings.runs} run(s) per probe (up to {settings.max_layouts} x "
        f"{settings.max_runs})")
    cos = {c: prober.checkout(c) for c in commits}
    _compile_ahead(prober, bisection, cos, commits, plan_only)

    refuse_unpaid_time(bisection, settings,
                       prober)  # the time a run takes, where the profile states it or the store has it
    # 0. runs per layout from the costs the target states (measured noise split), once
    if choose_runs(prober, bisection, settings, cos,
                   say) is not None and not plan_only:  # kept at once: an interrupt before the first mark keeps it
        bisection.save()
    # 1.-3. the endpoints, the probes, the confirmation (layoutbench.decide; the marks go to the log)
    plan = settings.plan()
    eng = decide.Tracked(Engine(prober, cos))
    ledger = eng.ledger
    ledger.budget = plan.budget
    look = (settings.runs_choice or {}).get("look_runs", 2)
    if settings.runs_choice and settings.runs < look:  # the runs the choice measured beyond R count against the budget
        ledger.spent = (look - settings.runs) * 2 * max(decide.MIN_LAYOUTS, settings.layouts)
    clock = Clock(prober, settings, ledger)
    refuse_unpaid_time(bisection, settings, prober)  # the time a run takes, now measured by the runs that chose R
    eng.prober.after = clock.update
    engines = [eng] + [decide.Tracked(Engine(q, dict(cos), after=clock.update), ledger) for q in probers[1:]]
    return cos, plan, eng, engines, clock


def _undecided(rec: BisectionRecord, ends, plan) -> BisectionRecord:
    """The verdict when the endpoints show no change: within layout noise (an equivalence test
    passed) or not shown; no commit is blamed."""
    e, k, r = ends.comparison, ends.layouts, ends.runs
    fields = dict(status=ends.status, look_level=ends.level)
    if ends.status == "noise":
        return dataclasses.replace(rec, endpoints=Endpoints.of(e, **fields), status="noise", message=(
            f"within layout noise (a change of {fmt.pct(plan.min_effect)} or more is ruled out): BAD/GOOD = "
            f"{e.ratio:.4f} ({100 * e.confidence:.3g}% CI {vtext.interval(e.ci_low, e.ci_high)}, the equivalence "
            f"test's) over {k} layouts x {r} run(s), {e.noise_text()}; no commit is blamed"))
    fields.update(more_layouts=ends.more_layouts, shows=math.expm1(ends.shows) if math.isfinite(ends.shows) else None)
    return dataclasses.replace(rec, endpoints=Endpoints.of(e, **fields), status="not-shown", message=(
        f"{ends.note}: BAD/GOOD = {e.ratio:.4f} ({vtext.ci_label(e.confidence, rec)} "
        f"{vtext.interval(e.ci_low, e.ci_high)}), {e.noise_text()}; no commit is blamed, and no equivalence is "
        "claimed (--prove-null tests it)"))


def _searched(out, ends, bisection: Bisection, profile: Profile, settings: Settings, commits: list[str], say) -> dict:
    """The record's fields from the search of the range (decide.bisect_range): the first step and
    every other one with its own effect, the ranges beside them, the code evidence of the culprit."""
    if not out.steps:  # the budget ended before any step was searched out
        out.steps.append(decide.Step("range", bisection.good, None, commits[1:]))
    first = out.first_step
    steps = [Step(status=st.status, last_good=st.last_good, culprit=st.culprit,
                  subject=subject_of(profile, settings, st.culprit) if st.culprit else "", share=st.share,
                  range=st.range, shown=st.shown, bounded=st.bounded, forecast=st.forecast,
                  effect=Effect.of(st.confirmation) if st.confirmation else None) for st in out.steps]
    f = dict(endpoints=Endpoints.of(ends.comparison, status=ends.status, look_level=ends.level),
             rounds=out.rounds, probes=out.probes, runs_spent=out.runs, skipped=first.skipped,
             several=out.several, share=first.share, residual=[Residual.from_dict(x) for x in out.residual],
             sides=[Side.from_dict(x) for x in out.sides], bound=out.bound(), steps=steps,
             status=first.status, culprit=None, range=first.range if first.status == "range" else [])
    if first.status != "range":
        f.update(culprit=first.culprit if first.status == "found" else None, candidate=first.culprit,
                 culprit_subject=subject_of(profile, settings, first.culprit), last_good=first.last_good)
        if first.confirmation is not None:
            f["effect"] = Confirmation.of(first.confirmation, fresh_layouts=first.confirm_layouts, shown=first.shown,
                                          bounded=first.bounded, step_ratio=math.exp(first.effect)
                                          if math.isfinite(first.effect) else None)
        i = commits.index(first.culprit)
        f["code"] = CodeEvidence.from_dict(code_evidence(profile, settings, commits[i - 1], first.culprit, say))
    if out.status == "budget":
        f.update(status="budget", budget_note=out.note,
                 candidates=[Candidate(commit=c, probability=q) for c, q in out.candidates])
    return f


def _read_stored_probes(bisection: Bisection, probers: list[Prober], prober: Prober, cos: dict,
                        settings: Settings) -> None:
    """Read the runs of every probe in the log (an interrupted run's too) from the store, on the
    machine that judged it, so that the cost counts them (nothing runs)."""
    by_name = {q.name: q for q in probers}
    for e in bisection.log:
        if e.get("by") != "measured" or e["verb"] not in ("good", "bad", "skip"):
            continue
        q = by_name.get(e.get("slot") or e.get("target"), prober)
        if e.get("why") == "build":
            q.failed.add(("layouts", e["commit"]))
        elif ("layouts", e["commit"]) not in q.used:
            view = q.target.viewing(e["place"]) if e.get("place") else contextlib.nullcontext()
            try:
                with view:
                    q.groups(cos[e["commit"]], e.get("layouts", settings.layouts), e.get("runs", settings.runs))
            except Skip:
                pass
            except LayoutbenchError:  # a place's stored runs, read without holding it: some are missing
                if not e.get("place"):
                    raise


def _cost(probers: list[Prober]) -> Cost:
    """The bisection's one cost figure: builds, images and runs over every machine, and how many of
    them this command compiled, ran and took from a run of the same image file."""
    c = probers[0].cost("layouts") if len(probers) == 1 else farm_cost(probers)
    return Cost(**c, compiled_now=sum(q.compiled_now for q in probers), ran_now=sum(q.ran_now for q in probers),
                copied_now=sum(q.copied_now for q in probers))


def _shadow(rec: BisectionRecord, prober: Prober, commits: list[str], places, retrying, settings: Settings,
            say=lambda m: None, clock: Clock | None = None) -> Shadow:
    """What a single-layout bisection of the same range blames (run now, its cost counted apart), and
    whether layoutbench blames it too (any of its culprits; the candidate where none is confirmed)."""
    before = (prober.compiled_now, prober.ran_now, prober.copied_now)
    left = (lambda runs: clock.left(0, runs)[1]) if clock is not None else (lambda runs: "")
    said = retrying("the single-layout bisection", lambda: single_layout(prober, commits, say=say, left=left))
    if places is not None:
        places.release_all()
    sl = Shadow.from_dict({**said, "compiled_now": prober.compiled_now - before[0],
                           "ran_now": prober.ran_now - before[1],
                           "copied_now": prober.copied_now - before[2]})
    ours = rec.culprit
    if rec.status in ("uncertain", "budget") and not ours:
        ours = rec.candidate or next((c.commit for c in sorted(rec.candidates or [], key=lambda c: -c.probability)),
                                     None)
    if rec.status in ("found", "uncertain", "budget"):
        agrees = sl.culprit == ours or sl.culprit in [st.culprit for st in rec.found]
    else:
        agrees = sl.culprit is None if rec.status in ("noise", "not-shown") else sl.culprit in rec.range
    return dataclasses.replace(sl, agrees=agrees,
                               culprit_subject=subject_of(prober.profile, settings, sl.culprit) if sl.culprit else None)
