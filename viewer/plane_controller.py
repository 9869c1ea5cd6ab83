"""Turn the view state and viewport into plane requests, and landed tiles into pixels.

The buffers of the plane on screen are a ``landing.Landing``: the stored values (for the
cursor readout) and the values drawn (after CF decoding, complex/bool/datetime mapping; for an
OME-Zarr image shown as a composite, ``channels.ChannelState``, every channel's stored values
and their RGB blend). The engine's workers fill them as chunks land; when the view moves, a
worker resamples the old picture into the new geometry as a placeholder, so the picture never
blanks; a composite's whole blend, when its windows change, is a worker's too. The GUI thread
plans requests, keeps which pixels are loaded, and hands the buffers to the image item, one
redraw per event-loop pass: no work over a whole buffer.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time

import numpy as np
from PySide6.QtCore import QObject, QRectF, QTimer, Signal

from . import contrast, messages, transforms
from .cf_display import CFValues
from .channels import ChannelState
from .coloured_image import ColouredImageItem
from .landing import Landing
from .loader import PlaneLoader
from .tasks import DaemonPool, gui_handle, post_to_handle
from .tiles import (
    Level,
    PlaneRequest,
    choose_level,
    coarse_index,
    coarse_stride,
    plan_plane,
    scale_geometry,
)
from .view_state import ViewState

logger = logging.getLogger(__name__)

_jobs_pool: DaemonPool | None = None

#: seconds a slider step keeps the previous plane on screen while the new one lands, to show
#: it whole (not tile by tile over the old one: two planes torn apart); a slower plane is then
#: shown as its tiles land
HOLD = 0.25
#: milliseconds after a plane is on screen that its neighbours' reads start
PREFETCH_AFTER_MS = 20


def _buffer_jobs() -> DaemonPool:
    """The worker of the buffers' whole-buffer jobs (placeholders, blends, the pictures of
    the image items), in order."""
    global _jobs_pool
    if _jobs_pool is None:
        _jobs_pool = DaemonPool(1, name="viewer-buffers")
    return _jobs_pool


def _job_finished(handle: int, method: str, future) -> None:
    post_to_handle(handle, method, future)


def _blend_job(landing: Landing, channels: ChannelState, loaded: np.ndarray) -> None:
    """Blend ``landing`` again if the composite's windows (automatic ones from the pixels
    ``loaded`` or previewed), colours or toggles changed since it was."""
    windows = channels.windows(landing.raw, loaded | landing.approx)
    if channels.key(windows) != landing.key:
        landing.blend(windows)


class PlaneController(QObject):
    """Glue between ``ViewState``, the engine arrays of each level, the loader and the image."""

    painted = Signal(int)  # generation whose pixels were just drawn
    finished = Signal(int)  # generation whose tiles have all landed (and been drawn)
    message = Signal(object)  # messages.UserMessage

    def __init__(self, image_item, grid_item, parent: QObject | None = None, composite_item=None):
        super().__init__(parent)
        self.image_item, self.grid_item = image_item, grid_item
        self.composite_item = composite_item
        if isinstance(image_item, ColouredImageItem):  # its pictures coloured on our worker
            image_item.jobs = _buffer_jobs
            image_item.coloured.connect(self._check_finished)
            image_item.levels_found.connect(self._levels_found)
        self.loader = PlaneLoader(self)
        self.loader.tile_landed.connect(self._on_tile)
        self.loader.chunk_states.connect(self._on_chunk_states)
        self.loader.failed.connect(self._on_failed)
        self.loader.finished.connect(self._on_finished)
        self.state: ViewState | None = None
        self.node_path = ""
        self.levels: list[Level] = []
        self.arrays: list = []
        self.request: PlaneRequest | None = None
        self.landing: Landing | None = None  # the buffers of the plane on screen
        self.loaded: np.ndarray | None = None  # pixels whose tile has landed (not failed)
        self.current_levels: tuple[float, float] | None = None
        self.channels: ChannelState | None = None
        self.cf: CFValues | None = None  # a CF variable's values: decoded (or raw) as they land
        self._restyle = False  # the composite's windows, colours or toggles may have changed
        self._jobs = 0  # whole-buffer jobs under way
        self._blending, self._blend_again = False, False
        self._handle = gui_handle(self)
        self._dirty: set[int] = set()
        self._finished_generation = -1
        self._fresh = False  # the buffers changed other than by a tile (a new request, a job)
        self._hold_until = 0.0  # time.monotonic() until which a slider step holds its picture
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(0)
        self._redraw.timeout.connect(self._draw)
        self._hold_timer = QTimer(self)
        self._hold_timer.setSingleShot(True)
        self._hold_timer.timeout.connect(self._draw)
        # the neighbours' reads are planned and submitted in an event-loop pass of their own,
        # once the picture and the colour bar are painted: a timer (``QTimer.singleShot(0,
        # ...)`` is a posted call in Qt 6, run in the same chain of posted events as the
        # paint), a little later than the colour bar's (due together, they ran in one pass)
        self._prefetch_timer = QTimer(self)
        self._prefetch_timer.setSingleShot(True)
        self._prefetch_timer.setInterval(PREFETCH_AFTER_MS)
        self._prefetch_timer.timeout.connect(self._prefetch_neighbours)

    def set_source(
        self,
        node_path: str,
        state: ViewState,
        levels: list[Level],
        arrays,
        channels: ChannelState | None = None,
    ) -> None:
        self.loader.cancel_all()
        self.node_path, self.state, self.levels, self.arrays = node_path, state, levels, arrays
        self.channels = channels
        self._forget()

    def clear(self) -> None:
        self.loader.cancel_all()
        self.state, self.channels = None, None
        self._forget()

    def _forget(self) -> None:
        """No plane on screen: the buffers' late chunks write nothing more."""
        if self.landing is not None:
            self.landing.close()
        self.request, self.landing, self.loaded = None, None, None
        self._dirty.clear()

    @property
    def raw(self) -> np.ndarray | None:
        """The stored values of the plane on screen (composite: channels, rows, cols)."""
        return None if self.landing is None else self.landing.raw

    @property
    def display(self) -> np.ndarray | None:
        """The values drawn (composite: rows, cols, RGB)."""
        return None if self.landing is None else self.landing.display

    @property
    def approx(self) -> np.ndarray | None:
        """Pixels drawn from the preview only."""
        return None if self.landing is None else self.landing.approx

    @property
    def composite(self) -> bool:
        """Whether the plane on screen is the composite of every channel."""
        channels, state = self.channels, self.state
        return (
            channels is not None
            and channels.composite
            and state is not None
            and channels.axis not in (state.y_axis, state.x_axis)
        )

    @property
    def drawn_item(self):
        """The ImageItem the plane on screen is drawn in (a composite has its own)."""
        if self.composite and self.composite_item is not None:
            return self.composite_item
        return self.image_item

    @property
    def busy(self) -> bool:
        return (
            self.loader.busy
            or bool(self._dirty)
            or self._redraw.isActive()
            or bool(self._jobs)
            or getattr(self.image_item, "busy", False)
        )

    # -- requests --------------------------------------------------------------------------------

    def build_request(self, view_rect, screen) -> PlaneRequest:
        """The request for ``view_rect`` ((y0, y1, x0, x1) in level-0 coords) on a ``screen``."""
        state = self.state
        y, x = state.y_axis, state.x_axis
        vy0, vy1, vx0, vx1 = view_rect
        ratio = max((vy1 - vy0) / max(screen[0], 1), (vx1 - vx0) / max(screen[1], 1))
        k = choose_level(self.levels, y, x, ratio)
        level = self.levels[k]
        fy, fx = level.factors[y], level.factors[x]
        composite = self.composite
        indices = [
            slice(None)
            if composite and a == self.channels.axis
            else min(int(state.indices[a] / level.factors[a]), level.shape[a] - 1)
            if a not in (y, x)
            else 0
            for a in range(state.ndim)
        ]
        where = dict(
            shape=level.shape,
            chunks=level.chunks,
            y_axis=y,
            x_axis=x,
            view_rect=(vy0 / fy, vy1 / fy, vx0 / fx, vx1 / fx),
            screen=screen,
        )
        geometry, tiles = plan_plane(indices=indices, **where)
        coarse_geometry, coarse_tiles = None, ()
        stride = coarse_stride(**where)
        if stride is not None:
            coarse, coarse_tiles = plan_plane(indices=indices, stride=stride, **where)
            coarse_geometry = scale_geometry(coarse, (fy, fx))
        return PlaneRequest(
            generation=state.generation,
            node_path=self.node_path,
            level=k,
            level_path=level.path,
            y_axis=y,
            x_axis=x,
            plane_key=state.plane_key() + (k, composite),
            geometry=scale_geometry(geometry, (fy, fx)),
            tiles=tiles,
            chunk_shape=(level.chunks[y], level.chunks[x]),
            factor=(fy, fx),
            coarse_geometry=coarse_geometry,
            coarse_tiles=coarse_tiles,
        )

    def covers(self, request: PlaneRequest, view_rect) -> bool:
        """Whether the current request already shows ``view_rect`` at the new request's detail."""
        current = self.request
        if current is None or current.plane_key != request.plane_key:
            return False
        if current.geometry.sy != request.geometry.sy:
            return False
        g = current.geometry
        vy0, vy1, vx0, vx1 = view_rect
        shape = self.levels[0].shape
        return (
            g.y0 <= max(vy0, 0)
            and g.x0 <= max(vx0, 0)
            and g.y0 + g.ny * g.sy >= min(vy1, shape[request.y_axis]) - g.sy
            and g.x0 + g.nx * g.sx >= min(vx1, shape[request.x_axis]) - g.sx
        )

    def update_view(self, view_rect, screen, *, force: bool = False) -> bool:
        """Request what ``view_rect`` needs unless it is already loaded or loading."""
        if self.state is None or not self.levels:
            return False
        request = self.build_request(view_rect, screen)
        if not force and self.covers(request, view_rect):
            return False
        generation = self.state.bump()  # planned once: only the generation is new
        self._start(dataclasses.replace(request, generation=generation))
        return generation >= 0

    def _start(self, request: PlaneRequest) -> None:
        self._hold_until = time.monotonic() + HOLD if self._prepare_buffers(request) else 0.0
        self.request = request
        self._dirty.clear()
        self._fresh = True
        shape = self.levels[0].shape
        self.grid_item.reset(
            (
                request.chunk_shape[0] * request.factor[0],
                request.chunk_shape[1] * request.factor[1],
            ),
            (shape[request.y_axis], shape[request.x_axis]),
        )
        array = self.arrays[request.level]
        land = functools.partial(self._land_in, self.landing, len(request.tiles))
        self.loader.submit(request, array, land=land)

    def _prefetch_neighbours(self) -> None:
        """Warm the cache with the planes next to this one, once it is on screen: started
        earlier, their decoding took the CPUs the visible plane's copy and blend needed."""
        request, state = self.request, self.state
        if request is None or state is None or state.slider_axis is None:
            return
        if self._finished_generation != request.generation:  # a new plane came meanwhile
            return
        level = self.levels[request.level]
        axis = state.slider_axis
        index = min(int(state.indices[axis] / level.factors[axis]), level.shape[axis] - 1)
        self.loader.prefetch(self.arrays[request.level], axis, index, level.shape[axis])

    def _prepare_buffers(self, request: PlaneRequest) -> bool:
        """The buffers of ``request`` (``landing.Landing``): those on screen taken over as they
        are for the same geometry and types (a slider step: the old plane stays until the new
        one lands; returns True), else new ones that a worker fills with the old picture
        resampled."""
        state = self.state
        dtype = np.dtype(self.arrays[request.level].dtype)
        count = self._channel_count(request)
        if count is not None:
            shown, to_display = np.dtype(np.uint8), None
        elif self.cf is not None:
            shown, to_display = self.cf.display_dtype(), self.cf.to_display
        else:
            shown = transforms.display_dtype(dtype, state.field_name, state.complex_mode)
            to_display = functools.partial(
                transforms.to_display, field_name=state.field_name, complex_mode=state.complex_mode
            )
        g, old, old_request = request.geometry, self.landing, self.request
        shape = (g.ny, g.nx)
        same = (
            old is not None
            and old_request is not None
            and old_request.geometry == g
            and (old.channels is None) == (count is None)
            and old.matches(shape, dtype, shown, count)
        )
        landing = Landing(
            shape,
            y_axis=request.y_axis,
            x_axis=request.x_axis,
            raw_dtype=dtype,
            display_dtype=shown,
            to_display=to_display,
            channels=self.channels if count is not None else None,
            count=count,
            windows=self._known_windows() if count is not None else None,
            shared=old if same else None,
        )
        if request.coarse_geometry is not None:
            landing.with_preview(request.coarse_geometry, *coarse_index(g, request.coarse_geometry))
        if old is not None:
            old.close()
            if not same:
                self._run_job(functools.partial(landing.placeholder, old, old_request.geometry, g))
        self.landing = landing
        self.loaded = np.zeros(shape, dtype=bool)
        self._restyle = True  # a composite: blended again if its windows are not those
        return same

    def _known_windows(self) -> list[tuple[float, float]] | None:
        """The composite's windows as known now (fixed, or the last automatic ones found);
        None while an automatic one is still unknown (nothing is blended until it is)."""
        windows = []
        for channel in self.channels.channels:
            window = channel.window if channel.window is not None else channel.auto_window
            if window is None and channel.visible:
                return None
            windows.append(window or (0.0, 1.0))
        return windows

    def _run_job(self, fn, done: str = "_job_done") -> None:
        """Whole-buffer work on the buffers' worker; ``done`` (a method) on the GUI thread."""
        self._jobs += 1
        future = _buffer_jobs().submit(fn)
        future.add_done_callback(functools.partial(_job_finished, self._handle, done))

    def _job_done(self, future) -> None:
        self._jobs -= 1
        self._fresh = True
        error = None if future.cancelled() else future.exception()
        if error is not None:
            logger.error("drawing the plane failed", exc_info=error)
        if not self._redraw.isActive():
            self._redraw.start()

    def _restyle_composite(self) -> None:
        """Blend the composite again on the buffers' worker when its windows (automatic ones
        from the pixels known), colours or toggles changed; one such job at a time."""
        if self._blending:
            self._blend_again = True
            return
        self._blending, self._blend_again = True, False
        self._run_job(
            functools.partial(_blend_job, self.landing, self.channels, self.loaded), "_blend_done"
        )

    def _blend_done(self, future) -> None:
        self._blending = False
        if self._blend_again and self.landing is not None and self.composite:
            self._restyle_composite()
        self._job_done(future)

    def _channel_count(self, request: PlaneRequest) -> int | None:
        """Channels in the stored buffer (None: one plane, not a composite)."""
        if not self.composite:
            return None
        return self.levels[request.level].shape[self.channels.axis]

    # -- results ---------------------------------------------------------------------------------

    def _on_tile(self, generation: int, index: int) -> None:
        if self.request is None or generation != self.request.generation:
            return
        self._dirty.add(index)
        if not self._redraw.isActive():
            self._redraw.start()

    def _on_chunk_states(self, generation: int, states) -> None:
        if self.request is not None and generation == self.request.generation:
            self.grid_item.set_states(states)

    def _on_failed(self, generation: int, message) -> None:
        if self.request is not None and generation == self.request.generation:
            self.message.emit(message)

    def _on_finished(self, generation: int) -> None:
        self._finished_generation = generation
        if not self._redraw.isActive():
            self._redraw.start()

    @staticmethod
    def _land_in(landing: Landing, fine: int, index: int, tile, out, selection, status) -> None:
        """On the engine's worker: a chunk of tile ``index`` into ``landing`` (fine tiles
        first, then the preview's: ``fine`` of them)."""
        if index < fine:
            landing.land(tile, out, selection, status)
        else:
            landing.land_preview(tile, out, selection, status)

    def _tile_done(self, index: int) -> None:
        """A tile whose chunks have all reported: its pixels hold their values (but those of
        failed chunks: never written, never to be taken for data), for the readout and the
        contrast."""
        request = self.request
        if index >= len(request.tiles) or self.loader.tile_open(index):
            return
        tile = request.tiles[index]
        self.loaded[tile.out_rows, tile.out_cols] = True
        for selection in self.loader.failed_regions.get(index, ()):
            rows, cols, _ = self.landing.place(tile, selection)
            self.loaded[rows, cols] = False

    def redraw(self) -> None:
        """Draw the plane again now (the contrast, a channel's window or colour changed)."""
        self._restyle, self._hold_until = True, 0.0
        self._draw()

    def _draw(self) -> None:
        """Hand the buffers the workers fill to the image item (once per event-loop pass)."""
        landing = self.landing
        if self.request is None or landing is None:
            return
        generation = self.request.generation
        landed = bool(self._dirty)
        for index in sorted(self._dirty):
            self._tile_done(index)
        self._dirty.clear()
        if landing.errors:
            errors, landing.errors = landing.errors, []
            self.message.emit(messages.describe(errors[0], node=self.request.level_path))
        changed, self._fresh = landed or self._fresh or self._restyle, False
        if self._holding() or not changed:  # nothing new to hand over
            self._fresh = self._fresh or changed
            self._refine()
            self._check_finished()
            return
        item, other = self.drawn_item, self.image_item
        if self.composite:  # its own item: the histogram's levels and colormap are not for it
            if landed or self._restyle:
                self._restyle_composite()
            item.setImage(landing.display, autoLevels=False, levels=None)
        else:
            self._hand_over(item, landing.display)
            other = self.composite_item
        self._restyle = False
        item.setVisible(True)
        if other is not None:
            other.setVisible(False)
        g = self.request.geometry  # after setImage: the rect scales by the image's size
        item.setRect(QRectF(g.x0, g.y0, g.nx * g.sx, g.ny * g.sy))
        if isinstance(item, ColouredImageItem):  # asked once the values are where they lie
            item.colour()  # busy from now until the picture is on screen
        self.painted.emit(generation)
        self._refine()
        self._check_finished()

    def _refine(self) -> None:
        """The preview is on screen (or held back): now read the real thing."""
        if self.request.coarse_tiles and self.approx.any():
            self.loader.start_fine()

    def _holding(self) -> bool:
        """Whether a slider step still shows the previous plane: until its tiles have all
        landed, the user changed the contrast (``redraw``), or ``HOLD`` has passed."""
        remaining = self._hold_until - time.monotonic()
        if remaining <= 0 or self._finished_generation == self.request.generation:
            self._hold_until = 0.0
            return False
        if not self._hold_timer.isActive():
            self._hold_timer.start(math.ceil(remaining * 1000))
        return True

    def _check_finished(self) -> None:
        """Say ``finished`` once every tile of the request has landed and its picture is on
        screen, then warm the cache with the neighbouring planes."""
        request = self.request
        if (
            request is not None
            and self._finished_generation == request.generation
            and not self.loader.busy
            and not self._dirty
            and not self._jobs
            and not self._redraw.isActive()
            and not self._hold_until
            and not getattr(self.image_item, "busy", False)
        ):
            self.finished.emit(request.generation)
            self._prefetch_timer.start()  # after the paint it asked for

    def _hand_over(self, item, display: np.ndarray) -> None:
        """Give ``item`` the values to draw, with their levels: the user's, or automatic
        ones, found with the picture on the worker (in the sample of its histogram, of the
        pixels that hold values) and told back by ``levels_found``."""
        state = self.state
        if not state.auto_levels and state.levels is not None:
            levels = transforms.centred(state.levels, state.centre)
            item.setImage(display, autoLevels=False, levels=levels)
        else:
            item.auto = contrast.AutoLevels(
                mask=contrast.on_grid(self.loaded) | contrast.on_grid(self.approx),
                centre=state.centre,
                fallback=self.current_levels or (0.0, 1.0),
            )
            item.setImage(display, autoLevels=False)  # its levels stay until the new ones

    def _levels_found(self, levels) -> None:
        self.current_levels = (float(levels[0]), float(levels[1]))

    def sample_at(self, y: float, x: float) -> tuple[int, int] | None:
        """Level-0 (row, column) of the element shown at level-0 position (y, x), where the
        plane on screen is level 0 read with a stride (zoomed out: every n-th element); else
        ``None`` (every element shown, or a coarser level's pixel)."""
        request = self.request
        if request is None or request.level != 0:
            return None
        g = request.geometry
        if g.sy <= 1 and g.sx <= 1:
            return None
        row, col = self._cell(y, x)
        return int(g.y0 + row * g.sy), int(g.x0 + col * g.sx)

    def _cell(self, y: float, x: float) -> tuple[int, int]:
        """(row, column) of the buffer on screen under level-0 position (y, x)."""
        g = self.request.geometry
        return math.floor((y - g.y0) / g.sy), math.floor((x - g.x0) / g.sx)

    def value_at(self, y: float, x: float):
        """The stored value under level-0 position (y, x), or ``None`` if not loaded yet."""
        if self.request is None or self.raw is None:
            return None
        g = self.request.geometry
        row, col = self._cell(y, x)
        if 0 <= row < g.ny and 0 <= col < g.nx and self.loaded[row, col]:
            return self.raw[..., row, col]  # composite: one value per channel
        return None
