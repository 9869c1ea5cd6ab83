"""Turn the view state and viewport into plane requests, and landed tiles into pixels.

The controller keeps two screen-sized buffers for the plane on screen: the stored values (for the
cursor readout) and the values drawn (after complex/bool/datetime mapping). For an OME-Zarr
image shown as a composite (``channels.ChannelState``), each tile reads every channel at once,
the stored buffer holds them all (channels, rows, cols) and the drawn one is their RGB blend. When the view moves,
the old buffer is resampled into the new geometry as a placeholder, so the picture never blanks;
tiles overwrite it as they land, and redraws are coalesced to one per event-loop pass.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
from PySide6.QtCore import QObject, QRectF, QTimer, Signal

from . import messages, transforms
from .cf_display import CFValues
from .channels import ChannelState
from .loader import PlaneLoader
from .tiles import (
    Level,
    PlaneRequest,
    choose_level,
    coarse_index,
    coarse_stride,
    plan_plane,
    resample,
    scale_geometry,
)
from .view_state import ViewState

logger = logging.getLogger(__name__)

#: seconds a redraw spends copying landed tiles before it draws and leaves the rest for the
#: next pass (hundreds of tiles landing at once held the window for 170 ms)
_COPY_SLICE = 0.03


class PlaneController(QObject):
    """Glue between ``ViewState``, the engine arrays of each level, the loader and the image."""

    painted = Signal(int)  # generation whose pixels were just drawn
    finished = Signal(int)  # generation whose tiles have all landed (and been drawn)
    message = Signal(object)  # messages.UserMessage

    def __init__(self, image_item, grid_item, parent: QObject | None = None, composite_item=None):
        super().__init__(parent)
        self.image_item, self.grid_item = image_item, grid_item
        self.composite_item = composite_item
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
        self.raw: np.ndarray | None = None
        self.display: np.ndarray | None = None
        self.loaded: np.ndarray | None = None
        self.approx: np.ndarray | None = None
        self.coarse_display: np.ndarray | None = None
        self.current_levels: tuple[float, float] | None = None
        self.channels: ChannelState | None = None
        self.cf: CFValues | None = None  # a CF variable's values: decoded (or raw) as they land
        self._blend_key: tuple | None = None  # what the composite on screen was blended with
        self._changed: list[tuple[slice, slice]] = []  # regions stored since it was blended
        self._dirty: set[int] = set()
        self._finished_generation = -1
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(0)
        self._redraw.timeout.connect(self.redraw)

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
        self.request, self.raw, self.display, self.loaded = None, None, None, None
        self._dirty.clear()

    def clear(self) -> None:
        self.loader.cancel_all()
        self.state, self.request, self.channels = None, None, None
        self.raw = self.display = self.loaded = None

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
        return self.loader.busy or bool(self._dirty) or self._redraw.isActive()

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
        generation = self.state.bump()
        request = self.build_request(view_rect, screen)
        self._start(request)
        return generation >= 0

    def _start(self, request: PlaneRequest) -> None:
        self._prepare_buffers(request)
        self.request = request
        self._dirty.clear()
        shape = self.levels[0].shape
        self.grid_item.reset(
            (
                request.chunk_shape[0] * request.factor[0],
                request.chunk_shape[1] * request.factor[1],
            ),
            (shape[request.y_axis], shape[request.x_axis]),
        )
        array = self.arrays[request.level]
        self.loader.submit(request, array)

    def _prefetch_neighbours(self) -> None:
        """Warm the cache with the planes next to this one, once it is on screen: started
        earlier, their decoding took the CPUs the visible plane's copy and blend needed."""
        request, state = self.request, self.state
        if request is None or state is None or state.slider_axis is None:
            return
        level = self.levels[request.level]
        axis = state.slider_axis
        index = min(int(state.indices[axis] / level.factors[axis]), level.shape[axis] - 1)
        self.loader.prefetch(self.arrays[request.level], axis, index, level.shape[axis])

    def _prepare_buffers(self, request: PlaneRequest) -> None:
        state = self.state
        dtype = np.dtype(self.arrays[request.level].dtype)
        shown = (
            self.cf.display_dtype()
            if self.cf is not None
            else transforms.display_dtype(dtype, state.field_name, state.complex_mode)
        )
        g = request.geometry
        old = self.request
        self._prepare_coarse(request, shown)
        self.loaded = np.zeros((g.ny, g.nx), dtype=bool)
        self._changed = []  # the composite on screen still matches the stored values
        count = self._channel_count(request)
        raw_shape = (g.ny, g.nx) if count is None else (count, g.ny, g.nx)
        display_shape = (g.ny, g.nx) if count is None else (g.ny, g.nx, 3)
        shown = shown if count is None else np.dtype(np.uint8)
        if (
            old is not None
            and self.raw is not None
            and self.raw.dtype == dtype
            and self.display.dtype == shown
            and self.raw.shape[:-2] == raw_shape[:-2]
            and self.display.ndim == len(display_shape)
        ):
            if old.geometry != g:
                self._blend_key = None  # resampled: blend it all again
                fill = np.zeros((), dtype)[()]
                if count is None:
                    self.raw = resample(self.raw, old.geometry, g, fill)
                    self.display = resample(self.display, old.geometry, g, 0)
                else:  # the composite is blended again from the stored values
                    self.raw = np.stack([resample(r, old.geometry, g, fill) for r in self.raw])
                    self.display = np.zeros(display_shape, dtype=shown)
        else:
            self._blend_key = None
            self.raw = np.zeros(raw_shape, dtype=dtype)
            self.display = np.zeros(display_shape, dtype=shown)

    def _render_composite(self) -> None:
        """Blend the stored channels into the drawn buffer: only the regions stored since the
        last blend when the windows, colours and toggles are the same, else all of it."""
        windows = self.channels.windows(self.raw, self.loaded | self.approx)
        key = self.channels.key(windows)
        changed, self._changed = self._changed, []
        if key != self._blend_key or self.display.shape[:2] != self.raw.shape[1:]:
            self.display = self.channels.render(self.raw, windows)
            self._blend_key = key
            return
        for rows, cols in changed:
            self.channels.render(self.raw[:, rows, cols], windows, out=self.display[rows, cols])

    def _channel_count(self, request: PlaneRequest) -> int | None:
        """Channels in the stored buffer (None: one plane, not a composite)."""
        if not self.composite:
            return None
        return self.levels[request.level].shape[self.channels.axis]

    def _prepare_coarse(self, request: PlaneRequest, shown: np.dtype) -> None:
        """The preview's own small buffer and, per fine row and column, its preview pixel."""
        g, c = request.geometry, request.coarse_geometry
        self.approx = np.zeros((g.ny, g.nx), dtype=bool)  # drawn from the preview only
        if c is None:
            self.coarse_display, self._coarse_rows, self._coarse_cols = None, None, None
            return
        count = self._channel_count(request)
        if count is not None:  # the preview keeps the stored values of every channel
            shown = np.dtype(self.arrays[request.level].dtype)
        self.coarse_display = np.zeros(
            (c.ny, c.nx) if count is None else (count, c.ny, c.nx), dtype=shown
        )
        self._coarse_good = np.zeros((c.ny, c.nx), dtype=bool)  # preview pixels that decoded
        self._coarse_rows, self._coarse_cols = coarse_index(g, c)

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

    def _tile_block(self, tile, future):
        """The tile's data as (rows, cols) of the plane on screen, or ``None`` if not there."""
        out = getattr(future, "out", None)
        return None if out is None else self._as_block(np.asarray(out))

    def _as_block(self, block: np.ndarray) -> np.ndarray:
        """(rows, cols) of the plane on screen; composite: (channels, rows, cols)."""
        if self.composite:
            y, x = self.request.y_axis, self.request.x_axis
            # the channel axis and the two displayed axes remain, in array order
            order = sorted((self.channels.axis, y, x))
            block = block.reshape(block.shape[-3:]) if block.ndim != 3 else block
            return np.moveaxis(block, [order.index(self.channels.axis), order.index(y)], [0, 1])
        if block.ndim != 2:
            block = block.reshape(block.shape[-2:]) if block.size else block
        return block.T if self.request.y_axis > self.request.x_axis else block

    def _good(self, index: int, future) -> np.ndarray | None:
        """Which pixels of a tile hold decoded data (None: all): a failed chunk's part of the
        read buffer was never written, and must not be drawn as if it were data."""
        regions = self.loader.failed_regions.get(index)
        if not regions:
            return None
        good = np.ones(np.shape(future.out), dtype=bool)
        for selection in regions:
            good[selection] = False
        good = self._as_block(good)
        return good.all(axis=0) if self.composite else good

    def _copy_tile(self, index: int) -> None:
        request = self.request
        if index >= len(request.tiles):
            self._copy_coarse(index - len(request.tiles))
            return
        tile = request.tiles[index]
        future = self.loader.futures[index]
        block = self._tile_block(tile, future)
        if block is None:
            return
        rows, cols = tile.out_rows, tile.out_cols
        good = self._good(index, future)
        if self.composite:  # drawn by blending the stored values in redraw()
            self.raw[:, rows, cols] = block
            self.loaded[rows, cols] = True if good is None else good
            self._changed.append((rows, cols))
            return
        try:
            self.raw[rows, cols] = block
            self.display[rows, cols] = self._to_display(block)
            if good is None:
                self.loaded[rows, cols] = True
            else:  # failed chunks stay blank and not loaded (the preview may still cover them)
                self.display[rows, cols][~good] = 0
                self.loaded[rows, cols] = good
        except (ValueError, TypeError) as exc:
            self.message.emit(messages.describe(exc, node=request.level_path))

    def _to_display(self, block: np.ndarray) -> np.ndarray:
        """The values drawn for a tile's stored values (a CF variable's decoded)."""
        if self.cf is not None:
            return self.cf.to_display(block)
        state = self.state
        return transforms.to_display(
            block, field_name=state.field_name, complex_mode=state.complex_mode
        )

    def _copy_coarse(self, index: int) -> None:
        """Draw a preview tile over every fine pixel it covers that is not loaded yet."""
        request = self.request
        tile = request.coarse_tiles[index]
        future = self.loader.futures[len(request.tiles) + index]
        block = self._tile_block(tile, future)
        if block is None or self.coarse_display is None:
            return
        rows, cols = tile.out_rows, tile.out_cols
        good = self._good(len(request.tiles) + index, future)
        try:
            if self.composite:
                self.coarse_display[:, rows, cols] = block
            else:
                self.coarse_display[rows, cols] = self._to_display(block)
        except (ValueError, TypeError) as exc:
            self.message.emit(messages.describe(exc, node=request.level_path))
            return
        self._coarse_good[rows, cols] = True if good is None else good
        r0, r1 = np.searchsorted(self._coarse_rows, (rows.start, rows.stop))
        c0, c1 = np.searchsorted(self._coarse_cols, (cols.start, cols.stop))
        if r0 == r1 or c0 == c1:
            return
        where = np.ix_(self._coarse_rows[r0:r1], self._coarse_cols[c0:c1])
        free = ~self.loaded[r0:r1, c0:c1] & self._coarse_good[where]
        if self.composite:
            values = self.coarse_display[(slice(None),) + where]
            np.copyto(self.raw[:, r0:r1, c0:c1], values, where=free)
            self._changed.append((slice(r0, r1), slice(c0, c1)))
        else:
            np.copyto(self.display[r0:r1, c0:c1], self.coarse_display[where], where=free)
        self.approx[r0:r1, c0:c1] |= free

    def redraw(self) -> None:
        """Copy the landed tiles into the buffers and draw them (once per event-loop pass)."""
        if self.request is None or self.display is None:
            return
        generation = self.request.generation
        deadline = time.monotonic() + _COPY_SLICE
        for index in sorted(self._dirty):
            self._copy_tile(index)
            self._dirty.discard(index)
            if time.monotonic() > deadline and self._dirty:
                self._redraw.start()  # the rest on the next pass: input and paints go first
                break
        item, other = self.drawn_item, self.image_item
        if self.composite:  # its own item: the histogram's levels and colormap are not for it
            self._render_composite()
            item.setImage(self.display, autoLevels=False, levels=None)
        else:
            item.setImage(self.display, autoLevels=False, levels=self._levels())
            other = self.composite_item
        item.setVisible(True)
        if other is not None:
            other.setVisible(False)
        g = self.request.geometry  # after setImage: the rect scales by the image's size
        item.setRect(QRectF(g.x0, g.y0, g.nx * g.sx, g.ny * g.sy))
        self.painted.emit(generation)
        if self.request.coarse_tiles and self.approx.any():
            self.loader.start_fine()  # the preview is on screen: now the real thing
        if self._finished_generation == generation and not self.loader.busy and not self._dirty:
            self.finished.emit(generation)
            self._prefetch_neighbours()

    def _levels(self) -> tuple[float, float]:
        state = self.state
        if state.auto_levels or state.levels is None:
            step = max(1, math.ceil(math.sqrt(self.display.size / 65_536)))  # 64 Ki values
            mask = self.loaded[::step, ::step] | self.approx[::step, ::step]
            sample = self.display[::step, ::step][mask] if mask.any() else self.display[:0]
            found = transforms.robust_levels(sample)
            if found is not None:
                self.current_levels = transforms.centred(found, state.centre)
            elif self.current_levels is None:
                self.current_levels = (0.0, 1.0)
            return self.current_levels
        return transforms.centred(state.levels, state.centre)

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
