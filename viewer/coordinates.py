"""Coordinate values along the axes of the array on screen, as the viewer shows them.

The engine's CF module (``engine.cf``) names the coordinate variables of an array's dimensions
(CF 5: a 1-D array named like its dimension) and decodes them (CF 4.4 times to dates). This
module reads each one whole, once, off the GUI thread (:func:`load`), and renders its values
as Panoply does: latitudes and longitudes in degrees with a hemisphere ("45.5°N", "10.25°E",
CF 4.1/4.2 units), times as dates ("2000-01-05"), anything else as its value and units
("850 hPa"). Element ``i`` of an axis is drawn over ``[i, i + 1)``: its coordinate sits at
``i + 0.5``, and positions between two elements interpolate their coordinates.

Plain Python (STYLE rule 10): no Qt.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from dataclasses import dataclass

import numpy as np

import zarrfs.engine as engine

logger = logging.getLogger(__name__)

#: longest coordinate read (elements); a longer axis keeps index ticks and index readouts
MAX_ELEMENTS = 1 << 18

_DATE = re.compile(r"^(-?\d{1,4})-(\d{1,2})(?:-(\d{1,2}))?(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
_DEGREES = re.compile(r"^([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*°?\s*([NSEWnsew]?)$")
_SPIN_SUFFIX = re.compile(r"\s*\(\d+ / \d+\)\s*$")


@dataclass(frozen=True, eq=False)
class AxisCoordinate:
    """The coordinate variable of one axis: its decoded ``values`` (dates for a time) and the
    ``numbers`` that positions interpolate (for a time, counted in its units since the
    reference date, as stored)."""

    name: str
    kind: str  # "time" | "latitude" | "longitude" | "number"
    units: str | None
    numbers: np.ndarray  # float64
    values: np.ndarray  # decoded: float, datetime64 or cftime objects
    time: engine.TimeUnits | None = None
    auxiliary: bool = False  # an auxiliary coordinate's values along one line (ticks only)

    @property
    def size(self) -> int:
        return int(self.numbers.size)

    @functools.cached_property
    def order(self) -> int:
        """1: increasing, -1: decreasing, 0: neither (or holds NaN): ticks fall on elements."""
        steps = np.diff(self.numbers)
        if self.size < 2 or not np.all(np.isfinite(self.numbers)):
            return 0
        return 1 if np.all(steps > 0) else -1 if np.all(steps < 0) else 0

    def title(self) -> str:
        """The axis title: its name, and its units where the ticks do not carry them."""
        if self.kind == "number" and shown_units(self.units):
            return f"{self.name} ({self.units})"
        return self.name

    def label(self, index: int) -> str:
        """Element ``index``'s coordinate: "2000-01-05", "45.5°N", "850 hPa"."""
        value = self.values[index]
        if self.kind == "time":
            return engine.cf.format_value(value)
        return value_text(self.kind, value, self.units)

    @functools.cached_property
    def _increasing(self) -> tuple[np.ndarray, np.ndarray]:
        """The numbers in increasing order, and the element index of each (for ``np.interp``)."""
        index = np.arange(self.size, dtype=np.float64)
        return (self.numbers[::-1], index[::-1]) if self.order < 0 else (self.numbers, index)

    def position(self, number: float) -> float:
        """The view position (fractional index + 0.5) of coordinate ``number`` (monotonic)."""
        numbers, index = self._increasing
        return float(np.interp(number, numbers, index)) + 0.5

    def number_at(self, position: float) -> float:
        """The coordinate at view ``position``, interpolated between elements."""
        index = min(max(position - 0.5, 0.0), self.size - 1.0)
        low = min(int(index), self.size - 1)
        high = min(low + 1, self.size - 1)
        fraction = index - low
        if fraction == 0:
            return float(self.numbers[low])
        return float(self.numbers[low] * (1 - fraction) + self.numbers[high] * fraction)

    def index_of(self, text: str) -> int | None:
        """The element a typed coordinate names (the nearest), or None when ``text`` is none:
        a date for a time ("2000-01-05", "2000-01-05 06:00"), a value for the others ("850",
        "45.5N", "10°W"), within the axis's range."""
        number = self._parse(text.strip())
        if number is None or not np.isfinite(number):
            return None
        finite = self.numbers[np.isfinite(self.numbers)]
        if finite.size == 0:
            return None
        margin = (finite.max() - finite.min()) / max(self.size - 1, 1)
        if self.kind != "time" and not finite.min() - margin <= number <= finite.max() + margin:
            return None
        with np.errstate(invalid="ignore"):
            return int(np.nanargmin(np.abs(self.numbers - number)))

    def _parse(self, text: str) -> float | None:
        if self.kind == "time":
            return date_number(text, self.time)
        match = _DEGREES.match(text.removesuffix(self.units or "\0").strip())
        if match is None:
            return None
        number, hemisphere = float(match.group(1)), match.group(2).upper()
        if hemisphere and hemisphere not in ({"N", "S"} if self.kind == "latitude" else {"E", "W"}):
            return None
        if hemisphere in ("S", "W"):
            number = -number
        if self.kind == "longitude" and number < 0 and np.nanmin(self.numbers) >= 0:
            number += 360.0  # "90W" on an axis of 0..360
        return number


