"""Orthogonal views: beside the XY plane, the XZ and YZ planes through a crosshair, for any
image of 3 or more dimensions (the depth axis: the one named ``z``, else the first slider axis
that is not the channel axis).

Each pane is a ``PlaneController`` of its own over the same pyramid (so each is read lazily, at
its own screen resolution, and a composite stays a composite), with a ``ViewState`` of its own
whose indices follow the main view's and the crosshair. Clicking a pane moves the crosshair.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from .chunk_grid import ChunkGridItem
from .coloured_image import ColouredImageItem
from .coordinate_axis import CoordinateAxis
from .coordinates import AxisCoordinate
from .plane_controller import PlaneController
from .view_state import ViewState


def depth_axis(state: ViewState, channel_axis: int | None) -> int | None:
    """The axis the orthogonal planes run along, or None (a 2-D image)."""
    candidates = [a for a in state.slider_axes if a != channel_axis]
    named = [a for a in candidates if state.dimension_names[a].lower() == "z"]
    return (named or candidates or [None])[0]


class OrthoPane:
    """One orthogonal plane: a view box, its axes (ticked in coordinates, as the main view's),
    its items, its controller and its state."""

    def __init__(self, layout: pg.GraphicsLayoutWidget, row: int, parent: QWidget):
        self.view_box = layout.addViewBox(row=2 * row, col=1, lockAspect=True, invertY=True)
        self.left, self.bottom = CoordinateAxis("left"), CoordinateAxis("bottom")
        for axis in (self.left, self.bottom):
            axis.linkToView(self.view_box)
        layout.addItem(self.left, row=2 * row, col=0)
        layout.addItem(self.bottom, row=2 * row + 1, col=1)
        self.view_box.setMenuEnabled(False)
        self.image_item = ColouredImageItem(axisOrder="row-major")
        self.composite_item = pg.ImageItem(axisOrder="row-major")
        self.grid_item = ChunkGridItem()
        self.grid_item.setVisible(False)
        for item in (self.image_item, self.composite_item, self.grid_item):
            self.view_box.addItem(item)
        pen = pg.mkPen((255, 255, 0, 160), width=1)
        self.row_line = pg.InfiniteLine(angle=0, pen=pen, movable=False)
        self.col_line = pg.InfiniteLine(angle=90, pen=pen, movable=False)
        self.view_box.addItem(self.row_line)
        self.view_box.addItem(self.col_line)
        self.controller = PlaneController(
            self.image_item, self.grid_item, parent, composite_item=self.composite_item
        )
        self.state: ViewState | None = None

    def show(
        self, state: ViewState, levels, arrays, channels, node_path: str, frame: PaneFrame
    ) -> None:
        new = self.state is None or (self.state.y_axis, self.state.x_axis) != (
            state.y_axis,
            state.x_axis,
        )
        self.state = state
        self.controller.set_source(node_path, state, levels, arrays, channels)
        self.view_box.invertY(not frame.north_up)
        self.view_box.setAspectLocked(frame.aspect is not None, ratio=frame.aspect or 1.0)
        self.label_axes(frame.coordinates)
        if new:
            h, w = state.shape[state.y_axis], state.shape[state.x_axis]
            self.view_box.setRange(QRectF(0, 0, w, h), padding=0.02)
        self.refresh(force=True)

    def label_axes(self, coordinates: dict[int, AxisCoordinate]) -> None:
        """Title and tick the pane's axes: in ``coordinates`` where an axis has one."""
        state = self.state
        for item, axis in ((self.left, state.y_axis), (self.bottom, state.x_axis)):
            coordinate = coordinates.get(axis)
            title = coordinate.title() if coordinate is not None else state.axis_label(axis)
            item.set_coordinate(coordinate, title, state.shape[axis])

    def refresh(self, force: bool = False) -> None:
        if self.state is None:
            return
        (x0, x1), (y0, y1) = self.view_box.viewRange()
        rect = self.view_box.sceneBoundingRect()
        screen = (max(int(rect.height()), 64), max(int(rect.width()), 64))
        self.controller.update_view((y0, y1, x0, x1), screen, force=force)


@dataclass(frozen=True)
class PaneFrame:
    """How a pane draws its plane: north up, its aspect ratio (None: free), its axes' ticks."""

    north_up: bool = False
    aspect: float | None = 1.0
    coordinates: dict = field(default_factory=dict)


def pane_frame(rows: int, cols: int, physical, cf, coordinates) -> PaneFrame:
    """The frame of a pane of ``rows`` x ``cols``, as the main view would draw those axes:
    a map north up, a free aspect with a time or vertical axis (CF), else the physical one."""
    if cf is not None and not cf.lock_aspect(rows, cols):
        aspect = None
    else:
        aspect = physical.aspect(rows, cols) if physical is not None else 1.0
    north_up = cf is not None and cf.north_up(rows)
    return PaneFrame(north_up=north_up, aspect=aspect, coordinates=coordinates)


class OrthoViews(QWidget):
    """The XZ pane (rows: depth) over the YZ pane (columns: depth); ``moved(axis, index)``
    when a click moves the crosshair along an axis of the image."""

    moved = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget()
        self.xz = OrthoPane(self.graphics, 0, self)
        self.yz = OrthoPane(self.graphics, 1, self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.graphics)
        self.depth: int | None = None
        self._main: ViewState | None = None
        self._key: tuple | None = None
        self._coordinates: dict | None = None
        self.graphics.scene().sigMouseClicked.connect(self._clicked)
        for pane in (self.xz, self.yz):
            pane.view_box.sigRangeChanged.connect(lambda *_a, p=pane: p.refresh())
        self.setMinimumWidth(260)
        self.hide()

    def forget(self) -> None:
        """Show the planes again at the next ``follow`` (a new array, or shown anew)."""
        self._key = None
        for pane in (self.xz, self.yz):
            pane.controller.clear()
            pane.state = None

    def redraw(self) -> None:
        """Draw again what is loaded (a channel toggled or its window changed)."""
        for pane in (self.xz, self.yz):
            if pane.state is not None:
                pane.controller.redraw()

    @property
    def busy(self) -> bool:
        return self.isVisible() and any(p.controller.busy for p in (self.xz, self.yz))

    def follow(
        self,
        main: ViewState,
        levels,
        arrays,
        channels,
        node_path,
        physical,
        cf=None,
        coordinates: dict[int, AxisCoordinate] | None = None,
    ) -> None:
        """Show the planes through ``main``'s indices (the crosshair: its y and x indices);
        ``cf`` (``cf_display.CFView``) and ``coordinates`` (``coordinates.load``'s) frame and
        tick them as the main view is."""
        coordinates = coordinates or {}
        self._main = main
        self.depth = depth_axis(main, channels.axis if channels is not None else None)
        if self.depth is None or not self.isVisible():
            return
        y, x, z = main.y_axis, main.x_axis, self.depth
        composite = channels is not None and channels.composite
        key = (tuple(main.indices), y, x, z, composite, main.field_name, main.complex_mode)
        if key == self._key:
            if coordinates is not self._coordinates:  # they were read meanwhile
                for pane in (self.xz, self.yz):
                    if pane.state is not None:
                        pane.label_axes(coordinates)
                self._coordinates = coordinates
            return  # the same planes: panning the main view reads nothing here
        for pane, rows, cols in ((self.xz, z, x), (self.yz, y, z)):
            state = replace(main, indices=list(main.indices))
            state.set_display_axes(rows, cols)  # (not through __init__: it moves (0, 1))
            state.bump()
            frame = pane_frame(rows, cols, physical, cf, coordinates)
            pane.show(state, levels, arrays, channels, node_path, frame)
        self._coordinates = coordinates
        self._key = key
        iy, ix, iz = (main.indices[a] + 0.5 for a in (y, x, z))
        self.xz.row_line.setValue(iz)
        self.xz.col_line.setValue(ix)
        self.yz.row_line.setValue(iy)
        self.yz.col_line.setValue(iz)

    def _clicked(self, event) -> None:
        if self._main is None or self.depth is None:
            return
        pos = event.scenePos()
        for pane in (self.xz, self.yz):
            if pane.state is not None and pane.view_box.sceneBoundingRect().contains(pos):
                point = pane.view_box.mapSceneToView(pos)
                self.moved.emit(pane.state.y_axis, int(point.y()))
                self.moved.emit(pane.state.x_axis, int(point.x()))
