"""Which two axes are displayed, and a slider with a spin box for each of the others.

Each slider is labelled with the dimension name; axes of any length (``index_widgets``). Where
an axis has a coordinate variable its spin box shows (and takes) the coordinate value, a date
for a CF time. The widget only edits a ``ViewState`` through signals; the image view decides
what to load.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from .index_widgets import IndexSlider, IndexSpinBox
from .view_state import ViewState


class AxisControls(QWidget):
    """Emits ``axes_changed(y, x)`` and ``index_changed(axis, value)``."""

    axes_changed = Signal(int, int)
    index_changed = Signal(int, object)  # an index may pass 32 bits

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.y_combo, self.x_combo = QComboBox(), QComboBox()
        self.y_combo.setToolTip("Axis displayed down the screen")
        self.x_combo.setToolTip("Axis displayed across the screen")
        row = QHBoxLayout()
        row.addWidget(QLabel("Rows:"))
        row.addWidget(self.y_combo)
        self.x_label = QLabel("Columns:")
        row.addWidget(self.x_label)
        row.addWidget(self.x_combo)
        row.addStretch(1)
        self._grid = QGridLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addLayout(self._grid)
        self.sliders: dict[int, IndexSlider] = {}
        self.spins: dict[int, IndexSpinBox] = {}
        self.labels: dict[int, QLabel] = {}
        self.coordinates: dict = {}  # axis -> coordinates.AxisCoordinate
        self.step_labels: dict = {}  # axis -> coordinates.StepNames | StepLengths
        self._updating = False
        self.y_combo.currentIndexChanged.connect(self._combo_changed)
        self.x_combo.currentIndexChanged.connect(self._combo_changed)

    def set_state(self, state: ViewState, columns: bool = True) -> None:
        """Rebuild the controls for ``state`` (a new array, or new display axes).

        ``columns=False``: only the rows' axis is chosen (a table of records).
        """
        self._updating = True
        try:
            for combo, axis in ((self.y_combo, state.y_axis), (self.x_combo, state.x_axis)):
                combo.clear()
                for a in range(state.ndim):
                    combo.addItem(f"{state.axis_label(a)} ({state.shape[a]})", a)
                combo.setCurrentIndex(axis)
            self.y_combo.setVisible(state.ndim >= 2)
            self.x_combo.setVisible(state.ndim >= 2 and columns)
            self.x_label.setVisible(state.ndim >= 2 and columns)
            self._rebuild_sliders(state)
        finally:
            self._updating = False

    def _rebuild_sliders(self, state: ViewState) -> None:
        while self._grid.count():
            widget = self._grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.sliders, self.spins, self.labels = {}, {}, {}
        for row, axis in enumerate(state.slider_axes):
            label = QLabel(f"{state.axis_label(axis)}:")
            last = state.shape[axis] - 1
            slider, spin = IndexSlider(last), IndexSpinBox(last)
            slider.show_index(state.indices[axis])
            slider.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            spin.setValue(state.indices[axis])
            slider.index_moved.connect(lambda v, a=axis: self._index_changed(a, v))
            spin.index_changed.connect(lambda v, a=axis: self._index_changed(a, v))
            self._grid.addWidget(label, row, 0)
            self._grid.addWidget(slider, row, 1)
            self._grid.addWidget(spin, row, 2)
            self.sliders[axis], self.spins[axis], self.labels[axis] = slider, spin, label
            spin.set_coordinate(self._labelling(axis))
            self._slider_tip(axis)

    def _labelling(self, axis: int):
        """What the spin box of ``axis`` shows beside its index: a coordinate variable's
        values, else a channel's name or a physical position."""
        found = self.coordinates.get(axis)
        return found if found is not None else self.step_labels.get(axis)

    def set_step_labels(self, labels: dict) -> None:
        """``{axis: coordinates.StepNames | StepLengths}`` for the next ``set_state``."""
        self.step_labels = dict(labels)

    def set_coordinates(self, coordinates: dict) -> None:
        """Show ``{axis: AxisCoordinate}`` values beside the indices (kept across rebuilds)."""
        self.coordinates = dict(coordinates)
        self._updating = True
        try:
            for axis, spin in self.spins.items():
                spin.set_coordinate(self._labelling(axis))
                self._slider_tip(axis)
        finally:
            self._updating = False

    def _slider_tip(self, axis: int) -> None:
        spin = self.spins[axis]
        self.sliders[axis].setToolTip(spin.textFromValue(spin.value()))

    def show_index(self, axis: int, value: int) -> None:
        """Reflect a change made elsewhere (keyboard) without emitting it again."""
        self._updating = True
        try:
            if axis in self.sliders:
                self.sliders[axis].show_index(value)
                self.spins[axis].setValue(value)
                self._slider_tip(axis)
        finally:
            self._updating = False

    def _index_changed(self, axis: int, value: int) -> None:
        if self._updating:
            return
        self.show_index(axis, value)
        self.index_changed.emit(axis, value)

    def _combo_changed(self) -> None:
        if self._updating:
            return
        y, x = self.y_combo.currentData(), self.x_combo.currentData()
        if y is not None and x is not None:
            self.axes_changed.emit(int(y), int(x))
