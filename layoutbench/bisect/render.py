"""A bisection's verdict as people read it: the summary line, the steps, the sides, the intervals."""

from __future__ import annotations

import math

from .. import costs, decide, fmt, stats
from .. import farm as farmmod
from .. import verdict as verdictmod


def interval(lo, hi) -> str:
    """A ratio's interval as printed: ``0.9912…1.0131``; a one-sided one's open end (0 or infinite,
    or null in JSON read back from the store) as ``0`` below or ``∞`` above."""
    return stats.comparison.ratio_interval(lo, hi)


def missed_lines(m: dict, runs: int) -> list[str]:
    """The plan's warning that a step of twice the minimum effect is likely missed at the noise
    measured (forecast.missed_step), and what would fix it: two lines."""
    step, me = fmt.pct(m["step"]), fmt.pct(m["min_effect"])
    need = (f"about {m['needed']} layouts a side ({2 * m['needed'] * runs} runs a test at {runs} run(s) a layout) "
            "would name it 9 times in 10" if m["needed"] is not None else "no number of layouts would name it")
    fixes = []
    if m.get("max_layouts"):
        fixes.append(f"--max-layouts {m['max_layouts']}")
    if m.get("larger_min_effect"):
        fixes.append(f"--min-effect {100 * m['larger_min_effect']:g} (a step of "
                     f"{fmt.pct(decide.SIDE_STEP * m['larger_min_effect'])} is then named with probability "
                     f"{m['larger_min_effect_power']:.2f})")
    return [f"warning: at this noise a step of {step} (twice the {me} minimum effect) is likely missed: named with "
            f"probability {m['power']:.2f} (its confirmation looks at most {m['layouts']} layouts a side); {need}",
            "         what would fix it: " + (", or ".join(fixes) if fixes else "a quieter benchmark (more runs a "
                                              "layout, if run noise is much of the noise)")]


def _cmp(c: stats.Comparison) -> dict:
    return {"ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high, "confidence": c.confidence, "sided": c.sided,
            "p_value": c.p_value, "verdict": c.verdict, "layouts": c.n_layouts_a, "layouts_b": c.n_layouts_b, "runs_a": c.n_runs_a,
            "runs_b": c.n_runs_b, "layout_noise": c.layout_noise, "layout_noise_upper": c.layout_noise_upper,
            "noise_separated": c.noise_separated, "noise": c.noise_text(), "min_effect": c.min_effect,
            "explained_by_layout": c.explained_by_layout, "per_layout_ratios": c.per_layout_ratios,
            "wilcoxon_p": c.wilcoxon_p, "describe": c.describe(), "claim": c.claim(), "shown": _shown_state(c),
            "paired": c.paired, "test": c.test_text()}


def _shown_state(c: stats.Comparison) -> str:
    """What an interval shows, as decide's Step.shown words it: "beyond" (a change beyond the minimum
    effect), "change" (it excludes 1, not the band), "none"."""
    return "beyond" if c.significant else "change" if c.shown else "none"


def _claim(e: dict) -> str:
    """An effect's words: its verdict, or "shown slower but not shown to exceed the minimum effect"
    (a record stored before the claim was kept: its verdict)."""
    return e.get("claim") or e["verdict"]


def _test(e: dict) -> str:
    """Which test an effect's interval is from, in words ("pooled over 6 vs 6" or "paired over 6")."""
    if e.get("paired", True):
        return f"paired over {e['layouts']}"
    return f"{'one' if e.get('sided') else 'two'}-sided, pooled over {e['layouts']} vs {e.get('layouts_b', e['layouts'])}"


def _confirmation_said(v: dict, what: str = "the change") -> str:
    """What an unconfirmed candidate's confirmation showed: no change, or a change in a direction not
    shown to exceed the minimum effect."""
    e = v.get("effect") or {}
    me = fmt.pct((v.get("settings") or {}).get("min_effect") or decide.DEFAULT_MIN_EFFECT)
    if e.get("shown") == "change":
        return f"showed a change but not one beyond the {me} minimum effect"
    return f"did not show {what}"


