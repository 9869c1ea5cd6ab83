"""The channel panel of an OME-Zarr image: composite on/off, and per channel a swatch of its
colour beside its label (in the theme's text colour: a dark blue name on the dark theme could
not be read), a visibility toggle and its window (start and end, or automatic).

Every control changes the plain ``channels.ChannelState`` and emits ``changed`` (re-blend what
is loaded: no read) or ``composite_changed`` (the plane on screen changes: a new request).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QLabel,
    QWidget,
)

from .channels import ChannelState

_LIMIT = 1e300  # spin boxes take any finite window


class ChannelPanel(QWidget):
    changed = Signal()
    composite_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.state: ChannelState | None = None
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.composite_check = QCheckBox("Composite (C)")
        self.composite_check.toggled.connect(self._composite_toggled)
        self.rows: list[tuple[QCheckBox, QCheckBox, QDoubleSpinBox, QDoubleSpinBox]] = []
        self.swatches: list[QLabel] = []
        self.hide()

    def set_state(self, state: ChannelState | None) -> None:
        """Rebuild the rows for ``state`` (None: hide the panel)."""
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None and widget is not self.composite_check:
                widget.deleteLater()
        self.rows, self.swatches = [], []
        self.state = state
        if state is None:
            self.hide()
            return
        self.composite_check.blockSignals(True)
        self.composite_check.setChecked(state.composite)
        self.composite_check.blockSignals(False)
        self.grid.addWidget(self.composite_check, 0, 0, 1, 5)
        for k, channel in enumerate(state.channels):
            self._add_row(k, channel)
        self.show()

    def _add_row(self, k: int, channel) -> None:
        visible = QCheckBox(channel.label)
        visible.setChecked(channel.visible)
        swatch = color_swatch(channel.color)
        visible.toggled.connect(lambda on, k=k: self._visible(k, on))
        auto = QCheckBox("auto")
        auto.setChecked(channel.window is None)
        start, end = QDoubleSpinBox(), QDoubleSpinBox()
        for box, value in zip((start, end), channel.window or (0.0, 1.0), strict=True):
            box.setRange(-_LIMIT, _LIMIT)
            box.setDecimals(3)
            box.setValue(value)
            box.setEnabled(channel.window is not None)
            box.valueChanged.connect(lambda _v, k=k: self._window(k))
        auto.toggled.connect(lambda on, k=k: self._auto(k, on))
        row = k + 1
        for column, widget in enumerate((swatch, visible, auto, start, end)):
            self.grid.addWidget(widget, row, column)
        self.rows.append((visible, auto, start, end))
        self.swatches.append(swatch)

    def show_auto_windows(self, *_args) -> None:
        """Put the window in use in the boxes of each automatic channel (greyed: typing one
        in turns "auto" off), once pixels have given one."""
        if self.state is None:
            return
        for (_, auto, start, end), channel in zip(self.rows, self.state.channels, strict=True):
            if not auto.isChecked() or channel.auto_window is None:
                continue
            for box, value in zip((start, end), channel.auto_window, strict=True):
                box.blockSignals(True)
                box.setValue(value)
                box.blockSignals(False)

    def toggle_composite(self) -> None:
        if self.state is not None:
            self.composite_check.setChecked(not self.composite_check.isChecked())

    def set_visible_channel(self, k: int, on: bool) -> None:
        self.rows[k][0].setChecked(on)

    def set_window(self, k: int, start: float, end: float) -> None:
        """A manual window for channel ``k`` (as typing it in would)."""
        _, auto, start_box, end_box = self.rows[k]
        auto.setChecked(False)
        for box, value in ((start_box, start), (end_box, end)):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        self._window(k)

    def _composite_toggled(self, on: bool) -> None:
        if self.state is not None:
            self.state.composite = on
            self.composite_changed.emit(on)

    def _visible(self, k: int, on: bool) -> None:
        self.state.channels[k].visible = on
        self.changed.emit()

    def _auto(self, k: int, on: bool) -> None:
        _, _, start, end = self.rows[k]
        channel = self.state.channels[k]
        if not on and channel.auto_window is not None:  # start from what is on screen
            for box, value in zip((start, end), channel.auto_window, strict=True):
                box.blockSignals(True)
                box.setValue(value)
                box.blockSignals(False)
        start.setEnabled(not on)
        end.setEnabled(not on)
        channel.window = None if on else (start.value(), end.value())
        self.changed.emit()

    def _window(self, k: int) -> None:
        _, auto, start, end = self.rows[k]
        if auto.isChecked():
            return
        if start.value() != end.value():
            self.state.channels[k].window = (start.value(), end.value())
            self.changed.emit()


def color_swatch(color: tuple[int, int, int]) -> QLabel:
    """A small square of ``color`` with a light edge, legible on either theme."""
    r, g, b = color
    swatch = QLabel()
    swatch.setFixedSize(14, 14)
    swatch.setToolTip(f"#{r:02X}{g:02X}{b:02X}")
    swatch.setStyleSheet(f"background-color: rgb({r}, {g}, {b}); border: 1px solid #9a9a9a;")
    return swatch
