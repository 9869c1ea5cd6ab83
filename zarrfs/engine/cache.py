"""One byte-bounded LRU of decoded chunks, shared by every array in the process.

Keys name a chunk uniquely across stores: ``(store url, array path, chunk key, inner coords)``.
Values are read-only decoded chunk arrays. A chunk larger than a quarter of the budget is not
kept (it would evict everything else for one use). The budget comes from ``ZARRFS_CACHE_BYTES``
or :func:`set_cache_size`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from . import stats
from .sizes import human_size, parse_size

log = logging.getLogger(__name__)

DEFAULT_BYTES = 512 * 2**20


def _default_capacity() -> int:
    text = os.environ.get("ZARRFS_CACHE_BYTES")
    if text is None:
        return DEFAULT_BYTES
    try:
        return parse_size(text)
    except ValueError as exc:
        log.warning("ZARRFS_CACHE_BYTES: %s; using %s", exc, human_size(DEFAULT_BYTES))
        return DEFAULT_BYTES


def _nbytes(value: np.ndarray) -> int:
    n = value.nbytes
    if value.dtype.kind == "O":  # references plus a rough size of each object
        n += sum(len(v) if isinstance(v, (str, bytes)) else 64 for v in value.flat)
    return n


class ChunkCache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.size = 0
        self._items: OrderedDict[Hashable, tuple[np.ndarray, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> np.ndarray | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                stats.add(cache_misses=1)
                return None
            self._items.move_to_end(key)
        stats.add(cache_hits=1)
        return item[0]

    def put(self, key: Hashable, value: np.ndarray) -> None:
        n = _nbytes(value)
        if not self.would_keep(n):
            return
        value.flags.writeable = False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= old[1]
            self._items[key] = (value, n)
            self.size += n
            self._evict()

    def _evict(self) -> None:
        while self.size > self.capacity and self._items:
            _, (_, n) = self._items.popitem(last=False)
            self.size -= n

    def resize(self, capacity: int) -> None:
        with self._lock:
            self.capacity = int(capacity)
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.size = 0

    def info(self) -> dict[str, int]:
        with self._lock:
            return {"size": self.size, "capacity": self.capacity, "items": len(self._items)}

    def would_keep(self, nbytes: int) -> bool:
        return nbytes <= self.capacity // 4


class IndexCache:
    """Decoded shard indexes (or None for an absent shard) by (store url, shard key), LRU by
    count: indexes are small and fetching one again costs a round trip."""

    def __init__(self, entries: int = 8192):
        self.entries = entries
        self._items: OrderedDict[Hashable, np.ndarray | None] = OrderedDict()
        self._lock = threading.Lock()

    def lookup(self, key: Hashable) -> tuple[bool, np.ndarray | None]:
        with self._lock:
            if key not in self._items:
                return False, None
            self._items.move_to_end(key)
            return True, self._items[key]

    def put(self, key: Hashable, index: np.ndarray | None) -> None:
        with self._lock:
            self._items[key] = index
            while len(self._items) > self.entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


chunks = ChunkCache(_default_capacity())
shard_indexes = IndexCache()


def _after_fork_in_child() -> None:
    """A lock held by another thread at fork() stays held forever in the child: start fresh
    (the mount daemonizes with a fork)."""
    chunks._lock = threading.Lock()
    shard_indexes._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def set_cache_size(nbytes: int) -> None:
    """Set the decoded-chunk cache budget in bytes (0 disables it)."""
    chunks.resize(nbytes)


def clear_caches() -> None:
    """Forget every decoded chunk and shard index (the next reads are cold)."""
    chunks.clear()
    shard_indexes.clear()


def cache_info() -> dict[str, int]:
    info = chunks.info()
    s = stats.snapshot()
    return {**info, "hits": int(s["cache_hits"]), "misses": int(s["cache_misses"])}
