"""Which node names zarrfs offers: those that can be a file name here.

A store may hold (or its consolidated metadata may name) children called ``""``, ``.``,
``..``, ``a/b``, ``nul\\0z`` or longer than 255 bytes: none can be a directory in a mount (the
kernel refuses or misreads them), and ``..`` would name a node outside its group. Such names
are left out of every listing, with one warning per group, and reach nothing: not
``Group[...]``, not a consolidated entry such as ``../outside/.zarray``.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

#: NAME_MAX of Linux file systems, in bytes of UTF-8
MAX_NAME_BYTES = 255

_warned: set[str] = set()
_lock = threading.Lock()


def is_usable(name: str) -> bool:
    """Whether ``name`` can be one component of a path: a file name on Linux."""
    return (
        name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
        and len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES
    )


def is_usable_path(path: str) -> bool:
    """Whether every component of a node path (``a/b/c``; ``""`` is the root) is usable."""
    return path == "" or all(is_usable(p) for p in path.split("/"))


def usable(names: list[str], where: str) -> list[str]:
    """``names`` without the unusable ones, warning once per ``where`` about those left out."""
    kept = [n for n in names if is_usable(n)]
    if len(kept) != len(names):
        _warn(where, [n for n in names if not is_usable(n)])
    return kept


def usable_paths(nodes: dict, where: str) -> dict:
    """Consolidated ``{path: metadata}`` without the paths that have an unusable component."""
    kept = {p: m for p, m in nodes.items() if is_usable_path(p)}
    if len(kept) != len(nodes):
        _warn(where, [p for p in nodes if p not in kept])
    return kept


def _warn(where: str, refused: list[str]) -> None:
    with _lock:
        if where in _warned:
            return
        _warned.add(where)
    shown = ", ".join(repr(n[:80]) for n in refused[:5])
    log.warning(
        "%s: left out %d name(s) that cannot be a file name (empty, '.', '..', '/', NUL or "
        "over %d bytes): %s",
        where,
        len(refused),
        MAX_NAME_BYTES,
        shown,
    )
