"""The files of the virtual tree: exact-size views of array bytes, small documents, generated files.

Every file answers ``size`` (from metadata alone, never by decoding), ``open()`` -> a handle with
``read(offset, size)``, and ``direct_io`` (true only for files whose size is not known up front:
opt-in formats and live control files; the kernel then reads until a short read instead of
trusting ``st_size``). A read of N bytes of an array file decodes only the chunks under those
bytes (``Array.read_flat``); a handle that sees sequential reads switches to read-ahead windows
that the engine decodes straight into the handle's buffers (``readahead``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np

from .readahead import ReadAhead

log = logging.getLogger(__name__)

#: Reads that continue where the previous one ended this many times count as sequential.
_SEQUENTIAL_AFTER = 2
_MIN_WINDOW = 1 << 20
_WINDOWS_AHEAD = 4  # the prefetch distance is cut into this many read-ahead windows
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

    def read_elements(self, first: int, stop: int) -> memoryview:
        """Bytes of elements ``[first, stop)`` of this file's range (decodes only those chunks)."""
        values = np.ascontiguousarray(self.array.read_flat(self.start + first, self.start + stop))
        return memoryview(values.reshape(-1).view(np.uint8))  # datetimes refuse the buffer protocol

    def read(self, offset: int, size: int) -> bytes:
        return ArrayHandle(self).read(offset, size)


class ArrayHandle:
    """One open array file: serves reads, detects sequential access, then reads ahead."""

    def __init__(self, file: ArrayBytesFile, pages=None):
        self.file = file
        self._pages = pages
        self._lock = threading.Lock()
        self._next_offset = -1
        self._sequential_runs = 0
        self._ahead: ReadAhead | None = None

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
        self._note_access(offset, end)
        at = 0
        if offset < header:
            part = file.prefix[offset : min(end, header)]
            buffer[: len(part)] = part
            at = len(part)
        if end > header:
            self._read_data(offset + at - header, end - header, buffer[at : end - offset])
        file.stats.add("reads")
        file.stats.add("bytes_served", end - offset)
        return end - offset

    def _read_data(self, begin: int, stop: int, dest: memoryview) -> None:
        """Bytes ``[begin, stop)`` of the data part into ``dest``: read ahead when sequential,
        else exactly."""
        ahead = self._read_ahead()
        if ahead is not None and ahead.read_into(begin, stop, dest):
            return
        itemsize = self.file.itemsize
        first = begin // itemsize
        values = self.file.read_elements(first, -(-stop // itemsize))
        dest[:] = values[begin - first * itemsize : stop - first * itemsize]

    def _read_ahead(self) -> ReadAhead | None:
        file = self.file
        with self._lock:
            if self._sequential_runs < _SEQUENTIAL_AFTER or file.prefetch_bytes <= 0:
                return None
            if self._ahead is None:
                window = max(_MIN_WINDOW, file.prefetch_bytes // _WINDOWS_AHEAD) // file.itemsize
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
