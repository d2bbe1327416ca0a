"""Sweeping a history: choosing the commits of a range, the series that records how each point was
measured, and the sweep and its drill-down (``--refine``) that measure only what the store lacks."""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import git

from .. import build as buildmod
from .. import layout, measure, quirks, source, stats, targets
from ..errors import BuildFailed, LayoutbenchError
from ..profile import Profile
from ..store import Store

DEFAULT_LAYOUTS = "sorted,aligned,random:4"
DEFAULT_MIN_EFFECT = stats.DEFAULT_MIN_EFFECT  #: the one default of compare, history and bisect


def series_key(kernel: str, repo: Path | str) -> str:
    return f"history:{kernel}:{Path(repo).resolve()}"


# -- choosing commits ----------------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_interval(text: str) -> float:
    """``12h``, ``1d``, ``2w`` → seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not m:
        raise LayoutbenchError(f"--every {text!r} is not an interval: write a number and a unit s/m/h/d/w, e.g. 1d or 12h")
    return float(m.group(1)) * _UNITS[m.group(2)]


def full_range(profile: Profile, spec: str, repo=None, subdir=None) -> list[str]:
    """``A..B`` as a history: A itself (the reference) then every first-parent commit up to B."""
    a = spec.split("..", 1)[0]
    commits = source.rev_range(profile, spec, repo, subdir)
    first = source.resolve(profile, a, repo, subdir).commit
    if not commits:
        raise LayoutbenchError(f"range {spec!r} holds no commit (is {spec.split('..', 1)[1]!r} a descendant of {a!r}?)")
    return [first] + commits


def choose(commits: list[str], step: int = 1, every: float | None = None, dates: dict[str, float] | None = None) -> list[str]:
    """The points of a sweep: every ``step``-th commit (or one per ``every`` seconds of commit
    date), always the first and the last."""
    if step < 1:
        raise LayoutbenchError("--step must be at least 1")
    if every is not None:
        assert dates is not None
        out, last = [], None
        for c in commits:
            if last is None or dates[c] >= last + every:
                out.append(c)
                last = dates[c]
    else:
        out = commits[::step]
    if commits[-1] not in out:
        out.append(commits[-1])
    return out


def commit_dates(repo: Path, commits: list[str]) -> dict[str, float]:
    r = git.Repo(repo)
    return {c: float(r.commit(c).committed_date) for c in commits}


# -- the series ------------------------------------------------------------------------------------

@dataclass
class Series:
    kernel: str
    repo: str
    subdir: str
    start: str  #: the range's first commit (A of A..B, measured as the reference)
    end: str  #: B
    commits: list[str]  #: the whole first-parent range, start first: the x axis
    target: str
    host: str
    image: str
    mode: str
    args: str
    specs: list[tuple[str, int]]
    runs: int
    points: dict[str, dict] = field(default_factory=dict)  #: commit → {status, message, quirks, measured, config}
    #: hash of the target's own configuration (``measure.target_config`` without the build's part);
    #: a sweep under another one starts the series again, so that no statistic mixes them
    target_config: str = ""
    #: the minimum effect the history was last swept with (``--min-effect``), the one its summary and
    #: report judge by when none is given; None: the default
    min_effect: float | None = None

    @property
    def key(self) -> str:
        return series_key(self.kernel, self.repo)

    def ordered_points(self) -> list[str]:
        pos = {c: i for i, c in enumerate(self.commits)}
        return sorted(self.points, key=lambda c: pos.get(c, -1))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["specs"] = [list(s) for s in self.specs]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Series":
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in known}  # a key another version wrote is left out
        d["specs"] = [tuple(s) for s in d["specs"]]
        return cls(**d)


def load_series(store: Store, kernel: str | None = None, repo: Path | str | None = None) -> Series:
    """The stored series of ``kernel`` in ``repo`` (either may be omitted when only one matches)."""
    if kernel and repo:
        d = store.get_state(series_key(kernel, repo))
        if d is None:
            raise LayoutbenchError(f"no history of {kernel} in {repo} in {store.path}; "
                                   f"run `layoutbench history {kernel} A..B` first")
        return Series.from_dict(d)
    found = [Series.from_dict(v) for _, v in store.states("history:")]
    found = [s for s in found if (not kernel or s.kernel == kernel)
             and (repo is None or Path(s.repo) == Path(repo).resolve())]
    if not found:
        raise LayoutbenchError(f"no history{' of ' + kernel if kernel else ''} in {store.path}; "
                               f"run `layoutbench history KERNEL A..B` first")
    if len(found) > 1 and not kernel:
        raise LayoutbenchError("the store holds histories of several kernels ("
                               + ", ".join(sorted({s.kernel for s in found})) + "); name one")
    return found[0]


def save_series(store: Store, s: Series) -> None:
    store.set_state(s.key, s.to_dict())


# -- sweeping ----------------------------------------------------------------------------------

@dataclass
class SweepOutcome:
    series: Series
    measured: list[str]  #: points probed in this call (in order)
    new: list[str]  #: of those, points the series did not hold before
    ran: int = 0
    skipped: int = 0
    copied: int = 0  #: runs not made again: an exact target's run of the same image file (measure.copied)
    failed_runs: int = 0
    build_failed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"series": self.series.key, "measured": self.measured, "new": self.new, "ran": self.ran,
                "skipped": self.skipped, "copied": self.copied, "failed_runs": self.failed_runs, "build_failed": self.build_failed}


@dataclass(frozen=True)
class SweepOptions:
    """How to sweep: the range and the measuring settings (None: the stored series' or the defaults)."""

    spec: str | None = None  #: ``A..B`` (a new or widened series)
    repo: str | None = None
    subdir: str | None = None
    specs: tuple[tuple[str, int], ...] | None = None
    runs: int | None = None
    mode: str | None = None
    target: str | None = None
    extra: tuple[str, ...] | None = None  #: None: the series' arguments
    timeout: float | None = None
    jobs: int | None = None
    metrics: tuple[str, ...] = ()  #: --metric: refused before a build when the target cannot print one
    min_effect: float | None = None  #: kept with the series when given


def probe(request: measure.MeasureRequest, target: targets.Target, store: Store, progress_factory=None,
          say=lambda m: None) -> dict:
    """Build and measure one point; return its record for the series (and the run counts)."""
    co = request.checkout
    applied = [q.name for q in quirks.applicable(request.profile, co)]
    rec = {"status": "ok", "message": "", "quirks": applied, "measured": time.time(), "ran": 0, "skipped": 0,
           "copied": 0, "failed": 0}
    try:
        objs = buildmod.compile_objects(request.profile, co, request.jobs, say)
    except BuildFailed as e:
        rec.update(status="skipped" if "skipped by quirk" in str(e) else "build-failed", message=str(e))
        say(f"{co.short}: {rec['status']}: {e}")
        return rec
    total = len(request.jobs_planned())
    try:
        with measure.progress(progress_factory, total, f"{request.profile.name} {co.short}") as tick:
            out = measure.measure_commit(request, store, target, objs=objs, progress=tick, say=say)
    except BuildFailed as e:  # a link or placement failure
        rec.update(status="build-failed", message=str(e))
        return rec
    rec.update(ran=out.ran, skipped=out.skipped, copied=out.copied, failed=out.failed, config=out.key.config)
    if objs.reused_from:  # the runs are the point's own; the objects they linked are this commit's
        rec["objects_of"] = objs.reused_from
    if out.failed and out.failed == total:
        rec.update(status="runs-failed", message=f"all {total} runs failed")
    return rec


def sweep(profile: Profile, store: Store, points: list[str], opts: SweepOptions, series: Series | None = None,
          progress_factory=None, say=lambda m: None) -> SweepOutcome:
    """Measure ``points`` (commits, oldest first) into the store and the series.

    With ``opts.spec`` (``A..B``) a series is created or updated for that range; with
    ``series`` (refine) its own settings are used.  Settings given explicitly override
    the stored ones.
    """
    repo_path, sub = source.repo_for(profile, opts.repo, opts.subdir)
    if repo_path is None:
        raise LayoutbenchError(f"kernel {profile.name} has no git repository; give one with --repo")
    if series is None:
        series = _series_for(profile, store, opts, repo_path, sub, say)
    else:
        for attr, val in (("specs", opts.specs), ("runs", opts.runs), ("mode", opts.mode)):
            if val is not None:
                setattr(series, attr, list(val) if attr == "specs" else val)
    target = targets.make(profile, series.target, opts.timeout)
    for m in opts.metrics:
        targets.check_metric(profile, target, m)
    if opts.min_effect is not None:
        series.min_effect = opts.min_effect
    if opts.extra is not None and " ".join(opts.extra) != series.args:
        series.args = " ".join(opts.extra)
    series.host, series.image = target.host, target.spec.image
    series.target_config = store.config_id(measure.target_config(target))
    say(f"target {target.describe()}; {len(points)} point(s), layouts "
        + ",".join(layout.label(n, s) for n, s in series.specs) + f", {series.runs} run(s) each")
    out = SweepOutcome(series, [], [])
    before = set(series.points)
    with target:
        for c in points:
            request = measure.MeasureRequest(profile, source.Checkout(Path(series.repo), series.subdir, c, None),
                                             series.specs, series.runs, series.mode, series.target,
                                             tuple(series.args.split()), opts.timeout, jobs=opts.jobs,
                                             metrics=tuple(m for m in opts.metrics if m != "all"),
                                             spare=measure.spare_core)
            rec = probe(request, target, store, progress_factory, say)
            out.ran += rec.pop("ran")
            out.skipped += rec.pop("skipped")
            out.copied += rec.pop("copied", 0)
            out.failed_runs += rec.pop("failed")
            if rec["status"] in ("build-failed", "skipped"):
                out.build_failed.append(c)
            series.points[c] = rec
            save_series(store, series)  # after every point: a killed sweep keeps what it did
            out.measured.append(c)
            if c not in before:
                out.new.append(c)
    save_series(store, series)  # its settings too when no point was left to measure
    return out


def default_runs(target: targets.Target) -> int:
    """Runs a layout when --runs is not given: 2, or 1 where every metric the target prints is exact
    (cachegrind's counts, the cache model's): a second run of an image would print what the first did."""
    return 1 if measure.exact_counts(target) else 2


def _series_for(profile: Profile, store: Store, opts: SweepOptions, repo_path: Path, sub: str, say) -> Series:
    commits = full_range(profile, opts.spec, opts.repo, opts.subdir)
    old = store.get_state(series_key(profile.name, repo_path))
    target = targets.make(profile, opts.target)
    s = Series(kernel=profile.name, repo=str(repo_path), subdir=sub, start=commits[0], end=commits[-1],
               commits=commits, target=target.spec.name, host=target.host, image=target.spec.image,
               mode=opts.mode or "rerun", args=" ".join(opts.extra or []),
               specs=list(opts.specs) if opts.specs else layout.parse_specs([DEFAULT_LAYOUTS]),
               runs=opts.runs or default_runs(target),
               target_config=store.config_id(measure.target_config(target)))
    if old:
        prev = Series.from_dict(old)
        same = (prev.target, prev.mode, prev.args) == (s.target, s.mode, s.args)
        if same and prev.target_config != s.target_config and prev.points:
            say(f"target {s.target} is configured otherwise than when this history was swept "
                f"({prev.target_config or 'before configurations were recorded'}, now {s.target_config}): "
                f"its {len(prev.points)} point(s) are measured again")
            same = False
        if same:
            # keep the points measured the same way; widen the range to cover both
            s.points = prev.points
            if prev.start in commits and prev.end not in commits:
                s.end, s.commits = prev.end, _merge_order(repo_path, commits, prev.commits)
            elif prev.end in commits and prev.start not in commits:
                s.start, s.commits = prev.start, _merge_order(repo_path, prev.commits, commits)
            s.points = {c: p for c, p in s.points.items() if c in set(s.commits)}
            if opts.specs is None:
                s.specs = prev.specs
            if opts.runs is None:
                s.runs = prev.runs
            s.min_effect = prev.min_effect
    return s


def _merge_order(repo_path: Path, first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys(first + second))


def refine(profile: Profile, store: Store, spec: str, opts: SweepOptions, step: int = 1, progress_factory=None,
           say=lambda m: None) -> SweepOutcome:
    """Measure the commits between two points of the stored series that it does not hold yet."""
    repo_path, _ = source.repo_for(profile, opts.repo, None)
    series = load_series(store, profile.name, repo_path)
    now = store.config_id(measure.target_config(targets.make(profile, series.target)))
    if series.target_config != now:
        raise LayoutbenchError(f"target {series.target} is configured otherwise than when this history was swept "
                               f"({series.target_config or 'before configurations were recorded'}, now {now}); "
                               f"sweep the range again: layoutbench history {profile.name} "
                               f"{series.start[:12]}..{series.end[:12]}")
    if ".." not in spec or "..." in spec:
        raise LayoutbenchError(f"--refine {spec!r} must look like X..Y (two measured commits, two dots)")
    x, y = (source.resolve(profile, r, str(repo_path), series.subdir).commit for r in spec.split("..", 1))
    pos = {c: i for i, c in enumerate(series.commits)}
    for c, r in ((x, spec.split("..")[0]), (y, spec.split("..")[1])):
        if c not in pos:
            raise LayoutbenchError(f"{r} is not in the history's range {series.start[:12]}..{series.end[:12]}; "
                                   f"sweep a range that holds it first")
    if pos[x] >= pos[y]:
        raise LayoutbenchError(f"--refine {spec}: {spec.split('..')[0]} must come before {spec.split('..')[1]}")
    inside = series.commits[pos[x] + 1:pos[y]]
    if step > 1:
        inside = inside[step - 1::step]
    missing = [c for c in inside if c not in series.points]
    # the two ends too, when they were never measured (refining from a commit named by hand)
    missing = [c for c in (x,) if c not in series.points] + missing + [c for c in (y,) if c not in series.points]
    return sweep(profile, store, missing, replace(opts, spec=None, repo=str(repo_path)), series, progress_factory,
                 say)
