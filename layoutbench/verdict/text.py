"""A bisection's verdict as people read it (the terminal text, its summary line, the closing lines of
``bisect log``), rendered from the typed record (:class:`.record.BisectionRecord`)."""

from __future__ import annotations

import math

from .. import costs, fmt
from ..decide.plan import FUTILITY_POWER
from ..stats.comparison import ratio_interval
from .record import BisectionRecord as Rec
from .record import Effect, NotRuledOut, not_ruled_out


def interval(lo, hi) -> str:
    """A ratio's interval as printed: ``0.9912…1.0131``; a one-sided one's open end (0 or infinite,
    or null in JSON read back from the store) as ``0`` below or ``∞`` above."""
    return ratio_interval(lo, hi)


def ci_label(conf, record: Rec) -> str:
    """"95% CI" when the interval is at the level asked (--confidence), else "CI": a test's
    interval at the level it spends of the bisection's overall error budget (said once, in
    words, by :func:`levels`), never a level like 96.9604%."""
    asked = record.confidence
    if isinstance(conf, (int, float)) and abs(conf - asked) < 1e-9:
        return f"{100 * asked:g}% CI"
    return "CI"


def confirmation_said(record: Rec, what: str = "the change") -> str:
    """What an unconfirmed candidate's confirmation showed: no change, or a change in a direction not
    shown to exceed the minimum effect."""
    if record.effect is not None and record.effect.shown == "change":
        return f"showed a change but not one beyond the {fmt.pct(record.min_effect)} minimum effect"
    return f"did not show {what}"


def budget_after(record: Rec) -> str:
    """What the budget left undone after a confirmed first bad commit."""
    others = [c for c in record.candidates or [] if c.commit != record.culprit]
    if others:
        return ("the budget ended while another step was searched: among " + ", ".join(
            f"{c.commit[:12]} ({100 * c.probability:.0f}%)" for c in others))
    return "the budget ended before the ranges beside it were searched out"


def effect_words(effect: Effect, record: Rec) -> str:
    """``x1.0316 (95% CI 1.02…1.04, slower by at least 0.50%, fresh layouts), <noise>``."""
    shown = interval(effect.ci_low, effect.ci_high)
    return (f"{record.metric} x{effect.ratio:.4f} ({ci_label(effect.confidence, record)} {shown}, "
            f"{effect.words}, fresh layouts), {effect.noise}")


def summary_line(record: Rec) -> str:
    """The verdict in one line (the JSON's ``message``)."""
    if record.status in ("noise", "not-shown"):
        return record.message
    more = "; several changes or a drift" if record.several else ""
    if record.status == "budget" and not record.culprit:
        return record.budget_note or "not decided at this budget"
    if record.status == "budget":
        more += f"; {budget_after(record)}"
    eff = f": {effect_words(record.effect, record)}" if record.effect is not None else ""
    subject = record.culprit_subject or ""
    if record.status in ("found", "budget") and record.culprit:
        return f"first bad commit {record.culprit[:12]} {subject}{eff}{more}"
    if record.status == "uncertain":
        return (f"uncertain: the bisection points at {(record.candidate or '')[:12]} {subject} but the "
                f"confirmation on fresh layouts {confirmation_said(record)}{eff}{more}")
    return (f"the first bad commit is one of {len(record.range)}: " + " ".join(c[:12] for c in record.range)
            + f" (skipped: {len(record.skipped or [])}){eff}")


def several_lines(record: Rec) -> list[str]:
    """The lines that say the found step is not the whole story."""
    if not record.several:
        return []
    found = record.found
    together = sum(st.share for st in found if isinstance(st.share, (int, float)) and math.isfinite(st.share))
    out = [f"several changes or a drift: the step found explains {fmt.pct(record.share)} of the endpoints' change"
           if len(found) < 2 else f"several changes: the {len(found)} steps found explain {fmt.pct(together)} "
                                  "of the endpoints' change together"]
    for st in record.steps or []:
        if st.culprit:
            ratio = st.effect.ratio if st.effect is not None else math.nan
            out.append(f"  step at {st.culprit[:12]} {st.subject} ({st.status}; "
                       f"x{ratio:.4f}, share {fmt.pct(st.share)})")
    for rs in record.residual or []:  # a range beside a step shown to differ, where no step was then located
        if rs.unlocated is None or rs.unlocated:
            out.append(f"  another change between {rs.good[:12]} and {rs.bad[:12]} (x{rs.ratio:.4f}), "
                       "not located")
    if record.first_only:
        out.append("  (--first-only: stopped after one; without it every change point is searched)")
    return out


