"""Object reuse: a commit whose changes the build provably does not read links the objects of a
commit already built (the build's own dependency files and makefiles say what it reads)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from . import source
from .paths import workdir
from .profile import Profile


def object_entries(list_file: Path) -> list[tuple[str, str]]:
    """(name, file relative to the object folder) for each line ``NAME`` or ``NAME PATH``."""
    out = []
    for line in list_file.read_text().splitlines():
        words = line.split()
        if words and not words[0].startswith("#"):
            out.append((words[0], words[1] if len(words) > 1 else words[0]))
    return out


# -- object reuse: a commit whose changes the build provably does not read links a built one's objects --

DEPS_FILE = "depfiles.json"  #: beside build.json: what the build's dependency files say (read once)
#: what a C or C++ compiler reads: sources and headers.  Such a file that no dependency file names,
#: while every object of every image has one, was read by no compile; a file of any other kind
#: (a Makefile, a script, VERSION, a linker script) may be read by the build outside the compiler
COMPILER_READS = (".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx")
_ASSIGN = re.compile(r"\s*([^\s:=#]+)\s*(?:::=|:=|\+=|\?=|=)")
_PLAIN = re.compile(r"[^\\$ \t#:]*")  # characters that _make_words copies as they are
_BLANKS = re.compile(r"[ \t]+")
_FLAT_REF = re.compile(r"\$\([^()]*\)|\$\{[^{}]*\}")  # a variable reference with none inside it


def _make_words(line: str) -> list[tuple[str, bool]]:
    """The words of one logical line as make reads a dependency file: ``\\ `` is a space of a name
    (each ``\\\\`` before it one backslash), ``\\#`` a ``#``, ``$$`` a ``$``, an unescaped ``#``
    starts a comment; a variable reference ``$(...)`` is one word of its own, marked by a leading
    NUL.  Each word with whether it ends the targets (an unescaped ``:`` after it)."""
    words: list[tuple[str, bool]] = []
    cur: list[str] = []
    i, n = 0, len(line)

    def end(colon: bool = False) -> None:
        if cur:
            words.append(("".join(cur), colon))
            cur.clear()
        elif colon and words:
            words[-1] = (words[-1][0], True)
        elif colon:
            words.append(("", True))

    while i < n:
        c = line[i]
        if c == "\\":
            j = i
            while j < n and line[j] == "\\":
                j += 1
            if j < n and line[j] in " \t#:":
                cur.append("\\" * ((j - i) // 2))
                if (j - i) % 2:
                    cur.append(line[j])
                    j += 1
            else:
                cur.append("\\" * (j - i))
            i = j
        elif c == "$" and line.startswith("$$", i):
            cur.append("$")
            i += 2
        elif c == "$" and i + 1 < n and line[i + 1] in "({":
            flat = _FLAT_REF.match(line, i)  # most are: ``$(wildcard include/config/X)``
            if flat:
                j = flat.end() - 1
            else:
                close, depth, j = ")" if line[i + 1] == "(" else "}", 0, i + 1
                while j < n:
                    depth += line[j] == line[i + 1]
                    depth -= line[j] == close
                    if depth == 0:
                        break
                    j += 1
            end()
            cur.append("\0" + line[i:j + 1])  # NUL: no file name holds one
            end()
            i = j + 1
        elif c in " \t":
            end()
            i = _BLANKS.match(line, i).end()
        elif c == "#":
            break
        elif c == ":":
            end(colon=True)
            i += 2 if line.startswith("::", i) else 1
        else:  # a run of plain characters at once
            j = max(_PLAIN.match(line, i).end(), i + 1)  # a lone ``$`` is a character too
            cur.append(line[i:j])
            i = j
    end()
    return words


def _logical_lines(text: str) -> list[str]:
    """The lines of a makefile with each backslash-newline (an odd run of backslashes at the end)
    joined to the next line by one space."""
    out: list[str] = []
    held = ""
    for ln in text.split("\n"):
        trail = len(ln) - len(ln.rstrip("\\"))
        if trail % 2:
            held += ln[:-1].rstrip(" \t") + " "
            continue
        out.append((held + ln.lstrip(" \t")) if held else ln)
        held = ""
    if held:
        out.append(held)
    return out


def make_rules(text: str) -> list[tuple[list[str], list[str]]]:
    """(targets, prerequisites) of a dependency file, read by make's rules: a compiler's ``*.d``
    (``-MMD``: ``a.o b.o: a.c a.h \\``) or kbuild's ``.*.cmd`` (``source_T := S``, ``deps_T := ...``:
    T's prerequisites).  Any other assignment (``savedcmd_T := clang ...``) comes with no target
    and its words as prerequisites, so that a file its command names counts as read.  Variable
    references (``$(wildcard ...)``, ``$(deps_T)``) are left out."""
    rules: list[tuple[list[str], list[str]]] = []
    for line in _logical_lines(text):
        m = _ASSIGN.match(line)
        if m:
            name = m.group(1)
            words = [w for w, _ in _make_words(line[m.end():]) if w and w[0] != "\0"]
            for prefix in ("source_", "deps_"):
                if name.startswith(prefix):
                    rules.append(([name[len(prefix):]], words))
                    break
            else:
                rules.append(([], words))
            continue
        words = _make_words(line)
        cut = next((k for k, (_, colon) in enumerate(words) if colon), None)
        if cut is None:
            continue
        keep = [w for w, _ in words if w and w[0] != "\0"]
        targets = [w for w, _ in words[:cut + 1] if w and w[0] != "\0"]
        rules.append((targets, keep[len(targets):]))
    return rules


def _dependency_files(objdir: Path):
    for f in sorted(objdir.rglob("*")):
        if (f.name.endswith(".d") or (f.name.startswith(".") and f.name.endswith(".cmd"))) and f.is_file():
            yield f


def _under(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when it lies inside it."""
    return path[len(root) + 1:] if path.startswith(root + os.sep) else None


