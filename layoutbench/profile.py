"""Kernel profiles: ``kernels/<name>/kernel.toml`` loaded into typed, validated data.

A profile says where a kernel's source lives, how to compile one commit's objects,
which images are linked from which objects with which linker-script template, and
how an image is run and its metrics read.  The format is documented in
``kernels/README.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths, safety, validate
from .errors import LayoutbenchError
from .target_kinds import KINDS


IMAGE_KINDS = ("script", "command", "program")
PROGRAM_TEMPLATE = "program-text.ld"  #: the partial script a ``program`` image is linked with


@dataclass(frozen=True)
class Source:
    """Where the kernel tree comes from."""

    repo: Path | None  #: a git repository (None: the tree at ``tree`` is used as is)
    subdir: str  #: the kernel tree inside the repository ("" for its top)
    tree: Path | None  #: a plain directory used when there is no repository
    tarball: Path | None = None  #: a source tarball, unpacked once (e.g. Debian's linux-source)


@dataclass(frozen=True)
class Build:
    """How one commit's objects are compiled (once; every layout reuses them)."""

    command: str  #: shell command run in the kernel tree; {src} {objdir} {jobs} {cc} are filled in
    cc: str  #: the compiler, found on PATH (``clang-19`` falls back to ``clang``)
    ld: str  #: the linker, ``ld.lld-19`` falling back to ``ld.lld``
    env: dict[str, str]
    timeout: float  #: seconds before a build is stopped
    #: files of the profile the build reads (a driver, a build script): their contents are part
    #: of the object cache key, so that editing one rebuilds
    inputs: tuple[Path, ...] = ()
    #: files of the kernel tree its build reads that no dependency file names (``Makefile*``,
    #: ``scripts/``, the C files of a generator or headers a script reads): glob patterns of paths
    #: in the tree, ``dir/`` for a whole folder; a change to one always compiles.  Set (even
    #: empty), it turns object reuse on
    untracked_inputs: tuple[str, ...] | None = None
    #: files of the kernel tree its build never reads (``*.md``, ``Documentation/``): patterns as
    #: above.  Set (even empty), it turns object reuse on too.  With reuse on, a commit links a
    #: built commit's objects when every file that differs is named here, or is a C source or
    #: header modified in place that no dependency file of that build names while every object
    #: of its images has one (reuse.reusable); any other change compiles
    unread_files: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Image:
    """One linked image of the kernel (a bootable kernel, a hosted executable...).

    ``kind`` says how it is linked: ``script`` (ld.lld with a full template script),
    ``command`` (the kernel's own ``link_command`` INCLUDEs the layout fragment) or
    ``program`` (an ordinary program linked by the compiler driver, crt files and libc
    included, with the partial script ``linker-scripts/program-text.ld`` that INCLUDEs
    the layout fragment into ``.text``)."""

    name: str
    objects: str  #: file in the object directory listing objects in default link order
    template: Path | None  #: linker-script template (None when link_command links)
    entry: str
    base: int  #: link address of the image
    pin_first: tuple[str, ...] = ()  #: objects that stay first in every layout (e.g. the boot code)
    ldflags: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ("text", "rodata", "data", "bss")  #: which output sections the layout places
    #: a shell command that links the image with the kernel's own build system instead of
    #: ld.lld + template; {fragment_dir} holds the rendered text units (``fragment``)
    link_command: str | None = None
    fragment: str = "layoutbench-text.lds"
    output: str | None = None  #: with link_command: the file it writes in {objdir}
    extra_files: tuple[str, ...] = ()  #: files of {objdir} copied beside every image (an initramfs...)
    kind: str = "script"  #: ``script`` | ``command`` | ``program`` (see above)
    driver: str | None = None  #: program: the compiler driver that links (default: [build] cc)
    libs: tuple[str, ...] = ()  #: program: words after the objects (``-lm``...)
    static: bool = True  #: program: link with ``-static`` (static libc)


