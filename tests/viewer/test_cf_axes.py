"""CF coordinates on the image's axes, its sliders and its readout (issue 21, Viewer): a store
written by xarray (v2 and v3; standard, noleap and 360_day calendars) shows its axes titled
lat/lon/time, ticked in degrees and dates at the places xarray's coordinates put them; the
sliders' spin boxes show and take dates; the readout gives the coordinates. xarray's decoded
coordinates are the oracle throughout; the tick and readout texts are parsed back."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from tests.cf_stores import climate_dataset, netcdf_tools, write_nczarr, write_xarray

xr = pytest.importorskip("xarray")
cftime = pytest.importorskip("cftime")

DEGREES = re.compile(r"^(\d+(?:\.\d+)?)°([NSEW]?)$")


def degrees(text: str) -> float:
    """ "60°S" -> -60.0, "90°W" -> -90.0, "0°" -> 0.0."""
    match = DEGREES.match(text)
    assert match, text
    value = float(match.group(1))
    return -value if match.group(2) in ("S", "W") else value


def day_text(date) -> str:
    """xarray's decoded date as "YYYY-MM-DD" (datetime64 or cftime)."""
    if isinstance(date, np.datetime64):
        return str(np.datetime_as_string(date, unit="D"))
    return date.strftime("%Y-%m-%d")


def days_since_2000(dates, calendar: str) -> np.ndarray:
    """xarray's dates as days since 2000-01-01, by their own calendar's arithmetic."""
    dates = np.asarray(dates)
    if dates.dtype.kind == "M":
        return (dates - np.datetime64("2000-01-01")) / np.timedelta64(1, "D")
    start = cftime.datetime(2000, 1, 1, calendar=calendar)
    return np.array([(d - start).total_seconds() / 86_400 for d in dates])


def tick_date(text: str, calendar: str):
    """A tick's "2000", "2000-02" or "2000-01-22" as the date it names."""
    parts = [int(p) for p in text.split("-")] + [1, 1]
    year, month, day = parts[:3]
    if calendar == "standard":
        return np.datetime64(f"{year:04d}-{month:02d}-{day:02d}")
    return cftime.datetime(year, month, day, calendar=calendar)


def show_tas(window, idle, url):
    window.open_store(str(url), {})
    idle(window)
    window.select_path("tas")
    idle(window)
    view = window.image
    assert window.stack.currentWidget() is view and view.image_axes.coordinates, (
        "no coordinates loaded"
    )
    return view


def check_degree_ticks(axis, expected: np.ndarray) -> None:
    ticks = axis.tick_texts()
    assert len(ticks) >= 3, ticks
    for position, text in ticks:
        wanted = float(np.interp(position - 0.5, np.arange(expected.size), expected))
        wanted = (wanted + 180) % 360 - 180 if "E" in text or "W" in text else wanted
        assert abs(degrees(text) - wanted) < 1e-9, (position, text, wanted)


CASES = [(2, "standard"), (3, "standard"), (3, "noleap"), (2, "360_day")]


@pytest.mark.parametrize(("zarr_format", "calendar"), CASES)
def test_axes_sliders_and_readout_in_coordinates(
    window, idle, qtbot, tmp_path, zarr_format, calendar
):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=zarr_format, calendar=calendar)
    coder = xr.coders.CFDatetimeCoder(use_cftime=calendar != "standard")
    ds = xr.open_zarr(str(url), decode_times=coder)
    lat, lon, times = ds.lat.values, ds.lon.values, ds.time.values
    view = show_tas(window, idle, url)

    left, bottom = view.image_axes.left, view.image_axes.bottom
    assert (left.labelText, bottom.labelText) == ("lat", "lon")
    check_degree_ticks(left, lat)
    check_degree_ticks(bottom, lon)

    spin = view.axes.spins[0]
    assert spin.text() == f"{day_text(times[0])} (0 / 23)"
    view.axes.sliders[0].setValue(5)
    idle(window)
    assert view.state.indices[0] == 5 and spin.text() == f"{day_text(times[5])} (5 / 23)"

    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin, day_text(times[7]))
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    idle(window)
    assert view.state.indices[0] == 7 and spin.text().startswith(day_text(times[7]))

    text = view.describe_position(3.5, 5.5)
    match = re.search(r"\]  time (\S+), lat (\S+), lon (\S+)  ", text)
    assert match, text
    assert match.group(1) == day_text(times[7])
    assert abs(degrees(match.group(2)) - lat[3]) < 1e-5 and degrees(match.group(3)) == lon[5]

    view.axes.y_combo.setCurrentIndex(0)  # time down, lon across (a Hovmöller diagram)
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (0, 2) and left.labelText == "time"
    expected = days_since_2000(times, calendar)
    ticks = left.tick_texts()
    assert len(ticks) >= 2, ticks
    for position, label in ticks:
        wanted = float(np.interp(position - 0.5, np.arange(expected.size), expected))
        got = days_since_2000([tick_date(label, calendar)], calendar)[0]
        assert abs(got - wanted) < 1e-6, (position, label)
    lat_spin = view.axes.spins[1]
    assert lat_spin.text() == "89.5°S (0 / 17)"
    lat_spin.lineEdit().selectAll()
    qtbot.keyClicks(lat_spin, "45N")
    qtbot.keyClick(lat_spin, Qt.Key.Key_Return)
    idle(window)
    assert view.state.indices[1] == int(np.argmin(np.abs(lat - 45)))


