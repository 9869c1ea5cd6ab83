"""Every request of a read in flight at once, answers handed over as they land: the one place
where the engine's I/O is concurrent (STYLE 4), behind the store's synchronous
:meth:`~zarrfs.engine.store.Store.stream`. The transports only say how one request starts:
``start(path, request)`` gives an awaitable of its body (fsspec's async filesystems,
obstore's futures), and obstore also ``get(path, request)``, a blocking call that waits
without the GIL.

Two ways to have them all in flight, one per size of read:

- *on the event loop* (fsspec's): futures with a callback each, not a coroutine each (obstore's
  futures need no task around them, and a plane is hundreds of requests). One thread starts
  them all, so hundreds leave within a round trip. The answers that land in one turn of the
  loop are handed over together: one wake-up of the reader per turn, not per answer (a wake
  per answer made the reader's thread fight the loop's for the GIL 256 times a plane); the
  last answer goes at once, with its turn's others (the read ends with its decode).
- *on request threads* (obstore's ``get``, reads of at most :data:`THREADED_REQUESTS`): each
  request waits on a thread of its own, and its body goes from there to the reader. Through
  the loop, each obstore answer takes a thread of obstore's runtime that takes the GIL and
  wakes the loop, whose thread takes the GIL again to hand it on: a 512 KiB body reached
  Python 4-5 ms after the server sent it, against 2.3-2.5 ms on a request thread (tensorstore
  0.9). But each thread takes the GIL once to start its request, one after the other: for
  hundreds of requests that costs more than a round trip, where the loop starts them at once.

Each request that fails transiently is retried on its own; at most fsspec's
``nofiles_gather_batch_size`` requests are in flight at once on the loop; the cyclic garbage
collector is held off while they go out (``gcpause``); a reader that gives up (``stop``)
cancels the rest (on request threads: those not yet sent; those on the wire finish there,
bounded by the transport's timeouts, and are dropped).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import queue
import threading
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

    def end(self, early: bool) -> None:
        """The reader is done with the stream; ``early``: before every answer came, which
        :meth:`cancel` (on the loop's thread, while it runs)."""
        if early and self.loop.is_running():
            self.loop.call_soon_threadsafe(self.cancel)


#: how a transport with a blocking call reads one request on the calling thread (waiting
#: without the GIL): its body
Get = Callable[[str, ByteRequest], object]

#: requests of a stream that go on request threads at most: each thread takes the GIL once
#: to send its request, one after the other, where the loop sends them all from one thread
#: (the first to the last request of a 256-chunk plane reached the server over 19-76 ms from
#: threads on a busy 2-CPU machine, more than a round trip; 7-13 ms from the loop)
THREADED_REQUESTS = 32
#: request threads kept at most; a thread idle this long ends
_MAX_THREADS = 256
_IDLE_SECONDS = 60.0


def on_threads(requests: Sequence[ByteRequest]) -> bool:
    """Whether a stream's requests may go on request threads: few enough that starting them
    one thread after the other costs less than a round trip, and none a suffix. (They do
    if a thread is free for each: :meth:`_RequestThreads.submit_all`.)"""
    return len(requests) <= THREADED_REQUESTS and all(
        r.start is None or r.start >= 0 for r in requests
    )


class _RequestThreads:
    """Daemon threads that each wait for one blocking request at a time, started as needed
    (up to :data:`_MAX_THREADS`; a read finding none free goes through the loop) and ended
    when idle.
    Daemons: a request abandoned by its reader never holds up the process's exit."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = self.idle = self.queued = 0

    def submit_all(self, jobs: Sequence[Callable[[], None]]) -> bool:
        """Hands each job to a thread of its own (idle, or started for it), or none of them
        (False) when there are not that many: a job never waits behind another stream's,
        which may be stalled on another server. Checked and counted under one lock: two
        streams never both count on the same free threads."""
        with self.lock:
            if len(jobs) > self.idle - self.queued + _MAX_THREADS - self.threads:
                return False
            spawns = 0
            for job in jobs:
                self.queued += 1
                self.jobs.put(job)
                if self.queued > self.idle + spawns:
                    spawns += 1
            self.threads += spawns
        for started in range(spawns):
            try:
                threading.Thread(target=self._work, name="zarrfs-request", daemon=True).start()
            except RuntimeError:  # no thread to be had (a process limit): the read fails
                with self.lock:
                    self.threads -= spawns - started
                raise
        return True

    def _work(self) -> None:
        try:
            while (job := self._take()) is not None:
                job()  # (never raises: a job puts its outcome on its stream's queue)
        finally:  # (its end counted however it comes)
            with self.lock:
                self.threads -= 1

    def _take(self) -> Callable[[], None] | None:
        """The next job, or None once idle for :data:`_IDLE_SECONDS` with none counting on
        this thread."""
        with self.lock:
            self.idle += 1
        while True:
            try:
                job = self.jobs.get(timeout=_IDLE_SECONDS)
                break
            except queue.Empty:
                with self.lock:
                    if self.queued == 0:  # no job counts on this thread
                        self.idle -= 1
                        return None
        with self.lock:
            self.idle -= 1
            self.queued -= 1
        return job


_threads = _RequestThreads()


def _new_threads() -> None:
    global _threads
    _threads = _RequestThreads()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_new_threads)


class _OnThreads:
    """One stream's requests, each a blocking ``get`` on a request thread that retries it
    on its own and puts its answer on ``arrived`` as it lands: the body goes from the
    thread that waited for it straight to the reader (no hop through an event loop, and
    with obstore no thread of its runtime taking the GIL to hand it over)."""

    def __init__(self, requests, full_path, get: Get, arrived: queue.SimpleQueue):
        self.requests, self.full_path, self.get = requests, full_path, get
        self.arrived = arrived
        self.lock = threading.Lock()
        self.left = len(requests)
        self.holds_collector = False
        self.unsent = 0  # requests whose thread has not called the transport yet
        self.cancelled = threading.Event()

    def begin(self) -> bool:
        """Hands each request to a request thread of its own; False, with nothing started
        or answered, when there are not that many free."""
        jobs, refused = [], []
        for i, req in enumerate(self.requests):
            try:
                jobs.append(functools.partial(self._run, i, self.full_path(req.key)))
            except StoreError as exc:
                refused.append((i, exc))
        self.unsent = len(jobs)
        try:  # (interrupted, e.g. by Ctrl-C: what started is dropped, the collector resumes)
            if jobs:  # the collector held off until every request went to the transport
                self.holds_collector = True  # (set first: an early release beats a leaked hold)
                gcpause.hold()
            if not _threads.submit_all(jobs):
                self._release_collector()
                return False
        except BaseException:
            self.end(early=True)
            raise
        for i, exc in refused:
            self._answer(i, exc)
        return True

    def _run(self, i: int, path: str) -> None:
        req = self.requests[i]
        for attempt in itertools.count():
            if self.cancelled.is_set():
                return
            if attempt == 0:
                with self.lock:
                    self.unsent -= 1
                    handed = self.unsent == 0
                if handed:  # every request is the transport's now: the collector back on
                    self._release_collector()
            try:
                result = self.get(path, req)
            # (a BaseException too, e.g. PyO3's PanicException: this request fails, as on
            # the loop, where the future holds it; the thread lives on)
            except BaseException as exc:  # noqa: BLE001 - sorted out by the store
                result = plain(exc)
                delay = retry_delay(req.key, result, attempt)
                if delay is not None and not self.cancelled.wait(delay):
                    continue
            self._answer(i, result)  # (cancelled while it waited to retry: its failure)
            return

    def _release_collector(self) -> None:
        with self.lock:
            held, self.holds_collector = self.holds_collector, False
        if held:
            gcpause.release()

    def _answer(self, i: int, result: object) -> None:
        with self.lock:  # (in order: a thread's answer is never put after another's _END)
            self.left -= 1
            self.arrived.put([(i, result)])
            if self.left == 0:
                self.arrived.put(_END)

    def end(self, early: bool) -> None:
        """The reader is done with the stream; ``early``: before every answer came. Requests
        not yet sent are then dropped and retries end; those on the wire finish on their
        threads (bounded by the transport's timeouts) and are dropped."""
        if early:
            self.cancelled.set()
        self._release_collector()


def arrivals(
    loop: asyncio.AbstractEventLoop | None,
    start: Start,
    url: str,
    requests: Sequence[ByteRequest],
    full_path: Callable[[str], str],
    stop: Callable[[], bool] | None,
    get: Get | None = None,
) -> Iterator[list[tuple[int, object]]]:
    """Raw results (bytes or the exception of the last attempt) of every request to the store
    at ``url`` (``full_path(key)``: a key's path for ``start``, or a StoreError refusing it),
    yielded in bursts of ``(index, result)`` as they land: each a blocking ``get`` on a
    request thread where the transport has one and the read is small
    (:func:`on_threads`), else started on ``loop`` (None: fsspec's)."""
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    batch: _Batch | _OnThreads | None = None
    alive: Callable[[], bool] = _always
    try:
        if get is not None and on_threads(requests):
            batch = _OnThreads(requests, full_path, get, arrived)
            if not batch.begin():  # no free thread for each: through the loop
                batch = None
        if batch is None:
            loop = loop or fsspec.asyn.get_loop()
            batch = _Batch(loop, requests, full_path, start, arrived)
            loop.call_soon_threadsafe(batch.begin)
            alive = loop.is_running
    except Exception as exc:  # noqa: BLE001 - e.g. a filesystem used across fork()
        if batch is not None:  # (what it started is dropped; the collector back on)
            batch.end(early=True)
        yield [(i, exc) for i in range(len(requests))]
        return
    yield from _taken(arrived, batch, alive, url, requests, stop)


def _taken(
    arrived: queue.SimpleQueue,
    batch: _Batch | _OnThreads,
    alive: Callable[[], bool],
    url: str,
    requests: Sequence[ByteRequest],
    stop: Callable[[], bool] | None,
) -> Iterator[list[tuple[int, object]]]:
    """The bursts of a batch as they are put on ``arrived``: everything there when the
    reader wakes goes over as one burst. ``stop`` polled while waiting; the batch cancelled
    when the reader stops early; requests a dead loop never answered (``alive()`` false)
    reported as dropped, never as absent."""
    left = set(range(len(requests)))
    try:
        while left:
            try:
                item = arrived.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if stop is not None and stop():
                    return
                if not alive():  # the loop's thread died: nothing more will come
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
        batch.end(early=bool(left))
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


def _always() -> bool:
    return True
