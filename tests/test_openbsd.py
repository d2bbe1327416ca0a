"""The OpenBSD profile's generation steps, on a relink-kit-shaped folder built here from the
minikernel's objects (a Makefile with OBJS= and SYSTEM_HEAD=, ld.script, gapdummy.o).

The generated relink.sh is run here in its ``link`` phase with ld.lld-19 (the phase that
installs /bsd is not run: there is no OpenBSD machine here).  The relinked kernel obeys
the layout (object order, page alignment, the seeded gap) and still boots under QEMU (TCG).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, require
from layoutbench import build, layout, openbsd, profile, source

LD = shutil.which("ld.lld-19") or shutil.which("ld.lld")
CC = shutil.which("clang-19") or shutil.which("clang")


@pytest.fixture(autouse=True)
def _toolchain():
    require(None if LD and CC else "clang and ld.lld are not installed")


@pytest.fixture(scope="module")
def kit(tmp_path_factory, workdir) -> Path:
    """/usr/share/relink/kernel/MINI/ as OpenBSD would have it, from the minikernel's objects."""
    prof = profile.load("minikernel")
    objs = build.compile_objects(prof, source.resolve(prof, None, None, None))
    names = objs.object_list("kernel")
    kit = tmp_path_factory.mktemp("relink") / "MINI"
    for n in names:
        (kit / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(objs.objdir / n, kit / n)
    head, rest = names[0], names[1:]  # boot/pvh.o plays locore0.o
    (kit / "Makefile").write_text(
        "# Makefile of a relink kit (the shape of OpenBSD's, made from the minikernel)\n"
        f"SYSTEM_HEAD=\t{head} gap.o\n"
        "OBJS=\t" + " \\\n\t".join(rest) + "\n\n"
        "LINKFLAGS=\t-T ld.script -X --warn-common -no-pie -nostdlib -static -z noexecstack --build-id=none\n")
    img = prof.image("kernel")
    plan = layout.make_plan([], "default", kernel="minikernel", image="kernel")
    from layoutbench import linkscript
    (kit / "ld.script").write_text(linkscript.render(plan, img))  # the base script: catch-all patterns
    (kit / "empty.c").write_text("")
    subprocess.run([CC, "-c", "-o", str(kit / "gapdummy.o"), str(kit / "empty.c")], check=True)
    return kit


def relink(kit: Path, tmp: Path, name: str, seed: int = 1) -> tuple[Path, Path]:
    out = tmp / f"out-{name}-{seed}"
    paths = openbsd.write(kit, name, seed, out, target_kit=str(kit), work=str(out / "work"))
    p = subprocess.run(["sh", str(paths["relink.sh"]), "link"], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LD": LD, "LINKFLAGS":
                            "-T ld.script -X --warn-common -no-pie -nostdlib -static -z noexecstack --build-id=none"})
    assert p.returncode == 0, p.stderr + p.stdout
    return out / "work" / "bsd", paths["relink.sh"]


def test_reads_the_kit(kit):
    k = openbsd.read_kit(kit)
    assert k.head == ["boot/pvh.o", "gap.o"]
    assert len(k.objects) > 20 and "boot/pvh.o" not in k.objects
    assert openbsd.order(k, "sorted", 0)[2:] == sorted(k.objects)
    assert openbsd.order(k, "random", 3) == openbsd.order(k, "random", 3) != openbsd.order(k, "random", 4)


@pytest.mark.parametrize("name,seed", [("default", 0), ("sorted", 0), ("aligned", 0), ("random", 3)])
def test_generated_relink_links_with_lld_and_obeys_the_layout(kit, tmp_path, name, seed):
    bsd, script = relink(kit, tmp_path, name, seed)
    k = openbsd.read_kit(kit)
    want = [o for o in openbsd.order(k, name, seed) if o != "gap.o"]
    # where each object's code landed: the address of its first text symbol, from the map
    mapfile = tmp_path / "map"
    flags = "-X --warn-common -no-pie -nostdlib -static -z noexecstack --build-id=none".split()
    order = (bsd.parent / "order").read_text().split()
    subprocess.run([LD, *flags, "-T", str(bsd.parent / "ld.script"), "-o", str(tmp_path / "again"),
                    "-Map", str(mapfile), *order], cwd=kit, check=True)
    assert (tmp_path / "again").read_bytes() == bsd.read_bytes()  # the script's link is reproducible
    starts: dict[str, int] = {}
    for line in mapfile.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and ".o:(.text" in parts[4] and int(parts[2], 16) > 0:
            starts.setdefault(parts[4].split(":(")[0], int(parts[0], 16))
    placed = sorted((a, o) for o, a in starts.items() if o in want)
    assert [o for _, o in placed] == [o for o in want if o in starts]
    if name == "aligned":
        assert all(a % 4096 == 0 for a, o in placed if o != "boot/pvh.o")
    gap = openbsd.gaps(name, seed)["text"]
    text = script.read_text()
    assert f"gaps text {gap}," in text and "install -o root -g wheel -m 0700" in text
    if name == "random":
        assert gap > 0
        # the gap sits between locore (pvh.o) and the first object, as makegap.sh's gap.o does
        assert any(".o:(.text)" in ln and "gap.o" in ln for ln in mapfile.read_text().splitlines())


@pytest.mark.slow
def test_the_relinked_kernel_boots(kit, tmp_path):
    require(None if shutil.which("qemu-system-x86_64") else "qemu-system-x86_64 is not installed")
    bsd, _ = relink(kit, tmp_path, "random", 5)
    p = subprocess.run(["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "128M", "-cpu", "max",
                        "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
                        "-kernel", str(bsd), "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                        "-append", "iterations=2000"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 33, p.stdout[-2000:]
    assert "LAYOUTBENCH metric name=cycles_per_packet" in p.stdout


def test_the_target_table_and_the_cli(tmp_path):
    text = (ROOT / "kernels" / "openbsd" / "target.toml").read_text()
    assert "/usr/share/relink/kernel" in text and "relink.sh" in text
    p = subprocess.run(["python3", "-m", "layoutbench.openbsd", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "not a relink kit" in p.stderr
