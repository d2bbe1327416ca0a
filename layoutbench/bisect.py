"""Layout-aware bisection: find the commit whose *code* changed a metric.

Every commit measured is built once (objects compiled once, cached) and linked in the seeded
layouts of ``--layout`` with seeds ``seed, seed+1, ...`` -- the same seeds on every commit, so
that neighbouring commits are compared layout for layout -- R runs each.  The decisions are
made by :mod:`layoutbench.decide`, which runs the same code in simulation
(``bench/simulate.py``); this module measures, keeps the marks in the log and prints:

* the **endpoints**: a sequential test of GOOD against BAD, K layouts a side at its first look,
  more at each later one.  When it shows no change of at least --min-effect the verdict is
  "no change shown" (status ``not-shown``): nothing is blamed and nothing is cleared, and the
  verdict says the smallest change the test would have shown.  "Within layout noise" (status
  ``noise``) is said only when an equivalence test passes (on the way, or with --prove-null).
* the **probes**: each judged against GOOD and BAD (good, bad, or between: a change on both
  sides, marked bad).  A probe still undecided at its furthest look ends the search of its
  range: the window around it is the answer (status ``range``), and the probe stays in the log as
  a skip (why ``uncertain``).  A commit that does not build, or whose runs all fail, is skipped
  and the search goes on around it; when only skipped commits are left the answer is a range.
* the **confirmation** of each culprit on fresh layouts, then the tests of the ranges beside
  it (every change point, unless --first-only); for each range beside a step where no change
  was shown the verdict says the smallest step that test would have shown.
* ``--budget``: the bisection stops with the best verdict it has when the runs are spent.

The state of a bisection -- its settings and a log of good/bad/skip marks -- lives in
the store's ``state`` table under ``bisect:<kernel>:<repo>:<subdir>``; the samples live
in the store as usual.  So an interrupted bisection resumes where it stopped: marks
already made are kept, runs already stored are not run again.  The log prints like
``git bisect log`` and ``replay`` re-applies one.

Beside its own verdict, a bisection reports what a single-layout bisection would
have concluded (default link, one run per probe, nearest-value rule as in asv find),
computed by running that bisection too, over the same store and object cache; its
cost is counted apart.  ``bisect run --plan`` measures the endpoints' first look only and
says what the bisection will likely cost, and whether a step of twice the minimum effect is
likely missed at the noise measured (:func:`forecast.missed_step`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shlex
import threading
from dataclasses import asdict, dataclass, fields

from . import build as buildmod
from . import costs, decide, fmt, forecast, measure, source, stats, targets, validate, verdict as verdictmod
from . import farm as farmmod
from . import layout as layoutmod
from .decide import Skip
from .errors import BuildFailed, LayoutbenchError
from .profile import Profile
from .store import Store, config_hash

CURRENT = "bisect:current"  #: state key naming the bisection the git-shaped verbs act on


@dataclass
class Settings:
    """What a bisection measures and how much it may spend per probe."""

    kernel: str
    repo: str | None = None
    subdir: str | None = None
    metric: str | None = None
    target: str | None = None
    args: str = ""  #: extra program arguments, one string
    mode: str = "rerun"
    layouts: int = 4  #: K: random layouts per probe at the first look, seeds seed..seed+K-1 on every commit
    max_layouts: int = decide.Plan.max_layouts  #: the furthest any test looks (layouts a side: K, 1.5K, ...)
    runs: int = 1  #: R: runs per layout
    max_runs: int = 1  #: --max-runs, stored with the settings; the tests add layouts, never runs
    seed: int = 1
    confidence: float = 0.95  #: 1 - alpha: the error budget of the whole bisection, shared over its tests
    #: smallest change (relative, e.g. 0.01) that counts as a change: the endpoints' estimate must reach it,
    #: a named commit's confirmation must show its step beyond it
    min_effect: float | None = decide.DEFAULT_MIN_EFFECT
    shadow: bool = True  #: also run the single-layout (default link, one run) bisection
    #: hash of the target's configuration (``measure.target_config``, filled in by ``normalize``):
    #: a bisection started under another one is started again, not resumed
    target_config: str = ""
    all_changes: bool = False  #: --all-changes, read from a log that has it; every change point is searched anyway
    first_only: bool = False  #: stop after the first confirmed change point
    prove_null: bool = False  #: prove "no change of min_effect" at the endpoints when none is shown (expensive)
    thorough: bool = False  #: the sub-ranges beside a found step are searched further for a smaller second step
    budget: int | None = None  #: runs the bisection may spend (None: no cap)
    #: ``--budget 8h``: seconds the bisection may spend, turned into runs at the time a run takes
    #: (costs.seconds_per_run); exclusive with ``budget``
    budget_time: float | None = None
    #: --runs not given: where a new layout costs more than a run (the target's layout_cost and
    #: run_cost, else measured), R is chosen from the costs and the measured noise split
    #: (choose_runs, costs.runs_per_layout)
    runs_auto: bool = False
    runs_choice: dict | None = None  #: that choice, once made (a resumed bisection keeps it)
    #: the seeded layout of the K layouts (``random``, ``shuffled``, ``padded``): a bisection
    #: started with another one is started again, not resumed; its runs are stored apart
    layout: str = "random"
    #: the options given on this command line (``--metric``, ``--budget``...; not kept in the state):
    #: what a continued bisection is checked against (``conflicts``) or applies (``_decision_flags``)
    given: tuple[str, ...] = ()

    #: the settings its marks were measured and judged with: a continued bisection cannot change them
    MEASURED = ("metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs", "max_runs", "seed",
                "confidence", "min_effect")
    #: what a continued bisection takes from the command line (the marks made stay valid)
    DECISIONS = ("first_only", "prove_null", "thorough", "budget", "budget_time", "shadow")

    OPTIONS = ("repo", "subdir", "metric", "target", "args", "mode", "layout", "layouts", "max_layouts", "runs",
               "max_runs", "seed", "confidence", "min_effect")

    def plan(self) -> decide.Plan:
        return decide.Plan(layouts=self.layouts, max_layouts=self.max_layouts, runs=self.runs,
                           max_runs=self.max_runs, confidence=self.confidence,
                           min_effect=decide.DEFAULT_MIN_EFFECT if self.min_effect is None else self.min_effect,
                           first_only=self.first_only, prove_null=self.prove_null, thorough=self.thorough,
                           budget=None if self.budget is None else int(self.budget))

    def check(self) -> None:
        exclusive(self)
        if self.mode not in measure.SAME_IMAGE_MODES:
            raise LayoutbenchError(f"bisect runs in mode {' or '.join(measure.SAME_IMAGE_MODES)}, not {self.mode!r}")
        if self.layouts < 2:
            raise LayoutbenchError("--layouts must be at least 2 (the layout noise needs two layouts)")
        if not layoutmod.get(self.layout).seeded:
            seeded = ", ".join(n for n, x in layoutmod.REGISTRY.items() if x.seeded)
            raise LayoutbenchError(f"--layout {self.layout} takes no seed; a bisection needs a seeded layout: {seeded}")
        if self.runs < 1:
            raise LayoutbenchError("--runs must be at least 1")
        if self.budget is not None and (isinstance(self.budget, bool) or not isinstance(self.budget, int)
                                        or self.budget < 1):
            costs.parse_budget(self.budget)  # one line naming --budget
        if self.budget_time is not None:
            costs.parse_budget(f"{self.budget_time}s")
        validate.options({"runs": self.runs, "max_runs": self.max_runs, "layouts_k": self.layouts,
                          "max_layouts": self.max_layouts, "confidence": self.confidence})
        validate.seed("--seed", self.seed, max(self.max_layouts, self.layouts) * 4)
        validate.min_effect_fraction(self.min_effect)
        self.max_layouts = max(self.max_layouts, self.layouts)
        self.max_runs = max(self.max_runs, self.runs)
        if not 0.5 < self.confidence < 1:
            raise LayoutbenchError("--confidence must be between 0.5 and 1, e.g. 0.95")
        names = self.targets
        if len(set(names)) != len(names):
            raise LayoutbenchError(f"--target {self.target} names a target twice; give each machine once")

    @property
    def targets(self) -> list[str | None]:
        """The targets of ``--target a,b,c`` (a farm: probes spread over them), or [None]: the default."""
        if not self.target:
            return [None]
        return [w.strip() for w in self.target.split(",") if w.strip()] or [None]

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("given")
        return d

    def conflicts(self, now: "Settings") -> list[str]:
        """The measured settings given in ``now`` that differ from these, as ``--metric t`` (these)."""
        out = []
        for name in self.MEASURED:
            if name in now.given and getattr(now, name) != getattr(self, name):
                out.append(f"--{name.replace('_', '-')} {option_value(name, getattr(self, name))}")
        if "target" in now.given and now.target == self.target and now.target_config != self.target_config:
            out.append(f"--target {self.target} as configured then (its [targets] table changed since)")
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Settings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def start_line(self, bad: str | None, good: str | None) -> str:
        words = ["layoutbench", "bisect", "start", self.kernel] + [w for w in (bad, good) if w]
        for name in self.OPTIONS:
            v = getattr(self, name)
            if v is None or (name == "args" and not v):
                continue
            words += [f"--{name.replace('_', '-')}", str(option_value(name, v))]
        if not self.shadow:
            words.append("--no-shadow")
        for flag in ("first_only", "prove_null", "thorough"):
            if getattr(self, flag):
                words.append("--" + flag.replace("_", "-"))
        if self.budget is not None:
            words += ["--budget", str(self.budget)]
        elif self.budget_time is not None:
            words += ["--budget", costs.duration_text(self.budget_time)]
        return shlex.join(words)


def exclusive(s: Settings) -> None:
    """--first-only and --thorough together: one line (the first stops before the sides the second searches)."""
    if s.first_only and s.thorough:
        raise LayoutbenchError("--first-only and --thorough cannot be used together: --first-only stops after the "
                               "first change point, --thorough searches the ranges beside it further; give one")


def interval(lo, hi) -> str:
    """A ratio's interval as printed: ``0.9912…1.0131``; a one-sided one's open end (infinite, or
    null in JSON read back from the store) as ``0`` below or ``∞`` above."""
    def end(x, upper: bool) -> str:
        return f"{x:.4f}" if isinstance(x, (int, float)) and math.isfinite(x) else ("∞" if upper else "0")
    return f"{end(lo, False)}…{end(hi, True)}"


def option_value(name: str, value):
    """A setting as its command-line option takes it: --min-effect is a percent with its sign (a log
    written without one holds a fraction), every other one as it is."""
    return f"{100 * value:.10g}%" if name == "min_effect" and value is not None else value


def state_key(kernel: str, repo, subdir) -> str:
    return f"bisect:{kernel}:{repo or ''}:{subdir or ''}"


# -- measuring ------------------------------------------------------------------------------------

class Prober:
    """Builds and measures commits for a bisection; remembers what it cost.

    A context manager: ``with Prober(...) as p:`` opens the target and closes it (its SSH
    connection, its lab place) at the end."""

    def __init__(self, profile: Profile, settings: Settings, store: Store, say=lambda m: None,
                 lock: threading.Lock | None = None, timeout: float | None = None):
        if len(settings.targets) > 1:  # a farm's settings: this prober measures on the first target
            settings = dataclasses.replace(settings, target=settings.targets[0])
        self.profile, self.s, self.store, self.say = profile, settings, store, say
        #: ``timeout``: seconds before a run is killed (None: the target's); not a setting of the
        #: bisection (a resumed one takes the one given now), nor of the target's configuration
        self.target = targets.make(profile, settings.target, timeout)
        self.name = settings.target or self.target.spec.name  #: the machine, as the marks name it
        #: with several probers in threads: held while compiling and linking (shared object cache)
        self.lock = lock
        self.extra = settings.args.split()
        self._objs: dict[str, buildmod.ObjectSet | Exception] = {}
        self.higher_is_better: bool | None = None
        self.unit = ""
        self.built: set[str] = set()  #: commits whose objects were compiled or reused
        self.failed_builds: set[str] = set()
        self.failed: set[tuple[str, str]] = set()  #: (purpose, commit) that did not build
        self.compiled_now = 0
        self.ran_now = 0
        self.used: dict[tuple[str, str], set] = {}  #: (purpose, commit) → {(layout, seed, rep)} used

    def __enter__(self) -> "Prober":
        self.target.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.target.__exit__(*exc)

    def checkout(self, rev: str | None) -> source.Checkout:
        return source.resolve(self.profile, rev, self.s.repo, self.s.subdir)

    def objects(self, co: source.Checkout) -> buildmod.ObjectSet:
        got = self._objs.get(co.commit)
        if got is None:
            try:
                got = buildmod.compile_objects(self.profile, co, None, self.say)
                self.built.add(co.commit)
                self.compiled_now += int(got.compiled_now)
            except BuildFailed as e:
                self.failed_builds.add(co.commit)
                got = e
            self._objs[co.commit] = got
        if isinstance(got, Exception):
            raise Skip(str(got))
        return got

    def _measure(self, co: source.Checkout, specs: list[tuple[str, int]], runs: int, purpose: str) -> dict:
        request = measure.MeasureRequest(self.profile, co, specs, runs, self.s.mode, self.s.target, self.extra)
        linked = None
        with self.lock or contextlib.nullcontext():
            try:
                objs = self.objects(co)
            except Skip:
                self.failed.add((purpose, co.commit))
                raise
            if self.lock is not None:  # link before the runs, one thread at a time (same files)
                linked = measure.link_all(objs, self.target.spec.image, self.store, request.jobs_planned())
        if getattr(self.target, "per_probe", False):
            self.target.hold()  # a slot of a labgrid-places farm: a place while it measures (farm.py)
        m = measure.measure_commit(request, self.store, self.target, objs=objs, linked=linked, say=self.say)
        self.ran_now += m.ran
        used = self.used.setdefault((purpose, co.commit), set())
        used.update((r["layout"], r["seed"], r["rep"]) for r in m.runs if r["rep"] < runs)
        samples = [x for x in m.samples if x["rep"] < runs and x["status"] == "ok"]
        mine = [x for x in samples if x["metric"] == self.s.metric]
        if mine:
            self.higher_is_better = bool(mine[-1]["higher_is_better"])
            self.unit = mine[-1]["unit"]
        groups = m.groups(self.s.metric, max_rep=runs)
        if not groups:
            seen_metrics = {x["metric"] for x in samples}
            if seen_metrics:
                raise LayoutbenchError(f"the runs of {self.profile.name} print no metric {self.s.metric!r}; "
                                       f"they print: {', '.join(sorted(seen_metrics))}")
            raise Skip(f"every run of {co.short} failed (see layoutbench results --runs --commit {co.short})")
        return groups

    def groups(self, co: source.Checkout, k: int, r: int, first: int = 0) -> dict[str, list[float]]:
        """The commit's values over the seeded layouts (``--layout``) ``seed+first .. seed+first+k-1``,
        ``r`` runs each (``first`` > 0: a confirmation's fresh seeds, the ones before not measured)."""
        specs = [(self.s.layout, self.s.seed + first + i) for i in range(k)]
        return self._measure(co, specs, r, "layouts")

    def single(self, co: source.Checkout) -> float:
        """One run of the default link: what a single-layout bisection sees."""
        g = self._measure(co, [("default", 0)], 1, "single")
        return g["default"][0]

    def cost(self, purpose: str = "layouts") -> dict:
        commits = {c for (p, c) in self.used if p == purpose}
        runs = sum(len(v) for (p, c), v in self.used.items() if p == purpose)
        images = sum(len({(lay, sd) for lay, sd, _ in v}) for (p, c), v in self.used.items() if p == purpose)
        failed = {c for (p, c) in self.failed if p == purpose}
        return {"builds": len(commits) + len(failed), "failed_builds": len(failed), "images": images, "runs": runs}


Judgement = decide.Judgement


class ThreadStore:
    """One store, opened anew in each thread that uses it (an SQLite connection must not
    cross threads): what a farm's extra probers measure into."""

    def __init__(self, path):
        self.path_or_url = path
        self._local = threading.local()

    def __getattr__(self, name):
        st = getattr(self._local, "store", None)
        if st is None:
            st = self._local.store = Store(self.path_or_url)
        return getattr(st, name)


def farm_cost(probers: list[Prober], purpose: str = "layouts") -> dict:
    """The cost over several probers: a commit built for two machines counts once; images and
    runs add up (each machine ran its own)."""
    commits = {c for p in probers for (pp, c) in p.used if pp == purpose}
    failed = {c for p in probers for (pp, c) in p.failed if pp == purpose}
    each = [p.cost(purpose) for p in probers]
    return {"builds": len(commits | failed), "failed_builds": len(failed),
            "images": sum(c["images"] for c in each), "runs": sum(c["runs"] for c in each)}


class Engine:
    """The prober as the decision engine (decide.py) sees it: commits by sha."""

    def __init__(self, p: Prober, cos: dict, after=None):
        self.p, self.cos = p, cos
        self.name = p.name
        self.after = after  #: called after each measurement (the duration budget's clock)

    @property
    def higher_is_better(self):
        return self.p.higher_is_better

    def groups(self, sha: str, k: int, r: int) -> dict:
        return self.groups_after(sha, 0, k, r)

    def groups_after(self, sha: str, first: int, k: int, r: int) -> dict:
        """The seeds after the first ``first`` only (decide.groups_after: a confirmation's fresh layouts)."""
        if sha not in self.cos:
            self.cos[sha] = self.p.checkout(sha)
        out = self.p.groups(self.cos[sha], k, r, first=first)
        if self.after is not None:
            self.after()  # the duration budget's clock sees a confirmation's runs too
        return out


def endpoints(p: Prober, good: source.Checkout, bad: source.Checkout) -> decide.Ends:
    """Do GOOD and BAD differ by at least --min-effect? Group-sequential (decide.endpoints)."""
    return decide.endpoints(Engine(p, {good.commit: good, bad.commit: bad}), good.commit, bad.commit, p.s.plan())


def judge_probe(p: Prober, probe: source.Checkout, good: source.Checkout, bad: source.Checkout) -> Judgement:
    """Classify one probe like GOOD or like BAD (decide.judge_probe)."""
    eng = Engine(p, {c.commit: c for c in (probe, good, bad)})
    return decide.judge_probe(eng, probe.commit, good.commit, bad.commit, p.s.plan())


class Journal:
    """The engine's marks, kept in the bisection's log (so that a killed bisection resumes)."""

    def __init__(self, b: "Bisection", profile: Profile, places: "farmmod.Farm | None" = None):
        self.b, self.profile, self.places = b, profile, places

    def marks(self, segment: str | None) -> dict[str, dict]:
        out = {e["commit"]: e for e in self.b.log
               if e["verb"] in ("good", "bad", "skip") and (e.get("segment") or None) == segment}
        if self.places is not None:  # a round starts: the places change hands (farm.py)
            self.places.round(segment, out)
        return out

    def record(self, segment: str | None, commit: str, j: Judgement, target: str | None = None) -> None:
        subj = _subject(self.profile, self.b.s, commit)
        extra = {"segment": segment} if segment else {}
        if target:
            extra["target"] = target  # the machine that judged it (GOOD and BAD measured there too)
        if self.places is not None:
            extra.update(self.places.place_of(target))  # the labgrid place of that slot
        if j.verdict in ("good", "bad", "between"):  # between (a change on both sides): bad, as decide's own journal
            self.b.mark("bad" if j.verdict == "between" else j.verdict, commit, j.describe(), "measured", subject=subj,
                        layouts=j.layouts, runs=j.runs, **extra)
        else:
            why = "uncertain" if j.verdict == "uncertain" else "build"
            self.b.mark("skip", commit, j.describe(), "measured", subject=subj, why=why, layouts=j.layouts,
                        runs=j.runs, **extra)


# -- the state and its log ------------------------------------------------------------------------

class Bisection:
    """A bisection's settings and marks, kept in the store's ``state`` table."""

    def __init__(self, store: Store, settings: Settings, log: list[dict] | None = None,
                 result: dict | None = None):
        self.store, self.s = store, settings
        self.log: list[dict] = log or []
        self.result = result

    @property
    def key(self) -> str:
        return state_key(self.s.kernel, self.s.repo, self.s.subdir)

    @classmethod
    def load(cls, store: Store, key: str) -> "Bisection | None":
        d = store.get_state(key)
        if d is None:
            return None
        return cls(store, Settings.from_dict(d["settings"]), d.get("log", []), d.get("result"))

    def save(self) -> None:
        self.store.set_state(self.key, {"settings": self.s.to_dict(), "log": self.log, "result": self.result})
        self.store.set_state(CURRENT, self.key)

    def reset(self) -> None:
        self.store.del_state(self.key)
        if self.store.get_state(CURRENT) == self.key:
            self.store.del_state(CURRENT)

    # marks
    def mark(self, verb: str, commit: str, note: str = "", by: str = "user", **extra) -> None:
        self.result = None
        self.log.append({"verb": verb, "commit": commit, "note": note, "by": by, **extra})
        self.save()

    def marks(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for e in self.log:
            if e["verb"] in ("good", "bad", "skip") and not e.get("segment"):
                out[e["commit"]] = e
        return out

    def entry(self, verb: str) -> dict | None:
        return next((e for e in reversed(self.log) if isinstance(e, dict) and e.get("verb") == verb), None)

    @property
    def good(self) -> str | None:
        e = self.entry("start")
        if e and e.get("good"):
            return e["good"]
        return next((e["commit"] for e in self.log if e["verb"] == "good"), None)

    @property
    def bad(self) -> str | None:
        e = self.entry("start")
        if e and e.get("bad"):
            return e["bad"]
        return next((e["commit"] for e in self.log if e["verb"] == "bad"), None)

    def commits(self, profile: Profile) -> list[str]:
        """GOOD, then the commits of GOOD..BAD oldest first (first parents)."""
        return [self.good] + source.rev_range(profile, f"{self.good}..{self.bad}", self.s.repo, self.s.subdir)

    def window(self, commits: list[str]) -> tuple[int, int, list[int]]:
        """(lo, hi, candidates): the last good index, the first bad index after it, and the
        indices between them still to test."""
        m = self.marks()
        lo = max([i for i, c in enumerate(commits) if m.get(c, {}).get("verb") == "good"] + [0])
        hi = min([i for i, c in enumerate(commits) if i > lo and m.get(c, {}).get("verb") == "bad"]
                 + [len(commits) - 1])
        cand = [i for i in range(lo + 1, hi) if commits[i] not in m]
        return lo, hi, cand

    def next_probe(self, commits: list[str]) -> int | None:
        lo, hi, cand = self.window(commits)
        if not cand:
            return None
        mid = (lo + hi) / 2
        return min(cand, key=lambda i: (abs(i - mid), i))

    def text(self, profile: Profile | None = None) -> str:
        """The log, as ``git bisect log`` prints it: commands, with what was seen as comments."""
        lines = [f"# layoutbench bisect log: {self.s.kernel} repo {self.s.repo or '(profile source)'}, "
                 f"metric {self.s.metric}"]
        opt = []
        if self.s.repo:
            opt += ["--repo", self.s.repo]
        if self.s.subdir:
            opt += ["--subdir", self.s.subdir]
        for e in self.log:
            v = e["verb"]
            if v == "start":
                lines.append(self.s.start_line(e.get("bad"), e.get("good")))
            elif v == "endpoints":
                lines.append(f"# endpoints: {e['note']}")
            elif v in ("good", "bad", "skip") and e.get("segment"):  # a mark in a range beside a found step
                lines.append(f"# {v} in {e['segment']}: [{e['commit']}] {e.get('subject', '')} -- {e.get('note', '')}")
            elif v == "place":
                lines.append(f"# place: {e['note']}")
            elif v in ("good", "bad", "skip"):
                subj = e.get("subject", "")
                where = f" on {e['place']}" if e.get("place") else ""
                lines.append(f"# {v}{where}: [{e['commit']}] {subj}" + (f" -- {e['note']}" if e.get("note") else ""))
                words = ["layoutbench", "bisect", v, e["commit"], "--kernel", self.s.kernel] + opt
                if v == "skip" and e.get("why"):
                    words += ["--why", e["why"]]
                lines.append(shlex.join(words))
        if self.result:
            r = self.result
            if r["status"] == "found":
                lines.append(f"# first bad commit: [{r['culprit']}] {r.get('culprit_subject', '')}")
            elif r["status"] == "uncertain":
                lines.append(f"# uncertain: points at [{r.get('candidate')}], not confirmed on fresh layouts")
            elif r["status"] == "range":
                lines.append("# only skipped commits left to test; the first bad commit is one of: "
                             + " ".join(c[:12] for c in r["range"]))
            elif r["status"] == "noise":
                lines.append("# GOOD and BAD do not differ beyond layout noise: nothing to bisect")
            elif r["status"] == "not-shown":
                lines.append("# no change shown between GOOD and BAD: no commit is blamed (and none is cleared)")
            elif r["status"] == "budget" and r.get("culprit"):
                lines.append(f"# first bad commit: [{r['culprit']}] {r.get('culprit_subject', '')} ({_budget_after(r)})")
            elif r["status"] == "budget":
                lines.append(f"# {r.get('budget_note') or 'not decided at this budget'}")
        return "\n".join(lines) + "\n"


KEPT = "bisect-verdict:"  #: state keys of finished bisections' verdicts, one per kernel, repository, range and metric


def kept_key(b: "Bisection") -> str:
    return f"{KEPT}{b.s.kernel}:{b.s.repo or ''}:{b.s.subdir or ''}:{b.good}..{b.bad}:{b.s.metric}"


def keep(store: Store, b: "Bisection") -> None:
    """Keep the finished verdict apart from the bisection's state, so that starting another
    bisection of the kernel (another range or metric) does not lose it: the report shows every one."""
    if b.result is not None:
        store.set_state(kept_key(b), {"settings": b.s.to_dict(), "result": b.result, "key": b.key})


def kept(store: Store) -> list[tuple[str, dict]]:
    """(key, verdict) of every finished bisection kept in the store, the latest first; the verdict
    of a bisection's state that holds one not kept apart (no ``bisect-verdict:`` key) too."""
    out, seen = [], set()
    for key, d in store.states(KEPT):
        if isinstance(d, dict) and isinstance(d.get("result"), dict):
            out.append((key, d["result"]))
            seen.add(key)
    for b in stored(store):
        if b.result and b.good and b.bad and kept_key(b) not in seen:  # its range and settings beside it
            out.append((kept_key(b), {"settings": b.s.to_dict(), "good": b.good, "bad": b.bad, **b.result}))
    return out


def stored(store: Store) -> list[Bisection]:
    """Every bisection kept in the store (its settings, log and verdict), the latest first."""
    out = []
    for key, d in store.states("bisect:"):
        if key == CURRENT or not isinstance(d, dict) or not isinstance(d.get("settings"), dict):
            continue
        try:
            out.append(Bisection(store, Settings.from_dict(d["settings"]), d.get("log") or [], d.get("result")))
        except TypeError:  # a state written by another version
            continue
    return out


def current(store: Store, kernel: str | None = None, repo: str | None = None, subdir: str | None = None,
            profile: Profile | None = None) -> Bisection:
    """The bisection the git-shaped verbs act on: the one of (kernel, repo) or the latest started."""
    if kernel is not None:
        repo_path, sub = (source.repo_for(profile, repo, subdir) if profile is not None else (repo, subdir))
        key = state_key(kernel, str(repo_path) if repo_path else None, sub or None)
        b = Bisection.load(store, key)
        if b is None:
            raise LayoutbenchError(f"no bisection of {kernel} in progress"
                                   f"{' for ' + str(repo_path) if repo_path else ''}; start one with "
                                   f"`layoutbench bisect start` or `layoutbench bisect {kernel} GOOD..BAD`")
        return b
    key = store.get_state(CURRENT)
    b = Bisection.load(store, key) if key else None
    if b is None:
        raise LayoutbenchError("no bisection in progress; start one with `layoutbench bisect KERNEL GOOD..BAD`")
    return b


def normalize(profile: Profile, s: Settings) -> Settings:
    """Resolve the repository path so that the state key is stable; fill defaults."""
    repo_path, sub = source.repo_for(profile, s.repo, s.subdir)
    s.repo = str(repo_path) if repo_path is not None else None
    s.subdir = sub or None
    names = s.targets
    if s.metric is None:
        kind = profile.target(names[0]).kind
        s.metric = "cg_cost" if kind == "cachegrind" else profile.default_metric
    if not s.metric:
        raise LayoutbenchError(f"{profile.path} names no default metric; give --metric")
    if len(names) == 1:
        s.target_config = config_hash(measure.target_config(targets.make(profile, s.target)))
    else:  # a farm: a bisection resumes only on the same machines, configured the same
        s.target_config = config_hash([measure.target_config(targets.make(profile, n)) for n in names])
    s.check()
    return s


def start(store: Store, profile: Profile, s: Settings, bad: str | None = None, good: str | None = None) -> Bisection:
    """Begin a bisection (replacing any earlier one of the same kernel and repository)."""
    s = normalize(profile, s)
    old = Bisection.load(store, state_key(s.kernel, s.repo, s.subdir))
    if old is not None:
        old.reset()
    b = Bisection(store, s)
    entry = {"verb": "start", "commit": "", "note": "", "by": "user"}
    if bad:
        entry["bad"] = source.resolve(profile, bad, s.repo, s.subdir).commit
    if good:
        entry["good"] = source.resolve(profile, good, s.repo, s.subdir).commit
    b.log.append(entry)
    b.save()
    return b


def mark(store: Store, profile: Profile, b: Bisection, verb: str, revs: list[str], why: str = "") -> list[str]:
    """The git-shaped verbs ``good``, ``bad``, ``skip``: mark commits by hand."""
    shas = []
    for rev in revs:
        co = source.resolve(profile, rev, b.s.repo, b.s.subdir)
        b.mark(verb, co.commit, note="marked by hand" if not why else why, by="user",
               subject=source.describe(co).get("subject", ""), **({"why": why} if why else {}))
        shas.append(co.commit)
    return shas


def replay(store: Store, text: str, load_profile) -> Bisection:
    """Re-apply a log printed by ``bisect log``: its start line, then every mark."""
    b: Bisection | None = None
    prof = None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            raise LayoutbenchError(f"replay line {n}: {e}; is this a log printed by `bisect log`?") from None
        if words[:2] == ["git", "bisect"] or words[:2] == ["layoutbench", "bisect"]:
            words = words[2:]
        if not words:
            continue
        verb, rest = words[0], words[1:]
        pos, opts = [], {}
        i = 0
        while i < len(rest):
            w = rest[i]
            if w == "--no-shadow":
                opts["shadow"] = False
            elif w in ("--all-changes", "--first-only", "--prove-null", "--thorough"):
                opts[w[2:].replace("-", "_")] = True
            elif w.startswith("--"):
                if i + 1 >= len(rest):
                    raise LayoutbenchError(f"replay line {n}: option {w} has no value")
                opts[w[2:].replace("-", "_")] = rest[i + 1]
                i += 1
            else:
                pos.append(w)
            i += 1
        if verb == "start":
            if not pos:
                raise LayoutbenchError(f"replay line {n}: start needs a kernel")
            prof = load_profile(pos[0])
            kw = {}
            for k, v in opts.items():
                try:
                    if k == "budget":
                        got = costs.parse_budget(v)
                        kw.update(budget=got.runs, budget_time=got.seconds)
                    elif k in ("layouts", "max_layouts", "runs", "max_runs", "seed"):
                        kw[k] = int(v)
                    elif k == "min_effect" and v.strip().endswith("%"):
                        kw[k] = validate.min_effect_percent(v, positive=True) / 100
                    elif k in ("confidence", "min_effect"):  # a log printed with the fraction: read as one
                        kw[k] = float(v)
                    elif k in Settings.OPTIONS or k in ("shadow", "all_changes", "first_only", "prove_null", "thorough"):
                        kw[k] = v
                except ValueError:
                    raise LayoutbenchError(f"replay line {n}: --{k.replace('_', '-')} {v!r} is not a number") from None
            b = start(store, prof, Settings(kernel=pos[0], **kw), *(pos[1:3] + [None, None])[:2])
        elif verb in ("good", "bad", "skip"):
            if b is None:
                raise LayoutbenchError(f"replay line {n}: {verb} before start; a log begins with a start line")
            mark(store, prof, b, verb, pos, opts.get("why", ""))
        else:
            raise LayoutbenchError(f"replay line {n}: unknown verb {verb!r}; expected start, good, bad or skip")
    if b is None:
        raise LayoutbenchError("the log holds no start line; nothing replayed")
    return b


# -- the automatic bisection ----------------------------------------------------------------------

def _subject(profile: Profile, s: Settings, sha: str) -> str:
    try:
        return source.describe(source.resolve(profile, sha, s.repo, s.subdir)).get("subject", "")
    except LayoutbenchError:
        return ""


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
    from . import symdiff
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


def _run(stack: contextlib.ExitStack, store: Store, profile: Profile, s: Settings,
         ends: tuple[str | None, str | None], say, plan_only: bool = False, timeout: float | None = None) -> dict:
    good, bad = ends
    s = normalize(profile, s)
    key = state_key(s.kernel, s.repo, s.subdir)
    b = Bisection.load(store, key)
    if good is not None and bad is not None:
        g = source.resolve(profile, good, s.repo, s.subdir).commit
        bd = source.resolve(profile, bad, s.repo, s.subdir).commit
        if b is not None and (b.good, b.bad) == (g, bd) and b.s.metric == s.metric and b.s.target == s.target \
                and b.s.args == s.args and b.s.target_config == s.target_config and b.s.layout == s.layout \
                and not b.s.conflicts(s):
            say(f"resuming the bisection of {profile.name} {g[:12]}..{bd[:12]} ({len(b.log) - 1} entries)")
            s = _decision_flags(b, s, say)
        else:
            if b is not None:
                was = b.s.conflicts(s)
                say(f"replacing the earlier bisection of {profile.name} "
                    f"({b.good and b.good[:12]}..{b.bad and b.bad[:12]}" + (f", {', '.join(was)}" if was else "") + ")")
            b = start(store, profile, s, bd, g)
    elif b is None:
        raise LayoutbenchError(f"no bisection of {profile.name} in progress; give GOOD..BAD")
    else:
        _refuse_conflicts(b, s, profile)
        s = _decision_flags(b, s, say)
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
    p = Prober(profile, dataclasses.replace(s, target=names[0]) if lock else s, store, say, lock, timeout)
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

    # 0. runs per layout from the costs the target states (measured noise split), once
    if choose_runs(p, b, s, cos, say) is not None and b.s is s and not plan_only:
        b.save()
    # 1.-3. the endpoints, the probes, the confirmation (decide.py; the marks go to the log)
    plan = s.plan()
    eng = decide.Tracked(Engine(p, cos))
    ledger = eng.ledger
    ledger.budget = plan.budget
    look = (s.runs_choice or {}).get("look_runs", 2)
    if s.runs_choice and s.runs < look:  # the runs the choice measured beyond R count against the budget too
        ledger.spent = (look - s.runs) * 2 * max(decide.MIN_LAYOUTS, s.layouts)
    clock = Clock(p, s, ledger)
    eng.prober.after = clock.update
    engines = [eng] + [decide.Tracked(Engine(q, dict(cos), after=clock.update), ledger) for q in probers[1:]]
    retrying = places.retrying if places is not None else (lambda what, fn: fn())
    if s.budget is not None or s.budget_time is not None:
        say(clock.assumes())
    if plan_only:
        return _plan_only(eng, b, s, plan, commits, say, clock)

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
            places.engines(engines) if places is not None else engines if len(engines) > 1 else eng, commits, plan,
            journal, None, progress, ends=ends))
        if places is not None:
            places.release_all()
        verdict["rounds"], verdict["probes"] = out.rounds, out.probes
        verdict["runs_spent"] = out.runs
        found = [st for st in out.steps if st.status == "found"]
        if not out.steps:  # the budget ended before any step was searched out
            out.steps.append(decide.Step("range", b.good, None, commits[1:]))
        first = found[0] if found else out.steps[0]  # the first bad commit: the earliest confirmed step
        verdict["skipped"] = first.skipped
        verdict["several"] = out.several
        verdict["share"] = first.share
        verdict["residual"] = out.residual
        verdict["sides"] = out.sides
        verdict["bound"] = out.bound()
        verdict["steps"] = [{"status": st.status, "last_good": st.last_good, "culprit": st.culprit,
                             "subject": _subject(profile, s, st.culprit) if st.culprit else "",
                             "share": st.share, "range": st.range,
                             "effect": _cmp(st.confirmation) if st.confirmation else None} for st in out.steps]
        if first.status == "range":
            verdict.update(status="range", culprit=None, range=first.range)
        else:
            verdict.update(status=first.status, culprit=first.culprit if first.status == "found" else None,
                           candidate=first.culprit, culprit_subject=_subject(profile, s, first.culprit), range=[])
            verdict["last_good"] = first.last_good
            if first.confirmation is not None:
                verdict["effect"] = {**_cmp(first.confirmation), "fresh_layouts": first.confirm_layouts,
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
    verdict["costs"] = target_costs(p, s).to_dict()
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
        sl["agrees"] = (sl["culprit"] == ours) if verdict["status"] in ("found", "uncertain", "budget") else (
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


def target_costs(p: Prober, s: Settings) -> costs.Costs:
    """The layout and run cost of the prober's target: as the profile states them, else as
    measured (the medians of the links of this kernel's image and of the ok runs of this kernel
    on this target, mode and arguments that the store holds, the bisection's own included)."""
    lc, rc = costs.target_costs(p.target.spec.settings)
    if lc is not None and rc is not None:
        return costs.choose(lc, rc)
    m = costs.measured(p.store.link_seconds(p.profile.name, p.target.spec.image),
                       p.store.run_seconds(p.profile.name, p.target.spec.name, s.mode, " ".join(p.extra)),
                       getattr(p.target, "run_noun", "runs"))
    return costs.choose(lc, rc, m)


class Clock:
    """The budget in runs and in time: a ``--budget 8h`` turned into runs at the time a run takes
    (costs.seconds_per_run of ``target_costs``: the target's stated costs, else the costs
    measured in the store, the bisection's own first runs included), updated as runs are
    measured; and the progress text (runs spent / planned, time left)."""

    def __init__(self, p: Prober, s: Settings, ledger):
        self.p, self.s, self.ledger = p, s, ledger
        self.likely: int | None = None  #: the plan's likely cost in runs, when known
        self.update()

    def per_run(self) -> tuple[float | None, str]:
        return costs.seconds_per_run(target_costs(self.p, self.s), self.s.runs)

    def update(self) -> None:
        """Set the ledger's budget in runs from a duration budget (once a run's time is known)."""
        if self.s.budget_time is not None:
            sec, _ = self.per_run()
            if sec is not None:
                self.ledger.budget = costs.runs_for(self.s.budget_time, sec)
        elif self.s.budget is not None:
            self.ledger.budget = self.s.budget

    def assumes(self) -> str:
        """What the budget assumes before the bisection spends anything (one line)."""
        sec, why = self.per_run()
        if self.s.budget_time is None and self.s.budget is None:
            return ""
        given = (f"budget {costs.duration_text(self.s.budget_time)}" if self.s.budget_time is not None
                 else f"budget {self.s.budget} runs")
        if sec is None and self.s.budget_time is None:
            return f"{given} (the time a run takes is not measured yet)"
        if sec is None:
            return (f"{given}: the time a run takes is not measured yet (no stored run of this kernel and "
                    f"target); the budget in runs is set after the endpoints' first runs")
        runs = self.ledger.budget
        return f"{given}: {runs} runs at {sec:.3g} s a run ({why})" + (
            f", about {costs.duration_text(runs * sec)}" if self.s.budget_time is None else "")

    def progress(self) -> str:
        """'; N runs planned, about T left at X s a run (est.)' for a progress line."""
        sec, _ = self.per_run()
        lg = self.ledger
        planned = lg.budget if lg.budget is not None else self.likely
        if planned is None:
            return ""
        # with a budget the engine's line already says "N runs spent of B"
        if lg.budget is None and lg.spent > planned:  # beyond the likely cost: no time left to estimate
            return f"; {lg.spent}/{planned} runs spent/planned (beyond the plan's likely cost)"
        out = "" if lg.budget is not None else f"; {lg.spent}/{planned} runs spent/planned (the plan's likely cost)"
        if sec is not None:
            out += (f"; about {costs.duration_text(max(0, planned - lg.spent) * sec)} left at {sec:.3g} s a run "
                    "(estimated)")
        return out

    def summary(self) -> dict:
        """The budget, spent and the time estimate, for the verdict's JSON."""
        sec, why = self.per_run()
        lg = self.ledger
        return {"runs": lg.budget, "duration": self.s.budget_time,
                "duration_text": None if self.s.budget_time is None else costs.duration_text(self.s.budget_time),
                "spent": lg.spent, "likely_runs": self.likely, "seconds_per_run": sec, "seconds_per_run_from": why,
                "time_spent_estimate": None if sec is None else lg.spent * sec,
                "time_left_estimate": None if sec is None or lg.budget is None else max(0, lg.budget - lg.spent) * sec}


def choose_runs(p: Prober, b: "Bisection", s: Settings, cos: dict, say) -> dict | None:
    """Runs per layout from the costs, when --runs was not given and the bisection has not
    measured its endpoints yet.  The costs are ``target_costs``: stated in the profile, or
    measured -- then GOOD and BAD are first measured at their first look with 1 run a layout
    (the endpoints' own first look, so the links and runs of this bisection count), and where
    a new layout costs no more than a run, R = 1 and no run is spent on splitting the noise.
    Otherwise (and always with both costs stated) GOOD and BAD are measured at their first
    look with 2 runs a layout (the least that splits the noise), and R = costs.runs_per_layout
    of the measured layout and run variance.  Sets ``s.runs``; returns the choice (kept in
    the settings: a resumed bisection keeps it), or None."""
    k = max(decide.MIN_LAYOUTS, s.layouts)

    def look(runs: int) -> list[dict]:
        try:  # (a resumed bisection reads them from the store: its cost counts them as the first run did)
            return [p.groups(cos[c], k, runs) for c in (b.good, b.bad)]
        except Skip as e:
            raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None

    if s.runs_choice:
        look(s.runs_choice.get("look_runs", 2))
        return s.runs_choice
    if not s.runs_auto or b.entry("endpoints") is not None:
        return None
    c = target_costs(p, s)
    if not c.stated:
        look(1)
        c = target_costs(p, s)
        if c.layout is None or c.run is None or c.run <= 0:
            return None
        if not costs.worth_splitting(c):
            choice = {"runs": 1, "optimum": None, "layout_cost": c.layout, "run_cost": c.run, "costs": c.to_dict(),
                      "look_runs": 1, "max": costs.MAX_RUNS_PER_LAYOUT,
                      "text": (f"runs per layout: 1: a new layout ({c.layout:.3g} s) costs no more than a run "
                               f"({c.run:.3g} s), so no run is spent splitting the noise (costs {c.text})")}
            s.runs, s.runs_choice = 1, choice
            say(choice["text"])
            return choice
    groups = look(2)
    split = costs.noise_split(groups)
    if split is None:
        return None
    lc, rc = c.layout, c.run
    r, raw = costs.runs_per_layout(lc, rc, split.var_run, split.var_layout)
    noise = (f"(run noise {100 * math.sqrt(split.var_run):.3g}% / layout noise "
             f"{100 * math.sqrt(split.var_layout):.3g}%)^2) = {raw:.3g}, rounded, within 1..{costs.MAX_RUNS_PER_LAYOUT}")
    where = f"noise measured on GOOD and BAD, {k} layouts x 2 runs"
    text = (f"runs per layout: {r} = sqrt((layout_cost {lc:g} s / run_cost {rc:g} s) x {noise} (costs {c.text}; "
            f"{where})" if c.stated else
            f"runs per layout: {r} = sqrt((a layout {lc:.3g} s / a run {rc:.3g} s) x {noise} (costs {c.text}; {where})")
    choice = {"runs": r, "optimum": raw, "layout_cost": lc, "run_cost": rc, "costs": c.to_dict(), "look_runs": 2,
              "layout_noise": math.sqrt(split.var_layout), "run_noise": math.sqrt(split.var_run),
              "max": costs.MAX_RUNS_PER_LAYOUT, "measured": f"GOOD and BAD, {k} layouts x 2 runs", "text": text}
    s.runs, s.max_runs, s.runs_choice = r, max(s.max_runs, r), choice
    say(choice["text"])
    return choice


def _ends_unspent(eng, b, s: Settings, plan, commits: list) -> int:
    """About how many more runs the endpoints alone would need to decide: the look at which
    their test likely decides (forecast.expected_cost at the noise and change measured so far),
    else their first look."""
    have = sum(sum(eng.have.get(c, {}).values()) for c in (b.good, b.bad))  # the endpoints' runs measured so far
    y = eng.pool.y
    s2, _ = eng.pool.var()
    if b.good not in y or b.bad not in y or not math.isfinite(s2) or s2 <= 0:
        return max(1, 2 * max(decide.MIN_LAYOUTS, s.layouts) * s.runs - have)
    d = float(y[b.bad].mean() - y[b.good].mean())
    c = forecast.expected_cost(len(commits), math.exp(d), math.sqrt(s2), plan)
    return max(1, 2 * c["endpoint_layouts"] * s.runs - have)


def _budget_at_endpoints(eng, b: "Bisection", s: Settings, commits: list, clock: Clock, profile: Profile,
                         p: Prober) -> dict:
    """The verdict when the budget ends before the endpoints decide: not decided, and about how
    many more runs would be needed."""
    more = _ends_unspent(eng, b, s, s.plan(), commits)
    sec, _ = clock.per_run()
    when = f" (about {costs.duration_text(more * sec)} at {sec:.3g} s a run)" if sec is not None else ""
    note = (f"not decided at this budget ({clock.ledger.spent} of {clock.ledger.budget} runs spent): the endpoints "
            f"have not shown a change yet; about {more} more runs would be needed{when}")
    verdict = {"kernel": profile.name, "repo": s.repo, "metric": s.metric, "unit": p.unit,
               "target": s.target or p.target.spec.name, "good": b.good, "bad": b.bad, "commits": len(commits) - 1,
               "settings": s.to_dict(), "endpoints": None, "status": "budget", "culprit": None, "range": [],
               "budget_note": note, "more_runs": more, "message": note, "candidates": [],
               "runs_spent": clock.ledger.spent,
               "cost": {**p.cost("layouts"), "compiled_now": p.compiled_now, "ran_now": p.ran_now},
               "budget": clock.summary(), "runs_per_layout": s.runs_choice}
    b.result = verdict
    b.save()
    keep(b.store, b)
    return verdict


#: the lines of decide.bisect_range that start a phase or a look in one (progress: runs spent / planned)
PHASES = ("endpoints: ", "probe ", "confirmation ", "side test ")


def _likely_runs(eng, b, plan, commits: list) -> int | None:
    """The plan's likely cost in runs (forecast.expected_cost) at the noise and change the endpoints'
    first look measured (None before both ends have two layouts)."""
    y = eng.pool.y
    s2, _ = eng.pool.var()
    if b.good not in y or b.bad not in y or not (math.isfinite(s2) and s2 > 0):
        return None
    return forecast.expected_cost(len(commits), math.exp(float(y[b.bad].mean() - y[b.good].mean())),
                                math.sqrt(s2), plan)["runs"]


def _plan_only(eng, b, s: Settings, plan, commits: list, say, clock: "Clock | None" = None) -> dict:
    """The endpoints' first look (K layouts each), then the likely cost of the bisection at the
    noise and the change it measured (forecast.expected_cost), and a warning when a step of twice
    the minimum effect is likely missed at that noise (forecast.missed_step, :func:`missed_lines`)."""
    k = max(decide.MIN_LAYOUTS, s.layouts)
    try:
        for c in (b.good, b.bad):
            eng.pool.add(c, eng.groups(c, k, s.runs))
    except Skip as e:
        raise LayoutbenchError(f"an endpoint cannot be measured: {e}") from None
    except decide.OutOfBudget:
        raise LayoutbenchError(f"--budget {eng.ledger.budget} runs does not pay for the endpoints' first look "
                               f"({2 * k * s.runs} runs: {k} layouts x {s.runs} run(s) a side), the least a plan "
                               f"or a verdict needs; give a larger --budget (or --budget none)") from None
    s2, _ = eng.pool.var()
    d = float(eng.pool.y[b.bad].mean() - eng.pool.y[b.good].mean())
    noise = math.sqrt(s2) if math.isfinite(s2) else math.nan
    cost = forecast.expected_cost(len(commits), math.exp(d), noise, plan)
    ph = cost["phase_runs"]
    msg = (f"plan: BAD/GOOD = {math.exp(d):.4f} at the first look ({s.layouts} layouts a side), layout noise "
           f"{100 * noise:.2f}% (a step of {cost['step_in_noise_units']:.1f} x the noise); likely cost (the median of "
           f"{cost['histories']} bisections simulated at this noise and change): endpoints {ph['endpoints']} runs "
           f"({cost['endpoint_layouts']} layouts a side), {cost['probes']} probes {ph['probes']} runs, the "
           f"confirmation {ph['confirmation']} runs ({cost['confirm_layouts']} fresh layouts a side), the tests of "
           f"the ranges beside the step {ph['sides']} runs: about {cost['runs']} runs ({s.runs} run(s) per layout)"
           + "; every further change point costs about as much again")
    lines = [msg]
    missed = forecast.missed_step(noise, plan)
    if missed is not None and missed["likely_missed"]:
        lines.extend(missed_lines(missed, s.runs))
    if s.runs_choice:
        lines.append(s.runs_choice["text"])
    out = {"kernel": b.s.kernel, "good": b.good, "bad": b.bad, "commits": len(commits) - 1, "status": "plan",
           "plan": cost, "ratio": math.exp(d), "noise": noise, "settings": s.to_dict(),
           "runs_per_layout": s.runs_choice, "missed_step": missed}
    if clock is not None:
        out["costs"] = target_costs(clock.p, s).to_dict()
        if not s.runs_choice and out["costs"]["text"]:
            lines.append(f"costs: {out['costs']['text']}")
        clock.likely = cost["runs"]
        sec, why = clock.per_run()
        if sec is not None:
            lines.append(f"time: about {costs.duration_text(cost['runs'] * sec)} at {sec:.3g} s a run ({why})")
        if clock.s.budget_time is not None or clock.s.budget is not None:
            lines.append(clock.assumes() + (" -- the likely cost fits" if clock.ledger.budget is not None
                                            and cost["runs"] <= clock.ledger.budget else
                                            " -- the likely cost does not fit: the verdict may be 'not decided at "
                                            "this budget'" if clock.ledger.budget is not None else ""))
        out["budget"] = clock.summary()
    out["message"] = "\n".join(lines)
    return out


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
            "p_value": c.p_value, "verdict": c.verdict, "layouts": c.n_layouts_a, "runs_a": c.n_runs_a,
            "runs_b": c.n_runs_b, "layout_noise": c.layout_noise, "layout_noise_upper": c.layout_noise_upper,
            "noise_separated": c.noise_separated, "noise": c.noise_text(), "min_effect": c.min_effect,
            "explained_by_layout": c.explained_by_layout, "per_layout_ratios": c.per_layout_ratios,
            "wilcoxon_p": c.wilcoxon_p, "describe": c.describe()}


def _several(v: dict) -> list[str]:
    """The lines that say the found step is not the whole story."""
    if not v.get("several"):
        return []
    out = [f"several changes or a drift: the step found explains {fmt.pct(v.get('share'))} of the endpoints' change"]
    for st in v.get("steps", []):
        if st["culprit"]:
            e = st.get("effect") or {}
            out.append(f"  step at {st['culprit'][:12]} {st.get('subject', '')} ({st['status']}; "
                       f"x{e.get('ratio', math.nan):.4f}, share {fmt.pct(st.get('share'))})")
    for rs in v.get("residual", []):
        out.append(f"  another change between {rs['good'][:12]} and {rs['bad'][:12]} (x{rs['ratio']:.4f})")
    if v["settings"].get("first_only"):
        out.append("  (--first-only: stopped after one; without it every change point is searched)")
    return out


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
               f" {e['verdict']}, fresh layouts), {e['noise']}")
    if v["status"] in ("found", "budget") and v.get("culprit"):
        return f"first bad commit {v['culprit'][:12]} {v.get('culprit_subject', '')}{eff}{more}"
    if v["status"] == "uncertain":
        return (f"uncertain: the bisection points at {v['candidate'][:12]} {v.get('culprit_subject', '')} but the "
                f"confirmation on fresh layouts did not show the change{eff}{more}")
    return (f"the first bad commit is one of {len(v['range'])}: " + " ".join(c[:12] for c in v["range"])
            + f" (skipped: {len(v['skipped'])}){eff}")


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
        lines.append("         but its confirmation (last good vs it, fresh layouts) did not show a change")
    else:
        lines.append(f"verdict: the first bad commit is one of these {len(v['range'])} "
                     "(the others could not be judged):")
        for c in v["range"]:
            why = next((s for s in v.get("skipped", []) if s["commit"] == c), None)
            lines.append(f"         {c[:12]}" + (f"  skipped ({why['why']}): {why['note'][:100]}" if why else ""))
    e = v.get("effect")
    if e:
        lines.append(f"effect:  {v['metric']} x{e['ratio']:.4f} vs {v['last_good'][:12]} "
                     f"({ci_label(e['confidence'], v)} {interval(e['ci_low'], e['ci_high'])}, {e['verdict']}, "
                     f"paired over {e['layouts']} fresh layouts); share of the endpoints' change "
                     f"{fmt.pct(v.get('share'))}")
        if e.get("step_ratio"):
            lines.append(f"size:    x{e['step_ratio']:.4f} over every layout measured on the pair (an estimate; the "
                         f"minimum effect {fmt.pct(v['settings'].get('min_effect') or decide.DEFAULT_MIN_EFFECT)} "
                         "is tested by the interval above, on fresh layouts only)")
        lines.append(f"layout noise there: {e['noise']}; a single layout would confuse this effect with a "
                     f"relink with probability {e['explained_by_layout']:.2f}")
    lines.extend(_several(v))
    lines.extend(_sides(v))
    lines.extend(verdictmod.not_ruled_out_line(u) for u in verdictmod.not_ruled_out(v))
    code = v.get("code")
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
    sl = v.get("single_layout")
    if sl:
        said = (f"{sl['culprit'][:12]} {sl.get('culprit_subject', '')}" if sl["culprit"]
                else "no culprit (" + sl.get("note", "") + ")")
        if sl["agrees"]:
            head = "agrees"
        elif v["status"] in ("noise", "not-shown", "range") or (v["status"] == "budget" and not v.get("culprit")):
            head = "would blame what this bisection does not"
        else:
            head = "DIFFERS"
        lines.append(f"single-layout bisection (default link, 1 run per probe, as asv find) {head}: it blames {said}"
                     f"; it took {sl['builds']} builds, {sl['runs']} runs")
    return "\n".join(lines)


