"""Strings, bytes and records as a table: any 2-d slice of an N-d array, read as it scrolls in.

The same axis controls as images: two combo boxes choose the axes shown as rows and columns
(records: only the rows; their fields are the columns) and every other axis has a slider labelled
with its dimension name. Rows are read in blocks with the engine's cancellable background reads;
moving a slider or showing another node cancels the old model's reads (a stalled store must not
hold workers that other nodes need).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QTableView, QVBoxLayout, QWidget

from . import messages, transforms
from .axis_controls import AxisControls
from .tasks import gui_handle, submit_read
from .view_state import ViewState

logger = logging.getLogger(__name__)
_ROOT = QModelIndex()  # the invalid index: "no parent"

TABLE_BLOCK = 256
MAX_TABLE_COLUMNS = 2000


class ArrayTableModel(QAbstractTableModel):
    """One 2-d (or 1-d) slice: ``indices`` fix every axis but ``row_axis`` and ``col_axis``."""

    def __init__(self, node, indices, row_axis: int, col_axis: int | None, on_error, parent=None):
        super().__init__(parent)
        self.node, self._on_error = node, on_error
        self._indices, self._row_axis, self._col_axis = tuple(indices), row_axis, col_axis
        dtype, shape = np.dtype(node.dtype), tuple(node.shape)
        self._rows = shape[row_axis] if shape else 1
        self._fields = list(dtype.names) if dtype.names and col_axis is None else None
        if self._fields:
            self._cols = len(self._fields)
        else:
            self._cols = min(shape[col_axis], MAX_TABLE_COLUMNS) if col_axis is not None else 1
        self._blocks: dict[int, np.ndarray | None] = {}
        self._futures: dict[int, object] = {}  # block -> its read, while under way
        self._handle = gui_handle(self)

    def rowCount(self, parent=_ROOT) -> int:
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent=_ROOT) -> int:
        return 0 if parent.isValid() else self._cols

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal and self._fields:
            return self._fields[section]
        return str(section)

    def selection(self, start: int, stop: int) -> tuple:
        """What a block of rows reads: the fixed indices, a range of rows, the columns."""
        if not self.node.shape:
            return ()
        selection = list(self._indices)
        selection[self._row_axis] = slice(start, stop)
        if self._col_axis is not None:
            selection[self._col_axis] = slice(0, self._cols)
        return tuple(selection)

    @property
    def busy(self) -> bool:
        return bool(self._futures)

    def cancel(self) -> None:
        """Cancel every block still being read (this slice is no longer shown)."""
        futures, self._futures = self._futures, {}
        for future in futures.values():
            future.cancel()

    def _load(self, block: int) -> None:
        self._blocks[block] = None
        start = block * TABLE_BLOCK
        stop = min(self._rows, start + TABLE_BLOCK)
        try:
            self._futures[block] = submit_read(
                self.node, self.selection(start, stop), self._handle, "_landed", block, start, stop
            )
        except Exception as exc:  # a closed store: report it
            self._on_error(exc)

    def _landed(self, block, start, stop, future) -> None:
        if self._futures.get(block) is not future:
            return  # cancelled
        del self._futures[block]
        try:
            values = np.asarray(future.result())
        except Exception as exc:
            if not messages.is_cancellation(exc):
                self._on_error(exc)
            return
        if values.ndim == 0:
            values = values.reshape(1)
        if self._col_axis is not None and self._row_axis > self._col_axis:
            values = values.T
        self._blocks[block] = values
        self.dataChanged.emit(self.index(start, 0), self.index(stop - 1, self._cols - 1))

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        block = index.row() // TABLE_BLOCK
        if block not in self._blocks:
            self._load(block)
        values = self._blocks.get(block)
        if values is None:
            return "…"
        row = values[index.row() - block * TABLE_BLOCK]
        if self._fields:
            return transforms.format_value(row[self._fields[index.column()]])
        if values.ndim >= 2:
            return transforms.format_value(row[index.column()])
        return transforms.format_value(row)


class TableView(QWidget):
    """A table of one slice of ``node``, with axis choice and sliders for the other axes."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = QTableView()
        self.axes = AxisControls()
        self.axes.axes_changed.connect(self._axes_changed)
        self.axes.index_changed.connect(self._index_changed)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.axes)
        self.node, self.state = None, None
        self.model: ArrayTableModel | None = None
        self._records = False

    def show_array(self, node) -> None:
        self.node = node
        self._records = np.dtype(node.dtype).names is not None
        self.state = ViewState(
            shape=tuple(node.shape), dimension_names=tuple(node.dimension_names or ())
        )
        if self._records or len(node.shape) < 2:
            self.state.set_row_axis(max(0, len(node.shape) - 1))
        self._show_controls()
        self._show_slice()

    def _show_controls(self) -> None:
        self.axes.set_state(self.state, columns=not self._records)
        self.axes.setVisible(len(self.state.shape) >= 2)

    def _show_slice(self) -> None:
        state, node = self.state, self.node
        col_axis = None if state.x_axis == state.y_axis or state.ndim < 2 else state.x_axis
        model = ArrayTableModel(
            node,
            state.indices,
            state.y_axis,
            col_axis,
            lambda e: self.message.emit(messages.describe(e, node=node.path)),
        )
        self.stop()
        self.table.setModel(model)
        self.model = model
        self.finished.emit()

    @property
    def busy(self) -> bool:
        return self.model is not None and self.model.busy

    def stop(self) -> None:
        """Cancel the reads of the slice shown (the user moved on)."""
        if self.model is not None:
            self.model.cancel()

    def _axes_changed(self, y: int, x: int) -> None:
        if self.state is None:
            return
        if self._records:
            self.state.set_row_axis(y)
        else:
            self.state.set_display_axes(y, x)
        self._show_controls()
        self._show_slice()

    def _index_changed(self, axis: int, value: int) -> None:
        if self.state is not None and self.state.set_index(axis, value):
            self._show_slice()
