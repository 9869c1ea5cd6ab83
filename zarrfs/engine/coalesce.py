"""Merge nearby byte ranges of the same object into fewer requests.

Inner chunks of a shard that a selection needs usually sit next to each other; one ranged GET for
a run of them saves round trips and per-request overhead. A gap of up to ``max_gap`` bytes is read
and thrown away; a merged range never grows past ``max_size``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .store_request import ByteRequest

_tuple = tuple.__new__
MAX_GAP = 256 * 1024
MAX_SIZE = 64 * 2**20


def coalesce(
    requests: Sequence[ByteRequest], max_gap: int = MAX_GAP, max_size: int = MAX_SIZE
) -> tuple[list[ByteRequest], list[tuple[int, int]]]:
    """Merged requests, and for each original request (merged index, offset in that answer).

    Only bounded ranges (``start >= 0`` and ``end`` set) are merged; others pass through.
    """
    merged: list[ByteRequest] = []
    where: list[tuple[int, int]] = [(-1, 0)] * len(requests)
    order = sorted(range(len(requests)), key=lambda i: (requests[i].key, requests[i].start or 0))
    current: dict[str, int] = {}  # key -> index in merged of the run being built
    for i in order:
        r = requests[i]
        if r.start is None or r.start < 0 or r.end is None:
            where[i] = (len(merged), 0)
            merged.append(r)
            continue
        j = current.get(r.key)
        if j is not None:
            m = merged[j]
            if r.start - m.end <= max_gap and max(m.end, r.end) - m.start <= max_size:
                # (made with tuple.__new__, every field given: no Python call per request)
                merged[j] = _tuple(ByteRequest, (r.key, m.start, max(m.end, r.end)))
                where[i] = (j, r.start - m.start)
                continue
        current[r.key] = len(merged)
        where[i] = (len(merged), 0)
        merged.append(r)
    return merged, where
