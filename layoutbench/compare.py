"""``layoutbench compare``: build the variants (compile once), run them, and put the layout
noise on its own line.

The numbers shown come only from the store, so a resumed session prints the same table
as an uninterrupted one.
"""

from __future__ import annotations

import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

from . import build as buildmod
from . import fmt, layout, machine, measure, perfstat, stats, targets, validate
from .errors import LayoutbenchError
from .source import Checkout
from .store import Store


@dataclass
class Row:
    name: str  #: layout name ("random" pools all its seeds)
    groups: dict[str, list[float]]  #: layout id (e.g. "random:3") → values
    summary: stats.Summary
    vs_baseline: stats.Comparison | None
    noise: stats.NoiseSplit | None
    #: against a fixed baseline on a deterministic target: {"ratio", "min", "max", "layouts", "why"} --
    #: each layout's ratio to the baseline's value is a fact, not an estimate; ratio: their geometric mean
    exact: dict | None = None

    def to_dict(self) -> dict:
        return {"layout": self.name, "values": self.groups, "summary": self.summary.to_dict(),
                "vs_baseline": self.vs_baseline.to_dict() if self.vs_baseline else None,
                "exact": self.exact, "layout_noise": self.noise.to_dict() if self.noise else None}


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
    config: str = ""  #: the hash of the target configuration every sample was made under
    machine: list[dict] = field(default_factory=list)  #: the quiet-machine findings before the runs

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "commit": self.commit, "target": self.target, "host": self.host,
                "config": self.config, "machine": self.machine,
                "accelerators": self.accelerators, "mode": self.mode, "runs": self.runs,
                "failures": self.failures, "warnings": self.warnings,
                "metrics": [m.to_dict() for m in self.metrics]}


def emulation_warning(accelerators, metrics=None) -> str | None:
    """The warning that TCG timings time the emulator; none when ``metrics`` (the metrics shown)
    are all counts of the cache model (target kind qemu-icache), which are not timings."""
    from .targets.qemu_icache import METRICS

    if metrics and all(m in METRICS for m in metrics):
        return None
    if "tcg" in accelerators:
        return ("timings come from QEMU TCG emulation: they time the emulator, not the layout; "
                "measure natively (target local) or on real KVM/hardware for layout effects")
    return None


@dataclass(frozen=True)
class View:
    """What a report shows of the stored samples."""

    metrics: tuple[str, ...] | None = None  #: metric names, ("all",) for every one; None: the profile's
    baseline: str | None = None  #: layout the others are compared with (None: the first)
    confidence: float = 0.95


def wanted_metrics(present: list[str], view: View, default_metric: str | None) -> list[str]:
    """The metrics to show: the asked ones (default: the one the profile names for the target's kind,
    ``targets.default_metric(own=False)``); all when none of those was printed (every count of a
    cache model, its cost among them)."""
    validate.known_metrics(view.metrics, present)
    if view.metrics and "all" in view.metrics:
        return present
    return [m for m in (view.metrics or [default_metric]) if m in present] or present


