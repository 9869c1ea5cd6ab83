"""Read-ahead for one open array file: aligned windows filled by the engine, in reused buffers.

A file read sequentially is cut into windows of ``window`` elements aligned on multiples of
``window`` (so concurrent, slightly reordered kernel readahead maps onto the same windows). The
window under a read and the next ``ahead`` windows are background reads (``Array.submit``) that
the engine decodes *straight into* this handle's window buffers: no second copy from the chunk
cache, no fresh pages per window (a buffer is reused once the reader is two windows past it and
no read is copying out of it). Reads copy their bytes out of a window, straight into libfuse's
reply buffer, while holding it, so a buffer is never refilled under a reader.

With ``pages`` (``pagecache.FilePages``), each decoded window is also stored into the kernel's
page cache, all but its first page, so that the reader's next requests are for those first pages
only. A window is not reused while its bytes are being pushed.

Memory: at most ``ahead + 2`` windows per handle read sequentially; freed on release.
"""

from __future__ import annotations

import logging
import mmap
import threading

import numpy as np

import zarrfs.engine as engine

log = logging.getLogger(__name__)

_WAIT = 120.0  # seconds; the engine's own timeouts and retries end a read well before this
PAGE = mmap.PAGESIZE  # the kernel's page cache works in these


class _Window:
    """Elements ``[first, stop)`` of the file, being filled (futures) into ``buffer``."""

    __slots__ = ("first", "stop", "buffer", "futures", "users", "failed", "pushing")

    def __init__(self, first: int, stop: int, buffer: np.ndarray, futures: list):
        self.first = first
        self.stop = stop
        self.buffer = buffer
        self.futures = futures
        self.users = 0
        self.failed = False
        self.pushing = False  # set and cleared without the lock: the push ends on any thread

    def done(self) -> bool:
        return all(future.done() for future in self.futures)


