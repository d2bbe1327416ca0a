"""Figure 3 (and 7) of docs/how-it-decides.md: where a bisection's runs go, and what the side tests cost and buy.

    nice -n 10 python3 -m bench.side_frontier [--histories 100] [--settings 0.05:4,0.02:8] [--only phases,frontier,floor]
                                              [--json]

Every number comes from the real decision code (``layoutbench.decide``, unchanged) run against
``bench/simulate.py``'s synthetic histories (``Scenario``, ``SimProber``: 16 commits, sigma_L 1%,
sigma_R 0.3%, one run a layout, ~40% layout-only commits), history i drawn from seed ``--seed0`` + i
for every setting, so every column is measured on the same histories.  Only module constants
(``decide.THOROUGH_A``, ``decide.THOROUGH_FIRST``) and ``Plan`` fields are varied, and they are
restored afterwards.  It prints six sections:

1. **phases** -- the mean runs of a bisection split by the phase that asked for them: the
   endpoints' test (``decide.endpoints`` called by ``bisect_range``), the probes
   (``decide.judge_probe``), the confirmations (``decide.confirm``) and the side tests (the residual
   tests of the sub-ranges beside a found step: ``decide.endpoints`` called with ``stop`` (its SideStop) by
   ``_search``), for single steps of 1, 2 and 5 sigma_L and null ranges, default plan and
   ``--thorough``.  Each of those functions is wrapped while the script runs; the runs the ledger
   counts between a wrapper's entry and exit are charged to it.  ``other`` is what no wrapper saw (0 when every run is accounted for); ``total`` is the
   prober's own count of the values it measured (independent of the ledger).  Also: the side
   tests per bisection and the layouts a side their ends already had when the test began.
2. **frontier** -- for each setting (SIDE_A, first look): the mean runs of single 5 and 2 sigma_L
   bisections beside the share of two-step histories (1+3 and 3+1 sigma_L) in which both steps
   were named, with those rows' runs (cost next to every rate).  The default setting is ``Plan()`` (``decide.SIDE_A``, first look
   ``decide.SIDE_FIRST``); every other setting is ``Plan(thorough=True)`` with ``THOROUGH_A`` and
   ``THOROUGH_FIRST`` set to it (``THOROUGH_A:THOROUGH_FIRST`` is ``--thorough`` as shipped).
3. **wald** -- the least any sequential side test can cost.  A side test beside a
   large single step must, to name a second step of 1 sigma_L (twice the minimum effect) in ~90%
   of two-step ranges, miss it at most beta of the time.  Any sequential test of "no step" (0)
   against "a step of d = 1 sigma_L" that adds a pair of layouts at a time (one at each end of the
   side, unpaired: the pair's difference is N(delta, 2 sigma_L^2)) has, by Wald's approximation,
   under no step the expected number of pairs::

       E0[N] = ((1 - alpha) ln B + alpha ln A) / (-K),   E1[N] = (beta ln B + (1 - beta) ln A) / K,
       A = (1 - beta) / alpha,   B = beta / (1 - alpha),   K = d^2 / (2 * 2 sigma_L^2) = 1/4

   (K: the Kullback-Leibler information of one pair).  On a single step both sides are null, so
   the side tests cost about 2 sides x 2 runs a pair x (E0[N] - h) runs, h the layouts a side
   the ends already have (measured in section 1).  Added to the 5 sigma_L bisection's other
   phases (section 1) that is the least a single 5 sigma_L bisection costs at that miss rate.
4. **prove-null** -- ``--prove-null`` at 1% layout noise: the endpoints of a null pair and of a
   true 0.5% shift (one commit, sigma_R 0.1%, pair i from seed 70000 + i, ``--pairs``: 1,000), how often
   "within layout noise" is said and at how many layouts a side.
5. **outcomes** -- what single 1 and 2 sigma_L bisections end as (``simulate.outcome``): the first step
   named alone, beside a candidate left unconfirmed, uncertain, nothing shown, ...; each outcome's share
   of the histories, its mean runs and the runs it adds to the row's mean.
6. **floor** -- for single 1 and 2 sigma_L steps, each phase's runs beside the least any sequential test
   that keeps the engine's levels and reaches its power (both measured on the same histories) can expect
   to spend there: d(p || q) / K (``floor_rows``), a bound that knows the noise, the levels a probe sits
   between and the step, which the engine must estimate.  It says how far each phase is from what no
   design can beat.

A full default run takes about 2 minutes of CPU.  ``--json`` prints the same numbers as one
JSON object instead of the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import time
from collections import Counter

import numpy as np

from bench import simulate as S
from layoutbench import decide

PHASES = ("endpoints", "probes", "confirmation", "sides")
#: (SIDE_A, first look): the default, the frontier around it, and --thorough (THOROUGH_A, THOROUGH_FIRST)
SETTINGS = ((0.4, 3), (0.25, 3), (0.15, 5), (0.1, 8), (decide.SIDE_A, decide.SIDE_FIRST), (0.04, 3),
            (decide.THOROUGH_A, decide.THOROUGH_FIRST))
BETAS = (0.03, 0.05, 0.07, 0.10)


def singles() -> list[S.Scenario]:
    return [S.Scenario("step 1σL", "step", 1, sigma_r=0.003), S.Scenario("step 2σL", "step", 2, sigma_r=0.003),
            S.Scenario("step 5σL", "step", 5, sigma_r=0.003), S.Scenario("null", "null", sigma_r=0.003)]


class PhaseMeter:
    """While entered: decide.endpoints, decide.judge_probe and decide.confirm are wrapped so that
    the runs the ledger counts during each call are charged to its phase; the originals are put back
    on exit."""

    def __init__(self):
        self.runs: Counter = Counter()
        self.calls: Counter = Counter()
        self.side_have: list[tuple] = []  #: per side test: the layouts its two ends had when it began
        self.confirm_k: list[int] = []  #: per confirmation: the fresh layouts a side it measured
        self.ends_status: list[str] = []  #: per endpoints' test (not a side test): its status
        self.probe_levels: list[float] = []  #: per probe: the level it was judged at
        self.probe_verdicts: list[tuple] = []  #: per probe: (probe, good, bad, its verdict)
        self.confirms: list[tuple] = []  #: per confirmation: (last good, culprit, level, what it showed)
        self._saved: dict = {}

    def _wrap(self, fn, phase_of):
        def wrapped(prober, *a, **k):
            phase = phase_of(a, k)
            ledger = prober.ledger
            s0 = ledger.spent
            self.calls[phase] += 1
            if phase == "sides":  # the layouts each end's statistic already has (pool.y: fresh ones too)
                self.side_have.append(tuple(prober.pool.y[c].size if c in prober.pool.y else 0 for c in a[:2]))
            try:
                out = fn(prober, *a, **k)
                if phase == "confirmation":
                    self.confirm_k.append(int(out[1]))
                    self.confirms.append((a[0], a[1], k.get("level"), out.shown))
                elif phase == "endpoints":
                    self.ends_status.append(out.status)
                elif phase == "probes":
                    self.probe_levels.append(a[4] if len(a) > 4 else k.get("level"))
                    self.probe_verdicts.append((a[0], a[1], a[2], out.verdict))
                return out
            finally:  # (no wrapped call runs inside another: a nested one would be charged twice and
                self.runs[phase] += ledger.spent - s0  # the phases would add up to more than the total)
        return wrapped

    def __enter__(self):
        seq = decide.sequential  # the search and the rounds call the tests through this module
        self._saved = {n: getattr(seq, n) for n in ("endpoints", "judge_probe", "confirm")}
        seq.endpoints = self._wrap(self._saved["endpoints"],
                                   lambda a, k: "sides" if k.get("stop") is not None else "endpoints")
        seq.judge_probe = self._wrap(self._saved["judge_probe"], lambda a, k: "probes")
        seq.confirm = self._wrap(self._saved["confirm"], lambda a, k: "confirmation")
        return self

    def __exit__(self, *exc):
        for n, f in self._saved.items():
            setattr(decide.sequential, n, f)


@contextlib.contextmanager
def setting(side_a: float, first: int):
    """The plan of a (SIDE_A, first look) setting: the default ``Plan()`` when it is the default's,
    else ``Plan(thorough=True)`` with THOROUGH_A / THOROUGH_FIRST set (restored afterwards)."""
    if side_a == decide.SIDE_A and first == decide.SIDE_FIRST:
        yield decide.Plan()
        return
    p = decide.plan  # Plan.side_a / Plan.side_first read them there
    saved = p.THOROUGH_A, p.THOROUGH_FIRST
    p.THOROUGH_A, p.THOROUGH_FIRST = side_a, first
    try:
        yield decide.Plan(thorough=True)
    finally:
        p.THOROUGH_A, p.THOROUGH_FIRST = saved


def one(sc: S.Scenario, plan: decide.Plan, seed: int) -> dict:
    """One history (``simulate.one``: the same outcome fields) with its runs split by phase."""
    with PhaseMeter() as m:
        r = S.one(sc, plan, seed)
    steps = S.SimProber(sc, np.random.default_rng(seed)).steps  # (the history S.one drew from this seed)
    r = r | {"truth": (f"c{steps[0] - 1}", f"c{steps[0]}") if sc.kind == "step" else None}
    ph = {p: m.runs[p] for p in PHASES}
    return r | ph | {"other": r["runs"] - sum(ph.values()), "side_tests": m.calls["sides"],
                     "side_have": m.side_have, "confirm_k": m.confirm_k, "ends_status": m.ends_status,
                     "probe_levels": m.probe_levels, "probe_verdicts": m.probe_verdicts, "confirms": m.confirms}


_ROWS: dict = {}


def rows(sc: S.Scenario, plan, n: int, seed0: int = 0) -> list[dict]:
    """The histories seed0 .. seed0+n-1 of ``sc`` under ``plan`` (:func:`one`), measured once per run of the
    script: the sections that read the same row share it (the key holds the --thorough constants a
    ``setting`` changes, which ``plan`` does not show)."""
    key = (sc, plan, n, seed0, decide.plan.THOROUGH_A, decide.plan.THOROUGH_FIRST)
    if key not in _ROWS:
        _ROWS[key] = [one(sc, plan, seed0 + i) for i in range(n)]
    return _ROWS[key]


def summary(rs: list[dict]) -> dict:
    out = {k: float(np.mean([r[k] for r in rs])) for k in ("runs", "right", "wrong", "blame", "both", "other",
                                                             "side_tests") + PHASES}
    have = [h for r in rs for h in r["side_have"]]
    out["side_have"] = float(np.mean(have)) if have else math.nan  # layouts an end had (mean over ends)
    out["side_ends"] = [h for r in rs for h in r["side_have"]]
    ks = [k for r in rs for k in r["confirm_k"]]  # (the first confirmation of each, and any later one)
    out["confirm_side"] = float(np.mean(ks)) if ks else math.nan
    out["confirm_side_median"] = float(np.median(ks)) if ks else math.nan
    out["n"] = len(rs)
    return out


def outcomes(n: int, s0: int, say) -> list[dict]:
    """Section 5: what single-step bisections (1 and 2 sigma_L, default plan) end as (simulate.OUTCOMES),
    each outcome's share of the histories (Wilson 95% interval), its mean runs, and the runs it adds to the
    row's mean (share x mean runs): where a mean cost comes from."""
    say("\n5. what a bisection ends as (default plan): share of the histories [Wilson 95%], mean runs, "
        "and the runs the outcome adds to the row's mean")
    out = []
    for sc in singles()[:2]:
        rs = rows(sc, decide.Plan(), n, s0)
        total = float(np.mean([r["runs"] for r in rs]))
        say(f"{sc.name}: {total:.1f} runs a bisection (mean)")
        for name in S.OUTCOMES:
            got = [r["runs"] for r in rs if r["outcome"] == name]
            if not got:
                continue
            lo, hi = S.wilson(len(got) / n, n)
            runs = float(np.mean(got))
            out.append({"scenario": sc.name, "outcome": name, "histories": len(got), "share": len(got) / n,
                        "share_lo": lo, "share_hi": hi, "runs": runs, "adds": len(got) / n * runs})
            say(f"  {name:40s} {100 * len(got) / n:5.1f}% [{100 * lo:4.1f}-{100 * hi:4.1f}%]  {runs:6.1f} runs  "
                f"adds {len(got) / n * runs:6.1f}")
    return out


