"""Render a LayoutPlan into a linker script from a template, and run ld.lld on it."""

from __future__ import annotations

import shlex
import shutil
import signal
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import LayoutbenchError
from .layout import KINDS, LayoutPlan, Unit
from .profile import Image

#: the input-section patterns of an object-level unit, per kind
PATTERNS = {kind: f".{kind} .{kind}.[0-9a-zA-Z_]*" for kind in KINDS}  # as layout.section_kind


def _unit_lines(kind: str, u: Unit) -> list[str]:
    lines = []
    if u.align > 1:
        lines.append(f". = ALIGN({u.align});")
    if u.gap:
        lines.append(f". += {u.gap};")
    pats = " ".join(u.sections) if u.sections else PATTERNS[kind]
    lines.append(f'"{u.object}"({pats})')
    return lines


def render(plan: LayoutPlan, image: Image) -> str:
    """The linker script for ``plan``: the image's template with the units filled in."""
    fill = {
        kind: "\n".join("    " + line for u in plan.groups.get(kind, []) for line in _unit_lines(kind, u))
        for kind in KINDS
    }
    header = (f"/* layoutbench: kernel={plan.kernel} image={plan.image} commit={plan.commit[:12]} "
              f"layout={plan.layout} seed={plan.seed} plan=0x{plan.plan_id:07x} */\n")
    try:
        body = string.Template(image.template.read_text()).substitute(
            entry=image.entry, base=f"0x{image.base:x}", plan_id=f"0x{plan.plan_id:07x}", **fill
        )
    except (KeyError, ValueError) as e:
        raise LayoutbenchError(f"{image.template}: bad placeholder {e}; use ${{entry}} ${{base}} ${{plan_id}} "
                               f"${{text}} ${{rodata}} ${{data}} ${{bss}}") from None
    return header + body


def render_fragment(plan: LayoutPlan) -> str:
    """The text units alone, for a kernel whose own script INCLUDEs them inside ``.text``
    (Linux with the layoutbench quirks), between the two markers the placement check uses."""
    lines = [f"/* layoutbench: kernel={plan.kernel} commit={plan.commit[:12]} layout={plan.layout} "
             f"seed={plan.seed} plan=0x{plan.plan_id:07x} */",
             "__lb_text_units = .;"]
    for u in plan.groups.get("text", []):
        lines.extend(_unit_lines("text", u))
    lines.append("__lb_text_units_end = .;")
    return "\n".join(lines) + "\n"


def link(ld: str, script: Path, objects: list[str], objdir: Path, output: Path,
         ldflags: tuple[str, ...] = ()) -> None:
    """Link ``objects`` (paths relative to ``objdir``, which is the linker's cwd) with ``script``."""
    cmd = [ld, "-T", str(script), "--build-id=none", "-nostdlib", "-static", "-z", "noexecstack",
           *ldflags, "-o", str(output), *objects]
    try:
        p = _run(cmd, objdir, f"{output.name} with {script.name}")
    except FileNotFoundError:
        raise LayoutbenchError(f"linker {ld!r} not found; install lld-19 (apt-get install lld-19)") from None
    if p.returncode != 0:
        _disk_full(output)
        raise LayoutbenchError(f"linking {output.name} with {script.name} failed: {_why(p)}")


#: seconds a link may take (lld links a kernel in seconds; a linker that hangs is killed)
LINK_TIMEOUT = 600


def _run(cmd: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    """Run a link; one line when it does not end within LINK_TIMEOUT (the linker is killed)."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=LINK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise LayoutbenchError(f"linking {what} did not end within {LINK_TIMEOUT} s and was stopped; "
                               f"run the linker's command by hand (cd {cwd}; {shlex.join(cmd)[:200]}) "
                               f"to see where it hangs") from None


def _why(p: subprocess.CompletedProcess) -> str:
    """The reason a link failed: lld's first error line, else its output cut short, else the
    signal that killed it (a crashed or killed linker prints nothing)."""
    first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:300]).strip()[:300]
    if first:
        return first
    if p.returncode < 0:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        return f"the linker was killed by {name} and printed nothing"
    return f"the linker exited {p.returncode} and printed nothing"


def _disk_full(output: Path) -> None:
    """A link that failed where the disk is (nearly) full: say that, not the linker's crash banner."""
    import os

    try:
        st = os.statvfs(output.parent)
    except OSError:
        return
    if st.f_bavail * st.f_frsize < (4 << 20):
        raise LayoutbenchError(f"linking {output.name} failed: the disk holding {output.parent} is full "
                               f"({st.f_bavail * st.f_frsize // 1024} KiB left); free some space and run the "
                               f"same command again")


@dataclass(frozen=True)
class ProgramLink:
    """How an ordinary program is linked by the compiler driver (a ``program`` image)."""

    driver: str  #: ``clang-19``: adds crt files, libc, init arrays, TLS as for any program
    ld: str  #: the ld.lld the driver runs (``--ld-path``)
    template: Path  #: the partial script (linker-scripts/program-text.ld: .text placed after .init)
    fragment_dir: Path  #: holds the layout fragment the template INCLUDEs (searched via -L)
    objects: tuple[str, ...]  #: relative to ``objdir``, in link order
    objdir: Path  #: the driver's cwd
    output: Path
    ldflags: tuple[str, ...] = ()  #: driver flags before the objects
    libs: tuple[str, ...] = ()  #: after the objects (``-lm``...)
    static: bool = True


def program_command(p: ProgramLink) -> list[str]:
    """The driver command line of a ``program`` link: the template goes in with ``-T`` and,
    being a partial script (placed after .init), leaves lld's default layout for everything else."""
    ld = shutil.which(p.ld) or p.ld
    return [p.driver, "-fuse-ld=lld", f"--ld-path={ld}", *(["-static"] if p.static else []),
            "-Wl,--build-id=none", f"-Wl,-T,{p.template}", f"-Wl,-L,{p.fragment_dir}", *p.ldflags,
            "-o", str(p.output), *p.objects, *p.libs]


def link_program(p: ProgramLink, log: Path) -> None:
    """Link a ``program`` image; the command and the driver's output go to ``log``."""
    cmd = program_command(p)
    try:
        r = _run(cmd, p.objdir, f"{p.output.name} with {p.template.name}")
    except FileNotFoundError:
        raise LayoutbenchError(f"compiler driver {p.driver!r} not found; install clang-19 or set "
                               f"driver in the image's table") from None
    log.write_text(f"$ {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    if r.returncode != 0:
        _disk_full(p.output)
        raise LayoutbenchError(f"linking {p.output.name} with {p.template.name} failed: {_why(r)} -- log: {log}")
