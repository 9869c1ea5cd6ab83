"""The hierarchy as a lazily loaded Qt item model (STYLE rule 10).

Groups report children before they are listed (``hasChildren``) and list them only when the view
asks (``canFetchMore``/``fetchMore``); the listing runs in the background and the rows are
inserted when it returns, so a remote store with thousands of groups never blocks the window.
Results that arrive after a new store was opened are dropped (the model's ``epoch``).

Arrays show their CF ``long_name`` and ``units``; coordinates (CF 5: a 1-D array named like its
dimension, or one a sibling names in its ``coordinates`` attribute) have their own icon and come
after the data variables, as xarray and Panoply tell them apart. All of it is worked out in the
background listing, from the metadata the listing fetched anyway: no read, nothing on the GUI
thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, Qt, Signal

import zarrfs.engine as engine

from . import messages
from .resources import icon
from .tasks import Background

logger = logging.getLogger(__name__)
_ROOT = QModelIndex()  # the invalid index: "no parent"

COLUMNS = ("Name", "Shape", "Type", "Long name", "Units")
NODE_ROLE = Qt.ItemDataRole.UserRole + 1
PATH_ROLE = Qt.ItemDataRole.UserRole + 2


@dataclass(frozen=True)
class CFColumns:
    """What the CF conventions say about a listed array, as the tree shows it."""

    long_name: str = ""
    units: str = ""
    coordinate: str | None = None  # "dimension" | "auxiliary" (``engine.cf.coordinate_names``)


COORDINATE_TIPS = {
    "dimension": "coordinate variable (a 1-D array named like its dimension)",
    "auxiliary": "auxiliary coordinate (named in a sibling's 'coordinates' attribute)",
}


@dataclass(eq=False)
class TreeItem:
    """One node of the hierarchy as the model holds it."""

    name: str
    path: str
    node: object
    parent: TreeItem | None = None
    children: list[TreeItem] | None = None  # None: not listed yet
    fetching: bool = False
    error: str | None = None
    row: int = 0
    extra: dict = field(default_factory=dict)
    cf: CFColumns = field(default_factory=CFColumns)

    @property
    def kind(self) -> str:
        if self.node is None:
            return "broken" if self.error else "group"
        return self.node.kind

    @property
    def is_group(self) -> bool:
        return self.kind == "group"


def node_icon_name(node) -> str:
    """Icon per node kind and shape."""
    if node.kind == "group":
        attrs = node.attrs
        if "multiscales" in attrs or "multiscales" in (attrs.get("ome") or {}):
            return "multiscales"
        return "group-implicit" if node.implicit else "group"
    dtype = node.dtype
    if dtype.kind in "OUSV" and not (dtype.kind == "V" and dtype.names is None):
        return "array-table"
    return {0: "array-0d", 1: "array-1d", 2: "array-2d"}.get(node.ndim, "array-nd")


def node_error_text(node, path: str) -> str | None:
    """Why a node's data cannot be read (its metadata cannot be used, or its codecs cannot be
    built), as one line; None for a node that reads."""
    error = node.error
    return messages.describe(error, node=path).one_line() if error is not None else None


def type_text(node) -> str:
    """An array's data type in the spec's words ("int16", "string")."""
    return node.data_type


def shape_text(node) -> str:
    if node.kind != "array":
        return ""
    shape = node.shape
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def cf_columns(node, coordinate: str | None = None) -> CFColumns:
    """``long_name`` and ``units`` of an array (empty for groups and broken nodes); attributes
    that do not parse leave the columns empty, never the node unlisted."""
    if node is None or node.kind != "array":
        return CFColumns(coordinate=coordinate)
    try:
        var = engine.cf.variable(node)
    except Exception:  # noqa: BLE001 - a node the CF view cannot describe still lists
        logger.info("no CF view of /%s", node.path, exc_info=True)
        return CFColumns(coordinate=coordinate)
    return CFColumns(var.long_name or "", var.units or "", coordinate)


def list_children(group) -> list[tuple[str, object, BaseException | None, CFColumns]]:
    """``list_members`` with each child's CF columns, data variables first, then coordinates
    (each part in the listing's order). Runs in the background."""
    members = list_members(group)
    coordinates = engine.cf.coordinate_names(
        (name, node) for name, node, _ in members if node is not None
    )
    rows = [(n, node, e, cf_columns(node, coordinates.get(n))) for n, node, e in members]
    return sorted(rows, key=lambda row: row[3].coordinate is not None)


def list_members(group) -> list[tuple[str, object, BaseException | None]]:
    """``(name, node, error)`` per child: one unreadable child must not hide its siblings."""
    try:
        return [(name, node, None) for name, node in group.members()]
    except Exception:
        logger.info("listing /%s child by child after an error", group.path, exc_info=True)
    out = []
    for name in group.keys():
        try:
            out.append((name, group[name], None))
        except Exception as exc:
            out.append((name, None, exc))
    return out


class HierarchyModel(QAbstractItemModel):
    """Columns: name, shape, data type. The top-level row is the store's root node."""

    listing_failed = Signal(object)  # messages.UserMessage
    listed = Signal(str)  # path of a group whose children were inserted

    def __init__(self, background: Background, parent: QObject | None = None):
        super().__init__(parent)
        self._background = background
        self._root = TreeItem(name="", path="", node=None, children=[])
        self.epoch = 0

    # -- content ---------------------------------------------------------------------------------

    def set_root_node(self, node, label: str) -> None:
        """Show a newly opened store (or array) whose root engine node is ``node``."""
        self.beginResetModel()
        self.epoch += 1
        top = TreeItem(name=label, path=node.path, node=node, parent=self._root)
        top.error = node_error_text(node, top.path)
        top.cf = cf_columns(node)  # its attributes are in memory already: no I/O
        if not top.is_group:
            top.children = []
        self._root.children = [top]
        self.endResetModel()

    def shows_cf_columns(self, path: str) -> bool:
        """Whether the node at ``path`` or one of its listed children has a CF long name or
        units (else those columns are empty, and the window hides them)."""
        index = self.find(path)
        if not index.isValid():
            return False
        item = self.item(index)
        return any(i.cf.long_name or i.cf.units for i in [item, *(item.children or ())])

    def clear(self) -> None:
        self.beginResetModel()
        self.epoch += 1
        self._root.children = []
        self.endResetModel()

    def item(self, index: QModelIndex) -> TreeItem:
        return index.internalPointer() if index.isValid() else self._root

    def index_of(self, item: TreeItem, column: int = 0) -> QModelIndex:
        if item is self._root or item.parent is None:
            return QModelIndex()
        return self.createIndex(item.row, column, item)

    def find(self, path: str) -> QModelIndex:
        """The index of ``path`` among the nodes listed so far (invalid if not listed)."""
        if not self._root.children:
            return QModelIndex()
        item = self._root.children[0]
        parts = [p for p in path.strip("/").split("/") if p]
        base = [p for p in item.path.split("/") if p]
        parts = parts[len(base) :] if parts[: len(base)] == base else parts
        for part in parts:
            match = [c for c in (item.children or []) if c.name == part]
            if not match:
                return QModelIndex()
            item = match[0]
        return self.index_of(item)

    # -- Qt model API ----------------------------------------------------------------------------

    def index(self, row: int, column: int, parent: QModelIndex = _ROOT) -> QModelIndex:
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        children = self.item(parent).children or []
        return self.createIndex(row, column, children[row])

    def parent(self, index: QModelIndex = _ROOT) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        return self.index_of(self.item(index).parent)

    def rowCount(self, parent: QModelIndex = _ROOT) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self.item(parent).children or [])

    def columnCount(self, parent: QModelIndex = _ROOT) -> int:
        return len(COLUMNS)

    def hasChildren(self, parent: QModelIndex = _ROOT) -> bool:
        if parent.isValid() and parent.column() != 0:
            return False
        item = self.item(parent)
        if item.children is None:
            return item.is_group
        return bool(item.children)

    def canFetchMore(self, parent: QModelIndex) -> bool:
        if parent.isValid() and parent.column() != 0:
            return False
        item = self.item(parent)
        return item.is_group and item.children is None and not item.fetching

    def fetchMore(self, parent: QModelIndex) -> None:
        if not self.canFetchMore(parent):
            return
        item = self.item(parent)
        item.fetching = True
        epoch, group = self.epoch, item.node
        self._background.run(
            lambda: list_children(group),
            lambda members: self._insert(epoch, item, members),
            lambda exc: self._listing_error(epoch, item, exc),
        )

    def _insert(self, epoch: int, item: TreeItem, members) -> None:
        if epoch != self.epoch:
            return
        children = []
        for row, (name, node, error, cf) in enumerate(members):
            path = f"{item.path}/{name}" if item.path else name
            child = TreeItem(name=name, path=path, node=node, parent=item, row=row, cf=cf)
            error = error if error is not None or node is None else node.error
            if error is not None:  # not listed, or listed but its data cannot be read
                message = messages.describe(error, node=path)
                child.error = message.one_line()
                self.listing_failed.emit(message)
            if not child.is_group:
                child.children = []
            children.append(child)
        parent_index = self.index_of(item)
        if children:
            self.beginInsertRows(parent_index, 0, len(children) - 1)
            item.children = children
            self.endInsertRows()
        else:
            item.children = []
        item.fetching = False  # only now: views call canFetchMore while rows are inserted
        self.dataChanged.emit(parent_index, parent_index)  # the "(loading…)" suffix is gone
        self.listed.emit(item.path)

    def _listing_error(self, epoch: int, item: TreeItem, exc: BaseException) -> None:
        if epoch != self.epoch:
            return
        item.fetching = False
        item.children = []
        message = messages.describe(exc, node=item.path)
        item.error = message.one_line()
        index = self.index_of(item)
        self.dataChanged.emit(index, index)
        self.listing_failed.emit(message)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        item, column = self.item(index), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return item.name + (" (loading…)" if item.fetching else "")
            if column == 3:
                return item.cf.long_name
            if column == 4:
                return item.cf.units
            if item.node is None:
                return "" if column == 1 else ("error" if item.error else "")
            if column == 1:
                return shape_text(item.node)
            return (
                type_text(item.node) if item.node is not None and item.node.kind == "array" else ""
            )
        if role == Qt.ItemDataRole.DecorationRole and column == 0:
            if item.error or item.node is None:
                return icon("error")
            return icon("coordinate" if item.cf.coordinate else node_icon_name(item.node))
        if role == Qt.ItemDataRole.ToolTipRole and column > 0:  # the whole of a clipped text
            return self.data(index, Qt.ItemDataRole.DisplayRole) or None
        if role == Qt.ItemDataRole.ToolTipRole:
            if item.error or not item.cf.coordinate:
                return item.error or f"/{item.path}"
            return f"/{item.path}: {COORDINATE_TIPS[item.cf.coordinate]}"
        if role == NODE_ROLE:
            return item.node
        if role == PATH_ROLE:
            return item.path
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section] if 0 <= section < len(COLUMNS) else None
        return None

    def flags(self, index: QModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