class ReadAhead:
    """The aligned windows of one handle; ``read`` serves element ranges out of them."""

    def __init__(self, file, window: int, ahead: int, pages=None):
        self.file = file
        self.window = max(1, window)
        self.ahead = max(0, ahead)
        self.pages = pages
        self.reach = 0  # file offset where the furthest window asked for ends
        self.served = 0  # file offset where the furthest read answered ends
        self._lock = threading.Lock()
        self._windows: dict[int, _Window] = {}
        self._free: list[np.ndarray] = []
        self._nbytes = self.window * file.itemsize
        self.buffers_allocated = 0  # stays at about ``ahead + 3`` however long the file

    def read_into(self, begin: int, stop: int, dest: memoryview) -> bool:
        """Bytes ``[begin, stop)`` of the data part into ``dest``; False if a window failed (the
        caller then reads directly, which retries and reports the real error)."""
        span = self._nbytes
        indexes = range(begin // span, (stop - 1) // span + 1)
        with self._lock:
            windows = [self._ensure(k, engine.PRIORITY_VISIBLE) for k in indexes]
            for window in windows:
                window.users += 1
            self._advance(indexes.start, indexes.stop)
        try:
            if not all(self._wait(window) for window in windows):
                return False
            at = 0
            for index, window in zip(indexes, windows, strict=True):
                base = index * span
                part = memoryview(window.buffer)[max(begin, base) - base : stop - base]
                dest[at : at + len(part)] = part
                at += len(part)
            self.served = max(self.served, len(self.file.prefix) + stop)
            return True
        finally:
            with self._lock:
                for window in windows:
                    window.users -= 1

    def _ensure(self, index: int, priority: int) -> _Window:
        window = self._windows.get(index)
        if window is None:
            window = self._windows[index] = self._submit(index, priority)
        return window

    def _submit(self, index: int, priority: int) -> _Window:
        """Ask the engine for one window, decoded into a (reused) buffer of this handle."""
        file = self.file
        first = index * self.window
        stop = min(file.count, first + self.window)
        if self._free:
            buffer = self._free.pop()
        else:
            buffer = np.empty(self._nbytes, np.uint8)
            self.buffers_allocated += 1
        values = buffer[: (stop - first) * file.itemsize].view(file.array.dtype)
        futures, offset = [], 0
        shape = tuple(file.array.shape)
        for _, box in engine.flat_boxes(file.start + first, file.start + stop, shape):
            box_shape = tuple(s.stop - s.start for s in box)
            count = int(np.prod(box_shape, dtype=np.int64))
            out = values[offset : offset + count].reshape(box_shape)
            offset += count
            try:
                # chunks wholly inside the window are not cached: the page cache keeps the
                # file's bytes, and a sequential reader never wants those chunks again
                futures.append(
                    file.array.submit(box, priority=priority, out=out, keep_whole_chunks=False)
                )
            except Exception:  # noqa: BLE001 - the reader falls back to a direct read
                log.debug("read-ahead of %s %s failed", file.array.path, box, exc_info=True)
                window = _Window(first, stop, buffer, futures)
                window.failed = True
                return window
        file.stats.add("prefetches")  # windows, and their bytes: counted alike
        file.stats.add("prefetch_bytes", (stop - first) * file.itemsize)
        window = _Window(first, stop, buffer, futures)
        header = len(file.prefix)
        self.reach = max(self.reach, header + stop * file.itemsize)
        if self.pages is not None:
            self._push_when_decoded(window, header + first * file.itemsize)
        return window

    def _push_when_decoded(self, window: _Window, start: int) -> None:
        """Once every read of ``window`` (file bytes from ``start`` on) succeeded, store its
        whole pages but the first into the kernel's page cache (``pagecache``)."""
        size = (window.stop - window.first) * self.file.itemsize
        begin, end = window_pages(start, start + size, self.file.size)
        if begin >= end or not window.futures:
            return
        window.pushing = True
        remaining = [len(window.futures)]
        lock = threading.Lock()

        def released() -> None:
            window.pushing = False

        def landed(_future) -> None:
            with lock:
                remaining[0] -= 1
                if remaining[0]:
                    return
            if any(f.cancelled() or f.exception() is not None for f in window.futures):
                released()
            else:  # the slice keeps the buffer alive until pushed, even past release()
                self.pages.push(
                    begin, window.buffer[begin - start : end - start], released, lambda: self.served
                )

        for future in window.futures:
            future.add_done_callback(landed)

    def _advance(self, current: int, stop: int) -> None:
        """Drop windows more than one behind ``current`` (or far ahead: the reader jumped back);
        submit up to ``ahead`` past ``stop``."""
        far = stop + 2 * self.ahead
        for index in [k for k in self._windows if k < current - 1 or k > far]:
            window = self._windows[index]
            if window.users or window.pushing:
                continue
            del self._windows[index]
            if window.done():
                self._free.append(window.buffer)
            else:  # the engine may still write into it: never reuse that buffer
                for future in window.futures:
                    future.cancel()
        last = -(-self.file.count // self.window)
        for index in range(stop, min(last, stop + self.ahead)):
            if index not in self._windows:
                self._windows[index] = self._submit(index, engine.PRIORITY_PREFETCH)

    def _wait(self, window: _Window) -> bool:
        if window.failed:
            return False
        for future in window.futures:
            try:
                future.result(timeout=_WAIT)
            except Exception:  # noqa: BLE001 - retried by the caller's direct read
                log.debug("read-ahead window of %s failed", self.file.array.path, exc_info=True)
                with self._lock:
                    window.failed = True
                    if self._windows.get(window.first // self.window) is window:
                        del self._windows[window.first // self.window]
                return False
        return True

    def release(self) -> None:
        with self._lock:
            for window in self._windows.values():
                for future in window.futures:
                    future.cancel()
            self._windows.clear()
            self._free.clear()


def window_pages(start: int, stop: int, file_size: int) -> tuple[int, int]:
    """The file range ``[begin, end)`` to push for bytes ``[start, stop)`` of a window: whole
    pages only (the last page of the file may be partial), leaving out the page that holds
    ``start`` (the reader's request for it tells where it is). Empty when ``begin >= end``."""
    begin = (start // PAGE + 1) * PAGE
    end = stop if stop == file_size else stop // PAGE * PAGE
    return begin, end
