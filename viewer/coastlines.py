"""Coastlines over latitude/longitude maps (View > Coastlines, on by default).

When the axes on screen are a latitude and a longitude with their coordinate variables read,
the shorelines (``coastline_data``) are placed on the plane in a worker and drawn over it in
one path, clipped at the plane's edge, in screen pixels of their own width at any zoom; a view
zoomed in to a region gets the finer resolution (placed again as the zoom settles). The
full-resolution export draws them over its whole plane (``ShownPlane.coastlines``: the map's
coordinates). Without the data
package the menu item says what to install, and so does the status bar when a map is shown.
"""

from __future__ import annotations

import logging

import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QColor, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QGraphicsRectItem

from . import coastline_data
from .coastline_data import COLOUR, Polylines

logger = logging.getLogger(__name__)

#: the lines' width in screen pixels
WIDTH = 1.0
SETTING = "coastlines"


class CoastlineItem(QGraphicsRectItem):
    """The plane's rectangle, which clips the path of the lines inside it."""

    def __init__(self):
        super().__init__()
        self.setPen(QPen(Qt.PenStyle.NoPen))
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape)
        self.setZValue(15)  # over the plane, its labels and chunk grid; under the series' spot
        self.path = QGraphicsPathItem(self)
        pen = QPen(QColor(*COLOUR))
        pen.setCosmetic(True)
        pen.setWidthF(WIDTH)
        self.path.setPen(pen)

    def draw(self, lines: Polylines | None, width: int, height: int) -> None:
        self.setRect(QRectF(0, 0, width, height))
        if lines is None or len(lines) == 0:
            self.path.setPath(QPainterPath())
            return
        self.path.setPath(pg.arrayToQPath(lines.x, lines.y, connect=lines.joined))


class Coastlines(QObject):
    """Follows the image view (``view``): draws the coastlines of a map, or nothing."""

    def __init__(self, view):
        super().__init__(view)
        self.view = view
        self.item = CoastlineItem()
        self.item.setVisible(False)
        view.view_box.addItem(self.item, ignoreBounds=True)
        self.enabled = True
        self.lines: Polylines | None = None  # on the plane on screen, when drawn
        self.hint = None  # called with a text when a map is shown and the data is missing
        self._key: tuple | None = None  # the map whose lines are drawn or being placed
        self._resolution: str | None = None
        self._cut: tuple | None = None  # the part of the plane placed (None: all of it)
        self._axes: tuple | None = None  # the map's (columns', rows') coordinates

    def set_enabled(self, on: bool) -> None:
        """View > Coastlines."""
        self.enabled = on
        self.item.setVisible(on and self.lines is not None)

    def shown_lines(self) -> Polylines | None:
        """The lines drawn over the plane on screen (None: none)."""
        return self.lines if self.item.isVisible() else None

    def shown_map(self) -> tuple | None:
        """The (columns', rows') coordinates of the map whose coastlines are drawn (None: no
        coastlines on screen): what an export needs to draw them over the whole plane."""
        return self._axes if self.item.isVisible() else None

    def follow(self) -> None:
        """The axes, their coordinates or the zoom changed: place the coastlines for the plane
        on screen at the resolution for the view (in a worker), or draw none when it is no
        latitude/longitude map."""
        view, state = self.view, self.view.state
        found = view.image_axes.coordinates
        x_coord = found.get(state.x_axis) if state is not None else None
        y_coord = found.get(state.y_axis) if state is not None else None
        if not coastline_data.is_map(x_coord, y_coord):
            self.clear()
            return
        y0, y1, x0, x1 = view.view_rect()
        x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
        resolution = coastline_data.resolution(x_coord, y_coord, (x0, x1), (y0, y1))
        key = (id(state), id(x_coord), id(y_coord))
        held = self._cut
        inside = held is None or (
            held[0] <= x0 and x1 <= held[1] and held[2] <= y0 and y1 <= held[3]
        )
        if (key, resolution) == (self._key, self._resolution) and inside:
            return
        if key != self._key:  # another map: none until its own are placed
            self.lines = None
            self.item.setVisible(False)
        # the finer lines are many (240,000 points): placed around the view only
        cut = None if resolution == "l" else coastline_data.around(x0, x1, y0, y1)
        self._key, self._resolution, self._cut = key, resolution, cut
        self._axes = (x_coord, y_coord)
        if not coastline_data.available():
            if self.hint is not None:
                self.hint(f"Coastlines: {coastline_data.INSTALL_HINT}")
            return
        if view.background is None:
            return

        def place() -> Polylines:
            shore = coastline_data.load(resolution)
            return coastline_data.project(shore, x_coord, y_coord, cut)

        def placed(lines: Polylines) -> None:
            if (self._key, self._resolution, self._cut) == (key, resolution, cut):
                self.lines = lines
                self.item.draw(lines, x_coord.size, y_coord.size)
                self.item.setVisible(self.enabled)

        def failed(exc: BaseException) -> None:  # a broken install: said, the map still drawn
            logger.warning("coastlines not drawn: %s", exc)
            if self.hint is not None:
                self.hint(f"Coastlines not drawn: {exc}")

        view.background.run(place, placed, failed)

    def clear(self) -> None:
        self._key, self._resolution, self._cut, self.lines = None, None, None, None
        self._axes = None
        self.item.setVisible(False)


def install(window, view_menu) -> None:
    """View > Coastlines: on unless the setting says off; disabled, naming the package to
    install, without the data."""
    coastlines = window.image.coastlines
    action = view_menu.addAction("Coastlines")
    action.setCheckable(True)
    coastlines.hint = lambda text: window.statusBar().showMessage(text, 10_000)
    window.coastlines_action = action
    if not coastline_data.available():
        action.setText(f"Coastlines ({coastline_data.INSTALL_HINT})")
        action.setEnabled(False)
        coastlines.set_enabled(False)
        return
    on = str(window.settings.value(SETTING, "true")).lower() != "false"
    action.setChecked(on)
    coastlines.set_enabled(on)

    def toggled(checked: bool) -> None:
        coastlines.set_enabled(checked)
        window.settings.setValue(SETTING, "true" if checked else "false")

    action.toggled.connect(toggled)
