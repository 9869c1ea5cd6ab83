"""The CF view (``engine.cf``) against what xarray decodes from stores xarray and netCDF-C wrote."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.cf_stores import TA_FILL_AT, netcdf_tools, write_nczarr, write_xarray
from zarrfs.engine import cf

xr = pytest.importorskip("xarray")


def _same(decoded: np.ndarray, expected: np.ndarray) -> bool:
    if decoded.dtype.kind == "M":
        return np.array_equal(decoded, expected.astype("datetime64[ns]"), equal_nan=True)
    if decoded.dtype.kind == "O":
        return list(decoded) == list(expected)
    return decoded.dtype == expected.dtype and np.array_equal(decoded, expected, equal_nan=True)


def _check_like_xarray(url, names=("tas", "sst", "time", "lat", "lon")) -> None:
    group = engine.open(str(url))
    ds = xr.open_zarr(str(url), consolidated=None)
    for name in names:
        array = group[name]
        assert array.dimension_names == ds[name].dims, name
        decoded = cf.read_decoded(array)
        assert _same(decoded, ds[name].values), name
        # the raw view is untouched
        assert np.array_equal(array[...], group[name].read(), equal_nan=True)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
@pytest.mark.parametrize("dask", [False, True])
def test_decoded_values_equal_xarray(tmp_path, zarr_format, consolidated, dask):
    url = write_xarray(tmp_path / "c.zarr", zarr_format, consolidated, dask=dask)
    _check_like_xarray(url)
    tas = engine.open(str(url))["tas"]
    assert tas.dtype == np.int16 and (tas[...] == -32768).any()  # the stored integers
    var = cf.variable(tas)
    assert var.packing == cf.Packing(0.01, 273.15)
    assert var.masking.fill_values == (-32768,)
    assert (var.units, var.long_name, var.standard_name) == (
        "K",
        "air temperature",
        "air_temperature",
    )


@pytest.mark.parametrize("calendar", ["standard", "noleap", "360_day"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dates_equal_xarray(tmp_path, calendar, zarr_format):
    url = write_xarray(tmp_path / "t.zarr", zarr_format, calendar=calendar, steps=200)
    time = engine.open(str(url))["time"]
    dates = cf.read_decoded(time)
    expected = xr.open_zarr(str(url))["time"].values
    assert _same(dates, expected)
    if calendar != "standard":  # numpy cannot hold these calendars: cftime objects
        assert dates.dtype == object and dates[-1].calendar == calendar
        assert cf.format_value(dates[0]) == "2000-01-01"


@pytest.mark.skipif(not netcdf_tools(), reason="netCDF-C's ncgen/nccopy (netcdf-bin) missing")
@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_nczarr_stores(tmp_path, mode):
    url = write_nczarr(tmp_path, mode)
    group = engine.open(str(url))
    ta = group["ta"]
    assert ta.dimension_names == ("time", "level", "lat", "lon")
    ds = xr.open_zarr(str(url), consolidated=False)
    for name in ("ta", "time", "level", "lat", "lon"):
        assert _same(cf.read_decoded(group[name]), ds[name].values), name
    decoded = cf.read_decoded(ta)
    assert decoded[0, 0, 0, 0] == 200.5 and np.isnan(decoded[TA_FILL_AT])  # -999 is the fill
    assert np.isnan(decoded).sum() == 1
    dates = cf.read_decoded(group["time"])
    assert [cf.format_value(d) for d in dates] == [
        "2001-02-03T04:00:00",
        "2001-02-03T10:00:00",
        "2001-02-03T16:00:00",
        "2001-02-03T22:00:00",
    ]
    assert cf.coordinate_labels(group["level"]) == ("1000", "850", "500")


def _v2_array(tmp_path, attrs: dict, data, fill_value=None):
    """A v2 array written by zarr-python with the given attributes."""
    import zarr

    z = zarr.create_array(
        str(tmp_path / "a.zarr"),
        shape=np.shape(data),
        dtype=np.asarray(data).dtype,
        zarr_format=2,
        fill_value=fill_value,
        chunks=np.shape(data),
    )
    z[...] = data
    z.attrs.update(attrs)
    return engine.open(str(tmp_path / "a.zarr"))


def test_valid_range_and_missing_value_are_masked(tmp_path):
    data = np.array([-5, 0, 7, 100, 101, 9], dtype=np.int16)
    attrs = {"valid_range": [0, 100], "missing_value": 9, "scale_factor": 2.0}
    array = _v2_array(tmp_path, attrs, data)
    decoded = cf.read_decoded(array)
    assert np.array_equal(decoded, [np.nan, 0, 14, 200, np.nan, np.nan], equal_nan=True)
    assert decoded.dtype == np.float64


MALFORMED = [
    ({"scale_factor": "0.5"}, "scale_factor '0.5' is not a number", {"scale_factor"}),
    (
        {"units": "days since yesterday"},
        "do not read as '<unit> since <date>'",
        {"units", "calendar"},
    ),
    (
        {"units": "days since 2000-01-01", "calendar": "martian"},
        "unknown calendar",
        {"units", "calendar"},
    ),
    ({"valid_range": [1]}, "valid_range [1] is not two numbers", {"valid_range"}),
    ({"units": 5}, "units 5 is not text", {"units"}),
    ({"_FillValue": "none"}, "_FillValue 'none' is not a int16 value", {"_FillValue"}),
]


@pytest.mark.parametrize("attrs, problem, ignored", MALFORMED)
def test_malformed_attributes_leave_the_raw_view(tmp_path, attrs, problem, ignored):
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    array = _v2_array(tmp_path, attrs, data)
    var = cf.variable(array)
    assert any(problem in p for p in var.problems), var.problems
    assert set(var.ignored) == ignored
    assert np.array_equal(array[...], data)
    decoded = cf.read_decoded(array, var=var)
    assert np.array_equal(decoded, data)  # nothing that parsed changes the values
    assert "cf" in engine.summary(array)  # the summary still opens


def test_array_dimensions_name_v2_dimensions(tmp_path):
    data = np.zeros((2, 3, 4), dtype=np.uint8)
    array = _v2_array(tmp_path, {"_ARRAY_DIMENSIONS": ["t", "y", "x"]}, data)
    assert array.dimension_names == ("t", "y", "x")
    assert engine.summary(array)["dimension_names"] == ["t", "y", "x"]
    lines = engine.format_summary(engine.summary(array)).splitlines()
    assert any(line.startswith("dimensions ") and line.endswith(" t, y, x") for line in lines)


@pytest.mark.parametrize("names", [["t", "y"], ["t", 1, "x"], "tyx", None])
def test_malformed_array_dimensions_are_ignored(tmp_path, names):
    array = _v2_array(tmp_path, {"_ARRAY_DIMENSIONS": names}, np.zeros((2, 3, 4), np.uint8))
    assert array.dimension_names is None


def test_kerchunk_reference_dimensions(tmp_path):
    """kerchunk's references of a netCDF file carry ``_ARRAY_DIMENSIONS`` in ``.zattrs``."""
    data = np.arange(12, dtype="<f4").reshape(3, 4)
    (tmp_path / "chunk.bin").write_bytes(data.tobytes())
    zarray = {
        "zarr_format": 2,
        "shape": [3, 4],
        "chunks": [3, 4],
        "dtype": "<f4",
        "compressor": None,
        "filters": None,
        "fill_value": None,
        "order": "C",
    }
    refs = {
        "version": 1,
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": json.dumps(zarray),
            "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["lat", "lon"]}),
            "v/0.0": [str(tmp_path / "chunk.bin"), 0, data.nbytes],
        },
    }
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    group = engine.open(f"reference::{tmp_path / 'refs.json'}")
    assert group["v"].dimension_names == ("lat", "lon")
    assert np.array_equal(group["v"][...], data)


