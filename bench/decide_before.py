"""The decisions of a layout-aware bisection, independent of how commits are measured.

Everything here works against an abstract *prober*:

* ``prober.groups(commit, k, r) -> {layout id: [values]}``: the commit's values over
  the random layouts with seeds ``seed .. seed+k-1`` (the same seeds on every commit),
  ``r`` runs each; the same call must return the same values again (the store does
  that for real builds, a memo for the simulation);
* ``prober.higher_is_better`` (known after the first ``groups`` call);
* it raises :class:`Skip` for a commit that cannot be measured (does not build).

so that the same code runs on real builds (``bisect.py``) and in simulation
(``bench/simulate.py``, ``tests/test_calibration.py``).

Error control
-------------
Every *test* (the endpoints, each probe, the confirmation at the culprit) has a
planned sequence of looks (:meth:`Plan.looks`: more layouts, then more runs) and
spends its error budget ``alpha = 1 - confidence`` over them with a Pocock-type
Lan-DeMets spending function ``alpha(t) = alpha * ln(1 + (e - 1) t)``, ``t = j/J``
for look j of J; look j is a t test at level ``alpha(t_j) - alpha(t_{j-1})``.
By the union bound the chance that a test ever rejects a true "no change" over all
its looks is at most ``alpha`` (conservative: the looks are positively correlated).

* A range without any code change is blamed only if the endpoints test rejects:
  probability <= alpha.
* A named culprit must also pass a confirmation test -- last good commit against
  the culprit on *fresh* layouts (seeds no decision has used) -- so a commit whose
  own step is null is named with probability <= alpha, whatever happened in the
  probes (a misjudged probe leads to a wrong candidate, which its confirmation then
  rejects).  A failed confirmation downgrades the verdict to "uncertain".
* "Several changes or a drift" is said of a single step with probability <= alpha:
  three tests at alpha/3 (a change in either sub-range beside the step, and a step
  that explains less than ``share_min`` of the endpoints' change, :func:`share_test`).

A *change* at the endpoints is a paired comparison (``stats.compare``) whose interval
at the look's level excludes 1 **and** whose effect is at least ``min_effect``.  A probe
decides a side, not a size (no minimum effect).  The confirmation tests the step on
fresh layouts and judges its size on every layout measured on the pair.  The endpoints
stop early as "within layout noise" when their interval at the look's level (two
one-sided tests) lies inside +-min_effect.
"""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from scipy.special import ndtr, ndtri

from layoutbench import stats


class Skip(Exception):
    """This commit cannot be judged (does not build, or every run failed)."""


DEFAULT_MIN_EFFECT = stats.DEFAULT_MIN_EFFECT
SPENDING = ("pocock", "obrien-fleming", "bonferroni")
RESIDUAL_LAYOUTS = 32  #: the residual tests beside a found step look at least this far (or max_layouts)


@dataclass(frozen=True)
class Plan:
    """How much a test may spend and how it spends its error budget."""

    layouts: int = 4  #: K at the first look
    max_layouts: int = 128  #: the last look (looks 4, 6, 9, 14, 21, 32, 48, 72, 108, 128)
    runs: int = 1  #: R: runs per layout (the layout is the unit: more layouts, not more runs)
    max_runs: int = 1  #: > runs: after the last layout look, looks with the runs doubled
    confidence: float = 0.95
    min_effect: float = DEFAULT_MIN_EFFECT
    spending: str = "pocock"
    share_min: float = 0.7  #: below this share of the endpoints' change: "several changes or a drift"
    all_changes: bool = False

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def looks(self) -> list[tuple[int, int]]:
        """The planned (layouts, runs) of each look: K, 1.5K, ... up to max_layouts, then the
        runs doubled up to max_runs."""
        k, r = self.layouts, self.runs
        out = [(k, r)]
        while k < self.max_layouts:
            k = min(self.max_layouts, max(k + 1, math.ceil(k * 1.5)))
            out.append((k, r))
        while r < self.max_runs:
            r = min(self.max_runs, r * 2)
            out.append((k, r))
        return out

    def levels(self, n_looks: int | None = None) -> list[float]:
        """The test level of each look (they sum to at most alpha)."""
        J = n_looks or len(self.looks())
        a = self.alpha

        def spent(t: float) -> float:
            if t <= 0:
                return 0.0
            if self.spending == "pocock":
                return a * math.log(1.0 + (math.e - 1.0) * t)
            if self.spending == "obrien-fleming":
                z = float(ndtri(1.0 - a / 2.0))
                return float(2.0 * ndtr(-z / math.sqrt(t)))
            return a * t  # bonferroni: an equal split
        cum = [spent(j / J) for j in range(J + 1)]
        return [max(cum[j + 1] - cum[j], 1e-12) for j in range(J)]

    def check(self) -> None:
        if self.spending not in SPENDING:
            raise ValueError(f"spending must be one of {', '.join(SPENDING)}")


