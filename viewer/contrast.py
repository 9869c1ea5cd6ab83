"""The colour scale beside the image: colormaps by name, and a histogram for any data.

The histogram beside the image is made from a sample of the plane's values, on the worker
that colours its picture (``sample_histogram``).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg


def sample_histogram(image: np.ndarray | None, bins: int = 256):
    """``(bin starts, counts)`` of the finite values of a 2-D plane, from a sample of about
    64 Ki of them (the histogram beside the image needs only its shape); ``(None, None)`` for
    no values, a composite, or a range too narrow (or too wide) for ``bins`` finite bins.
    pyqtgraph's own ``ImageItem.getHistogram`` raises on inf and on int64 extremes and looks at
    every value. Plain NumPy: it runs on the colouring worker (``coloured_image``)."""
    if image is None or image.size == 0 or image.ndim != 2:
        return None, None
    step = max(1, math.ceil(math.sqrt(image.size / 65_536)))
    with np.errstate(all="ignore"):
        sample = np.asarray(image[::step, ::step], dtype=np.float64).ravel()
    sample = sample[np.isfinite(sample)]
    if sample.size == 0:
        return None, None
    lo, hi = float(sample.min()), float(sample.max())
    if not hi > lo:
        hi = lo + 1.0
    try:
        counts, edges = np.histogram(sample, bins=bins, range=(lo, hi))
    except ValueError:
        return None, None
    return edges[:-1], counts


def colormap(name: str):
    if name == "grey":
        return pg.ColorMap([0.0, 1.0], [(0, 0, 0), (255, 255, 255)])
    try:
        return pg.colormap.get(name)
    except Exception:
        return pg.colormap.get(name, source="matplotlib")


def colour_bar_range(item, levels) -> tuple[float, float] | None:
    """The values a ``HistogramLUTItem`` shows: its histogram's and the ``levels``, widened
    to round ends (``round_range``); None when there is neither."""
    bins = item.plot.xData
    ends = [float(bins[0]), float(bins[-1])] if bins is not None and len(bins) else []
    ends += [float(v) for v in levels or ()]
    finite = [v for v in ends if math.isfinite(v)]
    if not finite:
        return None
    low, high = round_range(min(finite), max(finite))
    return (low, high) if math.isfinite(high - low) else None  # beyond what a view can show


def round_range(low: float, high: float) -> tuple[float, float]:
    """``low``..``high`` widened outward to multiples of a round step (half the power of ten
    below their span): 261.3..289.7 -> 260..290, so a range that moves a little from one
    plane to the next keeps its ends."""
    span = high - low
    if not span > 0 or not math.isfinite(span):
        return low - 0.5, high + 0.5
    step = 10.0 ** math.floor(math.log10(span)) / 2
    rounded = math.floor(low / step) * step, math.ceil(high / step) * step
    return rounded if math.isfinite(rounded[1] - rounded[0]) else (low, high)