def _several(v: dict) -> list[str]:
    """The lines that say the found step is not the whole story."""
    if not v.get("several"):
        return []
    found = [st for st in v.get("steps", []) if st.get("status") == "found"]
    together = sum(st["share"] for st in found if isinstance(st.get("share"), (int, float)) and math.isfinite(st["share"]))
    out = [f"several changes or a drift: the step found explains {fmt.pct(v.get('share'))} of the endpoints' change"
           if len(found) < 2 else f"several changes: the {len(found)} steps found explain {fmt.pct(together)} "
                                  "of the endpoints' change together"]
    for st in v.get("steps", []):
        if st["culprit"]:
            e = st.get("effect") or {}
            out.append(f"  step at {st['culprit'][:12]} {st.get('subject', '')} ({st['status']}; "
                       f"x{e.get('ratio', math.nan):.4f}, share {fmt.pct(st.get('share'))})")
    for rs in v.get("residual", []):  # a range beside a step shown to differ, where no step was then located
        if rs.get("unlocated", True):
            out.append(f"  another change between {rs['good'][:12]} and {rs['bad'][:12]} (x{rs['ratio']:.4f}), "
                       "not located")
    if v["settings"].get("first_only"):
        out.append("  (--first-only: stopped after one; without it every change point is searched)")
    return out


def unexplained(v: dict) -> float | None:
    """With --first-only: the share of the endpoints' change the step found leaves unexplained, when
    it is more than a fifth (the ranges beside it were not searched); else None."""
    share = v.get("share")
    if not (v.get("settings") or {}).get("first_only") or not isinstance(share, (int, float)) \
            or not math.isfinite(share) or v.get("status") not in ("found", "budget"):
        return None
    rest = 1.0 - share
    return rest if abs(rest) > 0.2 else None


def _first_only(v: dict) -> list[str]:
    rest = unexplained(v)
    if rest is None or v.get("several"):
        return []
    return [f"warning: --first-only: the step found explains {fmt.pct(v.get('share'))} of the endpoints' change; "
            f"{fmt.pct(rest)} is unexplained and the ranges beside it were not searched (without --first-only every "
            "change point is searched)"]


def _sides(v: dict) -> list[str]:
    """What the tests of the ranges beside each found step showed where they did not show a change:
    an estimate, not a proof that the range is flat."""
    out = []
    quiet = False
    for sd in v.get("sides", []):
        if sd.get("status") not in ("not-shown", "noise"):
            continue
        conf = sd.get("confidence") or 1 - sd["level"]
        said = ("no other change shown there, none ruled out" if sd["status"] == "not-shown" else
                "within layout noise there (an equivalence test passed: a change of the minimum effect is ruled out)")
        if sd.get("futile") and sd.get("reach"):  # stopped: its cap could no longer show the step it looks for
            said = (f"no other change shown there; stopped because at this noise even {sd['cap']} layouts a side "
                    f"would show only a step of {fmt.pct(sd['reach'])} or more ({100 * decide.FUTILITY_POWER:g}% power)")
        quiet = quiet or sd["status"] == "not-shown"
        out.append(f"beside:  {sd['good'][:12]}..{sd['bad'][:12]} x{sd['ratio']:.4f} "
                   f"({ci_label(conf, v)} {interval(sd['ci_low'], sd['ci_high'])}, {sd['layouts']} "
                   f"layouts a side): {said}")
    if quiet and not v["settings"].get("thorough"):
        out.append("         (beside a larger step, a second step of twice the minimum effect was missed in 7-8% of "
                   "simulated ranges at this search's price; docs/how-it-decides.md, Figure 2)")
    return out


def ci_label(conf, v: dict) -> str:
    """"95% CI" when the interval is at the level asked (--confidence), else "CI": a test's
    interval at the level it spends of the bisection's overall error budget (said once, in
    words, by :func:`_levels`), never a level like 96.9604%."""
    asked = (v.get("settings") or {}).get("confidence") or 0.95
    if isinstance(conf, (int, float)) and abs(conf - asked) < 1e-9:
        return f"{100 * asked:g}% CI"
    return "CI"


def _levels(v: dict) -> list[str]:
    """The one line that says what the intervals labelled "CI" are."""
    asked = (v.get("settings") or {}).get("confidence") or 0.95
    used = [x.get("confidence") for x in (v.get("endpoints"), v.get("effect")) if x]
    used += [sd.get("confidence") or 1 - sd["level"] for sd in v.get("sides") or []
             if sd.get("status") in ("not-shown", "noise") and (sd.get("confidence") or sd.get("level"))]
    if all(not isinstance(c, (int, float)) or abs(c - asked) < 1e-9 for c in used):
        return []
    return [f"levels:  each CI above is the one its test decided on, at the level that test spends of the "
            f"bisection's overall {100 * asked:g}% (the error budget shared over its tests and looks)"]