def _deterministic(*groups: dict) -> bool:
    """Repeated runs exist and are all identical: more runs cannot help."""
    rep = [v for g in groups for v in g.values() if len(v) >= 2]
    return bool(rep) and all(min(v) == max(v) for v in rep)


class _Looker:
    """What the caller saw at the last look: whether the metric is deterministic."""

    deterministic = False


def _looks(plan: Plan, seen: _Looker):
    """(index, layouts, runs, test level) of each planned look; the looks that add runs are
    skipped once ``seen.deterministic`` (repeated runs identical: more runs cannot help;
    their share of alpha is then left unspent)."""
    looks = plan.looks()
    levels = plan.levels(len(looks))
    for j, ((k, r), a) in enumerate(zip(looks, levels)):
        if j > 0 and r > looks[j - 1][1] and seen.deterministic:
            return
        yield j, k, r, a


def change(ga: dict, gb: dict, hib: bool, level: float, min_effect: float, rank: bool = False) -> stats.Comparison:
    """B against A, paired over their common layouts, tested at ``level``."""
    return stats.compare(ga, gb, hib, confidence=1.0 - level, paired=True, min_effect=min_effect, rank_test=rank)


# -- the endpoints ---------------------------------------------------------------------------------

@dataclass
class Ends:
    status: str  #: differs, noise (within layout noise), no-change (budget spent)
    comparison: stats.Comparison  #: at the plan's confidence, for display
    layouts: int
    runs: int
    look: int
    level: float  #: the test level of the deciding (or last) look
    note: str = ""


def endpoints(prober, good, bad, plan: Plan) -> Ends:
    """Do GOOD and BAD differ by a change of at least min_effect?  Group-sequential."""
    lk = _Looker()
    last = None
    for j, k, r, a in _looks(plan, lk):
        gg, gb = prober.groups(good, k, r), prober.groups(bad, k, r)
        lk.deterministic = _deterministic(gg, gb)
        hib = bool(prober.higher_is_better)
        c = change(gg, gb, hib, a, plan.min_effect, rank=True)
        shown = c.at_alpha(plan.alpha)
        last = (shown, k, r, j, a)
        if c.significant:
            return Ends("differs", shown, k, r, j, a)
        # within layout noise: an equivalence test (two one-sided tests) at the look's level, so that
        # over all looks the claim "no change of min_effect" is wrong with probability <= alpha too
        eq = c.at_alpha(min(1.0, 2.0 * a))
        m = math.log1p(plan.min_effect)
        if eq.verdict != "n/a" and -m < math.log(eq.ci_low) and math.log(eq.ci_high) < m:
            return Ends("noise", shown, k, r, j, a,
                        f"its {100 * (1 - 2 * a):.3g}% interval (the look's level) lies within "
                        f"±{100 * plan.min_effect:g}%")
    shown, k, r, j, a = last
    return Ends("no-change", shown, k, r, j, a, "no change of at least "
                f"{100 * plan.min_effect:g}% shown after {k} layouts x {r} run(s)")


# -- one probe ------------------------------------------------------------------------------------