@dataclass(frozen=True)
class StepNames:
    """Names of the steps of an axis without a coordinate variable (an OME-Zarr channel axis:
    each channel's label), shown and taken by its spin box as coordinates are."""

    names: tuple[str, ...]
    kind: str = "name"

    @property
    def size(self) -> int:
        return len(self.names)

    def label(self, index: int) -> str:
        return self.names[index]

    def index_of(self, text: str) -> int | None:
        folded = [name.casefold() for name in self.names]
        return folded.index(text.casefold()) if text.casefold() in folded else None


@dataclass(frozen=True)
class StepLengths:
    """Physical positions of the steps of an OME-Zarr axis ("4 µm" for z=2 of 2 µm steps).
    A typed length needs its unit ("6 µm", "6um"); a plain number stays an index."""

    scale: float
    translation: float
    unit: str
    size: int
    kind: str = "length"

    def label(self, index: int) -> str:
        return f"{self.translation + index * self.scale:.4g} {self.unit}"

    def index_of(self, text: str) -> int | None:
        units = (self.unit, self.unit.replace("µ", "u"))
        number = next((text[: -len(u)] for u in units if text.endswith(u)), None)
        try:
            value = float(number) if number is not None else None
        except ValueError:
            return None
        if value is None or not self.scale:
            return None
        index = round((value - self.translation) / self.scale)
        return index if 0 <= index < self.size else None


def step_labels(channels, physical, shape: tuple[int, ...]) -> dict:
    """``{axis: StepNames | StepLengths}`` of an OME-Zarr image on screen: channel names on
    its channel axis (``channels``: a ``ChannelState``), lengths where ``physical`` (a
    ``PhysicalAxes``) gives a scale and a unit."""
    out: dict = {}
    if physical is not None:
        for axis, size in enumerate(shape):
            described = physical.describe(axis, 0)
            unit = described.partition(" ")[2] if described else ""
            if unit and physical.scale[axis]:
                scale, start = physical.scale[axis], physical.translation[axis]
                out[axis] = StepLengths(scale, start, unit, size)
    if channels is not None:
        out[channels.axis] = StepNames(tuple(c.label for c in channels.channels))
    return out


def shown_units(units: str | None) -> bool:
    """Units worth printing beside a value (not CF's dimensionless "1")."""
    return bool(units) and units not in ("1", "none", "unitless")


def kind_of(var) -> str:
    """What a coordinate is by its attributes alone (``engine.cf.axis_kind``: CF 4.1, 4.2,
    4.4): "time", "latitude" or "longitude" (geographic degrees, labelled with a hemisphere),
    else "number"."""
    kind = engine.cf.axis_kind("", var)
    return kind if kind in ("time", "latitude", "longitude") else "number"


