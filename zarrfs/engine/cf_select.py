"""Selections by coordinate value (``zarrfs get --sel time=2000-03-01 --sel lat=10:20``), as
xarray's ``Dataset.sel`` reads them: a value picks the nearest element (``method="nearest"``)
and drops its dimension; ``a:b`` keeps the elements whose coordinate lies between ``a`` and
``b``, both included (either may be left out), in stored order. Dates are read in the time
coordinate's own calendar (CF 4.4), and a date given to the day, month or year as an upper
bound keeps that whole day, month or year, as xarray's partial date strings do.

The coordinate of a dimension is its CF coordinate variable (CF 5: a 1-D array named like the
dimension, beside the array); it is read whole, once.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta

import numpy as np

from .cf import coordinate_arrays, decode, variable
from .errors import SelectionError

_DATE = re.compile(
    r"^(-?\d{1,4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ](\d{1,2})(?::(\d{2})(?::(\d{2}))?)?)?)?)?$"
)


def parse_sel(text: str) -> tuple[str, str]:
    """``"lat=10:20"`` -> ``("lat", "10:20")``; ValueError when there is no ``=``."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise ValueError(f"--sel {text!r}: use DIMENSION=VALUE or DIMENSION=FROM:TO")
    return name.strip(), value.strip()


def select(array, group, wanted: dict[str, str]) -> dict[int, int | slice]:
    """``{axis: index or slice}`` of ``array`` for ``{dimension: "value" or "from:to"}``,
    by the coordinate variables of ``group``. Raises ``SelectionError`` naming the dimension
    for one the array lacks, one with no coordinate, and a value that does not read."""
    dims = variable(array).dimensions
    unknown = [name for name in wanted if name not in dims]
    if unknown:
        raise SelectionError(
            f"--sel {unknown[0]}: {array.name or 'the array'} has no such dimension "
            f"(its dimensions: {', '.join(dims)})"
        )
    found = coordinate_arrays(group, list(wanted))
    out: dict[int, int | slice] = {}
    for name, text in wanted.items():
        coord = found.get(name)
        if coord is None or coord.shape[0] != array.shape[dims.index(name)]:
            raise SelectionError(
                f"--sel {name}: no coordinate variable '{name}' beside the array; "
                "select it by index instead"
            )
        out[dims.index(name)] = _along(coord, name, text)
    return out


def _along(coord, name: str, text: str) -> int | slice:
    var = variable(coord)
    numbers = np.asarray(
        decode(dataclasses.replace(var, time=None), coord.read()), dtype=np.float64
    )

    def number(part: str, upper: bool) -> float:
        value = _number(part, var.time, upper)
        if value is None:
            kind = "a date (2000-03-01)" if var.time is not None else "a number"
            raise SelectionError(f"--sel {name}={text}: {part!r} is not {kind}")
        return value

    if ":" not in text or (var.time is not None and _DATE.match(text)):
        target = number(text, upper=False)
        with np.errstate(invalid="ignore"):
            distance = np.abs(numbers - target)
        if not np.isfinite(distance).any():
            raise SelectionError(f"--sel {name}: the coordinate holds no values")
        return int(np.nanargmin(distance))
    start, _, stop = text.partition(":")
    low = number(start, upper=False) if start.strip() else -np.inf
    high = number(stop, upper=True) if stop.strip() else np.inf
    low, high = min(low, high), max(low, high)
    inside = (numbers >= low) & (numbers < high if var.time is not None else numbers <= high)
    kept = np.flatnonzero(inside)
    if kept.size == 0:
        return slice(0, 0)
    if kept[-1] - kept[0] + 1 != kept.size:
        raise SelectionError(
            f"--sel {name}={text}: the coordinate is not monotonic, so a range is no slice"
        )
    return slice(int(kept[0]), int(kept[-1]) + 1)


def _number(text: str, time, upper: bool) -> float | None:
    """``text`` as a number of the coordinate: in ``time``'s units since its reference date
    for a date (an upper bound: the end of the day, month or year it names, excluded)."""
    text = text.strip()
    if time is None:
        try:
            return float(text)
        except ValueError:
            return None
    return date_number(text, time, upper)


def date_number(text: str, time, upper: bool = False) -> float | None:
    """A typed date ("2000-03-01", "2000-03", "2000-03-01T06:00") as a number in ``time``'s
    units and calendar (None if not a date of that calendar); ``upper``: the end of the
    period it names instead of its start."""
    match = _DATE.match(text.strip())
    if match is None:
        return None
    import cftime  # the calendar arithmetic of every CF calendar

    parts = [int(g) if g is not None else None for g in match.groups()]
    given = max(k for k, v in enumerate(parts) if v is not None)
    fields = [parts[0], parts[1] or 1, parts[2] or 1, *(v or 0 for v in parts[3:])]
    try:
        date = cftime.datetime(*fields, calendar=time.calendar)
        if upper:
            date = _next(date, given, cftime)
        return float(cftime.date2num(date, time.units, calendar=time.calendar))
    except ValueError:  # no such date in this calendar (2001-02-30 outside 360_day)
        return None


def _next(date, given: int, cftime):
    """The start of the period after the one ``date`` names to field ``given`` (0: year ..
    5: second)."""
    if given == 0:
        return date.replace(year=date.year + 1)
    if given == 1:
        year, month = divmod(date.month, 12)
        return date.replace(year=date.year + year, month=month + 1)
    steps = {2: {"days": 1}, 3: {"hours": 1}, 4: {"minutes": 1}, 5: {"seconds": 1}}
    return date + timedelta(**steps[given])
