"""The files of the virtual tree: exact-size views of array bytes, small documents, generated files.

Every file answers ``size`` (from metadata alone, never by decoding), ``open()`` -> a handle with
``read(offset, size)``, and ``direct_io`` (true only for files whose size is not known up front:
opt-in formats and live control files; the kernel then reads until a short read instead of
trusting ``st_size``). A read of N bytes of an array file decodes only the chunks under those
bytes (``Array.read_flat``); a handle that sees sequential reads switches to read-ahead windows
that the engine decodes straight into the handle's buffers (``readahead``).

A read that fails (a stalled or failing store) is asked again: the kernel, which had asked for
many pages at once, asks for each page of the failed range one by one, within the same
``read()`` call, until one fails. Without a bound, each of those requests waited out the store's
timeouts anew (and, being sequential, started read-ahead windows that did too): one ``read()``
took minutes. So a handle remembers its last failed range: requests inside it, for
:data:`REASK_HOLD` seconds, are answered without read-ahead and share one deadline,
:data:`REASK_GRACE` seconds after the failure; past it they fail at once. Chunks that stalled are
remembered by the engine's chunk table, so those requests fail at once anyway, and chunks that
arrived are served from its cache. A read-ahead window that fails stops the read-ahead for
:data:`AHEAD_BACKOFF` seconds.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

import zarrfs.engine as engine

from .readahead import ReadAhead

log = logging.getLogger(__name__)

#: Reads that continue where the previous one ended this many times count as sequential.
_SEQUENTIAL_AFTER = 2
_MIN_WINDOW = 1 << 20
_WINDOWS_AHEAD = 4  # the prefetch distance is cut into this many read-ahead windows
_REORDER_TOLERANCE = 4 << 20  # concurrent readahead may arrive slightly out of order

#: seconds after a failed read during which requests inside its range may still wait for the
#: store (all together: one deadline); then they fail at once
REASK_GRACE = 1.0
#: seconds a failed range is remembered (requests inside it past the grace fail at once)
REASK_HOLD = 3.0
#: seconds a handle does not read ahead after a read-ahead window failed
AHEAD_BACKOFF = 5.0


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
            "pushes": 0,
            "bytes_pushed": 0,
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

    def readinto(self, offset: int, buffer: memoryview) -> int:
        data = self.read(offset, len(buffer))
        buffer[: len(data)] = data
        return len(data)

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

    def open(self, pages=None) -> ArrayHandle:
        """A handle; ``pages`` (``pagecache.FilePages``) stores its read-ahead windows into the
        kernel's page cache."""
        return ArrayHandle(self, pages)

    def chunk_band(self) -> int | None:
        """The fewest elements that, taken from this file's start or any multiple of it on,
        are whole chunks of the array: a band of chunks across every later dimension. None
        where no such run exists (the file starts inside a band, or the bands do not tile the
        array: an earlier dimension's chunks are longer than 1, or this one's do not divide it).
        Read-ahead windows of whole bands decode each chunk once, straight into the window, and
        keep none of them (``keep_whole_chunks=False``)."""
        return chunk_band(tuple(self.array.shape), tuple(self.array.chunks), self.start)

    def read_elements(self, first: int, stop: int, deadline: float | None = None) -> memoryview:
        """Bytes of elements ``[first, stop)`` of this file's range (decodes only those chunks).
        With a ``deadline`` (``time.monotonic()``), a read not done by then is cancelled and
        raises ``StoreError``."""
        if deadline is None:
            values = self.array.read_flat(self.start + first, self.start + stop)
        else:
            values = self._read_by(first, stop, deadline)
        values = np.ascontiguousarray(values)
        return memoryview(values.reshape(-1).view(np.uint8))  # datetimes refuse the buffer protocol

    def _read_by(self, first: int, stop: int, deadline: float) -> np.ndarray:
        """Elements ``[first, stop)`` as background reads, waited for until ``deadline``."""
        values = np.empty(stop - first, self.array.dtype)
        futures, offset = [], 0
        shape = tuple(self.array.shape)
        try:
            for _, box in engine.flat_boxes(self.start + first, self.start + stop, shape):
                count = math.prod(s.stop - s.start for s in box)
                out = values[offset : offset + count].reshape([s.stop - s.start for s in box])
                offset += count
                futures.append(self.array.submit(box, out=out))
            for future in futures:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            raise engine.StoreError(
                f"{self.array.url}: no answer in time after an earlier read of these bytes "
                f"failed; answering at once for {REASK_HOLD:g} s",
                path=self.array.url,
            ) from None
        finally:  # the engine stops what is still on the wire; ``values`` is never reused
            for future in futures:
                future.cancel()
        return values

    def read(self, offset: int, size: int) -> bytes:
        return ArrayHandle(self).read(offset, size)


def chunk_band(shape: tuple[int, ...], chunks: tuple[int, ...], start: int = 0) -> int | None:
    """:meth:`ArrayBytesFile.chunk_band` for elements from ``start`` on of an array of
    ``shape`` cut into ``chunks``."""
    if not shape or len(chunks) != len(shape) or 0 in shape:
        return None
    axis = next((k for k, c in enumerate(chunks) if c > 1), len(shape) - 1)
    if axis and shape[axis] % chunks[axis] and chunks[axis] < shape[axis]:
        return None  # the bands of each index of the earlier dimensions end mid-chunk
    band = min(chunks[axis], shape[axis]) * math.prod(shape[axis + 1 :])
    return band if start % band == 0 else None


