"""A 1-d numeric array as a line, read in the background and drawn at the plot's resolution.

``decimate.plan_line`` says what to read: every value of a short range; for a long one a strided
preview first, then chunk-aligned blocks at low priority (a few in flight, so memory stays
bounded) whose min/max per bucket refine the picture. Zooming reads the visible range again at
the finer resolution. Every read is an engine ``ReadFuture``: selecting another node (``stop``)
cancels them, and results of an older job are dropped (a token, like the image's generations).
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

import zarrfs.engine as engine

from . import coordinates, messages, transforms
from .coordinate_axis import CoordinateAxis
from .decimate import (
    BUCKETS,
    LinePlan,
    bucket_minmax,
    envelope,
    plan_line,
    preview_buckets,
)
from .tasks import gui_handle, init_relay, post_to_handle
from .view_state import COMPLEX_MODES

logger = logging.getLogger(__name__)

IN_FLIGHT = 4  # refining blocks read at once


class LineView(QWidget):
    """Shows ``node`` (1-d) as a line; ``data`` holds the y values last drawn."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, background=None, parent=None):
        super().__init__(parent)
        init_relay()
        self._handle = gui_handle(self)
        self._token, self._node, self.plan = 0, None, None
        self.futures: list = []
        self._queue: list[tuple[int, int]] = []
        self._open = 0
        self.background = background  # a tasks.Background: reads the coordinate variable
        self.axis = CoordinateAxis("bottom", shift=-0.5)  # value i is drawn at x = i
        self.plot = pg.PlotWidget(axisItems={"bottom": self.axis})
        self.curve = self.plot.plot([], [], connect="finite")
        self.mode, self.field, self.note = QComboBox(), QComboBox(), QLabel("")
        self.mode.addItems(COMPLEX_MODES)
        self.mode.currentTextChanged.connect(lambda _: self._reshow())
        self.field.currentTextChanged.connect(lambda _: self._reshow())
        bar = QHBoxLayout()
        for widget in (self.field, self.mode, self.note):
            bar.addWidget(widget)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.plot)
        self.data: np.ndarray | None = None
        self._redraw = QTimer(self, singleShot=True, interval=0)
        self._redraw.timeout.connect(self.redraw)
        self._zoom = QTimer(self, singleShot=True, interval=200)
        self._zoom.timeout.connect(self._zoomed)
        self.plot.getViewBox().sigXRangeChanged.connect(lambda *_: self._zoom.start())

    @property
    def busy(self) -> bool:
        return self._open > 0 or self._redraw.isActive() or self._zoom.isActive()

    def show_array(self, node, field_name: str | None = None) -> None:
        self.stop()
        self._node = node
        fields = transforms.numeric_fields(np.dtype(node.dtype))
        self.field.blockSignals(True)
        self.field.clear()
        self.field.addItems(fields)
        if field_name in fields:
            self.field.setCurrentText(field_name)
        self.field.blockSignals(False)
        self.field.setVisible(bool(fields))
        self._label_axis(node)
        self._reshow()

    def _label_axis(self, node) -> None:
        """Tick the x axis in the indices now, in the coordinate variable of the node's
        dimension (read in the background) once it is read: dates, degrees, levels."""
        names = tuple(node.dimension_names or ()) or ("index",)
        self.axis.set_coordinate(None, names[0], node.shape[0])
        if self.background is None or not node.dimension_names:
            return

        def loaded(found) -> None:
            if self._node is node and found.get(0) is not None:
                self.axis.set_coordinate(found[0], found[0].title(), node.shape[0])

        self.background.run(
            lambda: coordinates.load(node, names),
            loaded,
            lambda exc: logger.warning("coordinates of %s: %s", node.path, exc),
        )

    def stop(self) -> None:
        """Cancel every read in flight (another node is shown, or the window closes)."""
        self._token += 1
        for future in self.futures:
            if not future.done():
                future.cancel()
        self._queue, self._open = [], 0
        self._zoom.stop()

    def _reshow(self) -> None:
        if self._node is None:
            return
        field_name = self.field.currentText() or None
        self.mode.setVisible(
            transforms.field_dtype(np.dtype(self._node.dtype), field_name).kind == "c"
        )
        self.plot.enableAutoRange()
        self._start(0, self._node.shape[0])

    # -- reading ---------------------------------------------------------------------------------

    def _start(self, start: int, stop: int) -> None:
        """Read ``start:stop`` at the plot's resolution (cancels the previous job)."""
        self.stop()
        node, token = self._node, self._token
        plan = plan_line(start, stop, node.chunks[0] if node.chunks else stop - start)
        self.plan, self.futures = plan, []
        nb = plan.buckets
        self._lows, self._highs = np.full(nb, np.nan), np.full(nb, np.nan)
        self._seen, self._preview = np.zeros(nb, dtype=bool), None
        self._convert = functools.partial(
            transforms.to_display,
            field_name=self.field.currentText() or None,
            complex_mode=self.mode.currentText(),
        )
        self._set_note(plan, node.shape[0])
        if plan.preview is not None:
            self._submit(token, (plan.preview,), "preview", engine.PRIORITY_VISIBLE)
        self._queue = list(plan.blocks)
        self._fill_queue()
        if self._open == 0:
            self.finished.emit()

    def _set_note(self, plan: LinePlan, size: int) -> None:
        parts = []
        if plan.bucket > 1:
            parts.append(f"min/max of every {plan.bucket} values")
            if not plan.blocks:
                parts.append(f"sampled every {plan.preview.step}th value: zoom in to read all")
        if (plan.start, plan.stop) != (0, size):
            parts.append(f"showing {plan.start}–{plan.stop}")
        self.note.setText("; ".join(parts))

    def _submit(self, token, selection, kind, priority, begin=0) -> None:
        try:
            future = self._node.submit(selection, priority=priority)
        except Exception as exc:
            self._failed(token, exc)
            return
        self.futures.append(future)
        self._open += 1
        future.add_done_callback(
            functools.partial(
                _read_done, self._handle, token, kind, begin, self.plan, self._convert
            )
        )

    def _fill_queue(self) -> None:
        token = self._token
        while self._queue and sum(not f.done() for f in self.futures) < IN_FLIGHT:
            begin, end = self._queue.pop(0)
            self._submit(token, (slice(begin, end),), "block", engine.PRIORITY_PREFETCH, begin)

    # -- results (GUI thread) --------------------------------------------------------------------

    def _landed(self, token, kind, payload, error) -> None:
        if token != self._token:
            return
        self._open -= 1
        if error is not None:
            if not messages.is_cancellation(error):
                self._failed(token, error)
        elif kind == "preview":
            self._preview = payload
        else:
            first, lows, highs = payload
            part = slice(first, first + lows.size)
            with np.errstate(invalid="ignore"):
                self._lows[part] = np.where(self._seen[part], np.fmin(self._lows[part], lows), lows)
                self._highs[part] = np.where(
                    self._seen[part], np.fmax(self._highs[part], highs), highs
                )
            self._seen[part] = True
        self._fill_queue()
        if not self._redraw.isActive():
            self._redraw.start()

    def redraw(self) -> None:
        plan = self.plan
        if plan is None:
            return
        lows, highs = self._lows, self._highs
        if self._preview is not None:
            lows = np.where(self._seen, lows, self._preview)
            highs = np.where(self._seen, highs, self._preview)
        x, y = envelope(plan, lows, highs)
        self.data = y
        self.curve.setData(x, y, connect="finite")
        if self._open == 0:
            self.finished.emit()

    def _failed(self, token, exc) -> None:
        if token == self._token and self._node is not None:
            self.message.emit(messages.describe(exc, node=self._node.path))

    def _zoomed(self) -> None:
        """Read the visible range again when the plot shows it coarser than it could."""
        plan, node = self.plan, self._node
        if plan is None or node is None:
            return
        if self._open:  # look again once this job has drawn something
            self._zoom.start()
            return
        (x0, x1), _ = self.plot.getViewBox().viewRange()
        lo, hi = max(0, int(x0)), min(node.shape[0], int(np.ceil(x1)) + 1)
        if hi <= lo:
            return
        wanted = max(1, -(-(hi - lo) // BUCKETS))
        inside = plan.start <= lo and hi <= plan.stop
        if inside and plan.bucket <= 2 * wanted and (plan.blocks or plan.bucket == 1):
            return
        width = hi - lo
        start, stop = max(0, lo - width), min(node.shape[0], hi + width)
        if (start, stop) != (plan.start, plan.stop):
            self._start(start, stop)


def _read_done(handle, token, kind, begin, plan, convert, future) -> None:
    """Worker thread: reduce what the read returned and hand the small result to the GUI."""
    payload, error = None, None
    try:
        values = convert(future.result())
        if kind == "preview":
            payload = preview_buckets(plan, values)
        elif plan.bucket == 1:
            values = np.asarray(values, dtype=np.float64).ravel()
            payload = (begin - plan.start, values, values)
        else:
            payload = bucket_minmax(values, begin, plan)
    except BaseException as exc:  # noqa: BLE001 - reported on the GUI thread
        error = exc
    post_to_handle(handle, "_landed", token, kind, payload, error)
