"""The series panel: click a point of the image, see its values along a slider axis.

ncview's click-for-a-time-series, in a dock under the data (View ▸ Series at a point; a
Shift+click on the image opens it, and while it is open every click plots). The values are read
as engine futures, piece by piece (``series.plan_series``: only the chunks under the point, a
piece's chunks all in flight at once), CF-decoded in the worker, and drawn as they land; fill
values are NaN, drawn as gaps. A new click, another node or closing the window cancels what is
in flight, and results of an older click are dropped (a token, as the line view does). The
coordinates (the x axis, the point's coordinate values) are found and read in the window's
background pool.
"""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QDockWidget, QHBoxLayout, QLabel, QVBoxLayout, QWidget

import zarrfs.engine as engine

from . import messages, series
from .series_source import Source, read_coordinates, resolve
from .tasks import gui_handle, init_relay, post_to_handle

IN_FLIGHT = 2  # pieces read at once (each with all of its chunks in flight)
SYMBOLS_UP_TO = 400  # points drawn with a marker too: short series show isolated values
HINT = "Click a point of the image to plot its values along a slider axis."


class CoordinateAxis(pg.AxisItem):
    """An x axis ticked by ``ticks(low, high, count) -> [(value, text)]`` (a coordinate's round
    values: dates, degrees), else pyqtgraph's own numbers."""

    def __init__(self):
        super().__init__("bottom")
        self.ticks = None
        self._texts: dict[float, str] = {}

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph's names
        low, high = min(minVal, maxVal), max(minVal, maxVal)
        pairs = self.ticks(low, high, max(2, int(size // 110))) if self.ticks else None
        if not pairs:
            return super().tickValues(minVal, maxVal, size)
        self._texts = dict(pairs)
        values = [v for v, _ in pairs]
        return [(values[1] - values[0] if len(values) > 1 else 1.0, values)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        if self.ticks is None or not all(v in self._texts for v in values):
            return super().tickStrings(values, scale, spacing)
        return [self._texts[v] for v in values]


class SeriesView(QWidget):
    """``show_point(array, node_path, state, row, col)``; ``x``/``y`` hold what is drawn."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, background, parent=None):
        super().__init__(parent)
        init_relay()
        self._handle = gui_handle(self)
        self.background = background
        self.source: Source | None = None
        self.plan: series.SeriesPlan | None = None
        self.x: np.ndarray | None = None  # x positions drawn (coordinate values or steps)
        self.y: np.ndarray | None = None
        self.futures: list = []
        self._token, self._queue, self._open, self._waiting = 0, [], 0, 0
        self._point: tuple | None = None
        self.raw = False  # the stored values, not the CF-decoded ones
        self._numbers: np.ndarray | None = None
        self._texts: list = []
        self._failed: str | None = None
        self._coord_var = None  # the CFVariable of the x axis's coordinate, if it has one
        self._convert = None
        self.point_item = None  # a marker of the point on the image (set by ``install``)
        self.axis_combo = QComboBox()
        self.axis_combo.setToolTip("The axis the series runs along")
        self.axis_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.axis_combo.activated.connect(lambda _: self._restart())
        self.status = QLabel(HINT)
        self.status.setWordWrap(True)
        self.readout = QLabel(" ")
        self.bottom = CoordinateAxis()
        self.plot = pg.PlotWidget(axisItems={"bottom": self.bottom})
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.setClipToView(True)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.curve = self.plot.plot([], [], connect="finite")
        self.marker = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen((255, 255, 0, 120)))
        self.marker.setVisible(False)
        self.plot.addItem(self.marker, ignoreBounds=True)
        self.plot.scene().sigMouseMoved.connect(self._mouse_moved)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Along:"))
        bar.addWidget(self.axis_combo)
        bar.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(bar)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.readout)
        self._redraw = QTimer(self, singleShot=True, interval=0)
        self._redraw.timeout.connect(self.redraw)

    @property
    def busy(self) -> bool:
        return self._open > 0 or self._waiting > 0 or self._redraw.isActive()

    # -- what to plot ----------------------------------------------------------------------------

    def show_point(
        self, array, node_path: str, state, row: int, col: int, raw: bool = False
    ) -> bool:
        """Plot the values of ``array`` at level-0 (``row``, ``col``) of the plane ``state``
        shows, along the axis chosen (a new array: its time axis, or its first slider axis);
        CF-decoded unless ``raw`` (the stored values). False when there is nothing to plot
        along."""
        self.stop()
        if not state.slider_axes:
            self._say(f"/{node_path} has no axis besides the two displayed: no series to plot.")
            return False
        index = list(state.indices)
        index[state.y_axis], index[state.x_axis] = int(row), int(col)
        self._point = (array, node_path, state, tuple(index))
        self.raw = raw
        if self.source is not None and self.source.state is state:
            self._fill_axes()  # the displayed axes may have changed since
            self._start()
            return True
        self.source, token = None, self._token
        self._say(f"Looking up the coordinates of /{node_path}…")
        self._waiting += 1
        self.background.run(
            lambda: resolve(array),
            lambda found: self._resolved(token, found),
            lambda exc: self._resolved(token, None, exc),
        )
        return True

    def _resolved(self, token: int, found, error=None) -> None:
        self._waiting -= 1
        if token != self._token or self._point is None:
            return
        array, node_path, state, _ = self._point
        if error is not None:
            self.message.emit(messages.describe(error, node=node_path))
            found = (None, tuple(f"dim_{k}" for k in range(array.ndim)), {}, {})
        var, dims, coords, coord_vars = found
        self.source = Source(array, node_path, state, var, dims, coords, coord_vars)
        self.axis_combo.clear()
        self._fill_axes()
        self._start()

    def _fill_axes(self) -> None:
        """List the slider axes, keeping the one chosen while it is one (else the default)."""
        source, state = self.source, self.source.state
        listed = [self.axis_combo.itemData(k) for k in range(self.axis_combo.count())]
        if listed == state.slider_axes:
            return
        chosen = self.axis_combo.currentData()
        if chosen not in state.slider_axes:
            times = {
                a
                for a, dim in enumerate(source.dimensions)
                if dim in source.coord_vars and source.coord_vars[dim].time is not None
            }
            chosen = series.default_axis(state.slider_axes, state.dimension_names, times)
        self.axis_combo.clear()
        for axis in state.slider_axes:
            self.axis_combo.addItem(f"{state.axis_label(axis)} ({state.shape[axis]:,})", axis)
        self.axis_combo.setCurrentIndex(state.slider_axes.index(chosen))

    def set_raw(self, raw: bool) -> None:
        """The image's Raw toggle: the series shown is read again as stored or decoded."""
        if raw != self.raw:
            self.raw = raw
            self._restart()

    def _restart(self) -> None:
        if self._point is not None and self.source is not None:
            self.stop()
            self._start()

    def _start(self) -> None:
        array, node_path, state, index = self._point
        source, token = self.source, self._token
        axis = self.axis_combo.currentData()
        plan = series.plan_series(
            tuple(array.shape), tuple(array.chunks or ()), np.dtype(array.dtype).itemsize,
            axis, index,
        )  # fmt: skip
        self.plan, self._numbers, self._texts, self._failed = plan, None, [], None
        self.x, self.y = None, np.full(plan.size, np.nan)
        self.curve.setData([], [])
        self.marker.setVisible(False)
        self._convert = functools.partial(
            series.decoded_values,
            None if self.raw else source.var,
            field_name=state.field_name,
            complex_mode=state.complex_mode,
        )
        self._queue = list(plan.pieces)
        self._fill_queue()
        self._waiting += 1
        self.background.run(
            lambda: read_coordinates(source, plan),
            lambda found: self._coordinates(token, found),
            lambda exc: self._coordinates(token, None, exc),
        )
        self._show_status()

    def stop(self) -> None:
        """Cancel every read in flight (a new click, another node, the window closing)."""
        self._token += 1
        for future in self.futures:
            if not future.done():
                future.cancel()
        self.futures, self._queue, self._open = [], [], 0

    def forget(self) -> None:
        """Another node is shown: nothing of this one stays."""
        self.stop()
        self.source, self.plan, self._point, self.x, self.y = None, None, None, None, None
        self.axis_combo.clear()
        self.curve.setData([], [])
        self.marker.setVisible(False)
        self.readout.setText(" ")
        if self.point_item is not None:
            self.point_item.setVisible(False)
        self._say(HINT)

    def follow(self, state) -> None:
        """Mark the slider's position along the series (the plane on screen)."""
        plan, x = self.plan, self.x
        if plan is None or x is None or self.source is None or self.source.state is not state:
            return
        k = state.indices[plan.axis] - plan.start
        self.marker.setVisible(0 <= k < x.size)
        if 0 <= k < x.size:
            self.marker.setValue(float(x[k]))

    # -- reading ---------------------------------------------------------------------------------

    def _fill_queue(self) -> None:
        array, token = self.source.array, self._token
        while self._queue and self._open < IN_FLIGHT:
            begin, end = self._queue.pop(0)
            try:
                future = array.submit(
                    self.plan.selection(begin, end), priority=engine.PRIORITY_VISIBLE
                )
            except Exception as exc:  # noqa: BLE001 - shown like a failed read
                self._queue = []  # the next pieces would fail alike
                self._open += 1  # _piece counts it out again
                self._piece(token, begin, None, exc)
                return
            self.futures.append(future)
            self._open += 1
            future.add_done_callback(
                functools.partial(_piece_done, self._handle, token, begin, self._convert)
            )

    def _piece(self, token: int, begin: int, values, error) -> None:
        if token != self._token:
            return
        self._open = max(0, self._open - 1)
        if error is not None:
            if not messages.is_cancellation(error):
                message = messages.describe(error, node=self.source.node_path)
                self._failed = message.one_line()
                self.message.emit(message)
        else:
            start = begin - self.plan.start
            self.y[start : start + values.size] = values
        self._fill_queue()
        self._schedule()

    def _coordinates(self, token: int, found, error=None) -> None:
        self._waiting -= 1
        if token != self._token:
            return
        if error is not None:  # the series is still worth plotting, against steps
            self.message.emit(messages.describe(error, node=self.source.node_path))
            found = (None, [])
        self._numbers, self._texts = found
        plan, source = self.plan, self.source
        x = series.x_positions(self._numbers)
        coord_var = source.coord_vars.get(source.dimensions[plan.axis]) if x is not None else None
        self.x = x if x is not None else np.arange(plan.start, plan.stop, dtype=np.float64)
        self.bottom.ticks = (
            functools.partial(series.tick_pairs, coord_var) if coord_var is not None else None
        )
        self._coord_var = coord_var
        dim = source.dimensions[plan.axis]
        self.plot.setLabel("bottom", series.axis_label(dim, coord_var))
        label = series.value_label(source.array.name or "values", source.var)
        self.plot.setLabel("left", label + (" (stored values)" if self.raw else ""))
        self._schedule()

    def _schedule(self) -> None:
        if not self._redraw.isActive():
            self._redraw.start()

    # -- drawing ---------------------------------------------------------------------------------

    def redraw(self) -> None:
        if self.plan is None or self.x is None or self.y is None:
            return
        short = self.y.size <= SYMBOLS_UP_TO and not np.isnan(self.y).all()
        symbol = "o" if short else None
        self.curve.setData(self.x, self.y, connect="finite", symbol=symbol, symbolSize=4)
        self.plot.enableAutoRange()
        self.follow(self.source.state)
        self._show_status()
        if not self.busy:
            self.finished.emit()

    def point_text(self) -> str:
        """The point, in coordinate values where there are some: "lat=-59.5, lon=100"."""
        plan, source = self.plan, self.source
        parts = []
        for axis, i in enumerate(plan.index):
            if axis == plan.axis:
                continue
            label = source.state.axis_label(axis)
            text = self._texts[axis] if axis < len(self._texts) else None
            parts.append(f"{label}={text}" if text is not None else f"{label} {i}")
        return ", ".join(parts)

    def _show_status(self) -> None:
        plan, source = self.plan, self.source
        name = source.array.name or source.node_path or "array"
        where = f"{name} at {self.point_text()}"
        along = source.state.axis_label(plan.axis)
        if self._failed:
            text = f"{where}: {self._failed}"
        elif self.busy:
            done = len(plan.pieces) - len(self._queue) - self._open
            text = f"Reading {where}… ({done} of {len(plan.pieces)} pieces)"
        else:
            text = f"{where}: {plan.size:,} values along {along}"
        self._say(text + (f"; {plan.note}" if plan.note else ""), bool(self._failed))

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color: #e06c6c;" if error else "")

    def x_text(self, k: int) -> str:
        """The x value of point ``k`` as the readout writes it (a date on a CF time axis)."""
        var = self._coord_var
        if var is None:
            return str(self.plan.start + k)
        if var.time is not None:
            return series.time_texts(var, [self.x[k]])[0]
        return series.coordinate_text(var, self.x[k])

    def _mouse_moved(self, pos) -> None:
        if self.x is None or self.y is None or not self.x.size:
            return
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        k = int(np.argmin(np.abs(self.x - vb.mapSceneToView(pos).x())))
        units = self.source.var.units if self.source.var is not None else None
        value = series.number_text(float(self.y[k])) + (f" {units}" if units else "")
        self.readout.setText(f"{self.x_text(k)}: {value}")


def _piece_done(handle: int, token: int, begin: int, convert, future) -> None:
    """Worker thread: decode the piece and hand it to the GUI."""
    values, error = None, None
    try:
        values = np.ravel(convert(future.result()))
    except BaseException as exc:  # noqa: BLE001 - reported on the GUI thread
        error = exc
    post_to_handle(handle, "_piece", token, begin, values, error)


def install(window, view_menu) -> SeriesView:
    """The series dock of ``window`` (hidden until asked for), wired to its image view."""
    view = SeriesView(window.background)
    dock = QDockWidget("Series at a point", window)
    dock.setObjectName("seriesDock")
    dock.setWidget(view)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock.hide()
    view_menu.addAction(dock.toggleViewAction())
    view.message.connect(window.post)
    image = window.image
    image.point_clicked.connect(functools.partial(_clicked, image, view, dock))
    image.cf_tools.raw_check.toggled.connect(lambda _on: view.set_raw(image.cf_tools.raw))
    image.painted.connect(lambda _generation: view.follow(image.state))
    spot = pg.ScatterPlotItem(size=9, pen=pg.mkPen((255, 255, 0), width=2), brush=None)
    spot.setZValue(20)
    spot.setVisible(False)
    image.add_marker(spot)
    view.point_item = spot  # the point plotted, marked on the image
    window.node_shown.connect(lambda _path: view.forget())
    window.series, window.series_dock = view, dock
    return view


def _clicked(image, view: SeriesView, dock: QDockWidget, row: int, col: int, modifiers) -> None:
    """A click on the image plots while the dock is open; a Shift+click opens it too."""
    shift = bool(modifiers & Qt.KeyboardModifier.ShiftModifier)
    shown = image.shown()
    if (not dock.isVisible() and not shift) or shown is None:
        return
    if not dock.isVisible():
        dock.show()
        window = dock.parentWidget()
        window.resizeDocks([dock], [max(180, window.height() // 3)], Qt.Orientation.Vertical)
    # the series shows what the image shows: stored or decoded values
    plotted = view.show_point(shown.array, shown.node_path, shown.state, row, col, raw=shown.raw)
    if plotted and view.point_item is not None:
        view.point_item.setData([col + 0.5], [row + 0.5])
        view.point_item.setVisible(True)
