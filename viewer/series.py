"""What the series panel reads at a point, and how it labels it: pure, no Qt, no I/O.

A series is the values of one array along one axis (by default the CF time axis) with every
other axis fixed at a point. ``plan_series`` cuts the axis into chunk-aligned pieces whose chunks
decode to at most ``PIECE_BYTES`` (the engine decodes a whole chunk to take one value from it),
and caps the series at ``MAX_STEPS`` around the slider's position, with a note saying so. The
labels follow the CF conventions (``engine.cf``): the values' ``long_name [units]``, coordinate
values along the x axis, and for CF time the dates of any calendar (cftime for the
non-standard ones) on the ticks the image's axes use (``coordinate_ticks``), computed for the
ticks and the point under the cursor only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

import zarrfs.engine as engine

from . import coordinate_ticks, coordinates, transforms

#: steps read at most along the axis (the rest is left out, with a note)
MAX_STEPS = 1_000_000
#: decoded bytes of the chunks one piece of the series may touch
PIECE_BYTES = 64 << 20
#: dimension names taken for time when no coordinate says so (CF 4.4 is preferred)
TIME_NAMES = ("time", "t")


@dataclass(frozen=True)
class SeriesPlan:
    """Read ``start:stop`` along ``axis`` at ``index`` (its entry at ``axis`` is unused), in
    ``pieces`` (``(begin, end)`` pairs, chunk-aligned, in order)."""

    axis: int
    index: tuple[int, ...]
    start: int
    stop: int
    length: int  # the axis's length
    pieces: tuple[tuple[int, int], ...]

    def selection(self, begin: int, end: int) -> tuple:
        return tuple(slice(begin, end) if a == self.axis else i for a, i in enumerate(self.index))

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def note(self) -> str:
        if self.size == self.length:
            return ""
        return (
            f"steps {self.start:,}–{self.stop - 1:,} of {self.length:,} "
            f"(at most {self.size:,} are read)"
        )


def plan_series(
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    itemsize: int,
    axis: int,
    index: tuple[int, ...],
    max_steps: int | None = None,
    piece_bytes: int | None = None,
) -> SeriesPlan:
    """The pieces of the series along ``axis`` through ``index`` (centred on ``index[axis]``
    when the axis is longer than ``max_steps``, default ``MAX_STEPS``; pieces of
    ``piece_bytes``, default ``PIECE_BYTES``)."""
    max_steps = MAX_STEPS if max_steps is None else max_steps
    piece_bytes = PIECE_BYTES if piece_bytes is None else piece_bytes
    length = shape[axis]
    size = min(length, max_steps)
    start = min(max(0, index[axis] - size // 2), length - size)
    stop = start + size
    chunk_len = max(1, chunks[axis] if chunks else length)
    chunk_bytes = max(1, math.prod(chunks or shape) * max(1, itemsize))
    step = max(1, piece_bytes // chunk_bytes) * chunk_len
    first = start - start % step
    pieces = tuple(
        (max(begin, start), min(begin + step, stop)) for begin in range(first, stop, step)
    )
    return SeriesPlan(axis, tuple(index), start, stop, length, pieces)


def default_axis(
    slider_axes: list[int], dimension_names: tuple[str, ...], time_axes: set[int]
) -> int | None:
    """The axis a series runs along unless the user picks one: one whose coordinate is a CF
    time (``time_axes``), else one named like time, else the first slider axis."""
    for test in (
        lambda a: a in time_axes,
        lambda a: dimension_names[a].lower() in TIME_NAMES,
    ):
        found = [a for a in slider_axes if test(a)]
        if found:
            return found[0]
    return slider_axes[0] if slider_axes else None


def value_label(name: str, var) -> str:
    """``long_name [units]`` (the array's name when it has no long name)."""
    text = (var.long_name if var is not None else None) or name
    units = var.units if var is not None else None
    return f"{text} [{units}]" if units else text


def axis_label(dim: str, coord_var) -> str:
    """The x axis: the dimension, with the units of its coordinate (none for dates)."""
    if coord_var is None:
        return f"{dim} (index)"
    if coord_var.time is not None:
        return f"{dim} ({coord_var.time.calendar} calendar)"
    if coordinates.kind_of(coord_var) != "number" or not coordinates.shown_units(coord_var.units):
        return dim  # the ticks say "30°N"
    return f"{dim} [{coord_var.units}]"


def numbers_of(coord_var) -> object:
    """The coordinate's CF view as numbers: unpacked and masked, but times left as numbers of
    their unit (the x positions; dates are made for the labels only)."""
    return dataclasses.replace(coord_var, time=None)


def x_positions(numbers: np.ndarray | None) -> np.ndarray | None:
    """Coordinate values usable as x positions: finite and strictly monotonic (else None,
    and the plot counts steps)."""
    if numbers is None or numbers.dtype.kind not in "iuf" or numbers.size == 0:
        return None
    x = numbers.astype(np.float64)
    if not np.isfinite(x).all():
        return None
    if x.size > 1:
        d = np.diff(x)
        if not ((d > 0).all() or (d < 0).all()):
            return None
    return x


def time_texts(coord_var, values) -> list[str]:
    """Dates (as ``engine.cf.format_value`` writes them) at positions ``values``, numbers of
    the coordinate's time unit: tick labels and the readout of a CF time axis."""
    dates_var = dataclasses.replace(
        coord_var, stored_dtype=np.dtype(np.float64), packing=None, masking=None
    )
    numbers = np.asarray(values, dtype=np.float64)
    try:
        dates = engine.cf.decode(dates_var, numbers)
    except (OverflowError, ValueError):  # outside what the calendar can hold
        return [f"{v:g}" for v in numbers]
    return [engine.cf.format_value(d) for d in dates]


def tick_pairs(coord_var, low: float, high: float, count: int) -> list[tuple[float, str]]:
    """About ``count`` ticks at round coordinate values between the x positions ``low`` and
    ``high`` (coordinate numbers): ``[(number, text)]``, as the image's axes have them
    (``coordinate_ticks``: dates on midnights and month or year starts of the variable's
    calendar, degrees with a hemisphere, round numbers)."""
    if coord_var.time is not None:
        return coordinate_ticks.time_ticks(coord_var.time, low, high, count)
    return coordinate_ticks.number_ticks(coordinates.kind_of(coord_var), low, high, count)


def number_text(value: float) -> str:
    return "NaN" if value != value else f"{value:.6g}"


def coordinate_text(coord_var, value) -> str:
    """A decoded coordinate value as the image's readout writes it: "2000-01-05", "45.5°N",
    "850 hPa"."""
    if coord_var.time is not None:
        return engine.cf.format_value(value)
    return coordinates.value_text(coordinates.kind_of(coord_var), value, coord_var.units)


def decoded_values(var, raw: np.ndarray, field_name=None, complex_mode="magnitude"):
    """The values a series plots, float64: CF-decoded (masked values NaN) for a packed or
    masked numeric variable, else the numbers the image shows for its type."""
    if var is not None and var.encoded and var.time is None and raw.dtype.kind in "iuf":
        return np.asarray(engine.cf.decode(var, raw), dtype=np.float64)
    shown = transforms.to_display(raw, field_name=field_name, complex_mode=complex_mode)
    return np.asarray(shown, dtype=np.float64)
