"""The colour scale beside the image: colormaps by name, a histogram for any data, and the
automatic contrast.

The histogram beside the image and the automatic levels are made from one sample of the
plane's values (``found_levels``), on the worker that colours its picture: the GUI thread
never looks at the plane's values for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg

from . import transforms

#: values a plane is sampled down to for its histogram and its automatic levels
SAMPLE = 65_536


def sample_step(shape: tuple[int, ...]) -> int:
    """The stride, along both axes, that leaves about ``SAMPLE`` values of a plane."""
    return max(1, math.ceil(math.sqrt(math.prod(shape) / SAMPLE)))


def on_grid(plane: np.ndarray) -> np.ndarray:
    """The sampled pixels of a 2-D plane (a view): every ``sample_step``-th row and column."""
    step = sample_step(plane.shape)
    return plane[::step, ::step]


def sample(image: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The finite values (float64) of a 2-D plane's sampled pixels (``on_grid``), of those
    where ``mask`` (on the same grid: the pixels that hold values) is true."""
    with np.errstate(all="ignore"):
        values = np.asarray(on_grid(image), dtype=np.float64)
    if mask is not None:
        values = values[mask]
    values = values.ravel()
    return values[np.isfinite(values)]


def histogram(values: np.ndarray, bins: int = 256):
    """``(bin starts, counts)`` of a sample (``sample``); ``(None, None)`` for no values or a
    range too narrow (or too wide) for ``bins`` finite bins."""
    if values.size == 0:
        return None, None
    lo, hi = float(values.min()), float(values.max())
    if not hi > lo:
        hi = lo + 1.0
    try:
        counts, edges = np.histogram(values, bins=bins, range=(lo, hi))
    except ValueError:
        return None, None
    return edges[:-1], counts


def sample_histogram(image: np.ndarray | None, bins: int = 256):
    """``(bin starts, counts)`` of the finite values of a 2-D plane, from a sample of about
    64 Ki of them (the histogram beside the image needs only its shape); ``(None, None)`` for
    no values or a composite. pyqtgraph's own ``ImageItem.getHistogram`` raises on inf and on
    int64 extremes and looks at every value."""
    if image is None or image.size == 0 or image.ndim != 2:
        return None, None
    return histogram(sample(image), bins)


@dataclass(frozen=True)
class AutoLevels:
    """Automatic contrast: the levels are found in the plane's sample (``found``), on the
    worker that colours it, with its histogram; the GUI thread hands this over with the
    values."""

    mask: np.ndarray | None  # on the sample's grid: the pixels that hold values (None: all)
    centre: float | None  # levels made symmetric around it (a diverging colormap's middle)
    fallback: tuple[float, float]  # when the sample has no finite value

    def found(self, values: np.ndarray) -> tuple[float, float]:
        """The levels of a sample (``sample``): its 0.5th and 99.5th percentiles, centred."""
        levels = transforms.robust_levels(values)
        return self.fallback if levels is None else transforms.centred(levels, self.centre)


def found_levels(image, auto: AutoLevels | None):
    """The histogram of ``image`` (a 2-D plane) and, with ``auto``, its automatic levels (else
    None), from one sample: ``((bin starts, counts), levels)``."""
    if image is None or image.size == 0 or image.ndim != 2:
        return (None, None), None if auto is None else auto.fallback
    mask = None if auto is None else auto.mask
    if mask is not None and mask.shape != on_grid(image).shape:
        raise ValueError(f"a mask of {mask.shape} for a sample of {on_grid(image).shape}")
    values = sample(image, mask)
    return histogram(values), None if auto is None else auto.found(values)


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


def keeps(shown: tuple[float, float] | None, fitted: tuple[float, float]) -> bool:
    """Whether the colour bar keeps the range it ``shown`` for a plane whose own is
    ``fitted``: while that holds it and is no less than half as wide. Planes of a series
    whose ends move by a round step (260..290, then 260..295) leave the bar's axis as it
    is, unrelabelled (a new axis costs most of the bar's paint)."""
    if shown is None:
        return False
    (low, high), (new_low, new_high) = shown, fitted
    return low <= new_low and new_high <= high and (new_high - new_low) * 2 >= high - low


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