def read_dependencies(objdir: Path, src: Path) -> tuple[set[str], set[str]]:
    """What the dependency files in ``objdir`` say about the build of the tree ``src``: the files
    of the tree they name (relative to ``src``; a path in a dependency file is absolute or
    relative to the object or the source folder: each reading that exists counts), and the files of
    ``objdir`` that are the target of a dependency rule (relative to ``objdir``)."""
    src_s, obj_s = os.path.realpath(src), os.path.realpath(objdir)
    named: set[str] = set()
    covered: set[str] = set()
    in_tree: dict[str, tuple[str, ...]] = {}  # a word -> the tree's files it names (kbuild's files
    # name the same headers a thousand times: each is resolved once)

    def tree_files(w: str) -> tuple[str, ...]:
        rels: list[str] = []
        for c in ([w] if w.startswith("/") else [os.path.join(obj_s, w), os.path.join(src_s, w)]):
            if not os.path.lexists(c):  # a word of a command (``-c``) that is no file
                continue
            for p in (os.path.normpath(c), os.path.realpath(c)):
                rel = _under(p, src_s)
                if rel is not None:
                    rels.append(rel)
        return tuple(rels)

    for f in _dependency_files(objdir):
        for targets, prereqs in make_rules(os.fsdecode(f.read_bytes())):
            for t in targets:
                for c in ([t] if t.startswith("/") else [os.path.join(obj_s, t), os.path.join(src_s, t)]):
                    rel = _under(os.path.realpath(c), obj_s)
                    if rel is not None:
                        covered.add(rel)
            for w in prereqs:
                rels = in_tree.get(w)
                if rels is None:
                    rels = in_tree[w] = tree_files(w)
                named.update(rels)
    return named, covered


def build_inputs(objdir: Path, src: Path) -> set[str]:
    """Files of the tree ``src`` that the dependency files of the build in ``objdir`` name
    (make's ``*.d`` from ``-MMD``, kbuild's ``.*.cmd``), as paths relative to ``src``."""
    return read_dependencies(objdir, src)[0]


