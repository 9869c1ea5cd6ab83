"""The view for a 0-d array (tables are in ``table_view``, lines in ``line_view``).

It reads through the engine's cancellable background reads: showing another node (or ``stop``)
cancels the read, so a stalled store never holds a worker, and a token per ``show`` call drops
results for a node it no longer shows (the same idea as the image's generations).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from . import messages, transforms
from .tasks import gui_handle, submit_read

logger = logging.getLogger(__name__)


class ScalarView(QWidget):
    """A 0-d array: its one value, large."""

    message = Signal(object)
    finished = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self._token = 0
        self._future = None
        self._handle = gui_handle(self)
        self.value_label = QLabel("")
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.value_label.font()
        font.setPointSize(font.pointSize() * 2)
        self.value_label.setFont(font)
        QVBoxLayout(self).addWidget(self.value_label)

    def show_array(self, node) -> None:
        self.stop()
        self._token += 1
        self.value_label.setText("loading…")
        try:
            self._future = submit_read(node, (), self._handle, "_landed", self._token, node)
        except Exception as exc:  # a closed store: say so
            self._fail(self._token, node, exc)

    @property
    def busy(self) -> bool:
        return self._future is not None

    def stop(self) -> None:
        """Cancel the read under way: the user moved on."""
        if self._future is not None:
            self._future.cancel()
            self._future = None

    def _landed(self, token, node, future) -> None:
        if token != self._token or future.cancelled():
            return
        self._future = None
        try:
            value = future.result()
        except Exception as exc:
            if not messages.is_cancellation(exc):
                self._fail(token, node, exc)
            return
        item = value[()] if isinstance(value, np.ndarray) else value
        self.value_label.setText(transforms.format_value(item))
        self.finished.emit()

    def _fail(self, token, node, exc) -> None:
        if token == self._token:
            message = messages.describe(exc, node=node.path)
            self.value_label.setText(message.title)
            self.message.emit(message)
            self.finished.emit()