def number_text(value) -> str:
    """``value`` in at most 7 significant digits, and no more than its own precision holds (a
    float32 0.1 is "0.1", not "0.10000000149011612"; 78.97058823529412 is "78.97059")."""
    if isinstance(value, (float, np.floating)):
        value = value if isinstance(value, np.floating) else np.float64(value)
        if not np.isfinite(value):
            return engine.cf.format_value(value)
        if value != 0 and not 1e-4 <= abs(value) < 1e15:
            return np.format_float_scientific(value, precision=6, trim="-")
        return np.format_float_positional(value, precision=7, fractional=False, trim="-")
    return engine.cf.format_value(value)


def degrees_text(kind: str, value, decimals: int | None = None) -> str:
    """A latitude or longitude with its hemisphere: "45.5°N", "10°W", "0°", "180°" (a
    longitude of 0..360 as -180..180); ``decimals``: rounded so (a tick), else exact."""
    finite = bool(np.isfinite(value))
    if kind == "longitude" and finite and not -180 < value <= 180:
        value = -((180 - value) % 360 - 180)  # into (-180, 180], keeping its type
    magnitude = number_text(abs(value)) if decimals is None else f"{abs(value):.{decimals}f}"
    if not finite or value == 0 or (kind == "longitude" and value == 180):
        return f"{magnitude}°"
    hemisphere = ("N", "S") if kind == "latitude" else ("E", "W")
    return f"{magnitude}°{hemisphere[0] if value > 0 else hemisphere[1]}"


def value_text(kind: str, value, units: str | None) -> str:
    """A coordinate value (not a time) as the readout and the spin boxes show it."""
    if kind in ("latitude", "longitude"):
        return degrees_text(kind, value)
    text = number_text(value)
    return f"{text} {units}" if shown_units(units) else text


def date_number(text: str, time) -> float | None:
    """A typed date as a number in ``time``'s units and calendar (None if not a date). A
    year alone is no date here: a spin box reads "4" as an index."""
    if time is None or _DATE.match(text) is None:
        return None
    return engine.date_number(text, time)


def spin_text(text: str) -> str:
    """What the user typed in a spin box, without the "(index / last)" it shows."""
    return _SPIN_SUFFIX.sub("", text).strip()


def read(array) -> AxisCoordinate | None:
    """The coordinate variable ``array`` read whole (blocking: call it off the GUI thread);
    None when it holds no numbers or is longer than ``MAX_ELEMENTS``."""
    var = engine.cf.variable(array)
    if array.ndim != 1 or array.shape[0] > MAX_ELEMENTS or var.stored_dtype.kind not in "iuf":
        return None
    stored = array.read()
    numbers = engine.cf.decode(dataclasses.replace(var, time=None), stored)
    values = engine.cf.decode(var, stored) if var.time is not None else numbers
    return AxisCoordinate(
        name=array.name,
        kind=kind_of(var),
        units=var.units,
        numbers=np.asarray(numbers, dtype=np.float64),
        values=values,
        time=var.time,
    )


def load(node, dimension_names) -> dict[int, AxisCoordinate]:
    """``{axis: coordinate}`` for each axis of ``node`` that has a coordinate variable beside
    it, as long as the axis (blocking: metadata and the coordinates' values are read)."""
    group = node.parent
    found: dict[int, AxisCoordinate] = {}
    arrays = engine.cf.coordinate_arrays(group, dimension_names) if group is not None else {}
    for axis, name in enumerate(dimension_names):
        array = arrays.get(name)
        if array is None or array.path == node.path or array.shape[0] != node.shape[axis]:
            continue
        try:
            coordinate = read(array)
        except engine.ZarrfsError:  # a coordinate that cannot be read only loses its labels
            logger.warning("cannot read the coordinate %s", array.path, exc_info=True)
            continue
        if coordinate is not None:
            found[axis] = coordinate
    return found


