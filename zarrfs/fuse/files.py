"""The files of the virtual tree: exact-size views of array bytes, small documents, generated files.

Every file answers ``size`` (from metadata alone, never by decoding), ``open()`` -> a handle with
``read(offset, size)``, and ``direct_io`` (true only for files whose size is not known up front:
opt-in formats and live control files; the kernel then reads until a short read instead of
trusting ``st_size``). A read of N bytes of an array file decodes only the chunks under those
bytes (``Array.read_flat``); a handle that sees sequential reads fetches a larger window and asks
the engine to prefetch the next one at low priority.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from math import prod

import numpy as np

import zarrfs.engine as engine

log = logging.getLogger(__name__)

#: Reads that continue where the previous one ended this many times count as sequential.
_SEQUENTIAL_AFTER = 2
_MIN_WINDOW = 1 << 20
_PREFETCH_WAIT = 120.0  # seconds; the engine's own retries end a prefetch well before this
_REORDER_TOLERANCE = 4 << 20  # concurrent readahead may arrive slightly out of order


class MountStats:
    """Counters of what the mount served (the engine counts what it fetched and decoded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters = {
            "reads": 0,
            "bytes_served": 0,
            "read_errors": 0,
            "opens": 0,
            "prefetches": 0,
            "prefetch_bytes": 0,
            "lookups": 0,
        }

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.counters[name] += amount

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counters)


class BytesFile:
    """A small document computed once on first use (attrs.json, meta.json, info.txt)."""

    direct_io = False

    def __init__(self, make: Callable[[], bytes]):
        self._make = make
        self._content: bytes | None = None

    @property
    def content(self) -> bytes:
        if self._content is None:
            self._content = self._make()
        return self._content

    @property
    def size(self) -> int:
        return len(self.content)

    def open(self) -> BytesFile:
        return self

    def read(self, offset: int, size: int) -> bytes:
        return self.content[offset : offset + size]

    def release(self) -> None:
        pass


class GeneratedFile:
    """Content generated on open (opt-in formats, live files): size known only afterwards."""

    direct_io = True

    def __init__(self, generate: Callable[[], bytes], live: bool = False):
        self._generate = generate
        self._live = live
        self._last_size = 0
        self._cached: bytes | None = None

    @property
    def size(self) -> int:
        """0 until generated once (like /proc); live files regenerate to report a fresh size."""
        if self._live:
            return len(self._generate())
        return self._last_size

    def open(self) -> BytesFile:
        content = self._cached
        if content is None:
            content = self._generate()
            self._last_size = len(content)
            if not self._live:
                self._cached = content
        return BytesFile(lambda: content)


class ArrayBytesFile:
    """``prefix`` bytes followed by elements ``[start, start + count)`` of the C-order array."""

    direct_io = False

    def __init__(
        self,
        array,
        prefix: bytes,
        start: int,
        count: int,
        stats: MountStats,
        prefetch_bytes: int = 0,
    ):
        self.array = array
        self.prefix = prefix
        self.start = start
        self.count = count
        self.itemsize = array.dtype.itemsize
        self.stats = stats
        self.prefetch_bytes = prefetch_bytes

    @property
    def size(self) -> int:
        return len(self.prefix) + self.count * self.itemsize

    def open(self) -> ArrayHandle:
        return ArrayHandle(self)

    def read_elements(self, first: int, stop: int) -> memoryview:
        """Bytes of elements ``[first, stop)`` of this file's range (decodes only those chunks)."""
        values = np.ascontiguousarray(self.array.read_flat(self.start + first, self.start + stop))
        return memoryview(values.reshape(-1).view(np.uint8))  # datetimes refuse the buffer protocol

    def read(self, offset: int, size: int) -> bytes:
        return ArrayHandle(self).read(offset, size)