def test_summary_shows_the_cf_view(tmp_path):
    url = write_xarray(tmp_path / "c.zarr", 2, calendar="noleap")
    tas = engine.open(str(url))["tas"]
    s = engine.summary(tas)["cf"]
    assert s["long_name"] == "air temperature" and s["units"] == "K"
    assert s["packing"] == {"scale_factor": 0.01, "add_offset": 273.15, "decoded_dtype": "float64"}
    assert s["fill"] == [-32768]
    dims = {d["name"]: d for d in s["dimensions"]}
    assert dims["time"]["first"] == "2000-01-01" and dims["time"]["last"] == "2000-03-11"
    assert dims["lat"]["first"] == "-89.5" and dims["lat"]["units"] == "degrees_north"
    text = engine.format_summary(engine.summary(tas))
    assert "time (24): 2000-01-01 .. 2000-03-11 (noleap)" in text
    assert "stored * 0.01 + 273.15 -> float64" in text
    time_summary = engine.summary(engine.open(str(url))["time"])["cf"]
    assert time_summary["time"]["calendar"] == "noleap"
    assert time_summary["time"]["first"] == "2000-01-01"


def test_read_decoded_into_a_reused_array(tmp_path):
    url = write_xarray(tmp_path / "c.zarr", 3)
    tas = engine.open(str(url))["tas"]
    expected = xr.open_zarr(str(url)).tas.values
    out = np.full((18, 18), 7.0)
    assert cf.read_decoded(tas, (5, slice(None), slice(None)), out=out) is out
    assert np.array_equal(out, expected[5], equal_nan=True)
    assert np.array_equal(
        cf.read_decoded(tas, (slice(None, None, -3), 4)), expected[::-3, 4], equal_nan=True
    )
    with pytest.raises(ValueError, match="out must be float64"):
        cf.read_decoded(tas, 5, out=np.empty((18, 18), np.float32))


@pytest.mark.parametrize(
    ("name", "fields", "kind"),
    [
        ("y", {"units": "degrees_north"}, cf.axes.LATITUDE),
        ("y", {"units": " Degree_N "}, cf.axes.LATITUDE),
        ("x", {"standard_name": "longitude", "units": "degrees"}, cf.axes.LONGITUDE),
        ("rlat", {"standard_name": "grid_latitude", "units": "degrees"}, cf.axes.GRID_Y),
        ("x", {"standard_name": "projection_x_coordinate", "units": "m"}, cf.axes.GRID_X),
        ("plev", {"units": "hPa"}, cf.axes.VERTICAL),
        ("z", {"standard_name": "depth", "units": "m"}, cf.axes.VERTICAL),
        ("t", {"units": "K"}, cf.axes.OTHER),
        ("lat", {}, cf.axes.LATITUDE),  # a coordinate that says nothing: its name
        ("rlon", {}, cf.axes.GRID_X),
    ],
)
def test_axis_kinds_of_coordinate_variables(name, fields, kind):
    var = engine.CFVariable(name=name, dimensions=(name,), stored_dtype=np.dtype("f8"), **fields)
    assert cf.axis_kind(name, var) == kind


def test_axis_kinds_of_times_and_of_bare_dimensions(tmp_path):
    time = engine.open(str(write_xarray(tmp_path / "t.zarr", 2)))["time"]
    assert cf.axis_kind("t", cf.variable(time)) == cf.axes.TIME  # told by its units
    assert cf.axis_kind("lon", None) == cf.axes.LONGITUDE and cf.axis_kind("y", None) is None
