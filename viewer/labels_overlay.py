"""Label images of an OME-Zarr image drawn over it: each label id in its colour (``image-label``
``colors``, else a stable random colour; 0 transparent), with an opacity, filled or as outlines,
and the label id and its ``properties`` in the cursor readout.

Ids are never scaled by contrast and never clipped: each distinct id of the plane on screen gets
its colour by lookup, however many there are. The label plane is read for the geometry of the
image's request (the same elements, at the screen's resolution), as an immutable read tagged
with that request's generation; a stale result is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Signal

import zarrfs.engine as engine

from . import messages


def palette(ids: np.ndarray) -> np.ndarray:
    """A stable colour (RGB ``uint8``) per id: the same id gets the same colour in every plane
    and session (a 64-bit mix of the id, not a table, so there is no largest id)."""
    x = np.asarray(ids).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    channels = [(x >> np.uint64(shift)) & np.uint64(255) for shift in (0, 8, 16)]
    rgb = np.stack(channels, axis=-1).astype(np.uint16)
    return (64 + rgb * 191 // 255).astype(np.uint8)  # never near black


@dataclass
class LabelStyle:
    opacity: float = 0.5
    outlines: bool = False


def label_rgba(ids: np.ndarray, image_label, style: LabelStyle) -> np.ndarray:
    """(rows, cols, 4) ``uint8``: each id's colour (``image_label.colors`` first), alpha scaled
    by the opacity, 0 transparent; with outlines, only pixels next to another id."""
    unique, inverse = np.unique(ids, return_inverse=True)
    colors = np.empty((len(unique), 4), np.uint8)
    colors[:, :3] = palette(unique)
    colors[:, 3] = 255
    given = image_label.colors if image_label is not None else {}
    for k, value in enumerate(unique.tolist()):
        if value in given:
            colors[k] = given[value]
    colors[:, 3] = np.rint(colors[:, 3] * style.opacity).astype(np.uint8)
    colors[unique == 0, 3] = 0
    rgba = colors[inverse.reshape(ids.shape)]
    if style.outlines:
        rgba[~boundaries(ids), 3] = 0
    return rgba


def boundaries(ids: np.ndarray) -> np.ndarray:
    """Pixels with a 4-neighbour of another id."""
    edge = np.zeros(ids.shape, bool)
    edge[1:] |= ids[1:] != ids[:-1]
    edge[:-1] |= ids[:-1] != ids[1:]
    edge[:, 1:] |= ids[:, 1:] != ids[:, :-1]
    edge[:, :-1] |= ids[:, :-1] != ids[:, 1:]
    return edge


@dataclass(frozen=True)
class LabelSource:
    """A label image: its level 0 array, which image axis each of its axes is, its metadata."""

    name: str
    array: object
    image_axes: tuple[int, ...]  # per label axis: the image axis of the same name
    image_label: object | None


def open_label(image_group, image, name: str, axis_names: tuple[str, ...]) -> LabelSource:
    """Open ``labels/<name>`` of an image (metadata reads: run it in the background)."""
    group = image_group["labels/" + name]
    label = engine.image(group)
    if label is None:
        raise engine.MetadataError(f"labels/{name} is not an OME-Zarr label image")
    array = engine.levels(group, label.multiscale)[0]
    names = label.multiscale.axis_names
    missing = [n for n in names if n not in axis_names]
    if missing or len(names) != array.ndim:
        raise engine.MetadataError(
            f"labels/{name}: axes {list(names)} do not match the image's {list(axis_names)}"
        )
    return LabelSource(name, array, tuple(axis_names.index(n) for n in names), label.image_label)


class LabelsOverlay(QObject):
    """The overlay item and its reads; ``message`` reports a failed read."""

    landed = Signal(int, object)  # generation, ReadFuture (emitted from an engine thread)
    message = Signal(object)

    def __init__(self, view_box, parent: QObject | None = None):
        super().__init__(parent)
        self.item = pg.ImageItem(axisOrder="row-major")
        self.item.setZValue(10)
        view_box.addItem(self.item)
        self.style = LabelStyle()
        self.source: LabelSource | None = None
        self.ids: np.ndarray | None = None
        self.geometry = None
        self.generation = -1
        self._future = None
        self.landed.connect(self._on_landed)

    @property
    def busy(self) -> bool:
        return self._future is not None

    def set_source(self, source: LabelSource | None) -> None:
        self._cancel()
        self.source, self.ids, self.generation = source, None, -1
        self.item.clear()

    def follow(self, request, state, image_shape: tuple[int, ...]) -> None:
        """Read the label plane for the image's ``request`` (once per generation)."""
        if self.source is None or request is None or request.generation == self.generation:
            return
        self._cancel()
        self.generation = request.generation
        selection, transpose = self._selection(request, state, image_shape)
        if selection is None:
            self.item.clear()
            self.ids = None
            return
        generation, geometry = request.generation, request.geometry
        future = self.source.array.submit(selection, priority=engine.PRIORITY_VISIBLE)
        self._future = future
        future.add_done_callback(lambda f: self.landed.emit(generation, (f, geometry, transpose)))

    def _selection(self, request, state, image_shape):
        """The label array's selection for the request's elements, or None (shapes differ)."""
        g, array = request.geometry, self.source.array
        sy, sx = max(1, round(g.sy)), max(1, round(g.sx))
        selection = []
        for k, axis in enumerate(self.source.image_axes):
            size = array.shape[k]
            if axis in (state.y_axis, state.x_axis):
                if size != image_shape[axis]:
                    return None, False
                start, count, step = (g.y0, g.ny, sy) if axis == state.y_axis else (g.x0, g.nx, sx)
                selection.append(slice(start, min(size, start + count * step), step))
            else:
                selection.append(min(state.indices[axis], size - 1))
        order = [a for a in self.source.image_axes if a in (state.y_axis, state.x_axis)]
        if len(order) != 2:
            return None, False
        return tuple(selection), order[0] == state.x_axis

    def _on_landed(self, generation: int, result) -> None:
        future, geometry, transpose = result
        if generation != self.generation:
            return  # a stale read: dropped
        self._future = None
        try:
            ids = np.asarray(future.result())
        except engine.ReadCancelled:
            return
        except Exception as exc:  # noqa: BLE001 - a failed read is a message, never a crash
            self.message.emit(messages.describe(exc, node=self.source.array.path))
            return
        ids = ids.T if transpose else ids
        full = np.zeros((geometry.ny, geometry.nx), ids.dtype)  # the edge may be short
        full[: ids.shape[0], : ids.shape[1]] = ids[: geometry.ny, : geometry.nx]
        self.ids, self.geometry = full, geometry
        self.redraw()

    def redraw(self) -> None:
        if self.ids is None or self.source is None:
            return
        g = self.geometry
        self.item.setImage(
            label_rgba(self.ids, self.source.image_label, self.style),
            autoLevels=False,
            levels=None,
        )
        self.item.setRect(QRectF(g.x0, g.y0, g.nx * g.sx, g.ny * g.sy))

    def label_at(self, y: float, x: float) -> tuple[int, dict] | None:
        """The label id (and its properties) under level-0 position (y, x), or None."""
        if self.ids is None:
            return None
        g = self.geometry
        row, col = int((y - g.y0) // g.sy), int((x - g.x0) // g.sx)
        if not (0 <= row < g.ny and 0 <= col < g.nx):
            return None
        value = int(self.ids[row, col])
        given = self.source.image_label.properties if self.source.image_label else {}
        return value, dict(given.get(value, {}))

    def _cancel(self) -> None:
        future, self._future = self._future, None
        if future is not None:
            future.cancel()