def analyse(m: measure.Measurement, view: View = View()) -> Report:
    """The report for one measurement, from what the store holds for it."""
    req = m.request
    runs = m.runs
    by_status: dict[str, int] = {}
    for r in runs:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    failures = [{"layout": layout.label(r["layout"], r["seed"]), "rep": r["rep"], "status": r["status"],
                 "message": r["message"], "log": r["log_path"]} for r in runs if r["status"] != "ok"]
    samples = m.samples
    accels = sorted({r["accelerator"] for r in runs})
    rep = Report(req.profile.name, req.checkout.commit, m.key.target, accels, m.key.mode, by_status, failures,
                 host=m.key.host, config=m.key.config)
    rep.machine = list(m.findings)
    rep.warnings += machine.problems(m.findings)
    perf = perfstat.unsupported_line(m.unsupported_events)
    if perf:
        rep.warnings.append(perf)

    names = list(dict.fromkeys(j.layout for j in m.jobs))
    base = view.baseline or names[0]
    present = list(dict.fromkeys(s["metric"] for s in samples))
    shown = wanted_metrics(present, view, targets.default_metric(req.profile, req.target, own=False))
    warn = emulation_warning(accels, shown)
    if warn:
        rep.warnings.insert(0, warn)
    for metric in shown:
        ms = [s for s in samples if s["metric"] == metric]
        if not ms:
            continue
        hib = bool(ms[0]["higher_is_better"])
        groups: dict[str, dict[str, list[float]]] = {}
        for s in ms:
            groups.setdefault(s["layout"], {}).setdefault(layout.label(s["layout"], s["seed"]), []).append(s["value"])
        try:
            kind = req.profile.target(m.key.target).kind
        except LayoutbenchError:
            kind = ""
        exact_why = measure.deterministic(kind, metric, groups)
        rows = []
        for name in names:
            if name not in groups:
                continue
            g = groups[name]
            values = [v for vs in g.values() for v in vs]
            summary = stats.summarize(values, view.confidence)
            noise = stats.noise_split(g) if len(g) >= 2 else None
            vs = None
            if name != base and base in groups:
                try:
                    vs = stats.compare(groups[base], g, hib, confidence=view.confidence)
                except ValueError:  # e.g. a zero value: no log ratio
                    vs = None
            row = Row(name, g, summary, vs, noise)
            base_g = groups.get(base) or {}
            if exact_why and name != base and len(base_g) == 1:
                va = statistics.median(next(iter(base_g.values())))
                ratios = [statistics.median(v) / va for v in g.values()] if va else []
                if ratios and all(x > 0 for x in ratios):  # each layout's ratio is a fact; their geometric mean
                    row.exact = {"ratio": math.exp(sum(map(math.log, ratios)) / len(ratios)), "min": min(ratios),
                                 "max": max(ratios), "layouts": len(ratios), "why": exact_why}
            rows.append(row)
        rep.metrics.append(MetricReport(metric, ms[0]["unit"], hib, base, rows))
    # Holm across every row and metric of this compare: the verdicts shown together
    all_rows = [r for m in rep.metrics for r in m.rows]
    for r, c in zip(all_rows, stats.adjust_comparisons([r.vs_baseline for r in all_rows], "holm")):
        r.vs_baseline = c
    return rep


def run(request: measure.MeasureRequest, store: Store, view: View = View(), progress_factory=None,
        say=lambda m: None) -> Report:
    """Compile once, link every variant, run what the store lacks, and analyse."""
    target = request.make_target()
    objs = buildmod.compile_objects(request.profile, request.checkout, request.jobs, say)
    say(f"target {target.describe()}")
    total, what = len(request.jobs_planned()), f"{request.profile.name} {request.checkout.short}"
    with target, measure.progress(progress_factory, total, what) as tick:
        m = measure.measure_commit(request, store, target, objs=objs, progress=tick, say=say)
    if m.skipped:
        say(f"{m.skipped} run(s) were already in the store; {m.ran} run now")
    return analyse(m, view)


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


def run_many(request: measure.MeasureRequest, target_names: list[str], store: Store, view: View = View(),
             progress_factory=None, say=lambda m: None) -> MultiReport:
    """The same job list on several targets in parallel (one worker and store connection each).

    Every variant is compiled and linked once, before any target starts.  A target that
    cannot run at all (unreachable host, refused key) is reported in ``failed`` with one line;
    the other targets' samples are stored and analysed as usual, each (target, host) apart.
    """
    tgts = [targets.make(request.profile, n, request.timeout) for n in dict.fromkeys(target_names)]
    jobs = request.jobs_planned()
    objs = buildmod.compile_objects(request.profile, request.checkout, request.jobs, say)
    linked = {img: measure.link_all(objs, img, store, jobs) for img in {t.spec.image for t in tgts}}

    def work(t: targets.Target, tick) -> measure.Measurement:
        st = Store(store.location)  # sqlite connections are not shared between threads
        try:
            with t:
                return measure.measure_commit(replace(request, target=t.spec.name), st, t, objs=objs,
                                              linked=linked[t.spec.image], progress=tick,
                                              say=lambda m: say(f"{t.spec.name}: {m}"))
        finally:
            st.close()

    for t in tgts:
        say(f"target {t.describe()}")
    t0 = time.monotonic()
    what = f"{request.profile.name} {request.checkout.short} on {len(tgts)} targets"
    with measure.progress(progress_factory, len(jobs) * len(tgts), what) as tick, \
            ThreadPoolExecutor(max_workers=len(tgts), thread_name_prefix="target") as pool:
        futures = [(t, pool.submit(work, t, tick)) for t in tgts]
        done: list[tuple[targets.Target, measure.Measurement | BaseException]] = []
        for t, f in futures:
            try:
                done.append((t, f.result()))
            except Exception as e:  # one target's failure does not stop the others
                done.append((t, e))
    wall = time.monotonic() - t0
    reports, failed = [], []
    for t, got in done:
        if isinstance(got, BaseException):
            msg = str(got) if isinstance(got, LayoutbenchError) else \
                f"target {t.spec.name}: {type(got).__name__}: {got}"
            say(msg)
            failed.append({"target": t.spec.name, "host": t.host, "message": msg})
        else:
            reports.append(analyse(got, view))
    return MultiReport(reports, failed, wall)