def _dependencies_of(base: Path, info: dict) -> tuple[set[str], set[str]] | None:
    """What the dependency files of the build in ``base`` say (read once, kept beside its record);
    None when its tree or objects are gone."""
    f = base / DEPS_FILE
    if not f.is_file():
        src, obj = Path(info.get("src") or ""), base / "obj"
        if not (src.is_dir() and obj.is_dir()):
            return None
        named, covered = read_dependencies(obj, src)
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps({"named": sorted(named), "covered": sorted(covered)}))
        tmp.replace(f)
    try:
        doc = json.loads(f.read_text())
        return set(doc["named"]), set(doc["covered"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _every_object_has_dependencies(profile: Profile, objdir: Path, covered: set[str]) -> bool:
    """Every object of every image of the build in ``objdir`` is the target of a dependency rule."""
    for img in profile.images.values():
        lst = objdir / img.objects
        if not lst.is_file():
            return False
        for _, rel in object_entries(lst):
            if os.path.normpath(rel) not in covered:
                return False
    return True


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    import fnmatch

    return any(path.startswith(p) if p.endswith("/") else
               fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(os.path.basename(path), p) for p in patterns)


def changed_files(checkout: source.Checkout, other: str) -> list[tuple[str, str]] | None:
    """(status letter, path relative to the kernel tree) of each file that differs between commit
    ``other`` and ``checkout`` (``M`` modified, ``A`` added, ``D`` deleted, ``T`` type changed);
    None when the repository does not hold ``other``.  Paths are git's bytes (``-z``: never quoted)."""
    args = ["git", "-C", str(checkout.repo), "diff", "-z", "--no-renames", "--no-relative", "--name-status",
            other, checkout.commit]
    if checkout.subdir:
        args += ["--", checkout.subdir]
    p = subprocess.run(args, capture_output=True)
    if p.returncode != 0:
        return None
    cut = len(checkout.subdir.rstrip("/")) + 1 if checkout.subdir else 0
    fields = p.stdout.split(b"\0")
    return [(os.fsdecode(fields[i]), os.fsdecode(fields[i + 1])[cut:])
            for i in range(0, len(fields) - 1, 2) if fields[i]]


def unread_change(profile: Profile, status: str, path: str, named: set[str], complete: bool) -> bool:
    """A change the build provably does not read: a file the profile names unread (``unread_files``),
    or a C source or header modified in place that no dependency file names while every object has
    one (``complete``).  A file a dependency file names, or one of ``untracked_inputs``, is read."""
    b = profile.build
    if path in named or _matches(path, b.untracked_inputs or ()):
        return False
    if _matches(path, b.unread_files or ()):
        return True
    return complete and status == "M" and path.endswith(COMPILER_READS)


def reusable(profile: Profile, checkout: source.Checkout, cfg: str, say=None) -> tuple[Path, dict, int] | None:
    """A built object set that ``checkout`` can link instead of compiling: built with the same
    configuration ``cfg`` from a commit of the same repository that differs from ``checkout``
    only in files that build provably did not read (:func:`unread_change`).  Returns (its folder,
    its record, how many files differ), the closest such commit first; None when the profile
    turns reuse off (neither ``untracked_inputs`` nor ``unread_files``) or no object set qualifies.
    ``say``: a line before the first built commit's dependency files are read (on Linux a minute or more)."""
    b = profile.build
    if b.untracked_inputs is None and b.unread_files is None:
        return None
    if checkout.repo is None or checkout.commit == source.WORKTREE or checkout.tarball:
        return None
    best = None
    for rec in sorted((workdir() / "objects" / profile.name).glob(f"*-{cfg}/build.json")):
        try:
            info = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        other = info.get("commit", "")
        if info.get("reused_from") or other in ("", checkout.commit, source.WORKTREE) or other.startswith("tarball"):
            continue
        changed = changed_files(checkout, other)
        if changed is None or (best is not None and len(changed) >= best[2]):
            continue
        if say is not None:  # once: the reads of the other candidates follow without a line each
            say(f"reading the dependency files of built commits (first {other[:12]}, {len(changed)} files differ): "
                f"can {checkout.short} link one's objects?")
            say = None
        deps = _dependencies_of(rec.parent, info)
        if deps is None:
            continue
        named, covered = deps
        complete = _every_object_has_dependencies(profile, rec.parent / "obj", covered)
        if all(unread_change(profile, st, path, named, complete) for st, path in changed):
            best = (rec.parent, info, len(changed))
    return best