@dataclass
class Judgement:
    verdict: str  #: good, bad, uncertain, skip
    layouts: int = 0
    runs: int = 0
    p_good: float = math.nan  #: p-value of "the probe equals GOOD" at the deciding look
    p_bad: float = math.nan  #: p-value of "the probe equals BAD"
    position: float = math.nan  #: log(probe/GOOD) / log(BAD/GOOD): 0 like GOOD, 1 like BAD
    note: str = ""

    def describe(self) -> str:
        if self.verdict == "skip":
            return f"skip: {self.note}"
        return (f"{self.verdict} (p vs GOOD={self.p_good:.3g}, p vs BAD={self.p_bad:.3g}, position "
                f"{self.position:.2f} between good=0 and bad=1; {self.layouts} layouts x {self.runs} run(s))"
                + (f"; {self.note}" if self.note else ""))


def judge_probe(prober, probe, good, bad, plan: Plan) -> Judgement:
    """Like GOOD or like BAD?  At each look two tests at the look's level: the probe
    against GOOD (a change there: *bad*, the first change is at or before the probe) and
    against BAD (a change there and none from GOOD: *good*).  Uncertain when the looks
    are spent.  The tests have no minimum effect: the endpoints have shown a change of at
    least ``min_effect``, and a probe only says which side of it it lies on (with a
    minimum, a probe next to a step of exactly the minimum was a coin flip).  (With two steps a probe past a small first step may be called good: the
    bisection then finds the second, and the residual test of the range before it shows
    the first -- "several changes".)"""
    lk = _Looker()
    j = Judgement("uncertain")
    try:
        for _, k, r, a in _looks(plan, lk):
            gp = prober.groups(probe, k, r)
            gg, gb = prober.groups(good, k, r), prober.groups(bad, k, r)
            lk.deterministic = _deterministic(gp, gg, gb)
            hib = bool(prober.higher_is_better)
            cg = change(gg, gp, hib, a, 0.0)  # a side, not a size: see the docstring
            cb = change(gp, gb, hib, a, 0.0)
            ends = cg.log_ratio + cb.log_ratio
            pos = cg.log_ratio / ends if ends else math.nan
            j = Judgement("uncertain", k, r, cg.p_value, cb.p_value, pos)
            if cg.significant:
                j.verdict = "bad"
                if cb.significant:
                    j.note = "differs from both GOOD and BAD: several changes"
                return j
            if cb.significant:
                j.verdict = "good"
                return j
        j.note = "budget spent"
        return j
    except Skip as e:
        return Judgement("skip", note=str(e))


# -- the confirmation at the culprit -----------------------------------------------------------------

def confirm(prober, last_good, culprit, plan: Plan, used: int) -> tuple[stats.Comparison | None, int, float]:
    """Last good against culprit, group-sequential like every test.  *Whether* the step is
    real is tested on fresh layouts only (the seeds after the first ``used``, which no decision
    saw): that is what bounds the chance of naming a commit whose step is null.  *How large*
    it is (at least ``min_effect``) is judged on the enlarged sample, every layout measured on
    the pair (decisions + fresh): a better estimate than the fresh layouts alone.  Returns
    (the fresh comparison at the deciding or last look, shown at the plan's confidence, or
    None when nothing could be measured; fresh layouts; the log ratio over the enlarged
    sample)."""
    lk = _Looker()
    shown, k_fresh, size = None, 0, math.nan
    m = math.log1p(plan.min_effect)
    try:
        old = set(prober.groups(last_good, used, plan.runs)) | set(prober.groups(culprit, used, plan.runs))
        for _, k, r, a in _looks(plan, lk):
            all_a, all_b = prober.groups(last_good, used + k, r), prober.groups(culprit, used + k, r)
            ga = {i: v for i, v in all_a.items() if i not in old}
            gb = {i: v for i, v in all_b.items() if i not in old}
            lk.deterministic = _deterministic(ga, gb)
            hib = bool(prober.higher_is_better)
            c = change(ga, gb, hib, a, 0.0, rank=True)
            size = change(all_a, all_b, hib, a, 0.0).log_ratio
            shown, k_fresh = c.at_alpha(plan.alpha), k
            if c.significant and abs(size) >= m:
                return shown, k, size  # significant at the look's level, so at 95% too
        if shown is not None and shown.significant:  # not at the spent level, or too small a step
            why = ("not at the spent level" if abs(size) >= m else
                   f"the step over every layout measured on the pair is smaller than the {100 * plan.min_effect:g}% "
                   "minimum effect")
            shown = dataclasses.replace(shown, verdict="no difference", reason=why)
        return shown, k_fresh, size
    except Skip:
        return shown, k_fresh, size


