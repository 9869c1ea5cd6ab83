"""The picture on screen is coloured on a worker (issue 33), and is still the colour map applied
to the true values: after slider steps, contrast and colour map changes, and zooms; missing
values in the missing colour; a slider step shows one plane or the next, never tiles of both;
a picture asked for before a later one is never shown after it.

The oracles: xarray's decoding, zarr-python's stored values, and the colour of a value ``v``
with levels ``(low, high)`` and a table of 256 colours, ``lut[rint(clip((v - low) / (high -
low), 0, 1) * 255)]`` in float64 (the export's mapping).
"""

from __future__ import annotations

import concurrent.futures
import threading

import numpy as np
import pytest
import zarr
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor

from tests.cf_stores import write_xarray

xr = pytest.importorskip("xarray")

MAGENTA = (255, 0, 255)


def oracle(values: np.ndarray, levels, lut: np.ndarray) -> np.ndarray:
    """(rows, cols, 3) colours of ``values``; NaN: -1 (no colour of the map)."""
    low, high = (float(v) for v in levels)
    with np.errstate(invalid="ignore"):
        index = np.rint(np.clip((values.astype(np.float64) - low) / (high - low), 0, 1) * 255)
    missing = np.isnan(index)
    colours = lut[np.where(missing, 0, index).astype(int), :3].astype(int)
    colours[missing] = -1
    return colours


def argb_rgb(words: np.ndarray) -> np.ndarray:
    words = words.astype(np.uint32)
    return np.stack([(words >> s) & 255 for s in (16, 8, 0)], axis=-1).astype(int)


@pytest.mark.parametrize("dtype", ["f4", "f8", "u2", "i8"])
def test_colouring_is_the_maps_colour_of_each_value(dtype):
    from zarrfs.viewer import colouring

    rng = np.random.default_rng(7)
    values = (rng.random((300, 500)) * 1000 - 200).astype(dtype)
    if values.dtype.kind == "f":
        values[10:40, 100:130] = np.nan
        values[0, 0], values[0, 1] = np.inf, -np.inf
    lut = rng.integers(0, 256, size=(256, 3), dtype=np.uint8)
    table = colouring.argb_table(lut)
    for levels in [(0.0, 600.0), (600.0, 0.0), (37.0, 37.0), (-1e9, 1e9)]:
        words = colouring.picture(values, levels, table)
        effective = levels if levels[0] != levels[1] else (levels[0], levels[0] + 1)
        expected = oracle(values, effective, lut)
        missing = expected[..., 0] < 0
        assert (words[missing] == 0).all()  # transparent
        assert ((words[~missing] >> 24) == 255).all()  # opaque
        np.testing.assert_array_equal(argb_rgb(words)[~missing], expected[~missing])


def screen_colours(view, rows, cols) -> np.ndarray:
    """The colour on screen at the centre of each element (rows x cols, level-0 indices)."""
    picture = view.graphics.viewport().grab().toImage()
    ratio = picture.devicePixelRatio()
    out = np.zeros((len(rows), len(cols), 3), int)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            at = view.view_box.mapViewToDevice(QPointF(c + 0.5, r + 0.5))
            out[i, j] = picture.pixelColor(int(at.x() * ratio), int(at.y() * ratio)).getRgb()[:3]
    return out


def assert_on_screen(view, values: np.ndarray, rows, cols) -> None:
    """The elements ``rows`` x ``cols`` of the plane ``values`` are drawn in the colour map's
    colours with the view's levels, missing ones in the missing colour."""
    shown = view.shown()
    expected = oracle(values[np.ix_(rows, cols)], shown.levels, shown.lut)
    missing = expected[..., 0] < 0
    expected[missing] = MAGENTA
    np.testing.assert_array_equal(screen_colours(view, rows, cols), expected)
    assert missing.any() == bool(np.isnan(values[np.ix_(rows, cols)]).any())


