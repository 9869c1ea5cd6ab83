"""The series planner (pure): pieces cover the series once, in order, chunk-aligned, each
touching at most PIECE_BYTES of decoded chunks; long axes are capped around the slider."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zarrfs.viewer.series import default_axis, plan_series, x_positions


@pytest.mark.parametrize(
    "shape,chunks,itemsize,centre,max_steps,piece_bytes",
    [
        ((24, 18, 18), (7, 18, 9), 2, 0, 10**6, 64 << 20),
        ((10_000, 16, 16), (1000, 8, 8), 2, 5, 10**6, 64 << 20),
        ((10_000, 4, 4), (1, 720, 1440), 4, 9000, 10**6, 64 << 20),
        ((10_000, 4, 4), (3, 4, 4), 8, 7000, 1000, 3 * 3 * 4 * 4 * 8),
        ((5, 4, 4), (), 8, 2, 10**6, 1),
    ],
)
def test_pieces_cover_the_series_in_bounded_chunk_aligned_pieces(
    shape, chunks, itemsize, centre, max_steps, piece_bytes
):
    plan = plan_series(shape, chunks, itemsize, 0, (centre, 1, 2), max_steps, piece_bytes)
    assert plan.size == min(shape[0], max_steps) and plan.start <= centre < plan.stop
    assert 0 <= plan.start and plan.stop <= shape[0]
    edges = [b for piece in plan.pieces for b in piece]
    assert edges[0] == plan.start and edges[-1] == plan.stop and edges == sorted(edges)
    assert all(plan.pieces[k][1] == plan.pieces[k + 1][0] for k in range(len(plan.pieces) - 1))
    chunk_len = chunks[0] if chunks else shape[0]
    chunk_bytes = math.prod(chunks or shape) * itemsize
    for begin, end in plan.pieces:
        touched = -(-end // chunk_len) - begin // chunk_len
        assert touched * chunk_bytes <= max(piece_bytes, chunk_bytes)
        assert begin == plan.start or begin % chunk_len == 0
    assert plan.selection(3, 9) == (slice(3, 9), 1, 2)
    assert (plan.note == "") == (plan.size == shape[0])


def test_the_default_axis_is_time():
    assert default_axis([0, 1], ("level", "date", "y", "x"), {1}) == 1
    assert default_axis([0, 1], ("level", "T", "y", "x"), set()) == 1
    assert default_axis([0, 1], ("level", "step", "y", "x"), set()) == 0
    assert default_axis([], ("y", "x"), set()) is None


def test_x_positions_need_finite_monotonic_coordinates():
    assert np.array_equal(x_positions(np.array([3, 2, 1])), [3.0, 2.0, 1.0])
    assert x_positions(np.array([1.0, np.nan, 3.0])) is None
    assert x_positions(np.array([1, 3, 2])) is None
    assert x_positions(None) is None