def wald(alpha: float, beta: float, kl: float = 0.25) -> tuple[float, float]:
    """Wald's approximate expected sample sizes (E0[N], E1[N]) of a sequential test with errors
    alpha, beta whose observations carry Kullback-Leibler information ``kl`` each: overshoot ignored,
    they are the floors d(.||.) / kl of section 6 (:func:`kl_coin`), which no test with those errors beats."""
    return kl_coin(1 - alpha, beta) / kl, kl_coin(1 - beta, alpha) / kl


def side_runs(e0: float, ends: list[tuple], per: float) -> float:
    """Runs the side tests of a bisection would need to reach ``e0`` layouts at each end: ``per``
    side tests, each end brought from the layouts it had (``ends``: one (a, b) a side test) to e0."""
    if not ends:
        return math.nan
    return per * float(np.mean([sum(max(0.0, e0 - x) for x in ab) for ab in ends]))


def kl_coin(p: float, q: float) -> float:
    """d(p || q): the Kullback-Leibler divergence (nats) of a coin with P(heads) p from one with q."""
    def t(x, y):
        return 0.0 if x <= 0 else x * math.log(x / y)
    return t(p, q) + t(1.0 - p, 1.0 - q)


def misjudged(r: dict) -> tuple[int, int, int]:
    """(probes judged, misjudged, judged right) of one single-step history ``r``: the probes of a window
    holding the step (its GOOD before the step, its BAD at or after it), misjudged when called good at or
    after the step, or bad before it, right when called the other way (an uncertain probe is neither)."""
    at = int(r["truth"][1][1:])
    n = wrong = right = 0
    for probe, good, bad, verdict in r["probe_verdicts"]:
        if int(good[1:]) < at <= int(bad[1:]):
            n += 1
            truth = "bad" if int(probe[1:]) >= at else "good"
            wrong += verdict in ("good", "bad") and verdict != truth
            right += verdict == truth or (verdict == "between" and truth == "bad")
    return n, wrong, right


