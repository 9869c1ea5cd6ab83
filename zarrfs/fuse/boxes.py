"""Boxes (tuples of slices) covering a range of C-order elements: the mount's byte ranges as
selections the engine can read in the background (``Array.submit``)."""

from __future__ import annotations

from collections.abc import Iterator
from math import prod


def flat_boxes(shape: tuple[int, ...], start: int, stop: int) -> Iterator[tuple[slice, ...]]:
    """Boxes (tuples of slices) that together cover exactly C-order elements ``[start, stop)``.

    At most ``2 * ndim - 1`` boxes: a ragged head, a run of whole slabs, a ragged tail, recursively.
    """
    if start >= stop:
        return
    if len(shape) <= 1:
        yield (slice(start, stop),) if shape else ()
        return
    inner = prod(shape[1:])
    first, head = divmod(start, inner)
    last, tail = divmod(stop, inner)
    rest = tuple(slice(0, n) for n in shape[1:])
    if first == last:
        for box in flat_boxes(shape[1:], head, tail):
            yield (slice(first, first + 1),) + box
        return
    if head:
        for box in flat_boxes(shape[1:], head, inner):
            yield (slice(first, first + 1),) + box
        first += 1
    if last > first:
        yield (slice(first, last),) + rest
    if tail:
        for box in flat_boxes(shape[1:], 0, tail):
            yield (slice(last, last + 1),) + box
