"""The few rules that keep hostile or careless input from leaking secrets or escaping the work folder.

- :func:`redact_url` / :func:`redact_text`: the one redaction of store URLs (a PostgreSQL
  password in ``user:PASSWORD@``, also one containing ``@``, and ``?password=``); every place
  that shows a store URL (errors, the report's footer, ``say`` lines) shows it through these.
- :func:`safe_name`: the one check of names that become parts of paths (profile names, image
  and target names): no ``/``, no ``..``, nothing hidden; refused with one line.
- :func:`read_regular`: the bytes of a file a user names (a log, a count file), never waited for:
  a FIFO, a device or a folder is refused with one line.
- :func:`one_line`: an error line as printed: a control character in a name it quotes (a newline,
  a terminal's escape) is shown as ``\\n``, ``\\x1b``, never sent.
"""

from __future__ import annotations

import os
import re
import stat

from .errors import LayoutbenchError

MASK = "***"
#: query or DSN parameters whose values are secrets
_SECRET_PARAM = re.compile(r"(?i)((?:^|[?&;\s])(?:password|sslpassword|passfile|sslkey)=)(?:'[^']*'|[^&\s]*)")
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://\S+")


def redact_url(url: str) -> str:
    """``postgresql://user:***@host/db?password=***``: the URL with every password masked.

    The user information ends at the **last** ``@`` (a password may hold ``@``, ``/`` or ``?``
    unencoded); masking too much is harmless here, masking too little is not."""
    url = str(url)
    head, sep, rest = url.partition("://")
    if not sep:
        return _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, url)
    rest = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, rest)
    at = rest.rfind("@")
    if at >= 0:
        userinfo = rest[:at]
        if ":" in userinfo:
            rest = userinfo.split(":", 1)[0] + ":" + MASK + rest[at:]
    return head + sep + rest


def secrets_of(url: str) -> list[str]:
    """The secret parts of a URL: its password, the pieces of it around each ``@`` (a driver that
    splits at the first ``@`` quotes the rest as a host name) and ``password=`` values."""
    head, sep, rest = str(url).partition("://")
    found = [m.group(0).split("=", 1)[1].strip("'") for m in _SECRET_PARAM.finditer(rest if sep else head)]
    at = rest.rfind("@")
    if sep and at >= 0 and ":" in rest[:at]:
        pw = rest[:at].split(":", 1)[1]
        found += [pw, *pw.split("@")]
    return sorted({f for f in found if len(f) >= 2}, key=len, reverse=True)


def redact_text(text: str, url: str | None = None) -> str:
    """``text`` with every URL in it redacted, ``password=...`` words masked and, with ``url``,
    every secret part of that URL masked wherever it appears (a driver's error quoting it)."""
    text = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, _URL.sub(lambda m: redact_url(m.group(0)), str(text)))
    for secret in secrets_of(url) if url else []:
        text = text.replace(secret, MASK)
    return text


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def safe_name(what: str, name: str, where: str = "") -> str:
    """``name`` when it can be one component of a path (letters, digits, ``_ . + -``, not starting
    with a dot, at most 100 characters); otherwise one line saying so."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 100:
        raise LayoutbenchError(f"{where}{what} {name!r} is not a safe name: use letters, digits and _ . + - "
                               f"(not starting with '.', no '/', at most 100 characters); rename it")
    return name


def read_regular(path, what: str) -> bytes:
    """The bytes of the regular file ``path``, ``what`` it should be (for the message).  Opened
    without blocking: a FIFO is refused at once, not waited on for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise LayoutbenchError(f"{path}: cannot read {what} ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
            raise LayoutbenchError(f"{path}: is {kind}, not {what}; give the file it was written to")
        return f.read()


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\x1b``): one line, nothing a terminal acts on."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(text))


def regular_or_missing(path, what: str, hint: str) -> bool:
    """True: ``path`` is a regular file; False: nothing is there (or it cannot be looked at: the
    open says why); a folder, FIFO, device or socket is refused in one line naming what it is."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if not stat.S_ISREG(mode):
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
        raise LayoutbenchError(f"{path}: is {kind}, not {what}; {hint}")
    return True
