"""The decisions of a layout-aware bisection, independent of how commits are measured.

Everything here works against an abstract *prober*:

* ``prober.groups(commit, k, r) -> {layout id: [values]}``: the commit's values over
  the random layouts with seeds ``seed .. seed+k-1`` (the same seeds on every commit),
  ``r`` runs each; the same call must return the same values again (the store does
  that for real builds, a memo for the simulation);
* ``prober.higher_is_better`` (known after the first ``groups`` call);
* it raises :class:`Skip` for a commit that cannot be measured (does not build).

so that the same code runs on real builds (``layoutbench.bisect``) and in simulation
(``bench/simulate.py``, ``tests/test_calibration.py``).

The model
---------
A layout's value is a **Huber-type mean of the logs of its runs** (:func:`layout_values`:
each run pulled to within 2 run-noise sd of the layout's median, then the mean; one outlier
run moves it little, and at normal run noise it is nearly as efficient as the mean).  The spread of these per-layout values around their commit's mean is the layout
noise (plus run noise / R); it is a property of the benchmark and the build, so it is
**pooled over every commit measured** (:class:`Pool`: sum of (n_c - 1) s_c^2 over
commits, as many degrees of freedom as layouts measured minus commits) instead of being
estimated afresh from K-1 degrees of freedom in each test.  A difference of two commits'
means has variance s^2 (1/n_a + 1/n_b) (the pooled test, :func:`ztest`: the unpaired form,
conservative while the same seeds make the sides positively correlated or independent).
With ``plan.paired`` (``--paired``; off by default, on for a profile with ``[bisect] paired = true``) the endpoints and the
confirmation also read the **paired** test over the seeds both commits have (:func:`paired`:
the mean of the per-seed differences, se = their sd / sqrt(n), n - 1 degrees of freedom): the
same seed gives neighbouring commits nearly the same layout, so the differences cancel the
layout effect the two share.  Each test runs at half the level (Bonferroni: valid whatever
the correlation); a change, a confirmation or an equivalence is shown when either shows it,
and what is printed is the test that showed it (both: the paired one; neither: the pooled
one).  Futility stops only when both tests would more likely miss the step than show it.
Pairing changes the variance only, never what is estimated: the mean of the differences is
the difference of the layout-averaged means.

Error control: tests built for optional stopping
------------------------------------------------
The endpoints, the confirmations and the side tests are **group-sequential** tests: their looks
(K, 1.5K, ... layouts a side) are fixed in advance and a constant (Pocock-type) z boundary over
them (:func:`plan.gs_boundary`, by simulated Brownian paths) keeps the chance of ever rejecting a
true null, at any look, at most the test's level; z = difference / se goes through the t
distribution while the pooled variance has few degrees of freedom.  Stopping early without
rejecting (futility, Wald's rule for side tests) keeps the level.  What is printed is the test's
own: its repeated confidence interval (:meth:`model.ZTest.interval`) and repeated p-value
(:meth:`model.ZTest.gs_p`: the smallest level at which that interval excludes the null), pooled
(unpaired) over each side's layouts, one-sided where the test was.  The probes are judged by a
sequential probability ratio test beside two always-valid normal-mixture SPRTs (mSPRT; Robbins;
Johari, Pekelis and Walsh), which need no planned looks.

* **Endpoints** (level alpha): a range without a code change is blamed only if this test
  rejects (probability <= alpha).  A change also needs an estimate of at least
  ``min_effect``.  When the test has looked ``plan.test_layouts`` layouts far without
  showing a change (at a noisy benchmark further, up to ``plan.noise_top``: until a change of
  twice ``min_effect`` would be shown with 90% power, :func:`noise_cap`, or the estimate is
  below ``min_effect`` by 1.28 se) the status is ``not-shown``: "no change of at least X shown; about N
  more layouts would rule it out" -- *not* "within layout noise".  That equivalence claim
  is made only when an equivalence test passes (status ``noise``): two one-sided tests at
  alpha, group-sequential over the same looks (their 1 - 2 alpha interval inside +-min_effect);
  the endpoints look further for it (up to ``max_layouts``) only with ``plan.prove_null``.
* **Probes**: probe j of the whole bisection (every probe counts, an uncertain one too) gets
  level alpha_j, sum over all j <= alpha (:func:`probe_level`; a level, not a bound: its SPRT plugs
  in GOOD's and BAD's measured means as if they were known -- a misjudged probe costs runs: its
  candidate must still pass a confirmation).  It runs a sequential
  probability ratio test (Wald) of "like GOOD" against "like BAD" (the two endpoint levels,
  pooled variance) beside two mSPRTs "differs from GOOD" and "differs from BAD".  A probe
  shown to differ from GOOD is *bad* (never good); one that also differs from BAD holds a
  change on both sides (*between*: marked bad, the range after it is searched again).  A probe
  at the level between two equal steps lies midway between GOOD and BAD, so the SPRT may put it
  on GOOD's side at 3-4 layouts, and the search then ends between two commits at the same level
  (15 of 60 histories of two 2σL steps, 16 commits): this is bounded, not prevented -- the
  confirmation names such a pair with probability <= its level, and the side tests beside it
  search on (tests/test_calibration.py: none named, both steps found).
* **Confirmation** of each named commit: last good against culprit on **fresh** layouts
  (seeds beyond every seed any decision used on any commit; a prober with
  ``groups_after(commit, first, k, r)`` measures only those, else the seeds before are measured
  too), a one-sided group-sequential test in the direction of the range's change at
  level :func:`plan.confirm_level` (0.8 alpha for the first, the rest as alpha_i for the later ones:
  sum <= alpha) of the null "the step is at most
  ``min_effect``": confirmed when the test's own interval lies beyond the band +-min_effect,
  so a commit whose own step is at most the minimum effect is named with probability <= alpha
  over the whole bisection, on evidence the decisions did not select.  That interval is the
  one printed beside the effect.  It looks up to CONFIRM_FAR x its cap, at most ``plan.confirm_share``
  of the bisection's runs (:func:`share_layouts`), and stops sooner once it would more likely miss a
  step of twice the minimum effect than show it (of the least step its last look shows with
  FUTILITY_POWER when that is more: a minimum effect small beside the noise, :func:`futility_step`).  A
  candidate whose search estimate is within NEAR x the minimum effect is said before its
  confirmation, with :func:`confirm_forecast`; a confirmation that shows a change but not one
  beyond the minimum effect leaves its step ``shown`` = "change".
* **Every change point**: after a confirmed step, the sub-ranges before and after it are
  tested like endpoints (levels alpha_i, sum <= alpha); a sub-range shown to differ is
  bisected in turn.  Each starts from the layouts its ends already have and looks further
  only while the commits measured in it (its ends, the probes in it, the confirmation's fresh
  layouts) make a step of twice the minimum effect at least ``SIDE_A`` times as likely as none
  (:func:`side_llr`; an always-valid test may stop on any rule);
  the sub-range that suggests one more is tested first, at the larger level.  A later
  confirmation (a second step) has the cap ``CONFIRM_LATER``.  ``plan.first_only``
  stops after the first step.
* ``plan.budget``: a cap on the runs; when it is reached the bisection stops with the best
  verdict it has (status ``budget``: the candidates left and the probability that the step
  is in each, from the probes' evidence).

The rooms
---------
:mod:`.plan` the plan, its levels and the tuning constants; :mod:`.model` the pooled model and its
z tests; :mod:`.tracked` measuring through a prober (seeds, pool, budget); :mod:`.sequential` the
endpoints, a probe and the confirmation; :mod:`.outcome` what a bisection found and its journal;
:mod:`.search` the search for every change point; :mod:`.rounds` k probes a round on k probers;
:mod:`.power` what a test could show or miss; :mod:`.baseline` the single-layout bisection.  The
names below are this package's interface.  A tuning constant is read by the module that holds the
code using it, so code that changes one for an experiment sets it there (``decide.sequential.FUTILITY``),
not here.
"""