def floor_rows(sc: S.Scenario, rs: list[dict], plan: decide.Plan) -> dict:
    """Section 6 for one single-step row: each phase's runs beside the least any sequential test with the
    engine's errors can expect to spend on it.  For a test that tells a parameter value theta0 from theta1
    on iid observations each carrying Kullback-Leibler information K, rejecting theta0 with probability at
    most q under it and at least p under theta1 (p > q), E_theta1[N] >= d(p || q) / K (Wald's identity and
    the data-processing inequality; Wald's SPRT nearly attains it; a composite null such as "the step is at
    most m" holds it at its edge).  The errors, from these histories:

    * endpoints: "no change" against the true step d (log), a pair of layouts (one a side) an observation,
      K = d^2 / (4 s^2), s^2 = sigma_L^2 + sigma_R^2 / R; q = alpha / 2, the nominal level of a symmetric
      two-sided test in one direction (its true rate is lower: the floor at it would be higher); p = the
      share of histories whose endpoints showed the change;
    * probes: GOOD's level against BAD's, both known, one layout an observation, K = d^2 / (2 s^2);
      q = the share of the probes of a window holding the step that were misjudged, p = the share judged
      right (:func:`misjudged`), charged per such probe (a probe of a window without the step has none);
    * confirmation: the step at the minimum effect m against the true step, on fresh pairs,
      K = (d - m)^2 / (4 s^2); q = the mean level of the confirmations of the step's own pair, p = the share
      of them that showed the step beyond the band; charged per such confirmation.

    Each power p enters at the lower end of its Wilson 95% interval, the probes' q at the upper end, and errors
    are averaged over histories before d(.||.): each only lowers the floor (d is jointly convex).  The floor
    knows what the engine must estimate (s, the two means a probe sits between, the step): a floor, not a
    design.  It treats every layout as an independent draw: where a probe shares GOOD's or BAD's layout
    epoch (no layout change between them), a test pairing their seeds could do better."""
    s2 = sc.sigma_l ** 2 + sc.sigma_r ** 2 / sc.runs
    d, m = sc.size * sc.sigma_l, math.log1p(plan.min_effect)
    n = len(rs)
    ends_p = float(np.mean([bool(r["ends_status"]) and r["ends_status"][0] == "differs" for r in rs]))

    def low(x, k):  # a power's Wilson 95% lower bound: a lower floor
        return S.wilson(x, k)[0]
    ends = 2 * kl_coin(low(ends_p, n), plan.alpha / 2) / (d * d / (4 * s2))
    mj = [misjudged(r) for r in rs]
    judged, wrong, right = (sum(x[i] for x in mj) for i in range(3))
    p_right, q_wrong = (low(right / judged, judged), S.wilson(wrong / judged, judged)[1]) if judged else (0, 1)
    probes = judged / n * kl_coin(p_right, q_wrong) / (d * d / (2 * s2)) if p_right > q_wrong else math.nan
    true = [c for r in rs for c in r["confirms"] if (c[0], c[1]) == r["truth"]]
    conf_p = float(np.mean([c[3] == "beyond" for c in true])) if true else math.nan
    lv = float(np.mean([c[2] for c in true])) if true else math.nan
    conf = (len(true) / n * 2 * kl_coin(low(conf_p, len(true)), lv) / ((d - m) ** 2 / (4 * s2))
            if true and d > m and low(conf_p, len(true)) > lv else math.nan)

    def mean(k):
        return float(np.mean([r[k] for r in rs]))
    return {"scenario": sc.name, "histories": n, "ends_power": ends_p, "confirm_power": conf_p,
            "confirm_level": lv, "confirms_true": len(true) / n,
            "probes_per": float(np.mean([len(r["probe_levels"]) for r in rs])),
            "floor": {"endpoints": ends, "probes": probes, "confirmation": conf},
            "engine": {k: mean(k) for k in PHASES + ("runs",)},
            "probes_judged": judged, "probes_misjudged": wrong, "probes_right": right,
            "histories_misjudged": sum(x[1] > 0 for x in mj),
            "level_sum": float(np.mean([sum(r["probe_levels"]) for r in rs if r["probe_levels"]] or [math.nan]))}


