"""CF variables in the image view (issue 21): decoded values by default (a "Raw" toggle shows
the stored integers), fill values transparent and out of the contrast, maps north up, a free
aspect for a time x longitude plot, a colour bar labelled with the long name and units,
diverging colormaps centred for anomalies, and a readout of the decoded value with its units.

The oracles are xarray's own decoding (``xarray.open_zarr``) and zarr-python's stored values.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from tests.cf_stores import TA_FILL_AT, netcdf_tools, write_nczarr, write_xarray

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")


def show(window, idle, url, path: str, indices=None):
    window.open_store(str(url), {}, path=path, indices=indices)
    idle(window)
    view = window.image
    assert view.state is not None and view.controller.node_path == path
    return view


def drawn(view) -> np.ndarray:
    """The values in the image item (every element: these planes are smaller than the screen)."""
    assert view.controller.request.geometry.sy == 1
    return np.asarray(view.image_item.image)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name", ["tas", "sst"])
def test_decoded_values_equal_xarray(window, idle, tmp_path, zarr_format, name):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=zarr_format)
    view = show(window, idle, url, name, indices=[5])
    expected = xr.open_zarr(url)[name].isel(time=5).values
    np.testing.assert_array_equal(drawn(view), expected)  # NaN where xarray has NaN
    assert np.isnan(expected).sum() == 15
    # a Raw view for the packed integers; the float32 with a NaN fill has no other
    assert view.cf_tools.raw_check.isVisibleTo(view) == (name == "tas")


def test_fill_is_transparent_and_out_of_the_contrast(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr")
    view = show(window, idle, url, "tas")
    expected = xr.open_zarr(url)["tas"].isel(time=0).values
    image = view.image_item.qimage
    alpha = np.array(
        [[image.pixelColor(x, y).alpha() for x in range(image.width())] for y in range(18)]
    )
    np.testing.assert_array_equal(alpha == 0, np.isnan(expected))
    low, high = view.controller.current_levels
    assert np.nanmin(expected) - 1 <= low < high <= np.nanmax(expected) + 1  # -32768 left out


def test_raw_shows_the_stored_integers(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    view = show(window, idle, url, "tas", indices=[2])
    stored = zarr.open_array(str(url), path="tas")[2]
    view.cf_tools.raw_check.setChecked(True)
    idle(window)
    shown = drawn(view)
    fill = stored == -32768
    assert fill.sum() == 15
    np.testing.assert_array_equal(shown[~fill], stored[~fill])
    assert np.isnan(shown[fill]).all()  # the fill stays transparent and out of the contrast
    assert view.histogram.item.axis.labelText == "air temperature (stored int16)"
    text = view.describe_position(10.5, 7.5)
    assert text.endswith(f"(stored {stored[10, 7]})")
    view.cf_tools.raw_check.setChecked(False)
    idle(window)
    np.testing.assert_array_equal(drawn(view), xr.open_zarr(url)["tas"].isel(time=2).values)


def test_plain_arrays_are_drawn_as_before(window, idle, sample_store):
    path, data = sample_store
    view = show(window, idle, path, "images/volume")
    np.testing.assert_array_equal(drawn(view), data["volume"][0])
    assert not view.cf_tools.raw_check.isVisibleTo(view)
    assert view.view_box.state["yInverted"] and view.view_box.state["aspectLocked"]
    assert view.histogram.item.axis.labelText == ""


def pixel(view, x: float, y: float):
    """The colour on screen at element (row ``y``, column ``x``) of the plane."""
    picture = view.graphics.viewport().grab().toImage()
    at = view.view_box.mapViewToDevice(QPointF(x, y))
    ratio = picture.devicePixelRatio()
    return picture.pixelColor(int(at.x() * ratio), int(at.y() * ratio))


@pytest.mark.parametrize("north_first", [False, True])
def test_maps_are_drawn_north_up(window, idle, tmp_path, north_first):
    """The fill patch is in the south-west corner (rows of the 3 southernmost latitudes,
    columns of the 5 westernmost longitudes): it must be transparent at the bottom left,
    whichever way the latitudes are stored."""
    url = tmp_path / "c.zarr"
    write_xarray(url)
    if north_first:  # latitudes stored from north to south, as ERA5 does
        flipped = xr.open_zarr(url).isel(lat=slice(None, None, -1)).load()
        url = tmp_path / "flipped.zarr"
        for variable in flipped.variables.values():
            variable.encoding.pop("chunks", None)
            variable.encoding.pop("preferred_chunks", None)
        flipped.to_zarr(url, zarr_format=2)
    view = show(window, idle, url, "tas")
    view.resize(900, 900)
    idle(window)
    from zarrfs.viewer.missing_colour import CHEQUER, QColor

    missing = {QColor(c).getRgb() for c in CHEQUER}  # seen through a transparent pixel
    south_rows = (16.5, 15.5) if north_first else (1.5, 0.5)
    north_row = 0.5 if north_first else 16.5
    for row in south_rows:
        assert pixel(view, 2.5, row).getRgb() in missing
    assert pixel(view, 2.5, north_row).getRgb() not in missing
    south = view.view_box.mapViewToDevice(QPointF(2.5, south_rows[0])).y()
    north = view.view_box.mapViewToDevice(QPointF(2.5, north_row)).y()
    assert south > north  # further down the screen


def hovmoeller(path):
    """``u`` (time, lon): 24 x 360, with CF time and longitude coordinates."""
    rng = np.random.default_rng(3)
    ds = xr.Dataset(
        {"u": (("time", "lon"), rng.random((24, 360)).astype("f4"), {"units": "m s-1"})},
        coords={
            "time": ("time", np.arange(24.0), {"units": "hours since 2000-01-01"}),
            "lon": ("lon", np.arange(360.0), {"units": "degrees_east"}),
        },
    )
    xr.decode_cf(ds).to_zarr(path, zarr_format=3)
    return path


def screen_length(view, elements: float, axis: str) -> float:
    box = view.view_box
    a = box.mapViewToDevice(QPointF(0, 0))
    b = box.mapViewToDevice(QPointF(elements, 0) if axis == "x" else QPointF(0, elements))
    return abs(b.x() - a.x()) if axis == "x" else abs(b.y() - a.y())


def test_a_hovmoeller_plot_fills_the_view_until_locked(window, idle, tmp_path):
    view = show(window, idle, hovmoeller(tmp_path / "h.zarr"), "u")
    assert not view.cf_tools.aspect_check.isChecked()
    assert not view.view_box.state["aspectLocked"]
    box = view.view_box.sceneBoundingRect()
    picture = view.image_item.sceneBoundingRect()
    assert picture.height() > 0.9 * box.height() and picture.width() > 0.9 * box.width()
    assert screen_length(view, 1, "y") > 5 * screen_length(view, 1, "x")

    view.cf_tools.aspect_check.setChecked(True)  # the toolbar's "Lock aspect"
    idle(window)
    assert view.view_box.state["aspectLocked"]
    assert abs(screen_length(view, 1, "y") - screen_length(view, 1, "x")) < 0.01
    assert view.image_item.sceneBoundingRect().height() < 0.2 * box.height()

    view.axes.y_combo.setCurrentIndex(1)  # rows: lon, columns: time (swapped): still free
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (1, 0)
    assert not view.cf_tools.aspect_check.isChecked() and not view.view_box.state["aspectLocked"]


def test_a_map_keeps_its_aspect(window, idle, tmp_path):
    view = show(window, idle, write_xarray(tmp_path / "c.zarr"), "tas")
    assert view.cf_tools.aspect_check.isChecked() and view.view_box.state["aspectLocked"]
    assert abs(screen_length(view, 1, "y") - screen_length(view, 1, "x")) < 0.01
    view.axes.y_combo.setCurrentIndex(0)  # rows: time, columns: lon (a Hovmöller plot)
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (0, 2)
    assert not view.view_box.state["aspectLocked"]
    assert view.view_box.state["yInverted"]  # time is no latitude: row 0 on top


def test_colour_bar_is_labelled_with_long_name_and_units(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr")
    view = show(window, idle, url, "tas")
    axis = view.histogram.item.axis
    assert axis.labelText == "air temperature [K]" and axis.label.isVisible()
    view = show(window, idle, url, "sst")  # no long_name: its name and units
    assert view.histogram.item.axis.labelText == "sst [K]"


def test_diverging_colormap_centres_the_levels(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr")
    anomaly = xr.open_zarr(url)[["tas"]].load()
    anomaly["tas"] = anomaly.tas - anomaly.tas.mean()
    anomaly["tas"].attrs = {"units": "K", "long_name": "temperature anomaly"}
    for variable in anomaly.variables.values():
        variable.encoding = {}
    anomaly.to_zarr(tmp_path / "a.zarr", zarr_format=3)
    view = show(window, idle, tmp_path / "a.zarr", "tas")
    low, high = view.controller.current_levels
    assert abs(low + high) > 0.1  # as found: not symmetric
    view.colormap_combo.setCurrentText("CET-D1")
    idle(window)
    assert view.cf_tools.centre_check.isChecked() and view.cf_tools.centre_spin.value() == 0
    centred = view.controller.current_levels
    assert centred[0] == -centred[1] and centred[1] == max(abs(low), abs(high))
    assert np.allclose(view.histogram.item.getLevels(), centred)
    view.cf_tools.centre_spin.setValue(5.0)
    idle(window)
    low, high = view.controller.current_levels
    assert abs((low + high) / 2 - 5.0) < 1e-9
    view.colormap_combo.setCurrentText("viridis")  # sequential: levels as found again
    idle(window)
    assert not view.cf_tools.centre_check.isChecked() and view.state.centre is None


def test_readout_gives_the_decoded_value_and_its_units(window, idle, tmp_path):
    """The readout's last part (after the indices and the coordinates) is the value."""
    url = write_xarray(tmp_path / "c.zarr")
    view = show(window, idle, url, "tas", indices=[3])
    expected = xr.open_zarr(url)["tas"].isel(time=3).values
    text = view.describe_position(10.5, 7.5)
    assert text.rsplit("  ", 1)[1] == f"tas = {expected[10, 7]:.2f} K"
    assert view.describe_position(1.5, 2.5).rsplit("  ", 1)[1] == "tas = missing"
    view = show(window, idle, url, "sst")
    sst = xr.open_zarr(url)["sst"].isel(time=0).values
    assert view.describe_position(10.5, 7.5).rsplit("  ", 1)[1] == f"sst = {sst[10, 7]:.6g} K"
    assert view.describe_position(0.5, 0.5).rsplit("  ", 1)[1] == "sst = missing"