def _budget_after(v: dict) -> str:
    """What the budget left undone after a confirmed first bad commit."""
    others = [c for c in v.get("candidates") or [] if c["commit"] != v.get("culprit")]
    if others:
        return ("the budget ended while another step was searched: among " + ", ".join(
            f"{c['commit'][:12]} ({100 * c['probability']:.0f}%)" for c in others))
    return "the budget ended before the ranges beside it were searched out"


def summary_line(v: dict) -> str:
    if v["status"] in ("noise", "not-shown"):
        return v["message"]
    more = "; several changes or a drift" if v.get("several") else ""
    if v["status"] == "budget" and not v.get("culprit"):
        return v.get("budget_note") or "not decided at this budget"
    if v["status"] == "budget":
        more += f"; {_budget_after(v)}"
    e = v.get("effect")
    eff = ""
    if e:
        eff = (f": {v['metric']} x{e['ratio']:.4f} ({ci_label(e['confidence'], v)} {interval(e['ci_low'], e['ci_high'])},"
               f" {_claim(e)}, fresh layouts), {e['noise']}")
    if v["status"] in ("found", "budget") and v.get("culprit"):
        return f"first bad commit {v['culprit'][:12]} {v.get('culprit_subject', '')}{eff}{more}"
    if v["status"] == "uncertain":
        return (f"uncertain: the bisection points at {v['candidate'][:12]} {v.get('culprit_subject', '')} but the "
                f"confirmation on fresh layouts {_confirmation_said(v)}{eff}{more}")
    return (f"the first bad commit is one of {len(v['range'])}: " + " ".join(c[:12] for c in v["range"])
            + f" (skipped: {len(v['skipped'])}){eff}")


def _code_lines(code: dict | None) -> list[str]:
    """What symdiff said the culprit changed (the code evidence), or why it could not say."""
    lines: list[str] = []
    if code and "error" not in code:
        if code["changed_functions"]:
            top = ", ".join(f"{t['name']} ({t['status']}, {t['old_size']}→{t['new_size']} bytes)" for t in code["top"])
            lines.append(f"code:    {code['changed_functions']} function(s) changed code between the parent and the "
                         f"culprit (symdiff, layout {code['layout']}): {top}")
        else:
            lines.append(f"code:    no function's code changed between the parent and the culprit (symdiff, layout "
                         f"{code['layout']}; {code['moved_functions']} moved): the commit only moved code, its effect "
                         "is a layout effect (e.g. a different text size), not a code change")
    elif code:
        lines.append(f"code:    symdiff could not compare the parent and the culprit: {code['error']}")
    return lines


def _shadow_lines(v: dict) -> list[str]:
    """What the single-layout bisection run beside it would blame, and whether it agrees."""
    lines: list[str] = []
    sl = v.get("single_layout")
    if sl:
        said = (f"{sl['culprit'][:12]} {sl.get('culprit_subject', '')}" if sl["culprit"]
                else "no culprit (" + sl.get("note", "") + ")")
        named = [st["culprit"] for st in v.get("steps") or [] if st.get("status") == "found" and st.get("culprit")]
        if sl["agrees"] and len(named) > 1:
            head = f"agrees on one of the {len(named)} steps"
        elif sl["agrees"]:
            head = "agrees"
        elif v["status"] in ("noise", "not-shown", "range") or (v["status"] == "budget" and not v.get("culprit")):
            head = "would blame what this bisection does not"
        else:
            head = "DIFFERS"
        lines.append(f"single-layout bisection (default link, 1 run per probe, as asv find) {head}: it blames {said}"
                     f"; it took {sl['builds']} builds, {sl['runs']} runs")
    return lines


