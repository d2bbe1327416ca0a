"""The few rules that keep hostile or careless input from leaking secrets or escaping the work folder.

- :func:`redact_url` / :func:`redact_text`: the one redaction of store URLs (a PostgreSQL
  password in ``user:PASSWORD@``, also one containing ``@``, and ``?password=``); every place
  that shows a store URL (errors, the report's footer, ``say`` lines) shows it through these.
- :func:`safe_name`: the one check of names that become parts of paths (profile names, image
  and target names): no ``/``, no ``..``, nothing hidden; refused with one line.
"""

from __future__ import annotations

import re

from .errors import LayoutbenchError

MASK = "***"
#: query or DSN parameters whose values are secrets
_SECRET_PARAM = re.compile(r"(?i)((?:^|[?&;\s])(?:password|sslpassword|passfile|sslkey)=)(?:'[^']*'|[^&\s#]*)")
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


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (and ``password=...`` words masked)."""
    return _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, _URL.sub(lambda m: redact_url(m.group(0)), str(text)))


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def safe_name(what: str, name: str, where: str = "") -> str:
    """``name`` when it can be one component of a path (letters, digits, ``_ . + -``, not starting
    with a dot, at most 100 characters); otherwise one line saying so."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 100:
        raise LayoutbenchError(f"{where}{what} {name!r} is not a safe name: use letters, digits and _ . + - "
                               f"(not starting with '.', no '/', at most 100 characters); rename it")
    return name