def test_the_screen_is_the_colour_map_of_the_true_values(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    tas = xr.open_zarr(url)["tas"].values  # (time, lat, lon), NaN where filled
    window.coastlines_action.setChecked(False)  # a coast would cross the pixels looked at
    window.open_store(str(url), {}, path="tas", indices=[3])
    idle(window)
    view = window.image
    view.missing.set_colour("magenta")
    view.view_box.invertY(True)  # rows down the screen in index order (north up is tested apart)
    idle(window)
    rows, cols = range(tas.shape[1]), range(tas.shape[2])
    assert_on_screen(view, tas[3], rows, cols)
    for _ in range(4):  # slider steps: new values, new automatic levels
        view.step(1)
        idle(window)
    assert view.state.indices[0] == 7
    assert_on_screen(view, tas[7], rows, cols)
    view.set_levels(270.0, 280.0)  # manual contrast
    idle(window)
    assert view.shown().levels == (270.0, 280.0)
    assert_on_screen(view, tas[7], rows, cols)
    view.colormap_combo.setCurrentText("magma")
    idle(window)
    assert_on_screen(view, tas[7], rows, cols)
    view.auto_levels.setChecked(True)
    idle(window)
    assert view.shown().levels != (270.0, 280.0)
    assert_on_screen(view, tas[7], rows, cols)
    view.view_box.setRange(xRange=(4, 14), yRange=(2, 12), padding=0)  # zoomed in
    idle(window)
    assert_on_screen(view, tas[7], range(3, 11), range(5, 13))


def open_random_plane(window, path, side: int, chunk: int, seed: int, missing) -> np.ndarray:
    """A ``side`` x ``side`` float32 plane of random values in 0..40, NaN at ``missing`` (a
    block), written by zarr-python and opened in ``window``; its values."""
    data = np.random.default_rng(seed).random((side, side), dtype=np.float32) * 40
    data[missing] = np.nan
    arr = zarr.create_array(path, shape=data.shape, chunks=(chunk, chunk), dtype="f4")
    arr[:] = data
    window.open_store(str(path), {})
    return data


def test_the_colour_bar_shows_the_histogram_of_the_plane(window, idle, tmp_path):
    """The colour bar's histogram lies inside its view, and holds the plane's counts: the
    bar's counts axis once showed 0..max where the curve (turned a quarter) lies at -max..0,
    so the bar showed no histogram at all."""
    data = open_random_plane(window, tmp_path / "h.zarr", 256, 64, 5, np.s_[0:1, 0:1])
    idle(window)
    bar = window.image.histogram.item
    starts, counts = bar.plot.xData, bar.plot.yData
    assert counts is not None and counts.sum() > 0.9 * data.size  # every value sampled
    finite = data[np.isfinite(data)]
    assert starts[0] == pytest.approx(finite.min()) and starts[-1] < finite.max()
    (left, right), (bottom, top) = bar.vb.viewRange()
    curve = bar.plot.mapRectToParent(bar.plot.boundingRect())  # in the bar's view
    assert left <= curve.left() and curve.right() <= right  # every count shown
    assert curve.width() > 0.5 * (right - left)  # and filling the bar's width
    assert bottom <= curve.top() and curve.bottom() <= top


def test_zooming_in_shows_every_element(window, idle, tmp_path):
    """A plane larger than the screen is drawn from every n-th element; zoomed in, from each."""
    missing = np.s_[1500:1530, 1500:1512]
    data = open_random_plane(window, tmp_path / "big.zarr", 3000, 500, 11, missing)
    idle(window, 60)
    view = window.image
    view.missing.set_colour("magenta")
    assert view.controller.request.geometry.sy > 1  # zoomed out: strided
    view.view_box.setRange(xRange=(1490, 1530), yRange=(1490, 1530), padding=0)
    idle(window, 60)
    assert view.controller.request.geometry.sy == 1
    assert_on_screen(view, data, range(1492, 1528, 3), range(1492, 1528))


def test_a_new_view_that_lands_whole_before_it_is_drawn_is_drawn_where_it_lies(
    window, idle, tmp_path, monkeypatch
):
    """On a busy machine the GUI thread can hear of a new view only once all of it has landed
    (every chunk and the old picture resampled as its placeholder), and draw it once: its
    picture is drawn where the new values lie. (It was asked for before the item was moved
    there, and stayed where the old view lay: the zoomed-in area in the missing colour while
    the viewer was idle.) The hook holds the placeholder until every chunk has landed and
    the GUI thread until both have: what a starved GUI thread sees."""
    from zarrfs.viewer import landing, plane_controller

    data = open_random_plane(window, tmp_path / "z.zarr", 1200, 200, 12, np.s_[600:610, 600:606])
    idle(window)
    view = window.image
    view.missing.set_colour("magenta")
    assert view.controller.request.geometry.sy > 1
    landed = threading.Event()
    placeholder = landing.Landing.placeholder

    def after_the_chunks(self, *args):
        landed.wait(30)
        placeholder(self, *args)

    monkeypatch.setattr(landing.Landing, "placeholder", after_the_chunks)
    view.view_box.setRange(xRange=(590, 630), yRange=(590, 630), padding=0)
    view._view_timer.stop()
    view.refresh(force=False)  # the new view's request, as the timer would (no event in between)
    reads = [future for future in view.controller.loader.futures if future is not None]
    assert reads and view.controller.request.geometry.sy == 1
    for read in reads:
        read.result(timeout=30)  # every chunk landed and handed back
    landed.set()
    plane_controller._buffer_jobs().submit(lambda: None).result(timeout=30)  # after it, in order
    idle(window)
    assert_on_screen(view, data, range(592, 628, 3), range(592, 628))


def plane(t: int) -> np.ndarray:
    values = np.full((64, 64), 10.0 * (t + 1), np.float32)
    values[:, 40:] = np.nan  # missing on every plane
    return values + np.arange(64, dtype=np.float32)[:, None] / 10


def test_a_slider_step_shows_one_plane_or_the_next(
    window, idle, tmp_path, http_server, monkeypatch
):
    """Every picture coloured after a step is the whole old plane or the whole new one, though
    one chunk of the new plane comes late (it would otherwise be drawn torn: old and new tiles
    side by side)."""
    from zarrfs.viewer import colouring, plane_controller

    monkeypatch.setattr(plane_controller, "HOLD", 600.0)  # whatever the machine's load
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    stack = root.create_array("stack", shape=(3, 64, 64), chunks=(1, 32, 32), dtype="f4")
    stack[:] = np.stack([plane(t) for t in range(3)])
    server = http_server(tmp_path / "s.zarr")
    server.faults.stall(1.0, pattern=r"^stack/c/1/0/0$")  # plane 1's first chunk comes late
    window.open_store(server.url, {}, path="stack")
    idle(window)
    view = window.image
    np.testing.assert_array_equal(view.image_item.image, plane(0))
    pictures = []
    picture = colouring.picture

    def recorded(values, levels, table):
        pictures.append(values.copy())
        return picture(values, levels, table)

    monkeypatch.setattr(colouring, "picture", recorded)
    view.step(1)
    idle(window)
    np.testing.assert_array_equal(view.image_item.image, plane(1))
    assert pictures
    for values in pictures:
        assert any(np.array_equal(values, plane(t), equal_nan=True) for t in (0, 1))
    assert np.array_equal(pictures[-1], plane(1), equal_nan=True)


class ByHand:
    """A pool whose jobs run when the test says."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn):
        future = concurrent.futures.Future()
        self.jobs.append((future, fn))
        return future

    def run_next(self):
        future, fn = self.jobs.pop(0)
        future.set_running_or_notify_cancel()
        future.set_result(fn())


def test_a_picture_overtaken_by_a_later_one_is_dropped(qtbot, qapp):
    import pyqtgraph as pg

    from zarrfs.viewer.coloured_image import ColouredImageItem

    pool = ByHand()
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    box = widget.addViewBox()
    item = ColouredImageItem(axisOrder="row-major", jobs=lambda: pool)
    box.addItem(item)
    widget.resize(200, 200)
    widget.show()
    first, second = np.zeros((4, 4), np.float32), np.ones((4, 4), np.float32)
    item.setImage(first, autoLevels=False, levels=(0.0, 1.0))
    widget.grab()  # painted: the first picture asked for
    assert len(pool.jobs) == 1 and item.busy
    item.setImage(second, autoLevels=False, levels=(0.0, 1.0))
    widget.grab()  # a second one waits for the first
    assert len(pool.jobs) == 1
    item.settle()  # the second now, on this thread (a PNG of the view)
    white = QColor(255, 255, 255).rgb()
    assert item.qimage.pixel(1, 1) == white
    pool.run_next()  # the first comes back late: dropped
    qtbot.waitUntil(lambda: not item._colouring)
    assert item.qimage.pixel(1, 1) == white


def test_values_moved_after_their_picture_was_asked_for_are_drawn_where_they_lie(qtbot, qapp):
    """A picture asked for, then the item moved (``setRect``: a new view's values placed after
    they were handed over): once it comes back, another is made for where the values lie."""
    import pyqtgraph as pg
    from PySide6.QtCore import QRectF

    from zarrfs.viewer.coloured_image import ColouredImageItem

    pool = ByHand()
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    box = widget.addViewBox()
    box.setRange(xRange=(0, 100), yRange=(0, 100), padding=0)
    item = ColouredImageItem(axisOrder="row-major", jobs=lambda: pool)
    box.addItem(item)
    widget.resize(200, 200)
    widget.show()
    item.setImage(np.ones((4, 4), np.float32), autoLevels=False, levels=(0.0, 1.0))
    item.colour()  # asked for where the values lie now: (0, 0) to (4, 4)
    assert len(pool.jobs) == 1
    item.setRect(QRectF(50, 50, 40, 40))
    item.colour()  # nothing new to ask for while that one is being made
    assert len(pool.jobs) == 1
    pool.run_next()
    qtbot.waitUntil(lambda: len(pool.jobs) == 1)  # back, drawn where it was asked: another
    pool.run_next()
    qtbot.waitUntil(lambda: not item.busy)
    assert item.mapRectFromParent(item._shown[1]) == QRectF(0, 0, 4, 4)  # the values' own
    picture = widget.grab().toImage()
    white = QColor(255, 255, 255).rgb()
    at = box.mapViewToDevice(QPointF(70, 70))
    assert picture.pixel(int(at.x()), int(at.y())) == white
    away = box.mapViewToDevice(QPointF(2, 2))
    assert picture.pixel(int(away.x()), int(away.y())) != white


def test_the_colour_bar_keeps_round_ends_while_the_values_move_a_little():
    from zarrfs.viewer.contrast import round_range

    assert round_range(261.3, 289.7) == round_range(262.0, 288.9) == (260.0, 290.0)
    assert round_range(0.0013, 0.0091) == pytest.approx((0.001, 0.0095))
    low, high = round_range(5.0, 5.0)  # a constant plane: still a range around it
    assert low < 5.0 < high


def test_a_picture_of_values_cleared_meanwhile_never_shows(qtbot, qapp):
    import pyqtgraph as pg

    from zarrfs.viewer.coloured_image import ColouredImageItem

    pool = ByHand()
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    item = ColouredImageItem(axisOrder="row-major", jobs=lambda: pool)
    widget.addViewBox().addItem(item)
    widget.show()
    item.setImage(np.ones((4, 4), np.float32), autoLevels=False, levels=(0.0, 1.0))
    widget.grab()
    assert len(pool.jobs) == 1
    item.clear()  # another node is opened: these values are gone
    pool.run_next()
    qtbot.waitUntil(lambda: not item.busy)
    assert item._shown is None and item.qimage is None


def test_the_colour_bar_of_extreme_values_is_left_to_pyqtgraph():
    from zarrfs.viewer.contrast import round_range

    assert round_range(-1.7e308, 1.7e308) == (-1.7e308, 1.7e308)  # rounding would overflow
    low, high = round_range(0.0, 1.7e308)
    assert np.isfinite(high - low)
