"""The plan's warning as people read it; the verdict's own text is rendered from its record
(:mod:`layoutbench.verdict.text`)."""

from __future__ import annotations


from .. import decide, fmt


def missed_lines(missed: dict, runs: int) -> list[str]:
    """The plan's warning that a step of twice the minimum effect is likely missed at the noise
    measured (forecast.missed_step), and what would fix it: two lines."""
    step, me = fmt.pct(missed["step"]), fmt.pct(missed["min_effect"])
    need = (f"about {missed['needed']} layouts a side ({2 * missed['needed'] * runs} runs a test at {runs} run(s) a "
            "layout) would name it 9 times in 10" if missed["needed"] is not None
            else "no number of layouts would name it")
    fixes = []
    if missed.get("max_layouts"):
        fixes.append(f"--max-layouts {missed['max_layouts']}")
    if missed.get("larger_min_effect"):
        fixes.append(f"--min-effect {100 * missed['larger_min_effect']:g} (a step of "
                     f"{fmt.pct(decide.SIDE_STEP * missed['larger_min_effect'])} is then named with probability "
                     f"{missed['larger_min_effect_power']:.2f})")
    return [f"warning: at this noise a step of {step} (twice the {me} minimum effect) is likely missed: named with "
            f"probability {missed['power']:.2f} (its confirmation looks at most {missed['layouts']} layouts a side); "
            f"{need}",
            "         what would fix it: " + (", or ".join(fixes) if fixes else "a quieter benchmark (more runs a "
                                              "layout, if run noise is much of the noise)")]
