"""Run blocking work (opening stores, listing groups, sizing arrays) off the GUI thread.

A small thread pool does the work; the result comes back to the GUI thread through one relay
object that lives as long as the process (``post_to_gui``), so a worker finishing after its
window was closed and deleted never touches a deleted QObject. Callbacks that raise are
reported, never propagated into Qt (an exception escaping a slot aborts under PySide6).

The workers are daemon threads: a task blocked on a stalled store when the window closes is
abandoned, not joined at interpreter exit (``ThreadPoolExecutor`` joins its workers, so one
stalled ``open`` kept the process alive for the store's whole timeout).
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import functools
import itertools
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from . import qt_compat

logger = logging.getLogger(__name__)

#: seconds the relay runs posted callbacks before it lets the window's own events through
_SLICE = 0.02


class _Relay(QObject):
    """Runs callables posted from any thread on the GUI thread, in order.

    A wake-up starts a zero-interval timer, and the timer drains: Qt runs timers once the
    events posted before are done (a paint and the events it posts in turn), so what workers
    hand back (a picture, a batch of chunks) runs in an event-loop pass of its own, not
    chained to the paint that was under way when it came (one long stall of the window)."""

    wake = Signal()

    def __init__(self):
        super().__init__()
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._drain)
        self.wake.connect(self._soon, Qt.ConnectionType.QueuedConnection)

    def _soon(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def post(self, fn: Callable, args: tuple) -> None:
        with self._lock:
            was_empty = not self._queue
            self._queue.append((fn, args))
        if was_empty:
            self.wake.emit()

    def _drain(self) -> None:
        """Run what was posted, for at most ``_SLICE`` seconds: then the rest waits behind the
        events that came meanwhile (paints, input), so a burst of tens of thousands of chunk
        events never freezes the window."""
        deadline = time.monotonic() + _SLICE
        while True:
            with self._lock:
                if not self._queue:
                    return
                if time.monotonic() > deadline:
                    self._soon()  # after the events already waiting
                    return
                fn, args = self._queue.popleft()
            try:
                fn(*args)
            except RuntimeError as exc:  # its widget was deleted meanwhile: nothing to update
                if "already deleted" not in str(exc):
                    logger.exception("callback posted to the GUI thread failed")
            except Exception:
                logger.exception("callback posted to the GUI thread failed")


_relay: _Relay | None = None
_exiting = False


def _stop_posting() -> None:
    """At interpreter exit: a read that ends now (abandoned, or cancelled) must not signal Qt
    objects that finalization is about to delete (a crash on the way out)."""
    global _exiting
    _exiting = True


atexit.register(_stop_posting)


def init_relay() -> None:
    """Create the relay; must run on the GUI thread (done by every viewer QObject that posts)."""
    global _relay
    if _relay is None:
        _relay = _Relay()


def post_to_gui(fn: Callable, *args) -> None:
    """Call ``fn(*args)`` on the GUI thread soon (safe from any thread)."""
    if _exiting:
        return
    if _relay is None:
        raise RuntimeError("zarrfs.viewer.tasks.init_relay() was not called on the GUI thread")
    _relay.post(fn, args)


# Worker threads refer to GUI objects only by a number: if a worker held the last reference to
# a QObject, its destructor would run on the worker thread, leaving its timers registered with
# the GUI thread's event loop, pointing at freed memory (a crash on the next timer tick).
_handles: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_next_handle = itertools.count(1)


def gui_handle(obj: QObject) -> int:
    """A number that stands for ``obj`` (GUI thread only; ``obj`` is not kept alive by it)."""
    handle = next(_next_handle)
    _handles[handle] = obj
    return handle


def post_to_handle(handle: int, method: str, *args) -> None:
    """From any thread: call ``obj.method(*args)`` on the GUI thread if ``obj`` still exists."""
    post_to_gui(_call_handle, handle, method, args)


def _call_handle(handle: int, method: str, args: tuple) -> None:
    obj = _handles.get(handle)
    if obj is not None:
        getattr(obj, method)(*args)


class DaemonPool:
    """``submit(fn) -> Future`` on a few daemon threads; ``shutdown()`` cancels what has not
    started and lets the threads end once their current task returns (nobody waits for it)."""

    def __init__(self, workers: int, name: str = "viewer"):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = workers
        self.closed = False
        for i in range(workers):
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True).start()

    def submit(self, fn: Callable[[], object]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((future, fn))
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            _run_into(*item)
            del item  # an idle worker keeps no finished task alive (its closure, its result)

    def shutdown(self) -> None:
        self.closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in range(self._workers):
            self._queue.put(None)


def _run_into(future: concurrent.futures.Future, fn: Callable[[], object]) -> None:
    """Run ``fn`` here, its outcome into ``future`` (unless it was cancelled meanwhile)."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn()
    except BaseException as exc:  # handed to the caller through the future
        future.set_exception(exc)
    else:
        future.set_result(result)


