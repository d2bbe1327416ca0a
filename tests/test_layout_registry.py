"""The layout registry: every layout listed with its seeding and label, seed counts expanded,
each layout's plan, its promise checked from addresses alone, and a new layout as one class."""

from __future__ import annotations

import pytest

from layoutbench import layout
from layoutbench.elfinfo import InputSection, ObjectInfo, Symbol
from layoutbench.errors import LayoutbenchError
from test_build import ALL


def objects() -> list[ObjectInfo]:
    """Four small objects (code sections with a function each, and data), as a build reads them."""
    def obj(name: str, *funcs: str) -> ObjectInfo:
        secs = [InputSection(f".text.{f}", 32, 16, 0x6, [Symbol(f, 0, 32, "func", "global", f".text.{f}")])
                for f in funcs]
        return ObjectInfo(name, secs + [InputSection(".data", 8, 8, 0x3, [])])
    return [obj("kern/main.o", "main", "idle"), obj("net/ip.o", "ip_input"), obj("dev/nic.o", "nic_rx", "nic_tx"),
            obj("boot/start.o", "start")]


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
    objs = objects()
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
    objs = {o.path: o for o in objects()}
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
    objs = objects()
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
    objs = {o.path: o for o in objects()}
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
        plan = layout.make_plan(objects(), "test-reversed", 3)
        assert plan.seed == 0 and plan.object_order() == ["boot/start.o", "dev/nic.o", "net/ip.o", "kern/main.o"]
        assert layout.label("test-reversed", 0) == "test-reversed"
        with pytest.raises(ValueError, match="new, non-empty name"):
            layout.register(Reversed)
    finally:
        del layout.REGISTRY["test-reversed"]
