"""The chunk table: decoded chunks kept and chunks being read, in one place (STYLE 4).

One entry per chunk, keyed uniquely across stores: ``(store url, array path, metadata digest,
chunk coords)``. An entry is either *pending* (a read is fetching and decoding it right now; other
reads of that chunk wait for it instead of doing it twice) or *ready* (a read-only decoded chunk,
kept in a byte-bounded LRU shared by every array in the process). The read that claimed a pending
entry settles it exactly once, with a :class:`ChunkResult`: loaded, missing, failed or abandoned;
every waiter wakes with it, so no wait outlives the read it waits for. A chunk larger than a
quarter of the budget is not kept (it would evict everything else for one use). The budget comes
from ``ZARRFS_CACHE_BYTES`` or :func:`set_cache_size`.

Whether a read keeps the chunks it decodes is the read's choice (``reader``): at once, or only a
chunk read before (admission on the second read). For the second, the table remembers the keys
of recent chunks it did not keep (``reread`` on the entry of a chunk claimed again): keeping a
chunk costs new memory, and touching new memory the first time costs more than decoding (a page
fault per 4 KiB), so a plane read once is not worth keeping.

A chunk whose fetch stalled (:class:`StoreTimeoutError`: no answer within the timeout, twice)
stays in the table as that failure for :data:`STALL_MEMORY` seconds, whatever the budget: reads
claiming it meanwhile get the failure at once instead of waiting out the same timeouts again
(through the mount, one ``read()`` whose pages failed becomes a request per page, each needing
the same chunks). Never data: only the failure is kept, and the first read after the moment
fetches the chunk again.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import NamedTuple

import numpy as np

from . import stats
from .errors import StoreTimeoutError
from .sizes import human_size, parse_size

log = logging.getLogger(__name__)

DEFAULT_BYTES = 512 * 2**20

#: how often a waiting read looks whether it was cancelled meanwhile (seconds)
_POLL_SECONDS = 0.05

#: chunks read and not kept that the table remembers (admission on the second read), by the
#: hash of their key: about 3 MiB (a collision only keeps a chunk on its first read)
_SEEN_KEYS = 1 << 15

#: seconds a chunk whose fetch stalled answers its failure at once (see the module docstring)
STALL_MEMORY = 3.0


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


class ChunkResult(NamedTuple):
    """What reading one chunk gave. ``status``: "loaded" (``chunk`` holds it), "missing" (no
    stored chunk: the fill value), "failed" (``error``), "abandoned" (its read was cancelled
    before it was done: a waiter reads it itself)."""

    status: str
    chunk: np.ndarray | None = None
    error: BaseException | None = None

    def own_error(self) -> BaseException:
        """The failure as a new exception of the same kind for the read that raises it, chained
        to the first: one exception instance is never raised by two reads."""
        error = copy.copy(self.error)
        error.__cause__ = self.error
        return error

    def taken(self) -> ChunkResult:
        """The result as a read waiting for it takes it: a failure as its own exception."""
        return failed(self.own_error()) if self.status == "failed" else self


MISSING = ChunkResult("missing")
ABANDONED = ChunkResult("abandoned")


def loaded(chunk: np.ndarray) -> ChunkResult:
    return ChunkResult("loaded", chunk)


def failed(error: BaseException) -> ChunkResult:
    return ChunkResult("failed", error=error)


class Entry:
    """One chunk of the table. Pending while ``result`` is None; the event exists only once a
    second read waits (most chunks never have a waiter). ``reread``: the chunk was read before
    and not kept (a read admitting chunks on their second read keeps this one)."""

    __slots__ = ("event", "key", "nbytes", "reread", "result", "until")

    def __init__(self, key: Hashable = None, reread: bool = False) -> None:
        self.key = key
        self.result: ChunkResult | None = None
        self.event: threading.Event | None = None
        self.nbytes = 0
        self.reread = reread
        self.until = 0.0  # a remembered stall: answered at once until then (monotonic)

    def wait(self, cancelled: Callable[[], bool]) -> ChunkResult:
        """The result, once the read that owns the chunk settles it; ABANDONED at once when
        ``cancelled()`` turns true meanwhile. The owner settles in every case (its ``finally``)."""
        while not self.event.wait(_POLL_SECONDS):  # type: ignore[union-attr] - set by claim()
            if cancelled():
                return ABANDONED
        return self.result  # type: ignore[return-value]


class ChunkTable:
    """Decoded chunks kept (LRU, bounded in bytes) and chunks being read, under one lock."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        #: bytes of the budget lent to the native path's cache pool (:mod:`.native`)
        self.reserved = 0
        self.size = 0
        self._items: OrderedDict[Hashable, Entry] = OrderedDict()
        #: hashes of the keys of chunks read and not kept, oldest first (at most _SEEN_KEYS)
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._lock = threading.Lock()
        self._stalls: deque[tuple[float, Hashable, Entry]] = deque()  # oldest first

    def claim(
        self, keys: list
    ) -> tuple[dict[int, np.ndarray], list[tuple[int, Entry]], list[tuple[int, Entry]]]:
        """For each key, by index: its kept chunk (a hit); or the caller now owns it (it must
        :meth:`settle` that entry); or another read owns it, or it stalled a moment ago (the
        entry to wait on: a remembered stall answers at once)."""
        hits: dict[int, np.ndarray] = {}
        owned: list[tuple[int, Entry]] = []
        waited: list[tuple[int, Entry]] = []
        items = self._items
        with self._lock:
            self._forget_stalls()
            for i, key in enumerate(keys):
                entry = items.get(key)
                if entry is not None and entry.until and entry.until <= time.monotonic():
                    entry = None  # remembered long enough: fetched again
                if entry is None:
                    entry = items[key] = Entry(key, hash(key) in self._seen)
                    owned.append((i, entry))
                elif entry.until:
                    waited.append((i, entry))
                elif entry.result is not None:
                    items.move_to_end(key)
                    hits[i] = entry.result.chunk  # type: ignore[assignment]
                else:
                    if entry.event is None:
                        entry.event = threading.Event()
                    waited.append((i, entry))
        if keys:
            stats.add(cache_hits=len(hits), cache_misses=len(keys) - len(hits))
        return hits, owned, waited

    def settle(
        self, key: Hashable, entry: Entry, result: ChunkResult, *, keep: bool = False
    ) -> None:
        """Publish an owned chunk's result to its waiters, keeping a loaded chunk when ``keep``
        (then the table owns it: read-only from now on). A chunk not kept is copied for the
        waiters (it lives in the owner's output or its task's buffer). If keeping or copying
        fails, the waiters get that failure, and it is raised here too."""
        if entry.result is not None:  # settled already
            return
        try:
            if isinstance(result.error, StoreTimeoutError):
                result = self._remember(key, entry, result)
                keep = True
            elif keep and result.status == "loaded":
                keep = self._keep(key, entry, result)
            if not keep:
                self._drop(key, entry, seen=result.status == "loaded")
                if entry.event is not None and result.chunk is not None:
                    result = loaded(result.chunk.copy())
        except BaseException as exc:
            result = failed(exc)
            self._drop(key, entry)
            raise
        finally:
            if entry.result is None:
                entry.result = result
            if entry.event is not None:
                entry.event.set()

    def drop_settled(self, loaded: list[Entry], missing: list[Entry] | None = None) -> None:
        """Settle, under one lock, owned chunks that were read and not kept (``loaded``, or
        ``missing``: not stored) where no read waited at the time (their data is gone since:
        a task's buffer holds the next chunk). A read that came to wait for a loaded one
        meanwhile gets it abandoned, and reads it itself; a missing chunk is missing for it
        too."""
        woken = []
        items, remembered = self._items, self._seen
        with self._lock:  # (as _forget does, inline: a plane settles hundreds at once)
            for entries, result in ((loaded, ABANDONED), (missing or [], MISSING)):
                seen = result is ABANDONED and self.capacity
                for entry in entries:
                    if entry.result is not None:  # settled already
                        continue
                    entry.result = result
                    key = entry.key
                    if items.get(key) is entry:
                        del items[key]
                    if seen:
                        h = hash(key)
                        remembered[h] = None
                        remembered.move_to_end(h)
                    if entry.event is not None:
                        woken.append(entry.event)
            while len(remembered) > _SEEN_KEYS:
                remembered.popitem(last=False)
        for event in woken:
            event.set()

    def keep_settled(self, kept: list[tuple[Entry, ChunkResult]]) -> None:
        """Settle, under one lock, owned chunks read into memory of their own for the table
        to keep (``(entry, loaded result)``): kept where the budget allows, as :meth:`settle`
        keeps one; either way each waiter gets the result (its memory is the chunk's own)."""
        woken = []
        for _, result in kept:
            result.chunk.flags.writeable = False  # type: ignore[union-attr]
        with self._lock:
            for entry, result in kept:
                if entry.result is not None:  # settled already
                    continue
                if not self._admit(entry.key, entry, result):
                    self._forget(entry.key, entry, seen=True)
                    entry.result = result
                if entry.event is not None:
                    woken.append(entry.event)
            self._evict()
        for event in woken:
            event.set()

    def _remember(self, key: Hashable, entry: Entry, result: ChunkResult) -> ChunkResult:
        """Keep a stalled chunk's failure for :data:`STALL_MEMORY` seconds; the failure that
        its waiters, and the reads claiming it meanwhile, get."""
        stalled = result.error
        error = stalled.renewed(
            f"{stalled.message} (reads of this chunk fail at once for {STALL_MEMORY:g} s)"
        )
        if entry.event is None:
            entry.event = threading.Event()  # set by settle(): later claims wait on it
        with self._lock:
            if self._items.get(key) is entry:
                entry.until = time.monotonic() + STALL_MEMORY
                self._stalls.append((entry.until, key, entry))
        return failed(error)

    def _forget_stalls(self) -> None:
        """Drop the remembered stalls whose moment has passed (under the lock)."""
        now = time.monotonic()
        while self._stalls and self._stalls[0][0] <= now:
            _, key, entry = self._stalls.popleft()
            if self._items.get(key) is entry:
                del self._items[key]

    def _drop(self, key: Hashable, entry: Entry, seen: bool = False) -> None:
        """Forget a pending entry; ``seen``: remember its key (read, not kept)."""
        with self._lock:
            self._forget(key, entry, seen)

    def _forget(self, key: Hashable, entry: Entry, seen: bool) -> None:
        """:meth:`_drop` under the lock."""
        items = self._items
        if items.get(key) is entry:
            del items[key]
        if seen and self.capacity:
            h, remembered = hash(key), self._seen
            remembered[h] = None
            remembered.move_to_end(h)
            if len(remembered) > _SEEN_KEYS:
                remembered.popitem(last=False)

    def _keep(self, key: Hashable, entry: Entry, result: ChunkResult) -> bool:
        if not self.would_keep(_nbytes(result.chunk)):  # type: ignore[arg-type]
            return False
        result.chunk.flags.writeable = False  # type: ignore[union-attr]
        with self._lock:
            kept = self._admit(key, entry, result)
            self._evict()
        return kept

    def _admit(self, key: Hashable, entry: Entry, result: ChunkResult) -> bool:
        """Keep a pending entry's loaded result where the budget allows (under the lock;
        the caller evicts); False where not (too big, or the table was cleared meanwhile)."""
        n = _nbytes(result.chunk)  # type: ignore[arg-type]
        if self._items.get(key) is not entry or not self.would_keep(n):
            return False
        entry.nbytes, entry.result = n, result
        self._seen.pop(hash(key), None)
        self._items.move_to_end(key)
        self.size += n
        return True

    def get(self, key: Hashable) -> np.ndarray | None:
        """A kept chunk, or None (nothing is claimed)."""
        with self._lock:
            entry = self._items.get(key)
            if entry is None or entry.result is None or entry.until:
                return None
            self._items.move_to_end(key)
            return entry.result.chunk

    def _evict(self) -> None:
        """Oldest kept chunks first; pending entries go to the end (they are in use)."""
        items = self._items
        for _ in range(len(items)):
            if self.size <= self.capacity - self.reserved:
                return
            key, entry = items.popitem(last=False)
            if entry.result is None:
                items[key] = entry
            else:
                self.size -= entry.nbytes

    def resize(self, capacity: int) -> None:
        with self._lock:
            self.capacity = int(capacity)
            self._evict()

    def reserve(self, nbytes: int) -> None:
        """Lend ``nbytes`` of the budget to another cache (0: take it all back)."""
        with self._lock:
            self.reserved = min(int(nbytes), self.capacity)
            self._evict()

    def clear(self) -> None:
        """Forget every kept chunk (reads under way still settle theirs)."""
        with self._lock:
            for key in [k for k, e in self._items.items() if e.result is not None or e.until]:
                del self._items[key]
            self._seen.clear()
            self._stalls.clear()
            self.size = 0

    def info(self) -> dict[str, int]:
        with self._lock:
            kept = sum(1 for e in self._items.values() if e.result is not None and not e.until)
            info = {"size": self.size, "capacity": self.capacity, "items": kept}
            return {**info, "native_pool": self.reserved}

    def would_keep(self, nbytes: int) -> bool:
        return nbytes <= (self.capacity - self.reserved) // 4


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


chunks = ChunkTable(_default_capacity())
shard_indexes = IndexCache()


def _after_fork_in_child() -> None:
    """A lock held by another thread at fork() stays held forever in the child, and reads
    under way in the parent never settle there: start fresh (the mount daemonizes with a
    fork)."""
    global chunks
    chunks = ChunkTable(chunks.capacity)  # (the native path's contexts are gone too)
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
