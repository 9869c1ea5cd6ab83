"""Plan what to read for the plane on screen: a pure function of shapes, view and screen size.

The viewer reads only what is visible, at the screen's resolution: it picks the pyramid level
whose pixels best match the screen's, then a stride within that level so the image is about the
size of the screen, and splits the visible region along chunk boundaries into tiles, ordered from
the centre of the view outward, so that each tile touches as few chunks as possible and the
first picture comes from the first chunk that lands. Nothing here does I/O or imports Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_TILES = 400  # above this, tiles group several chunks (fewer futures to track)
PREFETCH_PRIORITY = 1_000_000
MARGIN = 0.15  # read this fraction of the view beyond each edge, at lower priority
COARSE_ABOVE = 64  # a view touching more chunks than this is first read coarsely
COARSE_MIN_CHUNKS = 16  # the coarse pass may read this many chunks at least,
COARSE_FRACTION = 8  # and at most this fraction of the chunks the view touches


@dataclass(frozen=True)
class Level:
    """One resolution level: the array path, its shape and its downsampling factor per axis."""

    path: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    factors: tuple[float, ...]


@dataclass(frozen=True)
class Geometry:
    """Where a buffer sits in level-0 array coordinates: origin, stride and size (y, x)."""

    y0: int
    x0: int
    sy: float
    sx: float
    ny: int
    nx: int


@dataclass(frozen=True)
class Tile:
    """A piece of the plane read by one background request."""

    chunk_coords: tuple[tuple[int, int], ...]  # (chunk row, chunk col) in the level's grid
    selection: tuple  # N-d selection into the level's array
    out_rows: slice  # where it lands in the buffer
    out_cols: slice
    priority: int
    visible: bool
    chunk_count: int = 0  # chunks the selection touches (a composite: of every channel)


@dataclass(frozen=True)
class PlaneRequest:
    """The immutable request that leaves the GUI thread, tagged with the view's generation."""

    generation: int
    node_path: str
    level: int
    level_path: str
    y_axis: int
    x_axis: int
    plane_key: tuple
    geometry: Geometry
    tiles: tuple[Tile, ...]
    chunk_shape: tuple[int, int]  # chunk size in level coords (rows, cols), for the overlay
    factor: tuple[float, float]  # level-0 pixels per level pixel (rows, cols)
    coarse_geometry: Geometry | None = None  # the preview read first (level-0 coordinates)
    coarse_tiles: tuple[Tile, ...] = ()  # its tiles; the fine ones are read after them


def level_factors(shapes: list[tuple[int, ...]]) -> list[tuple[float, ...]]:
    """Downsampling factor of each level relative to the first, from the shapes alone."""
    base = shapes[0]
    return [tuple(b / max(s, 1) for b, s in zip(base, shape, strict=True)) for shape in shapes]


def choose_level(levels: list[Level], y_axis: int, x_axis: int, data_per_pixel: float) -> int:
    """The coarsest level whose pixels are not larger than a screen pixel.

    ``data_per_pixel`` is how many level-0 pixels fall on one screen pixel.
    """
    best = 0
    for i, level in enumerate(levels):
        factor = max(level.factors[y_axis], level.factors[x_axis])
        if factor <= data_per_pixel * 1.001 and factor >= max(
            levels[best].factors[y_axis], levels[best].factors[x_axis]
        ):
            best = i
    return best


def choose_stride(extent_y: float, extent_x: float, screen_h: int, screen_w: int) -> int:
    """Samples per screen pixel: the largest integer stride that keeps at least screen size."""
    ratio = max(extent_y / max(screen_h, 1), extent_x / max(screen_w, 1))
    return max(1, int(math.floor(ratio)))


def _axis_region(lo: float, hi: float, size: int, stride: int) -> tuple[int, int]:
    """Clip [lo, hi) to the array and snap the start to the stride grid."""
    lo_i = max(0, min(size - 1, int(math.floor(lo))))
    lo_i -= lo_i % stride
    hi_i = max(lo_i + 1, min(size, int(math.ceil(hi))))
    return lo_i, hi_i


