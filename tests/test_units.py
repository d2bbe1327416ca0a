"""Direct tests of the pure parts the CLI tests reach only through whole runs: job planning,
the history's choice of points, the bisection's window and next probe, the store's filters,
the layout registry, the target registry and the formatting of numbers."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest

from layoutbench import bisect, build, fmt, history, layout, measure, metrics, profile, targets
from layoutbench.elfinfo import InputSection, ObjectInfo, Symbol
from layoutbench.errors import LayoutbenchError
from layoutbench.store import RunKey, Store
from layoutbench.targets import RunResult
from test_build import ALL

ROOT = Path(__file__).resolve().parent.parent


# -- job planning ------------------------------------------------------------------------------------

def test_plan_jobs_interleaves_repetitions_so_that_drift_hits_every_variant_alike():
    specs = [("default", 0), ("random", 1), ("random", 2)]
    jobs = measure.plan_jobs(specs, 2, "rerun")
    assert [(j.layout, j.seed, j.rep) for j in jobs] == [
        ("default", 0, 0), ("random", 1, 0), ("random", 2, 0),
        ("default", 0, 1), ("random", 1, 1), ("random", 2, 1)]
    assert measure.plan_jobs(specs, 2, "reboot") == jobs


def test_plan_jobs_relink_gives_every_repetition_of_a_seeded_layout_a_seed_of_its_own():
    jobs = measure.plan_jobs([("sorted", 0), ("random", 1), ("random", 2), ("padded", 5)], 3, "relink")
    got = [(j.layout, j.seed, j.rep) for j in jobs]
    assert got == [("sorted", 0, 0), ("sorted", 0, 1), ("sorted", 0, 2),
                   ("random", 1, 0), ("random", 2, 0), ("random", 3, 0),   # seeds follow on from the spec's
                   ("random", 4, 0), ("random", 5, 0), ("random", 6, 0),
                   ("padded", 5, 0), ("padded", 6, 0), ("padded", 7, 0)]
    assert len({(j.layout, j.seed) for j in jobs if j.layout == "random"}) == 6


# -- the history's points ------------------------------------------------------------------------

COMMITS = [f"c{i}" for i in range(10)]


@pytest.mark.parametrize("step,want", [(1, COMMITS), (3, ["c0", "c3", "c6", "c9"]), (4, ["c0", "c4", "c8", "c9"]),
                                       (20, ["c0", "c9"])])
def test_choose_takes_every_step_th_commit_and_always_the_last(step, want):
    assert history.choose(COMMITS, step) == want


def test_choose_by_date_takes_one_commit_per_interval():
    dates = {c: t for c, t in zip(COMMITS, [0, 10, 20, 100, 101, 150, 230, 240, 250, 251])}
    assert history.choose(COMMITS, every=100, dates=dates) == ["c0", "c3", "c6", "c9"]  # c9: the last


def test_choose_refuses_a_step_below_one():
    with pytest.raises(LayoutbenchError, match="--step"):
        history.choose(COMMITS, 0)


# -- the bisection's window ----------------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    yield s
    s.close()


def test_bisection_window_and_next_probe_follow_the_marks(store):
    b = bisect.Bisection(store, bisect.Settings(kernel="minikernel"))
    assert b.window(COMMITS) == (0, 9, list(range(1, 9)))
    assert b.next_probe(COMMITS) == 4  # nearest the middle of 0..9, the lower one on a tie
    b.mark("good", "c4")
    assert b.window(COMMITS) == (4, 9, [5, 6, 7, 8])
    assert b.next_probe(COMMITS) == 6
    b.mark("bad", "c6")
    b.mark("skip", "c5")
    assert b.window(COMMITS) == (4, 6, [])
    assert b.next_probe(COMMITS) is None
    # the marks were saved in the store, and a bisection loaded from it sees the same window
    again = bisect.Bisection.load(store, b.key)
    assert again.window(COMMITS) == (4, 6, []) and again.marks()["c5"]["verb"] == "skip"


def test_bisection_window_ignores_a_bad_mark_before_the_last_good_one(store):
    b = bisect.Bisection(store, bisect.Settings(kernel="minikernel"))
    b.mark("bad", "c2")
    b.mark("good", "c5")
    assert b.window(COMMITS) == (5, 9, [6, 7, 8])
    assert b.next_probe(COMMITS) == 7


def test_a_bisection_names_its_seeded_layout_and_an_older_state_is_random():
    old = {k: v for k, v in bisect.Settings(kernel="minikernel").to_dict().items() if k != "layout"}
    assert bisect.Settings.from_dict(old).layout == "random"  # a state written before --layout
    s = bisect.Settings(kernel="minikernel", layout="shuffled")
    assert "--layout shuffled" in s.start_line("b", "g")  # so that a replay bisects the same layouts
    s.check()
    with pytest.raises(LayoutbenchError, match="--layout sorted takes no seed"):
        bisect.Settings(kernel="minikernel", layout="sorted").check()


# -- the store's filters -------------------------------------------------------------------------

def _objects() -> list[ObjectInfo]:
    def obj(name: str, *funcs: str) -> ObjectInfo:
        secs = [InputSection(f".text.{f}", 32, 16, 0x6, [Symbol(f, 0, 32, "func", "global", f".text.{f}")])
                for f in funcs]
        return ObjectInfo(name, secs + [InputSection(".data", 8, 8, 0x3, [])])
    return [obj("kern/main.o", "main", "idle"), obj("net/ip.o", "ip_input"), obj("dev/nic.o", "nic_rx", "nic_tx"),
            obj("boot/start.o", "start")]


def _variant(tmp: Path, commit: str, name: str, seed: int) -> build.Variant:
    plan = layout.make_plan(_objects(), name, seed, kernel="k", image="hosted", commit=commit)
    out = tmp / f"{commit}-{name}-{plan.seed}"
    out.mkdir(parents=True)
    (out / "plan.json").write_text(plan.to_json())
    return build.Variant("k", commit, "hosted", name, plan.seed, out / "image.elf", out / "plan.json",
                         out / "link.ld", f"{commit}{name}{seed}".ljust(64, "0"), f"0x{plan.plan_id:07x}", True)


def _run(store: Store, build_id: int, rep: int, status: str = "ok", target: str = "local", host: str = "h1",
         value: float = 1.0) -> None:
    samples = [metrics.Sample("cycles", value, "cycles", False), metrics.Sample("ops", 2 * value, "1/s", True)]
    r = RunResult(status, 0, "", 0.1, "native", host, samples if status == "ok" else [])
    store.add_run(build_id, RunKey(target, host, "rerun"), rep, r, Path("/dev/null"), 0.0)


def test_store_filters_select_exactly_the_rows_asked_for(store, tmp_path):
    ids = {}
    for commit in ("aaaa1111", "bbbb2222"):
        for name, seed in (("sorted", 0), ("random", 1), ("random", 2)):
            ids[commit, name, seed] = store.build_id(_variant(tmp_path, commit, name, seed), {"quirks": []})
    assert len(set(ids.values())) == 6
    assert store.build_id(_variant(tmp_path / "again", "aaaa1111", "sorted", 0), {}) == ids["aaaa1111", "sorted", 0]
    for (commit, name, seed), bid in ids.items():
        _run(store, bid, 0, value=10 * seed + 1)
        _run(store, bid, 1, status="timeout" if name == "sorted" else "ok")
    _run(store, ids["aaaa1111", "random", 1], 0, target="qemu", host="h2")

    assert len(store.runs()) == 13
    assert len(store.runs(commit="aaaa")) == 7  # a commit matches by prefix
    assert {r["commit_sha"] for r in store.runs(commit="bbbb2222")} == {"bbbb2222"}
    assert len(store.runs(layout="random", seed=2)) == 4
    assert len(store.runs(status="timeout")) == 2
    assert [r["target"] for r in store.runs(host="h2")] == ["qemu"]
    assert len(store.runs(target="local", layout=["sorted", "random"], seed=[0, 1])) == 8  # lists: IN
    assert store.runs(kernel="k", commit=None, target="local", mode="reboot") == []  # None: no filter
    # samples: only ok runs have them; metric and build filters
    assert len(store.samples()) == 2 * 11
    cyc = store.samples(metric="cycles", commit="bbbb", layout="random")
    assert sorted(s["value"] for s in cyc) == [1.0, 1.0, 11.0, 21.0]
    assert {s["build_id"] for s in store.samples(build_id=ids["aaaa1111", "random", 2])} == {
        ids["aaaa1111", "random", 2]}
    assert store.samples(metric="no-such-metric") == []


# -- the layout registry -------------------------------------------------------------------------

def test_the_registry_lists_every_layout_with_its_seeding_and_label():
    assert list(layout.REGISTRY) == ALL  # the layouts test_build.py builds, boots and checks
    assert {n for n, s in layout.REGISTRY.items() if s.seeded} == {"random", "padded", "shuffled"}
    assert [layout.label(n, 3) for n in ALL] == [
        "default", "sorted", "aligned", "random:3", "function-aligned", "padded:3", "shuffled:3"]
    assert layout.label("retired-layout", 2) == "retired-layout:2"  # a name from an older store
    assert all(s.description for s in layout.REGISTRY.values())
    with pytest.raises(LayoutbenchError, match="unknown layout 'zigzag'; layouts are: default, sorted"):
        layout.get("zigzag")


def test_parse_specs_expands_seed_counts_only_for_seeded_layouts():
    assert layout.parse_specs(["default,random:3", "padded:2"], seed=5) == [
        ("default", 0), ("random", 5), ("random", 6), ("random", 7), ("padded", 5), ("padded", 6)]
    with pytest.raises(LayoutbenchError, match="takes no seed count.*only padded, random, shuffled do"):
        layout.parse_specs(["sorted:2"])


def test_plans_of_each_layout():
    objs = _objects()
    text = {name: layout.make_plan(objs, name, 7, pin_first=("boot/start.o",)).groups["text"]
            for name in layout.REGISTRY}
    assert [u.object for u in text["default"]] == ["boot/start.o", "kern/main.o", "net/ip.o", "dev/nic.o"]
    assert [u.object for u in text["sorted"]] == ["boot/start.o", "dev/nic.o", "kern/main.o", "net/ip.o"]
    assert [u.align for u in text["aligned"]] == [layout.PAGE] * 4
    rnd = text["random"]
    assert rnd[0].object == "boot/start.o" and rnd[0].gap == 0  # pinned first, no gap before it
    assert rnd[1].gap > 0 and all(u.gap == 0 for u in rnd[2:])  # one gap, before the first unpinned object
    assert rnd[1].gap == layout.make_plan(objs, "random", 7).groups["text"][0].gap
    fa = text["function-aligned"]
    assert [u.sections for u in fa][:3] == [[".text.start"], [".text.main"], [".text.idle"]]
    assert {u.align for u in fa} == {layout.FUNCTION_ALIGN}
    pad = text["padded"]
    assert len(pad) == 6 and all(u.gap % 16 == 0 and u.gap < layout.MAX_PAD for u in pad) and any(u.gap for u in pad)
    # data stays object by object in every function-level layout
    assert [u.sections for u in layout.make_plan(objs, "padded", 7).groups["data"]] == [None] * 4
    # an unseeded layout ignores the seed: the same plan for every seed
    assert layout.make_plan(objs, "sorted", 1).canonical() == layout.make_plan(objs, "sorted", 9).canonical()
    assert layout.make_plan(objs, "random", 1).canonical() != layout.make_plan(objs, "random", 9).canonical()


def test_promises_are_checked_from_addresses_alone():
    objs = {o.path: o for o in _objects()}
    plan = layout.make_plan(list(objs.values()), "aligned", 0, pin_first=("boot/start.o",))
    good = {("text", "boot/start.o"): 0x1010, ("text", "dev/nic.o"): 0x2000, ("text", "kern/main.o"): 0x3000,
            ("text", "net/ip.o"): 0x4000}
    assert layout.get("aligned").promise(plan, objs, good, {}) == []
    unsorted = {**good, ("text", "kern/main.o"): 0x5000}
    assert "not sorted" in layout.get("sorted").promise(plan, objs, unsorted, {})[0]
    off_page = {**good, ("text", "net/ip.o"): 0x4040}
    assert layout.get("aligned").promise(plan, objs, off_page, {}) == [
        "layout aligned: net/ip.o code starts at 0x4040, not on a page boundary"]
    addrs = {f: {0x1000 + 64 * i} for i, f in enumerate(["main", "idle", "ip_input", "nic_rx", "nic_tx", "start"])}
    assert layout.get("function-aligned").promise(plan, objs, good, addrs) == []
    assert "nic_tx (dev/nic.o) is not on 64 bytes" in layout.get("function-aligned").promise(
        plan, objs, good, {**addrs, "nic_tx": {0x1010}})[0]
    assert layout.get("random").promise(plan, objs, unsorted, {}) == []  # random promises no order


def test_shuffled_orders_objects_and_the_functions_inside_them_by_the_seed_alone():
    objs = _objects()
    many = objs + [ObjectInfo("lib/big.o", [InputSection(f".text.f{i}", 32, 16, 0x6,
                                                         [Symbol(f"f{i}", 0, 32, "func", "global", f".text.f{i}")])
                                            for i in range(12)])]

    def plan(seed, objects=many):
        return layout.make_plan(objects, "shuffled", seed, pin_first=("boot/start.o",))

    def big(p):
        return [u.sections[0] for u in p.groups["text"] if u.object == "lib/big.o"]

    # deterministic: the same seed gives the same plan, byte for byte
    assert plan(5).canonical() == plan(5).canonical()
    # the object order and lead gap are random's for the same seed; data stays object by object
    rnd = layout.make_plan(many, "random", 5, pin_first=("boot/start.o",))
    assert plan(5).object_order() == rnd.object_order()
    assert plan(5).groups["text"][1].gap == rnd.groups["text"][1].gap > 0
    assert [u.sections for u in plan(5).groups["data"]] == [None] * 4  # lib/big.o has no data
    # one unit per function, every function once; the inner order depends on the seed
    assert sorted(big(plan(5))) == sorted(f".text.f{i}" for i in range(12))
    orders = {tuple(big(plan(seed))) for seed in range(1, 9)}
    assert len(orders) == 8
    assert tuple(f".text.f{i}" for i in range(12)) not in orders  # not the build's order
    # a new function does not reshuffle the others (neighbouring commits stay paired)
    grown = many[:-1] + [ObjectInfo("lib/big.o", many[-1].sections + [
        InputSection(".text.new", 32, 16, 0x6, [Symbol("new", 0, 32, "func", "global", ".text.new")])])]
    assert [s for s in big(plan(5, grown)) if s != ".text.new"] == big(plan(5))
    # an object without -ffunction-sections is one unit: only the object order varies
    flat = objs[:-1] + [ObjectInfo("lib/flat.o", [InputSection(".text", 640, 16, 0x6, [
        Symbol("a", 0, 32, "func", "global", ".text"), Symbol("b", 32, 32, "func", "global", ".text")])])]
    assert [u.sections for u in plan(5, flat).groups["text"] if u.object == "lib/flat.o"] == [[".text"]]


def test_shuffled_promise_is_checked_from_addresses_alone():
    objs = {o.path: o for o in _objects()}
    plan = layout.make_plan(list(objs.values()), "shuffled", 3)
    starts, addrs, pos = {}, {}, 0x1000
    for u in plan.groups["text"]:  # lay the plan out as the linker would
        starts.setdefault(("text", u.object), pos)
        addrs[u.sections[0].removeprefix(".text.")] = {pos}
        pos += 32
    shuffled = layout.get("shuffled")
    assert shuffled.promise(plan, objs, starts, addrs) == []
    main, idle = addrs["main"], addrs["idle"]  # kern/main.o's two functions, swapped
    assert "layout shuffled: kern/main.o .text." in shuffled.promise(plan, objs, starts, {**addrs, "main": idle,
                                                                                      "idle": main})[0]
    # the object order is checked too
    first, second = [o for _, o in layout.text_order(plan, starts)][:2]
    swapped = {**starts, ("text", first): starts[("text", second)], ("text", second): starts[("text", first)]}
    assert "not in the order of seed 3" in shuffled.promise(plan, objs, swapped, addrs)[0]


def test_a_new_layout_is_one_class():
    @layout.register
    class Reversed(layout.Layout):
        name = "test-reversed"
        description = "the build's order backwards"

        def order(self, names, seed):
            return names[::-1]

    try:
        assert layout.parse_specs(["test-reversed"]) == [("test-reversed", 0)]
        plan = layout.make_plan(_objects(), "test-reversed", 3)
        assert plan.seed == 0 and plan.object_order() == ["boot/start.o", "dev/nic.o", "net/ip.o", "kern/main.o"]
        assert layout.label("test-reversed", 0) == "test-reversed"
        with pytest.raises(ValueError, match="new, non-empty name"):
            layout.register(Reversed)
    finally:
        del layout.REGISTRY["test-reversed"]


# -- the target registry -------------------------------------------------------------------------

def _with_target(kind: str, **settings) -> profile.Profile:
    prof = profile.load("minikernel")
    spec = profile.Target("t", kind, "hosted", 30.0, settings)
    return dataclasses.replace(prof, targets={**prof.targets, "t": spec})


def test_target_kinds_are_looked_up_in_one_table():
    assert set(targets.KINDS) == {"local", "qemu", "qemu-icache", "cachegrind", "ssh", "labgrid", "labgrid-places"}
    t = targets.make(profile.load("minikernel"), "local", timeout=7)
    assert type(t).__name__ == "LocalTarget" and t.kind == "local" and t.timeout == 7
    with pytest.raises(LayoutbenchError, match="target t has unknown kind 'telnet'; kinds are: local, qemu"):
        targets.make(_with_target("telnet"), "t")


@pytest.mark.parametrize("settings,says", [({"i1": "4096,3,64"}, "must be powers of two"),
                                            ({"i1": "4k"}, 'i1 must be "size,assoc,line"'),
                                            ({"accel": "kvm"}, "runs under TCG only")])
def test_the_cache_model_refuses_bad_settings_in_one_line(settings, says):
    with pytest.raises(LayoutbenchError, match=says):
        targets.make(_with_target("qemu-icache", **settings), "t")


def test_the_tcg_warning_is_for_timings_not_for_the_cache_models_counts():
    from layoutbench.compare import emulation_warning

    assert emulation_warning(["tcg"], ["ic_cost", "ic_i1_misses"]) is None
    assert "time the emulator" in emulation_warning(["tcg"], ["ic_cost", "cycles_per_packet"])
    assert "time the emulator" in emulation_warning(["tcg"], [])
    assert emulation_warning(["kvm"], ["cycles_per_packet"]) is None


@pytest.mark.parametrize("kind,setting,what", [("ssh", "host", "a host name or an alias from ~/.ssh/config"),
                                               ("labgrid", "env", "a labgrid environment YAML")])
def test_a_missing_required_setting_is_one_line_naming_it(kind, setting, what):
    with pytest.raises(LayoutbenchError) as e:
        targets.make(_with_target(kind), "t")
    assert str(e.value).endswith(f"kernel.toml: [targets.t] kind {kind} needs '{setting}' ({what})")


def test_remote_target_modules_are_imported_only_when_used():
    code = ("import sys; from layoutbench import profile, targets; "
            "targets.make(profile.load('minikernel'), 'cachegrind'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncssh', 'labgrid') "
            "or m in ('layoutbench.targets.ssh', 'layoutbench.targets.labgrid', 'layoutbench.targets.qemu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# -- formatting ------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Cmp:
    ratio: float
    ci_low: float
    ci_high: float
    verdict: str = "no difference"


def test_numbers_percents_and_ratios_read_the_same_everywhere():
    assert [fmt.number(x) for x in (1234567.0, 123.456, 1.23456, 0.0123456, None, math.nan)] == [
        "1.235e+06", "123.5", "1.235", "0.01235", "n/a", "n/a"]
    assert [fmt.axis(x) for x in (2.5e9, 1.5e6, 12345.0, 999.0)] == ["2.5G", "1.5M", "12.35k", "999"]
    assert [fmt.pct(0.01234), fmt.pct(0.5, 0), fmt.pct(None), fmt.pct(math.inf)] == ["1.23%", "50%", "n/a", "n/a"]
    assert [fmt.change(1.0123), fmt.change(0.98), fmt.change(math.nan)] == ["+1.23%", "-2.00%", "n/a"]
    assert fmt.effect(_Cmp(1.05, 1.04, 1.06)) == "+5.00% ± 1.00%"
    assert fmt.ratio(_Cmp(1.05, 1.04, 1.06, "slower")) == "1.050 ± 0.010  slower"
    assert fmt.ratio(_Cmp(1.0, 0.99, 1.01)) == "1.000 ± 0.010  same"
    assert [fmt.prob(0.97312), fmt.prob(None)] == ["0.973", "n/a"]
