"""What a series at a point reads from, found and read off the GUI thread.

``resolve`` finds the array's CF view and the coordinate variables of its dimensions (metadata
only); ``read_coordinates`` reads the x axis's coordinate over the series' steps (cached per
array and range) and the point's coordinate values along the other axes. Blocking: both run in
the window's background pool (``tasks.Background``). Plain Python: no Qt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import zarrfs.engine as engine

from . import series

logger = logging.getLogger(__name__)


@dataclass
class Source:
    """The array a series is read from and its coordinates (found in the background)."""

    array: object
    node_path: str
    state: object  # the image's ViewState of that array (identity: a new array, a new source)
    var: object  # engine.CFVariable, or None when its attributes say nothing usable
    dimensions: tuple[str, ...]
    coords: dict = field(default_factory=dict)  # dimension -> coordinate array
    coord_vars: dict = field(default_factory=dict)  # dimension -> CFVariable
    cache: dict = field(default_factory=dict)  # (dimension, start, stop) -> numbers


def resolve(array) -> tuple:
    """Worker: the array's CF view and the coordinate variables of its dimensions (metadata
    only). A coordinate that cannot be found, or is not as long as its axis, costs its labels,
    never the series."""
    try:
        var = engine.cf.variable(array)
    except Exception:  # noqa: BLE001 - a series needs no CF view
        logger.info("no CF view of /%s", array.path, exc_info=True)
        return None, tuple(f"dim_{k}" for k in range(array.ndim)), {}, {}
    try:
        coords = engine.cf.coordinate_arrays(array.parent, var.dimensions)
    except engine.ZarrfsError:
        logger.info("no coordinates for /%s", array.path, exc_info=True)
        coords = {}
    sizes = dict(zip(var.dimensions, array.shape, strict=True))
    coords = {dim: c for dim, c in coords.items() if tuple(c.shape) == (sizes[dim],)}
    coord_vars = {dim: engine.cf.variable(c) for dim, c in coords.items()}
    return var, var.dimensions, coords, coord_vars


def read_coordinates(source: Source, plan: series.SeriesPlan) -> tuple:
    """Worker: the x numbers along the series (None without a coordinate) and the point's
    coordinate values as text, one per other axis (None where there is no coordinate)."""
    dim = source.dimensions[plan.axis]
    key = (dim, plan.start, plan.stop)
    numbers = source.cache.get(key)
    if numbers is None and dim in source.coords:
        raw = source.coords[dim].read(slice(plan.start, plan.stop))
        numbers = engine.cf.decode(series.numbers_of(source.coord_vars[dim]), raw)
        source.cache[key] = numbers
    texts = []
    for axis, i in enumerate(plan.index):
        name = source.dimensions[axis]
        if axis == plan.axis or name not in source.coords:
            texts.append(None)
            continue
        value = engine.cf.decode(source.coord_vars[name], source.coords[name].read(slice(i, i + 1)))
        texts.append(series.coordinate_text(source.coord_vars[name], value[0]))
    return numbers, texts