from __future__ import annotations

from . import baseline, model, outcome, plan, power, rounds, search, sequential, tracked  # noqa: F401
from .baseline import single_layout
from .model import (
    CLIP,
    CLIP_LAYOUT,
    SCALE_VALUES,
    SEED_CORR_MAX,
    Looks,
    Pool,
    ZTest,
    band_verdict,
    clipped,
    dvalues,
    layout_scale,
    layout_values,
    layouts_to_rule_out,
    paired,
    run_scale,
    seed_corr,
    ztest,
    zvalues,
)
from .outcome import MemoryJournal, Outcome, Step
from .plan import (
    CONFIRM_FAR,
    CONFIRM_GROWTH,
    CONFIRM_LATER,
    CONFIRM_SHARE,
    DEFAULT_MIN_EFFECT,
    FUTILITY,
    FUTILITY_POWER,
    GROWTH,
    LOOKS_DIFFERENT,
    MIN_LAYOUTS,
    NEAR,
    NOISE_EFFECT,
    NOISE_POWER,
    RESIDUAL_FAR,
    SIDE_A,
    SIDE_FIRST,
    SIDE_STEP,
    SPENDING,
    THOROUGH_A,
    THOROUGH_FIRST,
    OutOfBudget,
    Plan,
    Skip,
    confirm_looks,
    extended,
    confirm_level,
    family_level,
    futility_step,
    gs_boundary,
    noise_cap,
    planned_probes,
    probe_level,
    rounds_needed,
    schedule,
    share_layouts,
    split,
)
from .power import confirm_forecast, step_power
from .search import bisect_range, posterior, side_evidence, side_llr
from .sequential import (
    Confirmed,
    Ends,
    Judgement,
    SideStop,
    change,
    conditional_power,
    confirm,
    endpoints,
    judge_probe,
    pairing_hint,
    search_estimate,
    shown_of,
    shows_at,
)
from .tracked import Tracked, groups_after

