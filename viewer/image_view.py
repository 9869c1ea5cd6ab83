"""The 2-D view: an ImageItem in a ViewBox with a histogram, axis sliders and a cursor readout.

Not pyqtgraph's ImageView, which reads the whole array: here the picture is only what the
``PlaneController`` loaded for the viewport. Panning, zooming and sliders change the view state;
the controller decides whether that needs new data.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QRectF, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from . import coordinates, index_option, label_alone, messages, readout, transforms
from .axis_controls import AxisControls
from .cf_controls import CFControls
from .channel_panel import ChannelPanel
from .channels import ChannelState, default_indices
from .chunk_grid import ChunkGridItem
from .coastlines import Coastlines
from .coloured_image import ColouredImageItem
from .contrast import colormap, colour_bar_range, keeps
from .coordinate_axis import ImageAxes
from .labels_overlay import LabelsOverlay, open_label
from .labels_panel import LabelsPanel
from .missing_colour import MissingBackdrop
from .ortho_views import OrthoViews
from .physical import PhysicalAxes, axis_coordinates
from .plane_controller import PlaneController
from .scale_bar import ScaleBar
from .tiles import Level
from .version_picker import ChangedChunksItem
from .view_state import COLORMAPS, COMPLEX_MODES, ViewState

logger = logging.getLogger(__name__)

COLOUR_BAR_AXIS_WIDTH = 64  # pixels: the colour bar's tick labels ("-1.5e+03", "287.5")
MAX_TICKS = 16  # colour maps of more stops are drawn without their (editable) ticks

KEY_STEPS = {
    Qt.Key.Key_Up: 1,
    Qt.Key.Key_Right: 1,
    Qt.Key.Key_Down: -1,
    Qt.Key.Key_Left: -1,
    Qt.Key.Key_PageUp: 10,
    Qt.Key.Key_PageDown: -10,
}


@dataclass(frozen=True)
class ShownPlane:
    """What the image view shows, for the docks and exports around it (they read this, not
    the view's controller or ViewBox): the array (level 0) and node, the view state (axes,
    indices), and how the plane is drawn."""

    node_path: str
    array: object  # the engine array of level 0
    state: ViewState
    channels: ChannelState | None  # a composite's channels (None: one plane)
    cf: object | None  # cf_display.CFValues of a CF variable, else None
    raw: bool  # a CF variable drawn as its stored numbers
    levels: tuple[float, float] | None  # one plane's contrast (None: not drawn yet)
    lut: np.ndarray  # one plane's colormap, 256 x 3 uint8
    north_up: bool  # row 0 drawn at the bottom (a map read north up)
    missing: str = "chequer"  # what missing values show (``missing_colour.COLOURS``)
    coastlines: tuple | None = None  # a map's (x, y) AxisCoordinates, coastlines drawn over it


class ImageView(QWidget):
    """Shows one plane of an N-d numeric array (N >= 2), optionally from a multiscale pyramid.

    The docks and exports around it use only: ``shown()``, ``add_marker(item)``,
    ``picture()``, ``progress()``, ``close_reads()``, ``state``, ``cf_tools.raw`` and the
    signals ``painted``, ``finished``, ``message``, ``point_clicked``.
    """

    painted = Signal(int)
    finished = Signal(int)
    message = Signal(object)
    point_clicked = Signal(int, int, object)  # level-0 row, column, keyboard modifiers

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.state: ViewState | None = None
        self.graphics = pg.GraphicsLayoutWidget()
        self.view_box = self.graphics.addViewBox(row=0, col=1, lockAspect=True, invertY=True)
        self.view_box.setMenuEnabled(False)
        self.image_item = ColouredImageItem(axisOrder="row-major")
        self.grid_item = ChunkGridItem()
        self.grid_item.setVisible(False)
        self.composite_item = pg.ImageItem(axisOrder="row-major")  # RGB, no histogram
        self.missing = MissingBackdrop()  # seen through missing values (View > Missing values)
        self.view_box.addItem(self.missing)
        self.view_box.addItem(self.image_item)
        self.view_box.addItem(self.composite_item)
        self.view_box.addItem(self.grid_item)
        self.changed_item = ChangedChunksItem(lambda: self.state)  # versions compared
        self.view_box.addItem(self.changed_item)
        self.physical: PhysicalAxes | None = None
        self.scale_bar = ScaleBar()
        self.scale_bar.setParentItem(self.view_box)
        self.scale_bar.anchor((1, 1), (1, 1), offset=(-20, -20))
        self.scale_bar.setVisible(False)
        self.histogram = pg.HistogramLUTWidget(image=self.image_item)
        self._colour_bar_follows_the_worker()
        self._steady_colour_bar()
        self._colour_bar_range: tuple[float, float] | None = None
        self.controller = PlaneController(
            self.image_item, self.grid_item, self, composite_item=self.composite_item
        )
        self.controller.painted.connect(self.painted)
        self.controller.painted.connect(self._follow_labels)
        self.labels = LabelsOverlay(self.view_box, self)
        self.labels.message.connect(self.message)
        self.labels_panel = LabelsPanel()
        self.labels_panel.chosen.connect(self._labels_chosen)
        self.labels_panel.style_changed.connect(self._labels_style)
        self.background = None  # the window's tasks.Background: opens label images
        self.ortho = OrthoViews()
        self.ortho.moved.connect(self._crosshair_moved)
        pen = pg.mkPen((255, 255, 0, 160), width=1)
        self.crosshair = (
            pg.InfiniteLine(angle=0, pen=pen, movable=False),
            pg.InfiniteLine(angle=90, pen=pen, movable=False),
        )
        for line in self.crosshair:
            line.setVisible(False)
            self.view_box.addItem(line)
        self._image, self._image_group = None, None
        self.controller.finished.connect(self.finished)
        self.controller.message.connect(self.message)
        self.axes = AxisControls()
        self.image_axes = ImageAxes(self.graphics.ci, self.view_box, self.axes)
        self.image_axes.shown = self._coordinates_shown
        self.coastlines = Coastlines(self)  # over latitude/longitude maps (View > Coastlines)
        self.channel_panel = ChannelPanel()
        self.channel_panel.changed.connect(self._channels_changed)
        self.controller.painted.connect(self.channel_panel.show_auto_windows)
        self.channel_panel.composite_changed.connect(self._composite_changed)
        self._build_toolbar()
        self.cf_tools = CFControls(self)
        self.cursor_label = QLabel(" ")
        self.cursor_label.setObjectName("cursorLabel")
        self._layout()
        self._view_timer = QTimer(self)
        self._view_timer.setSingleShot(True)
        self._view_timer.setInterval(40)
        self._view_timer.timeout.connect(lambda: self.refresh(force=False))
        # a slider step plans and submits its reads in an event-loop pass of its own, after
        # the one that moved the slider (and painted it); steps in one pass make one refresh
        self._step_timer = QTimer(self)
        self._step_timer.setSingleShot(True)
        self._step_timer.setInterval(0)
        self._step_timer.timeout.connect(self.refresh)
        self.view_box.sigRangeChanged.connect(lambda *_: self._view_timer.start())
        self.view_box.sigRangeChanged.connect(lambda *_: self._update_scale_bar())
        self.graphics.scene().sigMouseMoved.connect(self._mouse_moved)
        self.graphics.scene().sigMouseClicked.connect(self._main_clicked)
        self.histogram.item.sigLevelChangeFinished.connect(self._user_levels)
        self.axes.axes_changed.connect(self._axes_changed)
        self.axes.index_changed.connect(self._index_changed)
        self.graphics.installEventFilter(self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._setting_levels = False

    def _steady_colour_bar(self) -> None:
        """The colour bar's axis follows the histogram's range, which moves with every plane
        shown: a unit prefix that changes, or a width that follows its tick labels, relaid
        out the window on a slider step. Its label keeps the variable's units instead, and
        its width is fixed."""
        axis = self.histogram.item.axis
        axis.enableAutoSIPrefix(False)
        axis.setWidth(COLOUR_BAR_AXIS_WIDTH)

    def _colour_bar_follows_the_worker(self) -> None:
        """pyqtgraph redraws the colour bar's histogram on every ``setImage``, from the values,
        on the GUI thread (several times a slider step, as tiles land). Here a new image only
        moves the bar's levels (a contrast change shows at once), and its histogram is
        redrawn when the worker has made it with the picture (``histogram_ready``)."""
        bar, item = self.histogram.item, self.image_item
        item.sigImageChanged.disconnect(bar.imageChanged)
        item.sigImageChanged.connect(self._show_levels)
        # the bar's histogram and fit in an event-loop pass after the one that swapped the
        # picture in: the main view and the bar are painted in a pass each, not in one
        self._bar_timer = QTimer(self)
        self._bar_timer.setSingleShot(True)
        self._bar_timer.setInterval(0)
        self._bar_timer.timeout.connect(bar.imageChanged)
        self._bar_timer.timeout.connect(self._fit_colour_bar)
        item.histogram_ready.connect(self._bar_timer.start)

    def _show_levels(self) -> None:
        """The image's levels on the colour bar (what ``imageChanged`` does besides the
        histogram)."""
        levels = self.image_item.getLevels()
        if levels is not None and np.ndim(levels) == 1:
            self.histogram.item.region.setRegion([float(v) for v in levels])

    def _fit_colour_bar(self, *_args) -> None:
        """Fit the colour bar to the histogram and the levels as soon as they are there: its
        value axis widened to round steps, its counts axis to the highest count. pyqtgraph
        fits both exactly, lazily, while painting, which asked for a second paint of the bar
        (the fit moves what the first one drew), and moved (and relabelled) its axis on every
        slider step."""
        item = self.histogram.item
        fitted = colour_bar_range(item, self.controller.current_levels)
        if fitted is None:  # values too far apart for one view: pyqtgraph's own fit
            self._colour_bar_range = None
            item.autoHistogramRange()
            return
        if not keeps(self._colour_bar_range, fitted):
            self._colour_bar_range = fitted
            item.setHistogramRange(*fitted, padding=0.02)
        counts = item.plot.yData
        highest = float(counts.max()) if counts is not None and len(counts) else 1.0
        item.vb.enableAutoRange(item.vb.XAxis, False)
        # (the curve is turned a quarter to stand beside the bar: its counts lie at -x)
        item.vb.setXRange(-(highest or 1.0), 0.0, padding=0.02)
        # what pyqtgraph works out lazily while painting (the view's matrix, then the bounds
        # of the region, of its lines and of the curve, which follow the view and the
        # levels): found changed there, they asked for a second paint of the bar
        item.vb.updateMatrix()
        for part in (item.region, *item.region.lines, item.plot):
            part.boundingRect()

    def _build_toolbar(self) -> None:
        self.colormap_combo = QComboBox()
        self.colormap_combo.addItems(COLORMAPS)
        self.colormap_combo.currentTextChanged.connect(self._colormap_changed)
        self.auto_levels = QCheckBox("Auto contrast")
        self.auto_levels.setChecked(True)
        self.auto_levels.toggled.connect(self._auto_toggled)
        self.complex_combo = QComboBox()
        self.complex_combo.addItems(COMPLEX_MODES)
        self.complex_combo.currentTextChanged.connect(self._complex_changed)
        self.field_combo = QComboBox()
        self.field_combo.currentTextChanged.connect(self._field_changed)
        self.grid_check = QCheckBox("Chunk grid")
        self.grid_check.toggled.connect(self._grid_toggled)
        self.pixels_check = QCheckBox("Pixels")
        self.pixels_check.setToolTip("Tick the axes in pixels, not in the image's units (µm)")
        self.pixels_check.toggled.connect(self.image_axes.set_pixels)
        self.pixels_check.setVisible(False)  # shown for images with pixel sizes
        self.reset_button = QPushButton("Fit")
        self.reset_button.clicked.connect(self.fit)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        self.colormap_label = QLabel("Colormap:")
        for widget in (
            self.colormap_label,
            self.colormap_combo,
            self.auto_levels,
            self.cf_tools.bar,
            self.complex_combo,
            self.field_combo,
            self.grid_check,
            self.pixels_check,
            self.reset_button,
        ):
            bar.addWidget(widget)
        bar.addStretch(1)
        images = QHBoxLayout()
        images.addWidget(self.graphics, 2)
        images.addWidget(self.ortho, 1)  # a third of the width when shown
        contrast = QVBoxLayout()
        contrast.addWidget(self.histogram, 1)
        contrast.addWidget(self.cf_tools.centre_box)
        images.addLayout(contrast)
        self.figure = QWidget()  # what "Export view as PNG" saves: title, plane, axes, bar
        figure = QVBoxLayout(self.figure)
        figure.setContentsMargins(0, 0, 0, 0)
        figure.addWidget(self.cf_tools.title)
        figure.addLayout(images, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.figure, 1)
        layout.addWidget(self.channel_panel)
        layout.addWidget(self.labels_panel)
        layout.addWidget(self.axes)
        layout.addWidget(self.cursor_label)

    # -- source ----------------------------------------------------------------------------------

    def set_array(
        self,
        node_path: str,
        node,
        levels: list[Level],
        arrays,
        field_name: str | None = None,
        indices: list[int] | None = None,
        axis_names: tuple[str, ...] = (),
        image=None,
        image_group=None,
        cf=None,
        labelled=None,
    ) -> None:
        """Show ``node`` (level 0 of ``levels``/``arrays``); ``axis_names`` label its axes
        (default: its dimension names). ``image``: the engine's OME-Zarr ``Image`` it belongs
        to: its channels are shown as a composite, starting at its default z and t. ``cf``:
        its ``cf_display.CFView`` (decoded values, map orientation, units)."""
        dtype = np.dtype(node.dtype)
        fields = transforms.numeric_fields(dtype)
        if fields and field_name not in fields:
            field_name = fields[0]
        self.state = ViewState(
            shape=tuple(node.shape),
            dimension_names=axis_names or tuple(node.dimension_names or ()),
            colormap=self.colormap_combo.currentText(),
            auto_levels=True,
            field_name=field_name,
            complex_mode=self.complex_combo.currentText(),
            show_chunk_grid=self.grid_check.isChecked(),
        )
        for axis, value in default_indices(
            labelled or image, self.state.dimension_names, self.state.shape
        ).items():
            self.state.set_index(axis, value)
        self.field_combo.blockSignals(True)
        self.field_combo.clear()
        self.field_combo.addItems(fields)
        if field_name:
            self.field_combo.setCurrentText(field_name)
        self.field_combo.blockSignals(False)
        self.field_combo.setVisible(bool(fields))
        self.complex_combo.setVisible(transforms.field_dtype(dtype, field_name).kind == "c")
        self.auto_levels.setChecked(True)
        channels = (
            ChannelState.for_image(image, self.state.shape)
            if dtype.kind in "biuf" and not fields
            else None
        )
        self.channel_panel.set_state(channels)
        texts = index_option.apply(self, node_path, indices or [], channels)
        self.physical = PhysicalAxes.for_level(image, node_path, node.ndim)
        names = self.state.dimension_names
        self.image_axes.physical = axis_coordinates(self.physical, names, self.state.shape)
        self.pixels_check.setVisible(bool(self.image_axes.physical))
        shape = self.state.shape
        self.axes.set_step_labels(coordinates.step_labels(channels, self.physical, shape))
        self._image, self._image_group = image, image_group
        alone = label_alone.is_label_image(image, dtype)
        self.image_item.setOpacity(0.0 if alone else 1.0)  # alone, the overlay draws it
        self.labels.set_source(label_alone.source(image_group, node, image) if alone else None)
        self._labels_style(*((1.0, False) if alone else self.labels_panel.style()))
        self.labels_panel.set_names(image.labels if image is not None and image_group else ())
        self.cf_tools.set_view(cf)
        self._true_aspect()
        self.controller.set_source(node_path, self.state, levels, arrays, channels)
        self.ortho.forget()
        if self.ortho.isVisible():
            self.set_ortho(True)
        self.axes.set_state(self.state)
        place = index_option.placer(self, node_path, texts)

        def loaded(found) -> None:  # coordinates: the title's dates, --index dates
            self.cf_tools.show_title()
            if place is not None:
                place(found)

        self.image_axes.load(self.background, node, self.state, then=loaded)
        self._composite_controls()
        self.fit()

    def clear(self) -> None:
        self.missing.cover(0, 0)
        self.channel_panel.set_state(None)
        self.labels.set_source(None)
        self.ortho.forget()
        self.labels_panel.set_names(())
        self.physical = None
        self.scale_bar.setVisible(False)
        self.cf_tools.set_view(None)
        self.controller.clear()
        self.state = None
        self.image_axes.load(None, None, None)
        self.image_item.clear()
        self.composite_item.clear()

    def fit(self) -> None:
        """Show the whole plane."""
        if self.state is None:
            return
        h, w = self.state.shape[self.state.y_axis], self.state.shape[self.state.x_axis]
        self.missing.cover(w, h)
        self.view_box.setRange(QRectF(0, 0, w, h), padding=0.02)
        self.refresh(force=False)

    def screen_size(self) -> tuple[int, int]:
        ratio = self.devicePixelRatioF() or 1.0
        rect = self.view_box.sceneBoundingRect()
        h, w = rect.height() * ratio, rect.width() * ratio
        if h < 16 or w < 16:  # not laid out yet: assume a typical window
            return 768, 1024
        return int(h), int(w)

    def view_rect(self) -> tuple[float, float, float, float]:
        (x0, x1), (y0, y1) = self.view_box.viewRange()
        return y0, y1, x0, x1

    def refresh(self, force: bool = True) -> None:
        """Ask the controller for what the viewport needs (``force``: even if already shown)."""
        if self.state is None:
            return
        self.controller.update_view(self.view_rect(), self.screen_size(), force=force)
        self.cf_tools.show_title()
        self._follow_ortho()
        self.coastlines.follow()  # the zoom: their resolution

    # -- what the docks and exports use ------------------------------------------------------

    def shown(self) -> ShownPlane | None:
        """The plane on screen and how it is drawn (None: nothing is shown)."""
        controller, state = self.controller, self.state
        if state is None or not controller.arrays:
            return None
        lut = self.histogram.item.getLookupTable(n=256)  # the table the screen is drawn with
        levels = (
            controller.current_levels
            if state.auto_levels or state.levels is None
            else transforms.centred(state.levels, state.centre)
        )
        return ShownPlane(
            node_path=controller.node_path,
            array=controller.arrays[0],
            state=state,
            channels=controller.channels if controller.composite else None,
            cf=controller.cf,
            raw=self.cf_tools.raw,
            levels=None if levels is None else tuple(levels),
            lut=np.asarray(lut, dtype=np.uint8)[:, :3],
            north_up=not self.view_box.yInverted(),
            missing=self.missing.name,
            coastlines=self.coastlines.shown_map(),
        )

    def add_marker(self, item) -> None:
        """Draw ``item`` (a pyqtgraph item in element coordinates) over the image."""
        self.view_box.addItem(item, ignoreBounds=True)

    def picture(self):
        """The view as it is on screen, as a figure (a QPixmap): its title, the plane
        (composite, overlays, scale bar) with its axes, the orthogonal views and the colour
        bar."""
        return self.figure.grab()

    def progress(self) -> tuple[int, int]:
        """Tiles of the plane on screen that have landed, of how many."""
        return self.controller.loader.progress()

    def close_reads(self) -> None:
        """The view is going away: no more reads, no more events."""
        self.clear()
        self.controller.loader.close()

    @property
    def busy(self) -> bool:
        return (
            self._view_timer.isActive()
            or self._step_timer.isActive()
            or self._bar_timer.isActive()
            or self.controller.busy
            or self.labels.busy
            or self.ortho.busy
        )

    # -- user actions ----------------------------------------------------------------------------

    def _coordinates_shown(self) -> None:
        """The coordinates were read: tick the orthogonal panes, place the coastlines."""
        self._follow_ortho()
        self.coastlines.follow()

    def _axes_changed(self, y: int, x: int) -> None:
        if self.state is not None and self.state.set_display_axes(y, x):
            self.axes.set_state(self.state)
            self.image_axes.show(self.state)
            self._composite_controls()
            self._true_aspect()
            self.fit()

    def _index_changed(self, axis: int, value: int) -> None:
        if self.state is not None and self.state.set_index(axis, value):
            self._step_timer.start()

    def step(self, delta: int) -> None:
        """Move along the active slider axis (keyboard)."""
        if self.state is not None and self.state.step(delta):
            axis = self.state.slider_axis
            self.axes.show_index(axis, self.state.indices[axis])
            self._step_timer.start()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_O:
            self.set_ortho(not self.ortho.isVisible())
            event.accept()
            return
        if event.key() == Qt.Key.Key_C:
            self.channel_panel.toggle_composite()
            event.accept()
            return
        if event.key() in KEY_STEPS:
            self.step(KEY_STEPS[event.key()])
            event.accept()
            return
        super().keyPressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and event.key() in KEY_STEPS:
            self.step(KEY_STEPS[event.key()])
            return True
        if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_C:
            self.channel_panel.toggle_composite()
            return True
        if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_O:
            self.set_ortho(not self.ortho.isVisible())
            return True
        return super().eventFilter(watched, event)

    def _labels_chosen(self, name: str) -> None:
        self.labels.set_source(None)
        if not name or self.background is None or self.state is None:
            return
        image, group, names, state = (
            self._image,
            self._image_group,
            self.state.dimension_names,
            self.state,
        )

        def opened(source) -> None:
            if self.state is state and self.labels_panel.combo.currentData() == name:
                self.labels.set_source(source)
                self._follow_labels()

        self.background.run(
            lambda: open_label(group, image, name, names),
            opened,
            lambda exc: self.message.emit(messages.describe(exc, node=f"labels/{name}")),
        )

    def _labels_style(self, opacity: float, outlines: bool) -> None:
        self.labels.style.opacity, self.labels.style.outlines = opacity, outlines
        self.labels.redraw()

    def _follow_labels(self, *_args) -> None:
        if self.state is not None:
            self.labels.follow(self.controller.request, self.state, self.state.shape)

    def _true_aspect(self) -> None:
        """Draw a pixel as wide and tall as it is in physical units (an XZ plane of a z-stack
        with 2 µm steps and 0.5 µm pixels is four times as tall as it is wide)."""
        state, physical = self.state, self.physical
        ratio = physical.aspect(state.y_axis, state.x_axis) if physical and state else 1.0
        self.view_box.setAspectLocked(self.cf_tools.frame_axes(), ratio=ratio)
        self._update_scale_bar()

    def _update_scale_bar(self) -> None:
        state, physical = self.state, self.physical
        self.scale_bar.setVisible(physical is not None and state is not None)
        if physical is None or state is None:
            return
        (x0, x1), _ = self.view_box.viewRange()
        self.scale_bar.show_length(*physical.bar(state.x_axis, x1 - x0))

    def _channels_changed(self) -> None:
        """A channel toggled or its window changed: blend again what is loaded (no read)."""
        self.controller.redraw()
        self.ortho.redraw()

    # -- orthogonal views ------------------------------------------------------------------------

    def set_ortho(self, on: bool) -> None:
        """Show the XZ and YZ planes through a crosshair (images of 3 or more dimensions)."""
        state = self.state
        on = on and state is not None and state.ndim >= 3
        self.ortho.setVisible(on)
        for line in self.crosshair:
            line.setVisible(on)
        self.ortho.forget()
        if on:
            for axis in (state.y_axis, state.x_axis):
                if state.indices[axis] == 0:  # start at the centre
                    state.indices[axis] = state.shape[axis] // 2
            self._follow_ortho()

    def _follow_ortho(self) -> None:
        state = self.state
        if state is None or not self.ortho.isVisible():
            return
        c = self.controller
        self.ortho.follow(
            state,
            c.levels,
            c.arrays,
            c.channels,
            c.node_path,
            self.physical,
            cf=self.cf_tools.cf,
            coordinates=self.image_axes.coordinates,
        )
        self.crosshair[0].setValue(state.indices[state.y_axis] + 0.5)
        self.crosshair[1].setValue(state.indices[state.x_axis] + 0.5)

    def _main_clicked(self, event) -> None:
        state, pos = self.state, event.scenePos()
        if state is None or not self.view_box.sceneBoundingRect().contains(pos):
            return
        point = self.view_box.mapSceneToView(pos)
        row, col = math.floor(point.y()), math.floor(point.x())
        if 0 <= row < state.shape[state.y_axis] and 0 <= col < state.shape[state.x_axis]:
            self.point_clicked.emit(row, col, event.modifiers())  # the series panel's
        if not self.ortho.isVisible():
            return
        self._crosshair_moved(state.y_axis, int(point.y()))
        self._crosshair_moved(state.x_axis, int(point.x()))

    def _crosshair_moved(self, axis: int, index: int) -> None:
        """Move the crosshair along ``axis``: a displayed axis of the main view moves its lines,
        another (the depth) moves its slider."""
        state = self.state
        index = max(0, min(index, state.shape[axis] - 1))
        if axis in state.slider_axes:
            if state.set_index(axis, index):
                self.axes.show_index(axis, index)
                self.refresh()
        else:
            state.indices[axis] = index
            self._follow_ortho()

    def _composite_changed(self, _on: bool) -> None:
        self._composite_controls()
        self.refresh()

    def _composite_controls(self) -> None:
        """The histogram and colormap set the contrast of one plane, a composite has its
        channels' windows instead; its channel slider has nothing to choose (hidden, shown
        again in single-channel mode), and the keys step along another axis."""
        composite = self.controller.composite
        for widget in (self.histogram, self.colormap_label, self.colormap_combo, self.auto_levels):
            widget.setVisible(not composite)  # each channel has its own window instead
        self.cf_tools.centre_box.setVisible(not composite and self.cf_tools.centres())
        channels, state = self.controller.channels, self.state
        if channels is None or state is None:
            return
        axis, axes = channels.axis, self.axes
        for widget in (axes.sliders.get(axis), axes.spins.get(axis), axes.labels.get(axis)):
            if widget is not None:
                widget.setVisible(not composite)
        others = [a for a in state.slider_axes if a != channels.axis]
        if composite and state.slider_axis == channels.axis and others:
            state.slider_axis = others[0]

    def _colormap_changed(self, name: str) -> None:
        gradient, cmap = self.histogram.item.gradient, colormap(name)
        gradient.setColorMap(cmap)
        # a map of many stops (viridis: 256) would show as many overlapping ticks, which no
        # one can edit and which cost most of the colour bar's paint (each redraw of a plane)
        gradient.showTicks(len(cmap.pos) <= MAX_TICKS)
        if self.state is not None:
            self.state.colormap = name

    def _auto_toggled(self, on: bool) -> None:
        if self.state is not None:
            self.state.auto_levels = on
            self.controller.redraw()

    def _complex_changed(self, mode: str) -> None:
        if self.state is not None:
            self.state.complex_mode = mode
            self.refresh()

    def _field_changed(self, name: str) -> None:
        if self.state is not None and name:
            self.state.field_name = name
            self.refresh()

    def _grid_toggled(self, on: bool) -> None:
        self.grid_item.setVisible(on)
        if self.state is not None:
            self.state.show_chunk_grid = on

    def set_levels(self, low: float, high: float) -> None:
        """Manual contrast limits (turns automatic contrast off)."""
        if self.state is None:
            return
        self.state.levels = (float(low), float(high))
        self.auto_levels.setChecked(False)
        self.controller.redraw()

    def _user_levels(self, *_):
        if self.state is None or self._setting_levels:
            return
        low, high = self.histogram.item.getLevels()
        if (
            self.state.auto_levels
            and self.controller.current_levels is not None
            and np.allclose((low, high), self.controller.current_levels)
        ):
            return
        self.set_levels(low, high)

    def _mouse_moved(self, pos) -> None:
        if self.state is None or not self.view_box.sceneBoundingRect().contains(pos):
            return
        point = self.view_box.mapSceneToView(pos)
        y, x = point.y(), point.x()
        state = self.state
        h, w = state.shape[state.y_axis], state.shape[state.x_axis]
        if not (0 <= y < h and 0 <= x < w):
            self.cursor_label.setText(" ")
            return
        self.cursor_label.setText(self.describe_position(y, x))

    def describe_position(self, y: float, x: float) -> str:
        """The readout for level-0 position (y, x): coordinates along every axis and the value."""
        return readout.describe_position(self, y, x)