def _touched(lo: int, hi: int, stride: int, chunk: int) -> np.ndarray:
    """Chunk indices along one axis that the samples lo, lo+stride, ... < hi fall in (sorted,
    so duplicates are neighbours: ``np.unique`` imported numpy.ma, 20 ms of a first frame)."""
    indices = np.arange(lo, hi, stride) // chunk
    if indices.size < 2:
        return indices
    return indices[np.concatenate(([True], indices[1:] != indices[:-1]))]


def _axis_pieces(lo: int, hi: int, stride: int, chunk: int, touched: np.ndarray, group: int):
    """Per run of ``group`` touched chunks along one axis: (chunk indices, sel, out slice)."""
    pieces = []
    for i in range(0, len(touched), group):
        run = [int(c) for c in touched[i : i + group]]
        start, stop = max(lo, run[0] * chunk), min(hi, (run[-1] + 1) * chunk)
        first = lo + (-(-(start - lo) // stride)) * stride
        if first >= stop:
            continue
        count = -(-(stop - first) // stride)
        out_start = (first - lo) // stride
        pieces.append(
            (
                run,
                slice(first, first + (count - 1) * stride + 1, stride),
                slice(out_start, out_start + count),
            )
        )
    return pieces


def _plane_region(shape, chunks, y_axis, x_axis, view_rect, stride):
    """The strided region read for ``view_rect`` (margin included) and the chunks it touches."""
    vy0, vy1, vx0, vx1 = view_rect
    my, mx = (vy1 - vy0) * MARGIN, (vx1 - vx0) * MARGIN
    y0, y1 = _axis_region(vy0 - my, vy1 + my, shape[y_axis], stride)
    x0, x1 = _axis_region(vx0 - mx, vx1 + mx, shape[x_axis], stride)
    touched_y = _touched(y0, y1, stride, chunks[y_axis])
    touched_x = _touched(x0, x1, stride, chunks[x_axis])
    return (y0, y1, x0, x1), touched_y, touched_x


def plan_plane(*, shape, chunks, y_axis, x_axis, indices, view_rect, screen, stride=None):
    """Tiles covering ``view_rect`` (y0, y1, x0, x1 in this level's coordinates) of one plane.

    Returns ``(geometry_in_level_coords, tiles)``; ``indices`` fixes the non-displayed axes.
    """
    vy0, vy1, vx0, vx1 = view_rect
    if stride is None:
        stride = choose_stride(vy1 - vy0, vx1 - vx0, *screen)
    (y0, y1, x0, x1), touched_y, touched_x = _plane_region(
        shape, chunks, y_axis, x_axis, view_rect, stride
    )
    ny, nx = -(-(y1 - y0) // stride), -(-(x1 - x0) // stride)
    cy, cx = chunks[y_axis], chunks[x_axis]
    group = max(1, math.ceil(math.sqrt(len(touched_y) * len(touched_x) / MAX_TILES)))
    rows = _axis_pieces(y0, y1, stride, cy, touched_y, group)
    cols = _axis_pieces(x0, x1, stride, cx, touched_x, group)
    centre = ((vy0 + vy1) / 2, (vx0 + vx1) / 2)
    across = _chunks_across(shape, chunks, indices, (y_axis, x_axis))
    raw = []
    for rchunks, rsel, rout in rows:
        for cchunks, csel, cout in cols:
            selection = list(indices)
            selection[y_axis], selection[x_axis] = rsel, csel
            mid_y = min(max(centre[0], rsel.start), rsel.stop)
            mid_x = min(max(centre[1], csel.start), csel.stop)
            distance = math.hypot(mid_y - centre[0], mid_x - centre[1])
            visible = rsel.stop > vy0 and rsel.start < vy1 and csel.stop > vx0 and csel.start < vx1
            coords = tuple((a, b) for a in rchunks for b in cchunks)
            raw.append((not visible, distance, coords, tuple(selection), rout, cout, visible))
    raw.sort(key=lambda t: (t[0], t[1]))
    tiles = tuple(
        Tile(
            chunk_coords=t[2],
            selection=t[3],
            out_rows=t[4],
            out_cols=t[5],
            priority=rank,
            visible=t[6],
            chunk_count=len(t[2]) * across,
        )
        for rank, t in enumerate(raw)
    )
    return Geometry(y0=y0, x0=x0, sy=stride, sx=stride, ny=ny, nx=nx), tiles


def _chunks_across(shape, chunks, indices, shown: tuple[int, int]) -> int:
    """Chunks a tile's selection touches along the axes not shown, per chunk of the plane:
    one for an integer index, those its slice touches for a slice (a composite's channels);
    0 (unknown: the engine counts them) for a slice that runs backwards."""
    count = 1
    for axis, index in enumerate(indices):
        if axis not in shown and isinstance(index, slice):
            start, stop, step = index.indices(shape[axis])
            count *= len(_touched(start, stop, step, chunks[axis])) if step > 0 else 0
    return count


def coarse_stride(*, shape, chunks, y_axis, x_axis, view_rect, screen) -> int | None:
    """The stride of a quick preview of a view that touches many chunks, or ``None``.

    A multiple of the screen-resolution stride (so every preview sample is also a final one and
    its chunk is decoded once for both passes), large enough that the samples fall in at most
    max(COARSE_MIN_CHUNKS, touched / COARSE_FRACTION) chunks: with a stride of k chunks, sample
    rows and columns fall in every k-th chunk row and column only.
    """
    vy0, vy1, vx0, vx1 = view_rect
    stride = choose_stride(vy1 - vy0, vx1 - vx0, *screen)
    _, ty, tx = _plane_region(shape, chunks, y_axis, x_axis, view_rect, stride)
    touched = len(ty) * len(tx)
    if touched <= COARSE_ABOVE:
        return None
    budget = max(COARSE_MIN_CHUNKS, touched // COARSE_FRACTION)
    k = math.sqrt(touched / budget)
    m = max(2, int(k * min(chunks[y_axis], chunks[x_axis]) / stride))
    while True:
        _, ty, tx = _plane_region(shape, chunks, y_axis, x_axis, view_rect, m * stride)
        if len(ty) * len(tx) <= budget:
            return m * stride
        m += max(1, m // 8)


def scale_geometry(geometry: Geometry, factor: tuple[float, float]) -> Geometry:
    """A level's geometry expressed in level-0 coordinates."""
    fy, fx = factor
    return Geometry(
        y0=int(round(geometry.y0 * fy)),
        x0=int(round(geometry.x0 * fx)),
        sy=geometry.sy * fy,
        sx=geometry.sx * fx,
        ny=geometry.ny,
        nx=geometry.nx,
    )


def coarse_index(fine: Geometry, coarse: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """For each row and each column of the fine buffer, the preview pixel that covers it."""
    ys = (fine.y0 + np.arange(fine.ny) * fine.sy - coarse.y0) // coarse.sy
    xs = (fine.x0 + np.arange(fine.nx) * fine.sx - coarse.x0) // coarse.sx
    return (
        np.clip(ys.astype(np.int64), 0, coarse.ny - 1),
        np.clip(xs.astype(np.int64), 0, coarse.nx - 1),
    )


def resample(old: np.ndarray, old_geometry: Geometry, new_geometry: Geometry, fill) -> np.ndarray:
    """``old`` resampled (nearest) onto ``new_geometry``: a placeholder while new data loads."""
    g = new_geometry
    ys = ((g.y0 + np.arange(g.ny) * g.sy) - old_geometry.y0) / old_geometry.sy
    xs = ((g.x0 + np.arange(g.nx) * g.sx) - old_geometry.x0) / old_geometry.sx
    yi, xi = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    out = np.full((g.ny, g.nx), fill, dtype=old.dtype)
    ok_y = (yi >= 0) & (yi < old.shape[0])
    ok_x = (xi >= 0) & (xi < old.shape[1])
    if ok_y.any() and ok_x.any():
        out[np.ix_(ok_y, ok_x)] = old[np.ix_(yi[ok_y], xi[ok_x])]
    return out


def neighbour_selections(tiles, slider_axis: int, index: int, size: int, distance: int = 1):
    """The visible tiles' selections on the planes next to ``index`` (for prefetching)."""
    out = []
    for step in range(1, distance + 1):
        for neighbour in (index + step, index - step):
            if not 0 <= neighbour < size:
                continue
            for tile in tiles:
                if tile.visible:
                    selection = list(tile.selection)
                    selection[slider_axis] = neighbour
                    out.append(
                        (neighbour, tuple(selection), PREFETCH_PRIORITY * step + tile.priority)
                    )
    return out
