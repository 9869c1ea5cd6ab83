"""Open a URL with storage options; remember recent stores (QSettings).

Storage options are what fsspec takes: ``anon`` for public buckets, an endpoint URL for S3-like
services, a credentials profile, and any ``key=value`` pair (values parsed as JSON when they
can be, so ``-O use_ssl=false`` is a bool).
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

logger = logging.getLogger(__name__)

MAX_RECENT = 12


def parse_option(text: str) -> tuple[str, object]:
    """``key=value`` -> (key, value); the value is JSON if it parses, else the string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected key=value, got {text!r}")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


def build_storage_options(
    url: str,
    *,
    anon: bool = False,
    endpoint_url: str | None = None,
    profile: str | None = None,
    extra: list[str] = (),
) -> dict:
    """fsspec storage options for ``url`` from the dialog's (or the command line's) fields."""
    options: dict = {}
    if anon:
        options["anon"] = True
    if endpoint_url:
        if url.startswith(("s3://", "s3a://")):
            options.setdefault("client_kwargs", {})["endpoint_url"] = endpoint_url
        else:
            options["endpoint_url"] = endpoint_url
    if profile:
        options["profile"] = profile
    for item in extra:
        key, value = parse_option(item)
        options[key] = value
    return options


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
        endpoint = options.pop("endpoint_url", None) or (
            options.get("client_kwargs", {}) or {}
        ).get("endpoint_url", "")
        options.pop("client_kwargs", None)
        self.endpoint = QLineEdit(endpoint or "")
        self.endpoint.setPlaceholderText("https://s3.example.org (S3-compatible services)")
        self.profile = QLineEdit(str(options.pop("profile", "")))
        self.profile.setPlaceholderText("credentials profile name")
        self.extra = QPlainTextEdit("\n".join(f"{k}={json.dumps(v)}" for k, v in options.items()))
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
        return url, build_storage_options(
            url,
            anon=self.anon.isChecked(),
            endpoint_url=self.endpoint.text().strip() or None,
            profile=self.profile.text().strip() or None,
            extra=extra,
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
