"""The colour scale beside the image: colormaps by name, and a histogram for any data.

pyqtgraph's own ``ImageItem.getHistogram`` raises on inf and on int64 extremes, and looks at
every value; the histogram beside the image needs only its shape.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg


def safe_histogram(image_item, bins: int = 256):
    """``ImageItem.getHistogram`` for any data: pyqtgraph's raises on inf and on int64 extremes
    (an exception in the event loop and a stale histogram); this one samples finite values."""

    def histogram(*_args, **_kwargs):
        image = image_item.image
        if image is None or image.size == 0 or image.ndim != 2:  # a composite has no histogram
            return None, None
        step = max(1, math.ceil(math.sqrt(image.size / 65_536)))  # its shape, from 64 Ki values
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
        except ValueError:  # a range too narrow (or too wide) for 256 finite bins
            return None, None
        return edges[:-1], counts

    return histogram


def colormap(name: str):
    if name == "grey":
        return pg.ColorMap([0.0, 1.0], [(0, 0, 0), (255, 255, 255)])
    try:
        return pg.colormap.get(name)
    except Exception:
        return pg.colormap.get(name, source="matplotlib")
