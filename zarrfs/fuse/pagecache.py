"""Decoded read-ahead windows stored straight into the kernel's page cache (FUSE_NOTIFY_STORE).

The kernel reads a FUSE file ahead of a sequential reader at most its readahead at a time:
128 KiB unless root raised it. Each piece is a request, answered by the one FUSE thread while
both CPUs decode, and the reader waits for every one: a mount by a user other than root served
``numpy.load`` at 0.69 of the engine's speed. Once a read-ahead window is decoded, this module
hands its bytes to the kernel, so the reader finds them in the page cache as if it had read them
before. It does so 1 MiB at a time from the window's end backwards, and stops where reads were
already answered: a reader that waited for the window reads its start through requests
meanwhile, and the two meet instead of doing the same pages twice (pushing forwards, ``cat``
raced the pushes and was slower than without them).

One page per window is left out: the page holding the window's first byte. A reader that
reaches a window asks for that page, which tells the file where the reader is, so that it reads
further ahead (the kernel does not tell a server about reads it answers from the page cache).
Pages are only ever filled with the file's own bytes, as a read would; where a read of the same
pages is already under way, the kernel waits for it, then overwrites them with the same bytes.

Pushing is best effort: where it fails (libfuse 2, a kernel that refuses, a file no longer
cached) reads are answered as without it. One thread pushes, never a FUSE thread: the kernel may
wait for a read that a FUSE thread is to answer.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable

import numpy as np

from . import _fuselib
from .kernel import mount_device, node_id

log = logging.getLogger(__name__)

PIECE = 1 << 20  # bytes per push: a multiple of any page size
_JOIN = 10.0  # seconds; in ``destroy`` a push can wait only for reads the kernel is aborting


class PagePusher:
    """The mount's pushing thread and its queue; ``file(path)`` gives one file's pusher."""

    def __init__(self, mountpoint: str, stats=None):
        self._mountpoint = os.path.abspath(mountpoint)
        self._stats = stats
        self._session: int | None = None
        self._device: str | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def attach(self) -> bool:
        """Find the mount's libfuse session and device; call from ``init`` (the mount is in
        the mount table by then, and nothing else may be mounted over it yet)."""
        self._device = mount_device(self._mountpoint)
        self._session = _fuselib.fuse_session() if self._device else None
        log.debug("page cache pushes %s", "on" if self._session else "unavailable")
        return self._session is not None

    def file(self, path: str) -> FilePages | None:
        """The pusher of the file at ``path`` (mount-relative), or None where pushes cannot be."""
        if self._session is None or self._closed:
            return None
        return FilePages(self, os.path.join(self._mountpoint, path.lstrip("/")), self._device)

    def _put(self, job) -> None:
        with self._lock:
            if self._closed:
                job[-1]()  # never pushed: released at once
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="zarrfs-pages", daemon=True)
                self._thread.start()
            self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            pages, offset, data, done, served = job
            try:
                if not self._closed:
                    self._push(pages, offset, data, served)
            except Exception:  # noqa: BLE001 - best effort: the reader's requests still work
                log.debug("page cache push of %s failed", pages.path, exc_info=True)
            finally:
                done()

    def _push(
        self, pages: FilePages, offset: int, data: np.ndarray, served: Callable[[], int]
    ) -> None:
        """Pieces from the end backwards, until one ends where reads have already been
        answered: a reader that came while the window was decoding reads its start through
        requests meanwhile, and the two meet instead of doing the same pages twice."""
        node = pages.node_id()
        if node is None:
            return
        address = data.ctypes.data
        for at in reversed(range(0, data.nbytes, PIECE)):
            if offset + min(at + PIECE, data.nbytes) <= served():
                return
            size = min(PIECE, data.nbytes - at)
            error = _fuselib.notify_store(self._session, node, offset + at, address + at, size)
            if error < 0:
                log.debug(
                    "page cache push of %s at %d: %s", pages.path, offset + at, os.strerror(-error)
                )
                pages.failed = True
                return
            if self._stats is not None:
                self._stats.add("pushes")
                self._stats.add("bytes_pushed", size)

    def close(self, timeout: float = _JOIN) -> None:
        """Stop pushing; pending pushes are dropped, their buffers released. Waits up to
        ``timeout`` for a push under way. Called when a termination signal comes, while
        libfuse's threads still answer the reads a push may wait for (``signals``), and again
        in ``destroy``, before libfuse frees the session pushes go through."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)


class FilePages:
    """Pushes for one file: its kernel node id, looked up once, on the pushing thread."""

    def __init__(self, pusher: PagePusher, path: str, device: str):
        self.path = path
        self._pusher = pusher
        self._device = device
        self._node: int | None = None
        self._looked_up = False
        self.failed = False

    def node_id(self) -> int | None:
        if not self._looked_up:
            self._looked_up = True
            self._node = node_id(self.path, self._device)
        return self._node

    def push(
        self, offset: int, data: np.ndarray, done: Callable[[], None], served: Callable[[], int]
    ) -> None:
        """Queue ``data`` (contiguous bytes, which must not change until ``done``) for the
        file's page cache at ``offset`` (page-aligned, as its end unless at the file's end);
        ``served()`` tells up to where reads were answered (nothing below is pushed). ``done()``
        runs once the memory is no longer needed, pushed or not. Never blocks."""
        if self.failed or not data.nbytes:
            done()
            return
        self._pusher._put((self, offset, data, done, served))
