"""Where the chunks of the plane on screen land: the worker threads' side of the picture.

The engine reports each chunk of a tile as it is decoded (``on_chunk``, on its worker thread).
There, :meth:`Landing.land` copies the chunk's values into the stored buffer (the readout's)
and turns them into the pixels drawn: a CF variable's decoded values, the display mapping of
complex or boolean data, or, for a composite, the blend of every channel over that region; a
preview chunk (``land_preview``) fills every pixel it stands for that nothing finer covers yet.
The GUI thread only hands the buffers to the image item: it does no work over a whole buffer,
so a slider step never holds the window for more than a paint.

The two other whole-buffer jobs run on a worker of their own (``tasks.DaemonPool``): the
placeholder (the previous plane resampled into a new view's geometry, so the picture never
blanks, only where nothing has landed yet) and the composite's whole blend again when its
windows, colours or toggles change (the new pixels replace the old at once, when done).

One lock per set of buffers orders the writers: a chunk's copy and blend, the placeholder and
the whole blend never interleave over the same pixels, and a request superseded (``close``)
writes nothing more. The GUI thread never takes it: it may draw a tile half written, which the
next redraw, already scheduled by that tile, draws whole.

Plain Python and NumPy: no Qt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

import zarrfs.engine as engine

from .channels import ChannelState
from .tiles import Geometry, Tile, resample

_blenders = threading.local()  # an engine.Blender per thread: it keeps working buffers


def _blender() -> engine.Blender:
    blender = getattr(_blenders, "blender", None)
    if blender is None:
        blender = _blenders.blender = engine.Blender()
    return blender


class Landing:
    """The buffers of one plane request, and how the values that land there are drawn.

    ``raw``: the stored values, (rows, cols), for a composite (channels, rows, cols);
    ``display``: what is drawn, (rows, cols) of ``to_display``'s type, for a composite
    (rows, cols, 3) ``uint8`` blended with ``windows`` (None: not blended until ``blend``);
    ``landed``: pixels a chunk wrote; ``approx``: pixels only the preview wrote. ``shared``:
    an earlier Landing of the same geometry and types, whose buffers (and lock) this one takes
    over, its picture the placeholder until the new values land.
    """

    def __init__(
        self,
        shape: tuple[int, int],
        *,
        y_axis: int,
        x_axis: int,
        raw_dtype: np.dtype,
        display_dtype: np.dtype,
        to_display: Callable[[np.ndarray], np.ndarray] | None,
        channels: ChannelState | None = None,
        count: int | None = None,
        windows: list[tuple[float, float]] | None = None,
        shared: Landing | None = None,
    ):
        self.y_axis, self.x_axis = y_axis, x_axis
        self.to_display, self.channels, self.windows = to_display, channels, windows
        self.key = channels.key(windows) if channels is not None and windows else None
        self.closed = False
        if shared is not None:
            self.raw, self.display, self.lock = shared.raw, shared.display, shared.lock
        else:
            raw_shape = shape if count is None else (count, *shape)
            display_shape = shape if count is None else (*shape, 3)
            self.raw = np.zeros(raw_shape, raw_dtype)
            self.display = np.zeros(display_shape, display_dtype)
            self.lock = threading.Lock()
        self.landed = np.zeros(shape, bool)
        self.approx = np.zeros(shape, bool)
        self.coarse: np.ndarray | None = None  # the preview's own buffer
        self.errors: list[BaseException] = []  # what drawing a chunk raised (the GUI says so)

    def matches(self, shape, raw_dtype, display_dtype, count) -> bool:
        """Whether buffers of this shape and these types can be taken over as they are."""
        raw_shape = shape if count is None else (count, *shape)
        return (
            self.raw.shape == tuple(raw_shape)
            and self.raw.dtype == raw_dtype
            and self.display.dtype == display_dtype
            and self.display.ndim == (2 if count is None else 3)
        )

    def close(self) -> None:
        """Superseded: chunks still landing for it write nothing more."""
        self.closed = True

    def with_preview(self, coarse: Geometry, rows: np.ndarray, cols: np.ndarray) -> None:
        """A preview read first at ``coarse``; ``rows``/``cols``: its pixel of each fine row
        and column (``tiles.coarse_index``)."""
        composite = self.channels is not None
        dtype = self.raw.dtype if composite else self.display.dtype
        shape = (coarse.ny, coarse.nx)
        self.coarse = np.zeros((self.raw.shape[0], *shape) if composite else shape, dtype)
        self.coarse_good = np.zeros(shape, bool)
        self.coarse_rows, self.coarse_cols = rows, cols

    # -- a chunk lands (engine worker thread) ----------------------------------------------------

    def land(self, tile: Tile, out: np.ndarray, selection: tuple, status: str) -> None:
        """Chunk ``selection`` (of ``out``, the tile's read buffer) reported ``status``: copy
        and draw its values (``"failed"``: blank its pixels, there are no values)."""
        try:
            rows, cols, channel, block = self._region(tile, out, selection)
            plain = self.channels is None
            # decoded outside the lock: the workers decode side by side, and only copy in turn
            shown = self.to_display(block) if plain and status != "failed" else None
            with self.lock:
                if self.closed:
                    return
                if plain:
                    if status == "failed":
                        self.display[rows, cols] = 0
                        return
                    self.raw[rows, cols] = block
                    self.display[rows, cols] = shown
                else:
                    if status != "failed":
                        self.raw[channel, rows, cols] = block
                    self._blend_region(rows, cols)
                if status != "failed":
                    self.landed[rows, cols] = True
        except (ValueError, TypeError) as exc:  # values that cannot be drawn: said once
            self.errors.append(exc)

    def land_preview(self, tile: Tile, out: np.ndarray, selection: tuple, status: str) -> None:
        """A preview chunk: into the preview's buffer, and over every fine pixel it covers
        that no fine chunk has written."""
        if status == "failed" or self.coarse is None:
            return
        try:
            rows, cols, channel, block = self._region(tile, out, selection)
            with self.lock:
                if self.closed:
                    return
                composite = self.channels is not None
                if composite:
                    self.coarse[channel, rows, cols] = block
                else:
                    self.coarse[rows, cols] = self.to_display(block)
                self.coarse_good[rows, cols] = True
                r0, r1 = np.searchsorted(self.coarse_rows, (rows.start, rows.stop))
                c0, c1 = np.searchsorted(self.coarse_cols, (cols.start, cols.stop))
                if r0 == r1 or c0 == c1:
                    return
                where = np.ix_(self.coarse_rows[r0:r1], self.coarse_cols[c0:c1])
                free = ~self.landed[r0:r1, c0:c1] & self.coarse_good[where]
                if composite:
                    values = self.coarse[(slice(None), *where)]
                    np.copyto(self.raw[:, r0:r1, c0:c1], values, where=free)
                    self._blend_region(slice(r0, r1), slice(c0, c1))
                else:
                    np.copyto(self.display[r0:r1, c0:c1], self.coarse[where], where=free)
                self.approx[r0:r1, c0:c1] |= free
        except (ValueError, TypeError) as exc:
            self.errors.append(exc)

    def _blend_region(self, rows: slice, cols: slice) -> None:
        if self.windows is not None:
            self.channels.render(
                self.raw[:, rows, cols],
                self.windows,
                out=self.display[rows, cols],
                blender=_blender(),
            )

    def place(self, tile: Tile, selection: tuple) -> tuple[slice, slice, slice | None]:
        """Where a chunk's part ``selection`` of a tile's read buffer lies in the buffers:
        (rows, cols, and for a composite its channels)."""
        selection = tuple(selection)
        if self.channels is None:
            first, second = selection[-2], selection[-1]
            if self.y_axis > self.x_axis:  # the tile's axes in array order: columns first
                first, second = second, first
            return _shift(tile.out_rows, first), _shift(tile.out_cols, second), None
        axes = sorted((self.channels.axis, self.y_axis, self.x_axis))
        c, y, x = (axes.index(a) for a in (self.channels.axis, self.y_axis, self.x_axis))
        return (
            _shift(tile.out_rows, selection[y]),
            _shift(tile.out_cols, selection[x]),
            selection[c],
        )

    def _region(self, tile: Tile, out: np.ndarray, selection: tuple):
        """(rows, cols, channels, values) in the buffers, of a chunk's part of a tile."""
        rows, cols, channel = self.place(tile, selection)
        block = out[tuple(selection)]
        if self.channels is None:
            if block.ndim != 2:  # a plane of a single element per row or column
                block = block.reshape(block.shape[-2:])
            return rows, cols, None, block.T if self.y_axis > self.x_axis else block
        axes = sorted((self.channels.axis, self.y_axis, self.x_axis))
        c, y = axes.index(self.channels.axis), axes.index(self.y_axis)
        return rows, cols, channel, np.moveaxis(block, [c, y], [0, 1])

    # -- whole-buffer jobs (their own worker) ----------------------------------------------------

    def placeholder(self, old: Landing, old_geometry: Geometry, geometry: Geometry) -> None:
        """The previous plane's pixels resampled into this one's geometry, where nothing has
        landed yet."""
        if old.raw.shape[:-2] != self.raw.shape[:-2] or old.raw.dtype != self.raw.dtype:
            return
        fill = np.zeros((), self.raw.dtype)[()]
        composite = self.channels is not None
        if composite:
            raw = np.stack([resample(r, old_geometry, geometry, fill) for r in old.raw])
        else:
            raw = resample(old.raw, old_geometry, geometry, fill)
            if old.display.dtype != self.display.dtype:
                return
            display = resample(old.display, old_geometry, geometry, 0)
        with self.lock:
            if self.closed:
                return
            free = ~(self.landed | self.approx)
            np.copyto(self.raw, raw, where=free)
            if not composite:
                np.copyto(self.display, display, where=free)
            elif self.windows is not None:
                blended = self.channels.render(raw, self.windows, blender=_blender())
                np.copyto(self.display, blended, where=free[..., None])

    def blend(self, windows: list[tuple[float, float]]) -> None:
        """Blend the whole composite again with ``windows``; the chunks that land meanwhile
        wait, then blend with them."""
        with self.lock:
            if self.closed:
                return
            display = self.channels.render(self.raw, windows, blender=_blender())
            self.display, self.windows = display, windows
            self.key = self.channels.key(windows)


def _shift(outer: slice, inner: slice) -> slice:
    """``inner`` (a slice of a tile's buffer) as a slice of the plane's, the tile at ``outer``."""
    start = outer.start + (inner.start or 0)
    stop = outer.stop if inner.stop is None else outer.start + inner.stop
    return slice(start, min(stop, outer.stop))
