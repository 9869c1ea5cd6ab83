"""The planner against NumPy: any basic-indexing selection, assembled chunk by chunk from the
plan, equals NumPy's own result on the same data (property tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrfs.engine.errors import SelectionError
from zarrfs.engine.grid import flat_boxes
from zarrfs.engine.planner import count_chunks, normalize_selection, out_shape, plan


@st.composite
def array_and_chunks(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=9))
    chunks = tuple(draw(st.integers(1, max(1, n + 2))) for n in shape)
    return shape, chunks


def _assemble(data: np.ndarray, chunks, selection):
    dims = normalize_selection(selection, data.shape)
    out = np.full(out_shape(dims), -1, dtype=data.dtype)
    seen = np.zeros(out.shape, dtype=int)
    for req in plan(dims, chunks, data.shape):
        region = tuple(
            slice(c * n, (c + 1) * n) for c, n in zip(req.chunk_coords, chunks, strict=True)
        )
        chunk = np.full(chunks, -7, dtype=data.dtype)  # overhang beyond the array is garbage
        part = data[region]
        chunk[tuple(slice(0, s) for s in part.shape)] = part
        out[req.out_selection] = chunk[req.chunk_selection]
        seen[req.out_selection] += 1
    return out, seen


@settings(max_examples=400, deadline=None)
@given(array_and_chunks(), st.data())
def test_plan_matches_numpy(shape_chunks, data):
    shape, chunks = shape_chunks
    arr = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    selection = data.draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    expected = arr[selection]
    got, seen = _assemble(arr, chunks, selection)
    np.testing.assert_array_equal(got, np.asarray(expected))
    assert (seen == 1).all(), "every output element is written exactly once"


@settings(max_examples=400, deadline=None)
@given(array_and_chunks(), st.data())
def test_count_chunks_is_the_plans_length(shape_chunks, data):
    """The count the sharded source plans by (arithmetic for most steps) is the plan's."""
    shape, chunks = shape_chunks
    selection = data.draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    dims = normalize_selection(selection, shape)
    assert count_chunks(dims, chunks) == len(plan(dims, chunks, shape))


def test_negative_steps_and_bounds():
    arr = np.arange(100).reshape(10, 10)
    for sel in [
        (slice(None, None, -1),),
        (slice(8, 1, -3), slice(-2, None)),
        (-1, slice(None, None, -4)),
    ]:
        got, _ = _assemble(arr, (3, 4), sel)
        np.testing.assert_array_equal(got, arr[sel])


def test_whole_chunk_flag():
    dims = normalize_selection((slice(None), slice(0, 8)), (10, 10))
    reqs = plan(dims, (4, 4), (10, 10))
    whole = {r.chunk_coords: r.whole_chunk for r in reqs}
    assert whole[(0, 0)] and whole[(1, 1)] and whole[(2, 0)]  # edge chunk read to the array end


def test_a_stride_far_larger_than_the_chunks_plans_one_chunk_per_element():
    """Only the chunks holding selected elements are visited: a plan walking every chunk
    between them would not end for this array of 2**62 elements."""
    shape, chunks = (2**62, 3), (10, 2)
    dims = normalize_selection((slice(None, None, 2**60), slice(None, None, 2)), shape)
    reqs = plan(dims, chunks, shape)
    assert [r.chunk_coords for r in reqs] == [
        (k * 2**60 // 10, j) for k in range(4) for j in (0, 1)
    ]
    assert [r.chunk_selection for r in reqs][:2] == [
        (slice(0, 1, 2**60), slice(0, 1, 2)),
        (slice(0, 1, 2**60), slice(0, 1, 2)),
    ]
    assert reqs[2].chunk_selection[0] == slice(2**60 % 10, 2**60 % 10 + 1, 2**60)
    assert [r.out_selection for r in reqs][-1] == (slice(3, 4), slice(1, 2))
    reverse = normalize_selection((slice(None, None, -(2**61)),), shape[:1])
    assert [r.out_selection for r in plan(reverse, chunks[:1], shape[:1])] == [
        (slice(1, 0, -1),),
        (slice(0, None, -1),),
    ]


@pytest.mark.parametrize(
    "sel",
    [
        (10,),
        (-11,),
        (0, 0, 0),
        (slice(0, 1, 0),),
        ("a",),
        (1.5,),
        (Ellipsis, Ellipsis),
        (True,),
        (0, False),
        (np.True_,),
    ],
)
def test_bad_selections(sel):
    with pytest.raises(SelectionError):
        normalize_selection(sel, (10, 10))


def test_selection_error_is_index_error():
    with pytest.raises(IndexError):
        normalize_selection((20,), (10,))


@settings(max_examples=300, deadline=None)
@given(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=7), st.data())
def test_flat_boxes_cover_range(shape, data):
    size = math.prod(shape)
    start = data.draw(st.integers(0, size))
    stop = data.draw(st.integers(start, size))
    arr = np.arange(size).reshape(shape)
    got = np.concatenate(
        [arr[box].reshape(-1) for _, box in flat_boxes(start, stop, shape)]
        or [np.empty(0, dtype=arr.dtype)]
    )
    np.testing.assert_array_equal(got, np.arange(start, stop))
    assert len(flat_boxes(start, stop, shape)) <= max(1, 2 * len(shape))
