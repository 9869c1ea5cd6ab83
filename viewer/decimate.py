"""Plan how to read and draw a 1-D array (or a range of it) at the resolution of a plot.

A plot a couple of thousand pixels wide cannot show more than that many values apart, so a long
range is cut into buckets of equal size and each bucket is drawn as a vertical stroke from its
minimum to its maximum: a single spike survives, which a strided sample would skip. The values
are read in chunk-aligned blocks at low priority (a few in flight), after a quick strided preview
that touches few chunks. Ranges too long to read whole keep the preview until zoomed in.
Nothing here does I/O or imports Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BUCKETS = 2048  # min/max strokes across the plot (about two per screen pixel)
WHOLE_LIMIT = 4 * BUCKETS  # up to this many values every value is drawn
BLOCK_ELEMENTS = 1 << 20  # a refining read covers about this many values
REFINE_LIMIT = 1 << 26  # above this many values, only the preview until zoomed in
PREVIEW_CHUNKS = 256  # the preview touches at most this many chunks


@dataclass(frozen=True)
class LinePlan:
    """What to read for values ``start:stop`` drawn as ``buckets`` strokes of ``bucket`` values."""

    start: int
    stop: int
    bucket: int
    preview: slice | None  # strided sample drawn first (None: no preview)
    blocks: tuple[tuple[int, int], ...]  # chunk-aligned [begin, end) reads that refine

    @property
    def buckets(self) -> int:
        return -(-(self.stop - self.start) // self.bucket)


def _preview(start: int, stop: int, bucket: int, chunk: int) -> slice:
    """One sample per bucket, or fewer: samples spread over at most PREVIEW_CHUNKS chunks."""
    chunks = -(-(stop - start) // chunk)
    stride = bucket
    if chunks > PREVIEW_CHUNKS:
        stride = max(bucket, math.ceil((stop - start) / PREVIEW_CHUNKS / bucket) * bucket)
    return slice(start, stop, stride)


def _blocks(start: int, stop: int, chunk: int) -> tuple[tuple[int, int], ...]:
    """``start:stop`` cut at chunk boundaries into reads of about BLOCK_ELEMENTS values."""
    step = max(1, round(BLOCK_ELEMENTS / chunk)) * chunk
    edges = [start] + list(range((start // step + 1) * step, stop, step)) + [stop]
    return tuple((a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a)


def plan_line(start: int, stop: int, chunk: int, buckets: int = BUCKETS) -> LinePlan:
    """The reads that draw ``start:stop`` of an array chunked by ``chunk`` values."""
    n = max(0, stop - start)
    chunk = max(1, int(chunk))
    if n <= WHOLE_LIMIT:
        return LinePlan(start, stop, 1, None, _blocks(start, stop, chunk) if n else ())
    bucket = -(-n // buckets)
    preview = _preview(start, stop, bucket, chunk)
    blocks = _blocks(start, stop, chunk) if n <= REFINE_LIMIT else ()
    return LinePlan(start, stop, bucket, preview, blocks)


def bucket_minmax(values: np.ndarray, begin: int, plan: LinePlan):
    """``(first bucket, minima, maxima)`` of ``values`` (elements ``begin:``) per bucket.

    NaN is ignored unless a bucket holds nothing else. Buckets cut by the block's ends get
    partial extremes; the caller combines them with ``np.fmin``/``np.fmax``.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        return 0, values, values
    offset = begin - plan.start
    first = offset // plan.bucket
    last = (offset + values.size - 1) // plan.bucket
    edges = np.arange(first, last + 1) * plan.bucket - offset
    edges[0] = 0
    with np.errstate(invalid="ignore"):
        return first, np.fmin.reduceat(values, edges), np.fmax.reduceat(values, edges)


def preview_buckets(plan: LinePlan, samples: np.ndarray) -> np.ndarray:
    """The preview's value for every bucket: the last sample at or before it (a step line)."""
    samples = np.asarray(samples, dtype=np.float64).ravel()
    at = (np.arange(samples.size) * plan.preview.step) // plan.bucket
    index = np.searchsorted(at, np.arange(plan.buckets), side="right") - 1
    return (
        samples[np.clip(index, 0, max(samples.size - 1, 0))]
        if samples.size
        else np.full(plan.buckets, np.nan)
    )


def envelope(plan: LinePlan, lows: np.ndarray, highs: np.ndarray):
    """``(x, y)`` to plot: one point per value, or a low-high stroke per bucket."""
    x = plan.start + np.arange(lows.size) * plan.bucket
    if plan.bucket == 1:
        return x.astype(np.float64), lows
    return np.repeat(x, 2).astype(np.float64), np.column_stack((lows, highs)).ravel()
