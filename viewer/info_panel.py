"""The metadata panel: what a node is, its attributes as a JSON tree and as raw JSON.

For arrays it shows everything a user asks about a Zarr array (shape, data type, chunks, shards,
codecs, fill value, dimension names, decoded and stored size); for OME-Zarr images the
multiscale levels and axes, and the channels (name, colour, window). The stored size lists the store, so it is computed in the
background and filled in when it arrives.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging

import numpy as np
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import zarrfs.engine as engine

from . import messages
from .resources import icon
from .tasks import Background

human_size = engine.human_size  # one formatting of sizes for the CLI, the mount and the viewer

logger = logging.getLogger(__name__)


MAX_DEPTH = 64  # tree levels shown; deeper ones are one "…" row
JSON_DEPTH = 100  # deeper values become "…" (600 levels overflowed the stack)
MAX_ITEMS = 200  # children shown per object or list, then a "… N more" row
MAX_RAW_CHARS = 200_000  # raw JSON beyond this is cut (3 MB froze the GUI for seconds)
ELLIPSIS = "…"


def jsonable(value, depth: int = 0):
    """Anything the engine returns (dataclasses, NumPy scalars, tuples) as plain JSON values;
    values nested deeper than ``JSON_DEPTH`` become ``"…"``."""
    if depth > JSON_DEPTH:
        return ELLIPSIS
    deeper = depth + 1
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), deeper) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v, deeper) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, deeper) for v in value]
    if isinstance(value, np.generic | bytes | str | int | float | bool) or value is None:
        return engine.json_value(value)  # the engine's one convention (bytes as base64, "NaN")
    if hasattr(value, "__dict__"):
        return {k: jsonable(v, deeper) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def dumps(value, indent: int | None = None) -> str:
    """JSON as people read it: non-ASCII text as itself, not ``\\uXXXX`` escapes."""
    return json.dumps(value, indent=indent, ensure_ascii=False)


def raw_text(value) -> str:
    """``value`` as indented JSON, cut after ``MAX_RAW_CHARS`` characters."""
    text = dumps(value, indent=2)
    if len(text) <= MAX_RAW_CHARS:
        return text
    return f"{text[:MAX_RAW_CHARS]}\n{ELLIPSIS} ({len(text) - MAX_RAW_CHARS} more characters)"


def fill_json_tree(
    parent: QTreeWidgetItem | QTreeWidget, key: str, value, depth: int = 0
) -> QTreeWidgetItem:
    """Add ``key: value`` under ``parent``, objects and lists expandable: at most
    ``MAX_ITEMS`` children each and ``MAX_DEPTH`` levels, so any document shows quickly."""
    item = QTreeWidgetItem([key, ""])
    if (
        isinstance(value, list)
        and len(value) <= 16
        and all(not isinstance(v, dict | list) for v in value)
    ):
        item.setText(1, dumps(value))
    elif isinstance(value, dict | list) and depth >= MAX_DEPTH:
        item.setText(1, ELLIPSIS)
    elif isinstance(value, dict | list):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        item.setText(1, f"{{{len(value)}}}" if isinstance(value, dict) else f"[{len(value)}]")
        for k, v in itertools.islice(pairs, MAX_ITEMS):
            fill_json_tree(item, str(k), v, depth + 1)
        if len(value) > MAX_ITEMS:
            item.addChild(QTreeWidgetItem([f"{ELLIPSIS} {len(value) - MAX_ITEMS} more", ""]))
    else:
        item.setText(1, dumps(value))
    item.setToolTip(1, item.text(1))  # the whole text where the column clips it
    if isinstance(parent, QTreeWidget):
        parent.addTopLevelItem(item)
    else:
        parent.addChild(item)
    return item


def array_facts(node) -> list[tuple[str, object]]:
    """The rows of the summary of an array (the stored size is added later)."""
    return [
        ("kind", "array"),
        ("zarr format", node.zarr_format),
        ("shape", list(node.shape)),
        ("data type", node.data_type),
        ("NumPy dtype", str(node.dtype)),
        ("chunks", list(node.chunks)),
        ("shards", list(node.shards) if node.shards else None),
        ("chunk grid", list(node.chunk_grid_shape)),
        ("codecs", engine.codecs_text(node.codecs)),
        ("fill value", jsonable(node.fill_value)),
        ("dimension names", list(node.dimension_names) if node.dimension_names else None),
        ("order", node.order),
        ("decoded size", human_size(node.nbytes)),
        ("stored size", "computing…"),
    ]


def group_facts(node) -> list[tuple[str, object]]:
    rows = [("kind", "group"), ("zarr format", node.zarr_format)]
    if node.implicit:
        rows.append(("implicit", True))
    return rows


def broken_facts(node) -> list[tuple[str, object]]:
    """A node whose metadata cannot be used: what its document says it is."""
    return [
        ("kind", f"{node.node_type or 'node'} (its metadata cannot be used)"),
        ("zarr format", node.zarr_format),
    ]


FACTS = {"array": array_facts, "group": group_facts, "broken": broken_facts}


def ome_facts(group) -> list[tuple[str, object]]:
    """OME-Zarr multiscales and axes of ``group`` (empty when it is not an OME-Zarr image)."""
    try:
        scales = engine.multiscales(group)
    except Exception as exc:
        return [("OME-Zarr", messages.describe(exc, node=group.path).one_line())]
    if not scales:
        return []
    return [("OME-Zarr multiscales", jsonable(scales))]


def channel_rows(channels) -> list[tuple[str, str, tuple[int, int, int]]]:
    """``("0: DAPI", "#0000FF  window 0-3000", colour)`` for each of the engine's ``Channel``
    (the text as ``zarrfs info`` writes it)."""
    rows = []
    for k, c in enumerate(channels):
        text = "#" + "".join(f"{v:02X}" for v in c.color)
        text += f"  window {c.window.start:g}-{c.window.end:g}" if c.window else "  window auto"
        rows.append((f"{k}: {c.label}", text + ("" if c.active else "  (inactive)"), c.color))
    return rows


def swatch_icon(color: tuple[int, int, int]) -> QIcon:
    pixmap = QPixmap(12, 12)
    pixmap.fill(QColor(*color))
    return QIcon(pixmap)


STORED_SIZE_ON_DEMAND = "double-click to compute (lists every chunk)"
REMOTE_SCHEMES = {"http", "https", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"}


def node_url_of(node, store_url: str) -> str:
    return node.url or store_url or ""


def is_remote(url: str) -> bool:
    """Whether listing ``url`` costs network round trips (the last protocol of a chain)."""
    last = url.split("::")[-1] if "::" in url else url
    first = url.split("::")[0]
    schemes = {part.split("://")[0].lower() for part in (first, last) if "://" in part}
    return bool(schemes & REMOTE_SCHEMES)


class InfoPanel(QWidget):
    """Tabs: Summary (facts as a tree), Attributes (JSON tree), Raw JSON (stored documents)."""

    def __init__(self, background: Background, parent: QWidget | None = None):
        super().__init__(parent)
        self._background = background
        self._node = None
        self._store_url = ""
        self._token = 0
        self.summary = QTreeWidget()
        self.summary.setHeaderLabels(["Property", "Value"])
        self.summary.itemDoubleClicked.connect(self._summary_double_clicked)
        self.attributes = QTreeWidget()
        self.attributes.setHeaderLabels(["Key", "Value"])
        self.raw = QPlainTextEdit()
        self.raw.setReadOnly(True)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.summary, "Summary")
        self.tabs.addTab(self.attributes, "Attributes")
        self.tabs.addTab(self.raw, "Raw JSON")
        self.copy_path = QPushButton(icon("copy"), "Copy path")
        self.copy_url = QPushButton(icon("copy"), "Copy URL")
        self.copy_path.clicked.connect(lambda: self._copy(f"/{self.node_path()}"))
        self.copy_url.clicked.connect(lambda: self._copy(self.node_url()))
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_path)
        buttons.addWidget(self.copy_url)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.tabs)

    def node_path(self) -> str:
        return getattr(self._node, "path", "") or ""

    def node_url(self) -> str:
        url = getattr(self._node, "url", None)
        if url:
            return url
        base = self._store_url.rstrip("/")
        return f"{base}/{self.node_path()}" if self.node_path() else base

    def _copy(self, text: str) -> None:
        QApplication.clipboard().setText(text)

    def show_node(self, node, store_url: str = "", multiscale_group=None, channels=()) -> None:
        """Describe ``node``; ``multiscale_group`` is its OME-Zarr image group, if any;
        ``channels`` the engine's ``Channel`` of each index of its channel axis."""
        self._node, self._store_url = node, store_url
        self._token += 1
        is_array = node.kind == "array"
        rows = FACTS.get(node.kind, group_facts)(node)
        if node.error is not None:  # the reason comes first, where it is seen
            rows.insert(0, ("error", messages.describe(node.error, node=node.path).text))
        ome_source = node if node.kind == "group" else multiscale_group
        if ome_source is not None:
            rows += ome_facts(ome_source)
        self._fill_summary(rows)
        self._add_channels(channels)
        self.attributes.clear()
        # a broken node's attributes raise its error, shown above; its documents are stored
        attrs = jsonable(node.attrs or {}) if node.kind != "broken" else {}
        for key, value in itertools.islice(attrs.items(), MAX_ITEMS):
            fill_json_tree(self.attributes, key, value)
        if len(attrs) > MAX_ITEMS:
            self.attributes.addTopLevelItem(
                QTreeWidgetItem([f"{ELLIPSIS} {len(attrs) - MAX_ITEMS} more", ""])
            )
        self.attributes.expandToDepth(0)
        self.raw.setPlainText(raw_text(jsonable(node.stored_metadata)))
        if is_array:
            self._add_cf_view(node)
        if is_array and node.error is not None:
            self._set_stored_size(self._token, "unknown (the data cannot be read)")
        elif is_array and not is_remote(node_url_of(node, store_url)):
            self.compute_stored_size()
        elif is_array:
            self._set_stored_size(self._token, STORED_SIZE_ON_DEMAND)

    def compute_stored_size(self) -> None:
        """List the array's chunk objects in the background and show their total size.

        Automatic for local stores only: over HTTP the listing walks one directory per chunk
        row, one round trip each (a 10 x 8 x 8 chunk grid behind 0.3 s of latency takes 28 s).
        """
        node = self._node
        if node is None or node.kind != "array":
            return
        token = self._token
        self._set_stored_size(token, "computing…")
        self._background.run(
            node.stored_size,
            lambda size: self._set_stored_size(token, human_size(size)),
            lambda exc: self._set_stored_size(token, messages.describe(exc, node=node.path).text),
        )

    def _add_cf_view(self, node) -> None:
        """The CF view ``zarrfs info`` prints (long name, units, packing, each dimension with
        its first and last value, calendar), read in the background (coordinates' ends)."""
        token = self._token

        def add(rows) -> None:
            if token != self._token or not rows:
                return
            top = QTreeWidgetItem(["CF", node.name])
            for key, text in rows:
                child = QTreeWidgetItem([key, text.replace("\n", "; ")])
                child.setToolTip(1, text)
                top.addChild(child)
            self.summary.addTopLevelItem(top)
            top.setExpanded(True)

        def rows():
            found = engine.cf_summary(node)
            return engine.cf_summary_rows(found) if found is not None else []

        self._background.run(
            rows, add, lambda exc: logger.info("CF view of %s: %s", node.path, exc)
        )

    def _summary_double_clicked(self, item, _column) -> None:
        if item.text(0) == "stored size":
            self.compute_stored_size()

    def _fill_summary(self, rows) -> None:
        self.summary.clear()
        fill_json_tree(self.summary, "path", "").setText(1, f"/{self.node_path()}")
        for key, value in rows:
            item = fill_json_tree(self.summary, key, value)
            if isinstance(value, str):
                item.setText(1, value)
                item.setToolTip(1, value)
        self.summary.expandToDepth(0)
        self.summary.resizeColumnToContents(0)

    def _add_channels(self, channels) -> None:
        """A "channels" row, one child per channel: its name, a swatch of its colour, its
        colour and window as text."""
        if not channels:
            return
        top = QTreeWidgetItem(["channels", str(len(channels))])
        for name, text, color in channel_rows(channels):
            child = QTreeWidgetItem([name, text])
            child.setIcon(0, swatch_icon(color))
            top.addChild(child)
        self.summary.addTopLevelItem(top)
        top.setExpanded(True)

    def _set_stored_size(self, token: int, text: str) -> None:
        if token != self._token:
            return
        for i in range(self.summary.topLevelItemCount()):
            item = self.summary.topLevelItem(i)
            if item.text(0) == "stored size":
                item.setText(1, text)

    def summary_value(self, key: str) -> str | None:
        """The text shown for ``key`` in the summary (for tests and the screenshot check)."""
        for i in range(self.summary.topLevelItemCount()):
            item = self.summary.topLevelItem(i)
            if item.text(0) == key:
                return item.text(1)
        return None

    def clear(self) -> None:
        self._node = None
        self._token += 1
        self.summary.clear()
        self.attributes.clear()
        self.raw.clear()
