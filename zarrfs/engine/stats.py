"""Process-wide counters: what was fetched, decoded and served from cache.

Tests and the front ends read these instead of timing things (STYLE 14). One lock, plain ints.
"""

from __future__ import annotations

import os
import threading

_FIELDS = (
    "requests",
    "bytes_fetched",
    "chunks_decoded",
    "cache_hits",
    "cache_misses",
    "decode_seconds",
    "chunks_missing",
    "chunk_errors",
    "native_reads",  # reads (or background reads) tensorstore served (engine/native.py)
    "native_chunks",  # chunks those reads touched (read, or filled where missing)
    "native_fallbacks",  # native reads, or chunks of them, read again by the Python pipeline
)
_lock = threading.Lock()
_counters: dict[str, float] = dict.fromkeys(_FIELDS, 0)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def add(**increments: float) -> None:
    with _lock:
        for name, value in increments.items():
            _counters[name] += value


def snapshot() -> dict[str, float]:
    """A copy of every counter."""
    with _lock:
        return dict(_counters)


def reset() -> None:
    with _lock:
        for name in _FIELDS:
            _counters[name] = 0
