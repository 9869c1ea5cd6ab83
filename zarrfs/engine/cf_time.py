"""CF time coordinates: ``units = "<unit> since <date>"`` plus ``calendar``, to dates.

CF conventions 1.11, section 4.4 "Time Coordinate" and 4.4.1 "Calendar". The calendars NumPy's
``datetime64`` holds (``standard``/``gregorian`` from 1582-10-15 on, ``proleptic_gregorian``)
decode to ``datetime64[ns]`` as xarray does; every other calendar (``noleap``, ``360_day``,
``julian``, ``all_leap`` ...) and dates outside ``datetime64[ns]`` decode to ``cftime`` objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: CF unit spellings -> NumPy's timedelta unit (UDUNITS names and their plurals/abbreviations)
_UNITS = {
    **dict.fromkeys(("days", "day", "d"), "D"),
    **dict.fromkeys(("hours", "hour", "hr", "hrs", "h"), "h"),
    **dict.fromkeys(("minutes", "minute", "min", "mins"), "m"),
    **dict.fromkeys(("seconds", "second", "sec", "secs", "s"), "s"),
    **dict.fromkeys(("milliseconds", "millisecond", "msec", "msecs", "ms"), "ms"),
    **dict.fromkeys(("microseconds", "microsecond", "usec", "usecs", "us"), "us"),
}
_NS = {"D": 86_400 * 10**9, "h": 3_600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6}
_NS["us"] = 1_000

#: calendar names (lower case) CF defines; the first three are the ones numpy can hold
_NUMPY_CALENDARS = ("standard", "gregorian", "proleptic_gregorian")
CALENDARS = (
    *_NUMPY_CALENDARS,
    "julian",
    "noleap",
    "365_day",
    "all_leap",
    "366_day",
    "360_day",
)
_SINCE = re.compile(r"^\s*([A-Za-z]+)\s+since\s+(.+?)\s*$")
_DATE = re.compile(
    r"^(-?\d{1,4})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ]+(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d*)?)?)?"
    r"\s*(?:Z|UTC|([+-])(\d{1,2})(?::?(\d{2}))?)?$"
)


class TimeUnitsError(ValueError):
    """``units``/``calendar`` that do not describe CF time (a ``problem`` of the variable)."""


@dataclass(frozen=True)
class TimeUnits:
    """A parsed ``"<unit> since <date>"`` with its calendar."""

    units: str  # the attribute as written, for cftime
    unit: str  # NumPy's timedelta unit: "D", "h", "m", "s", "ms", "us"
    since: str  # the reference date, ISO 8601 ("2000-01-01T00:00:00")
    offset_minutes: int  # the reference date's time zone, east of UTC
    calendar: str  # lower case, CF's name

    @property
    def in_numpy(self) -> bool:
        """Dates of this calendar are ``datetime64`` (else ``cftime`` objects)."""
        if self.calendar == "proleptic_gregorian":
            return True
        return self.calendar in _NUMPY_CALENDARS and self.since >= "1582-10-15"


def parse_time_units(units: object, calendar: object) -> TimeUnits | None:
    """TimeUnits, or None when ``units`` has no "since" (not a time); TimeUnitsError when it
    does but cannot be read."""
    if not isinstance(units, str) or " since " not in f" {units.lower()} ":
        return None
    match = _SINCE.match(units)
    unit = _UNITS.get(match.group(1).lower()) if match else None
    date = _DATE.match(match.group(2).strip()) if match else None
    if unit is None or date is None:
        raise TimeUnitsError(f"time units {units!r} do not read as '<unit> since <date>'")
    cal = "standard" if calendar is None else str(calendar).lower()
    if cal not in CALENDARS:
        raise TimeUnitsError(
            f"unknown calendar {calendar!r} (CF calendars: {', '.join(CALENDARS)})"
        )
    year, month, day, hour, minute, second, fraction, sign, tz_h, tz_m = date.groups()
    since = (
        f"{int(year):04d}-{int(month):02d}-{int(day):02d}"
        f"T{int(hour or 0):02d}:{int(minute or 0):02d}:{int(second or 0):02d}{fraction or ''}"
    )
    offset = (int(tz_h or 0) * 60 + int(tz_m or 0)) * (-1 if sign == "-" else 1)
    return TimeUnits(units, unit, since, offset, cal)


def decode_times(values: np.ndarray, time: TimeUnits) -> np.ndarray:
    """Numbers (NaN where missing) to ``datetime64[ns]`` (NaT where missing) or ``cftime``
    objects (None where missing)."""
    if time.in_numpy:
        try:
            return _numpy_dates(values, time)
        except OverflowError:
            pass  # outside datetime64[ns]: cftime holds any year
    return _cftime_dates(values, time)


def _numpy_dates(values: np.ndarray, time: TimeUnits) -> np.ndarray:
    reference = np.datetime64(time.since, "ns") - np.timedelta64(time.offset_minutes, "m")
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        step = _NS[time.unit]
        if values.size and np.abs(values).max() > np.iinfo(np.int64).max // step:
            raise OverflowError("dates outside datetime64[ns]")
        return reference + values.astype(np.int64) * np.timedelta64(step, "ns")
    nanoseconds = np.asarray(values, dtype=np.float64) * _NS[time.unit]
    missing = ~np.isfinite(nanoseconds)
    if np.any(np.abs(nanoseconds[~missing]) >= 2.0**63):
        raise OverflowError("dates outside datetime64[ns]")
    out = reference + np.where(missing, 0, np.round(nanoseconds)).astype("timedelta64[ns]")
    out[missing] = np.datetime64("NaT")
    return out


def _cftime_dates(values: np.ndarray, time: TimeUnits) -> np.ndarray:
    import cftime  # calendars numpy cannot hold; imported on first use

    numbers = np.ma.masked_invalid(np.asarray(values, dtype=np.float64))
    dates = cftime.num2date(
        numbers, time.units, calendar=time.calendar, only_use_cftime_datetimes=True
    )
    return np.ma.filled(np.ma.asarray(dates, dtype=object), None)


def format_date(value) -> str:
    """A date as ISO text, the time dropped when it is midnight ("2000-01-05")."""
    if value is None or (isinstance(value, np.datetime64) and np.isnat(value)):
        return "NaT"
    text = (
        str(np.datetime_as_string(value, unit="s"))
        if isinstance(value, np.datetime64)
        else value.isoformat()
    )
    return text[:10] if text.endswith("T00:00:00") or text.endswith(" 00:00:00") else text