def first_only_lines(record: Rec) -> list[str]:
    rest = record.unexplained()
    if rest is None or record.several:
        return []
    return [f"warning: --first-only: the step found explains {fmt.pct(record.share)} of the endpoints' change; "
            f"{fmt.pct(rest)} is unexplained and the ranges beside it were not searched (without --first-only every "
            "change point is searched)"]


def side_lines(record: Rec) -> list[str]:
    """What the tests of the ranges beside each found step showed where they did not show a change:
    an estimate, not a proof that the range is flat."""
    out = []
    quiet = False
    for sd in record.sides or []:
        if sd.status not in ("not-shown", "noise"):
            continue
        said = ("no other change shown there, none ruled out" if sd.status == "not-shown" else
                "within layout noise there (an equivalence test passed: a change of the minimum effect is ruled out)")
        if sd.futile and sd.reach:  # stopped: its cap could no longer show the step it looks for
            said = (f"no other change shown there; stopped because at this noise even {sd.cap} layouts a side "
                    f"would show only a step of {fmt.pct(sd.reach)} or more ({100 * FUTILITY_POWER:g}% power)")
        quiet = quiet or sd.status == "not-shown"
        out.append(f"beside:  {sd.good[:12]}..{sd.bad[:12]} x{sd.ratio:.4f} "
                   f"({ci_label(sd.conf, record)} {interval(sd.ci_low, sd.ci_high)}, {sd.layouts} "
                   f"layouts a side): {said}")
    if quiet and not record.thorough:
        out.append("         (beside a larger step, a second step of twice the minimum effect was missed in 7-8% of "
                   "simulated ranges at this search's price; docs/how-it-decides.md, Figure 2)")
    return out


def levels_lines(record: Rec) -> list[str]:
    """The one line that says what the intervals labelled "CI" are."""
    asked = record.confidence
    used = [x.confidence for x in (record.endpoints, record.effect) if x is not None]
    used += [sd.conf for sd in record.sides or [] if sd.status in ("not-shown", "noise") and sd.conf]
    if all(not isinstance(c, (int, float)) or abs(c - asked) < 1e-9 for c in used):
        return []
    return [f"levels:  each CI above is the one its test decided on, at the level that test spends of the "
            f"bisection's overall {100 * asked:g}% (the error budget shared over its tests and looks)"]


def code_lines(record: Rec) -> list[str]:
    """What symdiff said the culprit changed (the code evidence), or why it could not say."""
    code = record.code
    if code is None:
        return []
    if code.error is not None:
        return [f"code:    symdiff could not compare the parent and the culprit: {code.error}"]
    if code.changed_functions:
        top = ", ".join(f"{t['name']} ({t['status']}, {t['old_size']}→{t['new_size']} bytes)" for t in code.top or [])
        return [f"code:    {code.changed_functions} function(s) changed code between the parent and the "
                f"culprit (symdiff, layout {code.layout}): {top}"]
    return [f"code:    no function's code changed between the parent and the culprit (symdiff, layout "
            f"{code.layout}; {code.moved_functions} moved): the commit only moved code, its effect "
            "is a layout effect (e.g. a different text size), not a code change"]