@dataclass(frozen=True)
class Target:
    """How an image is run: a kind (``local``, ``qemu``, ``cachegrind``...) and its settings."""

    name: str
    kind: str
    image: str
    timeout: float
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path  #: the kernel.toml this was read from
    description: str
    source: Source
    build: Build
    images: dict[str, Image]
    targets: dict[str, Target]
    default_target: str
    metric_prefix: str  #: lines that start with this carry metrics (``LAYOUTBENCH``)
    default_metric: str | None
    quirks: Path | None = None  #: the quirks file, when not quirks/<name>.toml
    #: target kind → the metric followed (and shown by `compare`) on it when `--metric` is not given,
    #: over `default` and the kind's own (`cg_cost` on `cachegrind`, `ic_cost` on `qemu-icache`),
    #: e.g. `{ ssh = "ns_per_call" }`
    default_by_kind: dict[str, str] = field(default_factory=dict)
    #: a new bisection of this kernel pairs by seed, as with `--paired` (`--no-paired` turns it off): say so
    #: where a seed keeps most of its layout from commit to commit (a large kernel, a patch a commit:
    #: `bisect run --plan` prints how much the endpoints' seeds share)
    bisect_paired: bool = False

    def image(self, name: str | None = None) -> Image:
        if name is None:
            return next(iter(self.images.values()))
        try:
            return self.images[name]
        except KeyError:
            raise LayoutbenchError(
                f"kernel {self.name} has no image {name!r}; it has: {', '.join(self.images)}"
            ) from None

    def target(self, name: str | None = None) -> Target:
        name = name or self.default_target
        try:
            return self.targets[name]
        except KeyError:
            raise LayoutbenchError(
                f"kernel {self.name} has no target {name!r}; it has: {', '.join(self.targets)}"
            ) from None


def profile_dirs() -> list[Path]:
    """Where profiles are looked up by name, in order: the folders of ``$LAYOUTBENCH_PROFILES``
    (separated by ``:``), then ``kernels/``."""
    env = [Path(d).resolve() for d in os.environ.get("LAYOUTBENCH_PROFILES", "").split(os.pathsep) if d]
    return [*env, paths.KERNELS]


def _named() -> dict[str, Path]:
    """name → kernel.toml of every profile folder in :func:`profile_dirs` (the first one wins)."""
    out: dict[str, Path] = {}
    for d in profile_dirs():
        if d.is_dir():
            for sub in sorted(d.iterdir()):
                if (sub / "kernel.toml").is_file():
                    out.setdefault(sub.name, sub / "kernel.toml")
    return out


#: in the work folder: profile name → its kernel.toml, for every profile a command was given by path
REMEMBERED = "profiles.json"


def _remembered() -> dict[str, Path]:
    try:
        d = json.loads((paths.workdir() / REMEMBERED).read_text())
    except (OSError, ValueError):
        return {}
    return {k: Path(v) for k, v in d.items() if isinstance(v, str)} if isinstance(d, dict) else {}


