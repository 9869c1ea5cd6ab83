"""Open a URL with storage options; remember recent stores (QSettings).

Storage options are what fsspec takes: ``anon`` for public buckets, an endpoint URL for S3-like
services, a credentials profile, and any ``key=value`` pair, read by the rules every command
follows (``zarrfs.storage_options``: values are JSON when they parse, so ``use_ssl=false`` is a
bool; dotted keys nest; the endpoint is the top-level ``endpoint_url``).
"""

from __future__ import annotations

import json
import logging

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from zarrfs.storage_options import option_items, storage_options

logger = logging.getLogger(__name__)

MAX_RECENT = 12


class OpenUrlDialog(QDialog):
    """URL plus anonymous / endpoint / profile / extra options."""

    def __init__(self, parent: QWidget | None = None, url: str = "", options: dict | None = None):
        super().__init__(parent)
        self.setWindowTitle("Open Zarr store")
        options = dict(options or {})
        self.url = QLineEdit(url)
        self.url.setPlaceholderText("s3://bucket/data.zarr, https://…, /path/to/data.zarr")
        self.anon = QCheckBox("Anonymous access (public data)")
        self.anon.setChecked(bool(options.pop("anon", False)))
        self.endpoint = QLineEdit(str(options.pop("endpoint_url", "") or ""))
        self.endpoint.setPlaceholderText("https://s3.example.org (S3-compatible services)")
        self.profile = QLineEdit(str(options.pop("profile", "")))
        self.profile.setPlaceholderText("credentials profile name")
        self.extra = QPlainTextEdit("\n".join(option_items(options)))
        self.extra.setPlaceholderText("one key=value per line, e.g. requester_pays=true")
        self.extra.setMaximumHeight(80)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("URL:", self.url)
        form.addRow("", self.anon)
        form.addRow("Endpoint:", self.endpoint)
        form.addRow("Profile:", self.profile)
        form.addRow("Options:", self.extra)
        form.addRow(buttons)
        self.resize(560, 260)

    def result_options(self) -> tuple[str, dict]:
        """(url, storage options); raises ValueError on a malformed option line."""
        url = self.url.text().strip()
        extra = [line for line in self.extra.toPlainText().splitlines() if line.strip()]
        return url, storage_options(
            extra,
            anon=self.anon.isChecked(),
            endpoint_url=self.endpoint.text().strip() or None,
            profile=self.profile.text().strip() or None,
            source="an option line",
        )


def settings() -> QSettings:
    """The viewer's settings (an INI file under the user's config folder)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "zarrfs", "viewer")


def recent_stores(store: QSettings) -> list[tuple[str, dict]]:
    raw = store.value("recent", "[]")
    try:
        items = json.loads(raw if isinstance(raw, str) else "[]")
        return [(str(u), dict(o)) for u, o in items][:MAX_RECENT]
    except (ValueError, TypeError):
        return []


def add_recent(store: QSettings, url: str, options: dict) -> list[tuple[str, dict]]:
    """Put ``url`` first in the recent list (credentials-like options are not remembered)."""
    safe = {k: v for k, v in options.items() if k not in ("key", "secret", "token", "password")}
    items = [(u, o) for u, o in recent_stores(store) if u != url]
    items.insert(0, (url, safe))
    items = items[:MAX_RECENT]
    store.setValue("recent", json.dumps(items))
    store.sync()
    return items