def shadow_lines(record: Rec) -> list[str]:
    """What the single-layout bisection run beside it would blame, and whether it agrees."""
    sl = record.single_layout
    if sl is None:
        return []
    said = f"{sl.culprit[:12]} {sl.culprit_subject or ''}" if sl.culprit else "no culprit (" + (sl.note or "") + ")"
    named = [st.culprit for st in record.found]
    if sl.agrees and len(named) > 1:
        head = f"agrees on one of the {len(named)} steps"
    elif sl.agrees:
        head = "agrees"
    elif record.status in ("noise", "not-shown", "range") or (record.status == "budget" and not record.culprit):
        head = "would blame what this bisection does not"
    else:
        head = "DIFFERS"
    return [f"single-layout bisection (default link, 1 run per probe, as asv find) {head}: it blames {said}"
            f"; it took {sl.builds} builds, {sl.runs} runs"]


def verdict_lines(record: Rec) -> list[str]:
    """The ``verdict:`` lines: what was decided, in words."""
    subject = f"         {record.culprit_subject or ''}"
    if record.status == "noise":
        return ["verdict: within layout noise (an equivalence test passed); no commit is blamed",
                f"         {record.message}"]
    if record.status == "not-shown":
        return ["verdict: no change shown; no commit is blamed (and none is cleared)", f"         {record.message}"]
    if record.status == "budget" and not record.culprit:
        lines = [f"verdict: {record.budget_note or 'not decided at this budget'}"]
        if record.candidate:
            lines.append(f"         no commit is blamed: {record.candidate[:12]} {record.culprit_subject or ''} was "
                         f"not "
                         "confirmed on fresh layouts")
        return lines
    if record.status in ("found", "budget") and record.culprit:
        lines = [f"verdict: first bad commit {record.culprit}", subject]
        if record.status == "budget":
            lines.append(f"         (confirmed; {budget_after(record)})")
        return lines
    if record.status == "uncertain":
        return [f"verdict: uncertain: the bisection points at {record.candidate}", subject,
                f"         but its confirmation (last good vs it, fresh layouts) "
                f"{confirmation_said(record, 'a change')}"]
    lines = [f"verdict: the first bad commit is one of these {len(record.range)} (the others could not be judged):"]
    for c in record.range:
        why = next((s for s in record.skipped or [] if s["commit"] == c), None)
        lines.append(f"         {c[:12]}" + (f"  skipped ({why['why']}): {why['note'][:100]}" if why else ""))
    return lines


def effect_lines(record: Rec) -> list[str]:
    """The first step's own effect, its size over every layout and the layout noise there."""
    e = record.effect
    if e is None:
        return []
    lines = [f"effect:  {record.metric} x{e.ratio:.4f} vs {(record.last_good or '')[:12]} "
             f"({ci_label(e.confidence, record)} {interval(e.ci_low, e.ci_high)}, {e.words}, "
             f"{e.test_words} fresh layouts); share of the endpoints' change {fmt.pct(record.share)}"]
    if e.step_ratio:
        lines.append(f"size:    x{e.step_ratio:.4f} over every layout measured on the pair (an estimate; the "
                     f"minimum effect {fmt.pct(record.min_effect)} is tested by the interval above, on fresh layouts "
                     f"only)")
    lines.append(f"layout noise there: {e.noise}; a single layout would confuse this effect with a "
                 f"relink with probability {e.explained_by_layout:.2f}")
    return lines


def cost_lines(record: Rec) -> list[str]:
    """The budget, the cost, where the costs came from, the farm and the places."""
    lines = []
    bd = record.budget
    if bd is not None and bd.runs is not None:
        given = f"{bd.duration_text} = {bd.runs} runs" if bd.duration_text else f"{bd.runs} runs"
        per = (f"; {bd.seconds_per_run:.3g} s a run ({bd.seconds_per_run_from}): about "
               f"{costs.duration_text(bd.time_spent_estimate)} spent" if bd.seconds_per_run else "")
        lines.append(f"budget:  {given}; {bd.spent} spent{per}")
    c = record.cost
    lines.append(f"cost:    {c.builds} builds ({c.failed_builds} failed), {c.images} images, {c.runs} runs "
                 f"({c.compiled_now} compiled and {c.ran_now} run by this command"
                 + (f"; {c.copied_now} not run again: a run of the same image file, whose counts a second run "
                    f"repeats" if c.copied_now else "") + ")")
    chose = (record.runs_per_layout or {}).get("text")
    if not chose and (record.costs or {}).get("text"):
        lines.append(f"costs:   a layout and a run, {record.costs['text']}")  # R given: where the costs came from
    lines.extend(place_lines(record))
    if len(record.targets) > 1:
        lines.append(f"farm:    {record.probes} probes in {record.rounds} rounds over {len(record.targets)} "
                     f"machines ({', '.join(record.targets)}); each probe judged against GOOD and BAD on its own "
                     f"machine")
    return lines