def _remember(name: str, file: Path) -> None:
    """Note in the work folder (when it exists) that profile ``name`` is ``file``: what the folder
    holds under the name (an image's plan, a history, a bisection) then finds its profile by the
    name alone, in ``report``, ``symdiff --cache`` and the bisection's verbs.  A work folder that
    cannot be written is left as it is (the name is then found on the search path only)."""
    f = paths.workdir() / REMEMBERED
    known = _remembered()
    if known.get(name) == file or not f.parent.is_dir():
        return
    known[name] = file
    tmp = f.with_name(f".{f.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps({k: str(v) for k, v in sorted(known.items())}, indent=1) + "\n")
        os.replace(tmp, f)
    except OSError:
        tmp.unlink(missing_ok=True)


def is_path(kernel: str) -> bool:
    """``kernel`` names a profile by its folder or its kernel.toml (not by name)."""
    return _by_path(kernel) is not None


def _by_path(kernel: str) -> Path | None:
    p = Path(kernel)
    if p.suffix == ".toml" and p.is_file():
        return p.resolve()
    if (p / "kernel.toml").is_file() and ("/" in kernel or p.is_absolute()):
        return (p / "kernel.toml").resolve()
    return None


def find(kernel: str) -> Path:
    """The kernel.toml for a profile name, a profile folder, or a kernel.toml path.  A name is
    looked up on the search path (:func:`profile_dirs`), then among the profiles this work folder
    was given by path."""
    by_path = _by_path(kernel)
    if by_path is not None:
        return by_path
    named = _named()
    if kernel in named:
        return named[kernel]
    seen = _remembered().get(kernel)
    if seen is not None and seen.is_file():
        return seen
    raise LayoutbenchError(
        f"unknown kernel {kernel!r}: known profiles are {', '.join(sorted(named)) or 'none'} "
        f"(or give the path of a kernel.toml, or add its folder's parent to LAYOUTBENCH_PROFILES)"
    )


def available() -> list[str]:
    return sorted(_named())


def _tool(name: str) -> str:
    """``clang-19`` if on PATH, else the unversioned ``clang`` if that is, else the name."""
    if shutil.which(name):
        return name
    base = name.rsplit("-", 1)[0]
    if base != name and shutil.which(base):
        return base
    return name


class _Table:
    """Read a TOML table with error messages that name the file and key."""

    def __init__(self, data: dict, path: str, file: Path):
        self.data, self.path, self.file = data, path, file
        self.where = f"[{path}] " if path else ""

    def _err(self, msg: str) -> LayoutbenchError:
        return LayoutbenchError(f"{self.file}: {self.where}{msg}")

    def get(self, key: str, typ, default=..., *, required=False):
        if key not in self.data:
            if required or (default is ... and required is not False):
                raise self._err(f"missing required key {key!r}")
            return default
        value = self.data[key]
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            names = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise self._err(f"{key!r} must be of type {names}, not {type(value).__name__}")
        return value

    def strings(self, key: str, default: list) -> list[str]:
        """A list of strings (a number, a flag or a list inside is refused, not turned into text)."""
        value = self.get(key, list, default)
        bad = next((x for x in value if not isinstance(x, str)), None)
        if bad is not None:
            raise self._err(f"{key} = {value!r} must be a list of strings; {bad!r} is a {type(bad).__name__}")
        return value

    def table(self, key: str, required=False) -> "_Table":
        value = self.get(key, dict, None if not required else ..., required=required)
        return _Table(value or {}, f"{self.path}.{key}" if self.path else key, self.file)


def _patterns(file: Path, key: str, value) -> tuple[str, ...] | None:
    """A list of glob patterns (None when the key is not set)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise LayoutbenchError(f"{file}: {key} must be a list of glob patterns (strings, e.g. [\"*.md\", "
                               f"\"Documentation/\"]); fix the file")
    return tuple(value)


def _timeout(file: Path, key: str, value) -> float:
    try:
        return validate.timeout(key, value)
    except LayoutbenchError as e:
        raise LayoutbenchError(f"{file}: {e}") from None


def load(kernel: str) -> Profile:
    """Load and validate a profile; every problem is one line naming file and key."""
    file = find(kernel)
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise LayoutbenchError(f"{file}: not valid TOML ({e}); fix the file") from None
    except UnicodeDecodeError as e:
        raise LayoutbenchError(f"{file}: not UTF-8 text (byte {e.start}); a profile is a TOML file") from None
    top = _Table(data, "", file)
    name = safety.safe_name("profile name", top.get("name", str, file.parent.name), f"{file}: ")
    if _by_path(kernel) is not None and name not in _named():  # a name the search path has wins anyway
        _remember(name, file)
    here = file.parent
    source = _source(top.table("source"), here)
    b = top.table("build", required=True)
    build = _build(b, here)
    images = _images(top.table("images", required=True), b, here)
    targets = _targets(top.table("targets"), images)
    default_target = top.get("default_target", str, next(iter(targets), ""))
    if targets and default_target not in targets:
        raise LayoutbenchError(f"{file}: default_target {default_target!r} is not in [targets]")
    m = top.table("metrics")
    bisect = top.table("bisect")
    quirks_file = None
    if "quirks" in data:
        quirks_file = (here / top.get("quirks", str)).resolve()
        if not quirks_file.is_file():
            raise LayoutbenchError(f"{file}: quirks = {data['quirks']!r} names {quirks_file}, which does not exist; "
                                   f"fix the path or remove the key")
    return Profile(
        name=name,
        path=file,
        description=top.get("description", str, ""),
        source=source,
        build=build,
        images=images,
        targets=targets,
        default_target=default_target,
        metric_prefix=m.get("prefix", str, "LAYOUTBENCH"),
        default_metric=m.get("default", str, None),
        quirks=quirks_file,
        default_by_kind=_by_kind(file, m.get("default_by_kind", dict, {})),
        bisect_paired=bisect.get("paired", bool, False),
    )


def _source(src: _Table, here: Path) -> Source:
    """``[source]``: a repository, a folder or a tarball (paths relative to the profile's folder)."""
    repo = src.get("repo", str, None)
    tree = src.get("tree", str, None)
    tarball = src.get("tarball", str, None)
    if repo is None and tree is None and tarball is None:
        raise LayoutbenchError(f"{src.file}: [source] needs 'repo' (a git repository), 'tree' (a folder) "
                               f"or 'tarball' (a source archive)")
    return Source(
        repo=(here / repo).resolve() if repo is not None else None,
        subdir=src.get("subdir", str, ""),
        tree=(here / tree).resolve() if tree is not None else None,
        tarball=(here / tarball).resolve() if tarball is not None else None,
    )


def _build(b: _Table, here: Path) -> Build:
    """``[build]``: the command that compiles a commit, its tools, environment and inputs."""
    file = b.file
    build = Build(
        command=b.get("command", str, required=True),
        cc=_tool(b.get("cc", str, "clang-19")),
        ld=_tool(b.get("ld", str, "ld.lld-19")),
        env={k: str(v) for k, v in b.get("env", dict, {}).items()},
        timeout=_timeout(file, "[build] timeout", b.get("timeout", (int, float), 3600)),
        inputs=tuple((here / f).resolve() for f in b.strings("inputs", [])),
        untracked_inputs=(tuple(b.strings("untracked_inputs", [])) if "untracked_inputs" in b.data else None),
        unread_files=(_patterns(file, "[build] unread_files", b.strings("unread_files", []))
                      if "unread_files" in b.data else None),
    )
    for f in build.inputs:
        if not f.is_file():
            raise LayoutbenchError(f"{file}: [build] inputs names {f}, which does not exist")
    return build


def _images(imgs: _Table, b: _Table, here: Path) -> dict[str, Image]:
    """``[images.NAME]``, at least one."""
    if not imgs.data:
        raise LayoutbenchError(f"{imgs.file}: [images] must define at least one image")
    return {iname: _image(imgs, iname, b, here) for iname in imgs.data}


def _image(imgs: _Table, iname: str, b: _Table, here: Path) -> Image:
    """One ``[images.NAME]``: how its objects are linked (a generated script, a program, or the
    kernel's own link command) and what is placed."""
    file = imgs.file
    safety.safe_name("image name", iname, f"{file}: [images.{iname}] ")
    t = imgs.table(iname)
    link_command = t.get("link_command", str, None)
    ikind = t.get("kind", str, "command" if link_command is not None else "script")
    if ikind not in IMAGE_KINDS:
        raise LayoutbenchError(f"{file}: [images.{iname}] kind {ikind!r} is not one of {', '.join(IMAGE_KINDS)}")
    if (ikind == "command") != (link_command is not None):
        raise LayoutbenchError(f"{file}: [images.{iname}] " + (
            "an image with link_command is of kind \"command\"; remove kind or link_command"
            if link_command is not None else "kind \"command\" needs link_command (the shell command that links)"))
    program = ikind == "program"
    template = t.get("template", str, PROGRAM_TEMPLATE if program else None,
                     required=ikind == "script")
    tpath = None
    if template is not None:
        tpath = (paths.LINKER_SCRIPTS / template) if not (here / template).is_file() else here / template
        if not tpath.is_file():
            raise LayoutbenchError(f"{file}: [images.{iname}] template {template!r} not found in {paths.LINKER_SCRIPTS}")
    kinds = tuple(t.strings("kinds", ["text"] if program else ["text", "rodata", "data", "bss"]))
    if link_command is not None and kinds != ("text",):
        raise LayoutbenchError(f"{file}: [images.{iname}] an image linked by link_command places text only: kinds = [\"text\"]")
    if program and kinds != ("text",):
        raise LayoutbenchError(f"{file}: [images.{iname}] a program image places text only: kinds = [\"text\"]")
    if link_command is not None and not t.get("output", str, None):
        raise LayoutbenchError(f"{file}: [images.{iname}] link_command needs 'output' (the file it writes)")
    return Image(
        name=iname,
        objects=t.get("objects", str, required=True),
        template=tpath,
        entry=t.get("entry", str, required=ikind == "script", default=""),
        base=t.get("base", int, required=ikind == "script", default=0),
        pin_first=tuple(t.strings("pin_first", [])),
        ldflags=tuple(t.strings("ldflags", [])),
        kinds=kinds,
        link_command=link_command,
        fragment=t.get("fragment", str, "layoutbench-text.lds"),
        output=t.get("output", str, None),
        extra_files=tuple(t.strings("extra_files", [])),
        kind=ikind,
        driver=_tool(t.get("driver", str, b.get("cc", str, "clang-19"))) if program else None,
        libs=tuple(t.strings("libs", [])),
        static=t.get("static", bool, True),
    )


def _targets(tg: _Table, images: dict[str, Image]) -> dict[str, Target]:
    """``[targets.NAME]``: where an image runs, each kind's settings checked."""
    file = tg.file
    targets: dict[str, Target] = {}
    for tname in tg.data:
        safety.safe_name("target name", tname, f"{file}: [targets.{tname}] ")
        t = tg.table(tname)
        image = t.get("image", str, next(iter(images)))
        if image not in images:
            raise LayoutbenchError(f"{file}: [targets.{tname}] names image {image!r}, which is not in [images]")
        settings = {k: v for k, v in t.data.items() if k not in ("kind", "image", "timeout")}
        kind = t.get("kind", str, required=True)
        if kind not in KINDS:
            raise LayoutbenchError(f"{file}: [targets.{tname}] kind {kind!r} is not one of {', '.join(KINDS)}")
        validate.target_settings(file, tname, kind, settings)
        targets[tname] = Target(
            name=tname,
            kind=kind,
            image=image,
            timeout=_timeout(file, f"[targets.{tname}] timeout", t.get("timeout", (int, float), 300)),
            settings=settings,
        )
    return targets


def _by_kind(file: Path, value: dict) -> dict[str, str]:
    """``[metrics] default_by_kind``: target kinds to metric names, each checked."""
    for kind, metric in value.items():
        if kind not in KINDS:
            raise LayoutbenchError(f"{file}: [metrics] default_by_kind names {kind!r}, not a target kind; "
                                   f"kinds are: {', '.join(KINDS)}")
        if not isinstance(metric, str) or not metric.strip():
            raise LayoutbenchError(f"{file}: [metrics] default_by_kind {kind} = {metric!r} must be a metric name "
                                   f"(a string, e.g. \"ic_cost\")")
    return dict(value)