def test_full_resolution_png_is_the_decoded_map_north_up(window, idle, qtbot, tmp_path):
    from PIL import Image

    url = write_xarray(tmp_path / "c.zarr")
    window.coastlines_action.setChecked(False)  # the values alone (coastlines: test_coastlines)
    view = show(window, idle, url, "tas")
    view.cf_tools.choose_colormap("grey")  # a CF variable starts in viridis
    idle(window)
    saved = []
    window.export_full_png(str(tmp_path / "map.png"), on_done=saved.append)
    qtbot.waitUntil(lambda: bool(saved), timeout=20_000)
    exported = np.asarray(Image.open(tmp_path / "map.png").convert("RGB")).astype(int)
    decoded = xr.open_zarr(url)["tas"].isel(time=0).values[::-1]  # north (last row) on top
    low, high = view.controller.current_levels
    grey = np.rint(np.clip((decoded - low) / (high - low), 0, 1) * 255)
    missing = np.isnan(decoded)
    assert missing[-3:, :5].all()  # the south-west patch, at the bottom left
    # drawn as the screen shows them: the chequer's two greys (View > Missing values)
    assert {tuple(c) for c in exported[missing]} == {(154, 154, 154), (200, 200, 200)}
    assert np.abs(exported[~missing] - grey[~missing][:, None]).max() <= 1


