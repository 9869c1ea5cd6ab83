"""Every request of a read in flight at once on one event loop (fsspec's), answers handed over
as they land: the one place where the engine's I/O is asynchronous (STYLE 4), behind the store's
synchronous :meth:`~zarrfs.engine.store.Store.stream`. The transports (fsspec's async
filesystems, obstore) only say how one request starts: ``start(path, request)`` gives an
awaitable of its body.

Each request that fails transiently is retried on its own; at most fsspec's
``nofiles_gather_batch_size`` requests are in flight at once; the cyclic garbage collector is
held off while they go out (``gcpause``); a reader that gives up (``stop``) cancels the rest.
Requests are futures with a callback each, not a coroutine each: obstore's futures need no
task around them, and a plane is hundreds of requests. The answers that land in one turn of
the loop are handed over together: one wake-up of the reader per turn, not per answer (a wake
per answer made the reader's thread fight the loop's for the GIL 256 times a plane); the last
answer goes at once, with its turn's others (the read ends with its decode).
"""

from __future__ import annotations

import asyncio
import queue
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence

import fsspec
import fsspec.asyn

from . import gcpause
from .errors import StoreError
from .store_faults import plain, retry_delay
from .store_request import ByteRequest

_POLL_SECONDS = 0.05  # how often a waiting stream asks whether its reader gave up
_END = object()  # the last item of the queue

#: how one request starts, on the loop's thread: an awaitable of its body
Start = Callable[[str, ByteRequest], Awaitable]


def _in_flight_limit() -> int:
    """Requests one stream keeps in flight at once: fsspec's own setting for many small
    requests (``nofiles_gather_batch_size``, 1280 by default)."""
    return int(fsspec.config.conf.get("nofiles_gather_batch_size", 1280))


def fsspec_start(fs: fsspec.AbstractFileSystem) -> Start:
    """How an fsspec async filesystem starts one request."""

    def start(path: str, req: ByteRequest) -> Awaitable:
        return fs._cat_file(path, start=req.start, end=req.end)

    return start


class _Batch:
    """One stream's requests on the loop: launched up to the in-flight limit, each answer (or
    the exception of its last attempt) put on ``arrived``; runs on the loop's thread only."""

    def __init__(self, loop, requests, full_path, start, arrived: queue.SimpleQueue):
        self.loop, self.requests, self.full_path, self.start = loop, requests, full_path, start
        self.arrived = arrived
        self.landed: list[tuple[int, object]] = []  # answers of this turn, not handed over yet
        self.waiting: deque[tuple[int, str, int]] = deque()  # (index, path, attempt)
        self.in_flight: set[asyncio.Future] = set()
        self.retrying: set[asyncio.TimerHandle] = set()
        self.left = len(requests)
        self.limit = _in_flight_limit()
        self.cancelled = False
        self.ended = False  # _END was put

    def begin(self) -> None:
        gcpause.hold()  # released once every request had its first turn (sent)
        try:
            for i, req in enumerate(self.requests):
                try:
                    self.waiting.append((i, self.full_path(req.key), 0))
                except StoreError as exc:
                    self._answer(i, exc)
            self._launch()
        finally:
            self.loop.call_soon(gcpause.release)

    def _launch(self) -> None:
        while self.waiting and len(self.in_flight) < self.limit and not self.cancelled:
            i, path, attempt = self.waiting.popleft()
            try:
                started = self.start(path, self.requests[i])
                # obstore's futures as they are; fsspec's coroutines become tasks
                future = (
                    started
                    if isinstance(started, asyncio.Future)
                    else asyncio.ensure_future(started)
                )
            except Exception as exc:  # noqa: BLE001 - sorted out by the store
                self._failed(i, path, attempt, plain(exc))
                continue
            self.in_flight.add(future)
            future.add_done_callback(
                lambda f, i=i, path=path, attempt=attempt: self._done(f, i, path, attempt)
            )

    def _done(self, future: asyncio.Future, i: int, path: str, attempt: int) -> None:
        self.in_flight.discard(future)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is None:
            self._answer(i, future.result())
        else:
            self._failed(i, path, attempt, plain(exc))
        self._launch()

    def _failed(self, i: int, path: str, attempt: int, exc: BaseException) -> None:
        delay = retry_delay(self.requests[i].key, exc, attempt)
        if delay is None or self.cancelled:
            self._answer(i, exc)
            return
        handle: asyncio.TimerHandle

        def again() -> None:
            self.retrying.discard(handle)
            self.waiting.append((i, path, attempt + 1))
            self._launch()

        handle = self.loop.call_later(delay, again)
        self.retrying.add(handle)

    def _answer(self, i: int, result: object) -> None:
        self.landed.append((i, result))
        self.left -= 1
        if self.left == 0:  # the last: at once, with the turn's others (its decode ends the read)
            self._hand_over()
        elif len(self.landed) == 1:  # the first of this turn: hand over once the turn is done
            self.loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        landed, self.landed = self.landed, []
        if landed:  # (none: the last answer handed this turn's over already)
            self.arrived.put(landed)
        if self.left == 0 and not self.ended:
            self.ended = True
            self.arrived.put(_END)

    def cancel(self) -> None:
        self.cancelled = True
        self.waiting.clear()
        for handle in self.retrying:
            handle.cancel()
        for future in list(self.in_flight):
            future.cancel()


def arrivals(
    loop: asyncio.AbstractEventLoop | None,
    start: Start,
    url: str,
    requests: Sequence[ByteRequest],
    full_path: Callable[[str], str],
    stop: Callable[[], bool] | None,
) -> Iterator[list[tuple[int, object]]]:
    """Raw results (bytes or the exception of the last attempt) of every request to the store
    at ``url`` (``full_path(key)``: a key's path for ``start``, or a StoreError refusing it),
    started on ``loop`` (None: fsspec's), yielded in bursts of ``(index, result)`` as they
    land."""
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    left = set(range(len(requests)))
    try:
        loop = loop or fsspec.asyn.get_loop()
        batch = _Batch(loop, requests, full_path, start, arrived)
        loop.call_soon_threadsafe(batch.begin)
    except Exception as exc:  # noqa: BLE001 - e.g. a filesystem used across fork()
        yield [(i, exc) for i in sorted(left)]
        return
    try:
        while left:
            try:
                item = arrived.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if stop is not None and stop():
                    return
                if not loop.is_running():  # its thread died: nothing more will come
                    break
                continue
            burst = []
            while item is not _END:
                burst += item
                try:
                    item = arrived.get_nowait()
                except queue.Empty:
                    break
            left.difference_update(i for i, _ in burst)
            if burst:
                yield burst
            if item is _END:
                break
            if stop is not None and stop():
                return
    finally:
        if left and loop.is_running():
            loop.call_soon_threadsafe(batch.cancel)
    if left:  # the loop gave up on the batch: never report those objects as absent
        yield [
            (
                i,
                StoreError(
                    f"cannot read {requests[i].key!r} from {url}: the request was dropped",
                    path=url,
                    store_url=url,
                    key=requests[i].key,
                ),
            )
            for i in sorted(left)
        ]
