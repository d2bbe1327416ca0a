"""Compile a commit's objects once (cached), then link any number of layout variants.

Work directory layout (``$LAYOUTBENCH_DIR``, default ``./.layoutbench``)::

    objects/<kernel>/<commit12>-<config8>/src/        the exported tree (quirks applied)
                                          obj/        the objects, reused by every variant
                                          build.json  toolchain, duration, quirks; written last
    images/<kernel>/<commit12>-<config8>/<image>/<layout>-<seed>/
                                          image.elf  plan.json  link.ld  variant.json
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from . import elfinfo, layout, linkscript, placement, procs, quirks, source
from .errors import BuildFailed, LayoutbenchError
from .paths import LINKER_SCRIPTS, workdir
from .profile import Profile
from .reuse import object_entries, reusable


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class ObjectSet:
    """The compiled objects of one commit of one kernel."""

    profile: Profile
    checkout: source.Checkout
    objdir: Path
    info: dict  #: the build record (build.json)
    compiled_now: bool  #: False when the objects came from the cache
    _objinfo: dict = field(default_factory=dict)

    @property
    def src(self) -> Path:
        """The kernel tree the objects were built from."""
        return Path(self.info.get("src") or self.checkout.tree or "")

    @property
    def reused_from(self) -> str | None:
        """The commit whose objects these are, when they were reused for ``checkout`` (see
        :func:`reusable`); None when they were compiled from ``checkout`` itself."""
        return self.info.get("reused_from")

    @property
    def commit(self) -> str:
        """The commit the objects were compiled from: the images are that commit's."""
        return self.reused_from or self.checkout.commit

    @property
    def key(self) -> str:
        """Names the object set (and its images) in the work directory."""
        return f"{self.reused_from[:12] if self.reused_from else self.checkout.key}-{self.info['config']}"

    def entries(self, image: str) -> list[tuple[str, str]]:
        """(name the linker knows the object by, its file relative to objdir), in link order.

        A line of the object list is ``NAME`` or ``NAME PATH`` (e.g. ``vmlinux.a:kernel/fork.o
        kernel/fork.o`` for a member of a thin archive)."""
        img = self.profile.image(image)
        if not (self.objdir / img.objects).is_file():
            raise LayoutbenchError(f"the build of {self.profile.name} wrote no object list {img.objects} "
                                   f"in {self.objdir}; check [images.{image}] objects in {self.profile.path}")
        return object_entries(self.objdir / img.objects)

    def object_list(self, image: str) -> list[str]:
        return [name for name, _ in self.entries(image)]

    def objects(self, image: str) -> list[elfinfo.ObjectInfo]:
        out = []
        for name, rel in self.entries(image):
            if name not in self._objinfo:
                path = self.objdir / rel
                if not path.is_file():
                    raise LayoutbenchError(f"object {name} listed in {self.profile.image(image).objects} "
                                           f"was not built (missing {path})")
                self._objinfo[name] = elfinfo.read_object(path, name)
            out.append(self._objinfo[name])
        return out


def _config_hash(profile: Profile, applied: list[quirks.Quirk]) -> str:
    b = profile.build
    key = json.dumps([b.command, b.cc, sorted(b.env.items()), [q.key() for q in applied]]
                     + ([[f.name, sha256_file(f)] for f in b.inputs] if b.inputs else []))
    return hashlib.sha256(key.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Step:
    """One of the profile's shell commands to run: what it is (for messages), its template, where."""

    what: str  #: "build", "link"
    template: str  #: with {src}, {objdir}, {cc}, {ld}, {jobs}, {profile_dir} and ``more``'s names
    src: Path
    objdir: Path
    log: Path  #: appended to
    env: dict  #: on top of the environment and the profile's build env
    jobs: int = 1
    error: type[LayoutbenchError] = BuildFailed  #: raised when it fails
    more: dict = field(default_factory=dict)  #: more placeholders
    tick: Callable[[float], None] | None = None  #: called every PROGRESS_EVERY s while it runs, with the seconds so far


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(\w+)\}")


