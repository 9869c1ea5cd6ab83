"""A slider and a spin box for one axis index, for axes of any length.

Qt's QSlider and QSpinBox hold 32-bit ints: an axis longer than 2**31 - 1 overflowed
``setRange``. The slider here runs over a scaled range past that (each step a stretch of the
axis; its ends are the axis's ends), and the spin box holds the exact index as a Python int.

Where the axis has a coordinate variable the spin box shows its value beside the index
("2000-01-05 (4 / 23)", "850 hPa (1 / 2)") and takes either typed: a date or a value
(``coordinates.AxisCoordinate.index_of``, the nearest element), or an index ("4", or "#4"
where a number would be a value).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QAbstractSpinBox, QSlider

from .coordinates import AxisCoordinate, spin_text

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
        self.coordinate: AxisCoordinate | None = None
        self.setSuffix(f" / {last}")
        self.lineEdit().setText(self.textFromValue(0))
        self._fit_width()
        self.editingFinished.connect(self._commit)
        self.setKeyboardTracking(False)

    def setSuffix(self, suffix: str) -> None:  # noqa: N802 - Qt's spelling
        self._suffix = suffix

    def set_coordinate(self, coordinate: AxisCoordinate | None) -> None:
        """Show (and take) ``coordinate``'s values beside the indices (None: indices only):
        an ``AxisCoordinate``, or any labelling of the steps with ``size``, ``label(i)`` and
        ``index_of(text)`` (``coordinates.StepNames``, ``coordinates.StepLengths``)."""
        self.coordinate = (
            coordinate if coordinate is not None and coordinate.size > self.last else None
        )
        self.lineEdit().setText(self.textFromValue(self._value))
        self._fit_width()

    def _fit_width(self) -> None:
        """Room for the widest text this box shows ("63 / 63", "2000-01-05 (4 / 23)"): labels
        of up to 2,000 steps are measured (dates and values of one axis differ little)."""
        metrics = self.fontMetrics()
        step = max(1, self.last // 2000)
        samples = {*range(0, self.last + 1, step), self.last}
        widest = max(metrics.horizontalAdvance(self.textFromValue(i)) for i in samples)
        if self.coordinate is not None and getattr(self.coordinate, "kind", "") == "time":
            room = self.textFromValue(self.last).replace(self.coordinate.label(self.last), "")
            widest = max(widest, metrics.horizontalAdvance("0000-00-00 00:00:00" + room))
        self.setMinimumWidth(widest + 36)  # the frame and the up/down buttons

    def textFromValue(self, value: int) -> str:  # noqa: N802
        if self.coordinate is not None:
            return f"{self.coordinate.label(value)} ({value}{self._suffix})"
        return f"{value}{self._suffix}"

    def index_from_text(self, text: str) -> int | None:
        """The index ``text`` names: a coordinate value or date, "#4", or "4" (None: none)."""
        text = spin_text(text) if self.coordinate else text.removesuffix(self._suffix).strip()
        if self.coordinate is not None and not text.startswith("#"):
            index = self.coordinate.index_of(text)
            if index is not None:
                return index
        digits = text.removeprefix("#").strip()
        if digits.isascii() and digits.isdigit():
            return int(digits)
        return None

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
        if self.coordinate is not None:  # dates and values are typed through partial texts
            found = self.index_from_text(text)
            state = QValidator.State.Intermediate
            if found is not None and found <= self.last:
                state = QValidator.State.Acceptable
            return state, text, pos
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
        index = self.index_from_text(self.lineEdit().text())
        self.setValue(self._value if index is None else index)