def place_lines(record: Rec) -> list[str]:
    """The verdict's lines about labgrid places."""
    pl = record.places
    if not pl:
        return []
    per = ", ".join(f"{p} {d['probes']} probe(s)" for p, d in sorted(pl["per_place"].items())) or "none"
    out = [f"places:  {record.probes} probes in {record.rounds} rounds over labgrid places ({per}); "
           f"each probe judged against GOOD and BAD on its own place"]
    for p, why in sorted(pl["lost"].items()):
        out.append(f"         lost {p}: {why}")
    return out


def not_ruled_out_line(missed: NotRuledOut) -> str:
    """One entry of what a test could not see at this noise, as the terminal text and the report print it."""
    what = "this test" if missed.test == "endpoints" else "this side test"
    return (f"not ruled out: a {'change' if missed.test == 'endpoints' else 'step'} below {100 * missed.below:.2f}% in "
            f"{missed.good[:12]}..{missed.bad[:12]} (the smallest {what}, stopped at {missed.layouts} layouts a side, "
            f"shows {round(10 * missed.power):g} times in 10 at this noise)")


def text(record: Rec) -> str:
    """The verdict for a person."""
    ends = record.endpoints
    lines = [f"bisect {record.kernel} {record.good[:12]}..{record.bad[:12]} ({record.commits} commits), metric "
             f"{record.metric} on {record.target}"]
    if ends is not None:
        lines.append(f"endpoints: BAD/GOOD = {ends.ratio:.4f} ({ci_label(ends.confidence, record)} "
                     f"{interval(ends.ci_low, ends.ci_high)}, {ends.layouts} layouts), {ends.noise}")
    else:
        lines.append("endpoints: not decided (the budget ended during their test)")
    if (record.runs_per_layout or {}).get("text"):
        lines.append(f"runs:    {record.runs_per_layout['text']}")
    lines += verdict_lines(record) + effect_lines(record) + several_lines(record) + first_only_lines(record)
    lines += side_lines(record)
    lines += [not_ruled_out_line(u) for u in not_ruled_out(record)] + code_lines(record)
    if record.bound:
        lines.append(f"bound:   {record.bound}")
    lines += levels_lines(record) + cost_lines(record) + shadow_lines(record)
    return "\n".join(lines)


def log_lines(record: Rec) -> list[str]:
    """The closing comments of ``bisect log``: what the bisection decided, then every other change
    point confirmed (a later step may be confirmed when the first is uncertain, or the budget ended)."""
    others = [f"# first bad commit of another step: [{st.culprit}] {st.subject}" for st in record.found
              if st.culprit != record.culprit]
    return log_status_lines(record) + others


def log_status_lines(record: Rec) -> list[str]:
    """The line of ``bisect log`` that says the status."""
    if record.status == "found":
        return [f"# first bad commit: [{record.culprit}] {record.culprit_subject or ''}"]
    if record.status == "uncertain":
        return [f"# uncertain: points at [{record.candidate}], not confirmed on fresh layouts"]
    if record.status == "range":
        return ["# only skipped commits left to test; the first bad commit is one of: "
                + " ".join(c[:12] for c in record.range)]
    if record.status == "noise":
        return ["# GOOD and BAD do not differ beyond layout noise: nothing to bisect"]
    if record.status == "not-shown":
        return ["# no change shown between GOOD and BAD: no commit is blamed (and none is cleared)"]
    if record.status == "budget" and record.culprit:
        return [f"# first bad commit: [{record.culprit}] {record.culprit_subject or ''} ({budget_after(record)})"]
    if record.status == "budget":
        return [f"# {record.budget_note or 'not decided at this budget'}"]
    return []