class ArrayHandle:
    """One open array file: serves reads, detects sequential access, then reads ahead."""

    def __init__(self, file: ArrayBytesFile, pages=None):
        self.file = file
        self._pages = pages
        self._lock = threading.Lock()
        self._next_offset = -1
        self._sequential_runs = 0
        self._ahead: ReadAhead | None = None
        self._no_ahead_until = 0.0  # a window failed: no read-ahead until then (monotonic)
        #: the last failed read: file range [begin, end), the deadline its re-asks share, and
        #: until when it is remembered
        self._failed: tuple[int, int, float, float] | None = None

    def read(self, offset: int, size: int) -> bytes:
        buffer = bytearray(max(0, min(size, self.file.size - offset)))
        self.readinto(offset, memoryview(buffer))  # fills it: short only past the end
        return bytes(buffer)

    def readinto(self, offset: int, buffer: memoryview) -> int:
        """Bytes from ``offset`` on into ``buffer`` (libfuse's reply buffer, as bytes); the count
        written, short only at the end of the file."""
        file = self.file
        end = min(offset + len(buffer), file.size)
        if offset >= end:
            return 0
        header = len(file.prefix)
        deadline = self._reask_deadline(offset, end)
        if deadline is None:
            self._note_access(offset, end)
        at = 0
        if offset < header:
            part = file.prefix[offset : min(end, header)]
            buffer[: len(part)] = part
            at = len(part)
        if end > header:
            try:
                self._read_data(
                    offset + at - header, end - header, buffer[at : end - offset], deadline
                )
            except Exception:
                if deadline is None:  # a first failure: its range's re-asks share a deadline
                    now = time.monotonic()
                    self._failed = (offset, end, now + REASK_GRACE, now + REASK_HOLD)
                raise
        file.stats.add("reads")
        file.stats.add("bytes_served", end - offset)
        return end - offset

    def _reask_deadline(self, offset: int, end: int) -> float | None:
        """The deadline of a request inside the last failed range (a re-ask), None for any
        other request. Past the deadline, a re-ask fails at once."""
        failed = self._failed
        if failed is None:
            return None
        begin, stop, deadline, until = failed
        now = time.monotonic()
        if now >= until or not (begin <= offset and end <= stop):
            return None
        if now >= deadline:
            raise engine.StoreError(
                f"{self.file.array.url}: an earlier read of these bytes failed "
                f"{now - deadline + REASK_GRACE:.1f} s ago; answering at once for "
                f"{REASK_HOLD:g} s",
                path=self.file.array.url,
            )
        return deadline

    def _read_data(
        self, begin: int, stop: int, dest: memoryview, deadline: float | None = None
    ) -> None:
        """Bytes ``[begin, stop)`` of the data part into ``dest``: read ahead when sequential,
        else exactly (by ``deadline``, when given: a re-ask never reads ahead)."""
        ahead = self._read_ahead() if deadline is None else None
        if ahead is not None:
            if ahead.read_into(begin, stop, dest):
                return
            self._stop_ahead(time.monotonic() + AHEAD_BACKOFF)
        itemsize = self.file.itemsize
        first = begin // itemsize
        values = self.file.read_elements(first, -(-stop // itemsize), deadline)
        dest[:] = values[begin - first * itemsize : stop - first * itemsize]

    def _stop_ahead(self, until: float) -> None:
        """A window failed: no read-ahead until ``until`` (its reads would wait again)."""
        with self._lock:
            ahead, self._ahead = self._ahead, None
            self._sequential_runs = 0
            self._no_ahead_until = until
        if ahead is not None:
            ahead.release()

    def _read_ahead(self) -> ReadAhead | None:
        file = self.file
        with self._lock:
            if self._sequential_runs < _SEQUENTIAL_AFTER or file.prefetch_bytes <= 0:
                return None
            if time.monotonic() < self._no_ahead_until:
                return None
            if self._ahead is None:
                window = max(_MIN_WINDOW, file.prefetch_bytes // _WINDOWS_AHEAD) // file.itemsize
                band = file.chunk_band()
                if band and band <= window:  # every window covers whole chunks only
                    window -= window % band
                ahead = max(1, file.prefetch_bytes // (window * file.itemsize))
                self._ahead = ReadAhead(file, window, ahead, self._pages)
            return self._ahead

    def _note_access(self, offset: int, end: int) -> None:
        """Count reads that continue the previous one; tolerate reordered kernel readahead,
        and skips over what the read-ahead stored into the page cache (the reader then asks only
        for the first page of each window). A jump elsewhere stops the read-ahead (its pending
        reads are cancelled)."""
        stopped = None
        with self._lock:
            ahead = self._ahead
            if offset == self._next_offset or (
                ahead is not None and self._next_offset < offset < ahead.reach
            ):
                self._sequential_runs += 1
            elif abs(offset - self._next_offset) > _REORDER_TOLERANCE:
                self._sequential_runs = 0
                stopped, self._ahead = self._ahead, None
            self._next_offset = max(end, self._next_offset) if self._sequential_runs else end
        if stopped is not None:
            stopped.release()

    def release(self) -> None:
        with self._lock:
            ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.release()
