"""The hidden control folder ``.zarrfs/``: live statistics and the log of this mount.

``stats.json`` merges the mount's counters (reads and bytes served) with the engine's (requests,
bytes fetched, cache hits and misses, decode time), so ``bytes_fetched`` vs ``bytes_served`` says
how much the mount saved or amplified. ``log`` is the tail of this daemon's log (a ring buffer, so
it works without ``--log-file``). ``mount.json`` says what is mounted with which options.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import threading
import time

import zarrfs
import zarrfs.engine as engine

from ._fuselib import BINDING, FUSE_MAJOR_VERSION
from .files import GeneratedFile

_LOG_LINES = 2000


class RingLogHandler(logging.Handler):
    """Keeps the last lines of the log in memory for ``.zarrfs/log``."""

    def __init__(self, capacity: int = _LOG_LINES):
        super().__init__()
        self._lines: collections.deque[str] = collections.deque(maxlen=capacity)
        self._lines_lock = threading.Lock()
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # a broken record must not break the mount
            return
        with self._lines_lock:
            self._lines.append(line)

    def text(self) -> str:
        with self._lines_lock:
            return "".join(line + "\n" for line in self._lines)


def stats_document(tree) -> dict:
    """What ``.zarrfs/stats.json`` shows right now."""
    mount = tree.stats.snapshot()
    try:
        engine_stats = dict(engine.stats())
    except Exception as error:  # stats must never fail the read of the stats file
        engine_stats = {"error": str(error)}
    try:
        cache = engine.cache_info()
        cache = (
            cache if isinstance(cache, dict) else getattr(cache, "_asdict", lambda: str(cache))()
        )
    except Exception:
        cache = None
    return {
        "mount": mount,
        "engine": engine_stats,
        "cache": cache,
        "uptime_seconds": round(time.time() - tree.mtime, 3),
    }


def _redacted(options) -> dict:
    """Options without storage option values (they may be credentials)."""
    document = dataclasses.asdict(options)
    document["storage"] = {key: "***" for key, _ in options.storage}
    return document


def control_entries(url: str, ring: RingLogHandler | None):
    """A ``control`` callable for ``VirtualTree``: entries of the control folder."""

    def build(tree) -> dict:
        def stats_json() -> bytes:
            return (json.dumps(stats_document(tree), indent=2, default=str) + "\n").encode()

        def mount_json() -> bytes:
            document = {
                "url": url,
                "options": _redacted(tree.options),
                "pid": os.getpid(),
                "zarrfs": zarrfs.__version__,
                "binding": BINDING,
                "libfuse": FUSE_MAJOR_VERSION,
            }
            return (json.dumps(document, indent=2, default=str) + "\n").encode()

        def log_text() -> bytes:
            return ring.text().encode() if ring is not None else b""

        return {
            "stats.json": GeneratedFile(stats_json, live=True),
            "mount.json": GeneratedFile(mount_json, live=True),
            "log": GeneratedFile(log_text, live=True),
        }

    return build
