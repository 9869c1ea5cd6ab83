"""Orthogonal views: the XZ and YZ planes through the crosshair equal zarr-python's slices of
the array; clicking moves the crosshair; each pane reads on its own, lazily."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt


def test_xz_and_yz_through_the_crosshair(window, idle, qtbot, sample_store):
    path, arrays = sample_store
    volume = arrays["volume"]  # (z 6, y 90, x 130), dimension names z, y, x
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    view = window.image
    qtbot.keyClick(view, Qt.Key.Key_O)
    idle(window)
    assert view.ortho.isVisible() and view.ortho.depth == 0
    state = view.state
    y, x = state.indices[1], state.indices[2]
    assert (y, x) == (45, 65)  # the centre
    xz, yz = view.ortho.xz, view.ortho.yz
    np.testing.assert_array_equal(xz.image_item.image, volume[:, y, :])
    np.testing.assert_array_equal(yz.image_item.image, volume[:, :, x].T)

    view._crosshair_moved(1, 10)  # as a click on row 10 of the main view does
    view._crosshair_moved(2, 100)
    view._crosshair_moved(0, 4)  # depth: the main view's z slider moves
    idle(window)
    assert view.axes.sliders[0].value() == 4
    g = view.controller.request.geometry  # the main view, narrower now: its screen's stride
    s = int(g.sy)
    plane = volume[4, g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
    np.testing.assert_array_equal(view.image_item.image, plane)
    np.testing.assert_array_equal(xz.image_item.image, volume[:, 10, :])
    np.testing.assert_array_equal(yz.image_item.image, volume[:, :, 100].T)
    assert xz.row_line.value() == 4.5 and yz.col_line.value() == 4.5
    assert view.crosshair[0].value() == 10.5 and view.crosshair[1].value() == 100.5

    qtbot.keyClick(view, Qt.Key.Key_O)
    assert not view.ortho.isVisible()


def test_ortho_of_a_composite_with_true_aspect(window, idle, qtbot, ome_images):
    """XZ of a z-stack with 2 µm steps and 0.5 µm pixels: the composite, four times as tall
    per element as wide."""
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    view.set_ortho(True)
    idle(window)
    xz = view.ortho.xz
    assert xz.controller.composite and xz.composite_item.image.shape == (4, 64, 3)
    assert xz.view_box.state["aspectLocked"] == 0.25


def test_ortho_of_a_map_in_coordinates_north_up(window, idle, qtbot, tmp_path):
    """A CF map of time x lat x lon that xarray wrote: the panes are ticked in dates and
    degrees as the main view is, the lat x time pane is north up like the map, and a pane
    with a time axis gets a free aspect (24 steps would be a sliver at 1:1)."""
    import xarray as xr

    from tests.cf_stores import write_xarray

    url = write_xarray(tmp_path / "c.zarr")
    window.open_store(str(url), {}, path="tas")
    idle(window)
    view = window.image
    qtbot.keyClick(view, Qt.Key.Key_O)
    idle(window)
    xz, yz = view.ortho.xz, view.ortho.yz  # (time, lon) and (lat, time)
    assert (xz.state.y_axis, xz.state.x_axis) == (0, 2) and (yz.state.y_axis, yz.state.x_axis) == (
        1,
        0,
    )
    assert not view.view_box.yInverted()  # the map: latitudes run south to north
    assert not yz.view_box.yInverted() and xz.view_box.yInverted()
    assert not xz.view_box.state["aspectLocked"] and not yz.view_box.state["aspectLocked"]
    ds = xr.open_zarr(url)
    yz.left.resize(60, 300)  # laid out offscreen: the ticks a 300-pixel axis would draw
    lat_ticks = yz.left._ticks(0, 18, 300)
    assert yz.left.labelText == "lat" and len(lat_ticks) >= 4
    for position, text in lat_ticks:  # each tick where its latitude is
        value = float(text[:-2]) * (1 if text.endswith("N") else -1) if text != "0°" else 0.0
        assert np.interp(position - 0.5, np.arange(18), ds.lat.values) == pytest.approx(value)
    times = [text for _, text in xz.left._ticks(0, 24, 300)]
    assert times and all(t.startswith("2000-0") for t in times)  # dates, not indices
    lon_ticks = [text for _, text in xz.bottom._ticks(0, 18, 300)]
    assert "0°" in lon_ticks and "90°E" in lon_ticks and "180°" in lon_ticks
