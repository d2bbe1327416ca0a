"""Measuring for a bisection: building commits, linking their layouts, running them (one prober a
target; a farm's extra probers each on their own store connection), and what that cost."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from .. import build as buildmod
from .. import decide, measure, source, targets
from ..decide import Skip
from ..errors import BuildFailed, LayoutbenchError
from ..profile import Profile
from ..store import Store
from .settings import Settings

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
        #: where the metric came from, as an error names it (a resumed bisection's is in its state)
        self.metric_from = "--metric" if "metric" in settings.given else "the bisection's metric"
        targets.check_metric(profile, self.target, settings.metric, self.metric_from)  # before a build
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
        self.copied_now = 0  #: runs taken from a run of the same image file (an exact target), not made again
        self.used: dict[tuple[str, str], set] = {}  #: (purpose, commit) → {(layout, seed, rep)} used
        #: what a build's line says it is for (the runner's phase; bisect.progress.build_context)
        self.why = lambda: ""
        #: the images new to this bisection that this command measured (a copied run too), and how many it linked
        #: (a layout already linked, or a neighbour's objects' images, needs no link): the time left
        self.images_new = 0
        self.links_now = 0
        #: the next image links while the current one runs (measure.links_ahead; not in a farm, whose
        #: probers link under one lock), on a machine with a core for each: the time left overlaps them
        self.links_beside_runs = lock is None and measure.links_beside_runs(self.target)
        #: the same machines compile a commit whose turn is known (BAD, the first probe) beside the runs
        #: of the one before it: its build starts once the commit measured now has its objects
        self.compiles_ahead = self.links_beside_runs
        #: two runs at once (measure.side_by_side: a cache model's counts, two cores) while no compile runs
        self.runs_side_by_side = lock is None and measure.side_by_side(self.target) > 1
        self._queued: list[tuple[source.Checkout, str]] = []  #: (commit, what for) to compile ahead
        self._ahead: dict[str, Future] = {}  #: commit -> its compile ahead, running or done
        self._pool: ThreadPoolExecutor | None = None
        self._counting = threading.Lock()  #: compiled_now, counted by the compiling thread too

    def __enter__(self) -> "Prober":
        self.target.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:  # a compile ahead still running ends with the command (procs.kill_all)
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.target.__exit__(*exc)

    def compile_ahead(self, checkout: source.Checkout, what: str) -> None:
        """Queue ``co`` (``what``: its turn, as its compile line says) to compile beside the runs of
        the commit measured before it: on a count target with a core for each (``compiles_ahead``),
        else nothing."""
        if self.compiles_ahead and checkout.commit not in self._objs and checkout.commit not in self._ahead \
                and all(q.commit != checkout.commit for q, _ in self._queued):
            self._queued.append((checkout, what))

    def _start_ahead(self, now: source.Checkout) -> None:
        """Start the queued compiles (one at a time, in their order) beside the runs of ``now``."""
        if not self._queued:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="layoutbench-compile")
        for co, what in self._queued:
            why = (f"for {what}, ahead: beside the runs of the commits before it, from {now.short}'s on (a count "
                   "target: a compile beside a run changes none of its counts)")
            self._ahead[co.commit] = self._pool.submit(self._compile, co, why)
        self._queued = []

    def _compile(self, checkout: source.Checkout, why: str) -> buildmod.ObjectSet:
        """Compile ``co`` (in the compiling thread) and count it, also when nothing waits for it."""
        got = buildmod.compile_objects(self.profile, checkout, None, self.say, why=why)
        with self._counting:
            self.compiled_now += int(got.compiled_now)
        return got

    def _spare(self, running: int) -> bool:
        """Whether a core is spare for a second run beside the ``running`` runs of this command: no compile
        ahead queued or running, and measure.spare_core."""
        return self.ahead_running() == 0 and measure.spare_core(running)

    def ahead_running(self) -> int:
        """Compiles ahead queued or not yet finished."""
        return len(self._queued) + sum(not f.done() for f in self._ahead.values())

    def checkout(self, rev: str | None) -> source.Checkout:
        return source.resolve(self.profile, rev, self.s.repo, self.s.subdir)

    def objects(self, checkout: source.Checkout) -> buildmod.ObjectSet:
        got = self._objs.get(checkout.commit)
        if got is None:
            ahead = self._ahead.pop(checkout.commit, None)
            try:
                got = ahead.result() if ahead is not None else self._compile(checkout, self.why())
                self.built.add(checkout.commit)
            except BuildFailed as e:
                self.failed_builds.add(checkout.commit)
                got = e
            self._objs[checkout.commit] = got
        if isinstance(got, Exception):
            raise Skip(str(got))
        return got

    def _measure(self, checkout: source.Checkout, specs: list[tuple[str, int]], runs: int, purpose: str) -> dict:
        request = measure.MeasureRequest(self.profile, checkout, specs, runs, self.s.mode, self.s.target, self.extra,
                                         metrics=(self.s.metric,) if self.s.metric else (),
                                         metrics_from=self.metric_from,
                                         spare=self._spare if self.runs_side_by_side else None)
        linked = None
        with self.lock or contextlib.nullcontext():
            try:
                objs = self.objects(checkout)
            except Skip:
                self.failed.add((purpose, checkout.commit))
                raise
            self._start_ahead(checkout)  # the next commits' compiles beside these runs
            if self.lock is not None:  # link before the runs, one thread at a time (same files)
                linked = measure.link_all(objs, self.target.spec.image, self.store, request.jobs_planned())
        if getattr(self.target, "per_probe", False):
            self.target.hold()  # a slot of a labgrid-places farm: a place while it measures (farm.py)
        m = measure.measure_commit(request, self.store, self.target, objs=objs, linked=linked, say=self.say)
        self.ran_now += m.ran
        self.copied_now += m.copied
        used = self.used.setdefault((purpose, checkout.commit), set())
        if purpose == "layouts" and (m.ran or m.linked or m.copied):  # (one read back from the store made nothing)
            self.images_new += len(set(specs) - {(lay, sd) for lay, sd, _ in used})
            self.links_now += m.linked
        used.update((r["layout"], r["seed"], r["rep"]) for r in m.runs if r["rep"] < runs)
        samples = [x for x in m.samples if x["rep"] < runs and x["status"] == "ok"]
        mine = [x for x in samples if x["metric"] == self.s.metric]
        if mine:
            self.higher_is_better = bool(mine[-1]["higher_is_better"])
            self.unit = mine[-1]["unit"]
        groups = m.groups(self.s.metric, max_rep=runs)
        if not groups:
            seen_metrics = {x["metric"] for x in samples}
            if seen_metrics:  # stored runs (a run made now is checked as it ends: measure_commit)
                raise LayoutbenchError(targets.no_metric(self.profile, self.target, self.s.metric, seen_metrics,
                                                         self.metric_from))
            raise Skip(f"every run of {checkout.short} failed (see layoutbench results --runs --commit "
                       f"{checkout.short})")
        return groups

    def groups(self, checkout: source.Checkout, k: int, r: int, first: int = 0) -> dict[str, list[float]]:
        """The commit's values over the seeded layouts (``--layout``) ``seed+first .. seed+first+k-1``,
        ``r`` runs each (``first`` > 0: a confirmation's fresh seeds, the ones before not measured)."""
        specs = [(self.s.layout, self.s.seed + first + i) for i in range(k)]
        return self._measure(checkout, specs, r, "layouts")

    def single(self, checkout: source.Checkout) -> float:
        """One run of the default link: what a single-layout bisection sees."""
        g = self._measure(checkout, [("default", 0)], 1, "single")
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
    """The prober as the decision engine (layoutbench.decide) sees it: commits by sha."""

    def __init__(self, prober: Prober, cos: dict, after=None):
        self.p, self.cos = prober, cos
        self.name = prober.name
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


def endpoints(prober: Prober, good: source.Checkout, bad: source.Checkout) -> decide.Ends:
    """Do GOOD and BAD differ by at least --min-effect? Group-sequential (decide.endpoints)."""
    return decide.endpoints(Engine(prober, {good.commit: good, bad.commit: bad}), good.commit, bad.commit,
                            prober.s.plan())


def judge_probe(prober: Prober, probe: source.Checkout, good: source.Checkout, bad: source.Checkout) -> Judgement:
    """Classify one probe like GOOD or like BAD (decide.judge_probe)."""
    eng = Engine(prober, {c.commit: c for c in (probe, good, bad)})
    return decide.judge_probe(eng, probe.commit, good.commit, bad.commit, prober.s.plan())
