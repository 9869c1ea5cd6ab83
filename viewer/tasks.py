"""Run blocking work (opening stores, listing groups, sizing arrays) off the GUI thread.

A small thread pool does the work; the result comes back to the GUI thread through one relay
object that lives as long as the process (``post_to_gui``), so a worker finishing after its
window was closed and deleted never touches a deleted QObject. Callbacks that raise are
reported, never propagated into Qt (an exception escaping a slot aborts under PySide6).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import itertools
import logging
import threading
import weakref
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal

from . import qt_compat

logger = logging.getLogger(__name__)


class _Relay(QObject):
    """Runs callables posted from any thread on the GUI thread, in order."""

    wake = Signal()

    def __init__(self):
        super().__init__()
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self.wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable, args: tuple) -> None:
        with self._lock:
            was_empty = not self._queue
            self._queue.append((fn, args))
        if was_empty:
            self.wake.emit()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
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


def init_relay() -> None:
    """Create the relay; must run on the GUI thread (done by every viewer QObject that posts)."""
    global _relay
    if _relay is None:
        _relay = _Relay()


def post_to_gui(fn: Callable, *args) -> None:
    """Call ``fn(*args)`` on the GUI thread soon (safe from any thread)."""
    if _relay is None:
        raise RuntimeError("viewer.tasks.init_relay() was not called on the GUI thread")
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


class Background(QObject):
    """``run(fn, on_done, on_error)``: call ``fn()`` in a worker, then a callback in the GUI thread."""

    busy_changed = Signal(int)

    def __init__(self, workers: int = 4, parent: QObject | None = None):
        super().__init__(parent)
        qt_compat.install(self)  # see qt_compat: without it PySide6 6.12 aborts on Python 3.11
        init_relay()
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="viewer")
        self._pending = 0
        self._closed = False
        self._handle = gui_handle(self)
        self._tickets = itertools.count()
        self._callbacks: dict[int, tuple] = {}

    @property
    def pending(self) -> int:
        return self._pending

    def run(self, fn: Callable[[], object], on_done: Callable[[object], None],
            on_error: Callable[[BaseException], None] | None = None) -> None:
        """``fn`` runs in a worker (it must not hold Qt objects); callbacks on the GUI thread."""
        if self._closed:
            return
        ticket = next(self._tickets)
        self._callbacks[ticket] = (on_done, on_error)
        self._pending += 1
        self.busy_changed.emit(self._pending)
        future = self._pool.submit(fn)
        future.add_done_callback(functools.partial(_worker_done, self._handle, ticket))

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
        self._pool.shutdown(wait=False, cancel_futures=True)


def _worker_done(handle: int, ticket: int, future: concurrent.futures.Future) -> None:
    """Runs on the worker: hand the outcome to the GUI thread, holding no Qt object."""
    try:
        error = future.exception()
        result = None if error else future.result()
    except concurrent.futures.CancelledError as exc:
        result, error = None, exc
    post_to_handle(handle, "_deliver", ticket, result, error)
