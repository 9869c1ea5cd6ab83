"""How the image view draws a CF variable: plain Python (STYLE rule 10), no Qt.

The engine's ``cf`` module says what the attributes mean (``engine.cf.variable``: packing,
masking, units, long_name); this module decides what the picture does with it:

- **values**: tiles are decoded as they land (``CFValues.to_display``), so the picture stays
  lazy and at screen resolution; "raw" draws the stored numbers instead. Either way a masked
  value (``_FillValue``, ``missing_value``, outside ``valid_range``) is NaN, which the image
  item draws transparent and the contrast leaves out.
- **axes**: the kind of each dimension's coordinate (``engine.cf.axis_kind``, CF 1.11
  section 4) as the way it points (north, east, time, vertical), and whether it
  increases with the index, from its first and last value (two elements read). A map whose
  rows run south to north is drawn north up; a plot whose axes are not both horizontal
  (time x longitude) gets a free aspect ratio.
- **text**: the colour bar's label ("air temperature [K]") and the cursor readout
  ("tas = 287.35 K").
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

import zarrfs.engine as engine

from . import transforms

logger = logging.getLogger(__name__)

NORTH, EAST, TIME, VERTICAL, OTHER = "north", "east", "time", "vertical", "other"

#: kinds whose plots keep a 1:1 aspect ratio (None: nothing is known, an ordinary image)
_HORIZONTAL = (NORTH, EAST, None)


@dataclass(frozen=True)
class CFAxis:
    """One dimension as the picture sees it."""

    kind: str | None = None  # NORTH, EAST, TIME, VERTICAL, OTHER (a coordinate of no known kind)
    ascending: bool | None = None  # a latitude's values increase with the index (None: unknown)


#: the engine's axis kinds (``engine.cf.axis_kind``) as the picture uses them: which way an
#: axis points on a map
_POINTS = {
    engine.cf.axes.LATITUDE: NORTH,
    engine.cf.axes.GRID_Y: NORTH,
    engine.cf.axes.LONGITUDE: EAST,
    engine.cf.axes.GRID_X: EAST,
    engine.cf.axes.TIME: TIME,
    engine.cf.axes.VERTICAL: VERTICAL,
    engine.cf.axes.OTHER: OTHER,
}


def axis_kind(name: str, coordinate: engine.CFVariable | None) -> str | None:
    """The kind of dimension ``name`` from its coordinate variable (CF 4), else its name."""
    return _POINTS.get(engine.cf.axis_kind(name, coordinate))


@dataclass(frozen=True)
class CFView:
    """The CF view of the array on screen: its variable and each dimension's axis."""

    variable: engine.CFVariable
    axes: tuple[CFAxis, ...]

    @property
    def decodes(self) -> bool:
        """Decoding changes the values: drawn decoded unless raw is asked for."""
        return self.variable.encoded

    @property
    def has_raw(self) -> bool:
        """The stored values differ from the decoded ones other than by NaN for NaN: packed,
        dates, or a fill that is a number (xarray's float32 with a NaN ``_FillValue`` has no
        other raw view)."""
        var = self.variable
        masking = var.masking
        numbers = masking is not None and (
            any(v == v for v in masking.fill_values)
            or masking.valid_min is not None
            or masking.valid_max is not None
        )
        return bool(var.packing or var.time or numbers)

    def north_up(self, y_axis: int) -> bool:
        """Rows run south to north: draw row 0 at the bottom (a map reads north up)."""
        axis = self.axes[y_axis] if y_axis < len(self.axes) else CFAxis()
        return axis.kind == NORTH and axis.ascending is True

    def lock_aspect(self, y_axis: int, x_axis: int) -> bool:
        """1:1 for maps and ordinary images; free when an axis is time, vertical or another
        coordinate (a time x longitude plot of 24 x 360 fills the view)."""
        kinds = [self.axes[a].kind if a < len(self.axes) else None for a in (y_axis, x_axis)]
        return all(kind in _HORIZONTAL for kind in kinds)

    def label(self, raw: bool = False) -> str:
        """The colour bar's label: long name (else standard name) and units, "" when the
        variable has neither (a plain array keeps an unlabelled bar)."""
        var = self.variable
        if not (var.long_name or var.standard_name or var.units):
            return ""
        name = var.long_name or (var.standard_name or var.name).replace("_", " ")
        if raw and var.packing is not None:
            return f"{name} (stored {var.stored_dtype})"
        return f"{name} [{var.units}]" if var.units and var.time is None else name


