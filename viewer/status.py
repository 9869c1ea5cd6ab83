"""The status bar (loading progress, cache use, bytes fetched) and the non-modal message bar.

Errors never open a modal dialog: the latest one appears in a dismissable bar above the data,
naming the node and chunk, and every message is kept in a list the user can scroll.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QProgressBar,
    QStatusBar,
    QToolButton,
    QWidget,
)

import zarrfs.engine as engine

from .info_panel import human_size
from .messages import UserMessage
from .resources import icon

logger = logging.getLogger(__name__)


class MessageBar(QFrame):
    """One line: the latest message, with a count of the others and a close button."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.icon = QLabel()
        self.icon.setPixmap(icon("error").pixmap(16, 16))
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(self.icon)
        layout.addWidget(self.text, 1)
        layout.addWidget(close)
        self.history = QListWidget()
        self.hide()

    def post(self, message: UserMessage) -> None:
        self.history.addItem(message.one_line())
        self.history.item(self.history.count() - 1).setToolTip(message.detail)
        more = self.history.count() - 1
        suffix = f"  ({more} earlier in View ▸ Messages)" if more else ""
        self.text.setText(f"<b>{message.title}</b>: {message.text}{suffix}")
        self.text.setToolTip(message.detail)
        self.show()

    def messages(self) -> list[str]:
        return [self.history.item(i).text() for i in range(self.history.count())]


class StatusPanel:
    """Widgets added to the window's status bar, refreshed twice a second from engine counters."""

    def __init__(self, bar: QStatusBar, progress_source):
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(180)
        self.progress.setFormat("%v / %m tiles")
        self.cache = QLabel("")
        self.fetched = QLabel("")
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cache)
        bar.addPermanentWidget(self.fetched)
        self._progress_source = progress_source
        self.timer = QTimer(bar)
        self.timer.setInterval(500)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    def refresh(self) -> None:
        done, total = self._progress_source()
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(done if total else 1)
        self.progress.setVisible(total > 0)
        try:
            info, stats = engine.cache_info(), engine.stats()
        except Exception:
            logger.debug("engine counters unavailable", exc_info=True)
            return
        self.cache.setText(
            f"cache {human_size(info.get('size', 0))} / {human_size(info.get('capacity', 0))}"
        )
        self.fetched.setText(
            f"fetched {human_size(stats.get('bytes_fetched', 0))} in "
            f"{int(stats.get('requests', 0))} requests"
        )
