"""What the series panel reads at a point, and how it labels it: pure, no Qt, no I/O.

A series is the values of one array along one axis (by default the CF time axis) with every
other axis fixed at a point. ``plan_series`` cuts the axis into chunk-aligned pieces whose chunks
decode to at most ``PIECE_BYTES`` (the engine decodes a whole chunk to take one value from it),
and caps the series at ``MAX_STEPS`` around the slider's position, with a note saying so. The
labels follow the CF conventions (``engine.cf``): the values' ``long_name [units]``, coordinate
values along the x axis, and for CF time the dates of any calendar (cftime for the
non-standard ones), computed from the tick positions, so that no date is made for points that
are never labelled.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

import zarrfs.engine as engine

from . import transforms

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
    return f"{dim} [{coord_var.units}]" if coord_var.units else dim


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


_UNIT_SECONDS = {"D": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
_DAY_STEPS = (1, 2, 5, 10, 15)
_MONTH_STEPS = (1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1200, 2400, 6000, 12000)


def time_ticks(time, low: float, high: float, most: int = 8) -> list[float] | None:
    """Tick positions (numbers of the time unit) between ``low`` and ``high`` that fall on
    midnights (every 1, 2, 5, 10 or 15 days) or on first days of months and years (of the
    variable's calendar: a 360_day month is 30 days, a noleap year 365); None for less than
    two days, or dates the calendar cannot hold: the plot's own ticks then."""
    per_day = 86400.0 / _UNIT_SECONDS[time.unit]
    days = (high - low) / per_day
    if not (math.isfinite(days) and days >= 2):
        return None
    try:
        import cftime  # the calendars numpy cannot hold (engine.cf decodes with it too)

        for step in _DAY_STEPS:
            if days / step <= most:
                ref = cftime.num2date(0, time.units, calendar=time.calendar)
                phase = -(ref.hour * 3600 + ref.minute * 60 + ref.second) / _UNIT_SECONDS[time.unit]
                first = math.ceil((low - phase) / (step * per_day))
                count = int((high - phase) // (step * per_day)) - first + 1
                return [phase + (first + k) * step * per_day for k in range(max(count, 0))]
        step = next((s for s in _MONTH_STEPS if days / 30.4 / s <= most), None)
        return None if step is None else _month_ticks(cftime, time, low, high, step, most)
    except (ValueError, OverflowError):
        return None


def _month_ticks(cftime, time, low: float, high: float, step: int, most: int) -> list[float]:
    """First days of every ``step``-th month (months counted from year 0, so that yearly
    ticks fall on January and half-yearly ones on January and July)."""
    start = cftime.num2date(low, time.units, calendar=time.calendar)
    month = -(-(start.year * 12 + start.month - 1) // step) * step
    ticks: list[float] = []
    for _ in range(2 * most + 2):
        year, m = divmod(month, 12)
        date = cftime.datetime(year, m + 1, 1, calendar=time.calendar)
        number = float(cftime.date2num(date, time.units, calendar=time.calendar))
        if number > high:
            break
        if number >= low:
            ticks.append(number)
        month += step
    return ticks


def number_text(value: float) -> str:
    return "NaN" if value != value else f"{value:.6g}"


def coordinate_text(value) -> str:
    """A decoded coordinate value for the eye: dates as ``engine.cf.format_value`` writes them,
    numbers to 6 significant digits ("-78.9706")."""
    if isinstance(value, (float, np.floating)):
        return number_text(float(value))
    return engine.cf.format_value(value)


def decoded_values(var, raw: np.ndarray, field_name=None, complex_mode="magnitude"):
    """The values a series plots, float64: CF-decoded (masked values NaN) for a packed or
    masked numeric variable, else the numbers the image shows for its type."""
    if var is not None and var.encoded and var.time is None and raw.dtype.kind in "iuf":
        return np.asarray(engine.cf.decode(var, raw), dtype=np.float64)
    shown = transforms.to_display(raw, field_name=field_name, complex_mode=complex_mode)
    return np.asarray(shown, dtype=np.float64)
