"""The regular chunk grid's geometry, one copy for the engine and the mount (v3 core spec,
"regular" chunk grid; v2 arrays have the same grid).

``grid_shape``: how many chunks lie along each dimension. ``flat_boxes``: a range of elements of
the C-order flattened array as a few boxes (tuples of slices), so that a byte range of the
mount's ``data.npy`` becomes selections the planner reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import prod


def grid_shape(shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Chunks along each dimension: ``ceil(shape / chunk_shape)``, in integers (a float
    division is wrong past 2**53), 0 along a dimension of chunk size 0."""
    return tuple(-(-s // c) if c else 0 for s, c in zip(shape, chunk_shape, strict=True))


def flat_boxes(start: int, stop: int, shape: tuple[int, ...]) -> list[tuple[int, tuple]]:
    """C-order elements ``[start, stop)`` of an array of ``shape`` as ``(offset in the range,
    box)`` pairs, at most ``2 * ndim - 1`` boxes whose elements, each in C order, follow each
    other in the range: a ragged head, a run of whole slabs, a ragged tail, recursively."""
    boxes, offset = [], 0
    for box in _boxes(shape, start, stop):
        boxes.append((offset, box))
        offset += prod(s.stop - s.start for s in box)
    return boxes


def _boxes(shape: tuple[int, ...], start: int, stop: int) -> Iterator[tuple[slice, ...]]:
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
        for box in _boxes(shape[1:], head, tail):
            yield (slice(first, first + 1),) + box
        return
    if head:
        for box in _boxes(shape[1:], head, inner):
            yield (slice(first, first + 1),) + box
        first += 1
    if last > first:
        yield (slice(first, last),) + rest
    if tail:
        for box in _boxes(shape[1:], 0, tail):
            yield (slice(last, last + 1),) + box