def text(v: dict) -> str:
    """The verdict for a person."""
    lines = []
    ends = v["endpoints"]
    lines.append(f"bisect {v['kernel']} {v['good'][:12]}..{v['bad'][:12]} ({v['commits']} commits), metric "
                 f"{v['metric']} on {v['target']}")
    if ends:
        lines.append(f"endpoints: BAD/GOOD = {ends['ratio']:.4f} ({ci_label(ends['confidence'], v)} "
                     f"{interval(ends['ci_low'], ends['ci_high'])}, {ends['layouts']} layouts), {ends['noise']}")
    else:
        lines.append("endpoints: not decided (the budget ended during their test)")
    if (v.get("runs_per_layout") or {}).get("text"):
        lines.append(f"runs:    {v['runs_per_layout']['text']}")
    if v["status"] == "noise":
        lines.append("verdict: within layout noise (an equivalence test passed); no commit is blamed")
        lines.append(f"         {v['message']}")
    elif v["status"] == "not-shown":
        lines.append("verdict: no change shown; no commit is blamed (and none is cleared)")
        lines.append(f"         {v['message']}")
    elif v["status"] == "budget" and not v.get("culprit"):
        lines.append(f"verdict: {v.get('budget_note') or 'not decided at this budget'}")
        if v.get("candidate"):
            lines.append(f"         no commit is blamed: {v['candidate'][:12]} {v.get('culprit_subject', '')} was not "
                         "confirmed on fresh layouts")
    elif v["status"] in ("found", "budget") and v.get("culprit"):
        lines.append(f"verdict: first bad commit {v['culprit']}")
        lines.append(f"         {v.get('culprit_subject', '')}")
        if v["status"] == "budget":
            lines.append(f"         (confirmed; {_budget_after(v)})")
    elif v["status"] == "uncertain":
        lines.append(f"verdict: uncertain: the bisection points at {v['candidate']}")
        lines.append(f"         {v.get('culprit_subject', '')}")
        lines.append(f"         but its confirmation (last good vs it, fresh layouts) {_confirmation_said(v, 'a change')}")
    else:
        lines.append(f"verdict: the first bad commit is one of these {len(v['range'])} "
                     "(the others could not be judged):")
        for c in v["range"]:
            why = next((s for s in v.get("skipped", []) if s["commit"] == c), None)
            lines.append(f"         {c[:12]}" + (f"  skipped ({why['why']}): {why['note'][:100]}" if why else ""))
    e = v.get("effect")
    if e:
        lines.append(f"effect:  {v['metric']} x{e['ratio']:.4f} vs {v['last_good'][:12]} "
                     f"({ci_label(e['confidence'], v)} {interval(e['ci_low'], e['ci_high'])}, {_claim(e)}, "
                     f"{_test(e)} fresh layouts); share of the endpoints' change "
                     f"{fmt.pct(v.get('share'))}")
        if e.get("step_ratio"):
            lines.append(f"size:    x{e['step_ratio']:.4f} over every layout measured on the pair (an estimate; the "
                         f"minimum effect {fmt.pct(v['settings'].get('min_effect') or decide.DEFAULT_MIN_EFFECT)} "
                         "is tested by the interval above, on fresh layouts only)")
        lines.append(f"layout noise there: {e['noise']}; a single layout would confuse this effect with a "
                     f"relink with probability {e['explained_by_layout']:.2f}")
    lines.extend(_several(v))
    lines.extend(_first_only(v))
    lines.extend(_sides(v))
    lines.extend(verdictmod.not_ruled_out_line(u) for u in verdictmod.not_ruled_out(v))
    lines.extend(_code_lines(v.get("code")))
    if v.get("bound"):
        lines.append(f"bound:   {v['bound']}")
    lines.extend(_levels(v))
    bd = v.get("budget") or {}
    if bd.get("runs") is not None:
        given = f"{bd['duration_text']} = {bd['runs']} runs" if bd.get("duration_text") else f"{bd['runs']} runs"
        per = (f"; {bd['seconds_per_run']:.3g} s a run ({bd['seconds_per_run_from']}): about "
               f"{costs.duration_text(bd['time_spent_estimate'])} spent" if bd.get("seconds_per_run") else "")
        lines.append(f"budget:  {given}; {bd['spent']} spent{per}")
    c = v["cost"]
    lines.append(f"cost:    {c['builds']} builds ({c['failed_builds']} failed), {c['images']} images, {c['runs']} runs "
                 f"({c['compiled_now']} compiled and {c['ran_now']} run by this command)")
    if not (v.get("runs_per_layout") or {}).get("text") and (v.get("costs") or {}).get("text"):
        lines.append(f"costs:   a layout and a run, {v['costs']['text']}")  # R given: where the costs came from
    lines.extend(farmmod.text_lines(v))
    if len(v.get("targets") or []) > 1:
        lines.append(f"farm:    {v.get('probes', 0)} probes in {v.get('rounds', 0)} rounds over {len(v['targets'])} "
                     f"machines ({', '.join(v['targets'])}); each probe judged against GOOD and BAD on its own machine")
    lines.extend(_shadow_lines(v))
    return "\n".join(lines)
