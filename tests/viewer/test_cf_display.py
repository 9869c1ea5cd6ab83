"""The viewer's CF rules without a window: axis kinds (CF 4), aspect and orientation, labels,
readout text and centred levels."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfs.engine as engine
from zarrfs.viewer.cf_display import (
    EAST,
    NORTH,
    OTHER,
    TIME,
    VERTICAL,
    CFAxis,
    CFValues,
    CFView,
    axis_kind,
)
from zarrfs.viewer.transforms import centred


def variable(name="v", dtype="int16", **fields) -> engine.CFVariable:
    return engine.CFVariable(
        name=name, dimensions=("y", "x"), stored_dtype=np.dtype(dtype), **fields
    )


@pytest.mark.parametrize(
    ("name", "fields", "kind"),
    [
        ("y", {"units": "degrees_north"}, NORTH),
        ("rlat", {"standard_name": "grid_latitude"}, NORTH),
        ("y", {"standard_name": "projection_y_coordinate", "units": "m"}, NORTH),
        ("x", {"units": "degree_E"}, EAST),
        ("plev", {"units": "hPa"}, VERTICAL),
        ("depth", {"units": "m"}, VERTICAL),  # by name: metres say nothing
        ("member", {}, OTHER),
        ("lat", {}, NORTH),  # a coordinate without attributes: its name
    ],
)
def test_axis_kinds_from_coordinate_variables(name, fields, kind):
    assert axis_kind(name, variable(name, "float64", **fields)) == kind


def test_axis_kinds_without_coordinates_and_of_times():
    assert axis_kind("lat", None) == NORTH and axis_kind("z", None) is None
    assert axis_kind("y", None) is None  # a microscope's y is no latitude
    time = engine.cf.parse_time_units("days since 2000-01-01", None)
    assert axis_kind("t", variable("t", "float64", time=time)) == TIME  # told by its units
    assert axis_kind("t", variable("t", "float64", units="K")) == OTHER


def test_aspect_and_orientation():
    view = CFView(
        variable(),
        (CFAxis(TIME), CFAxis(NORTH, ascending=True), CFAxis(EAST, ascending=True), CFAxis()),
    )
    assert view.lock_aspect(1, 2) and view.lock_aspect(3, 2)  # a map; an unknown axis: an image
    assert not view.lock_aspect(0, 2) and not view.lock_aspect(1, 0)
    assert view.north_up(1) and not view.north_up(2) and not view.north_up(0)
    south_first = CFView(variable(), (CFAxis(NORTH, ascending=False), CFAxis(EAST)))
    assert not south_first.north_up(0)


def test_labels():
    packed = engine.Packing(0.01, 273.15)
    tas = variable("tas", long_name="Near-Surface Air Temperature", units="K", packing=packed)
    view = CFView(tas, ())
    assert view.label() == "Near-Surface Air Temperature [K]"
    assert view.label(raw=True) == "Near-Surface Air Temperature (stored int16)"
    assert CFView(variable("sst", standard_name="sea_surface_temperature"), ()).label() == (
        "sea surface temperature"
    )
    assert CFView(variable("plain"), ()).label() == ""


def test_readout_text():
    masking = engine.Masking(fill_values=(-32768,), valid_min=-30000, valid_max=None)
    tas = variable("tas", units="K", packing=engine.Packing(0.01, 273.15), masking=masking)
    values = CFValues(tas)
    assert values.value_text(np.int16(1420)) == "tas = 287.35 K"
    assert values.value_text(np.int16(-32768)) == "tas = missing"
    assert values.value_text(np.int16(-31000)) == "tas = missing (outside valid range)"
    assert CFValues(tas, raw=True).value_text(np.int16(1420)) == "tas = 287.35 K (stored 1420)"
    drawn = values.to_display(np.array([[1420, -32768]], np.int16))
    assert drawn.dtype == np.float64 and drawn[0, 0] == 1420 * 0.01 + 273.15
    assert np.isnan(drawn[0, 1])
    raw = CFValues(tas, raw=True).to_display(np.array([[1420, -32768]], np.int16))
    assert raw[0, 0] == 1420 and np.isnan(raw[0, 1])


def test_centred_levels():
    assert centred((250.0, 300.0), None) == (250.0, 300.0)
    assert centred((-2.0, 5.0), 0.0) == (-5.0, 5.0)
    assert centred((270.0, 290.0), 275.0) == (260.0, 290.0)
    assert centred((3.0, 3.0), 3.0) == (2.0, 4.0)  # never an empty range
