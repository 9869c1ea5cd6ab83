"""The labels row under the image: which label image to draw over it, its opacity, and
outlines or filled. Changes emit signals; the overlay (``labels_overlay``) does the work."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QSlider, QWidget


class LabelsPanel(QWidget):
    chosen = Signal(str)  # a label image's name, "" for none
    style_changed = Signal(float, bool)  # opacity 0..1, outlines

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.currentIndexChanged.connect(
            lambda _i: self.chosen.emit(self.combo.currentData() or "")
        )
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.opacity.setValue(50)
        self.opacity.valueChanged.connect(self._style)
        self.outlines = QCheckBox("Outlines")
        self.outlines.toggled.connect(self._style)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (QLabel("Labels:"), self.combo, QLabel("Opacity:"), self.opacity):
            row.addWidget(widget)
        row.addWidget(self.outlines)
        self.hide()

    def set_names(self, names) -> None:
        """The label images an image lists (none: the row hides)."""
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("none", "")
        for name in names:
            self.combo.addItem(name, name)
        self.combo.blockSignals(False)
        self.setVisible(bool(names))

    def choose(self, name: str) -> None:
        self.combo.setCurrentIndex(max(0, self.combo.findData(name)))

    def style(self) -> tuple[float, bool]:
        """The opacity (0..1) and outlines chosen."""
        return self.opacity.value() / 100, self.outlines.isChecked()

    def _style(self, *_args) -> None:
        self.style_changed.emit(self.opacity.value() / 100, self.outlines.isChecked())