def plane_title(var: engine.CFVariable, state, found: dict) -> str:
    """The title over a plane of a CF variable: its long name (else standard name, else
    name) and units, then where each slider stands by its coordinate ("2000-01-13",
    "level 850 hPa"), else its index: "air temperature [K]  ·  2000-01-13  ·  level 850 hPa".
    "" for an array that says nothing CF (no long name, standard name or units)."""
    if not (var.long_name or var.standard_name or var.units) or state is None:
        return ""
    name = var.long_name or (var.standard_name or var.name).replace("_", " ")
    parts = [f"{name} [{var.units}]" if var.units and var.time is None else name]
    for axis in state.slider_axes:
        index, coordinate = state.indices[axis], found.get(axis)
        if coordinate is None or not 0 <= index < coordinate.size:
            parts.append(f"{state.axis_label(axis)} {index}")
        elif coordinate.kind == "time":
            parts.append(coordinate.label(index))
        else:
            parts.append(f"{coordinate.name} {coordinate.label(index)}")
    return "  ·  ".join(parts)


def describe(root, node) -> CFView | None:
    """The CF view of ``node`` (in the background: opens the coordinate variables beside it,
    one metadata request each where the store has no consolidated metadata, and reads the
    first and last value of a latitude). None for what is not a real numeric array of two or
    more dimensions."""
    if node.kind != "array" or node.ndim < 2 or np.dtype(node.dtype).kind not in "iuf":
        return None
    variable = engine.cf.variable(node)
    arrays = {}
    try:
        arrays = engine.cf.coordinate_arrays(_parent(root, node), variable.dimensions)
    except engine.ZarrfsError:  # no coordinates: the array is still drawn
        logger.debug("no coordinates for %s", node.path, exc_info=True)
    axes = tuple(_axis(dim, arrays.get(dim)) for dim in variable.dimensions)
    return CFView(variable, axes)


def _parent(root, node):
    if root is None or root.kind != "group" or not node.path:
        return None
    parent = node.path.rsplit("/", 1)[0] if "/" in node.path else ""
    return root[parent] if parent else root


def _axis(name: str, array) -> CFAxis:
    if array is None:
        return CFAxis(axis_kind(name, None))
    kind = axis_kind(name, engine.cf.variable(array))
    if kind != NORTH:  # only the rows' direction is used (north up): read nothing else
        return CFAxis(kind)
    try:
        ends = engine.cf.coordinate(array)
        ascending = bool(ends.last > ends.first) if ends.size > 1 else None
    except (engine.ZarrfsError, TypeError):
        logger.debug("cannot read the ends of %s", array.path, exc_info=True)
        ascending = None
    return CFAxis(kind, ascending)


@dataclass(frozen=True)
class CFValues:
    """What the plane's stored values become on screen: their CF decoding, or with ``raw``
    the stored numbers with only the missing ones masked. Dates are drawn as their stored
    numbers (the readout names the date)."""

    variable: engine.CFVariable
    raw: bool = False

    @cached_property
    def drawn(self) -> engine.CFVariable:
        """The variable whose decoding is drawn."""
        return replace(
            self.variable, time=None, packing=None if self.raw else self.variable.packing
        )

    def to_display(self, block: np.ndarray) -> np.ndarray:
        """A tile's stored values as the real numbers drawn (masked: NaN)."""
        return transforms.to_display(engine.cf.decode(self.drawn, block))

    def display_dtype(self) -> np.dtype:
        return self.to_display(np.zeros(1, self.variable.stored_dtype)).dtype

    def value_text(self, stored) -> str:
        """The readout of one stored value: ``"tas = 287.35 K"``, ``"tas = missing"`` for a
        masked one; with ``raw`` the stored number too."""
        var = self.variable
        stored = np.asarray(stored, dtype=var.stored_dtype).reshape(1)
        value = engine.cf.decode(var, stored)[0]
        if _is_missing(value):
            text = "missing" if _is_fill(var, stored[0]) else "missing (outside valid range)"
        elif var.time is not None:
            text = engine.cf.format_value(value)
        else:
            text = _format_number(var, value) + (f" {var.units}" if var.units else "")
        if self.raw:
            text += f" (stored {transforms.format_value(stored[0])})"
        return f"{var.name} = {text}"


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, np.datetime64):
        return bool(np.isnat(value))
    return isinstance(value, float | np.floating) and value != value


def _is_fill(var: engine.CFVariable, stored) -> bool:
    """A ``_FillValue``/``missing_value`` (or NaN), not a value outside the valid range."""
    values = var.masking.fill_values if var.masking is not None else ()
    if stored != stored:
        return True
    return any(v == stored for v in values)


def _format_number(var: engine.CFVariable, value) -> str:
    """Packed values with the decimals their packing gives (0.01 and 273.15: two), others as
    six significant digits."""
    packing = var.packing
    if packing is None:
        return transforms.format_value(value)
    decimals = max(_decimals(packing.scale_factor), _decimals(packing.add_offset))
    return f"{float(value):.{decimals}f}"


def _decimals(number: float | None) -> int:
    if number is None or not math.isfinite(number):
        return 0
    for decimals in range(10):
        if abs(round(number, decimals) - number) <= 1e-9 * max(1.0, abs(number)):
            return decimals
    return 10
