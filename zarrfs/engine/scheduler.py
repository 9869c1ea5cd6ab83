"""The one place for concurrency (STYLE 4): two lazily created, fork-safe priority pools.

* ``decode`` work runs on one thread per CPU (numcodecs releases the GIL while it
  decompresses), each kept on its own CPU, lowest priority number first, FIFO within a
  priority.
* ``io`` work (a whole background read: planning, waiting on fsspec's event loop) runs on a
  separate, larger pool so that waiting on the network never starves decoding.

A :class:`ReadFuture` is what :meth:`Array.submit` returns: cancellable, with ``out`` filled in
place as chunks land. After ``fork()`` the child starts with fresh, empty pools (the mount
daemonizes; threads do not survive a fork).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future

from .errors import ReadCancelled

PRIORITY_VISIBLE = 0
PRIORITY_PREFETCH = 10


class PriorityPool:
    """A fixed set of daemon threads taking ``(priority, seq, fn)`` from one heap."""

    def __init__(self, workers: int, name: str, pinned: bool = False):
        self._workers = workers
        self._name = name
        self._pinned = pinned
        self._heap: list = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[], object], priority: int = PRIORITY_VISIBLE) -> Future:
        fut: Future = Future()
        with self._cond:
            if not self._threads:
                self._start()
            heapq.heappush(self._heap, (priority, next(self._seq), fn, fut))
            self._cond.notify()
        return fut

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
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                _, _, fn, fut = heapq.heappop(self._heap)
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                fut.set_exception(exc)


_lock = threading.Lock()
_pools: dict[str, PriorityPool] = {}


def _pool(name: str) -> PriorityPool:
    with _lock:
        pool = _pools.get(name)
        if pool is None:
            cpus = decode_workers()
            workers = cpus if name == "decode" else max(8, 2 * cpus)
            pool = _pools[name] = PriorityPool(workers, name, pinned=name == "decode")
        return pool


def decode_workers() -> int:
    """One decode worker per CPU this process may run on."""
    return len(_cpus()) or os.cpu_count() or 2


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


def _pin(cpu: int) -> None:
    """Keep the calling thread on one CPU. Decode workers each get their own: left to the
    kernel, a burst of reads after an idle spell often ran every worker on the CPU of the
    thread that woke them, one after the other (in a VM: a plane of 16 chunks of 512 KiB in
    9 ms on one core instead of 5.2 on two), and the kernel did not spread them out within
    the few milliseconds a read lasts."""
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError):  # not Linux, or a CPU taken away since: stay unpinned
        pass


def run_decode(fn: Callable[[], object], priority: int = PRIORITY_VISIBLE) -> Future:
    return _pool("decode").submit(fn, priority)


def run_io(fn: Callable[[], object], priority: int = PRIORITY_VISIBLE) -> Future:
    return _pool("io").submit(fn, priority)


def run_here(fn: Callable[[], object]) -> Future:
    """Run ``fn`` on the calling thread; its outcome as a finished future, like the pools'.
    For work too small to be worth handing to a worker and waiting for it to wake."""
    future: Future = Future()
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - the caller reads it from the future
        future.set_exception(exc)
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
    global _lock, inflight, _cpu_list, _tokens, _tokens_lock, _all_cancelled
    _lock = threading.Lock()
    _cpu_list = None
    _pools.clear()
    inflight = InFlight()
    _tokens, _tokens_lock, _all_cancelled = weakref.WeakSet(), threading.Lock(), False


os.register_at_fork(after_in_child=_after_fork_in_child)


class CancelToken:
    """Shared by every task of one read; checked before each fetch and decode."""

    def __init__(self) -> None:
        self._event = threading.Event()
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


class Slot:
    """The pending result of one chunk that some read is fetching and decoding right now.
    The event exists only once a second read waits (most chunks never have a waiter)."""

    __slots__ = ("event", "value")

    def __init__(self) -> None:
        self.event: threading.Event | None = None
        self.value: object = None

    def wait(self) -> object:
        self.event.wait()  # type: ignore[union-attr] - set by claim() for every waiter
        return self.value


class InFlight:
    """Chunks being fetched or decoded, so that concurrent reads of one chunk (a reader and its
    prefetch, two viewers of one plane) fetch and decode it once; the others wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[object, Slot] = {}

    def claim(self, keys: list) -> tuple[list[int], list[tuple[int, Slot]]]:
        """Indices of the keys this caller now owns, and slots of those others are doing."""
        owned, waited = [], []
        with self._lock:
            slots = self._slots
            for i, key in enumerate(keys):
                slot = slots.get(key)
                if slot is None:
                    slots[key] = Slot()
                    owned.append(i)
                else:
                    if slot.event is None:
                        slot.event = threading.Event()
                    waited.append((i, slot))
        return owned, waited

    def publish(self, key, value, share: Callable[[object], object] = lambda v: v) -> None:
        """Hand an owned key's result (a chunk, a marker or an exception) to its waiters.
        ``share`` makes a value safe to hand over (a copy of a reusable buffer)."""
        with self._lock:
            slot = self._slots.pop(key, None)
        if slot is None or slot.event is None:
            return
        slot.value = share(value)
        slot.event.set()


inflight = InFlight()
