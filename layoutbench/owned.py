"""Output folders layoutbench owns, written whole: it writes only into a folder it created.

``with replacing(dest, "report") as tmp: ...`` refuses ``dest`` in one line unless it is new,
an empty folder, or a folder holding layoutbench's :data:`MARKER` (so one it wrote itself); it
never is ``/`` or the home folder, and never a symbolic link.  The new content is written into
``tmp``, a fresh folder beside ``dest`` (``mkdtemp``: nothing else is in it, so no link
inside can redirect a write), which then takes ``dest``'s place in one atomic exchange
(``renameat2(RENAME_EXCHANGE)``; two renames where the file system cannot exchange).  The
folder it replaced is deleted only once its marker is confirmed (``rmtree`` removes links,
never what they point to); otherwise it is put back and the command refuses.  An error or
an interrupt while writing deletes ``tmp`` and leaves ``dest`` as it was.
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

#: the file that marks a folder as written by layoutbench (a regular file, its text starting so)
MARKER = ".layoutbench-output"
MARK_TEXT = "written by layoutbench; the whole folder is replaced when it is written again\n"


def is_owned(folder: Path) -> bool:
    """``folder`` is a real folder (not a link) holding the marker as a regular file."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        m = folder / MARKER
        if not stat.S_ISREG(os.lstat(m).st_mode):
            return False
        with open(m, "rb") as f:
            return f.read(len(MARK_TEXT) + 1) == MARK_TEXT.encode()
    except OSError:
        return False


def _is_empty_folder(folder: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode) and not any(os.scandir(folder))
    except OSError:
        return False


def check(dest, what: str = "output") -> Path:
    """The absolute path ``dest`` names (its parent's links resolved, its own name kept) when
    layoutbench may replace it; one line saying why not and what to do otherwise."""
    a = os.path.abspath(os.fspath(dest))
    p = Path(os.path.realpath(os.path.dirname(a))) / os.path.basename(a) if a != os.sep else Path(os.sep)
    hint = f"give -o a new folder (e.g. -o layoutbench-{what})"
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
    if not is_owned(p) and not _is_empty_folder(p):
        raise LayoutbenchError(f"refusing to write the {what} into {p}: it holds files layoutbench did not write "
                               f"there (no {MARKER} in it); {hint}, an empty one, or move those files away")
    return p


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path, native: bool = True) -> None:
    """Swap the folders ``a`` and ``b`` in one step; where the kernel or file system cannot (or
    ``native`` is false), ``b`` is renamed aside and ``a`` into its place, then ``b``'s old
    content to ``a``."""
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if native else None
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        e = ctypes.get_errno()
        if e not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(e, os.strerror(e), str(b))
    aside = Path(tempfile.mkdtemp(prefix=f".{b.name}.", suffix=".old", dir=b.parent))
    os.rename(b, aside)  # aside is an empty folder: rename replaces it
    os.rename(a, b)
    os.rename(aside, a)


def _swap_in(tmp: Path, dest: Path, what: str) -> None:
    """Put the finished folder ``tmp`` at ``dest``; delete what was there once it is confirmed
    to be layoutbench's (or empty); put it back and refuse otherwise."""
    if not os.path.lexists(dest):
        try:
            os.rename(tmp, dest)
            return
        except OSError as e:  # dest appeared meanwhile: judged below like any existing folder
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
    _exchange(tmp, dest)
    if is_owned(tmp) or _is_empty_folder(tmp):  # tmp now holds the folder that was at dest
        shutil.rmtree(tmp)
        return
    _exchange(tmp, dest)  # it changed after the check: give it back untouched
    raise LayoutbenchError(f"refusing to replace {dest}: it changed while the {what} was written and holds files "
                           f"layoutbench did not write (put back as it was); give -o a new folder")


@contextmanager
def replacing(dest, what: str = "output"):
    """Yield a new empty folder beside ``dest`` (marked as layoutbench's) to write into; on a
    normal exit it replaces ``dest`` whole (see the module's description)."""
    dest = check(dest, what)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        (tmp / MARKER).write_text(MARK_TEXT)
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's folder is private; the site is not
        _swap_in(tmp, dest, what)
    finally:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
