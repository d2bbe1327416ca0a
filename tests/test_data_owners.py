"""Which object defines a data global (placement.data_owners), against ld.lld's own choice.

Each object defines the global ``v`` in one way (strongly in .data, weakly in .data, as a common
symbol, or not at all) with a size of its own, so the size of ``v`` in the linked image says
whose definition the linker kept.  Every object data_owners names for a name must be the one
whose definition is in the image; a name it leaves out is one several objects define alike.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutbench import elfinfo, placement

#: how object i defines v (size 8 * (i + 1)); None: it does not
KINDS = ("strong", "weak", "common", None)


def _asm(kind: str | None, size: int) -> str:
    head = ".text\n.globl f{n}\nf{n}: ret\n"
    if kind is None:
        return head
    if kind == "common":
        return head + f".comm v, {size}, 8\n"
    bind = ".globl v" if kind == "strong" else ".weak v"
    return head + f".data\n{bind}\n.type v, @object\n.size v, {size}\nv: .zero {size}\n"


def _link(kinds: list[str | None], d: Path) -> tuple[dict[str, elfinfo.ObjectInfo], int | None]:
    objs = {}
    for i, kind in enumerate(kinds):
        src, obj = d / f"o{i}.s", d / f"o{i}.o"
        src.write_text(_asm(kind, 8 * (i + 1)).replace("{n}", str(i)))
        subprocess.run(["clang-19", "-c", str(src), "-o", str(obj)], check=True)
        objs[obj.name] = elfinfo.read_object(obj, obj.name)
    out = d / "image.elf"
    subprocess.run(["ld.lld-19", "-e", "f0", "-o", str(out), *(str(d / name) for name in objs)], check=True)
    sizes = [s.size for s in elfinfo.read_image(out).symbols if s.name == "v"]
    return objs, sizes[0] if sizes else None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4).filter(lambda ks: ks.count("strong") <= 1))
def test_the_object_named_is_the_one_the_linker_kept(kinds):
    with tempfile.TemporaryDirectory() as d:
        objs, size = _link(kinds, Path(d))
        # what elfinfo's fast reader reads is what pyelftools reads
        for name, o in objs.items():
            assert o.data_globals == elfinfo.read_object_reference(Path(d) / name, name).data_globals
    owners = placement.data_owners(objs)
    defined = [i for i, k in enumerate(kinds) if k is not None]
    assert set(owners) <= {"v"}
    if "v" in owners:
        assert size == 8 * (int(owners["v"][1:-2]) + 1), (kinds, owners)
    # named whenever one object alone defines it, or one defines it strongly
    assert ("v" in owners) == (len(defined) == 1 or "strong" in kinds), (kinds, owners)
