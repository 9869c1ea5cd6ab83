"""Pure parts of the viewer: tile planning, level choice, view state, value mapping, messages."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfs.engine as engine
from zarrfs.viewer import messages, transforms
from zarrfs.viewer.tiles import (
    Geometry,
    Level,
    choose_level,
    choose_stride,
    level_factors,
    neighbour_selections,
    plan_plane,
    resample,
)
from zarrfs.viewer.view_state import ViewState


def assemble(data, geometry, tiles, y_axis, x_axis):
    """Build the buffer the way the viewer does: each tile's read copied to its out slices."""
    out = np.full((geometry.ny, geometry.nx), -1, dtype=np.int64)
    for tile in tiles:
        block = data[tile.selection]
        if y_axis > x_axis:
            block = block.T
        assert (out[tile.out_rows, tile.out_cols] == -1).all(), "tiles overlap"
        out[tile.out_rows, tile.out_cols] = block
    return out


@settings(max_examples=150, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 40), st.integers(1, 60), st.integers(1, 70)),
    chunks=st.tuples(st.integers(1, 9), st.integers(1, 17), st.integers(1, 19)),
    axes=st.sampled_from([(1, 2), (2, 1), (0, 2), (2, 0), (0, 1)]),
    view=st.tuples(st.floats(-10, 80), st.floats(1, 90), st.floats(-10, 80), st.floats(1, 90)),
    screen=st.tuples(st.integers(4, 50), st.integers(4, 50)),
    index=st.integers(0, 100),
)
def test_tiles_reassemble_the_strided_plane(shape, chunks, axes, view, screen, index):
    data = np.arange(np.prod(shape)).reshape(shape)
    y_axis, x_axis = axes
    other = ({0, 1, 2} - {y_axis, x_axis}).pop()
    indices = [0, 0, 0]
    indices[other] = index % shape[other]
    vy0, vh, vx0, vw = view
    geometry, tiles = plan_plane(
        shape=shape,
        chunks=chunks,
        y_axis=y_axis,
        x_axis=x_axis,
        indices=indices,
        view_rect=(vy0, vy0 + vh, vx0, vx0 + vw),
        screen=screen,
    )
    s = geometry.sy
    plane = np.moveaxis(data, (y_axis, x_axis), (0, 1))
    plane = plane[:, :, indices[other]] if plane.ndim == 3 else plane
    expected = plane[
        geometry.y0 : geometry.y0 + geometry.ny * s : s,
        geometry.x0 : geometry.x0 + geometry.nx * s : s,
    ]
    got = assemble(data, geometry, tiles, y_axis, x_axis)
    np.testing.assert_array_equal(got, expected)
    assert geometry.y0 % s == 0 and geometry.x0 % s == 0
    # each tile reads only the chunks it names
    for tile in tiles:
        rows, cols = tile.selection[y_axis], tile.selection[x_axis]
        touched = {
            (r // chunks[y_axis], c // chunks[x_axis])
            for r in range(rows.start, rows.stop, rows.step)
            for c in range(cols.start, cols.stop, cols.step)
        }
        assert touched <= set(tile.chunk_coords)


@settings(max_examples=100, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 7), st.integers(1, 60), st.integers(1, 70)),
    chunks=st.tuples(st.integers(1, 4), st.integers(1, 17), st.integers(1, 19)),
    view=st.tuples(st.floats(-10, 80), st.floats(1, 90), st.floats(-10, 80), st.floats(1, 90)),
    screen=st.tuples(st.integers(4, 50), st.integers(4, 50)),
    index=st.one_of(st.integers(0, 6), st.just(slice(None))),
)
def test_tiles_count_the_chunks_their_reads_touch(shape, chunks, view, screen, index):
    """The loader waits for as many chunk events per tile as the planner counted: every
    chunk (of every channel, for a composite's whole channel axis) its selection touches."""
    indices = [index if isinstance(index, slice) else index % shape[0], 0, 0]
    vy0, vh, vx0, vw = view
    _, tiles = plan_plane(
        shape=shape,
        chunks=chunks,
        y_axis=1,
        x_axis=2,
        indices=indices,
        view_rect=(vy0, vy0 + vh, vx0, vx0 + vw),
        screen=screen,
    )
    for tile in tiles:
        touched = [
            {i // c for i in range(*part.indices(n))} if isinstance(part, slice) else {part // c}
            for part, c, n in zip(tile.selection, chunks, shape, strict=True)
        ]
        assert tile.chunk_count == np.prod([len(t) for t in touched])


def test_tiles_are_ordered_from_the_centre_outward():
    _, tiles = plan_plane(
        shape=(1000, 1000),
        chunks=(100, 100),
        y_axis=0,
        x_axis=1,
        indices=[0, 0],
        view_rect=(0, 1000, 0, 1000),
        screen=(1000, 1000),
    )
    assert [t.priority for t in tiles] == sorted(t.priority for t in tiles)
    assert tiles[0].chunk_coords[0] in {(4, 4), (4, 5), (5, 4), (5, 5)}
    assert tiles[-1].chunk_coords[0] in {(0, 0), (0, 9), (9, 0), (9, 9)}


def test_stride_matches_the_screen_and_skips_chunks():
    assert choose_stride(10_000, 10_000, 1000, 1000) == 10
    assert choose_stride(500, 500, 1000, 1000) == 1
    geometry, tiles = plan_plane(
        shape=(10_000, 10_000),
        chunks=(100, 100),
        y_axis=0,
        x_axis=1,
        indices=[0, 0],
        view_rect=(0, 10_000, 0, 10_000),
        screen=(20, 20),
    )
    assert geometry.sy == 500 and (geometry.ny, geometry.nx) == (20, 20)
    chunks = {c for t in tiles for c in t.chunk_coords}
    assert len(chunks) <= 400  # 20 x 20 samples touch at most 400 of the 10_000 chunks


def test_choose_level_prefers_pixels_no_larger_than_the_screen():
    shapes = [(1, 4096, 4096), (1, 2048, 2048), (1, 1024, 1024), (1, 512, 512)]
    factors = level_factors(shapes)
    levels = [
        Level(str(i), s, (1, 256, 256), f)
        for i, (s, f) in enumerate(zip(shapes, factors, strict=True))
    ]
    assert choose_level(levels, 1, 2, 1.0) == 0
    assert choose_level(levels, 1, 2, 2.5) == 1
    assert choose_level(levels, 1, 2, 4.0) == 2
    assert choose_level(levels, 1, 2, 100.0) == 3
    assert choose_level(levels, 1, 2, 0.3) == 0


def test_resample_keeps_the_old_picture_as_placeholder():
    old = np.arange(16).reshape(4, 4)
    old_g = Geometry(y0=0, x0=0, sy=2, sx=2, ny=4, nx=4)
    new_g = Geometry(y0=2, x0=0, sy=1, sx=1, ny=4, nx=2)
    got = resample(old, old_g, new_g, -1)
    np.testing.assert_array_equal(got, [[4, 4], [4, 4], [8, 8], [8, 8]])
    far = resample(old, old_g, Geometry(y0=100, x0=100, sy=1, sx=1, ny=2, nx=2), -1)
    assert (far == -1).all()


def test_neighbour_planes_have_low_priority():
    _, tiles = plan_plane(
        shape=(5, 100, 100),
        chunks=(1, 50, 50),
        y_axis=1,
        x_axis=2,
        indices=[2, 0, 0],
        view_rect=(0, 100, 0, 100),
        screen=(100, 100),
    )
    items = neighbour_selections(tiles, 0, 2, 5)
    assert {plane for plane, _, _ in items} == {1, 3}
    assert min(p for _, _, p in items) > max(t.priority for t in tiles)
    assert neighbour_selections(tiles, 0, 4, 5)[0][0] == 3


def test_view_state_sliders_and_axes():
    state = ViewState(shape=(4, 5, 6, 7), dimension_names=("t", "", "y", "x"))
    assert (state.y_axis, state.x_axis) == (2, 3)
    assert state.slider_axes == [0, 1] and state.dimension_names[1] == "dim_1"
    assert state.set_index(0, 99) and state.indices[0] == 3
    state.slider_axis = 1
    assert state.step(1) and state.indices[1] == 1
    assert not state.step(-5) or state.indices[1] == 0
    state.set_display_axes(0, 3)
    assert state.slider_axes == [1, 2] and state.slider_axis in (1, 2)
    state.set_display_axes(3, 3)  # picking the same axis twice swaps instead
    assert state.y_axis != state.x_axis
    state2 = ViewState(shape=(4, 5, 6))
    state2.set_indices([3])
    assert state2.indices == [3, 0, 0]
    gen = state2.generation
    assert state2.bump() > gen


@pytest.mark.parametrize(
    "values, mode, expected",
    [
        (np.array([3 + 4j], np.complex64), "magnitude", [5.0]),
        (np.array([1j], np.complex128), "phase", [np.pi / 2]),
        (np.array([2 - 1j]), "imag", [-1.0]),
        (np.array([True, False]), "", [1, 0]),
        (np.array([1.5], np.float16), "", [1.5]),
    ],
)
def test_to_display(values, mode, expected):
    got = transforms.to_display(values, complex_mode=mode or "magnitude")
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got.dtype.kind in "fiu"


def test_datetime_and_structured_values():
    times = np.array(["2020-01-01", "NaT"], dtype="datetime64[D]")
    shown = transforms.to_display(times)
    assert shown[0] == times[0].astype(np.int64) and np.isnan(shown[1])
    assert transforms.format_value(times[0]) == "2020-01-01"
    record = np.zeros(3, dtype=[("a", "i4"), ("b", "f8"), ("s", "S3")])
    record["b"] = [1, 2, 3]
    assert transforms.numeric_fields(record.dtype) == ["a", "b"]
    np.testing.assert_array_equal(transforms.to_display(record, field_name="b"), [1, 2, 3])
    assert not transforms.is_imageable(record.dtype)
    assert transforms.is_imageable(record.dtype, "a")
    assert transforms.robust_levels(np.array([np.nan, 1.0, 2.0]))[0] >= 1.0


def test_messages_name_node_chunk_and_codec():
    exc = engine.ChunkDecodeError("bad zstd frame", path="data.zarr/img", key="c/0/1", codec="zstd")
    msg = messages.describe(exc, node="img", chunk=(0, 1))
    assert msg.title == "Corrupt chunk"
    assert "/img" in msg.text and "(0, 1)" in msg.text and "zstd" in msg.text
    codec = messages.describe(engine.UnknownCodecError("x", codec="fancy"), node="a")
    assert "fancy" in codec.text and codec.title == "Unsupported codec"
    store = messages.describe(engine.StoreError("connection refused"), node="a")
    assert store.title == "Storage error"
    wrapped = engine.StoreError("failed")
    wrapped.__cause__ = ConnectionResetError("peer reset")
    assert "peer reset" in messages.describe(wrapped).detail
    assert messages.is_cancellation(engine.ReadCancelled())
    assert messages.describe(ValueError("odd")).title == "Unexpected error"


def test_messages_place_an_error_by_its_own_fields():
    """Told nothing by the caller, a message names the node the error names, else its store
    as given: a store URL is never shown as a node ("node '/s3://...'")."""
    for url in ("s3://bucket/data.zarr", "http://127.0.0.1:8000/data.zarr", "/tmp/data.zarr"):
        failed = engine.StoreError(
            f"cannot read 'a/c/0' from {url}: refused", path=url, key="a/c/0", store_url=url
        )
        text = messages.describe(failed).text
        assert f"Reading '{url}' key 'a/c/0' failed" in text and "node" not in text, text
        chunk = engine.ChunkDecodeError(
            "bad frame", path=f"{url}/a", key="a/c/0", store_url=url, node_path="a"
        )
        assert "node '/a' key 'a/c/0'" in messages.describe(chunk).text
        missing = engine.NodeNotFoundError(
            f"no Zarr group or array at {url}", path=url, store_url=url, node_path=""
        )  # the node opened by its own URL: the store's root, named by its URL
        assert messages.describe(missing).text.startswith(f"Nothing at '{url}'")


def test_set_indices_counts_from_the_end_and_refuses_what_does_not_fit():
    state = ViewState(shape=(5, 6, 40, 50), dimension_names=("t", "z", "y", "x"))
    state.set_indices([-1, -2])
    assert state.indices == [4, 4, 0, 0]
    state.set_indices([1, 2, 30, 40])  # one per axis: the displayed ones are not sliders
    assert state.indices == [1, 2, 0, 0]
    for values, text in [
        ([5], "--index 5 is outside axis 't' of size 5"),
        ([0, -7], "--index -7 is outside axis 'z' of size 6"),
        ([0, 0, 0], "--index has 3 values"),
    ]:
        with pytest.raises(IndexError, match=text):
            state.set_indices(values)
        assert state.indices == [1, 2, 0, 0]  # unchanged


def test_automatic_levels_leave_out_pixels_not_loaded_and_missing_values():
    """``contrast.found_levels``: the histogram and the levels from one sample (every
    ``sample_step``-th row and column), of the pixels the mask says hold values, finite
    only; centred on request; the fallback when nothing is left."""
    from zarrfs.viewer import contrast

    rng = np.random.default_rng(5)
    plane = rng.normal(0.0, 1.0, size=(700, 500))
    plane[:100] = 1e6  # not loaded yet: the previous plane's values
    plane[650:] = np.nan
    step = contrast.sample_step(plane.shape)
    assert step == 3
    mask = np.ones_like(plane[::step, ::step], dtype=bool)
    mask[: -(-100 // step)] = False
    auto = contrast.AutoLevels(mask=mask, centre=None, fallback=(0.0, 1.0))
    (starts, counts), levels = contrast.found_levels(plane, auto)
    kept = plane[::step, ::step][mask]
    kept = kept[np.isfinite(kept)]
    assert levels == pytest.approx(tuple(np.percentile(kept, [0.5, 99.5])), rel=1e-12)
    assert counts.sum() == kept.size and starts[0] == kept.min()
    centred = contrast.AutoLevels(mask=mask, centre=0.5, fallback=(0.0, 1.0))
    low, high = contrast.found_levels(plane, centred)[1]
    assert (low + high) / 2 == pytest.approx(0.5) and high - 0.5 == pytest.approx(
        max(0.5 - levels[0], levels[1] - 0.5)
    )
    nothing = contrast.AutoLevels(mask=np.zeros_like(mask), centre=None, fallback=(2.0, 3.0))
    assert contrast.found_levels(plane, nothing) == ((None, None), (2.0, 3.0))
    assert contrast.found_levels(plane, None)[1] is None  # the user's levels: none found


def test_the_colour_bar_keeps_its_range_while_the_plane_fits_in_it():
    from zarrfs.viewer.contrast import keeps

    assert keeps((230.0, 295.0), (230.0, 290.0))  # a series' planes: the axis stays
    assert not keeps((230.0, 290.0), (230.0, 295.0))  # beyond it: refitted
    assert not keeps((0.0, 1000.0), (230.0, 295.0))  # far narrower: refitted
    assert not keeps(None, (230.0, 295.0))