def fill_placeholders(template: str, values: dict) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced; any other brace is the shell's
    (``awk '{print $1}'``, ``${VAR}``) and stays as written.  ``{{``/``}}`` still mean ``{``/``}``."""
    def one(m: re.Match) -> str:
        if m.group(1) is None:
            return m.group(0)[0]
        return str(values[m.group(1)]) if m.group(1) in values else m.group(0)
    return _PLACEHOLDER.sub(one, template)


def _shell(profile: Profile, step: Step, lock_fd: int | None = None) -> None:
    """Run one of the profile's shell commands with its placeholders filled in, into ``step.log``,
    in its own process group (killed whole on timeout, interrupt, and when the command ends).
    ``lock_fd``: the folder's lock, held by the command's processes too, so that a build left
    running by a killed layoutbench still holds it."""
    b = profile.build
    what, src, log, error, timeout = step.what, step.src, step.log, step.error, b.timeout
    fill = {"src": src, "objdir": step.objdir, "cc": b.cc, "ld": b.ld, "profile_dir": profile.path.parent,
            "linker_scripts": LINKER_SCRIPTS, **step.more}
    cmd = fill_placeholders(step.template, {"jobs": step.jobs, **{k: shlex.quote(str(v)) for k, v in fill.items()}})
    env = {**os.environ, **b.env, **step.env}
    if lock_fd is not None:
        env[LOCK_ENV] = os.readlink(f"/proc/self/fd/{lock_fd}")
    with open(log, "a") as out:
        out.write(f"$ {cmd}\n")
        out.flush()
        p = procs.start(cmd, shell=True, cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, pass_fds=(lock_fd,) if lock_fd is not None else ())
        if lock_fd is not None:
            _write_owner(lock_fd, p.pid)
        if procs.finish(p, timeout, step.tick, PROGRESS_EVERY):
            raise error(f"{what} of {profile.name} timed out after {timeout:.0f}s; log: {log}") from None
    if p.returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        first = next((ln for ln in lines if re.search(r"\berror\b:|\bError\b", ln)), lines[-1] if lines else "")
        if _disk_full(step.objdir):
            raise error(f"{what} of {profile.name} failed (exit {p.returncode}): the disk holding {step.objdir} "
                        f"is full; free some space and run the same command again -- log: {log}")
        raise error(f"{what} of {profile.name} failed (exit {p.returncode}): {first.strip()[:200]} -- log: {log}")


def _disk_full(path: Path) -> bool:
    """Less than 1 MB left where ``path`` is (what a failed compile or link blames first)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < (1 << 20)


LOCK_ENV = "LAYOUTBENCH_BUILD_LOCK"  #: set in a build's environment: the lock it holds (how an orphan is recognised)


def _write_owner(fd: int, pgid: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "pgid": pgid}).encode(), 0)


