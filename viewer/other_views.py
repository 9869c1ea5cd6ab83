"""The view for a 0-d array (tables are in ``table_view``, lines in ``line_view``).

It reads in the background through ``Background`` and drops results for a node it no longer
shows (a token per ``show`` call, the same idea as the image's generations).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from . import messages, transforms
from .tasks import Background

logger = logging.getLogger(__name__)


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
