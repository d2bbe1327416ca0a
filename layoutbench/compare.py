"""``layoutbench compare``: build the variants (compile once), run them, and put the layout
noise on its own line.

The numbers shown come only from the store, so a resumed session prints the same table
as an uninterrupted one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import build as buildmod
from . import layout, measure, stats, targets
from .errors import LayoutbenchError
from .profile import Profile
from .source import Checkout
from .store import Store


@dataclass
class Row:
    name: str  #: layout name ("random" pools all its seeds)
    groups: dict[str, list[float]]  #: layout id (e.g. "random:3") → values
    summary: stats.Summary
    vs_baseline: stats.Comparison | None
    noise: stats.NoiseSplit | None

    def to_dict(self) -> dict:
        return {"layout": self.name, "values": self.groups, "summary": self.summary.to_dict(),
                "vs_baseline": self.vs_baseline.to_dict() if self.vs_baseline else None,
                "layout_noise": self.noise.to_dict() if self.noise else None}


@dataclass
class MetricReport:
    metric: str
    unit: str
    higher_is_better: bool
    baseline: str
    rows: list[Row]

    def to_dict(self) -> dict:
        return {"metric": self.metric, "unit": self.unit, "better": "higher" if self.higher_is_better else "lower",
                "baseline": self.baseline, "rows": [r.to_dict() for r in self.rows]}


@dataclass
class Report:
    kernel: str
    commit: str
    target: str
    accelerators: list[str]
    mode: str
    runs: dict[str, int]  #: status → count
    failures: list[dict]
    metrics: list[MetricReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    host: str = ""  #: the one host every sample of this report comes from

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "commit": self.commit, "target": self.target, "host": self.host,
                "accelerators": self.accelerators, "mode": self.mode, "runs": self.runs,
                "failures": self.failures, "warnings": self.warnings,
                "metrics": [m.to_dict() for m in self.metrics]}


def label(layout_name: str, seed: int) -> str:
    return f"{layout_name}:{seed}" if layout_name in layout.SEEDED else layout_name


def emulation_warning(accelerators) -> str | None:
    if "tcg" in accelerators:
        return ("timings come from QEMU TCG emulation: they time the emulator, not the layout; "
                "measure natively (target local) or on real KVM/hardware for layout effects")
    return None


def analyse(store: Store, kernel: str, commit: str, target: targets.Target, mode: str, jobs: list[measure.Job],
            build_ids: dict[tuple[str, int], int], args: str = "", metrics: list[str] | None = None,
            baseline: str | None = None, confidence: float = 0.95, default_metric: str | None = None) -> Report:
    """The report for the given jobs, from the store alone."""
    ids = set(build_ids.values())
    runs = [r for r in store.runs(kernel=kernel, target=target.spec.name, mode=mode)
            if r["build_id"] in ids and r["host"] == target.host and r["args"] == args]
    by_status: dict[str, int] = {}
    for r in runs:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    failures = [{"layout": label(r["layout"], r["seed"]), "rep": r["rep"], "status": r["status"],
                 "message": r["message"], "log": r["log_path"]} for r in runs if r["status"] != "ok"]
    samples = [s for s in store.samples(kernel=kernel, target=target.spec.name, mode=mode)
               if s["build_id"] in ids and s["host"] == target.host and s["run_id"] in {r["id"] for r in runs}]
    accels = sorted({r["accelerator"] for r in runs})
    rep = Report(kernel, commit, target.spec.name, accels, mode, by_status, failures, host=target.host)
    warn = emulation_warning(accels)
    if warn:
        rep.warnings.append(warn)

    names = list(dict.fromkeys(j.layout for j in jobs))
    base = baseline or names[0]
    present = list(dict.fromkeys(s["metric"] for s in samples))
    if metrics and "all" in metrics:
        wanted = present
    else:
        # the asked metrics (default: the profile's); all of them when none of those was printed
        wanted = [m for m in (metrics or [default_metric]) if m in present] or present
    for metric in wanted:
        ms = [s for s in samples if s["metric"] == metric]
        if not ms:
            continue
        hib = bool(ms[0]["higher_is_better"])
        groups: dict[str, dict[str, list[float]]] = {}
        for s in ms:
            groups.setdefault(s["layout"], {}).setdefault(label(s["layout"], s["seed"]), []).append(s["value"])
        rows = []
        for name in names:
            if name not in groups:
                continue
            g = groups[name]
            values = [v for vs in g.values() for v in vs]
            summary = stats.summarize(values, confidence)
            noise = stats.noise_split(g) if len(g) >= 2 else None
            vs = None
            if name != base and base in groups:
                try:
                    vs = stats.compare(groups[base], g, hib, confidence=confidence)
                except ValueError:  # e.g. a zero value: no log ratio
                    vs = None
            rows.append(Row(name, g, summary, vs, noise))
        rep.metrics.append(MetricReport(metric, ms[0]["unit"], hib, base, rows))
    # Holm across every row and metric of this compare: the verdicts shown together
    all_rows = [r for m in rep.metrics for r in m.rows]
    for r, c in zip(all_rows, stats.adjust_comparisons([r.vs_baseline for r in all_rows], "holm")):
        r.vs_baseline = c
    return rep


def run(profile: Profile, checkout: Checkout, specs: list[tuple[str, int]], runs: int, mode: str, store: Store,
        target_name: str | None = None, extra: list[str] | None = None, timeout: float | None = None,
        retry_failed: bool = False, metrics: list[str] | None = None, baseline: str | None = None,
        jobs_n: int | None = None, progress_factory=None, say=lambda m: None) -> Report:
    """Compile once, link every variant, run what the store lacks, and analyse."""
    target = targets.make(profile, target_name, timeout)
    jobs = measure.plan_jobs(specs, runs, mode)
    objs = buildmod.compile_objects(profile, checkout, jobs_n, say)
    say(f"target {target.describe()}")
    target.open()
    try:
        if progress_factory:
            with progress_factory(len(jobs), f"{profile.name} {checkout.short}") as tick:
                outcome = measure.measure(objs, target, store, jobs, mode, extra, retry_failed, tick, say)
        else:
            outcome = measure.measure(objs, target, store, jobs, mode, extra, retry_failed, None, say)
    finally:
        target.close()
    if outcome.skipped:
        say(f"{outcome.skipped} run(s) were already in the store; {outcome.ran} run now")
    return analyse(store, profile.name, checkout.commit, target, mode, jobs, outcome.build_ids, " ".join(extra or []),
                   metrics, baseline, default_metric=profile.default_metric)


@dataclass
class MultiReport:
    """Several targets measured at once: one Report per (target, host), never pooled."""

    reports: list[Report]
    failed: list[dict]  #: {"target", "host", "message"} of targets that could not run at all
    wall: float  #: seconds the measuring took, all targets together

    def to_dict(self) -> dict:
        return {"reports": [r.to_dict() for r in self.reports], "failed_targets": self.failed,
                "wall_seconds": self.wall, "per_host": per_host(self.reports)}


def per_host(reports: list[Report]) -> list[dict]:
    """One line per (target, host) and metric: the baseline layout's median, for a side-by-side look.

    Hosts are different machines: their numbers are shown next to each other, not combined.
    """
    rows = []
    for rep in reports:
        for m in rep.metrics:
            base = next((r for r in m.rows if r.name == m.baseline), m.rows[0] if m.rows else None)
            if base is None:
                continue
            rows.append({"target": rep.target, "host": rep.host, "metric": m.metric, "unit": m.unit,
                         "layout": base.name, "n": base.summary.n, "median": base.summary.median,
                         "layout_noise_cv": base.noise.layout_cv if base.noise else None})
    return rows


def run_many(profile: Profile, checkout: Checkout, specs: list[tuple[str, int]], runs: int, mode: str,
             store: Store, target_names: list[str], extra: list[str] | None = None, timeout: float | None = None,
             retry_failed: bool = False, metrics: list[str] | None = None, baseline: str | None = None,
             jobs_n: int | None = None, progress_factory=None, say=lambda m: None) -> MultiReport:
    """The same job list on several targets in parallel (one thread and store connection each).

    Every variant is compiled and linked once, before any target starts.  A target that
    cannot run at all (unreachable host, refused key) is reported in ``failed`` with one line;
    the other targets' samples are stored and analysed as usual, each (target, host) apart.
    """
    import threading
    import time

    from .store import Store as StoreCls

    tgts = [targets.make(profile, n, timeout) for n in dict.fromkeys(target_names)]
    jobs = measure.plan_jobs(specs, runs, mode)
    objs = buildmod.compile_objects(profile, checkout, jobs_n, say)
    linked = {img: measure.link_all(objs, img, store, jobs) for img in {t.spec.image for t in tgts}}
    outcomes: dict[str, measure.Outcome] = {}
    failed: list[dict] = []
    lock = threading.Lock()

    def work(t: targets.Target, tick) -> None:
        st = StoreCls(store.path)  # sqlite connections are not shared between threads
        try:
            t.open()
            o = measure.measure(objs, t, st, jobs, mode, extra, retry_failed, tick,
                                lambda m: say(f"{t.spec.name}: {m}"), linked[t.spec.image])
            with lock:
                outcomes[t.spec.name] = o
        except Exception as e:  # one target's failure does not stop the others
            msg = str(e) if isinstance(e, LayoutbenchError) else f"target {t.spec.name}: {type(e).__name__}: {e}"
            say(msg)
            with lock:
                failed.append({"target": t.spec.name, "host": t.host, "message": msg})
        finally:
            t.close()
            st.close()

    for t in tgts:
        say(f"target {t.describe()}")
    t0 = time.monotonic()
    ctx = progress_factory(len(jobs) * len(tgts), f"{profile.name} {checkout.short} on {len(tgts)} targets") \
        if progress_factory else None
    tick = ctx.__enter__() if ctx else None
    try:
        threads = [threading.Thread(target=work, args=(t, tick), name=f"target-{t.spec.name}") for t in tgts]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        if ctx:
            ctx.__exit__(None, None, None)
    wall = time.monotonic() - t0
    reports = []
    for t in tgts:
        if t.spec.name not in outcomes:
            continue
        build_ids = {k: b for k, (_, b) in linked[t.spec.image].items()}
        reports.append(analyse(store, profile.name, checkout.commit, t, mode, jobs, build_ids,
                               " ".join(extra or []), metrics, baseline, default_metric=profile.default_metric))
    return MultiReport(reports, failed, wall)


# -- text ----------------------------------------------------------------------------------------

def fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    a = abs(x)
    if a >= 1e6:
        return f"{x:.4g}"
    if a >= 100:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.3f}"
    return f"{x:.4g}"


def ratio_text(c: stats.Comparison) -> str:
    if c.verdict == "n/a":  # too little data for a verdict (stats.compare)
        return f"{c.ratio:.3f}  n/a ({c.reason.split(':')[0]})"
    half = (c.ci_high - c.ci_low) / 2
    word = c.verdict if c.verdict != "no difference" else "same"
    return f"{c.ratio:.3f} ± {half:.3f}  {word}"


def pct(x: float, digits: int = 2) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.{digits}f}%"


def noise_line(name: str, n: stats.NoiseSplit) -> str:
    # the between-layout sd with its 95% upper bound, never a bare 0.00%
    if n.layout_cv == 0 or pct(n.layout_cv) == "0.00%":
        sd = f"< {pct(n.layout_cv_upper)} (95% upper bound; estimate 0)"
    else:
        sd = f"{pct(n.layout_cv)} (95% upper bound {pct(n.layout_cv_upper)})"
    head = "between-layout sd" if n.runs_separated else "layout + run noise (runs not separated) sd"
    return (f"layout noise ({name}, {n.k} layouts): {head} {sd} "
            f"(medians {fmt(n.median_min)} … {fmt(n.median_max)}, range {pct(n.median_range_rel)}), "
            f"run noise sd {pct(n.run_cv)}, layout share of variance {pct(n.layout_share, 0)}"
            + ("" if not math.isnan(n.run_cv) else " (one run per layout: run noise not separated)"))