def prove_null(n: int = 1000, sigma_l: float = 0.01, seed0: int = 70_000) -> list[dict]:
    out = []
    for shift in (0.0, 0.005):
        noise = lay = 0
        for i in range(n):
            p = S.SimProber(S.Scenario("pair", "null", commits=1, sigma_l=sigma_l, sigma_r=0.001),
                            np.random.default_rng(seed0 + i))
            p.code[1], p.epoch[1] = math.log1p(shift), 1
            e = decide.endpoints(decide.Tracked(p), "c0", "c1", decide.Plan(prove_null=True))
            noise += e.status == "noise"
            lay += e.layouts
        out.append({"shift": shift, "pairs": n, "noise": noise / n, "layouts": lay / n})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n")[0])
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=1000, help="--only prove-null: pairs per row (default 1000)")
    ap.add_argument("--seed0", type=int, default=0, help="history i is drawn from seed SEED0 + i (default 0)")
    ap.add_argument("--settings", help="frontier settings SIDE_A:FIRST,... (default: "
                    + ",".join(f"{a:g}:{f}" for a, f in SETTINGS) + ")")
    ap.add_argument("--only", help="sections to print: phases,frontier,wald,prove-null,outcomes,floor (default: all)")
    ap.add_argument("--wald-alpha", type=float, default=0.025)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the tables")
    a = ap.parse_args()
    sections = ("phases", "frontier", "wald", "prove-null", "outcomes", "floor")
    only = set(a.only.split(",")) if a.only else set(sections)
    bad = only - set(sections)
    if bad:
        ap.error(f"--only: unknown section(s) {', '.join(sorted(bad))} ({', '.join(sections)})")
    try:
        settings = ([(float(s.split(":")[0]), int(s.split(":")[1])) for s in a.settings.split(",")]
                    if a.settings else list(SETTINGS))
    except (ValueError, IndexError):
        ap.error(f"--settings: {a.settings!r} is not SIDE_A:FIRST,... (e.g. 0.05:4,0.02:8)")
    n, s0 = a.histories, a.seed0
    t0 = time.process_time()
    res: dict = {"date": time.strftime("%Y-%m-%d"), "histories": n, "seed0": s0}
    say = (lambda *x, **k: None) if a.json else (lambda *x, **k: print(*x, **k, flush=True))
    say(f"side tests, {res['date']}: {n} histories a row (seeds {s0}..{s0 + n - 1}, the same for every setting), "
        "16 commits, σL 1%, σR 0.3%, R=1, ~40% layout-only commits; 95%, min effect 0.5%; layoutbench.decide "
        "unchanged; runs = values measured per bisection (mean)")

    # 1. phases
    five: dict = {}
    if only & {"phases", "wald"}:
        say("\n1. where the runs go (mean runs per bisection, charged to the phase that asked for them)")
        say(f"{'scenario':12s} {'plan':10s} | {'endpoints':>9s} {'probes':>7s} {'confirm':>7s} {'sides':>7s} "
            f"{'other':>5s} | {'total':>7s} | {'right':>6s} {'wrong':>6s} | {'side tests':>10s} {'end had':>8s} | "
            f"{'confirm a side':>14s}")
        res["phases"] = []
        for sc in singles():
            for name, plan in (("default", decide.Plan()), ("--thorough", decide.Plan(thorough=True))):
                r = summary(rows(sc, plan, n, s0))
                res["phases"].append({"scenario": sc.name, "plan": name} | {k: v for k, v in r.items() if k != "side_ends"})
                if sc.name == "step 5σL":
                    five[name] = r
                right = r["blame"] if sc.kind == "null" else r["right"]
                say(f"{sc.name:12s} {name:10s} | {r['endpoints']:9.1f} {r['probes']:7.1f} {r['confirmation']:7.1f} "
                    f"{r['sides']:7.1f} {r['other']:5.1f} | {r['runs']:7.1f} | {100 * right:5.1f}% "
                    f"{100 * r['wrong']:5.1f}% | {r['side_tests']:10.2f} {r['side_have']:8.1f} | "
                    f"{r['confirm_side']:6.1f} ({r['confirm_side_median']:g})")
        say("right: the named first bad commit is the step (null: false blame); side tests: per bisection; end had: "
            "the layouts an end of a side test had when it began (mean over ends; a confirmation's fresh ones too); "
            "confirm a side: the fresh layouts a side of a confirmation (mean, and median)")

    # 2. the frontier
    if "frontier" in only:
        s5, s2 = S.Scenario("step 5σL", "step", 5, sigma_r=0.003), S.Scenario("step 2σL", "step", 2, sigma_r=0.003)
        t13, t31 = S.twos()[1], S.twos()[2]
        say("\n2. the frontier: (SIDE_A, first look) -> single-step runs beside both of two steps named, with their runs")
        say(f"{'setting':20s} | {'5σL runs':>8s} | {'2σL runs':>8s} | "
            f"{'1+3σL both':>10s} {'runs':>6s} | {'3+1σL both':>10s} {'runs':>6s} | {'wrong':>5s}")
        res["frontier"] = []
        for side_a, first in settings:
            with setting(side_a, first) as plan:
                r = {sc.name: summary(rows(sc, plan, n, s0)) for sc in (s5, s2, t13, t31)}
            label = f"{side_a:g}, {first}" + (" (default)" if not plan.thorough else
                                               " (--thorough)" if (side_a, first) == (decide.THOROUGH_A, decide.THOROUGH_FIRST)
                                               else "")
            wrong = max(x["wrong"] for x in r.values())
            res["frontier"].append({"side_a": side_a, "first": first, "thorough": plan.thorough,
                                    "rows": {k: {f: v for f, v in x.items() if f != "side_ends"} for k, x in r.items()}})
            say(f"{label:20s} | {r[s5.name]['runs']:8.1f} | {r[s2.name]['runs']:8.1f} | "
                f"{100 * r[t13.name]['both']:9.1f}% {r[t13.name]['runs']:6.1f} | "
                f"{100 * r[t31.name]['both']:9.1f}% {r[t31.name]['runs']:6.1f} | {100 * wrong:4.1f}%")
        say("wrong: the largest share of histories in the row with a named commit without a step")

    # 3. Wald
    if "wald" in only:
        say(f"\n3. Wald: a sequential test of no step against 1σL, a pair of layouts (one at each end of a side, "
            f"unpaired) at a time, K = 1/4 a pair, alpha {a.wald_alpha:g}")
        d5, t5 = five.get("default"), five.get("--thorough")
        ends = d5["side_ends"] if d5 else []
        h = d5["side_have"] if d5 else math.nan
        per = d5["side_tests"] if d5 else math.nan
        rest = d5["endpoints"] + d5["probes"] + d5["confirmation"] if d5 else math.nan
        say(f"{'miss β':>6s} | {'E0[N] pairs':>11s} {'E1[N] pairs':>11s} | {'side runs, 5σL':>14s} | "
            f"{'5σL total':>9s}")
        res["wald"] = {"alpha": a.wald_alpha, "kl": 0.25, "ends_had": h, "side_tests": per, "other_phases_5": rest,
                       "rows": []}
        for beta in BETAS:
            e0, e1 = wald(a.wald_alpha, beta)
            side = side_runs(e0, ends, per)
            res["wald"]["rows"].append({"beta": beta, "e0": e0, "e1": e1, "side_runs": side, "total_5": rest + side})
            say(f"{100 * beta:5.0f}% | {e0:11.1f} {e1:11.1f} | {side:14.1f} | {rest + side:9.1f}")
        say(f"side runs = {per:.2f} side tests a 5σL bisection x the runs that bring each end of a side from the "
            f"layouts it had (mean {h:.1f}, section 1) to E0[N]; 5σL total = those + the default 5σL bisection's "
            f"endpoints, probes and confirmation ({rest:.1f} runs, section 1)")
        if d5 and t5:
            say(f"measured (section 1): side tests of a 5σL bisection {d5['sides']:.1f} runs (default), "
                f"{t5['sides']:.1f} (--thorough)")

    # 4. --prove-null
    if "prove-null" in only:
        res["prove_null"] = prove_null(a.pairs)
        say(f"\n4. --prove-null at σL 1% (σR 0.1%, pairs from seeds 70000..{70000 + a.pairs - 1}): "
            "'within layout noise' said")
        for r in res["prove_null"]:
            lo, hi = S.wilson(r["noise"], r["pairs"])
            say(f"  true shift {100 * r['shift']:.1f}%: {100 * r['noise']:.1f}% [95% CI {100 * lo:.1f}-{100 * hi:.1f}%] "
                f"of {r['pairs']} pairs, {r['layouts']:.1f} layouts a side (mean)")
    # 5. outcomes
    if "outcomes" in only:
        res["outcomes"] = outcomes(n, s0, say)
    # 6. the floor
    if "floor" in only:
        say("\n6. the floor: each phase's runs (mean over every history) beside the least any sequential test "
            "with the engine's errors (measured here) can expect to spend there: d(p||q) / K, knowing the noise, "
            "the means and the step")
        say(f"{'row':10s} {'phase':13s} | {'engine':>7s} {'floor':>6s} {'ratio':>6s} | errors")
        res["floor"] = []
        for sc in singles()[:2]:
            f = floor_rows(sc, rows(sc, decide.Plan(), n, s0), decide.Plan())
            res["floor"].append(f)
            hm = f["histories_misjudged"] / f["histories"]
            hlo, hhi = S.wilson(hm, f["histories"])
            judged = max(1, f["probes_judged"])
            errs = {"endpoints": f"showed the change in {100 * f['ends_power']:.1f}% of histories; level "
                                 f"{decide.Plan().alpha / 2:g} a direction (nominal)",
                    "probes": f"{f['probes_per']:.2f} a history, levels summing to {f['level_sum']:.3f}; in a window "
                              f"holding the step {f['probes_judged']} judged: right "
                              f"{100 * f['probes_right'] / judged:.2f}%, "
                              f"misjudged {f['probes_misjudged']} ({100 * f['probes_misjudged'] / judged:.2f}%), "
                              f"in {100 * hm:.1f}% [{100 * hlo:.1f}-{100 * hhi:.1f}%] of histories",
                    "confirmation": f"{f['confirms_true']:.3f} of the step's own pair a history, shown beyond the "
                                    f"band {100 * f['confirm_power']:.1f}%; level {f['confirm_level']:.3g} (mean)",
                    "sides": "(section 3: the least a side test costs)"}
            for ph in PHASES + ("runs",):
                fl = f["floor"].get(ph, math.nan) if ph != "runs" else sum(f["floor"].values())
                ratio = f"{f['engine'][ph] / fl:5.2f}x" if fl > 0 else f"{'-':>6s}"
                say(f"{sc.name:10s} {ph if ph != 'runs' else 'total':13s} | {f['engine'][ph]:7.1f} {fl:6.1f} "
                    f"{ratio} | {errs.get(ph, '')}")
        say("floor total: endpoints + probes + confirmation (no side test); ratio: engine / floor")
    res["cpu_seconds"] = round(time.process_time() - t0, 1)
    if a.json:
        print(json.dumps(res, indent=1, ensure_ascii=False))
    else:
        say(f"\n{res['cpu_seconds']:.0f} s of CPU")


if __name__ == "__main__":
    main()