__all__ = [
    "CONFIRM_FAR",
    "CONFIRM_GROWTH",
    "CONFIRM_LATER",
    "CONFIRM_SHARE",
    "NEAR",
    "confirm_forecast",
    "confirm_looks",
    "share_layouts",
    "shown_of",
    "search_estimate",
    "Confirmed",
    "DEFAULT_MIN_EFFECT",
    "FUTILITY",
    "FUTILITY_POWER",
    "GROWTH",
    "LOOKS_DIFFERENT",
    "MIN_LAYOUTS",
    "NOISE_EFFECT",
    "NOISE_POWER",
    "OutOfBudget",
    "Plan",
    "RESIDUAL_FAR",
    "SIDE_A",
    "SIDE_FIRST",
    "SIDE_STEP",
    "SPENDING",
    "Skip",
    "THOROUGH_A",
    "THOROUGH_FIRST",
    "extended",
    "confirm_level",
    "family_level",
    "futility_step",
    "gs_boundary",
    "noise_cap",
    "planned_probes",
    "probe_level",
    "rounds_needed",
    "schedule",
    "split",
    "CLIP",
    "CLIP_LAYOUT",
    "Looks",
    "Pool",
    "SCALE_VALUES",
    "ZTest",
    "band_verdict",
    "clipped",
    "dvalues",
    "layout_scale",
    "layout_values",
    "layouts_to_rule_out",
    "paired",
    "seed_corr",
    "SEED_CORR_MAX",
    "pairing_hint",
    "run_scale",
    "ztest",
    "zvalues",
    "Tracked",
    "groups_after",
    "Ends",
    "Judgement",
    "SideStop",
    "change",
    "conditional_power",
    "confirm",
    "endpoints",
    "judge_probe",
    "shows_at",
    "MemoryJournal",
    "Outcome",
    "Step",
    "bisect_range",
    "posterior",
    "side_evidence",
    "side_llr",
    "step_power",
    "single_layout",
]
