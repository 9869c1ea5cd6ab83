"""The image's left and bottom axes: titled with the dimension names, ticked in coordinates.

A pyqtgraph ``AxisItem`` linked to the image's ViewBox, whose coordinates are element indices
(element ``i`` over ``[i, i + 1)``). Where the axis has a coordinate variable
(``coordinates.AxisCoordinate``) the ticks fall on round coordinate values
(``coordinate_ticks``); else on round element numbers, at the elements' centres. The mapping
stays index-based, so a view flipped upside down (latitude up) or a decreasing coordinate needs
nothing here: pyqtgraph draws an inverted view's axis inverted.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF

from . import coordinate_ticks, coordinates
from .coordinates import AxisCoordinate

logger = logging.getLogger(__name__)

#: screen pixels per tick label: across (the widest, dates) and down
_PIXELS_PER_TICK = {"bottom": 110, "top": 110, "left": 45, "right": 45}


class CoordinateAxis(pg.AxisItem):
    """An axis of element indices that labels its ticks with coordinate values."""

    def __init__(self, orientation: str, shift: float = 0.0):
        """``shift``: where element ``i``'s centre is drawn, less ``i + 0.5`` (an image draws
        element ``i`` over ``[i, i + 1)``: 0; a line plot draws value ``i`` at ``x = i``: -0.5)."""
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)
        self.shift = shift
        self.coordinate: AxisCoordinate | None = None
        self._texts: dict[float, str] = {}

    def set_coordinate(self, coordinate: AxisCoordinate | None, title: str, size: int) -> None:
        """Tick in ``coordinate`` (None: in the indices of an axis of ``size`` elements)."""
        self.coordinate = coordinate
        self.setLabel(title)
        self._reserve_room(coordinate, size)
        self.picture = None  # pyqtgraph: draw the ticks again
        self.update()

    def _reserve_room(self, coordinate: AxisCoordinate | None, size: int) -> None:
        """Room for the widest (tallest) tick text, set now: an axis that grows once its ticks
        are drawn shrinks the view under the plane just requested, which then asks again."""
        metrics = QFontMetricsF(self.style["tickFont"] or self.font())
        if self.orientation in ("top", "bottom"):
            self.setStyle(autoExpandTextSpace=False, tickTextHeight=int(metrics.height()) + 2)
            return
        if coordinate is None:
            samples = [str(max(size - 1, 0))]
        elif coordinate.kind == "time":
            samples = ["0000-00-00" + (" 00:00" if coordinate.time.unit != "D" else "")]
        elif coordinate.kind in ("latitude", "longitude"):
            samples = ["000.00°N"]
        else:
            samples = [coordinate.label(0), coordinate.label(size - 1), "-0.000"]
            samples = [text.removesuffix(f" {coordinate.units}") for text in samples]
        width = max(metrics.horizontalAdvance(text) for text in samples)
        self.setStyle(autoExpandTextSpace=False, tickTextWidth=int(math.ceil(width)) + 4)

    def tick_texts(self) -> list[tuple[float, str]]:
        """The ticks for the view as it is: ``[(position, text)]``, as the next paint draws."""
        rect = self.geometry()
        size = rect.width() if self.orientation in ("top", "bottom") else rect.height()
        return self._ticks(*self.range, size)

    def tickValues(self, minVal: float, maxVal: float, size: float):  # noqa: N802 - Qt's name
        pairs = self._ticks(minVal, maxVal, size)
        self._texts = dict(pairs)
        return [(1.0, [position for position, _ in pairs])]

    def _ticks(self, low: float, high: float, size: float) -> list[tuple[float, str]]:
        count = max(2, int(size / _PIXELS_PER_TICK[self.orientation]))
        shift = self.shift
        if self.coordinate is not None:
            pairs = coordinate_ticks.ticks(self.coordinate, low - shift, high - shift, count)
        else:
            pairs = self._index_ticks(low - shift, high - shift, count)
        return [(position + shift, text) for position, text in pairs]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        return [self._texts.get(value, "") for value in values]

    @staticmethod
    def _index_ticks(low: float, high: float, count: int) -> list[tuple[float, str]]:
        """Round element numbers, at the elements' centres."""
        low, high = sorted((low, high))
        first, last = max(math.ceil(low - 0.5), 0), math.floor(high - 0.5)
        if last < first:
            return []
        raw = max((last - first) / count, 1.0)
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
        start = math.ceil(first / step) * step
        return [(i + 0.5, str(i)) for i in range(start, last + 1, step)]