def test_a_decreasing_latitude_shown_upwards(window, idle, tmp_path):
    """Ticks follow the coordinate, not the index: a north-to-south latitude and a view flipped
    so that north is up put each tick where xarray's latitudes are, and north above south."""
    path = tmp_path / "south.zarr"
    climate_dataset().isel(lat=slice(None, None, -1)).to_zarr(path, zarr_format=3)
    view = show_tas(window, idle, path)
    lat = xr.open_zarr(str(path)).lat.values
    assert lat[0] > lat[-1]
    check_degree_ticks(view.image_axes.left, lat)
    view.view_box.invertY(False)  # as the latitude-up flip does
    idle(window)
    ticks = dict((text, position) for position, text in view.image_axes.left.tick_texts())
    north = view.view_box.mapViewToDevice(QPointF(0, ticks["60°N"])).y()
    south = view.view_box.mapViewToDevice(QPointF(0, ticks["60°S"])).y()
    assert north > south  # row 0 (north) at the bottom once the view is no longer inverted
    view.view_box.invertY(True)
    idle(window)
    north = view.view_box.mapViewToDevice(QPointF(0, ticks["60°N"])).y()
    south = view.view_box.mapViewToDevice(QPointF(0, ticks["60°S"])).y()
    assert north < south


def test_an_array_without_coordinates_keeps_index_ticks(window, idle, sample_store):
    path, data = sample_store
    window.open_store(str(path), {}, path="images/volume", indices=[4])
    idle(window)
    view = window.image
    assert view.image_axes.coordinates == {}
    left, bottom = view.image_axes.left, view.image_axes.bottom
    assert (left.labelText, bottom.labelText) == ("y", "x")
    for axis in (left, bottom):
        ticks = axis.tick_texts()
        assert len(ticks) >= 2
        assert all(text == str(int(position - 0.5)) for position, text in ticks), ticks
    assert view.axes.spins[0].text() == "4 / 5"
    text = view.describe_position(2.5, 10.2)
    assert text == f"[z=4, y=2, x=10]  {data['volume'][4, 2, 10]}"


def test_a_coordinate_too_long_to_read_keeps_index_ticks(window, idle, tmp_path, monkeypatch):
    from zarrfs.viewer import coordinates

    monkeypatch.setattr(coordinates, "MAX_ELEMENTS", 20)  # time has 24, lat 18, lon 18
    view = show_tas(window, idle, write_xarray(tmp_path / "c.zarr"))
    assert sorted(view.image_axes.coordinates) == [1, 2]
    assert view.axes.spins[0].text() == "0 / 23"
    assert "lat 89.5°S, lon 0°" in view.describe_position(0.5, 0.5)


@pytest.mark.skipif(not netcdf_tools(), reason="netCDF-C's ncgen/nccopy (netcdf-bin) missing")
def test_nczarr_level_and_360_day_hours(window, idle, qtbot, tmp_path):
    url = write_nczarr(tmp_path, "nczarr")
    window.open_store(str(url), {})
    idle(window)
    window.select_path("ta")
    idle(window)
    view = window.image
    spins = view.axes.spins
    assert spins[0].text() == "2001-02-03T04:00:00 (0 / 3)"
    assert spins[1].text() == "1000 hPa (0 / 2)"
    spins[1].lineEdit().selectAll()
    qtbot.keyClicks(spins[1], "850")
    qtbot.keyClick(spins[1], Qt.Key.Key_Return)
    spins[0].lineEdit().selectAll()
    qtbot.keyClicks(spins[0], "2001-02-03 16:00")
    qtbot.keyClick(spins[0], Qt.Key.Key_Return)
    idle(window)
    assert view.state.indices[:2] == [2, 1]
    assert "time 2001-02-03T16:00:00, level 850 hPa, lat 0°, lon 20.5°E" in (
        view.describe_position(2.5, 1.5)
    )
    view.axes.y_combo.setCurrentIndex(1)  # level down: its title carries the units
    idle(window)
    assert view.image_axes.left.labelText == "level (hPa)"


