"""The version picker beside the tree: which version of an Icechunk repository is shown
(branches, tags, then the history with times and messages), and another to compare it with.

Hidden for a plain Zarr store. Choosing a version emits ``chosen({"branch": name})`` (or
``tag``/``snapshot``): the window reopens the store at it, keeping the selected node and plane
where they exist. Choosing a version to compare with computes the chunks of the shown array
that changed between the two (Icechunk's diff, off the GUI thread) and emits ``changes`` for the
chunk overlay (``ChangedChunksItem``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPen
from PySide6.QtWidgets import QComboBox, QFormLayout, QWidget

import zarrfs.engine as engine

from . import messages


@dataclass(frozen=True)
class VersionEntry:
    """One row of the picker: its text, the version it opens, the snapshot it is, a tooltip."""

    label: str
    version: dict
    snapshot_id: str
    tooltip: str


def _when(snapshot: engine.Snapshot) -> str:
    return snapshot.written_at.strftime("%Y-%m-%d %H:%M:%S")


def version_entries(repo: engine.Repository) -> list[VersionEntry]:
    """Branches, then tags, then every snapshot newest first (no Qt: runs in a worker)."""
    out = []
    history = repo.history()
    by_id = {s.id: s for s in history}
    for kind, refs in (("branch", repo.branches()), ("tag", repo.tags())):
        for name, sid in refs.items():
            snap = by_id.get(sid) or repo.snapshot(sid)
            out.append(
                VersionEntry(
                    f"{kind} {name}",
                    {kind: name},
                    sid,
                    f"{sid}  {_when(snap)} UTC\n{snap.message}",
                )
            )
    for snap in history:
        message = " ".join(snap.message.split())
        out.append(
            VersionEntry(
                f"{_when(snap)}  {message[:40]}  {snap.id[:8]}",
                {"snapshot": snap.id},
                snap.id,
                f"{snap.id}  {_when(snap)} UTC\n{snap.message}\nparent {snap.parent_id or '-'}",
            )
        )
    return out


def plane_chunks(changed, chunks, y_axis: int, x_axis: int, indices) -> set[tuple[int, int]]:
    """The ``(row, col)`` chunks of the plane at ``indices`` among ``changed`` (chunk coords of
    the whole array): those in the same chunk as the plane along every other axis."""
    out = set()
    for coords in changed:
        if len(coords) != len(chunks):
            continue
        if all(
            coords[a] == indices[a] // chunks[a]
            for a in range(len(chunks))
            if a not in (y_axis, x_axis)
        ):
            out.add((coords[y_axis], coords[x_axis]))
    return out


class ChangedChunksItem(pg.GraphicsObject):
    """Outlines, over the image, the chunks that changed between the version shown and the one
    compared with; the plane and its axes come from ``view_state()`` at each paint."""

    COLOUR = QColor(255, 0, 200)

    def __init__(self, view_state):
        super().__init__()
        self._view_state = view_state
        self._changed: set[tuple[int, ...]] = set()
        self._chunks: tuple[int, ...] = ()
        self._bounds = QRectF()
        self.setZValue(11)

    def set_changed(self, changed, chunks, shape) -> None:
        """``changed``: chunk coords of an array of ``shape`` with chunks ``chunks``."""
        self.prepareGeometryChange()
        self._changed, self._chunks = set(changed), tuple(chunks)
        self._bounds = QRectF(0, 0, shape[-1], shape[-2]) if len(shape) >= 2 else QRectF()
        self.update()

    def plane_changed(self) -> set[tuple[int, int]]:
        state = self._view_state()
        if state is None or not self._changed or len(self._chunks) != state.ndim:
            return set()
        self._bounds = QRectF(0, 0, state.shape[state.x_axis], state.shape[state.y_axis])
        return plane_chunks(self._changed, self._chunks, state.y_axis, state.x_axis, state.indices)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, *args) -> None:
        state = self._view_state()
        plane = self.plane_changed()
        if state is None or not plane:
            return
        ch, cw = self._chunks[state.y_axis], self._chunks[state.x_axis]
        pen = QPen(self.COLOUR, 2)
        pen.setCosmetic(True)
        painter.setPen(pen)
        fill = QColor(self.COLOUR)
        fill.setAlpha(40)
        painter.setBrush(QBrush(fill))
        for row, col in plane:
            painter.drawRect(QRectF(col * cw, row * ch, cw, ch).intersected(self._bounds))


class VersionPicker(QWidget):
    """ "Version" and "Compare with" for a repository's root node; hidden otherwise."""

    chosen = Signal(dict)
    #: (node path, changed chunk coords, chunks, shape) of the array shown, or an empty set
    changes = Signal(str, object, object, object)
    message = Signal(object)

    def __init__(self, background, parent: QWidget | None = None):
        super().__init__(parent)
        self.background = background
        self.version = QComboBox()
        self.version.setToolTip("The version of the Icechunk repository shown")
        self.compare = QComboBox()
        self.compare.setToolTip(
            "Outline the chunks of the shown array that changed since this version"
        )
        form = QFormLayout(self)
        form.setContentsMargins(4, 2, 4, 2)
        form.addRow("Version", self.version)
        form.addRow("Changes since", self.compare)
        self.repository: engine.Repository | None = None
        self.shown: engine.Version | None = None
        self.entries: list[VersionEntry] = []
        self._node: Any = None
        self._generation = 0
        self.version.activated.connect(self._version_activated)
        self.compare.activated.connect(lambda _i: self.compare_node(self._node))
        self.hide()

    def show_repository(self, root) -> None:
        """Fill the picker for the root node just opened (hide it for a plain store)."""
        found = engine.version_of(root) if root is not None else None
        self._generation += 1
        if found is None:
            self.repository = self.shown = None
            self.hide()
            return
        self.repository, self.shown = found
        generation = self._generation
        self.background.run(
            lambda: version_entries(found[0]),
            lambda entries: self._fill(generation, entries),
            lambda exc: self.message.emit(messages.describe(exc, url=found[0].url)),
        )

    def _fill(self, generation: int, entries: list[VersionEntry]) -> None:
        if generation != self._generation or self.shown is None:
            return
        self.entries = entries
        for combo in (self.version, self.compare):
            combo.blockSignals(True)
            combo.clear()
        self.compare.addItem("(nothing)")
        current = 0
        for i, entry in enumerate(entries):
            self.version.addItem(entry.label)
            self.version.setItemData(i, entry.tooltip, _TOOLTIP_ROLE)
            self.compare.addItem(entry.label)
            self.compare.setItemData(i + 1, entry.tooltip, _TOOLTIP_ROLE)
            kind, name = next(iter(entry.version.items()))
            if (kind, name) == (self.shown.kind, self.shown.name):
                current = i
        self.version.setCurrentIndex(current)
        for combo in (self.version, self.compare):
            combo.blockSignals(False)
        self.show()

    def _version_activated(self, index: int) -> None:
        if 0 <= index < len(self.entries):
            entry = self.entries[index]
            kind, name = next(iter(entry.version.items()))
            if self.shown is None or (kind, name) != (self.shown.kind, self.shown.name):
                self.chosen.emit(dict(entry.version))

    def compared_snapshot(self) -> str | None:
        index = self.compare.currentIndex() - 1
        return self.entries[index].snapshot_id if 0 <= index < len(self.entries) else None

    def compare_node(self, node) -> None:
        """Compute, off the GUI thread, the chunks of ``node`` (an array) that changed between
        the version compared with and the one shown; emits ``changes``."""
        self._node = node
        other, repo, shown = self.compared_snapshot(), self.repository, self.shown
        if node is None or other is None or repo is None or shown is None or node.kind != "array":
            self.changes.emit("", set(), (), ())
            return
        path, shape = node.path, tuple(node.shape)
        chunks = tuple(node.shards or node.chunks)  # Icechunk's chunks are stored objects
        self.background.run(
            lambda: repo.changed_chunks(path, other, shown.snapshot_id),
            lambda changed: self._changed(node, changed, chunks, shape),
            lambda exc: self.message.emit(messages.describe(exc, node=path)),
        )

    def _changed(self, node, changed, chunks, shape) -> None:
        if node is self._node and node is not None:
            self.changes.emit(node.path, changed, chunks, shape)


_TOOLTIP_ROLE = 3  # Qt.ItemDataRole.ToolTipRole
