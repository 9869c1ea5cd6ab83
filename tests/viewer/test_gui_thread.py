"""The GUI thread does no whole-buffer work (issue 33): a CF variable's decoding, the
composite's blend, the placeholder's resampling all run on workers, and what they draw still
equals what xarray decodes and a numpy blend of the data ome-zarr-py was given."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.cf_stores import write_xarray
from tests.viewer.test_composite import COLORS, WINDOWS, assert_close, numpy_blend

xr = pytest.importorskip("xarray")


@pytest.fixture
def threads_of(monkeypatch):
    """``threads_of(owner, name)``: record the thread of every call of ``owner.name`` over
    more than one value (a type is found by decoding a single zero on the GUI thread)."""
    seen: dict[str, list[str]] = {}

    def spy(owner, name: str) -> list[str]:
        calls = seen.setdefault(f"{owner.__name__}.{name}", [])
        original = getattr(owner, name)

        def recorded(*args, **kwargs):
            sizes = [np.size(a) for a in args if isinstance(a, np.ndarray)]
            if max(sizes, default=2) > 1:
                calls.append(threading.current_thread().name)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)
        return calls

    return spy


def on_gui(calls: list[str]) -> list[str]:
    return [name for name in calls if name == threading.main_thread().name]


def test_cf_decoding_and_resampling_run_on_workers(window, idle, tmp_path, threads_of):
    from zarrfs.viewer import cf_display, landing

    url = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    decoded = threads_of(cf_display.CFValues, "to_display")
    resampled = threads_of(landing, "resample")
    window.open_store(str(url), {}, path="tas", indices=[3])
    idle(window)
    view = window.image
    expected = xr.open_zarr(url)["tas"].values
    np.testing.assert_array_equal(view.image_item.image, expected[3])
    for _ in range(3):  # slider steps: the same buffers, new values
        view.step(1)
        idle(window)
    np.testing.assert_array_equal(view.image_item.image, expected[6])
    decoded_steps = len(decoded)
    view.view_box.scaleBy((0.5, 0.5))  # a new geometry: the old picture resampled first
    view.refresh()
    idle(window)
    assert decoded_steps > 0 and len(decoded) > decoded_steps and resampled
    assert not on_gui(decoded) and not on_gui(resampled)  # the decode is safe in on_chunk
    g = view.controller.request.geometry
    shown = expected[6][g.y0 : g.y0 + g.ny, g.x0 : g.x0 + g.nx]
    np.testing.assert_array_equal(view.image_item.image, shown)


def test_composite_blends_on_workers(window, idle, ome_images, threads_of):
    from zarrfs.viewer.channels import ChannelState

    written = ome_images("ome-zarr-py", "0.4")
    blended = threads_of(ChannelState, "render")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    data = written.data
    assert_close(view.composite_item, numpy_blend(data[:2, 2], COLORS[:2], WINDOWS[:2]))
    view.step(1)  # z 3
    idle(window)
    assert_close(view.composite_item, numpy_blend(data[:2, 3], COLORS[:2], WINDOWS[:2]))
    view.channel_panel.set_window(1, 500.0, 1500.0)  # the whole picture blended again
    idle(window)
    expected = numpy_blend(data[:2, 3], COLORS[:2], [WINDOWS[0], (500.0, 1500.0)])
    assert_close(view.composite_item, expected)
    assert blended and not on_gui(blended)


def test_the_colour_bar_histogram_is_made_on_the_worker(window, idle, tmp_path, threads_of):
    """Slider steps of a CF plane: the histogram beside it is made with its picture on the
    worker (the GUI thread never histograms the plane), and is the histogram of the plane
    on screen: that of the sample xarray's decoded values give."""
    from zarrfs.viewer.contrast import sample_histogram

    url = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    histograms = threads_of(np, "histogram")
    window.open_store(str(url), {}, path="tas", indices=[3])
    idle(window)
    view = window.image
    expected = xr.open_zarr(url)["tas"].values
    for _ in range(3):
        view.step(1)
        idle(window)
    assert histograms and not on_gui(histograms)
    np.testing.assert_array_equal(view.image_item.image, expected[6])
    starts, counts = sample_histogram(expected[6])
    plot = view.histogram.item.plot
    np.testing.assert_array_equal(plot.xData, starts)
    np.testing.assert_array_equal(plot.yData, counts)
    low, high = view.controller.current_levels
    assert view.histogram.item.getLevels() == pytest.approx((low, high))


def test_automatic_levels_are_found_on_the_worker(window, idle, tmp_path, threads_of):
    """Automatic contrast: the levels are the 0.5th and 99.5th percentiles of the finite
    values of the plane on screen (a sample of about 64 Ki of them: every third row and
    column of this 600 x 700 plane), found with the picture on the worker, never on the GUI
    thread; the picture and the colour bar use them."""
    import math

    import zarr

    rng = np.random.default_rng(33)
    data = rng.normal(280.0, 12.0, size=(2, 600, 700)).astype(np.float32)
    data[0, :40] = np.nan  # missing values do not count
    data[0, 100, 100] = np.inf  # nor do infinities
    data[1] = data[1] * 3 - 500  # another plane, other levels
    arr = zarr.create_array(
        tmp_path / "p.zarr",
        shape=data.shape,
        chunks=(1, 128, 128),
        dtype="float32",
        fill_value=np.nan,
    )
    arr[:] = data
    percentile = np.percentile  # the test's own, not spied on
    percentiles = threads_of(np, "percentile")
    window.open_store(str(tmp_path / "p.zarr"), {})
    idle(window)
    view = window.image
    for delta in (0, 1, -1):  # the first plane, a step to the next and back
        view.step(delta)
        idle(window)
        t = view.state.indices[0]
        g = view.controller.request.geometry
        s = int(g.sy)
        shown = data[t, g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
        np.testing.assert_array_equal(view.image_item.image, shown)
        step = max(1, math.ceil(math.sqrt(shown.size / 65_536)))
        sample = shown[::step, ::step].astype(np.float64)
        expected = percentile(sample[np.isfinite(sample)], [0.5, 99.5])
        assert view.controller.current_levels == pytest.approx(tuple(expected), rel=1e-12)
        assert view.image_item.getLevels() == pytest.approx(tuple(expected), rel=1e-12)
        assert view.histogram.item.getLevels() == pytest.approx(tuple(expected), rel=1e-12)
        assert view.shown().levels == pytest.approx(tuple(expected), rel=1e-12)
    assert percentiles and not on_gui(percentiles)
