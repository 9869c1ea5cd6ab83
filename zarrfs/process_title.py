"""Secrets typed on the command line, kept out of the process's command line.

``/proc/PID/cmdline`` (what ``ps aux`` shows) is readable by every user of the machine, and the
mount's daemon is a fork of ``zarrfs mount``: without this, ``-O secret=...`` would be on show
for the mount's whole life. :func:`hide_secrets` rewrites this process's title (setproctitle
overwrites the memory the kernel reads it from; children forked afterwards inherit it) with
every storage option's value, every ``-o so.KEY=`` value, a URL's password and its query
replaced by ``***``. What was typed stays visible in the short time before the command starts,
and in the shell's history: the README says how to pass secrets without typing them.

Below every room of the house, like ``zarrfs.storage_options``: no engine, no front end.
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit, urlunsplit

HIDDEN = "***"


def hidden(argv: list[str]) -> list[str]:
    """``argv`` with the values that may be secrets replaced by ``***``."""
    out: list[str] = []
    after = ""  # the flag whose value this item is
    for item in argv:
        if after == "-O":
            out.append(_hide_value(item))
        elif after == "-o":
            out.append(_hide_mount_options(item))
        elif item.startswith("-O") and len(item) > 2:
            out.append("-O" + _hide_value(item[2:]))
        elif item.startswith("-o") and len(item) > 2:
            out.append("-o" + _hide_mount_options(item[2:]))
        elif item.startswith("--") and "=" in item:  # --endpoint-url=URL
            flag, _, value = item.partition("=")
            out.append(f"{flag}={_hide_url(value)}")
        else:
            out.append(_hide_url(item))
        after = item if item in ("-O", "-o") else ""
    return out


def _hide_value(item: str) -> str:
    key, sep, _ = item.partition("=")
    return f"{key}={HIDDEN}" if sep else item


def _hide_mount_options(text: str) -> str:
    return ",".join(_hide_value(o) if o.startswith("so.") else o for o in text.split(","))


def _hide_url(item: str) -> str:
    """A URL with its password and query (signed URLs, tokens) hidden; anything else as is."""
    if "://" not in item:
        return item
    try:
        parts = urlsplit(item)
        password = parts.password
    except ValueError:
        return item
    if password is None and not parts.query:
        return item
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{HIDDEN}@{host}"
    query = HIDDEN if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def hide_secrets() -> None:
    """Rewrite this process's title where its command line holds values that may be secrets
    (nothing to do, and no title touched, where it holds none)."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    shown = hidden(argv)
    if shown == argv:
        return
    import setproctitle  # a dependency; imported only where there is something to hide

    setproctitle.setproctitle(" ".join(shown))