class ArrayHandle:
    """One open array file: serves reads, detects sequential access, prefetches ahead."""

    def __init__(self, file: ArrayBytesFile):
        self.file = file
        self._lock = threading.Lock()
        self._fetch_lock = threading.Lock()
        self._next_offset = -1
        self._sequential_runs = 0
        self._window: tuple[int, int, memoryview] | None = None  # element range and its bytes
        self._prefetched_to = 0  # element index up to which a prefetch has been submitted
        self._pending: list[tuple[int, int, list]] = []  # (start, stop, futures) in flight

    def read(self, offset: int, size: int) -> bytes:
        file = self.file
        end = min(offset + size, file.size)
        if offset >= end:
            return b""
        parts = []
        header = len(file.prefix)
        if offset < header:
            parts.append(file.prefix[offset : min(end, header)])
        if end > header:
            parts.append(self._read_data(max(offset, header) - header, end - header, size))
        self._note_access(offset, end)
        out = parts[0] if len(parts) == 1 else b"".join(parts)
        file.stats.add("reads")
        file.stats.add("bytes_served", len(out))
        return bytes(out)

    def _read_data(self, begin: int, stop: int, request_size: int) -> memoryview:
        itemsize = self.file.itemsize
        first, last = begin // itemsize, -(-stop // itemsize)
        window = self._covering_window(first, last)
        if window is None:
            with self._fetch_lock:  # concurrent readahead of one handle waits for one fetch
                window = self._covering_window(first, last) or self._fetch(
                    first, last, request_size
                )
        base = window[0] * itemsize
        return window[2][begin - base : stop - base]

    def _covering_window(self, first: int, last: int) -> tuple[int, int, memoryview] | None:
        window = self._window
        if window is not None and window[0] <= first and last <= window[1]:
            return window
        return None

    def _fetch(self, first: int, last: int, request_size: int) -> tuple[int, int, memoryview]:
        itemsize = self.file.itemsize
        sequential = self._sequential_runs >= _SEQUENTIAL_AFTER and self.file.prefetch_bytes > 0
        if sequential:
            span = max(self._window_elements(), request_size * 8 // itemsize)
            last = min(self.file.count, max(last, first + span))
        self._await_prefetch(first, last)
        window = (first, last, self.file.read_elements(first, last))
        self._window = window
        if sequential:
            self._prefetch(last)
        return window

    def _note_access(self, offset: int, end: int) -> None:
        """Count reads that continue the previous one; tolerate reordered kernel readahead."""
        with self._lock:
            if offset == self._next_offset:
                self._sequential_runs += 1
            elif abs(offset - self._next_offset) > _REORDER_TOLERANCE:
                self._sequential_runs = 0
            self._next_offset = max(end, self._next_offset) if self._sequential_runs else end

    def _prefetch(self, from_element: int) -> None:
        """Submit the next ``prefetch`` bytes to the engine at low priority, in window pieces."""
        file = self.file
        span = file.prefetch_bytes // file.itemsize
        start = max(from_element, self._prefetched_to)
        stop = min(file.count, from_element + span)
        if stop - start < span // 2:
            return
        piece = max(1, self._window_elements())
        shape = tuple(file.array.shape)
        for piece_start in range(start, stop, piece):
            piece_stop = min(stop, piece_start + piece)
            futures = []
            for box in flat_boxes(shape, file.start + piece_start, file.start + piece_stop):
                try:
                    futures.append(file.array.submit(box, priority=engine.PRIORITY_PREFETCH))
                except Exception:  # a failed prefetch only costs the later read its speed
                    log.debug("prefetch of %s %s failed", file.array.path, box, exc_info=True)
            self._pending.append((piece_start, piece_stop, futures))
        self._prefetched_to = stop
        file.stats.add("prefetches")
        file.stats.add("prefetch_bytes", (stop - start) * file.itemsize)

    def _window_elements(self) -> int:
        return max(_MIN_WINDOW, self.file.prefetch_bytes // 4) // self.file.itemsize

    def _await_prefetch(self, first: int, last: int) -> None:
        """Let an in-flight prefetch of these elements finish rather than decode them twice."""
        still_pending = []
        for start, stop, futures in self._pending:
            if start < last and first < stop:
                for future in futures:
                    try:
                        future.result(timeout=_PREFETCH_WAIT)
                    except Exception:  # the synchronous read reports any real failure
                        pass
            elif stop > first:
                still_pending.append((start, stop, futures))
        self._pending = still_pending

    def release(self) -> None:
        self._window = None
        for _, _, futures in self._pending:
            for future in futures:
                future.cancel()
        self._pending = []


def flat_boxes(shape: tuple[int, ...], start: int, stop: int) -> Iterator[tuple[slice, ...]]:
    """Boxes (tuples of slices) that together cover exactly C-order elements ``[start, stop)``.

    At most ``2 * ndim - 1`` boxes: a ragged head, a run of whole slabs, a ragged tail, recursively.
    """
    if start >= stop:
        return
    if len(shape) <= 1:
        yield (slice(start, stop),) if shape else ()
        return
    inner = prod(shape[1:])
    first, head = divmod(start, inner)
    last, tail = divmod(stop, inner)
    rest = tuple(slice(0, n) for n in shape[1:])
    if first == last:
        for box in flat_boxes(shape[1:], head, tail):
            yield (slice(first, first + 1),) + box
        return
    if head:
        for box in flat_boxes(shape[1:], head, inner):
            yield (slice(first, first + 1),) + box
        first += 1
    if last > first:
        yield (slice(first, last),) + rest
    if tail:
        for box in flat_boxes(shape[1:], 0, tail):
            yield (slice(last, last + 1),) + box
