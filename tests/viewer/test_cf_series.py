"""Click a point of the image, see its series: the values equal xarray's decoded ``tas[:, i, j]``
(fill as NaN), the x axis is labelled with xarray's dates (every CF calendar), the y axis with
the long name and units; over HTTP only the chunks under the point are requested; a new click
cancels the reads of the last one; long axes are read in bounded pieces."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

import zarrfs.engine as engine
from tests.cf_stores import write_xarray

xr = pytest.importorskip("xarray")


def _date_texts(values) -> list[str]:
    """xarray's decoded times as text, written without the viewer's help."""
    if np.asarray(values).dtype.kind == "M":
        return list(np.datetime_as_string(values, unit="D"))
    return [v.strftime("%Y-%m-%d") for v in values]


def _degrees(value: float, hemispheres: str) -> str:
    """A latitude or longitude as the readout writes it: "36.85294°S", "120°E"."""
    value = value - 360 if value > 180 else value
    return f"{abs(value):.7g}°{hemispheres[0] if value > 0 else hemispheres[1]}"


def click_pixel(qtbot, view, row: int, col: int, modifier=Qt.KeyboardModifier.ShiftModifier):
    """A real mouse click on the centre of image pixel (row, col)."""
    scene = view.view_box.mapViewToScene(QPointF(col + 0.5, row + 0.5))
    pos = view.graphics.mapFromScene(scene)
    qtbot.mouseClick(view.graphics.viewport(), Qt.MouseButton.LeftButton, modifier, pos)


def _open(window, idle, url, node="tas"):
    window.open_store(url, {}, path=node)
    idle(window)
    assert window.image.state is not None


@pytest.mark.parametrize(
    "zarr_format,calendar",
    [(2, "standard"), (3, "standard"), (2, "noleap"), (3, "360_day")],
)
def test_series_at_a_clicked_point_equals_xarray(
    window, idle, qtbot, tmp_path, zarr_format, calendar
):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=zarr_format, calendar=calendar)
    coder = xr.coders.CFDatetimeCoder(use_cftime=calendar != "standard")
    ds = xr.open_zarr(path, decode_times=coder)
    _open(window, idle, str(path))
    view, series = window.image, window.series
    assert not window.series_dock.isVisible()
    click_pixel(qtbot, view, 5, 6, Qt.KeyboardModifier.NoModifier)  # the dock is closed
    assert series.plan is None and not window.series_dock.isVisible()
    for row, col in ((5, 6), (1, 2)):  # (1, 2) is in the NaN patch: all gaps
        click_pixel(qtbot, view, row, col)
        assert window.series_dock.isVisible()
        idle(window)
        assert series.plan.axis == 0 and series.plan.index[1:] == (row, col)
        expected = ds.tas.values[:, row, col]
        assert series.y.shape == expected.shape
        assert np.array_equal(series.y, expected, equal_nan=True)
        assert np.isnan(series.y).all() == ((row, col) == (1, 2))
        x, y = series.curve.getData()
        assert np.array_equal(y, expected, equal_nan=True)
        dates = _date_texts(ds.time.values)
        assert [series.x_text(k) for k in range(len(dates))] == dates
        vb = series.plot.getViewBox()  # the readout under the cursor, at point 5
        series._mouse_moved(vb.mapViewToScene(QPointF(series.x[5], np.mean(vb.viewRange()[1]))))
        value = ds.tas.values[5, row, col]
        assert (
            series.readout.text() == f"{dates[5]}: {'NaN' if value != value else f'{value:.6g}'} K"
        )
        lat, lon = ds.lat.values[row], ds.lon.values[col]
        assert (
            f"lat={_degrees(lat, 'NS')}" in series.status.text()
            and f"lon={_degrees(lon, 'EW')}" in series.status.text()
        )
    ((_, ticks),) = series.bottom.tickValues(series.x[0], series.x[-1], 600)
    texts = series.bottom.tickStrings(ticks, 1, 1)
    oracle = xr.coding.times.decode_cf_datetime(
        np.array(ticks), "days since 2000-01-01", calendar, use_cftime=calendar != "standard"
    )  # the dates xarray gives the tick positions: first days of months, as the text says
    assert texts == ["2000-01", "2000-02", "2000-03"][: len(texts)] and len(texts) >= 2
    assert [d[:7] for d in _date_texts(oracle)] == texts
    assert all(d.endswith("-01") for d in _date_texts(oracle))
    assert series.plot.getAxis("left").labelText == "air temperature [K]"
    assert series.plot.getAxis("bottom").labelText.startswith("time")
    assert series.axis_combo.currentText().startswith("time")


def test_only_the_chunks_under_the_point_over_http(window, idle, qtbot, tmp_path, http_server):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=2)  # tas chunks (7, 18, 9)
    server = http_server(str(path), latency=0.05)
    _open(window, idle, server.url)
    tas = engine.open(server.url)["tas"]
    engine.clear_caches()
    server.stats.reset()
    click_pixel(qtbot, window.image, 3, 12)
    idle(window)
    expected = {tas.chunk_key(c) for c in tas.chunks_in((slice(None), 3, 12))}
    assert expected == {f"tas/{t}.0.1" for t in range(4)}
    got = ["tas/" + r.path.rsplit("/", 1)[-1] for r in server.stats.records(r"/tas/")]
    assert sorted(got) == sorted(expected)  # each once, nothing else of tas
    assert server.stats.round_trips(r"/tas/") == 1
    ds = xr.open_zarr(path)
    assert np.array_equal(window.series.y, ds.tas.values[:, 3, 12], equal_nan=True)


def test_a_new_click_cancels_the_last_one(window, idle, qtbot, tmp_path, http_server):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    server = http_server(str(path))
    _open(window, idle, server.url)
    click_pixel(qtbot, window.image, 0, 0)  # resolves the coordinates once
    idle(window)
    engine.clear_caches()
    server.faults.stall(30, pattern=r"tas/c/")
    click_pixel(qtbot, window.image, 4, 4)
    qtbot.waitUntil(lambda: bool(window.series.futures), timeout=10_000)
    stalled = list(window.series.futures)
    assert "Reading tas" in window.series.status.text()
    server.faults.clear()
    click_pixel(qtbot, window.image, 7, 8)
    assert all(f.cancelled() or f.done() for f in stalled)
    idle(window, 60)
    ds = xr.open_zarr(path)
    assert window.series.plan.index[1:] == (7, 8)
    assert np.array_equal(window.series.y, ds.tas.values[:, 7, 8], equal_nan=True)


def test_a_failed_read_is_shown_not_hung(window, idle, qtbot, tmp_path, http_server):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    server = http_server(str(path))
    _open(window, idle, server.url)
    engine.clear_caches()
    server.faults.status(500, pattern=r"tas/[0-9]")
    click_pixel(qtbot, window.image, 2, 2)
    idle(window, 60)
    text = window.series.status.text()
    assert text.startswith("tas at lat=") and "500" in text  # not "Reading tas…"
    assert any("500" in m for m in window.message_bar.messages())
    assert np.isnan(window.series.y).all()
    server.faults.clear()


def test_long_axes_are_read_in_bounded_pieces(
    window, idle, qtbot, tmp_path, monkeypatch, http_server
):
    """10,000 steps with pieces of 3 chunks over HTTP: the series is drawn as pieces land (some
    drawings show part of it), and equals xarray's; past the cap, the window around the slider
    is read, with a note."""
    from zarrfs.viewer import series as series_module

    steps = 10_000
    ds = xr.Dataset(
        {"v": (("time", "y", "x"), np.arange(steps * 4.0).reshape(steps, 2, 2))},
        coords={"time": ("time", np.arange(steps), {"units": "hours since 1990-01-01"})},
    )
    ds.to_zarr(tmp_path / "long.zarr", encoding={"v": {"chunks": (500, 2, 2)}}, zarr_format=2)
    monkeypatch.setattr(series_module, "PIECE_BYTES", 3 * 500 * 4 * 8)
    server = http_server(str(tmp_path / "long.zarr"), latency=0.1)
    _open(window, idle, server.url, "v")
    drawn = []

    def finite(curve) -> None:
        y = curve.getData()[1]
        drawn.append(0 if y is None else int(np.isfinite(y).sum()))

    window.series.curve.sigPlotChanged.connect(finite)
    click_pixel(qtbot, window.image, 1, 0)
    idle(window)
    assert any(0 < count < steps for count in drawn) and drawn[-1] == steps, drawn
    plan = window.series.plan
    assert len(plan.pieces) == 7 and plan.pieces[0] == (0, 1500) and plan.pieces[-1][1] == steps
    assert np.array_equal(window.series.y, ds.v.values[:, 1, 0])
    assert window.series.x_text(9999) == "1991-02-21T15:00:00"  # hour 9999
    ((_, ticks),) = window.series.bottom.tickValues(0, steps - 1, 600)
    assert window.series.bottom.tickStrings(ticks, 1, 1) == [
        "1990-01",
        "1990-04",
        "1990-07",
        "1990-10",
        "1991-01",
    ]  # quarters
    starts = xr.coding.times.decode_cf_datetime(np.array(ticks), "hours since 1990-01-01")
    assert list(np.datetime_as_string(starts, unit="D")) == [
        "1990-01-01",
        "1990-04-01",
        "1990-07-01",
        "1990-10-01",
        "1991-01-01",
    ]

    monkeypatch.setattr(series_module, "MAX_STEPS", 1000)
    window.image._index_changed(0, 7000)
    click_pixel(qtbot, window.image, 0, 1)
    idle(window)
    plan = window.series.plan
    assert (plan.start, plan.stop) == (6500, 7500)
    assert np.array_equal(window.series.y, ds.v.values[6500:7500, 0, 1])
    assert "6,500–7,499 of 10,000" in window.series.status.text()


def test_series_along_another_axis(window, idle, qtbot, tmp_path):
    """Time down the screen and longitude across: the slider axis is latitude, and the series
    at a point runs along it, against the latitudes, labelled with their units."""
    path = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    ds = xr.open_zarr(path)
    _open(window, idle, str(path))
    click_pixel(qtbot, window.image, 2, 3)
    idle(window)
    assert window.series.plan.axis == 0
    window.image._axes_changed(0, 2)  # what the Rows/Columns combos do
    idle(window)
    click_pixel(qtbot, window.image, 10, 4)  # time 10, lon 4
    idle(window)
    series = window.series
    assert series.plan.axis == 1 and series.axis_combo.currentText().startswith("lat")
    assert np.array_equal(series.y, ds.tas.values[10, :, 4], equal_nan=True)
    assert np.array_equal(series.x, ds.lat.values)
    assert series.plot.getAxis("bottom").labelText == "lat"  # the ticks say "30°N"
    assert series.x_text(0) == _degrees(ds.lat.values[0], "NS") == "89.5°S"
    dates = np.datetime_as_string(ds.time.values, unit="D")
    assert f"time={dates[10]}" in series.status.text()


def test_raw_plots_the_stored_values(window, idle, qtbot, tmp_path):
    """The image's Raw toggle on: a click plots the stored int16 values, fill included."""
    path = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    stored = xr.open_zarr(path, mask_and_scale=False).tas.values
    _open(window, idle, str(path))
    image = window.image
    assert image.cf_tools.raw_check.isVisible()
    image.cf_tools.raw_check.setChecked(True)
    idle(window)
    click_pixel(qtbot, image, 1, 2)
    idle(window)
    assert np.array_equal(window.series.y, stored[:, 1, 2]) and (stored[:, 1, 2] == -32768).all()
    assert window.series.plot.getAxis("left").labelText == "air temperature [K] (stored values)"
    image.cf_tools.raw_check.setChecked(False)  # the series shown follows the toggle
    idle(window)
    decoded = xr.open_zarr(path).tas.values[:, 1, 2]
    assert np.array_equal(window.series.y, decoded, equal_nan=True)
    assert window.series.plot.getAxis("left").labelText == "air temperature [K]"


def test_a_coordinate_of_another_length_is_not_used(window, idle, qtbot, tmp_path):
    """A 'time' array of 3 values beside a 5-step axis named time: the series runs against
    the steps (no coordinate), whole."""
    import zarr

    root = zarr.open_group(tmp_path / "odd.zarr", mode="w")
    values = np.arange(20.0).reshape(5, 2, 2)
    v = root.create_array("v", shape=(5, 2, 2), dtype="f8", dimension_names=["time", "y", "x"])
    v[:] = values
    t = root.create_array("time", shape=(3,), dtype="i8", dimension_names=["time"])
    t[:] = [0, 1, 2]
    t.attrs["units"] = "days since 2000-01-01"
    _open(window, idle, str(tmp_path / "odd.zarr"), "v")
    click_pixel(qtbot, window.image, 1, 1)
    idle(window)
    series = window.series
    assert np.array_equal(series.y, values[:, 1, 1]) and np.array_equal(series.x, np.arange(5))
    assert series.x_text(4) == "4" and series.plot.getAxis("bottom").labelText == "time (index)"
