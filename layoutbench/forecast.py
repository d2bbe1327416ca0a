"""What a bisection will likely cost, from the decision code itself.

:func:`expected_cost` runs :func:`decide.bisect_range` -- unchanged, every phase: the endpoints,
the probes, the confirmation, the tests of the ranges beside the step -- on ``HISTORIES``
synthetic histories of the range's length, at the layout noise and the change the endpoints'
first look measured, and takes the median of the runs each spent (in all and per phase).  A
history (:class:`Synthetic`) has one code step of that change, at a place spread evenly over the
range from history to history; a share ``LAYOUT_ONLY`` of the other commits only move code,
and every such commit and the step draw the layout effects again (a layout's value is the
commit's level plus a layout effect of sd ``noise``; its runs agree: ``noise`` is the spread of
a layout's value, run noise included).  With a seed correlation ``corr`` (a ``--paired`` plan: how much
of a seed's layout effect the endpoints share, :func:`decide.seed_corr`), a seed's effect is
sqrt(corr) x a part it keeps at every commit plus sqrt(1 - corr) x its epoch's own draw: any two
epochs share ``corr``, what the endpoints measured (docs/guide/bisecting.md: this plan beside the
actual runs of histories whose neighbours share more than their ends, python3 -m bench.simulate --layout-corr).
The draws are seeded: the same inputs give the same plan.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import decide

HISTORIES = 9  #: simulated bisections the plan takes the median of
LAYOUT_ONLY = 0.4  #: the share of commits that only move code (bench/simulate.py's histories)
#: the phases, by the line of decide.bisect_range that starts each (the runs after it are its own)
PHASES = (("endpoints: ", "endpoints"), ("probe ", "probes"), ("confirmation ", "confirmation"),
          ("side test ", "sides"))


class Synthetic:
    """A prober over a synthetic history: ``groups``/``groups_after`` as decide expects them."""

    higher_is_better = False

    def __init__(self, n_commits: int, step: float, at: int, noise: float, seed: int, corr: float = 0.0):
        rng = np.random.default_rng(seed)
        self.names = [f"c{i}" for i in range(n_commits)]
        self.level = np.where(np.arange(n_commits) >= at, step, 0.0)
        moved = (rng.random(n_commits) < LAYOUT_ONLY) | (np.arange(n_commits) == at)
        moved[0] = False
        self.epoch = np.cumsum(moved)
        self.noise, self.seed, self.corr = noise, seed, corr
        self._effects: dict = {}

    def _draws(self, key: tuple, upto: int) -> np.ndarray:
        x = self._effects.get(key)
        if x is None or x.size < upto:
            size = max(upto, 256, 0 if x is None else 2 * x.size)
            x = np.random.default_rng((self.seed, *key)).normal(0.0, self.noise, size)
            self._effects[key] = x
        return x

    def _effect(self, epoch: int, upto: int) -> np.ndarray:
        own = self._draws((int(epoch),), upto)
        if not self.corr:
            return own
        kept = self._draws((0, 0), upto)[:own.size]  # the part a seed keeps at every commit
        return math.sqrt(self.corr) * kept + math.sqrt(1.0 - self.corr) * own

    def groups_after(self, commit: str, first: int, k: int, r: int) -> dict:
        i = int(commit[1:])
        e = self._effect(self.epoch[i], first + k)
        return {f"random:{s}": [math.exp(self.level[i] + e[s - 1])] * r for s in range(first + 1, first + k + 1)}

    def groups(self, commit: str, k: int, r: int) -> dict:
        return self.groups_after(commit, 0, k, r)


def one(n_commits: int, step: float, noise: float, plan: decide.Plan, at: int, seed: int, corr: float = 0.0) -> dict:
    """The runs one simulated bisection spent, in all and per phase."""
    p = Synthetic(n_commits, step, at, noise, seed, corr)
    tr = decide.Tracked(p)
    spent = dict.fromkeys([name for _, name in PHASES], 0)
    state = {"phase": "endpoints", "at": 0}

    def say(m: str) -> None:
        spent[state["phase"]] += tr.ledger.spent - state["at"]
        state["at"] = tr.ledger.spent
        state["phase"] = next((name for prefix, name in PHASES if m.startswith(prefix)), state["phase"])

    out = decide.bisect_range(tr, p.names, plan, decide.MemoryJournal(), say=say)
    spent[state["phase"]] += tr.ledger.spent - state["at"]
    first = out.ends.layouts if out.ends is not None else 0
    conf = out.steps[0].confirm_layouts if out.steps else 0
    return {"runs": tr.ledger.spent, "phases": spent, "endpoint_layouts": first, "probes": out.probes,
            "confirm_layouts": conf, "named": out.culprit == p.names[at]}


@functools.lru_cache(maxsize=256)
def _cost(n_commits: int, step: float, noise: float, plan: decide.Plan, corr: float) -> dict:
    n = max(2, n_commits)
    rows = [one(n, step, noise, plan, at=1 + (h * (n - 1)) // HISTORIES if n > 2 else 1, seed=20_261_127 + h,
                corr=corr)
            for h in range(HISTORIES)]

    def med(xs) -> int:
        return int(math.ceil(float(np.median(xs))))

    phases = {name: med([r["phases"][name] for r in rows]) for _, name in PHASES}
    probes = med([r["probes"] for r in rows])
    return {"runs": med([r["runs"] for r in rows]), "phase_runs": phases, "endpoint_layouts":
            med([r["endpoint_layouts"] for r in rows]), "probes": probes,
            "probe_layouts": int(math.ceil(phases["probes"] / max(1, probes) / max(1, plan.runs))),
            "confirm_layouts": med([r["confirm_layouts"] for r in rows]),
            "side_layouts": int(math.ceil(phases["sides"] / max(1, plan.runs))), "histories": HISTORIES,
            "named": sum(bool(r["named"]) for r in rows)}


def expected_cost(n_commits: int, ratio: float, noise: float, plan: decide.Plan, corr: float = 0.0) -> dict:
    """What a bisection of ``n_commits`` (GOOD and BAD included) will likely cost when BAD/GOOD =
    ``ratio`` and a layout's value has relative sd ``noise`` (as the endpoints' first look measured
    them): the median over HISTORIES simulated bisections (see the module) of the runs in all
    (``runs``) and per phase (``phase_runs``: endpoints, probes, confirmation, sides), the layouts
    a side the endpoints' test stopped at, the probes, the runs a probe took (``probe_layouts``, in
    layouts at ``plan.runs``), the confirmation's fresh layouts a side, the side tests' runs (in
    layouts), the step in units of the noise, and in how many of the HISTORIES the step was named
    (``named``).  ``corr``: a seed's layout correlation across commits (:func:`decide.seed_corr`), read only
    by a ``plan.paired`` plan (the pooled test does not see it), and said back as ``seed_corr``."""
    step = math.log(ratio) if ratio > 0 and math.isfinite(ratio) else 0.0
    d = abs(step) / noise if noise > 0 else math.inf
    if not (noise > 0 and math.isfinite(noise)):
        noise = 1e-4  # no spread measured (a deterministic target on identical layouts): a tiny one
    # (rounded: a cache key; the plan does not change at the fifth significant digit)
    # (a budget would cap the simulated runs: the plan says what the bisection needs, then whether it fits)
    plan = dataclasses.replace(plan, budget=None)
    corr = min(decide.SEED_CORR_MAX, max(0.0, float(f"{corr:.3g}"))) if plan.paired and math.isfinite(corr) else 0.0
    out = dict(_cost(int(n_commits), float(f"{step:.5g}"), float(f"{noise:.5g}"), plan, corr))
    out["phase_runs"] = dict(out["phase_runs"])
    out["step_in_noise_units"] = d
    out["seed_corr"] = corr
    return out


def after_endpoints(n_commits: int, status: str, spent: int, ratio: float, noise: float, plan: decide.Plan,
                    corr: float = 0.0) -> dict:
    """What the whole bisection will likely cost once its endpoints' test has decided (``status``, with
    ``spent`` runs measured so far, and BAD/GOOD = ``ratio`` and the layout noise ``noise`` as that test
    measured them): ``spent`` when it showed no change (the bisection ends there); else ``spent`` plus the
    medians of the phases after the endpoints (probes, confirmation, side tests) of :func:`expected_cost`
    at that change and noise (``after``).  The endpoints' first look (4 layouts a side, what ``--plan``
    measures) cannot tell a step near the minimum effect from none; their test's decision, tens of
    layouts a side, can (python3 -m bench.simulate --forecast-only prints both forecasts beside the actual runs)."""
    if status != "differs":
        return {"runs": int(spent), "endpoints": int(spent), "after": 0, "status": status}
    c = expected_cost(n_commits, ratio, noise, plan, corr)
    after = sum(c["phase_runs"][k] for k in ("probes", "confirmation", "sides"))
    return {**c, "runs": int(spent) + after, "endpoints": int(spent), "after": after, "status": status}


#: the first look's forecast stands when the likely costs of a step one standard error either side of its
#: estimate are within this factor of each other (1.3 squared: each within about 30% of the middle one)
SETTLED = 1.69


def spread(n_commits: int, log_ratio: float, se: float, noise: float, plan: decide.Plan,
           corr: float = 0.0) -> tuple[int, int]:
    """The likely runs (:func:`expected_cost`) of a step one standard error ``se`` (log) below and above
    ``log_ratio``, the least first."""
    if not (math.isfinite(se) and se > 0):
        se = 0.0
    runs = [expected_cost(n_commits, math.exp(log_ratio + x), noise, plan, corr)["runs"] for x in (-se, se)]
    return min(runs), max(runs)


def settled(mid: int, lo: int, hi: int) -> bool:
    """Do the likely costs at the estimate (``mid``) and one standard error either side agree (SETTLED)?"""
    least = max(1, min(mid, lo, hi))
    return max(mid, lo, hi) <= SETTLED * least


def plan_look(tr, good: str, bad: str, n_commits: int, plan: decide.Plan, look: tuple[int, int], say=None,
              go_on: bool = True) -> dict:
    """What ``bisect run --plan`` measures and forecasts, on a :class:`decide.Tracked` prober ``tr``: GOOD
    and BAD at ``look`` = (k layouts, runs a layout) (the endpoints' first look), the layout noise and the change from
    them, and :func:`expected_cost` at those.  A first look of a few layouts cannot tell a step near the
    minimum effect from none or from a large one, and those cost several times what the others do; so when
    the likely costs one standard error either side of its estimate do not agree (:func:`settled`), the
    endpoints' test goes on as the bisection runs it (decide.endpoints: its runs are the bisection's first)
    and the forecast is :func:`after_endpoints` of its decision.  Not ``go_on`` (a plan under a budget: the
    bisection's runs are the budget's): the first look's forecast.  Returns the forecast (``cost``: :func:`expected_cost`'s keys, ``runs`` the whole
    bisection's; ``phase_runs['endpoints']`` the runs measured when the test decided), ``ratio`` and
    ``noise`` as last measured, ``first`` (the first look: ratio, noise, runs forecast, ``low``/``high``
    one standard error either side), ``by`` ("first look", "endpoints' test", or "budget": not settled,
    the first look's), ``ends`` (the endpoints' test's status, or None) and ``spent`` (the runs measured)."""
    k, runs = look
    for c in (good, bad):
        tr.pool.add(c, tr.groups(c, k, runs))

    def measured() -> tuple[float, float, float, decide.ZTest]:
        s2, _ = tr.pool.var()
        d = float(tr.pool.y[bad].mean() - tr.pool.y[good].mean())
        rho = decide.seed_corr(tr.pool, good, bad) if plan.paired else 0.0
        t = decide.paired(tr.pool, good, bad) if plan.paired else decide.ztest(tr.pool, good, bad)
        if not math.isfinite(t.se):
            t = decide.ztest(tr.pool, good, bad)
        return d, (math.sqrt(s2) if math.isfinite(s2) else math.nan), (rho if math.isfinite(rho) else 0.0), t

    d, noise, rho, t = measured()
    cost = expected_cost(n_commits, math.exp(d), noise, plan, rho)
    lo, hi = spread(n_commits, d, t.se, noise, plan, rho) if noise > 0 else (cost["runs"], cost["runs"])
    first = {"ratio": math.exp(d), "noise": noise, "layouts": k, "runs": cost["runs"], "low": lo, "high": hi,
             "se": t.se}
    out = {"cost": cost, "ratio": math.exp(d), "noise": noise, "corr": rho, "first": first, "by": "first look",
           "ends": None, "spent": tr.ledger.spent}
    if settled(cost["runs"], lo, hi):
        return out
    if not go_on:
        out["by"] = "budget"
        return out
    if say is not None:
        say(f"plan: the first look cannot price the bisection: a step of x{math.exp(d - t.se):.4f} to "
            f"x{math.exp(d + t.se):.4f} (its estimate +-1 se) likely costs {lo} to {hi} runs; the endpoints' test "
            "goes on (its runs are the bisection's first, kept in the store)")
    ends = decide.endpoints(tr, good, bad, plan, say=None if say is None else (lambda m: say(f"endpoints: {m}")))
    d, noise, rho, _ = measured()
    spent = tr.ledger.spent
    after = after_endpoints(n_commits, ends.status, spent, math.exp(d), noise, plan, rho)
    if ends.status == "differs":
        cost = {**after, "phase_runs": {**after["phase_runs"], "endpoints": spent}, "endpoint_layouts": ends.layouts}
    else:  # the bisection ends with the endpoints' test
        cost = {**cost, "runs": spent, "phase_runs": {**dict.fromkeys(cost["phase_runs"], 0), "endpoints": spent},
                "endpoint_layouts": ends.layouts, "probes": 0, "probe_layouts": 0, "confirm_layouts": 0,
                "side_layouts": 0, "named": 0}
    cost["step_in_noise_units"] = abs(d) / noise if noise > 0 else math.inf
    cost["seed_corr"] = rho
    out.update(cost=cost, ratio=math.exp(d), noise=noise, corr=rho, by="endpoints' test", ends=ends.status,
               spent=spent)
    return out


#: the steps near the minimum effect --plan prices, as multiples of it: twice it (the step the tests beside a
#: found step look for) and just above it (the dearest to confirm)
NEAR_STEPS = (2.0, 1.2)


def near_steps(n_commits: int, noise: float, plan: decide.Plan, sign: int = 1, corr: float = 0.0) -> list[dict]:
    """What a step of each of NEAR_STEPS x the minimum effect (in the direction ``sign``) would likely
    cost at layout noise ``noise``: :func:`expected_cost` of it, with ``times`` and the relative
    ``step``.  Empty without a measured noise."""
    if not (noise > 0 and math.isfinite(noise)):
        return []
    out = []
    for f in NEAR_STEPS:
        step = f * plan.min_effect
        ratio = (1.0 + step) if sign >= 0 else 1.0 / (1.0 + step)
        out.append({"times": f, "step": step, **expected_cost(n_commits, ratio, noise, plan, corr)})
    return out


#: the minimum effects (relative) --plan tries, smallest first, for one at which a step of
#: SIDE_STEP times it is likely named at the noise measured
MIN_EFFECTS = (0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2)


def missed_step(noise: float, plan: decide.Plan) -> dict | None:
    """Is a step of decide.SIDE_STEP x the minimum effect (the step the tests beside a found step
    look for) likely missed at layout noise ``noise``?  :func:`decide.step_power` (``power``: the
    chance the endpoints show it and its confirmation shows it beyond the minimum effect by their
    furthest looks; ``needed``: the layouts a side at which both would show it with probability
    decide.NOISE_POWER; ``likely_missed`` below 0.8), and, when it is likely missed, what would fix
    it: ``max_layouts`` (a --max-layouts that makes it likely named, None when none does) and
    ``larger_min_effect`` (the smallest of MIN_EFFECTS above the plan's ``min_effect`` at which a
    step of SIDE_STEP x it is likely named, with that step's ``larger_min_effect_power``).  None without a measured noise."""
    if not (noise > 0 and math.isfinite(noise)):
        return None
    step = decide.SIDE_STEP * plan.min_effect
    out = {**decide.step_power(step, noise, plan), "noise": noise, "min_effect": plan.min_effect,
           "max_layouts": None, "larger_min_effect": None, "larger_min_effect_power": None,
           "meaning": (f"the chance that a step of {100 * step:.3g}% ({decide.SIDE_STEP:g} x the minimum effect) is "
                       f"named at a layout noise of {100 * noise:.3g}%: shown by the endpoints' test and confirmed "
                       f"beyond the minimum effect by the confirmation's furthest look ('layouts' a side); 'needed': "
                       f"the layouts a side at which both show it with probability {decide.NOISE_POWER:g}; "
                       "'likely_missed' when the chance is below 0.8")}
    if not out["likely_missed"]:
        return out
    if out["needed"] is not None and out["needed"] > plan.max_layouts:
        wider = dataclasses.replace(plan, max_layouts=out["needed"])
        if not decide.step_power(step, noise, wider)["likely_missed"]:
            out["max_layouts"] = out["needed"]
    for m in MIN_EFFECTS:
        if m <= plan.min_effect:
            continue
        got = decide.step_power(decide.SIDE_STEP * m, noise, dataclasses.replace(plan, min_effect=m))
        if not got["likely_missed"]:
            out["larger_min_effect"], out["larger_min_effect_power"] = m, got["power"]
            break
    return out