# -- the bisection ---------------------------------------------------------------------------------

class MemoryJournal:
    """Marks kept in memory (the simulation); ``bisect.py`` keeps them in the store."""

    def __init__(self):
        self.log: list[dict] = []

    def marks(self, segment: str | None) -> dict[str, dict]:
        return {e["commit"]: e for e in self.log if e.get("segment") == segment}

    def record(self, segment: str | None, commit: str, j: Judgement, target: str | None = None) -> None:
        verb = j.verdict if j.verdict in ("good", "bad") else "skip"
        why = "" if verb != "skip" else ("uncertain" if j.verdict == "uncertain" else "build")
        self.log.append({"verb": verb, "commit": commit, "segment": segment, "layouts": j.layouts,
                         "runs": j.runs, "why": why, "note": j.describe(),
                         **({"target": target} if target is not None else {})})


@dataclass
class Step:
    """One change point: the first bad commit of a (sub)range and what confirms it."""

    status: str  #: found, uncertain (confirmation failed), range (skipped commits in the way)
    last_good: str
    culprit: str | None
    range: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    confirmation: stats.Comparison | None = None
    confirm_layouts: int = 0
    effect: float = math.nan  #: log ratio culprit/last good over every layout measured on both
    share: float = math.nan  #: effect / log(BAD/GOOD) of the whole range
    share_p: float = math.nan  #: one-sided p of "the step explains at least share_min of the change"


@dataclass
class Outcome:
    status: str  #: noise, found, uncertain, range
    ends: Ends
    steps: list[Step] = field(default_factory=list)
    several: bool = False  #: another change shown beside the found step, or it explains < share_min
    residual: list[dict] = field(default_factory=list)  #: sub-ranges beside a found step that differ too
    share: float = math.nan
    probes: int = 0
    alpha: float = 0.05
    rounds: int = 0  #: rounds of probes (one probe per round with one prober, up to k with k)
    k: int = 1  #: probers (machines) measuring probes in parallel

    @property
    def culprit(self) -> str | None:
        return self.steps[0].culprit if self.steps and self.status == "found" else None

    def bound(self) -> str:
        a = f"{100 * self.alpha:g}%"
        farm = ""
        if self.k > 1:
            farm = (f"; {self.k} probes per round, each judged at alpha / (k * ceil(log_(k+1)(n-1))) "
                    "planned probes against GOOD and BAD measured on its own machine")
        return (f"a range without a code change is blamed with probability <= {a} (endpoints, "
                f"alpha spent over their looks); a named commit whose own step is null passes its confirmation "
                f"on fresh layouts with probability <= {a}; a single step is called several changes with "
                f"probability <= {a}" + farm)


def _window(commits: list[str], marks: dict[str, dict]) -> tuple[int, int, list[int]]:
    lo = max([i for i, c in enumerate(commits) if marks.get(c, {}).get("verb") == "good"] + [0])
    hi = min([i for i, c in enumerate(commits) if i > lo and marks.get(c, {}).get("verb") == "bad"]
             + [len(commits) - 1])
    return lo, hi, [i for i in range(lo + 1, hi) if commits[i] not in marks]


class Tracked:
    """A prober that remembers the most layouts asked of each commit (to know which seeds
    are still fresh for a confirmation)."""

    def __init__(self, prober):
        self.prober = prober
        self.kmax: dict = {}
        self.name = getattr(prober, "name", None)  #: the machine (target) it measures on, if it says

    @property
    def higher_is_better(self):
        return self.prober.higher_is_better

    def groups(self, commit, k: int, r: int) -> dict:
        self.kmax[commit] = max(k, self.kmax.get(commit, 0))
        return self.prober.groups(commit, k, r)