# -- judge: one probe, as a `git bisect run` script -----------------------------------------------

class Abort(LayoutbenchError):
    """Stop a `git bisect run` (exit codes of 128 and above abort it instead of marking bad)."""

    exit_code = 128


JUDGE_EXIT = {"good": 0, "bad": 1, "between": 1, "uncertain": 125, "skip": 125}  # between: a change on both sides


def judge(store: Store, profile: Profile, s: Settings, rev: str | None, good: str | None, bad: str | None,
          say=lambda m: None) -> tuple[int, Judgement, dict]:
    """Measure ``rev`` (None: the working tree) over the K layouts against the GOOD and BAD
    references and return (exit code, judgement, details): 0 like GOOD, 1 like BAD, 125 when
    it cannot be built or measured, or stays uncertain within the budget."""
    with contextlib.ExitStack() as stack:  # closes the prober's target
        return _judge(stack, store, profile, s, (rev, good, bad), say)


def _judge(stack: contextlib.ExitStack, store: Store, profile: Profile, s: Settings, revs: tuple, say
           ) -> tuple[int, Judgement, dict]:
    rev, good, bad = revs
    if len(s.targets) > 1:  # one checkout, one verdict: a probe is judged on one machine
        raise Abort(f"judge measures on one machine; give one --target, not {s.target!r}")
    s = normalize(profile, s)
    if good is None or bad is None:
        b = Bisection.load(store, state_key(s.kernel, s.repo, s.subdir))
        if b is None or not b.good or not b.bad:
            raise Abort("judge needs --good and --bad, or a bisection of this kernel and repository in progress")
        good, bad = good or b.good, bad or b.bad
    p = stack.enter_context(Prober(profile, s, store, say))
    good_co, bad_co = p.checkout(good), p.checkout(bad)
    try:
        ends = endpoints(p, good_co, bad_co)
    except Skip as e:
        raise Abort(f"a reference cannot be measured: {e}") from None
    if ends.status != "differs":
        e = ends.comparison
        said = "do not differ beyond layout noise" if ends.status == "noise" else "show no change"
        raise Abort(f"GOOD and BAD {said} (BAD/GOOD {e.ratio:.4f}, CI {interval(e.ci_low, e.ci_high)}); "
                    "there is nothing to bisect")
    probe = p.checkout(rev)
    j = judge_probe(p, probe, good_co, bad_co)
    details = {"commit": probe.commit, "verdict": j.verdict, "judgement": asdict(j), "endpoints": _cmp(ends.comparison),
               "cost": p.cost("layouts"), "exit": JUDGE_EXIT[j.verdict]}
    return JUDGE_EXIT[j.verdict], j, details
