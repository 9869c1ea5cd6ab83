"""Turn stored values into numbers an image or plot can show, one small function per kind.

pyqtgraph draws real numbers; complex, bool, datetime, float16 and structured data are mapped
here (a table of small functions, STYLE rule 12), and strings go to a table instead of an image.
"""

from __future__ import annotations

import numpy as np

from .view_state import COMPLEX_MODES


def _complex(values: np.ndarray, mode: str) -> np.ndarray:
    funcs = {"magnitude": np.abs, "phase": np.angle, "real": np.real, "imag": np.imag}
    return funcs[mode](values).astype(np.float32 if values.dtype.itemsize <= 8 else np.float64)


def _bool(values, mode):
    return values.view(np.uint8)


def _float(values, mode):
    return values.astype(np.float32) if values.dtype.itemsize < 4 else values


def _time(values, mode):
    """Datetimes and durations as float counts of their unit; NaT becomes NaN."""
    ints = values.view(np.int64)
    out = ints.astype(np.float64)
    out[ints == np.iinfo(np.int64).min] = np.nan
    return out


def _as_is(values, mode):
    return values


_BY_KIND = {
    "c": _complex,
    "b": _bool,
    "f": _float,
    "M": _time,
    "m": _time,
    "i": _as_is,
    "u": _as_is,
}


def is_numeric(dtype: np.dtype) -> bool:
    return dtype.kind in _BY_KIND


def numeric_fields(dtype: np.dtype) -> list[str]:
    """Fields of a structured dtype that can be imaged (nested fields are skipped)."""
    if dtype.names is None:
        return []
    return [
        name
        for name in dtype.names
        if dtype.fields[name][0].shape == () and is_numeric(dtype.fields[name][0])
    ]


def field_dtype(dtype: np.dtype, field_name: str | None) -> np.dtype:
    if field_name and dtype.names and field_name in dtype.names:
        return dtype.fields[field_name][0]
    return dtype


def is_imageable(dtype: np.dtype, field_name: str | None = None) -> bool:
    return is_numeric(field_dtype(dtype, field_name))


def select_field(values: np.ndarray, field_name: str | None) -> np.ndarray:
    if field_name and values.dtype.names and field_name in values.dtype.names:
        return values[field_name]
    return values


def to_display(
    values: np.ndarray, *, field_name: str | None = None, complex_mode: str = "magnitude"
) -> np.ndarray:
    """The real-valued array to draw for ``values`` (a copy only where the type needs one)."""
    values = select_field(values, field_name)
    if complex_mode not in COMPLEX_MODES:
        complex_mode = "magnitude"
    func = _BY_KIND.get(values.dtype.kind)
    if func is None:
        raise TypeError(f"cannot draw values of type {values.dtype}")
    if not values.dtype.isnative:
        values = values.astype(values.dtype.newbyteorder("="))
    return func(np.ascontiguousarray(values), complex_mode)


def display_dtype(dtype: np.dtype, field_name: str | None, complex_mode: str) -> np.dtype:
    return to_display(
        np.zeros(1, dtype=dtype), field_name=field_name, complex_mode=complex_mode
    ).dtype


def format_value(value) -> str:
    """A stored value as a user reads it (cursor readout, 0-d arrays, tables)."""
    if isinstance(value, np.generic) and value.dtype.kind == "M":
        return "NaT" if np.isnat(value) else str(np.datetime_as_string(value))
    if isinstance(value, np.generic) and value.dtype.kind == "m":
        return "NaT" if np.isnat(value) else str(value)
    if isinstance(value, bytes):  # np.bytes_ too, whose repr is "np.bytes_(b'ab')"
        return repr(bytes(value))
    if isinstance(value, str):  # np.str_ likewise
        return str(value)
    if isinstance(value, np.void) and value.dtype.names:
        return "(" + ", ".join(f"{n}={format_value(value[n])}" for n in value.dtype.names) + ")"
    if isinstance(value, float | np.floating):
        return f"{value:.6g}"
    if isinstance(value, complex | np.complexfloating):
        return f"{value.real:.6g}{value.imag:+.6g}j"
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=20)
    return str(value)


def robust_levels(sample: np.ndarray) -> tuple[float, float] | None:
    """Contrast limits from what is on screen: the 0.5th and 99.5th percentiles, NaN-aware."""
    if sample.size == 0:
        return None
    sample = sample.ravel()
    if sample.size > 200_000:
        sample = sample[:: sample.size // 200_000]
    if sample.dtype.kind == "f":
        sample = sample[np.isfinite(sample)]
        if sample.size == 0:
            return None
    if sample.dtype.kind in "iu":
        sample = sample.astype(np.float64)
    lo, hi = np.percentile(sample, [0.5, 99.5])
    lo, hi = max(float(lo), -1e300), min(float(hi), 1e300)  # keep hi - lo finite
    if hi <= lo:
        lo, hi = max(float(sample.min()), -1e300), min(float(sample.max()), 1e300)
        if hi <= lo:
            hi = lo + max(1.0, abs(lo) * 1e-6)
    return lo, hi


def centred(levels: tuple[float, float] | None, centre: float | None) -> tuple[float, float] | None:
    """``levels`` widened to be symmetric around ``centre`` (an anomaly's 0 at the middle of a
    diverging colormap); unchanged when ``centre`` is None."""
    if levels is None or centre is None:
        return levels
    half = max(abs(levels[0] - centre), abs(levels[1] - centre)) or 1.0
    return centre - half, centre + half