def bisect_range(prober, commits: list[str], plan: Plan, journal, segment: str | None = None,
                 say=lambda m: None, ends: Ends | None = None) -> Outcome:
    """Bisect ``commits`` (GOOD first, BAD last); with ``plan.all_changes`` every change
    point is looked for by bisecting both sides of each found step.

    ``prober`` may be a list of k probers (one per machine): each round then judges up to k
    probes in parallel (:func:`_k_step`); the endpoints, the confirmation and the residual
    tests run on the first."""
    probers = [p if isinstance(p, Tracked) else Tracked(p)
               for p in (prober if isinstance(prober, (list, tuple)) else [prober])]
    prober = probers[0]
    if ends is None:
        ends = endpoints(prober, commits[0], commits[-1], plan)
    out = Outcome("noise", ends, alpha=plan.alpha, k=len(probers))
    if ends.status != "differs":
        return out
    st, probes, rounds = _k_step(probers, commits, plan, journal, segment, say)
    out.probes += probes
    out.rounds += rounds
    total = _total(prober, commits[0], commits[-1], plan, ends)
    st.share = st.effect / total if total and math.isfinite(st.effect) else math.nan
    out.steps.append(st)
    out.status = st.status
    if st.culprit is not None:
        lo, hi = commits.index(st.last_good), commits.index(st.culprit)
        # "several changes or a drift" is a claim too: three tests share alpha -- the step explains
        # less than share_min of the endpoints' change, and a change on either side of it
        st.share_p = share_test(prober, (commits[0], st.last_good, st.culprit, commits[-1]), plan.share_min,
                                ends.runs)
        # the residual tests look twice as far as the step's own decisions did (the layouts measured
        # on the pair, decisions and confirmation), at least RESIDUAL_LAYOUTS: a change of half the
        # found step's size is seen, and a big step is not followed by ~4 x max_layouts runs
        # proving that nothing else changed
        reach = min(prober.kmax.get(st.last_good, 0), prober.kmax.get(st.culprit, 0))
        rplan = dataclasses.replace(plan, confidence=1.0 - plan.alpha / 3,
                                    max_layouts=max(plan.layouts, min(plan.max_layouts, max(RESIDUAL_LAYOUTS, 2 * reach))))
        for sub in (commits[:lo + 1], commits[hi:]):
            if len(sub) < 2:
                continue
            seg = f"{sub[0]}..{sub[-1]}"
            try:
                sub_ends = endpoints(prober, sub[0], sub[-1], rplan)
            except Skip:
                continue
            if sub_ends.status != "differs":
                continue
            out.residual.append({"good": sub[0], "bad": sub[-1], "ratio": sub_ends.comparison.ratio})
            if not plan.all_changes:
                continue
            inner = bisect_range(probers, sub, plan, journal, seg, say, ends=sub_ends)
            out.probes += inner.probes
            out.rounds += inner.rounds
            out.residual.extend(inner.residual)
            for s in inner.steps:
                s.share = s.effect / total if total and math.isfinite(s.effect) else math.nan
                out.steps.append(s)
        out.steps.sort(key=lambda s: commits.index(s.culprit) if s.culprit in commits else len(commits))
    found = [s for s in out.steps if s.status == "found"]
    out.share = sum(s.share for s in found if math.isfinite(s.share)) if found else math.nan
    out.several = (len(found) > 1 or bool(out.residual)
                   or any(s.share_p < plan.alpha / 3 for s in found if s is out.steps[0]))
    return out


