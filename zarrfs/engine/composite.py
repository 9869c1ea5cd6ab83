"""Channels of an image as one RGB picture: each channel scaled by its window, tinted with its
colour and added, as napari and vizarr draw OME-Zarr images (additive blending).

One function for every front end, so the mount's ``-o composite`` files and the viewer's
composite are the same pixels. Windows come from ``omero`` (:mod:`ome`) or, where it gives none,
:func:`auto_window`, which suits sparse data: a channel that is mostly background keeps its few
bright objects visible instead of stretching the background into noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Percentiles of the automatic window: the low end over all finite values, the high end over
#: the values above the low end (the foreground), so that background does not set it.
AUTO_LOW_PERCENTILE = 0.5
AUTO_HIGH_PERCENTILE = 99.5


def auto_window(values: np.ndarray) -> tuple[float, float]:
    """``(start, end)`` for ``values``: the 0.5th percentile of the finite values, and the 99.5th
    percentile of those above it. A constant plane gets ``(v, v + 1)``."""
    finite = np.asarray(values, dtype=np.float64).ravel()
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return (0.0, 1.0)
    low = float(np.percentile(finite, AUTO_LOW_PERCENTILE))
    above = finite[finite > low]
    if above.size == 0:
        return (low, low + 1.0)
    high = float(np.percentile(above, AUTO_HIGH_PERCENTILE))
    return (low, high if high > low else float(above.max()))


def scale_to_window(values: np.ndarray, start: float, end: float) -> np.ndarray:
    """``values`` mapped to 0..1 (float32) by the window; NaN becomes 0. An inverted window
    (``start > end``) inverts the ramp."""
    return _scale(np.asarray(values), start, end)


def _scale(values: np.ndarray, start: float, end: float) -> np.ndarray:
    out = values.astype(np.float32)
    out -= np.float32(start)
    out *= np.float32(1.0 / (end - start))
    np.clip(out, 0.0, 1.0, out=out)
    if values.dtype.kind in "fc":  # integers are never NaN
        out[np.isnan(out)] = 0.0
    return out


def blend(
    planes: Sequence[np.ndarray],
    colors: Sequence[tuple[int, int, int]],
    windows: Sequence[tuple[float, float]],
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The additive composite of ``planes`` (each 2-D, the same shape) as ``uint8`` RGB
    ``(height, width, 3)``: ``sum(scaled * colour)`` per channel, clipped to 255 and rounded;
    written into ``out`` when given (a region of a larger picture, say).

    Summed per colour component in contiguous planes, then interleaved once."""
    if not planes:
        raise ValueError("a composite needs at least one channel")
    shape = np.shape(planes[0])
    total = np.zeros((3,) + shape, dtype=np.float32)  # in units of 255
    for plane, color, (start, end) in zip(planes, colors, windows, strict=True):
        scaled = scale_to_window(plane, start, end)
        for k in range(3):
            if color[k] == 255:
                total[k] += scaled
            elif color[k]:
                total[k] += scaled * np.float32(color[k] / 255.0)
    np.clip(total, 0.0, 1.0, out=total)
    total *= np.float32(255.0)
    np.rint(total, out=total)
    if out is None:
        out = np.empty(shape + (3,), dtype=np.uint8)
    for k in range(3):
        out[..., k] = total[k]
    return out
