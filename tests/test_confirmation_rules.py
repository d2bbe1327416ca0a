"""The confirmation inside a step: either direction when the endpoints were never measured, and
looking past its cap only while it could still show twice the minimum effect.  Synthetic probers only."""

from __future__ import annotations

import math

import pytest
from _probers import Offsets
from conftest import script

from layoutbench import decide

sim = script("bench/simulate.py")


def test_a_step_whose_endpoints_were_never_measured_is_confirmed_in_either_direction():
    """GOOD and BAD adjacent and unmeasured (the window already one commit wide): no sign of the
    range's change is known, so the confirmation is two-sided and a 20% drop is found, on fresh
    seeds after the plan's K."""
    p = Offsets({"g": 0.0, "b": -0.2})
    st, probes, rounds = decide.rounds.k_step([decide.Tracked(p)], ["g", "b"], decide.Plan(), decide.MemoryJournal(),
                                        None, lambda m: None)
    assert (st.status, st.culprit, probes, rounds) == ("found", "b", 0, 0)
    assert st.effect == pytest.approx(-0.2) and p.fresh["g"][0][0] == 4


def test_a_confirmation_looks_past_its_cap_only_while_it_could_show_twice_the_minimum_effect():
    """A confirmation's looks go on to CONFIRM_FAR x its cap (the plan's cap, 40, for the first;
    CONFIRM_LATER, 64, for a later one) and stop (futility) once, carried on to the last, they would
    more likely miss a step of twice the minimum effect than show it.  Every layout alike on both
    sides (a layout sd of 0.7%): a 0.75% step (between the minimum effect and twice it) is shown
    beyond the band only past the cap (the looks there x1.25, CONFIRM_GROWTH), the first at 155 fresh
    layouts a side (of up to 160), the second at 197 (of up to 256); a null step (the third) stops at
    80, long before its last look
    (mutation: without the futility stop it goes to 256).  Without the share bound (confirm_share 1):
    tests/test_decide_near.py has the bound."""
    p = Offsets({"g": 0.0, "b": 0.0075, "g2": 0.0, "b2": 0.0075, "g3": 0.0, "b3": 0.0})
    tr, plan = decide.Tracked(p), decide.Plan(confirm_share=1.0)
    st1, _, _ = decide.rounds.k_step([tr], ["g", "b"], plan, decide.MemoryJournal(), None, lambda m: None)
    st2, _, _ = decide.rounds.k_step([tr], ["g2", "b2"], plan, decide.MemoryJournal(), None, lambda m: None)
    st3, _, _ = decide.rounds.k_step([tr], ["g3", "b3"], plan, decide.MemoryJournal(), None, lambda m: None)
    assert (st1.status, st2.status, st3.status) == ("found", "found", "uncertain")
    assert (st1.confirm_layouts, st2.confirm_layouts) == (155, 197)
    assert plan.cap < 155 <= decide.CONFIRM_FAR * plan.cap and decide.CONFIRM_LATER < 197 <= 4 * 64
    assert [k for _, k in p.fresh["b"]][7:13] == [50, 63, 79, 99, 124, 155]  # x1.25 a look past the cap of 40
    assert st3.confirm_layouts == 80 and p.fresh["b3"][-1][1] == 80


def test_a_minimum_effect_small_beside_the_noise_does_not_stop_a_confirmation_at_its_first_look():
    """At a minimum effect of 0.1% and a layout sd of 0.7% no look of the confirmation's design would
    show twice the minimum effect beyond the band with FUTILITY_POWER, so asking futility about that
    step would stop any confirmation at its first look, a 0.5% step (5x the minimum effect) too.  It asks
    about the least step the design's last look shows (decide.plan.futility_step): the step is
    confirmed, on more than the first look's layouts.  At the defaults (0.5%, a layout sd of 1.04%) that
    step is twice the minimum effect, as before."""
    p = Offsets({"g": 0.0, "b": 0.005})
    plan = decide.Plan(min_effect=0.001, confirm_share=1.0)
    st, _, _ = decide.rounds.k_step([decide.Tracked(p)], ["g", "b"], plan, decide.MemoryJournal(), None,
                                    lambda m: None)
    assert st.status == "found" and st.confirm_layouts > p.fresh["b"][0][1]
    m = math.log1p(0.001)
    assert decide.plan.futility_step(0.007 ** 2, (4, 6, 9, 160), 0.04, 1, m) > decide.SIDE_STEP * m
    # --plan's forecast of that confirmation stops where it does: past the first look, the step shown
    ns, _ = decide.confirm_looks(plan, 0.007 ** 2, 0.04, 1)
    fc = decide.confirm_forecast(math.log1p(0.005), 0.007 ** 2, ns, 0.04, m)
    assert fc["p_beyond"] > 0.9 and fc["runs"] > 2 * ns[0]
    plan = decide.Plan()
    m, s2, level = math.log1p(plan.min_effect), 0.0104 ** 2, decide.confirm_level(plan.alpha, 1)
    ns, _ = decide.confirm_looks(plan, s2, level, 1)
    assert decide.plan.futility_step(s2, ns, level, 1, m) == decide.SIDE_STEP * m
