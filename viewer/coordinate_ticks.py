"""Ticks at round coordinate values: where they fall on an axis of elements, and their text.

An axis of the image is counted in elements (element ``i`` over ``[i, i + 1)``); its coordinate
(``coordinates.AxisCoordinate``) maps each element's centre to a value. Ticks are chosen in
coordinate space, a 1, 2 or 5 times a power of ten apart (degrees also 15, 30, 45, 90; times a
whole number of seconds, hours or days, of months or of years, by the variable's own calendar),
then placed back on the element axis by interpolation, so a decreasing coordinate or a flipped
view needs nothing of its own. A coordinate that is not monotonic gets ticks on round element
numbers, labelled with their values.

Plain Python: no Qt.
"""

from __future__ import annotations

import math
import re

from .coordinates import AxisCoordinate, degrees_text

#: seconds in a unit of CF time (``TimeUnits.unit``)
_SECONDS = {"D": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
#: tick steps shorter than a month, in seconds
_FIXED = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
_FIXED += (86_400, 2 * 86_400, 5 * 86_400, 10 * 86_400)
_MONTHS = (1, 2, 3, 6)
_DEGREE_STEPS = (1, 2, 5, 10, 15, 30, 45, 90)
#: the fewest ticks a degree axis asks for across its span
MIN_DEGREE_TICKS = 4
_TIME_OF_DAY = re.compile(r"T(\d+):(\d+):(\d+(?:\.\d*)?)")


def ticks(coordinate: AxisCoordinate, low: float, high: float, count: int) -> list:
    """About ``count`` ticks (at most ``2 * count``) between view positions ``low`` and
    ``high``: ``[(position, text)]``."""
    low, high = sorted((low, high))
    first, last = max(low - 0.5, 0.0), min(high - 0.5, coordinate.size - 1.0)
    if first > last:
        return []
    if coordinate.order == 0:
        return _element_ticks(coordinate, first, last, count)
    a, b = sorted((coordinate.number_at(first + 0.5), coordinate.number_at(last + 0.5)))
    if not b > a:
        index = round(first)
        return [(index + 0.5, coordinate.label(index))]
    if coordinate.kind == "time":
        pairs = time_ticks(coordinate.time, a, b, count)
    else:
        pairs = number_ticks(coordinate.kind, a, b, count)
    return [(coordinate.position(number), text) for number, text in pairs]


def _nice(raw: float, multiples=(1, 2, 5, 10)) -> float:
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in multiples if m * power >= raw * (1 - 1e-9))


def number_ticks(kind: str, a: float, b: float, count: int) -> list[tuple[float, str]]:
    """Round values in ``a..b``: "30°N" for latitudes and longitudes, "850" else.

    Degrees step by 1, 2, 5, 10, 15, 30, 45 or 90 (a decimal step below a degree) and come at
    least ``MIN_DEGREE_TICKS`` to the span, so a whole map of 0..360 reads 0°, 90°E, 180°, 90°W
    even on a narrow axis, never 0° and 160°W."""
    degrees = kind in ("latitude", "longitude")
    raw = (b - a) / max(count, MIN_DEGREE_TICKS if degrees else 1)
    if degrees and raw >= 1:
        step = float(next((s for s in _DEGREE_STEPS if s >= raw), 0) or _nice(raw))
    else:
        step = _nice(raw)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    found = []
    for k in range(math.ceil(a / step - 1e-9), math.floor(b / step + 1e-9) + 1):
        value = round(k * step, decimals)
        if kind in ("latitude", "longitude"):
            found.append((value, degrees_text(kind, value, decimals)))
        else:
            found.append((value, f"{value + 0.0:.{decimals}f}"))  # + 0.0: no "-0"
    return found


def time_ticks(time, a: float, b: float, count: int) -> list[tuple[float, str]]:
    """Round dates between the times ``a`` and ``b`` (numbers in ``time``'s units): whole
    seconds, minutes, hours or days from midnight, else month or year starts."""
    per = _SECONDS[time.unit]
    raw = (b - a) * per / max(count, 1)
    try:
        if raw <= _FIXED[-1]:
            return _fixed_ticks(time, a, b, next(s for s in _FIXED if s >= raw))
        return _calendar_ticks(time, a, b, raw)
    except (ValueError, OverflowError, TypeError):  # dates cftime cannot hold: no ticks
        return []


def _fixed_ticks(time, a: float, b: float, step: float) -> list[tuple[float, str]]:
    import cftime

    per = _SECONDS[time.unit]
    match = _TIME_OF_DAY.search(time.since)
    midnight = (  # seconds from the reference back to its midnight
        int(match.group(1)) * 3600 + int(match.group(2)) * 60 + float(match.group(3))
        if match
        else 0.0
    )
    numbers = [
        (k * step - midnight) / per
        for k in range(
            math.ceil((a * per + midnight) / step), math.floor((b * per + midnight) / step) + 1
        )
    ]
    dates = cftime.num2date(numbers, time.units, calendar=time.calendar)
    width = 10 if step >= 86_400 else 16 if step >= 60 else 19
    return [(n, _iso(d)[:width].replace("T", " ")) for n, d in zip(numbers, dates, strict=True)]


def _calendar_ticks(time, a: float, b: float, raw_seconds: float) -> list[tuple[float, str]]:
    import cftime

    months = raw_seconds / (30.4375 * 86_400)
    step = next((m for m in _MONTHS if m >= months), None) or 12 * int(_nice(months / 12))
    start, end = cftime.num2date([a, b], time.units, calendar=time.calendar)
    first = start.year * 12 + start.month - 1
    found = []
    for month in range(-(-first // step) * step, end.year * 12 + end.month, step):
        year, month0 = divmod(month, 12)
        date = cftime.datetime(year, month0 + 1, 1, calendar=time.calendar)
        number = float(cftime.date2num(date, time.units, calendar=time.calendar))
        if a <= number <= b:
            text = f"{year:04d}" if step % 12 == 0 else f"{year:04d}-{month0 + 1:02d}"
            found.append((number, text))
    return found


def _iso(date) -> str:
    return date.isoformat().replace(" ", "T")


def _element_ticks(coordinate: AxisCoordinate, first: float, last: float, count: int) -> list:
    step = max(1, int(_nice(max((last - first) / max(count, 1), 1.0))))
    start = math.ceil(first / step) * step
    return [(i + 0.5, coordinate.label(i)) for i in range(start, math.floor(last) + 1, step)]