def _orphans_of(lock: Path) -> set[int]:
    """The process groups of a build left running by a layoutbench that was killed: its owner pid
    (written when the lock was taken, before the build started) is gone, and processes that carry
    this lock in their environment still run.  Empty when the owner lives (then it is not orphaned)."""
    try:
        pid = int(json.loads(lock.read_text() or "{}")["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    if procs.alive(pid):
        return set()
    mark = f"{LOCK_ENV}={lock.resolve()}".encode()
    groups = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if mark in (d / "environ").read_bytes().split(b"\0"):
                groups.add(os.getpgid(int(d.name)))
        except (OSError, ValueError):
            continue
    return groups


@contextmanager
def _build_lock(path: Path, say):
    """The object folder's lock (``flock``; the build's processes inherit it).  Held by a build whose
    layoutbench was killed (an orphaned make): that build is killed first; held by a live
    layoutbench: wait for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            orphans = _orphans_of(path)
            if orphans:
                say(f"killing the build left running by a killed layoutbench (process group "
                    f"{', '.join(map(str, sorted(orphans)))}) in {path.with_suffix('')}")
                for g in orphans:
                    procs.killpg(g)
            else:
                say(f"waiting for another layoutbench building into {path.with_suffix('')}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "pgid": None}).encode(), 0)
        yield fd
    finally:
        os.close(fd)


def _written_since(objdir: Path, t: float) -> int:
    """Files under ``objdir`` modified at or after ``t`` (what a working-tree build wrote)."""
    n = 0
    for root, _dirs, files in os.walk(objdir):
        for f in files:
            try:
                n += os.stat(os.path.join(root, f), follow_symlinks=False).st_mtime >= t
            except OSError:
                pass
    return n


PROGRESS_EVERY = 60.0  #: seconds between two progress lines of a long build


def _objects_in(objdir: Path) -> int:
    """The object files (``*.o``) under ``objdir``."""
    return sum(f.endswith(".o") for _root, _dirs, files in os.walk(objdir) for f in files)


def _compile_ticker(profile: Profile, short: str, objdir: Path, say) -> Callable[[float], None]:
    """A compile's progress, said every PROGRESS_EVERY seconds: how long so far, the objects written, and against the
    last compile of this profile here (``objects_written`` of its build.json) the time left at this rate."""
    from .costs import duration_text

    done = sorted((workdir() / "objects" / profile.name).glob("*/build.json"), key=lambda f: f.stat().st_mtime)
    last = next((n for f in reversed(done) if (n := json.loads(f.read_text()).get("objects_written"))), None)

    def tick(seconds: float) -> None:
        n = _objects_in(objdir)
        left = f", about {duration_text(seconds * (last - n) / n)} left at this rate" if last and 0 < n < last else ""
        say(f"compiling {profile.name} at {short}: {duration_text(seconds)} so far, {n} objects written"
            + (f" of about {last} (the last compile here)" if last else "") + left)
    return tick


def compile_objects(profile: Profile, checkout: source.Checkout, jobs: int | None = None,
                    say=lambda msg: None, why: str = "") -> ObjectSet:
    """Compile the objects of ``checkout`` once; later calls return the cached objects.  ``why``:
    what the build is for, said after ``compiling X`` (a bisection's phase and builds).

    A working-tree build (no commit) always runs the build command in its own object
    folder, so an incremental build system rebuilds only what changed.
    """
    jobs = jobs or os.cpu_count() or 1
    applied = quirks.applicable(profile, checkout)
    skip = [q for q in applied if q.skip]
    if skip:
        raise BuildFailed(f"commit {checkout.short} of {profile.name} is skipped by quirk {skip[0].name}: {skip[0].reason}")
    cfg = _config_hash(profile, applied)
    base = workdir() / "objects" / profile.name / f"{checkout.key}-{cfg}"
    record = base / "build.json"
    with _build_lock(base.with_suffix(".lock"), say) as lock_fd:
        if checkout.commit != source.WORKTREE and record.is_file():
            info = json.loads(record.read_text())
            return ObjectSet(profile, checkout, Path(info.get("objdir") or base / "obj"), info, False)
        found = reusable(profile, checkout, cfg, say)
        if found is not None:
            other, info, n = found
            info = {**info, "reused_from": info["commit"], "changed_files": n, "objdir": str(other / "obj")}
            say(f"objects of {info['commit'][:12]} reused for {checkout.short}: the build reads none of the {n} "
                f"changed files")
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(info, indent=1))
            return ObjectSet(profile, checkout, other / "obj", info, False)
        if checkout.commit == source.WORKTREE:
            src = checkout.tree
        else:
            if (base / "src").exists():
                shutil.rmtree(base / "src")
            say(f"exporting {checkout.short}")
            src = source.export(checkout, base / "src")
        # an interrupted or failed earlier build left its objects: the build system (make)
        # decides what is stale; the tree itself was exported afresh above
        objdir = base / "obj"
        objdir.mkdir(parents=True, exist_ok=True)
        log = base / "build.log"
        log.write_text("")
        env_extra = quirks.prepare(applied, src, log, profile.build.timeout)
        worktree = checkout.commit == source.WORKTREE
        say(f"building {profile.name} at {checkout.short} (its build system rebuilds what changed)" if worktree
            else f"compiling {profile.name} at {checkout.short}" + (f" {why}" if why else ""))
        t0, started = time.monotonic(), time.time()
        through = {} if worktree else ccache_env(profile, base.parent)
        _shell(profile, Step("build", profile.build.command, src, objdir, log, {**env_extra, **through}, jobs,
                             tick=_compile_ticker(profile, checkout.short, objdir, say)), lock_fd)
        if worktree:
            n = _written_since(objdir, started)
            say(f"{profile.name} at {checkout.short}: " + (f"{n} file(s) of its objects written" if n
                                                             else "up to date, nothing rebuilt"))
        info = {
            "kernel": profile.name,
            "commit": checkout.commit,
            "config": cfg,
            "cc": tool_version(profile.build.cc),
            "ld": tool_version(profile.build.ld),
            "seconds": round(time.monotonic() - t0, 3),
            "started": round(started, 3),  #: when the compile began (seconds since the epoch)
            "quirks": [q.name for q in applied],
            "env": env_extra,
            "ccache": bool(through),  #: compiled through ccache (the objects are the same bytes either way)
            "src": str(src),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "objects_written": _objects_in(objdir),  #: what the next compile's progress counts against
        }
        record.write_text(json.dumps(info, indent=1))
        return ObjectSet(profile, checkout, objdir, info, True)


CCACHE_ENV = "LAYOUTBENCH_CCACHE"  #: "0": compile without ccache even where it is installed


def ccache_env(profile: Profile, objroot: Path) -> dict:
    """The environment in which the build command's compiler runs through ccache (Debian's package),
    or {} when ccache is not installed, cannot write its cache, ``LAYOUTBENCH_CCACHE=0``, or the
    profile's ``cc`` is a path rather than a command name.  (Only for an exported commit: a working
    tree's build is make's incremental one, whose dependency files must name the objects as make
    does; ccache's would be relative to the tree.)

    ccache's own way ("masquerading"): a folder in the work folder holds a link named after the
    compiler to ccache, put first on PATH; ccache then runs the next compiler of that name.  Every
    commit is exported to ``objroot/<commit>-<config>/src`` and compiled in ``.../obj``, so with
    ``CCACHE_BASEDIR`` at ``objroot`` the compiler sees the same relative paths in every export and
    a neighbouring commit compiles only the files it changed."""
    cc = profile.build.cc
    if os.environ.get(CCACHE_ENV, "1") == "0" or not cc or os.sep in cc:
        return {}
    ccache, path = shutil.which("ccache"), profile.build.env.get("PATH", os.environ.get("PATH", os.defpath))
    if ccache is None or shutil.which(cc, path=path) is None or not _ccache_writable(ccache):
        return {}
    shim = workdir() / "ccache-bin"
    link = shim / cc
    if not link.is_symlink():
        shim.mkdir(parents=True, exist_ok=True)
        tmp = shim / f".{cc}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(ccache)
        tmp.replace(link)  # atomic: two commands compiling at once both see a whole link
    return {"PATH": f"{shim}{os.pathsep}{path}",
            "CCACHE_BASEDIR": os.environ.get("CCACHE_BASEDIR", str(objroot)),
            "CCACHE_NOHASHDIR": os.environ.get("CCACHE_NOHASHDIR", "1")}


_ccache_ok: dict[str, bool] = {}


def _ccache_writable(ccache: str) -> bool:
    """ccache can write its cache folder (or create it): a compile through it would fail otherwise."""
    if ccache not in _ccache_ok:
        try:
            d = subprocess.run([ccache, "--get-config", "cache_dir"], capture_output=True, text=True,
                               timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            d = ""
        p = Path(d) if d else None
        while p is not None and not p.exists() and p.parent != p:
            p = p.parent
        _ccache_ok[ccache] = p is not None and os.access(p, os.W_OK | os.X_OK)
    return _ccache_ok[ccache]


def compile_seconds(profile: Profile) -> list[float]:
    """The wall seconds of every compile of ``profile``'s commits recorded in the work folder (a
    commit that linked a neighbour's objects, or a working tree, compiled nothing of its own)."""
    out = []
    for rec in (workdir() / "objects" / profile.name).glob("*/build.json"):
        try:
            info = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        if not info.get("reused_from") and info.get("commit") != source.WORKTREE and info.get("seconds"):
            out.append(float(info["seconds"]))
    return out


@dataclass
class Variant:
    """One linked image in one layout, with its plan."""

    kernel: str
    commit: str  #: the commit measured
    image: str
    layout: str
    seed: int
    elf: Path
    plan_path: Path
    script: Path
    sha256: str
    plan_id: str
    linked_now: bool
    #: wall seconds the link took (plan, script, linker, placement check) when it was linked;
    #: a reused image keeps the seconds of its link (None: linked before they were recorded)
    link_seconds: float | None = None
    #: the commit whose objects were linked, when they were reused from it (reuse.reusable)
    objects_of: str | None = None

    @property
    def label(self) -> str:
        return layout.label(self.layout, self.seed)

    def to_dict(self) -> dict:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


def link_variant(objs: ObjectSet, image: str, layout_name: str, seed: int = 0) -> Variant:
    """Link one variant (reusing an identical earlier link) and check its placement; two
    processes asking for the same variant (workers sharing a work directory) take turns, so
    one links and the other reuses its image."""
    lock = workdir() / "images" / objs.profile.name / objs.key / image / f"{layout_name}-{seed}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with _locked(lock):
        return _link_variant(objs, image, layout_name, seed)


def _link_variant(objs: ObjectSet, image: str, layout_name: str, seed: int = 0) -> Variant:
    """Link one variant (reusing an identical earlier link) and check its placement.

    The image is linked by ld.lld with the profile's template, or, for a kernel whose own
    build system must link it (Linux: kallsyms passes), by the image's ``link_command`` with
    the plan's text units rendered into ``{fragment_dir}/<fragment>``, or, for a ``program``
    image, by the compiler driver with the partial script that INCLUDEs that fragment.
    """
    profile = objs.profile
    t0 = time.monotonic()
    img = profile.image(image)
    objects = objs.objects(image)
    # objects reused from another commit link that commit's images: the same plan, the same bytes
    plan = layout.make_plan(objects, layout_name, seed, kernel=profile.name, image=image,
                            commit=objs.commit, pin_first=img.pin_first, kinds=img.kinds)
    seed = plan.seed
    # keyed like the objects: the same commit built with other quirks or settings links other images
    out = workdir() / "images" / profile.name / objs.key / image / f"{layout_name}-{seed}"
    elf, plan_path, meta = out / "image.elf", out / "plan.json", out / "variant.json"
    if img.kind in ("command", "program"):
        script, text = out / img.fragment, linkscript.render_fragment(plan)
    else:
        script, text = out / "link.ld", linkscript.render(plan, img)
    if objs.checkout.commit != source.WORKTREE and meta.is_file() and elf.is_file() and script.is_file() \
            and script.read_text() == text:
        old = json.loads(meta.read_text())
        if old.get("sha256") == sha256_file(elf):
            if not placement.has_globals(elf):  # linked before units (and data globals) were recorded
                _record_units(elf, plan, {o.path: o for o in objects})
            return Variant(**{**old, "elf": Path(old["elf"]), "plan_path": Path(old["plan_path"]),
                              "script": Path(old["script"]), "linked_now": False, "commit": objs.checkout.commit,
                              "objects_of": objs.reused_from})
    out.mkdir(parents=True, exist_ok=True)
    (out / placement.UNITS).unlink(missing_ok=True)  # whatever is linked now, the old record is not of it
    plan_path.write_text(plan.to_json())
    script.write_text(text)
    tmp = out / "image.elf.tmp"
    if img.link_command:
        # one link at a time in an object folder: the kernel's build writes its output there
        with _locked(objs.objdir.parent / "link.lock"):
            produced = objs.objdir / img.output
            produced.unlink(missing_ok=True)
            _shell(profile, Step("link", img.link_command, objs.src, objs.objdir, out / "link.log",
                                 objs.info.get("env", {}), error=LayoutbenchError, more={"fragment_dir": out}))
            if not produced.is_file():
                raise LayoutbenchError(f"the link command of {profile.name} wrote no {produced}; see {out / 'link.log'}")
            shutil.copyfile(produced, tmp)
            shutil.copymode(produced, tmp)  # a hosted program stays executable
    elif img.kind == "program":
        assert img.template is not None and img.driver is not None
        linkscript.link_program(linkscript.ProgramLink(
            driver=img.driver, ld=profile.build.ld, template=img.template, fragment_dir=out,
            objects=tuple(o.path for o in objects), objdir=objs.objdir, output=tmp,
            ldflags=img.ldflags, libs=img.libs, static=img.static), out / "link.log")
    else:
        linkscript.link(profile.build.ld, script, [o.path for o in objects], objs.objdir, tmp, img.ldflags)
    info = elfinfo.read_image(tmp)
    by_path = {o.path: o for o in objects}
    where = placement.check(plan, by_path, info)
    tmp.replace(elf)
    placement.record(elf, plan, where, info, by_path)
    for extra in img.extra_files:
        shutil.copyfile(objs.objdir / extra, out / Path(extra).name)
    v = Variant(profile.name, objs.commit, image, layout_name, seed, elf, plan_path, script,
                sha256_file(elf), f"0x{plan.plan_id:07x}", True, time.monotonic() - t0)
    # the folder is the objects' commit's (other commits may link it): its record names that commit
    meta.write_text(json.dumps({k: val for k, val in v.to_dict().items() if k not in ("linked_now", "objects_of")},
                               indent=1))
    return replace(v, commit=objs.checkout.commit, objects_of=objs.reused_from)


def _record_units(elf: Path, plan, objects: dict) -> None:
    """Record the units of an image linked (and checked) by an earlier layoutbench: replayed now."""
    info = elfinfo.read_image(elf)
    where = placement.replay(plan, objects, info)
    if not where.problems:
        placement.record(elf, plan, where, info, objects)


def build_variants(profile: Profile, checkout: source.Checkout, specs: list[tuple[str, int]],
                   images: list[str] | None = None, jobs: int | None = None,
                   say=lambda msg: None) -> tuple[ObjectSet, list[Variant]]:
    """Compile once, then link every (layout, seed) for every image."""
    objs = compile_objects(profile, checkout, jobs, say)
    variants = []
    for image in images or list(profile.images):
        for name, seed in specs:
            v = link_variant(objs, image, name, seed)
            say(f"{image} {v.label}: " + ("linked and verified" if v.linked_now else "unchanged, reused"))
            variants.append(v)
    return objs, variants