class Background(QObject):
    """``run(fn, on_done, on_error)``: call ``fn()`` in a worker, then a callback in the GUI thread."""

    busy_changed = Signal(int)

    def __init__(self, workers: int = 4, parent: QObject | None = None):
        super().__init__(parent)
        qt_compat.install(self)  # see qt_compat: without it PySide6 6.12 aborts on Python 3.11
        init_relay()
        self._pool = DaemonPool(workers)
        self._pending = 0
        self._closed = False
        self._handle = gui_handle(self)
        self._tickets = itertools.count()
        self._callbacks: dict[int, tuple] = {}

    @property
    def pending(self) -> int:
        return self._pending

    def run(
        self,
        fn: Callable[[], object],
        on_done: Callable[[object], None],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """``fn`` runs in a worker (it must not hold Qt objects); callbacks on the GUI thread."""
        if self._closed:
            return
        ticket = next(self._tickets)
        self._callbacks[ticket] = (on_done, on_error)
        self._pending += 1
        self.busy_changed.emit(self._pending)
        future = self._pool.submit(fn)
        future.add_done_callback(functools.partial(_worker_done, self._pool, self._handle, ticket))

    def _deliver(self, ticket: int, result, error) -> None:
        on_done, on_error = self._callbacks.pop(ticket, (None, None))
        if self._closed or on_done is None:
            return
        self._pending -= 1
        self.busy_changed.emit(self._pending)
        try:
            if error is not None:
                if on_error is not None:
                    on_error(error)
                else:
                    logger.error("background task failed", exc_info=error)
            else:
                on_done(result)
        except Exception:
            logger.exception("callback of a background task failed")

    def close(self) -> None:
        self._closed = True
        self._callbacks.clear()
        self._pool.shutdown()


def submit_read(array, selection, handle: int, method: str, *args):
    """A cancellable engine read of ``array[selection]``; when it ends, ``obj.method(*args,
    future)`` runs on the GUI thread (``obj`` is ``handle``'s). Unlike a blocking read in
    ``Background``, the caller can ``cancel()`` it when the user moves on, so a stalled store
    never holds a worker that other nodes need."""
    import zarrfs.engine as engine

    future = array.submit(selection, priority=engine.PRIORITY_VISIBLE)
    future.add_done_callback(functools.partial(_read_done, handle, method, args))
    return future


def _read_done(handle: int, method: str, args: tuple, future) -> None:
    post_to_handle(handle, method, *args, future)


def _worker_done(
    pool: DaemonPool, handle: int, ticket: int, future: concurrent.futures.Future
) -> None:
    """Runs on the worker: hand the outcome to the GUI thread, holding no Qt object."""
    if pool.closed:  # its window is gone: nobody is waiting for this
        return
    try:
        error = future.exception()
        result = None if error else future.result()
    except concurrent.futures.CancelledError as exc:
        result, error = None, exc
    post_to_handle(handle, "_deliver", ticket, result, error)
