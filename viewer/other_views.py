"""Views for data that is not an image: 0-d values, 1-d line plots, tables of strings/records.

Each reads in the background through ``Background`` and drops results for a node it no longer
shows (a token per ``show`` call, the same idea as the image's generations).
"""

from __future__ import annotations

import logging

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTableView, QVBoxLayout, QWidget

from . import messages, transforms
from .tasks import Background
from .view_state import COMPLEX_MODES

logger = logging.getLogger(__name__)
_ROOT = QModelIndex()  # the invalid index: "no parent"

MAX_LINE_POINTS = 200_000
TABLE_BLOCK = 256
MAX_TABLE_COLUMNS = 2000


class ScalarView(QWidget):
    """A 0-d array: its one value, large."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, background: Background, parent=None):
        super().__init__(parent)
        self._background, self._token = background, 0
        self.value_label = QLabel("")
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.value_label.font()
        font.setPointSize(font.pointSize() * 2)
        self.value_label.setFont(font)
        QVBoxLayout(self).addWidget(self.value_label)

    def show_array(self, node) -> None:
        self._token += 1
        token = self._token
        self.value_label.setText("loading…")
        self._background.run(lambda: node.read(()), lambda v: self._show(token, v),
                             lambda e: self._fail(token, node, e))

    def _show(self, token, value) -> None:
        if token == self._token:
            item = value[()] if isinstance(value, np.ndarray) else value
            self.value_label.setText(transforms.format_value(item))
            self.finished.emit()

    def _fail(self, token, node, exc) -> None:
        if token == self._token:
            message = messages.describe(exc, node=node.path)
            self.value_label.setText(message.title)
            self.message.emit(message)
            self.finished.emit()


class LineView(QWidget):
    """A 1-d numeric array as a line; long arrays are read with a stride (about 200k points)."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, background: Background, parent=None):
        super().__init__(parent)
        self._background, self._token, self._node = background, 0, None
        self.plot = pg.PlotWidget()
        self.curve = self.plot.plot([], [])
        self.mode = QComboBox()
        self.mode.addItems(COMPLEX_MODES)
        self.mode.currentTextChanged.connect(lambda _: self._reshow())
        self.field = QComboBox()
        self.field.currentTextChanged.connect(lambda _: self._reshow())
        self.note = QLabel("")
        bar = QHBoxLayout()
        bar.addWidget(self.field)
        bar.addWidget(self.mode)
        bar.addWidget(self.note)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.plot)
        self.data: np.ndarray | None = None

    def show_array(self, node, field_name: str | None = None) -> None:
        self._node = node
        dtype = np.dtype(node.dtype)
        fields = transforms.numeric_fields(dtype)
        self.field.blockSignals(True)
        self.field.clear()
        self.field.addItems(fields)
        if field_name in fields:
            self.field.setCurrentText(field_name)
        self.field.blockSignals(False)
        self.field.setVisible(bool(fields))
        self._reshow()

    def _reshow(self) -> None:
        node = self._node
        if node is None:
            return
        self._token += 1
        token = self._token
        step = max(1, -(-node.shape[0] // MAX_LINE_POINTS))
        field_name = self.field.currentText() or None
        shown = transforms.field_dtype(np.dtype(node.dtype), field_name)
        self.mode.setVisible(shown.kind == "c")
        self.note.setText(f"every {step}th element" if step > 1 else "")
        mode = self.mode.currentText()

        def work():
            raw = node.read((slice(None, None, step),))
            return step, transforms.to_display(raw, field_name=field_name, complex_mode=mode)

        self._background.run(work, lambda r: self._show(token, *r),
                             lambda e: self._fail(token, node, e))

    def _show(self, token, step, values) -> None:
        if token != self._token:
            return
        self.data = values
        x = np.arange(values.shape[0]) * step
        self.curve.setData(x, values.astype(np.float64, copy=False))
        self.finished.emit()

    def _fail(self, token, node, exc) -> None:
        if token == self._token:
            self.message.emit(messages.describe(exc, node=node.path))
            self.finished.emit()


class ArrayTableModel(QAbstractTableModel):
    """Rows of a 1-d or 2-d plane, read in blocks of rows in the background as they scroll in."""

    def __init__(self, node, background: Background, prefix: tuple, on_error, parent=None):
        super().__init__(parent)
        self.node, self._background, self._prefix, self._on_error = node, background, prefix, on_error
        dtype = np.dtype(node.dtype)
        shape = node.shape[len(prefix):]
        self._rows = shape[0] if shape else 1
        self._fields = list(dtype.names) if dtype.names and len(shape) == 1 else None
        if self._fields:
            self._cols = len(self._fields)
        else:
            self._cols = min(shape[1], MAX_TABLE_COLUMNS) if len(shape) >= 2 else 1
        self._blocks: dict[int, np.ndarray | None] = {}

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

    def _load(self, block: int) -> None:
        self._blocks[block] = None
        start = block * TABLE_BLOCK
        stop = min(self._rows, start + TABLE_BLOCK)
        ndim_left = len(self.node.shape) - len(self._prefix)
        selection = self._prefix + ((slice(start, stop),) if ndim_left else ())
        if ndim_left >= 2:
            selection += (slice(0, self._cols),)
        self._background.run(lambda: self.node.read(selection),
                             lambda values: self._loaded(block, start, stop, values),
                             self._on_error)

    def _loaded(self, block, start, stop, values) -> None:
        values = np.asarray(values)
        if values.ndim == 0:
            values = values.reshape(1)
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
    """Strings, bytes and records as a table (leading axes beyond two fixed at index 0)."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, background: Background, parent=None):
        super().__init__(parent)
        self._background = background
        self.table = QTableView()
        self.note = QLabel("")
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(self.table)
        self.model: ArrayTableModel | None = None

    def show_array(self, node) -> None:
        keep = 1 if np.dtype(node.dtype).names else 2
        prefix = (0,) * max(0, len(node.shape) - keep)
        self.note.setText(f"showing index {list(prefix)} of the leading axes" if prefix else "")
        self.model = ArrayTableModel(node, self._background, prefix,
                                     lambda e: self.message.emit(
                                         messages.describe(e, node=node.path)), self)
        self.table.setModel(self.model)
        self.finished.emit()