def share_test(prober, four: tuple, share_min: float, runs: int) -> float:
    """One-sided p-value of "the step explains at least ``share_min`` of the endpoints' change",
    from the layouts GOOD, last good, culprit and BAD were all measured on: per layout
    x = log(culprit/last good) - share_min * log(BAD/GOOD), a t test of mean(x) >= 0 against
    mean(x) < 0 (the sign of the endpoints' change taken as measured).  nan with < 3 layouts."""
    k = min(prober.kmax.get(c, 0) for c in four)
    if k < 3:
        return math.nan
    try:
        g, lg, c, b = (prober.groups(x, k, runs) for x in four)
    except Skip:
        return math.nan
    ids = [i for i in g if i in lg and i in c and i in b]
    if len(ids) < 3:
        return math.nan

    def m(grp, i):
        return sum(math.log(v) for v in grp[i]) / len(grp[i])

    total = [m(b, i) - m(g, i) for i in ids]
    sign = 1.0 if sum(total) >= 0 else -1.0
    x = [sign * ((m(c, i) - m(lg, i)) - share_min * t) for i, t in zip(ids, total)]
    return stats.one_sided_t(x)


def planned_probes(n_commits: int, k: int = 1) -> int:
    """Probes a (k+1)-ary search over ``n_commits`` (GOOD and BAD included) makes: k per round
    over ceil(log_(k+1)(n - 1)) rounds (k = 1: a binary search, ceil(log2(n - 1)))."""
    if k <= 1:
        return max(1, math.ceil(math.log2(max(2, n_commits - 1))))
    return max(1, k * rounds_needed(n_commits, k))


def rounds_needed(n_commits: int, k: int) -> int:
    """ceil(log_(k+1)(n - 1)) in integers (no floating-point surprise at exact powers)."""
    span, r = max(2, n_commits - 1), 0
    while (k + 1) ** r < span:
        r += 1
    return max(1, r)


def probe_plan(plan: Plan, n_commits: int, k: int = 1) -> Plan:
    """Each probe gets alpha / (planned probes) (Bonferroni): the chance that *any* probe of the
    bisection is misjudged stays <= alpha."""
    return dataclasses.replace(plan, confidence=1.0 - plan.alpha / planned_probes(n_commits, k))


def split(lo: int, hi: int, cand: list[int], k: int) -> list[int]:
    """The probes of one round of a (k+1)-ary search of the window lo..hi: for each cut
    lo + (j+1)(hi-lo)/(k+1) the untested candidate nearest to it (ties: the earlier),
    each at most once; sorted.  k = 1: the candidate nearest the middle, as a bisection."""
    picks: list[int] = []
    for j in range(k):
        cut = lo + (j + 1) * (hi - lo) / (k + 1)
        left = [x for x in cand if x not in picks]
        if not left:
            break
        picks.append(min(left, key=lambda x: (abs(x - cut), x)))
    return sorted(picks)


def _total(prober, good, bad, plan: Plan, ends: Ends) -> float:
    """log(BAD/GOOD) over the most layouts both were measured at by the end (less biased by
    the early stop of the endpoints than the deciding look)."""
    k = min(prober.kmax.get(good, 0), prober.kmax.get(bad, 0))
    if k <= ends.layouts:
        return ends.comparison.log_ratio
    try:
        c = change(prober.groups(good, k, ends.runs), prober.groups(bad, k, ends.runs),
                   bool(prober.higher_is_better), plan.alpha, plan.min_effect)
    except Skip:
        return ends.comparison.log_ratio
    return c.log_ratio


def _one_step(prober, commits: list[str], plan: Plan, journal, segment, say) -> tuple[Step, int]:
    """One change point with one prober (a plain bisection)."""
    st, probes, _ = _k_step([prober], commits, plan, journal, segment, say)
    return st, probes