class ImageAxes:
    """The left (rows) and bottom (columns) axes around the image's ViewBox, which sits at
    row 0, column 1 of ``layout`` (a ``pg.GraphicsLayout``), and the coordinates of the array
    on screen, which they and the sliders' spin boxes (``controls``) show."""

    def __init__(self, layout, view_box, controls):
        self.left, self.bottom = CoordinateAxis("left"), CoordinateAxis("bottom")
        for axis in (self.left, self.bottom):
            axis.linkToView(view_box)
        layout.addItem(self.left, row=0, col=0)
        layout.addItem(self.bottom, row=1, col=1)
        self._layout, self._controls = layout, controls
        self.state = None
        self.coordinates: dict[int, AxisCoordinate] = {}
        self.auxiliary: list[coordinates.Auxiliary] = []  # 2-D latitudes and longitudes
        self.shown = None  # called once coordinates are shown (the orthogonal views follow)
        self.physical: dict[int, AxisCoordinate] = {}  # OME-Zarr pixel sizes: ticks in µm
        self.pixels = False  # tick the physical axes in pixels instead

    def set_pixels(self, on: bool) -> None:
        """Tick axes with a pixel size in pixels (True) or in their unit."""
        self.pixels = on
        self.show(self.state)

    def load(self, background, node, state, then=None) -> None:
        """Title the axes with ``state``'s dimension names now (None: no array); read the
        coordinate variables beside ``node`` in ``background`` (a ``tasks.Background``), then
        tick the axes and label the spin boxes with them, if ``state`` is still on screen,
        and call ``then(found)``."""
        self.state = state
        self._show({})
        if background is None or node is None:
            return
        names = state.dimension_names

        def loaded(found) -> None:
            if self.state is state:
                self._show(*found)
                if then is not None:
                    then(found[0])

        background.run(
            lambda: (coordinates.load(node, names), coordinates.load_auxiliary(node, names)),
            loaded,
            lambda exc: logger.warning("coordinates of %s: %s", node.path, exc),
        )

    def _show(self, found: dict[int, AxisCoordinate], auxiliary=()) -> None:
        self.coordinates, self.auxiliary = found, list(auxiliary)
        self._controls.set_coordinates(found)
        self.show(self.state)
        if self.shown is not None:
            self.shown()

    def show(self, state) -> None:
        """Title and tick the axes displayed in ``state`` (None: no axes)."""
        for item, axis in ((self.left, "y_axis"), (self.bottom, "x_axis")):
            item.setVisible(state is not None)
            if state is None:
                continue
            index = getattr(state, axis)
            coordinate = self.coordinates.get(index)
            if coordinate is None and not self.pixels:
                coordinate = self.physical.get(index)
            if coordinate is None:
                coordinate = self._auxiliary_line(state, index)
            title = coordinate.title() if coordinate is not None else state.axis_label(index)
            item.set_coordinate(coordinate, title, state.shape[index])
        self._layout.layout.activate()  # the view's new size now, before a plane is requested

    def _auxiliary_line(self, state, axis: int) -> AxisCoordinate | None:
        """For an axis without a coordinate variable, an auxiliary latitude or longitude over
        both axes on screen, along the middle line of the array: a longitude for the columns,
        a latitude for the rows (else either), titled with where it is read ("lon at y 32")."""
        other = state.y_axis if axis == state.x_axis else state.x_axis
        wanted = "longitude" if axis == state.x_axis else "latitude"
        both = [a for a in self.auxiliary if axis in a.axes and other in a.axes]
        both.sort(key=lambda a: a.kind != wanted)
        if not both:
            return None
        index = list(state.indices)
        index[other] = state.shape[other] // 2
        line = both[0].along(axis, index)
        where = f"{state.axis_label(other)} {index[other]}"
        return dataclasses.replace(line, name=f"{line.name} at {where}")
