"""Compile a commit's objects once (cached), then link any number of layout variants.

Work directory layout (``$LAYOUTBENCH_DIR``, default ``./.layoutbench``)::

    objects/<kernel>/<commit12>-<config8>/src/        the exported tree (quirks applied)
                                          obj/        the objects, reused by every variant
                                          build.json  toolchain, duration, quirks; written last
    images/<kernel>/<commit12>/<image>/<layout>-<seed>/
                                          image.elf  plan.json  link.ld  variant.json
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import elfinfo, layout, linkscript, placement, quirks, source
from .errors import BuildFailed, LayoutbenchError
from .paths import workdir
from .profile import Profile


def _sha256(path: Path) -> str:
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

    def object_list(self, image: str) -> list[str]:
        img = self.profile.image(image)
        f = self.objdir / img.objects
        if not f.is_file():
            raise LayoutbenchError(f"the build of {self.profile.name} wrote no object list {img.objects} "
                                   f"in {self.objdir}; check [images.{image}] objects in {self.profile.path}")
        return [l.strip() for l in f.read_text().splitlines() if l.strip() and not l.startswith("#")]

    def objects(self, image: str) -> list[elfinfo.ObjectInfo]:
        out = []
        for name in self.object_list(image):
            if name not in self._objinfo:
                path = self.objdir / name
                if not path.is_file():
                    raise LayoutbenchError(f"object {name} listed in {self.profile.image(image).objects} "
                                           f"was not built (missing {path})")
                self._objinfo[name] = elfinfo.read_object(path, name)
            out.append(self._objinfo[name])
        return out


def _config_hash(profile: Profile, applied: list[quirks.Quirk]) -> str:
    b = profile.build
    key = json.dumps([b.command, b.cc, sorted(b.env.items()), [q.key() for q in applied]])
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def _run_build(profile: Profile, src: Path, objdir: Path, log: Path, env_extra: dict, jobs: int) -> None:
    b = profile.build
    cmd = b.command.format(src=shlex.quote(str(src)), objdir=shlex.quote(str(objdir)), jobs=jobs,
                           cc=shlex.quote(b.cc), ld=shlex.quote(b.ld))
    env = {**os.environ, **b.env, **env_extra}
    with open(log, "a") as out:
        out.write(f"$ {cmd}\n")
        out.flush()
        try:
            p = subprocess.run(cmd, shell=True, cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT,
                               timeout=b.timeout)
        except subprocess.TimeoutExpired:
            raise BuildFailed(f"build of {profile.name} timed out after {b.timeout:.0f}s; log: {log}") from None
    if p.returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        first = next((l for l in lines if "error" in l.lower()), lines[-1] if lines else "")
        raise BuildFailed(f"build of {profile.name} failed (exit {p.returncode}): {first.strip()[:200]} -- log: {log}")


def compile_objects(profile: Profile, checkout: source.Checkout, jobs: int | None = None,
                    say=lambda msg: None) -> ObjectSet:
    """Compile the objects of ``checkout`` once; later calls return the cached objects.

    A working-tree build (no commit) always runs the build command in its own object
    folder, so an incremental build system rebuilds only what changed.
    """
    jobs = jobs or os.cpu_count() or 1
    applied = quirks.applicable(profile, checkout)
    skip = [q for q in applied if q.skip]
    if skip:
        raise BuildFailed(f"commit {checkout.short} of {profile.name} is skipped by quirk {skip[0].name}: {skip[0].reason}")
    cfg = _config_hash(profile, applied)
    base = workdir() / "objects" / profile.name / f"{checkout.short}-{cfg}"
    record = base / "build.json"
    with _locked(base.with_suffix(".lock")):
        if checkout.commit != source.WORKTREE and record.is_file():
            return ObjectSet(profile, checkout, base / "obj", json.loads(record.read_text()), False)
        if checkout.commit == source.WORKTREE:
            src = checkout.tree
        else:
            if (base / "src").exists():
                shutil.rmtree(base / "src")
            say(f"exporting {checkout.short}")
            src = source.export(checkout, base / "src")
        objdir = base / "obj"
        if checkout.commit != source.WORKTREE and objdir.exists():
            shutil.rmtree(objdir)  # an interrupted build: start again from nothing
        objdir.mkdir(parents=True, exist_ok=True)
        log = base / "build.log"
        log.write_text("")
        env_extra = quirks.prepare(applied, src, log)
        say(f"compiling {profile.name} at {checkout.short}")
        t0 = time.monotonic()
        _run_build(profile, src, objdir, log, env_extra, jobs)
        info = {
            "kernel": profile.name,
            "commit": checkout.commit,
            "config": cfg,
            "cc": tool_version(profile.build.cc),
            "ld": tool_version(profile.build.ld),
            "seconds": round(time.monotonic() - t0, 3),
            "quirks": [q.name for q in applied],
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        record.write_text(json.dumps(info, indent=1))
        return ObjectSet(profile, checkout, objdir, info, True)


@dataclass
class Variant:
    """One linked image in one layout, with its plan."""

    kernel: str
    commit: str
    image: str
    layout: str
    seed: int
    elf: Path
    plan_path: Path
    script: Path
    sha256: str
    plan_id: str
    linked_now: bool

    @property
    def label(self) -> str:
        return f"{self.layout}:{self.seed}" if self.layout in layout.SEEDED else self.layout

    def to_dict(self) -> dict:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


def link_variant(objs: ObjectSet, image: str, layout_name: str, seed: int = 0) -> Variant:
    """Link one variant (reusing an identical earlier link) and check its placement."""
    profile = objs.profile
    img = profile.image(image)
    objects = objs.objects(image)
    plan = layout.make_plan(objects, layout_name, seed, kernel=profile.name, image=image,
                            commit=objs.checkout.commit, pin_first=img.pin_first)
    seed = plan.seed
    out = workdir() / "images" / profile.name / objs.checkout.short / image / f"{layout_name}-{seed}"
    elf, plan_path, script, meta = out / "image.elf", out / "plan.json", out / "link.ld", out / "variant.json"
    text = linkscript.render(plan, img)
    if objs.checkout.commit != source.WORKTREE and meta.is_file() and elf.is_file() and script.is_file() \
            and script.read_text() == text:
        old = json.loads(meta.read_text())
        if old.get("sha256") == _sha256(elf):
            return Variant(**{**old, "elf": Path(old["elf"]), "plan_path": Path(old["plan_path"]),
                              "script": Path(old["script"]), "linked_now": False})
    out.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(plan.to_json())
    script.write_text(text)
    tmp = out / "image.elf.tmp"
    linkscript.link(profile.build.ld, script, [o.path for o in objects], objs.objdir, tmp, img.ldflags)
    placement.check(plan, {o.path: o for o in objects}, elfinfo.read_image(tmp))
    tmp.replace(elf)
    v = Variant(profile.name, objs.checkout.commit, image, layout_name, seed, elf, plan_path, script,
                _sha256(elf), f"0x{plan.plan_id:07x}", True)
    meta.write_text(json.dumps({k: val for k, val in v.to_dict().items() if k != "linked_now"}, indent=1))
    return v


def build_variants(profile: Profile, checkout: source.Checkout, specs: list[tuple[str, int]],
                   images: list[str] | None = None, jobs: int | None = None,
                   say=lambda msg: None) -> tuple[ObjectSet, list[Variant]]:
    """Compile once, then link every (layout, seed) for every image."""
    objs = compile_objects(profile, checkout, jobs, say)
    variants = []
    for image in images or list(profile.images):
        for name, seed in specs:
            say(f"linking {image} {name}" + (f" seed {seed}" if name in layout.SEEDED else ""))
            variants.append(link_variant(objs, image, name, seed))
    return objs, variants