# -- two commits: did my patch change the metric beyond layout noise? ----------------------------

@dataclass
class CommitsReport:
    """B against A over K paired random layouts, and what one default-link A/B would have said."""

    kernel: str
    a: str
    b: str
    target: str
    host: str
    mode: str
    layouts: int  #: K
    runs: int  #: R per layout
    config: str
    min_effect: float
    metrics: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return _finite(asdict(self))


def _finite(x):
    """``x`` with every NaN or infinity replaced by None (JSON has neither)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return None if isinstance(x, float) and not math.isfinite(x) else x


#: a two-commit verdict that shows no change, worded as the bisection words it
NOT_SHOWN = "no change shown"
#: a two-commit verdict whose interval lies inside +-min_effect: a change of it is ruled out
WITHIN = "within the minimum effect"


def row_verdict(c: stats.Comparison) -> str:
    """A metric's verdict in a two-commit compare: slower or faster beyond the minimum effect;
    within it when the whole interval lies inside +-min_effect (an exact interval too: a change of
    the minimum effect is then ruled out); else no change shown."""
    if c.verdict != "no difference":
        return c.verdict
    band = math.log1p(c.min_effect)
    lo, hi = c.ci_low, c.ci_high
    if lo > 0 and math.isfinite(hi) and -band < math.log(lo) and math.log(hi) < band:
        return WITHIN
    return NOT_SHOWN


def single_says(ratio: float, hib: bool, min_effect: float) -> str:
    """What a one-run default-link A/B concludes from its ratio: any change of at least ``min_effect``."""
    if not math.isfinite(ratio) or abs(ratio - 1) < min_effect:
        return NOT_SHOWN
    return "faster" if (ratio > 1) == hib else "slower"


def compare_commits(request: measure.MeasureRequest, b: Checkout, store: Store, view: View = View(),
                    min_effect: float = stats.DEFAULT_MIN_EFFECT, say=lambda m: None) -> CommitsReport:
    """Measure ``request`` (its random layouts, the same seeds) at its checkout A and at ``b``, plus one
    run of the default link on each side; compare them paired by seed, per metric."""
    single = replace(request, specs=(("default", 0),), runs=1, retry_failed=False)
    target = request.make_target()
    say(f"target {target.describe()}")
    got = {}
    with target:
        for side, co in (("a", request.checkout), ("b", b)):
            objs = buildmod.compile_objects(request.profile, co, request.jobs, say)
            got[side] = measure.measure_commit(request.at(co), store, target, objs=objs, say=say)
            got["single_" + side] = measure.measure_commit(single.at(co), store, target, objs=objs, say=say)
    ma, mb = got["a"], got["b"]
    rep = CommitsReport(request.profile.name, request.checkout.commit, b.commit, ma.key.target, ma.key.host,
                        ma.key.mode, len(request.specs), request.runs, ma.key.config, min_effect)
    present = [x for x in dict.fromkeys(s["metric"] for s in ma.samples) if any(s["metric"] == x for s in mb.samples)]
    shown = wanted_metrics(present, view, targets.default_metric(request.profile, request.target, own=False))
    warn = emulation_warning(ma.accelerators | mb.accelerators, shown)
    if warn:
        rep.warnings.append(warn)
    hib_of = {s["metric"]: (bool(s["higher_is_better"]), s["unit"]) for s in ma.samples}
    for metric in shown:
        hib, unit = hib_of[metric]
        ga, gb = ma.groups(metric), mb.groups(metric)
        row = {"metric": metric, "unit": unit, "better": "higher" if hib else "lower",
               "layouts_paired": len(set(ga) & set(gb)), "effect": None, "verdict": "n/a", "layout_noise": None}
        try:
            c = stats.compare(ga, gb, hib, confidence=view.confidence, paired=True, min_effect=min_effect)
            row.update(effect={**c.to_dict(), "claim": c.claim()}, verdict=row_verdict(c),
                       layout_noise=c.layout_noise, describe=c.describe())
        except ValueError as e:  # too few samples for a comparison
            row["why"] = str(e)
        sa, sb = got["single_a"].groups(metric).get("default"), got["single_b"].groups(metric).get("default")
        if sa and sb and sa[0]:
            ratio = sb[0] / sa[0]
            says = single_says(ratio, hib, min_effect)
            ours = NOT_SHOWN if row["verdict"] == WITHIN else row["verdict"]  # (no change either way)
            row["single"] = {"a": sa[0], "b": sb[0], "ratio": ratio, "says": says, "agrees": says == ours}
        else:
            row["single"] = None
        rep.metrics.append(row)
    return rep


def commits_text_of(rep: dict) -> str:
    """The two-commit comparison (``CommitsReport.to_dict()``) for a person."""
    lines = [f"{rep['kernel']} {rep['a'][:12]} (A) vs {rep['b'][:12]} (B) on {rep['target']} ({rep['host']}), "
             f"{rep['layouts']} paired random layouts x {rep['runs']} run(s), mode {rep['mode']}, config {rep['config']}"]
    for r in rep["metrics"]:
        lines.append("")
        lines.append(f"{r['metric']} ({r['unit']}, {r['better']} is better)")
        e = r["effect"]
        if e is None:
            lines.append(f"  effect:        n/a ({r.get('why', 'no comparison')})")
        else:
            half = (e["ci_high"] - e["ci_low"]) / 2
            lines.append(f"  effect:        B/A = {e['ratio']:.4f} ± {half:.4f} ({100 * e['confidence']:g}% CI "
                         f"{e['ci_low']:.4f}…{e['ci_high']:.4f}, p={e['p_value']:.3g}, paired over "
                         f"{r['layouts_paired']} layouts)")
            lines.append(f"  layout noise:  between-layout sd {fmt.pct(r['layout_noise'])}")
        me = fmt.pct(rep["min_effect"])
        claim = (e or {}).get("claim") or ""
        if r["verdict"] == WITHIN:
            said = (f"{WITHIN}: a change of {me} or more is ruled out (the {100 * e['confidence']:g}% CI lies inside "
                    f"±{me})")
        elif r["verdict"] == NOT_SHOWN and claim.startswith("shown "):
            said = f"{NOT_SHOWN} of {me} or more: B is {claim}"
        elif r["verdict"] == NOT_SHOWN:
            said = f"{NOT_SHOWN} (a change of {me} or more; none ruled out)"
        else:
            said = r["verdict"]
        lines.append(f"  verdict:       {said}")
        sg = r["single"]
        if sg:
            lines.append(f"  single default-link A/B (1 run each): B/A = {sg['ratio']:.4f} "
                         f"({fmt.number(sg['a'])} -> {fmt.number(sg['b'])}): it would say {sg['says']} "
                         f"(change of at least {fmt.pct(rep['min_effect'])}), "
                         + ("agrees" if sg["agrees"] else "DIFFERS"))
        else:
            lines.append("  single default-link A/B: n/a (the default link did not run)")
    for w in rep["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


# -- text ----------------------------------------------------------------------------------------

def noise_line(name: str, n: stats.NoiseSplit) -> str:
    # the between-layout sd with its 95% upper bound, never a bare 0.00%
    if n.layout_cv == 0 or fmt.pct(n.layout_cv) == "0.00%":
        sd = f"< {fmt.pct(n.layout_cv_upper)} (95% upper bound; estimate 0)"
    else:
        sd = f"{fmt.pct(n.layout_cv)} (95% upper bound {fmt.pct(n.layout_cv_upper)})"
    head = "between-layout sd" if n.runs_separated else "layout + run noise (runs not separated) sd"
    return (f"layout noise ({name}, {n.k} layouts): {head} {sd} "
            f"(medians {fmt.number(n.median_min)} … {fmt.number(n.median_max)}, range {fmt.pct(n.median_range_rel)}), "
            f"run noise sd {fmt.pct(n.run_cv)}, layout share of variance {fmt.pct(n.layout_share, 0)}"
            + ("" if not math.isnan(n.run_cv) else " (one run per layout: run noise not separated)"))
