"""The one place for concurrency (STYLE 4): two lazily created, fork-safe priority pools.

* ``decode`` work runs on one thread per CPU the process may use (numcodecs releases the GIL
  while it decompresses), lowest priority number first, FIFO within a priority.
* ``io`` work (a whole background read: planning, waiting on fsspec's event loop) runs on a
  separate, larger pool so that waiting on the network never starves decoding.

Sizes are configuration: :func:`set_threads` or ``ZARRFS_DECODE_THREADS`` /
``ZARRFS_IO_THREADS``; by default the decode pool has one worker per CPU the process may use:
its affinity mask, capped by its cgroup's CPU quota (a container limited to 2 CPUs on a 64-CPU
host gets 2). Workers are kept on a CPU each only when the program asks (``pin=True``, as the
mount's daemon does): a library does not pin its user's threads.

A :class:`ReadFuture` is what :meth:`Array.submit` returns: cancellable, with ``out`` filled in
place as chunks land. After ``fork()`` the child starts with fresh, empty pools (the mount
daemonizes; threads do not survive a fork).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from .errors import ReadCancelled

log = logging.getLogger(__name__)

PRIORITY_VISIBLE = 0
PRIORITY_PREFETCH = 10


class Lanes:
    """How many of one read's tasks may run at once (:func:`decode_parallelism`): the rest
    wait in the queue, not on a thread, so a bigger pool serves more reads at once and never
    one read on more threads than its work wants (a read of many 4 MiB tasks took every
    worker of a 16-thread pool, and its threads queued for the GIL)."""

    __slots__ = ("limit", "running")

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.running = 0


class PriorityPool:
    """A fixed set of daemon threads taking ``(priority, seq, fn)`` from one heap, each task
    within its read's :class:`Lanes` (when it has them)."""

    def __init__(self, workers: int, name: str, pinned: bool = False):
        self._workers = workers
        self._name = name
        self._pinned = pinned
        self._heap: list = []
        self._lock = threading.Lock()  # (the heap, the lanes, the idle workers)
        self._idle: list[threading.Lock] = []  # gates of waiting workers, the latest last
        self._seq = itertools.count()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(
        self,
        fn: Callable[[], object],
        priority: int = PRIORITY_VISIBLE,
        lanes: Lanes | None = None,
    ) -> Future:
        fut: Future = Future()
        with self._lock:
            if not self._threads:
                self._start()
            heapq.heappush(self._heap, (priority, next(self._seq), fn, fut, lanes))
            self._wake()
        return fut

    def help(self, futures) -> None:
        """Run on the calling thread the work of ``futures`` still queued, one item after the
        other, while none is more urgent than it (a prefetch's caller never gets ahead of visible
        work waiting for a worker) and its lanes allow: a caller about to wait for its work
        lends its CPU. It is awake already, where a sleeping worker may take milliseconds to be
        scheduled (on a small VM, a woken worker was often put on the CPU of the worker that
        woke it, and a plane of 16 chunks decoded on one CPU)."""
        wanted = {id(f) for f in futures}
        while wanted:
            with self._lock:
                if not self._heap:
                    return
                first = self._heap[0][0]  # the most urgent priority
                at = self._next(lambda e, first=first: id(e[3]) in wanted and e[0] <= first)
                if at is None:  # none left, more urgent work waits, or no lane: the workers'
                    return
                entry = self._take(at)
            wanted.discard(id(entry[3]))
            self._run_entry(entry)

    def close(self) -> None:
        """Let the workers end once the work already queued is done."""
        with self._lock:
            self._closed = True
            while self._idle:
                self._idle.pop().release()

    def _next(self, wanted: Callable[[tuple], bool] | None = None) -> int | None:
        """Where in the heap the most urgent entry is that may run now (its lanes not full,
        and ``wanted``); None if none (under the lock)."""
        heap = self._heap
        if (
            heap
            and wanted is None
            and (heap[0][4] is None or heap[0][4].running < heap[0][4].limit)
        ):
            return 0  # (the common case: the heap's first)
        best = None
        for i, e in enumerate(heap):
            lanes = e[4]
            if lanes is not None and lanes.running >= lanes.limit:
                continue
            if wanted is not None and not wanted(e):
                continue
            if best is None or e[:2] < heap[best][:2]:
                best = i
        return best

    def _take(self, at: int) -> tuple:
        """Take the heap's entry at ``at`` (under the lock), its lane now running."""
        heap = self._heap
        if at == 0:
            entry = heapq.heappop(heap)
        else:
            entry = heap[at]
            last = heap.pop()
            if at < len(heap):
                heap[at] = last
                heapq.heapify(heap)
        if entry[4] is not None:
            entry[4].running += 1
        return entry

    def _run_entry(self, entry: tuple) -> None:
        """Run a taken entry; its lane is free again after (a worker may take the next)."""
        _, _, fn, fut, lanes = entry
        try:
            _run_into(fn, fut)
        finally:
            if lanes is not None:
                with self._lock:
                    lanes.running -= 1
                    self._wake()

    def _start(self) -> None:
        cpus = _cpus() if self._pinned else []
        for i in range(self._workers):
            cpu = cpus[i % len(cpus)] if len(cpus) > 1 else None
            t = threading.Thread(
                target=self._run, args=(cpu,), name=f"zarrfs-{self._name}-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)

    def _run(self, cpu: int | None) -> None:
        if cpu is not None:
            _pin(cpu)
        gate = threading.Lock()
        gate.acquire()
        while True:
            with self._lock:
                at = self._next()
                if at is None:
                    if self._closed and not self._heap:
                        return
                    self._idle.append(gate)
                else:
                    entry = self._take(at)
            if at is None:
                gate.acquire()  # until :meth:`_wake` or :meth:`close` lets it go
                continue
            self._run_entry(entry)
            del entry  # an idle worker keeps no finished task alive (its closure, its output)

    def _wake(self) -> None:
        """Wake one waiting worker if an entry may run now (under the lock): the one that
        waited least (last in, first out), whose stack, caches and allocator arena are the
        warmest, so a big pool serving a read of two lanes runs it on the same two threads
        as a pool of two does (woken in turn, 16 workers read a 256 x 256 window of 512 KiB
        chunks 1.1-1.2x as slowly). Pinned workers are woken in turn, so one read's tasks
        do not land on workers kept on one CPU."""
        if self._idle and self._next() is not None:
            self._idle.pop(0 if self._pinned else -1).release()


def _run_into(fn: Callable[[], object], fut: Future) -> None:
    """Run ``fn`` here, its outcome into ``fut`` (unless ``fut`` was cancelled meanwhile)."""
    if not fut.set_running_or_notify_cancel():
        return
    try:
        fut.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
        fut.set_exception(exc)


@dataclass(frozen=True)
class Threads:
    """The pools' settings: workers per pool (None: sized from the CPUs), pinning."""

    decode: int | None = None
    io: int | None = None
    pin: bool = False


def _env_threads() -> Threads:
    def number(name: str) -> int | None:
        text = os.environ.get(name)
        if not text:
            return None
        try:
            value = int(text)
            if value < 1:
                raise ValueError("not a positive number")
        except ValueError as exc:
            log.warning("%s=%r: %s; sized from the CPUs instead", name, text, exc)
            return None
        return value

    return Threads(number("ZARRFS_DECODE_THREADS"), number("ZARRFS_IO_THREADS"))


_lock = threading.Lock()
_pools: dict[str, PriorityPool] = {}
_threads = _env_threads()


def set_threads(
    decode: int | None = None, io: int | None = None, *, pin: bool | None = None
) -> None:
    """Set the decode and I/O pool sizes (None keeps the current setting; the environment's
    ``ZARRFS_DECODE_THREADS``/``ZARRFS_IO_THREADS`` or the CPU count by default) and whether
    decode workers are kept on a CPU each. Pools already running finish their queued work
    with their old workers; new work goes to new pools."""
    global _threads
    for name, value in (("decode", decode), ("io", io)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} threads must be a positive integer, not {value!r}")
    with _lock:
        _threads = Threads(
            decode or _threads.decode,
            io or _threads.io,
            _threads.pin if pin is None else pin,
        )
        old = list(_pools.values())
        _pools.clear()
    for pool in old:
        pool.close()


def _pool(name: str) -> PriorityPool:
    with _lock:
        pool = _pools.get(name)
        if pool is None:
            if name == "decode":
                pool = PriorityPool(decode_workers(), name, pinned=_threads.pin)
            else:
                pool = PriorityPool(_threads.io or max(8, 2 * decode_workers()), name)
            _pools[name] = pool
        return pool


#: decoded bytes of a chunk whose codec runs (without the GIL) about as long as the Python
#: work around it (with the GIL: locating, fetching, placing, settling; 20-40 µs a chunk)
GIL_BYTES = 32 << 10
#: for a chunk the compiled loop (:mod:`.chunkloop`) reads, decodes and places with the GIL
#: let go for a whole batch, the bytes per thread that keep the GIL at most half taken: the
#: Python left a chunk (the batch's lists, outcomes and settling) is 5-6 µs of a 32 KiB
#: chunk's 60 (14 of a 512 KiB chunk's 440), a tenth of a thread's time, so
#: ``1 + chunk_nbytes / 8 KiB`` threads (5 for 32 KiB chunks) hold it about half the time
LOOP_GIL_BYTES = 8 << 10


def decode_parallelism(chunk_nbytes: int, *, compiled: bool = False) -> int:
    """How many threads one read decodes its chunks on (its tasks, the caller helping): at
    most the decode workers and the CPUs the process may use, and fewer where chunks are
    small. A thread decoding a small chunk in Python holds the GIL about as long as the codec
    runs without it, so threads past ``1 + chunk_nbytes / GIL_BYTES`` only queue for the GIL
    (on 16 CPUs a plane of 32 KiB chunks took twice as long on 16 threads as on one);
    ``compiled``: the chunks go through the compiled loop, whose threads hold the GIL far
    less (``1 + chunk_nbytes / LOOP_GIL_BYTES``: a plane of 32 KiB chunks on 5 threads, not
    2, where the CPUs are there). More workers than that serve other reads at the same time,
    and sync stores that block."""
    per_thread = LOOP_GIL_BYTES if compiled else GIL_BYTES
    return max(1, min(decode_workers(), usable_cpus(), 1 + chunk_nbytes // per_thread))


_usable_cpus: int | None = None


def usable_cpus() -> int:
    """The CPUs this process may use (affinity and cgroup quota); asked once (the quota is a
    file to read: once a read's burst, it cost a read of an object store's plane 1-2 ms a
    burst on a busy machine), again after fork()."""
    global _usable_cpus
    if _usable_cpus is None:
        quota = _cpu_quota()
        cpus = len(_cpus()) or os.cpu_count() or 1
        _usable_cpus = max(1, min(cpus, quota)) if quota else cpus
    return _usable_cpus


def decode_workers() -> int:
    """Decode workers: as set, else one per CPU this process may use (affinity and quota)."""
    if _threads.decode:
        return _threads.decode
    return usable_cpus()


_cpu_list: list[int] | None = None


def _cpus() -> list[int]:
    """The CPUs this process may run on, as its main thread's affinity says (a thread of the
    program may be confined to fewer); asked once. Empty where the OS does not say."""
    global _cpu_list
    if _cpu_list is None:
        try:
            _cpu_list = sorted(os.sched_getaffinity(os.getpid()))
        except (AttributeError, OSError):  # not Linux
            _cpu_list = []
    return _cpu_list


#: where a cgroup states a CPU quota: v2 ("max 100000" or "200000 100000"), v1 (two files)
_CGROUP_V2 = "/sys/fs/cgroup/cpu.max"
_CGROUP_V1 = ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def _cpu_quota() -> int | None:
    """CPUs the process's cgroup lets it use, rounded up; None where there is no quota."""
    try:
        with open(_CGROUP_V2) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        try:
            quota, period = (Path(p).read_text().strip() for p in _CGROUP_V1)
        except (OSError, ValueError):
            return None
    if quota in ("max", "-1"):
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def _pin(cpu: int) -> None:
    """Keep the calling thread on one CPU (only when the program asked: ``pin=True``). Left to
    the kernel, a burst of reads after an idle spell often ran every worker on the CPU of the
    thread that woke them, one after the other (in a VM: a plane of 16 chunks of 512 KiB in
    9 ms on one core instead of 5.2 on two)."""
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError):  # not Linux, or a CPU taken away since: stay unpinned
        pass


def run_decode(
    fn: Callable[[], object], priority: int = PRIORITY_VISIBLE, lanes: Lanes | None = None
) -> Future:
    """``fn`` on the decode pool; ``lanes``: its read's, shared by the read's tasks."""
    return _pool("decode").submit(fn, priority, lanes)


def help_decode(futures) -> None:
    """The calling thread runs the decode work of ``futures`` not yet started
    (:meth:`PriorityPool.help`); then the caller waits for the rest as usual."""
    with _lock:
        pool = _pools.get("decode")
    if pool is not None:
        pool.help(futures)


def run_io(fn: Callable[[], object], priority: int = PRIORITY_VISIBLE) -> Future:
    return _pool("io").submit(fn, priority)


def run_here(fn: Callable[[], object]) -> Future:
    """Run ``fn`` on the calling thread; its outcome as a finished future, like the pools'.
    For work too small to be worth handing to a worker and waiting for it to wake."""
    future: Future = Future()
    _run_into(fn, future)
    return future


_tokens: weakref.WeakSet[CancelToken] = weakref.WeakSet()  # of the reads under way
_tokens_lock = threading.Lock()
_all_cancelled = False


def cancel_all() -> None:
    """Cancel every read under way in this process, and every read started from now on (they
    raise ReadCancelled, without waiting for the network): for a program that is shutting down,
    so that no thread stays waiting for a slow or stalled store. Cannot be undone."""
    global _all_cancelled
    with _tokens_lock:
        _all_cancelled = True
        tokens = list(_tokens)
        _tokens.clear()
    for token in tokens:
        token.cancel()


def _after_fork_in_child() -> None:
    global _lock, _cpu_list, _usable_cpus, _tokens, _tokens_lock, _all_cancelled
    _lock = threading.Lock()
    _cpu_list = _usable_cpus = None
    _pools.clear()
    _tokens, _tokens_lock, _all_cancelled = weakref.WeakSet(), threading.Lock(), False


os.register_at_fork(after_in_child=_after_fork_in_child)


class CancelToken:
    """Shared by every task of one read; checked before each fetch and decode."""

    def __init__(self) -> None:
        self._event = threading.Event()
        #: ``cancelled`` as a function, for a loop to keep at hand
        self.is_set = self._event.is_set
        with _tokens_lock:
            if _all_cancelled:
                self._event.set()
            else:
                _tokens.add(self)

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self, path: str | None = None) -> None:
        if self._event.is_set():
            raise ReadCancelled(path=path)


class ReadFuture:
    """A background region read. ``out`` is the output array, filled in place as chunks land."""

    def __init__(self, out, token: CancelToken, inner: Future, path: str):
        self.out = out
        self.path = path
        self._token = token
        self._inner = inner

    def cancel(self) -> bool:
        """Stop fetching and decoding what has not started; ``result()`` then raises
        ReadCancelled. Returns False when the read had already finished."""
        if self._inner.done():
            return False
        self._token.cancel()
        self._inner.cancel()
        return True

    def cancelled(self) -> bool:
        return self._token.cancelled

    def done(self) -> bool:
        return self._inner.done()

    def result(self, timeout: float | None = None):
        if self._inner.cancelled():
            raise ReadCancelled(path=self.path)
        return self._inner.result(timeout)

    def exception(self, timeout: float | None = None):
        if self._inner.cancelled():
            return ReadCancelled(path=self.path)
        return self._inner.exception(timeout)

    def add_done_callback(self, fn: Callable[[ReadFuture], object]) -> None:
        self._inner.add_done_callback(lambda _f: fn(self))
