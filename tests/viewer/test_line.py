"""1-d arrays: read in the background through cancellable engine reads, min/max per bucket."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfs.engine as engine
from zarrfs.viewer.decimate import REFINE_LIMIT, bucket_minmax, envelope, plan_line


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 50_000),
    chunk=st.integers(1, 5000),
    start=st.integers(0, 49_999),
    buckets=st.integers(1, 300),
    seed=st.integers(0, 1000),
)
def test_blocks_combine_into_the_min_and_max_of_each_bucket(n, chunk, start, buckets, seed):
    start = min(start, n - 1)
    values = np.random.default_rng(seed).normal(size=n)
    plan = plan_line(start, n, chunk, buckets)
    lows, highs = np.full(plan.buckets, np.inf), np.full(plan.buckets, -np.inf)
    assert plan.blocks[0][0] == start and plan.blocks[-1][1] == n
    for begin, end in plan.blocks:
        assert begin == start or begin % chunk == 0  # chunk-aligned
        first, lo, hi = bucket_minmax(values[begin:end], begin, plan)
        lows[first : first + lo.size] = np.fmin(lows[first : first + lo.size], lo)
        highs[first : first + hi.size] = np.fmax(highs[first : first + hi.size], hi)
    for i in range(plan.buckets):
        part = values[start + i * plan.bucket : start + (i + 1) * plan.bucket]
        assert lows[i] == part.min() and highs[i] == part.max()
    x, _ = envelope(plan, lows, highs)
    assert x[0] == start and x[-1] < n


def test_huge_ranges_are_sampled_from_few_chunks_not_read_whole():
    plan = plan_line(0, 10**10, 10**6)
    assert plan.blocks == ()  # nothing read whole
    assert len(range(0, 10**10, plan.preview.step)) <= 256  # samples in at most 256 chunks
    zoomed = plan_line(5 * 10**9, 5 * 10**9 + REFINE_LIMIT, 10**6)
    assert zoomed.blocks and zoomed.blocks[0][0] == 5 * 10**9


def spiky(path, n=3_000_000, chunk=100_000):
    values = np.zeros(n, dtype=np.float32)
    values[1_234_567] = 99.0
    values[2_000_001] = -50.0
    arr = zarr.create_array(path, shape=(n,), chunks=(chunk,), dtype="float32")
    arr[:] = values
    return values


def test_a_single_spike_survives_decimation(window, idle, tmp_path):
    values = spiky(tmp_path / "spiky.zarr")
    window.open_store(str(tmp_path / "spiky.zarr"), {})
    idle(window, 60)
    view = window.line
    assert window.stack.currentWidget() is view
    plan = view.plan
    assert plan.bucket > 1 and plan.preview.step > 1
    assert 1_234_567 % plan.preview.step != 0  # a strided sample would miss it
    assert view.data.size <= 2 * 2048 + 2
    assert view.data.max() == 99.0 and view.data.min() == -50.0
    x, y = view.curve.getData()
    spike_x = x[np.argmax(y)]
    assert spike_x <= 1_234_567 < spike_x + plan.bucket
    assert np.count_nonzero(view.data) == 2  # every other stroke is exactly 0
    assert values.max() == 99.0
    # zoomed in, the visible range is read again at a finer resolution
    view.plot.setXRange(1_234_000, 1_235_000, padding=0)
    idle(window, 60)
    assert view.plan.bucket == 1 and view.plan.start <= 1_234_000
    x, y = view.curve.getData()
    np.testing.assert_array_equal(y, values[view.plan.start : view.plan.stop])


def test_selecting_another_node_cancels_the_line_read(window, idle, qtbot, tmp_path, http_server):
    root = zarr.open_group(tmp_path / "two.zarr", mode="w")
    spiky(tmp_path / "two.zarr" / "long")
    root.create_array("other", shape=(4, 4), chunks=(4, 4), dtype="i2")[:] = 3
    server = http_server(tmp_path / "two.zarr", latency=0.5)
    other = engine.open(server.url)["other"]
    window.open_store(server.url, {}, path="long")
    qtbot.waitUntil(lambda: bool(window.line.futures), timeout=20_000)
    pending = [f for f in window.line.futures if not f.done()]
    assert pending
    window.show_node(other)  # what selecting it in the tree does
    assert all(f.cancelled() for f in pending), [(f.cancelled(), f.done()) for f in pending]
    idle(window, 60)
    assert window.stack.currentWidget() is window.image
    np.testing.assert_array_equal(window.image.image_item.image, np.full((4, 4), 3))


def test_the_line_is_ticked_in_its_coordinate(window, idle, tmp_path):
    """A series xarray wrote along time, and a profile along a 0..360 longitude: the x axis
    reads dates and degrees, each tick over the value of its element."""
    import xarray as xr

    days = np.arange(40) * 7
    lon = np.arange(0.0, 360.0, 2.5)
    ds = xr.Dataset(
        {
            "index": ("time", np.sin(days / 30.0)),
            "profile": ("lon", np.cos(np.radians(lon))),
        },
        coords={
            "time": ("time", days, {"units": "days since 2001-01-01"}),
            "lon": ("lon", lon, {"units": "degrees_east"}),
        },
    )
    xr.decode_cf(ds).to_zarr(tmp_path / "s.zarr", zarr_format=3, consolidated=False)
    window.open_store(str(tmp_path / "s.zarr"), {}, path="index")
    idle(window)
    view = window.line
    assert window.stack.currentWidget() is view and view.axis.coordinate is not None
    assert view.axis.labelText == "time"
    ticks = view.axis._ticks(0, 39, 500)
    assert len(ticks) >= 3
    for x, text in ticks:  # drawn where its date falls between the values (value i at x = i)
        number = np.interp(x, np.arange(days.size), days)
        assert number == pytest.approx(round(number)) and text.startswith("2001-")
        date = np.datetime64("2001-01-01") + np.timedelta64(round(number), "D")
        assert str(date).startswith(text)
    window.open_store(str(tmp_path / "s.zarr"), {}, path="profile")
    idle(window)
    texts = [text for _, text in view.axis._ticks(0, lon.size - 1, 200)]
    assert texts[:4] == ["0°", "90°E", "180°", "90°W"]
