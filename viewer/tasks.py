"""Run blocking work (opening stores, listing groups, sizing arrays) off the GUI thread.

A small thread pool does the work; the result comes back to the GUI thread through a queued Qt
signal and is handed to a callback there. Callbacks that raise are reported, never propagated
into Qt (an exception escaping a slot would abort the application under PySide6).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

logger = logging.getLogger(__name__)


class Background(QObject):
    """``run(fn, on_done, on_error)``: call ``fn()`` in a worker, then a callback in the GUI thread."""

    _finished = Signal(object, object, object, object)  # on_done, on_error, result, error
    busy_changed = Signal(int)

    def __init__(self, workers: int = 4, parent: QObject | None = None):
        super().__init__(parent)
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="viewer")
        self._pending = 0
        self._closed = False
        self._finished.connect(self._deliver)

    @property
    def pending(self) -> int:
        return self._pending

    def run(self, fn: Callable[[], object], on_done: Callable[[object], None],
            on_error: Callable[[BaseException], None] | None = None) -> None:
        if self._closed:
            return
        self._pending += 1
        self.busy_changed.emit(self._pending)
        future = self._pool.submit(fn)
        future.add_done_callback(lambda f: self._from_worker(f, on_done, on_error))

    def _from_worker(self, future, on_done, on_error) -> None:
        if self._closed:
            return
        try:
            error = future.exception()
            result = None if error else future.result()
        except concurrent.futures.CancelledError as exc:
            result, error = None, exc
        try:
            self._finished.emit(on_done, on_error, result, error)
        except RuntimeError:  # the QObject is gone: the window closed meanwhile
            pass

    def _deliver(self, on_done, on_error, result, error) -> None:
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
        self._pool.shutdown(wait=False, cancel_futures=True)
