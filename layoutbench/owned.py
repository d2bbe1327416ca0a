"""Output folders layoutbench owns, written whole: it writes only into a folder it created.

``with replacing(dest, "report") as tmp: ...`` refuses ``dest`` in one line unless it is new,
an empty folder, or a folder holding layoutbench's :data:`MARKER` (so one it wrote itself) and
nothing the marker does not list (a file a user added is never deleted: it is named and the
command refuses); it never is ``/``, the home folder or the current folder (nor one holding it),
and neither it nor a folder above it is a symbolic link.  The new content is written into
``tmp``, a fresh folder beside ``dest`` (``mkdtemp``: nothing else is in it, so no link
inside can redirect a write), which then takes ``dest``'s place in one atomic exchange
(``renameat2(RENAME_EXCHANGE)``; two renames where the file system cannot exchange).  The
folder it replaced is deleted only once its marker is confirmed (``rmtree`` removes links,
never what they point to); otherwise it is put back and the command refuses.  An error or
an interrupt while writing deletes ``tmp`` and leaves ``dest`` as it was.  Nothing without the
marker is ever deleted.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import LayoutbenchError

#: the file that marks a folder as written by layoutbench (a regular file holding exactly MARK)
MARKER = ".layoutbench-output"
MARK = b"written by layoutbench; the whole folder is replaced when it is written again\n"


FILE = "file: "  #: a line of the marker after MARK: one path (relative) the output holds


def _written(folder: Path) -> list[str] | None:
    """The paths the marker of ``folder`` lists as written by layoutbench (a marker holds MARK, then
    one ``file: PATH`` line per file and folder of the output); None when it is not such a marker."""
    try:
        m = os.lstat(folder / MARKER)
        if not (stat.S_ISDIR(os.lstat(folder).st_mode) and stat.S_ISREG(m.st_mode) and m.st_size < (64 << 20)):
            return None
        data = (folder / MARKER).read_bytes()
    except OSError:
        return None
    if not data.startswith(MARK):
        return None
    lines = data[len(MARK):].decode("utf-8", "surrogateescape").splitlines()
    if not all(ln.startswith(FILE) for ln in lines):
        return None
    return [ln[len(FILE):] for ln in lines]


def is_owned(folder: Path) -> bool:
    """``folder`` is a real folder (not a link) holding the marker as a regular file."""
    return _written(folder) is not None


def _entries(folder: Path) -> list[str]:
    """Every file, folder and link under ``folder`` (links not followed) but the marker, relative."""
    out = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        for n in dirs + files:
            q = n if rel == "." else os.path.join(rel, n)
            if q != MARKER:
                out.append(q)
    return sorted(out)


def foreign(folder: Path) -> list[str]:
    """What an owned ``folder`` holds that its marker does not list: files a user put there (a
    marker of an older layoutbench lists nothing, so all of its files are counted here)."""
    listed = set(_written(folder) or ())
    out: list[str] = []
    for q in _entries(folder):  # (sorted: a folder before what it holds) a foreign folder's content is not listed
        if q not in listed and not any(q.startswith(f + os.sep) for f in out):
            out.append(q)
    return out


def _mark(folder: Path) -> None:
    """Write the marker of a finished output: MARK and every path it holds."""
    (folder / MARKER).write_bytes(MARK + "".join(f"{FILE}{q}\n" for q in _entries(folder))
                                  .encode("utf-8", "surrogateescape"))


def _is_empty_folder(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return stat.S_ISDIR(os.lstat(folder).st_mode) and next(entries, None) is None
    except OSError:
        return False


def check(dest, what: str = "output") -> Path:
    """The absolute path ``dest`` names (its parent's links resolved, its own name kept) when
    layoutbench may replace it; one line saying why not and what to do otherwise."""
    a = os.path.abspath(os.fspath(dest))
    hint = f"give -o a new folder (e.g. -o layoutbench-{what})"
    parts = Path(a).parts
    for i in range(2, len(parts)):  # a link above it: the output would land wherever the link points
        above = Path(*parts[:i])
        if os.path.islink(above):
            raise LayoutbenchError(f"refusing to write the {what} through {above}: it is a symbolic link (to "
                                   f"{os.readlink(above)}) and layoutbench never writes through a link; give -o "
                                   f"the real path, {os.path.realpath(a)}, if that is where it belongs")
    p = Path(a)
    if p == Path(os.sep):
        raise LayoutbenchError(f"refusing to write the {what} into {p}, the root folder; {hint}")
    if p == Path(os.path.realpath(Path.home())):
        raise LayoutbenchError(f"refusing to write the {what} into {p}, your home folder; {hint} "
                               f"inside it")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    if stat.S_ISLNK(st.st_mode):
        raise LayoutbenchError(f"refusing to write the {what} into {p}: it is a symbolic link and layoutbench "
                               f"writes only into a folder it created; {hint}")
    if not stat.S_ISDIR(st.st_mode):
        raise LayoutbenchError(f"refusing to write the {what} into {p}: it is not a folder; {hint}")
    cwd = Path(os.getcwd())
    if p == cwd or p in cwd.parents:  # replaced, it would leave this shell in a deleted folder
        raise LayoutbenchError(f"refusing to write the {what} into {p}: it is the current folder"
                               + ("" if p == cwd else " or holds it") + f", which a {what} replaces whole; {hint}")
    if not is_owned(p) and not _is_empty_folder(p):
        raise LayoutbenchError(f"refusing to write the {what} into {p}: it holds files layoutbench did not write "
                               f"there (no {MARKER} in it); {hint}, an empty one, or move those files away")
    _refuse_foreign(p, what)
    return p


def _refuse_foreign(p: Path, what: str) -> None:
    added = foreign(p) if is_owned(p) else []
    if added and not _written(p):
        raise LayoutbenchError(f"refusing to replace {p}: its {MARKER} was written by an older layoutbench, which did "
                               f"not list the files it wrote, so files added since cannot be told from its own; move "
                               f"what you added away and delete the folder, or give -o a new folder")
    if added:
        shown = ", ".join(q if q.isprintable() else ascii(q) for q in added[:5]) \
            + (f" and {len(added) - 5} more" if len(added) > 5 else "")  # a name with a newline stays on the line
        raise LayoutbenchError(f"refusing to replace {p}: it holds files an earlier {what} did not write ({shown}), "
                               f"which replacing it would delete; move them away, or give -o a new folder")


_RENAME_EXCHANGE = 2  #: renameat2's flag: swap the two names
_renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  #: glibc >= 2.28


def _exchange(a: Path, b: Path, native: bool = True) -> str:
    """Swap ``a`` and ``b``, two entries of one folder, in one step (``renameat2``); where that
    fails (an older kernel or C library, a file system without RENAME_EXCHANGE; or ``native``
    is false) by three renames, ``b`` aside first, back again if ``a`` cannot take its place.
    Returns which way: "renameat2" or "renames"."""
    if native and _renameat2 is not None:
        fd = os.open(b.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if _renameat2(fd, os.fsencode(a.name), fd, os.fsencode(b.name), _RENAME_EXCHANGE) == 0:
                return "renameat2"
        finally:
            os.close(fd)
    aside = Path(tempfile.mkdtemp(prefix=f".{b.name}.", suffix=".old", dir=b.parent))
    os.rename(b, aside)  # aside is an empty folder: rename replaces it
    try:
        os.rename(a, b)
    except OSError:
        os.rename(aside, b)
        raise
    os.rename(aside, a)
    return "renames"


def _swap_in(tmp: Path, dest: Path, what: str) -> None:
    """Put the finished folder ``tmp`` at ``dest``: a rename where ``dest`` is missing or an empty
    folder; else an exchange, after which ``tmp`` holds what was at ``dest`` (deleted by the
    caller once it is confirmed to be layoutbench's; given back and refused otherwise)."""
    try:
        os.rename(tmp, dest)
        return
    except OSError as e:  # a folder that is not empty, a file, a link: judged after the exchange
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
            raise
    _exchange(tmp, dest)
    if not is_owned(tmp) or foreign(tmp):
        _exchange(tmp, dest)  # it changed after the check: give it back untouched
        raise LayoutbenchError(f"refusing to replace {dest}: it changed while the {what} was written and holds "
                               f"files layoutbench did not write (put back as it was); give -o a new folder")


def _umask() -> int:
    mask = os.umask(0o022)  # reading the mask means setting one; set back at once
    os.umask(mask)
    return mask


@contextmanager
def replacing(dest, what: str = "output"):
    """Yield a new empty folder beside ``dest`` (marked as layoutbench's) to write into; on a
    normal exit it replaces ``dest`` whole (see the module's description)."""
    dest = check(dest, what)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        (tmp / MARKER).write_bytes(MARK)
        yield tmp
        _mark(tmp)
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's folder is private; the site is not
        _swap_in(tmp, dest, what)
    finally:  # the new folder after an error, or the replaced one; never a folder without the marker
        if is_owned(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