@pytest.mark.skipif(not netcdf_tools(), reason="netCDF-C's ncgen/nccopy (netcdf-bin) missing")
@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_nczarr_variable(window, idle, tmp_path, mode):
    """netCDF-C's ``ta`` (time, level, lat, lon): packed int16, fill -999, hPa levels."""
    url = write_nczarr(tmp_path, mode)
    time, level, lat, lon = TA_FILL_AT
    view = show(window, idle, url, "ta", indices=[time, level])
    expected = xr.open_zarr(str(url), consolidated=False)["ta"].isel(time=time, level=level)
    np.testing.assert_array_equal(drawn(view), expected.values)
    assert view.describe_position(lat + 0.5, lon + 0.5).rsplit("  ", 1)[1] == "ta = missing"
    assert (
        view.describe_position(0.5, 1.5).rsplit("  ", 1)[1] == f"ta = {expected.values[0, 1]:.1f} K"
    )
    assert not view.view_box.state["yInverted"]  # latitudes -60 to 60: north up
    assert view.view_box.state["aspectLocked"]
    view.axes.y_combo.setCurrentIndex(1)  # rows: level (hPa), columns: lon
    idle(window)
    assert not view.view_box.state["aspectLocked"] and view.view_box.state["yInverted"]


def test_orthogonal_views_are_decoded_too(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr")
    view = show(window, idle, url, "tas")
    view.set_ortho(True)
    idle(window)
    y, x = view.state.indices[1], view.state.indices[2]
    tas = xr.open_zarr(url)["tas"].values
    np.testing.assert_array_equal(view.ortho.xz.image_item.image, tas[:, y, :])
    np.testing.assert_array_equal(view.ortho.yz.image_item.image, tas[:, :, x].T)