def _k_step(probers: list, commits: list[str], plan: Plan, journal, segment, say) -> tuple[Step, int, int]:
    """One change point with k probers: each round splits the window lo..hi (k+1)-ary
    (:func:`split`), probe j judged by prober j against GOOD and BAD measured by the same
    prober (never two machines in one comparison), the k judgements in parallel threads;
    then the marks are recorded in probe order (with the name of the prober that judged it)
    and the window narrows to the last good / first bad mark.  Each probe is judged at
    alpha / :func:`planned_probes` (n, k).  The confirmation runs on the first prober.
    Returns (step, probes, rounds)."""
    probes = rounds = 0
    good, bad = commits[0], commits[-1]
    k = len(probers)
    pplan = probe_plan(plan, len(commits), k)
    prober = probers[0]
    pool = ThreadPoolExecutor(max_workers=k - 1, thread_name_prefix="probe") if k > 1 else None
    try:
        while True:
            marks = journal.marks(segment)
            lo, hi, cand = _window(commits, marks)
            if not cand:
                break
            picks = split(lo, hi, cand, k)
            rounds += 1
            for i, pr in zip(picks, probers):
                where = f" on {pr.name}" if k > 1 and pr.name else ""
                say(f"probe {commits[i][:12]}{where} ({len(cand)} commit(s) left to test)")
            futs = [pool.submit(judge_probe, pr, commits[i], good, bad, pplan)
                    for i, pr in zip(picks[1:], probers[1:])] if pool else []
            first = judge_probe(prober, commits[picks[0]], good, bad, pplan)  # the first prober: this thread
            judged = [first] + [f.result() for f in futs]
            for i, pr, j in zip(picks, probers, judged):
                probes += 1
                journal.record(segment, commits[i], j, pr.name)
                say(f"{commits[i][:12]}: {j.describe()}" + (f" [{pr.name}]" if k > 1 and pr.name else ""))
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    marks = journal.marks(segment)
    lo, hi, _ = _window(commits, marks)
    skipped = [{"commit": commits[i], "why": marks[commits[i]].get("why", ""),
                "note": marks[commits[i]].get("note", "")}
               for i in range(lo + 1, hi) if marks.get(commits[i], {}).get("verb") == "skip"]
    if skipped:
        return Step("range", commits[lo], None, commits[lo + 1:hi + 1], skipped), probes, rounds
    culprit = commits[hi]
    # the seeds any decision of this bisection (this session or an earlier one) used on the pair
    ref = max([e.get("layouts", 0) for e in marks.values()] + [0])
    used = max([plan.layouts] + [p.kmax.get(c, 0) for p in probers for c in (commits[lo], culprit)]
               + [marks.get(c, {}).get("layouts", 0) for c in (commits[lo], culprit)]
               + [ref for c in (commits[lo], culprit) if c in (good, bad)])
    c, kc, effect = confirm(prober, commits[lo], culprit, plan, used)
    st = Step("found" if (c is not None and c.significant) else "uncertain", commits[lo], culprit,
              confirmation=c, confirm_layouts=kc, effect=effect)
    return st, probes, rounds


# -- the single-layout baseline --------------------------------------------------------------------

def single_layout(single, commits: list[str], threshold: float | None = None) -> dict:
    """What a tool without a layout model does (asv find): one value per commit (``single(c)``,
    the default link, one run), each probe called good or bad by the bracketing value it is
    nearer to.  With ``threshold`` it first says "no change" when the endpoints' values differ
    by less than that (relative)."""
    vals: dict[int, float | None] = {}

    def v(i: int) -> float | None:
        if i not in vals:
            try:
                vals[i] = single(commits[i])
            except Skip:
                vals[i] = None
        return vals[i]

    lo, hi = 0, len(commits) - 1
    if v(lo) is None or v(hi) is None:
        return {"culprit": None, "range": [], "note": "an endpoint does not build", "values": len(vals)}
    if threshold is not None and abs(math.log(v(hi) / v(lo))) < math.log1p(threshold):
        return {"culprit": None, "range": [], "note": f"endpoints differ by less than {100 * threshold:g}%",
                "values": len(vals)}
    while hi - lo > 1:
        mid = (lo + hi) / 2
        order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
        m = next((i for i in order if v(i) is not None), None)
        if m is None:
            return {"culprit": None, "range": commits[lo + 1:hi + 1], "note": "only unbuildable commits left",
                    "values": len(vals)}
        if abs(v(m) - v(lo)) <= abs(v(hi) - v(m)):
            lo = m
        else:
            hi = m
    change_ = v(hi) / v(lo) - 1 if v(lo) else math.nan
    return {"culprit": commits[hi], "change": change_, "range": [], "values": len(vals)}
