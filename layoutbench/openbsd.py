"""OpenBSD: relink the kernel from its relink kit, on the test machine, in a chosen layout.

An OpenBSD machine keeps the compiled kernel objects in its relink kit,
``/usr/share/relink/kernel/<KERNEL>/`` (``KERNEL`` is ``GENERIC.MP`` or ``GENERIC``):
the kernel's ``Makefile`` (``OBJS=`` lists the objects, ``SYSTEM_HEAD=`` the ones that go
first: ``locore0.o gap.o``), the base linker script ``ld.script``, and ``gapdummy.o``
from which ``makegap.sh`` makes ``gap.o``, the random gap before the other objects.
At boot ``/usr/libexec/reorder_kernel`` relinks that in a random order (KARL).

This module reads a kit and writes, for a layout and seed, what replaces KARL's random
step, and one self-contained shell script, ``relink.sh``, that does the rest on the
target.  Layouts:

- ``default``: the Makefile's order;
- ``sorted``: objects sorted by name (Bluhm's sorted kernel);
- ``aligned``: sorted, and every object's ``.text`` on a page boundary (Bluhm's
  makealign.sh); the base ``ld.script`` gets one ``ALIGN(4096)`` line per object;
- ``random``: layoutbench's seeded order (a keyed hash of each name, as everywhere in
  layoutbench) plus a seeded makegap-like ``gap.o``: < 3 pages of text, < 1 page each of
  rodata, data and bss.

Every layout also gets its own ``gap.o`` (empty for all but ``random``) so that no
layout keeps the gap of the last boot's KARL link.  What ``relink.sh`` runs on the target
is spelled out in its own text and in docs/guide/remote.md.

Command line (on the build host, on a copy of a kit, or on the target itself)::

    python3 -m layoutbench.openbsd KITDIR --layout random --seed 3 --out DIR
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from . import layout
from .errors import LayoutbenchError

KIT_ROOT = "/usr/share/relink/kernel"
LAYOUTS = ("default", "sorted", "aligned", "random")
PAGE = layout.PAGE


@dataclass
class Kit:
    """What a relink kit says about its kernel."""

    path: Path
    head: list[str]  #: SYSTEM_HEAD: objects that stay first (locore0.o gap.o)
    objects: list[str]  #: the other objects in the Makefile's order
    ld_script: str  #: the base linker script's text

    @property
    def name(self) -> str:
        return self.path.name


def _make_var(text: str, name: str) -> list[str] | None:
    """The words of ``NAME=`` in a Makefile (with ``\\`` continuations), or None."""
    joined = re.sub(r"\\\n", " ", text)
    m = re.search(rf"^{name}\s*[?:]?=(.*)$", joined, re.M)
    return m.group(1).split() if m else None


def read_kit(path: Path) -> Kit:
    """Read a relink kit: its Makefile's ``OBJS=`` and ``SYSTEM_HEAD=``, and ``ld.script``."""
    path = Path(path)
    mk, lds = path / "Makefile", path / "ld.script"
    for f in (mk, lds):
        if not f.is_file():
            raise LayoutbenchError(f"{path}: not a relink kit (no {f.name}); on OpenBSD it is {KIT_ROOT}/<KERNEL>")
    text = mk.read_text()
    objs = _make_var(text, "OBJS")
    if not objs:
        raise LayoutbenchError(f"{mk}: no OBJS= line")
    head = _make_var(text, "SYSTEM_HEAD") or ["locore0.o", "gap.o"]
    head = [w for w in head if not w.startswith("$")]
    # SYSTEM_LD links ${OBJS} param.o ioconf.o vers.o after the head: add those the kit has
    extra = [o for o in ("param.o", "ioconf.o", "vers.o") if o not in objs and (path / o).is_file()]
    objects = [o for o in objs + extra if o not in head]
    return Kit(path, head, objects, lds.read_text())


def order(kit: Kit, layout_name: str, seed: int) -> list[str]:
    """The link order: the head (locore0.o, gap.o) first, then the objects in the layout's order."""
    if layout_name not in LAYOUTS:
        raise LayoutbenchError(f"layout {layout_name!r} is not available for OpenBSD relinking; "
                               f"use one of {', '.join(LAYOUTS)}")
    return kit.head + layout.order_objects(kit.objects, layout_name, seed)


def gaps(layout_name: str, seed: int) -> dict[str, int]:
    """Bytes of gap per section kind: seeded as layoutbench's random layout, zero otherwise."""
    return {k: layout.get(layout_name).lead_gap(k, seed) for k in layout.KINDS}


def gap_link(g: dict[str, int]) -> str:
    """A linker script that turns gapdummy.o into gap.o with the given gaps (makegap.sh's job)."""
    return f"""/* layoutbench: gap.o, as makegap.sh makes it, with seeded sizes */
SECTIONS
{{
  .text   : {{ BYTE(0xcc); . += {g['text']}; }} =0xcccccccc
  .rodata : {{ BYTE(0); . += {g['rodata']}; }}
  .data   : {{ BYTE(0); . += {g['data']}; }}
  .bss    : {{ . += {max(g['bss'], 1)}; }}
}}
"""


_TEXT_CATCHALL = re.compile(r"^(\s*)\*\(\.text\b[^)]*\)", re.M)


