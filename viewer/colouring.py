"""A plane's values as the picture on screen: contrast levels and a colour map applied, missing
values transparent. Plain NumPy, no Qt: it runs on a worker, so the GUI thread only swaps the
finished picture in (``coloured_image``).

A value ``v`` drawn with levels ``(low, high)`` and a lookup table of ``n`` colours takes
colour ``rint(clip((v - low) / (high - low), 0, 1) * (n - 1))``, computed in float64 (a
narrow window on large numbers, dates as seconds, keeps its steps); NaN, a missing value of a
CF variable, is transparent, and the backdrop under the plane (View > Missing values) shows
through. The full-resolution export maps values the same way (``export.render``, in float32
there: a value at the very edge of a colour's step may take its neighbour).

The picture is premultiplied ARGB in native 32-bit words, the format Qt paints without
converting (``QImage.Format_ARGB32_Premultiplied``): a transparent pixel is 0.
"""

from __future__ import annotations

import numpy as np

#: values coloured in one go: each NumPy call over a band is short, so a band's calls that
#: hold the GIL never hold the GUI thread for long
BAND = 1 << 17
#: the grey ramp drawn when no colour map is given
GREY = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)


def argb_table(lut: np.ndarray | None) -> np.ndarray:
    """A lookup table (``n`` x 3 RGB or ``n`` x 4 RGBA ``uint8``; None: grey) as ``n + 1``
    premultiplied ARGB words, the last one transparent (for missing values)."""
    lut = GREY if lut is None else np.asarray(lut, dtype=np.uint8)
    if lut.ndim == 1:  # a grey ramp of its own
        lut = np.repeat(lut[:, None], 3, axis=1)
    rgb = lut[:, :3].astype(np.uint32)
    alpha = lut[:, 3].astype(np.uint32) if lut.shape[1] > 3 else np.full(len(lut), 255, np.uint32)
    rgb = (rgb * alpha[:, None] + 127) // 255  # premultiplied (opaque: unchanged)
    words = (alpha << 24) | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    return np.append(words, np.uint32(0)).astype(np.uint32)


def colour_indices(values: np.ndarray, levels: tuple[float, float], colours: int) -> np.ndarray:
    """Each value's colour in a table of ``colours`` (``intp``); NaN: ``colours`` (past the
    table's end: the transparent entry of ``argb_table``)."""
    low, high = (float(level) for level in levels)
    if high == low:
        high = low + 1.0
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: clipped to the ends
        scaled = np.subtract(values, low, dtype=np.float64)
        scaled /= high - low
    np.clip(scaled, 0.0, 1.0, out=scaled)
    scaled *= colours - 1
    np.rint(scaled, out=scaled)
    missing = np.isnan(scaled) if values.dtype.kind == "f" else None
    if missing is not None:
        scaled[missing] = colours
    return scaled.astype(np.intp)


def picture(values: np.ndarray, levels: tuple[float, float], table: np.ndarray) -> np.ndarray:
    """The (rows, cols) ``uint32`` ARGB picture of 2-D ``values`` with ``table`` (from
    ``argb_table``), coloured a band of rows at a time."""
    out = np.empty(values.shape, np.uint32)
    rows = max(1, BAND // max(values.shape[1], 1))
    for start in range(0, values.shape[0], rows):
        band = slice(start, start + rows)
        np.take(table, colour_indices(values[band], levels, len(table) - 1), out=out[band])
    return out
