"""Submit a plane's tiles to the engine in the background, and drop what became stale.

Each :class:`~viewer.tiles.PlaneRequest` carries a generation, unique in the process (see
``view_state.next_generation``: events of another array's request never match). Submitting a
new one cancels the futures of the previous one; chunk events that still arrive for an old
generation are counted and dropped, never drawn. The engine calls ``on_chunk`` from its worker
threads; the event crosses to the GUI thread through a queued signal. A tile is complete when every chunk it touches has
reported, or (as a safety net) when its future is done.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from . import messages
from .tasks import gui_handle, init_relay, post_to_handle
from .tiles import PlaneRequest, neighbour_selections
from .view_state import next_generation

logger = logging.getLogger(__name__)


class PlaneLoader(QObject):
    """Owns the futures of the current plane and of the prefetched neighbour planes."""

    tile_landed = Signal(int, int)  # generation, tile index (data in the tile's future)
    chunk_states = Signal(int, object)  # generation, [((chunk row, chunk col), status)...]
    failed = Signal(int, object)  # generation, messages.UserMessage
    finished = Signal(int)  # generation: every tile reported

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.generation = -1
        self.request: PlaneRequest | None = None
        self.futures: list = []
        self._expected: list[int] = []
        self._seen: list[int] = []
        self._open_tiles: set[int] = set()
        self._prefetch: dict[tuple, list] = {}
        self.dropped_events = 0
        self.failed_regions: dict[int, list] = {}
        self._closed = False
        self._array = None
        self._land = None
        self._fine_started = True
        self._preview_drawable = False
        init_relay()
        self._handle = gui_handle(self)
        self._poll = QTimer(self)
        self._poll.setInterval(100)
        self._poll.timeout.connect(self._check_done)
        # chunk events come one per chunk (40,000 for a zoomed-out plane of small chunks): their
        # states are passed on in one batch per turn of the event loop, and each tile that got
        # some is announced once per batch, not once per chunk (a signal costs ~10 µs of the
        # GUI thread); the redraw those announcements start then sees the whole batch
        self._pending_states: list = []
        self._pending_tiles: set[int] = set()
        self._flush_timer = QTimer(self, singleShot=True, interval=0)
        self._flush_timer.timeout.connect(self._flush)

    @property
    def busy(self) -> bool:
        return bool(self._open_tiles) or self._flush_timer.isActive()

    def tile(self, index: int):
        """The current request's tile ``index`` (fine tiles first, then the preview's)."""
        fine = self.request.tiles
        return fine[index] if index < len(fine) else self.request.coarse_tiles[index - len(fine)]

    def tile_open(self, index: int) -> bool:
        """Whether tile ``index`` of the current request still waits for chunks."""
        return index in self._open_tiles

    def progress(self) -> tuple[int, int]:
        total = len(self.futures)
        return total - len(self._open_tiles), total

    # -- submitting ------------------------------------------------------------------------------

    def submit(self, request: PlaneRequest, array, land=None) -> None:
        """Start ``request`` on ``array`` (the level's engine array); cancels the previous one.

        ``land(index, tile, out, out_selection, status)``: called on the engine's worker thread
        for each chunk of tile ``index`` as it is decoded into ``out`` (the tile's read
        buffer), before the GUI thread hears of it (``landing.Landing``). It must hold no Qt
        object.

        With a preview (``request.coarse_tiles``) it is read first, alone; the fine tiles are
        submitted (``start_fine``) once the first preview pixels are drawn, or when every preview
        tile has reported with nothing to draw, at lower priority than what is left of the
        preview. The first picture
        then needs only a few of the preview's chunks, which the fine pass finds again in the
        engine's cache. Indices: fine tiles first (0 .. n-1), then the preview's.
        """
        self.cancel()
        self.generation, self.request, self._array = request.generation, request, array
        self._land = land
        total, fine = len(request.tiles) + len(request.coarse_tiles), len(request.tiles)
        self.futures, self._expected, self._seen = [None] * total, [0] * total, [0] * total
        self.failed_regions: dict[int, list] = {}  # tile index -> out selections of failed chunks
        self._open_tiles = set(range(total))
        self._fine_started = not request.coarse_tiles
        self._preview_drawable = False  # a preview chunk landed: a paint will start the fine pass
        first = range(fine, total) if request.coarse_tiles else range(total)
        self._poll.start()
        self._submit_tiles(first)
        if not self._open_tiles:
            self.finished.emit(request.generation)

    def _submit_tiles(self, indices) -> None:
        request, array = self.request, self._array
        loading = []
        for index in indices:
            tile = self.tile(index)
            priority = tile.priority
            if index >= len(request.tiles):  # the preview goes before every fine tile
                priority -= len(request.coarse_tiles)
            try:
                self._expected[index] = tile.chunk_count or self._count_chunks(array, tile)
                out = None if self._land is None else _read_buffer(array, tile.selection)
                callback = functools.partial(
                    _chunk_event, self._handle, request.generation, index, self._land, tile, out
                )
                future = array.submit(tile.selection, priority=priority, on_chunk=callback, out=out)
            except Exception as exc:  # a bad selection or a closed store: report, keep going
                self._open_tiles.discard(index)
                self.failed.emit(
                    request.generation, messages.describe(exc, node=request.level_path)
                )
                continue
            self.futures[index] = future
            loading += [(coords, "loading") for coords in tile.chunk_coords]
        if loading:
            self.chunk_states.emit(request.generation, loading)
        self._maybe_start_fine()

    def start_fine(self) -> None:
        """Read the plane at screen resolution (after the preview's first pixels)."""
        if self._fine_started or self.request is None:
            return
        self._fine_started = True
        self._submit_tiles(range(len(self.request.tiles)))

    def _maybe_start_fine(self) -> None:
        """Once the preview has reported with nothing to draw (every chunk failed): then no
        paint will start the fine pass. When it has pixels, the redraw they schedule draws
        them and starts it (``start_fine``), so the first picture is the preview's."""
        request = self.request
        if self._fine_started or request is None or self._preview_drawable:
            return
        if not any(index >= len(request.tiles) for index in self._open_tiles):
            self.start_fine()

    @staticmethod
    def _count_chunks(array, tile) -> int:
        try:
            return sum(1 for _ in array.chunks_in(tile.selection))
        except Exception:
            return len(tile.chunk_coords)

    def prefetch(self, array, slider_axis: int | None, index: int, size: int) -> None:
        """Warm the engine's cache with the visible tiles of the planes next to this one."""
        request = self.request
        if request is None or slider_axis is None:
            return
        wanted = {}
        for plane, selection, priority in neighbour_selections(
            request.tiles, slider_axis, index, size
        ):
            wanted.setdefault(
                (request.level_path, request.plane_key[:2], slider_axis, plane, request.geometry),
                [],
            ).append((selection, priority))
        for key in list(self._prefetch):
            if key not in wanted:
                for future in self._prefetch.pop(key):
                    future.cancel()
        for key, items in wanted.items():
            if key in self._prefetch:
                continue
            futures = []
            for selection, priority in items:
                try:
                    futures.append(array.submit(selection, priority=priority))
                except Exception:
                    logger.debug("prefetch of %s failed to start", selection, exc_info=True)
            self._prefetch[key] = futures

    def cancel(self) -> None:
        """Cancel the current plane's reads; their late events will be dropped."""
        for future in self.futures:
            if future is not None and not future.done():
                future.cancel()
        self._open_tiles = set()
        self._fine_started = True
        self._poll.stop()
        self._pending_states, self._pending_tiles = [], set()  # of the request just cancelled

    def cancel_all(self) -> None:
        self.cancel()
        for futures in self._prefetch.values():
            for future in futures:
                future.cancel()
        self._prefetch.clear()
        self.generation = next_generation()  # never one a later request carries

    # -- results ---------------------------------------------------------------------------------

    def close(self) -> None:
        """No more events: the view is going away."""
        self.cancel_all()
        self._closed = True

    def _on_event(self, generation: int, index: int, event) -> None:
        if self._closed:
            return
        if (
            generation != self.generation
            or self.request is None
            or not 0 <= index < len(self._seen)
        ):
            self.dropped_events += 1
            return
        status = getattr(event, "status", "loaded")
        coords = getattr(event, "chunk_coords", None)
        if coords is not None:
            request = self.request
            self._pending_states.append(((coords[request.y_axis], coords[request.x_axis]), status))
        if status == "failed":
            selection = getattr(event, "out_selection", None)
            if selection is not None:
                self.failed_regions.setdefault(index, []).append(selection)
            error = getattr(event, "error", None) or RuntimeError("chunk failed")
            self.failed.emit(
                generation,
                messages.describe(
                    error,
                    node=self.request.level_path,
                    chunk=tuple(coords) if coords is not None else None,
                ),
            )
        if index >= len(self.request.tiles) and status != "failed":
            self._preview_drawable = True
        self._seen[index] += 1
        self._pending_tiles.add(index)
        if not self._flush_timer.isActive():
            self._flush_timer.start()
        if self._seen[index] >= self._expected[index]:
            self._close_tile(index)

    def _flush(self) -> None:
        """Pass on the chunk states and tiles of the events since the last flush."""
        states, tiles = self._pending_states, self._pending_tiles
        self._pending_states, self._pending_tiles = [], set()
        if self.request is None or self._closed:
            return
        if states:
            self.chunk_states.emit(self.generation, states)
        for index in sorted(tiles):
            self.tile_landed.emit(self.generation, index)

    def _close_tile(self, index: int) -> None:
        if index in self._open_tiles:
            self._open_tiles.discard(index)
            self._maybe_start_fine()
            if not self._open_tiles:
                self._poll.stop()
                self.finished.emit(self.generation)

    def _check_done(self) -> None:
        """Safety net: a future that finished without all its chunk events (an early error)."""
        generation = self.generation
        for index in sorted(self._open_tiles):
            future = self.futures[index]
            if future is None or not future.done():
                continue
            try:
                future.result()
            except Exception as exc:
                if not messages.is_cancellation(exc):
                    self.failed.emit(
                        generation,
                        messages.describe(
                            exc, node=self.request.level_path if self.request else None
                        ),
                    )
                    self.chunk_states.emit(
                        generation, [(coords, "failed") for coords in self.tile(index).chunk_coords]
                    )
            self.tile_landed.emit(generation, index)
            if generation != self.generation:
                return
            self._close_tile(index)


def _read_buffer(array, selection) -> np.ndarray:
    """The buffer a tile is read into: its shape is the selection's slices' lengths."""
    shape = tuple(
        len(range(*part.indices(size)))
        for part, size in zip(selection, array.shape, strict=True)
        if isinstance(part, slice)
    )
    return np.empty(shape, np.dtype(array.dtype))


def _chunk_event(handle: int, generation: int, index: int, land, tile, out, event) -> None:
    """``on_chunk`` for the engine's worker threads: holds no Qt object, only a handle.
    ``land`` (see ``PlaneLoader.submit``) draws the chunk here, on the worker."""
    if land is not None:
        selection = getattr(event, "out_selection", None)
        if selection is not None:
            try:
                land(index, tile, out, selection, getattr(event, "status", "loaded"))
            except Exception:  # never into the engine's read: the chunk is reported anyway
                logger.exception("drawing chunk %s failed", getattr(event, "chunk_coords", "?"))
    post_to_handle(handle, "_on_event", generation, index, event)