def ld_script(kit: Kit, layout_name: str) -> str:
    """The base ld.script, with one page-aligned line per object in .text for ``aligned``."""
    base = kit.ld_script
    if layout_name != "aligned":
        return base
    m = _TEXT_CATCHALL.search(base)
    if not m:
        raise LayoutbenchError(f"{kit.path}/ld.script: no '*(.text ...)' line to put aligned objects before")
    ind = m.group(1)
    # the head first, unaligned, as the kit links it (locore0.o, then the gap: $WORK/gap.o)
    lines = "".join(f'{ind}"{"*/gap.o" if o == "gap.o" else o}"(.text .text.*)\n' for o in kit.head)
    lines += "".join(f'{ind}. = ALIGN({PAGE});\n{ind}"{o}"(.text .text.*)\n' for o in order(kit, "aligned", 0)
                    if o not in kit.head)
    return base[:m.start()] + lines + base[m.start():]


def relink_script(kit: Kit, layout_name: str, seed: int, kit_dir: str | None = None,
                  work: str = "/var/layoutbench") -> str:
    """``relink.sh``: self-contained; ``sh relink.sh link`` links only, ``sh relink.sh`` also installs."""
    kit_dir = kit_dir or f"{KIT_ROOT}/{kit.name}"
    objs = order(kit, layout_name, seed)
    objs = [f"{work}/gap.o" if o == "gap.o" else o for o in objs]
    g = gaps(layout_name, seed)
    tag = f"{layout_name}" + (f" seed {seed}" if layout.get(layout_name).seeded else "")
    return f"""#!/bin/sh
# layoutbench: relink the OpenBSD kernel {kit.name} in layout {tag}, install it as /bsd.
# Generated by layoutbench.openbsd; runs on the test machine as root.
#   sh relink.sh link      only link: $WORK/bsd
#   sh relink.sh           link, then install $WORK/bsd as /bsd (the first time, the
#                          running /bsd is kept as /bsd.layoutbench-orig); reboot yourself.
# Environment: KIT (default {kit_dir}), WORK ({work}), LD (default ld),
#   LINKFLAGS (default: the kit Makefile's, from `make -V LINKFLAGS`, without its -T).
set -eu
KIT=${{KIT:-{kit_dir}}}
WORK=${{WORK:-{work}}}
LD=${{LD:-ld}}
mkdir -p "$WORK"
cd "$KIT"
if [ -z "${{LINKFLAGS:-}}" ]; then
  LINKFLAGS=$(make -V LINKFLAGS)
fi
LINKFLAGS=$(echo "$LINKFLAGS" | sed -e 's/-T *[^ ]*//')

# 1. the linker script: the kit's ld.script{', with every object page-aligned in .text' if layout_name == 'aligned' else ''}
cat > "$WORK/ld.script" <<'__LAYOUTBENCH_LDSCRIPT__'
{ld_script(kit, layout_name).rstrip()}
__LAYOUTBENCH_LDSCRIPT__

# 2. the gap: gap.o from the kit's gapdummy.o, gaps text {g['text']}, rodata {g['rodata']}, data {g['data']}, bss {g['bss']} bytes
cat > "$WORK/gap.link" <<'__LAYOUTBENCH_GAP__'
{gap_link(g).rstrip()}
__LAYOUTBENCH_GAP__
$LD -r -T "$WORK/gap.link" -o "$WORK/gap.o" gapdummy.o

# 3. the object order ({len(objs)} objects)
cat > "$WORK/order" <<'__LAYOUTBENCH_ORDER__'
{chr(10).join(objs)}
__LAYOUTBENCH_ORDER__

# 4. the link
$LD $LINKFLAGS -T "$WORK/ld.script" -o "$WORK/bsd.new" $(cat "$WORK/order")
mv "$WORK/bsd.new" "$WORK/bsd"
echo "layoutbench: linked $WORK/bsd ({kit.name}, {tag})"
[ "${{1:-}}" = link ] && exit 0

# 5. install: keep the original kernel once, then put ours in place
[ -e /bsd.layoutbench-orig ] || cp -p /bsd /bsd.layoutbench-orig
install -o root -g wheel -m 0700 "$WORK/bsd" /bsd.layoutbench-new
mv /bsd.layoutbench-new /bsd
sync
echo "layoutbench: installed /bsd ({tag}); reboot to run it"
"""


def write(kit_dir: Path, layout_name: str, seed: int, out: Path, target_kit: str | None = None,
          work: str = "/var/layoutbench") -> dict[str, Path]:
    """Write order, ld.script, gap.link and relink.sh for a layout into ``out``."""
    kit = read_kit(kit_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "order": "\n".join(order(kit, layout_name, seed)) + "\n",
        "ld.script": ld_script(kit, layout_name),
        "gap.link": gap_link(gaps(layout_name, seed)),
        "relink.sh": relink_script(kit, layout_name, seed, target_kit, work),
    }
    paths = {}
    for name, text in files.items():
        (out / name).write_text(text)
        paths[name] = out / name
    paths["relink.sh"].chmod(0o755)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m layoutbench.openbsd",
                                 description="Write the relink files of an OpenBSD kernel layout.")
    ap.add_argument("kit", type=Path, help=f"a relink kit ({KIT_ROOT}/GENERIC.MP or a copy of it)")
    ap.add_argument("--layout", default="random", choices=LAYOUTS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--target-kit", help="the kit's path on the target (default: /usr/share/relink/kernel/NAME)")
    ap.add_argument("--work", default="/var/layoutbench", help="work folder on the target")
    a = ap.parse_args(argv)
    try:
        paths = write(a.kit, a.layout, a.seed, a.out, a.target_kit, a.work)
    except LayoutbenchError as e:
        ap.exit(2, f"layoutbench.openbsd: error: {e}\n")
    for p in paths.values():
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