def test_coordinates_of_a_remote_store_arrive_in_the_background(
    window, idle, tmp_path, http_server
):
    """Over HTTP the plane shows first: the coordinates are read off the GUI thread and
    land later (set_array returns before any of them is read)."""
    write_xarray(tmp_path / "c.zarr", zarr_format=2)
    server = http_server(tmp_path, latency=0.05)
    view, seen = window.image, []
    set_array = view.set_array

    def recording(*args, **kwargs):
        set_array(*args, **kwargs)
        seen.append(dict(view.image_axes.coordinates))

    view.set_array = recording  # the window calls it through the instance
    window.open_store(server.url_for("c.zarr"), {}, path="tas")
    idle(window)
    assert seen == [{}] and sorted(view.image_axes.coordinates) == [0, 1, 2]
    check_degree_ticks(view.image_axes.left, xr.open_zarr(str(tmp_path / "c.zarr")).lat.values)


def test_round_ticks_by_calendar_and_hemisphere():
    from zarrfs.engine import cf
    from zarrfs.viewer.coordinate_ticks import number_ticks, time_ticks

    hours = cf.TimeUnits(
        "hours since 2001-02-03 04:00:00", "h", "2001-02-03T04:00:00", 0, "360_day"
    )
    assert time_ticks(hours, 0, 18, 4) == [
        (2.0, "2001-02-03 06:00"),
        (8.0, "2001-02-03 12:00"),
        (14.0, "2001-02-03 18:00"),
    ]
    days = cf.TimeUnits("days since 2000-01-01", "D", "2000-01-01T00:00:00", 0, "360_day")
    quarters = time_ticks(days, 0, 720, 8)  # 30-day months: a quarter is 90 days
    assert [n for n, _ in quarters] == list(range(0, 721, 90))
    assert [t for _, t in quarters][:3] == ["2000-01", "2000-04", "2000-07"]
    assert [t for _, t in time_ticks(days, 0, 7200, 5)] == ["2000", "2005", "2010", "2015", "2020"]
    assert number_ticks("longitude", 0, 340, 4) == [
        (0.0, "0°"),
        (90.0, "90°E"),
        (180.0, "180°"),
        (270.0, "90°W"),
    ]
    assert [t for _, t in number_ticks("latitude", -50, 50, 4)] == ["30°S", "0°", "30°N"]
    assert [t for _, t in number_ticks("number", 0.0, 1.0, 4)] == ["0.0", "0.5", "1.0"]


def test_auxiliary_2d_latitude_and_longitude(window, idle, tmp_path):
    """A curvilinear grid xarray wrote (``temp(time, y, x)`` with 2-D ``lat(y, x)`` and
    ``lon(y, x)`` named in its ``coordinates`` attribute): the readout gives the latitude and
    longitude of the element under the cursor, the axes are ticked in degrees."""
    ny, nx = 20, 30
    yy, xx = np.mgrid[0:ny, 0:nx].astype(float)
    lat = 40.0 + 0.5 * yy + 0.05 * xx  # a rotated grid: both vary along both axes
    lon = 350.0 + 0.5 * xx - 0.05 * yy  # crossing the 0/360 line
    ds = xr.Dataset(
        {"temp": (("time", "y", "x"), np.random.default_rng(3).random((2, ny, nx)))},
        coords={
            "lat": (("y", "x"), lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": (("y", "x"), lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )
    ds.to_zarr(tmp_path / "g.zarr", zarr_format=2, consolidated=False)
    import zarr

    stored = zarr.open_group(str(tmp_path / "g.zarr"))
    assert sorted(stored["temp"].attrs["coordinates"].split()) == ["lat", "lon"]
    window.open_store(str(tmp_path / "g.zarr"), {}, path="temp")
    idle(window)
    view = window.image
    assert sorted(a.name for a in view.image_axes.auxiliary) == ["lat", "lon"]
    text = view.describe_position(7.5, 12.5)  # row 7, column 12: 40 + 3.5 + 0.6, 350 + 6 - 0.35
    assert "lat 44.1°N" in text and "lon 4.35°W" in text
    bottom, left = view.image_axes.bottom, view.image_axes.left
    assert bottom.labelText == "lon at y 10" and left.labelText == "lat at x 15"
    ticks = bottom._ticks(0, nx, 400)
    assert [text for _, text in ticks] == ["10°W", "5°W", "0°"]
    for position, text in ticks:  # each where the longitude of row 10 is that value
        value = lon[10, 0] + 0.5 * (position - 0.5)
        value = (value + 180) % 360 - 180
        named = 0.0 if text == "0°" else float(text[:-2]) * (1 if text[-1] == "E" else -1)
        assert value == pytest.approx(named)
    lat_ticks = [text for _, text in left._ticks(0, ny, 300)]
    assert lat_ticks and all(text.endswith("°N") for text in lat_ticks)