@dataclass(frozen=True, eq=False)
class Auxiliary:
    """An auxiliary latitude or longitude (CF 5, the ``coordinates`` attribute: a curvilinear
    grid's 2-D ``lat(y, x)``): its decoded ``values`` over ``axes`` of the array."""

    name: str
    kind: str  # "latitude" | "longitude"
    units: str | None
    axes: tuple[int, ...]
    values: np.ndarray  # float64, one axis per entry of ``axes``

    def label_at(self, index) -> str | None:
        """ "lat 45.5°N" at element ``index`` of the array (None: outside)."""
        at = tuple(int(index[a]) for a in self.axes)
        if not all(0 <= i < n for i, n in zip(at, self.values.shape, strict=True)):
            return None
        return f"{self.name} {value_text(self.kind, self.values[at], self.units)}"

    def along(self, axis: int, index) -> AxisCoordinate:
        """Its values along ``axis`` through element ``index`` (the other axes held there),
        as a coordinate to tick that axis with."""
        line = tuple(
            slice(None) if a == axis else min(int(index[a]), n - 1)
            for a, n in zip(self.axes, self.values.shape, strict=True)
        )
        numbers = np.asarray(self.values[line], dtype=np.float64)
        return AxisCoordinate(self.name, self.kind, self.units, numbers, numbers, auxiliary=True)


#: the largest auxiliary coordinate read (elements: 32 MiB of float64)
MAX_AUXILIARY = 1 << 22


def load_auxiliary(node, dimension_names) -> list[Auxiliary]:
    """The auxiliary latitudes and longitudes ``node``'s ``coordinates`` attribute names, read
    whole (blocking: call it off the GUI thread); one that cannot be read is left out."""
    found = []
    names = tuple(dimension_names)
    for array in engine.cf.auxiliary_arrays(node.parent, node).values():
        try:
            var = engine.cf.variable(array)
            kind = kind_of(var)
            if kind not in ("latitude", "longitude") or array.size > MAX_AUXILIARY:
                continue
            values = engine.cf.decode(var, array.read())
        except engine.ZarrfsError:
            logger.warning("cannot read the coordinate %s", array.path, exc_info=True)
            continue
        axes = tuple(names.index(d) for d in array.dimension_names)
        found.append(
            Auxiliary(array.name, kind, var.units, axes, np.asarray(values, dtype=np.float64))
        )
    return found


def place(texts: dict[int, str], found: dict[int, AxisCoordinate], names) -> dict[int, int | str]:
    """``--index`` texts (``{axis: "2000-03-01"}``) as the nearest elements of each axis's
    coordinate; an axis whose coordinate does not read the text gets why, as a string."""
    out: dict[int, int | str] = {}
    for axis, text in texts.items():
        coordinate = found.get(axis)
        index = coordinate.index_of(text) if coordinate is not None else None
        if index is not None:
            out[axis] = index
        elif coordinate is None:
            out[axis] = f"--index {text!r}: axis '{names[axis]}' has no coordinate values"
        else:
            span = f"{coordinate.label(0)} .. {coordinate.label(coordinate.size - 1)}"
            out[axis] = f"--index {text!r} is not a value of axis '{names[axis]}' ({span})"
    return out


def readout(coordinates: dict[int, AxisCoordinate], index, auxiliary=()) -> str:
    """The coordinates of element ``index``: "time 2000-01-05, lat 45.5°N, lon 10.25°E";
    ``auxiliary``: ``Auxiliary`` latitudes and longitudes, read at the element too."""
    texts = [
        f"{coordinates[a].name} {coordinates[a].label(i)}"
        for a, i in enumerate(index)
        if a in coordinates and not coordinates[a].auxiliary and 0 <= i < coordinates[a].size
    ]
    texts += [text for aux in auxiliary if (text := aux.label_at(index)) is not None]
    return ", ".join(texts)
