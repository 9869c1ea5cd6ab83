"""A slider and a spin box for one axis index, for axes of any length.

Qt's QSlider and QSpinBox hold 32-bit ints: an axis longer than 2**31 - 1 overflowed
``setRange``. The slider here runs over a scaled range past that (each step a stretch of the
axis; its ends are the axis's ends), and the spin box holds the exact index as a Python int.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QAbstractSpinBox, QSlider

#: the largest range a QSlider holds
QT_INT_MAX = (1 << 31) - 1
#: slider positions of an axis too long for one position per index
SCALED_STEPS = 1 << 20


class IndexSlider(QSlider):
    """A horizontal slider over ``0 .. last``; ``index_moved(index)`` when the user moves it."""

    index_moved = Signal(object)

    def __init__(self, last: int):
        super().__init__(Qt.Orientation.Horizontal)
        self.last = last
        self.scaled = last > QT_INT_MAX
        self.setRange(0, SCALED_STEPS if self.scaled else last)
        self.valueChanged.connect(lambda position: self.index_moved.emit(self.index(position)))

    def index(self, position: int) -> int:
        return position * self.last // SCALED_STEPS if self.scaled else position

    def show_index(self, index: int) -> None:
        """Move to where ``index`` lies (the nearest step of a scaled slider)."""
        position = (index * SCALED_STEPS + self.last // 2) // self.last if self.scaled else index
        self.setValue(position)


class IndexSpinBox(QAbstractSpinBox):
    """A spin box of a Python int index in ``0 .. last`` (no 32-bit limit);
    ``index_changed(index)``."""

    index_changed = Signal(object)

    def __init__(self, last: int):
        super().__init__()
        self.last = last
        self._value = 0
        self.setSuffix(f" / {last}")
        self.lineEdit().setText(self.textFromValue(0))
        self.editingFinished.connect(self._commit)
        self.setKeyboardTracking(False)

    def setSuffix(self, suffix: str) -> None:  # noqa: N802 - Qt's spelling
        self._suffix = suffix

    def textFromValue(self, value: int) -> str:  # noqa: N802
        return f"{value}{self._suffix}"

    def value(self) -> int:
        return self._value

    def setValue(self, value: int) -> None:  # noqa: N802
        value = min(max(int(value), 0), self.last)
        self.lineEdit().setText(self.textFromValue(value))
        if value != self._value:
            self._value = value
            self.index_changed.emit(value)

    def stepBy(self, steps: int) -> None:  # noqa: N802
        self.setValue(self._value + steps)

    def stepEnabled(self):  # noqa: N802
        flags = QAbstractSpinBox.StepEnabledFlag.StepNone
        if self._value > 0:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        if self._value < self.last:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        return flags

    def validate(self, text: str, pos: int):
        digits = text.removesuffix(self._suffix).strip()
        if not digits:
            return QValidator.State.Intermediate, text, pos
        if not digits.isascii() or not digits.isdigit():
            return QValidator.State.Invalid, text, pos
        state = (
            QValidator.State.Acceptable if int(digits) <= self.last else QValidator.State.Invalid
        )
        return state, text, pos

    def _commit(self) -> None:
        digits = self.lineEdit().text().removesuffix(self._suffix).strip()
        if digits.isascii() and digits.isdigit():
            self.setValue(int(digits))
        else:
            self.setValue(self._value)
