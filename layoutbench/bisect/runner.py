"""The automatic bisection: `bisect run` from its endpoints to its verdict, beside the single-layout
bisection and the code evidence of what the culprit changed."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shlex
import threading

from .. import build as buildmod
from .. import costs, decide, fmt, source, targets
from .. import farm as farmmod
from ..decide import Skip
from ..errors import LayoutbenchError
from ..profile import Profile
from ..store import Store
from .budget import (PHASES, Clock, _budget_at_endpoints, _likely_runs, _plan_only, choose_runs, refuse_unpaid,
                     refuse_unpaid_time, target_costs)
from .prober import Engine, Prober, ThreadStore, farm_cost
from .render import _cmp, ci_label, interval, summary_line
from .settings import Settings, exclusive, option_value, state_key
from .state import Bisection, Journal, _subject, keep, normalize, range_key, start, take_back

# -- the automatic bisection ----------------------------------------------------------------------


def single_layout(p: Prober, commits: list[str], threshold: float | None = None) -> dict:
    """The bisection a single-layout tool does: default link, one run per probe, each probe
    called good or bad by which bracketing value it is nearer to (as asv find does; it never
    says "no change" unless given an endpoint ``threshold``).  See decide.single_layout."""
    cos = {c: p.checkout(c) for c in commits}
    out = decide.single_layout(lambda c: p.single(cos[c]), commits, threshold)
    out.pop("values", None)
    return {**out, **p.cost("single")}


def code_evidence(profile: Profile, s: Settings, parent: str, culprit: str, say=lambda m: None, top: int = 5) -> dict:
    """symdiff between the culprit's parent and the culprit, both linked in the same layout
    (``sorted``): how many functions changed code, and the largest changes."""
    from .. import symdiff
    try:
        imgs = []
        for sha in (parent, culprit):
            co = source.resolve(profile, sha, s.repo, s.subdir)
            objs = buildmod.compile_objects(profile, co, None, say)
            v = buildmod.link_variant(objs, profile.image().name, "sorted", 0)
            imgs.append(symdiff.read_image(v.elf))
        d = symdiff.diff(imgs[0], imgs[1])
    except (LayoutbenchError, OSError, ValueError) as e:
        return {"error": str(e)}
    funcs = [x for x in d.symbols if x.kind == "func" and x.status in ("changed", "resized", "added", "removed")]
    funcs.sort(key=lambda x: -abs((x.new_size or 0) - (x.old_size or 0)))
    return {"parent": parent, "culprit": culprit, "layout": "sorted:0", "changed_functions": len(funcs),
            "moved_functions": sum(1 for x in d.symbols if x.kind == "func" and x.status == "moved"),
            "top": [{"name": x.name, "object": x.object, "status": x.status, "old_size": x.old_size,
                     "new_size": x.new_size} for x in funcs[:top]]}


def _refuse_conflicts(b: "Bisection", s: Settings, profile: Profile) -> None:
    """A continued bisection (no GOOD..BAD) given a measured setting other than its own: one line
    saying what the bisection in progress uses and how to start one with the setting given."""
    was = b.s.conflicts(s)
    if not was:
        return
    asked = " ".join(f"--{n.replace('_', '-')} {shlex.quote(str(option_value(n, getattr(s, n))))}"
                     for n in Settings.MEASURED
                     if n in s.given and getattr(s, n) != getattr(b.s, n)) or f"--target {s.target}"
    span = f"{b.good[:12]}..{b.bad[:12]}" if b.good and b.bad else "GOOD..BAD"
    raise LayoutbenchError(f"the bisection of {profile.name} in progress uses {', '.join(was)} (its marks were "
                           f"measured with it); to bisect with {asked} start a new one: `layoutbench bisect "
                           f"{shlex.quote(s.kernel)} {span} {asked}` (it replaces this one; `layoutbench bisect reset` "
                           f"forgets it), or leave the option out to continue")


def _decision_flags(b, s: Settings, say) -> Settings:
    """A resumed bisection keeps its measurement settings; the decision flags given now
    (--first-only, --prove-null, --thorough, --budget, --shadow) apply to it, and it says so in one
    line.  ``--budget none`` removes its budget; a new budget replaces the old one."""
    # settings made in code, not by the command line: the flags set are the ones given
    given = s.given or tuple(k.replace("_time", "") for k in Settings.DECISIONS if getattr(s, k) and k != "shadow")
    now = {k: getattr(s, k) for k in Settings.DECISIONS
           if (k.replace("_time", "") in given) and (k.startswith("budget") or getattr(s, k) is not None)}
    changed = {k: v for k, v in now.items() if getattr(b.s, k) != v}
    if changed and all(k.startswith("budget") for k in changed) and b.result is not None \
            and b.result.get("status") not in ("budget", None) and b.result.get("settings") == b.s.to_dict():
        # a budget limits runs not yet measured: a finished verdict is kept, whatever budget is given now
        say(f"the bisection is finished ({b.result['status']}): a --budget limits the runs still to measure and it "
            f"needs none, so its verdict stands (runs spent: {b.result.get('runs_spent', '?')})")
        return b.s
    if changed:
        merged = dataclasses.replace(b.s, **changed)
        exclusive(merged)
        b.s = merged
        b.result = None  # a finished verdict no longer answers what is asked now
        b.save()
        shown = {k: v for k, v in changed.items() if not (k.startswith("budget") and v is None)}
        if any(k.startswith("budget") for k in changed) and b.s.budget is None and b.s.budget_time is None:
            shown["budget"] = "none"
        say("applying " + ", ".join(f"--{k.replace('_time', '').replace('_', '-')}" + (
            "" if isinstance(v, bool) else f" {costs.duration_text(v)}" if k == "budget_time"
            else f" {v}") if v is not False else f"--no-{k}" for k, v in shown.items()) + " to the resumed bisection")
    return b.s


def run(store: Store, profile: Profile, s: Settings, good: str | None = None, bad: str | None = None,
        say=lambda m: None, plan_only: bool = False, timeout: float | None = None) -> dict:
    """Bisect GOOD..BAD (or continue the bisection in progress); return the verdict.  With
    ``plan_only``: measure the endpoints' first look only and return what the bisection will
    likely cost and whether a step of twice the minimum effect is likely missed (status ``plan``).  ``timeout``: seconds before a run is killed (None: the
    target's); a commit whose runs all fail (time out) is skipped."""
    with contextlib.ExitStack() as stack:  # closes the prober's target however the bisection ends
        return _run(stack, store, profile, s, (good, bad), say, plan_only, timeout)


def _taken_back(store: Store, s: Settings, good: str, bad: str) -> Bisection | None:
    """The bisection of GOOD..BAD in s.metric kept beside the one in progress, back in its place,
    when it was measured as ``s`` asks (else None: it is started again)."""
    d = store.get_state(range_key(s.kernel, s.repo, s.subdir, good, bad, s.metric))
    if not (isinstance(d, dict) and isinstance(d.get("settings"), dict)):
        return None
    kept = Settings.from_dict(d["settings"])
    if (kept.target, kept.args, kept.target_config, kept.layout) != (s.target, s.args, s.target_config, s.layout) \
            or kept.conflicts(s):
        return None
    return take_back(store, s.kernel, s.repo, s.subdir, good, bad, s.metric)


def _run(stack: contextlib.ExitStack, store: Store, profile: Profile, s: Settings,
         ends: tuple[str | None, str | None], say, plan_only: bool = False, timeout: float | None = None) -> dict:
    good, bad = ends
    s = normalize(profile, s, check_metric=good is not None and bad is not None)  # continued: the prober checks
    key = state_key(s.kernel, s.repo, s.subdir)
    b = Bisection.load(store, key)
    if good is not None and bad is not None:
        g = source.resolve(profile, good, s.repo, s.subdir).commit
        bd = source.resolve(profile, bad, s.repo, s.subdir).commit
        if b is not None and (b.good, b.bad) == (g, bd) and b.s.metric == s.metric and b.s.target == s.target \
                and b.s.args == s.args and b.s.target_config == s.target_config and b.s.layout == s.layout \
                and not b.s.conflicts(s):
            n = len(b.log) - 1
            say(f"resuming the bisection of {profile.name} {g[:12]}..{bd[:12]} ({n} log entries)" if n else
                f"starting the bisection of {profile.name} {g[:12]}..{bd[:12]} from its plan (what --plan measured "
                "is in the store and is not measured again)")
            s = _decision_flags(b, s, say)
            refuse_unpaid(b, s)
        elif (kept := _taken_back(store, s, g, bd)) is not None:
            b = kept
            say(f"resuming the bisection of {profile.name} {g[:12]}..{bd[:12]} in {s.metric}, kept beside the other "
                f"({len(b.log) - 1} entries)")
            s = _decision_flags(b, s, say)
            refuse_unpaid(b, s)
        else:
            refuse_unpaid(None, s)  # before the bisection is started (or one in progress replaced)
            if b is not None:
                was = b.s.conflicts(s)
                same = (b.good, b.bad, b.s.metric) == (g, bd, s.metric)
                say(("replacing the earlier bisection of " if same else "keeping the earlier bisection of ")
                    + f"{profile.name} ({b.good and b.good[:12]}..{b.bad and b.bad[:12]} in {b.s.metric}"
                    + (f", {', '.join(was)}" if was else "") + ")"
                    + ("" if same else "; the same command with its range takes it back"))
            b = start(store, profile, s, bd, g)
    elif b is None:
        raise LayoutbenchError(f"no bisection of {profile.name} in progress; give GOOD..BAD")
    else:
        _refuse_conflicts(b, s, profile)
        s = _decision_flags(b, s, say)
        refuse_unpaid(b, s)
        say(f"continuing the bisection of {profile.name} {b.good and b.good[:12]}..{b.bad and b.bad[:12]}")
    if not b.good or not b.bad:
        raise LayoutbenchError("the bisection needs a good and a bad commit; mark them with "
                               "`layoutbench bisect good REV` and `layoutbench bisect bad REV`")
    if b.result is not None and not plan_only and b.result.get("settings") == b.s.to_dict():
        # finished, and nothing asked of it since: its verdict as it was, nothing measured again
        say("the bisection is finished: its verdict, from the store (no run measured)")
        now = {"compiled_now": 0, "ran_now": 0}
        again = {**b.result, "cost": {**(b.result.get("cost") or {}), **now}, "reprinted": True}
        if again.get("single_layout"):
            again["single_layout"] = {**again["single_layout"], **now}
        return again
    names = s.targets
    if farmmod.pool(profile, names):  # a labgrid-places target: one slot per usable place
        with contextlib.closing(targets.make(profile, names[0])) as pool:
            names = names * pool.slots()
    lock = threading.Lock() if len(names) > 1 else None
    p = Prober(profile, s, store, say, lock, timeout)  # (of a farm: on its first machine)
    probers = [p] + [Prober(profile, dataclasses.replace(s, target=n), ThreadStore(store.location), say, lock,
                            timeout) for n in names[1:]]
    places = farmmod.Farm(probers, b, say) if farmmod.pool(profile, s.targets) else None
    for q in probers:
        stack.enter_context(q)
    commits = b.commits(profile)
    if len(commits) < 2:
        raise LayoutbenchError(f"{b.good[:12]}..{b.bad[:12]} holds no commit; is GOOD an ancestor of BAD?")
    for q in probers[1:] if places is None else []:
        say(f"also target {q.target.describe()}: {len(probers)} probes per round, one per machine")
    if places is not None:
        places.commits = commits
        say(f"labgrid places: {len(probers)} probes per round, each on a place reserved for it")
    say(f"target {p.target.describe()}; {len(commits) - 1} commit(s) in range; "
        f"{s.layouts} layouts x {s.runs} run(s) per probe (up to {s.max_layouts} x {s.max_runs})")
    cos = {c: p.checkout(c) for c in commits}

    refuse_unpaid_time(b, s, p)  # the time a run takes, where the profile states it or the store has it
    # 0. runs per layout from the costs the target states (measured noise split), once
    if choose_runs(p, b, s, cos, say) is not None and not plan_only:  # kept at once: an interrupt before the first mark keeps it
        b.save()
    # 1.-3. the endpoints, the probes, the confirmation (layoutbench.decide; the marks go to the log)
    plan = s.plan()
    eng = decide.Tracked(Engine(p, cos))
    ledger = eng.ledger
    ledger.budget = plan.budget
    look = (s.runs_choice or {}).get("look_runs", 2)
    if s.runs_choice and s.runs < look:  # the runs the choice measured beyond R count against the budget too
        ledger.spent = (look - s.runs) * 2 * max(decide.MIN_LAYOUTS, s.layouts)
    clock = Clock(p, s, ledger)
    refuse_unpaid_time(b, s, p)  # the time a run takes, now measured by the runs that chose R
    eng.prober.after = clock.update
    engines = [eng] + [decide.Tracked(Engine(q, dict(cos), after=clock.update), ledger) for q in probers[1:]]
    retrying = places.retrying if places is not None else (lambda what, fn: fn())
    if s.budget is not None or s.budget_time is not None:
        say(clock.assumes())
    if plan_only:
        return _plan_only(eng, b, s, plan, commits, say, clock)

    clock.replan = lambda: _likely_runs(eng, b, plan, commits)

    def progress(m: str) -> None:  # a phase's line also says the runs spent / planned and the time left
        if clock.likely is None and m.startswith("endpoints: "):  # the plan, from the first look as --plan makes it
            clock.likely = _likely_runs(eng, b, plan, commits)
        say(m + clock.progress() if m.startswith(PHASES) else m)

    try:
        ends = retrying("the endpoints", lambda: decide.endpoints(eng, b.good, b.bad, plan, say=lambda m: progress(f"endpoints: {m}")))
        if places is not None:
            places.release_all()
    except Skip as e:
        raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None
    except decide.OutOfBudget:
        return _budget_at_endpoints(eng, b, s, commits, clock, profile, p)
    k, r = ends.layouts, ends.runs
    if b.entry("endpoints") is None:
        b.log.append({"verb": "endpoints", "commit": "", "by": "measured", "note": ends.comparison.describe().replace(
            "B ", "BAD ", 1).replace(" A (", " GOOD (", 1).replace(" A;", " GOOD;"), "layouts": k, "runs": r})
        b.save()
    verdict = {"kernel": profile.name, "repo": s.repo, "metric": s.metric, "unit": p.unit, "target": s.target
               or p.target.spec.name, "targets": [q.name for q in probers], "rounds": 0, "probes": 0,
               "args": s.args, "good": b.good, "bad": b.bad, "commits": len(commits) - 1,
               "settings": s.to_dict(), "endpoints": {**_cmp(ends.comparison), "status": ends.status,
                                                       "look_level": ends.level}}
    if ends.status == "noise":
        e = ends.comparison
        verdict.update(status="noise", culprit=None, range=[], message=(
            f"within layout noise (a change of {fmt.pct(plan.min_effect)} or more is ruled out): BAD/GOOD = "
            f"{e.ratio:.4f} ({100 * e.confidence:.3g}% CI {interval(e.ci_low, e.ci_high)}, the equivalence test's) over {k} layouts "
            f"x {r} run(s), {e.noise_text()}; no commit is blamed"))
    elif ends.status != "differs":
        e = ends.comparison
        verdict["endpoints"]["more_layouts"] = ends.more_layouts
        verdict["endpoints"]["shows"] = math.expm1(ends.shows) if math.isfinite(ends.shows) else None
        verdict.update(status="not-shown", culprit=None, range=[], message=(
            f"{ends.note}: BAD/GOOD = {e.ratio:.4f} ({ci_label(e.confidence, verdict)} {interval(e.ci_low, e.ci_high)}), "
            f"{e.noise_text()}; no commit is blamed, and no equivalence is claimed (--prove-null tests it)"))
    else:
        journal = Journal(b, profile, places)
        out = retrying("the bisection", lambda: decide.bisect_range(
            places.engines(engines) if places is not None else engines, commits, plan,
            journal, None, progress, ends=ends))
        if places is not None:
            places.release_all()
        verdict["rounds"], verdict["probes"] = out.rounds, out.probes
        verdict["runs_spent"] = out.runs
        if not out.steps:  # the budget ended before any step was searched out
            out.steps.append(decide.Step("range", b.good, None, commits[1:]))
        first = out.first_step
        verdict["skipped"] = first.skipped
        verdict["several"] = out.several
        verdict["share"] = first.share
        verdict["residual"] = out.residual
        verdict["sides"] = out.sides
        verdict["bound"] = out.bound()
        verdict["steps"] = [{"status": st.status, "last_good": st.last_good, "culprit": st.culprit,
                             "subject": _subject(profile, s, st.culprit) if st.culprit else "",
                             "share": st.share, "range": st.range, "shown": st.shown, "bounded": st.bounded,
                             "forecast": st.forecast,
                             "effect": _cmp(st.confirmation) if st.confirmation else None} for st in out.steps]
        if first.status == "range":
            verdict.update(status="range", culprit=None, range=first.range)
        else:
            verdict.update(status=first.status, culprit=first.culprit if first.status == "found" else None,
                           candidate=first.culprit, culprit_subject=_subject(profile, s, first.culprit), range=[])
            verdict["last_good"] = first.last_good
            if first.confirmation is not None:
                verdict["effect"] = {**_cmp(first.confirmation), "fresh_layouts": first.confirm_layouts,
                                     "shown": first.shown, "bounded": first.bounded,
                                     "step_ratio": math.exp(first.effect) if math.isfinite(first.effect) else None}
            i = commits.index(first.culprit)
            verdict["code"] = code_evidence(profile, s, commits[i - 1], first.culprit, say)
        if out.status == "budget":
            verdict.update(status="budget", budget_note=out.note,
                           candidates=[{"commit": c, "probability": q} for c, q in out.candidates])
    # 4. the cost, including the probes an interrupted run of this bisection made: all from the store
    by_name = {q.name: q for q in probers}
    for e in b.log:
        if e.get("by") != "measured" or e["verb"] not in ("good", "bad", "skip"):
            continue
        q = by_name.get(e.get("slot") or e.get("target"), p)  # on the machine that judged it (stored: nothing runs)
        if e.get("why") == "build":
            q.failed.add(("layouts", e["commit"]))
        elif ("layouts", e["commit"]) not in q.used:
            view = q.target.viewing(e["place"]) if e.get("place") else contextlib.nullcontext()
            try:
                with view:
                    q.groups(cos[e["commit"]], e.get("layouts", s.layouts), e.get("runs", s.runs))
            except Skip:
                pass
            except LayoutbenchError:  # a place's stored runs, read without holding it: some are missing
                if not e.get("place"):
                    raise
    verdict["cost"] = p.cost("layouts") if len(probers) == 1 else farm_cost(probers)
    verdict["cost"]["compiled_now"] = sum(q.compiled_now for q in probers)
    verdict["cost"]["ran_now"] = sum(q.ran_now for q in probers)
    verdict["budget"] = clock.summary()
    verdict["runs_per_layout"] = s.runs_choice
    # one cost figure: the one the runs per layout were chosen from, else (R given) the target's now
    verdict["costs"] = None if s.runs_choice else target_costs(p, s).to_dict()
    # 5. what a single-layout bisection would have said
    if s.shadow:
        before = (p.compiled_now, p.ran_now)
        sl = retrying("the single-layout bisection", lambda: single_layout(p, commits))
        if places is not None:
            places.release_all()
        sl["compiled_now"] = p.compiled_now - before[0]
        sl["ran_now"] = p.ran_now - before[1]
        ours = verdict.get("culprit")
        if verdict["status"] in ("uncertain", "budget") and not ours:
            ours = verdict.get("candidate") or next((c["commit"] for c in sorted(
                verdict.get("candidates") or [], key=lambda c: -c["probability"])), None)
        named = [st["culprit"] for st in verdict.get("steps") or [] if st["status"] == "found" and st["culprit"]]
        sl["agrees"] = (sl["culprit"] == ours or sl["culprit"] in named) if verdict["status"] in (
            "found", "uncertain", "budget") else (
            sl["culprit"] is None if verdict["status"] in ("noise", "not-shown") else sl["culprit"] in verdict.get("range", []))
        if sl["culprit"]:
            sl["culprit_subject"] = _subject(profile, s, sl["culprit"])
        verdict["single_layout"] = sl
    if places is not None:
        verdict["targets"] = s.targets
        verdict["places"] = places.summary([e for e in b.log if e["verb"] in ("good", "bad", "skip")])
    verdict["message"] = verdict.get("message") or summary_line(verdict)
    b.result = verdict
    b.save()
    keep(b.store, b)
    return verdict
