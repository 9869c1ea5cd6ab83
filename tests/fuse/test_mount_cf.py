"""The CF view in a real mount: ``-o cf`` decoded files, plane names by coordinate value, and
``_ARRAY_DIMENSIONS`` naming the plane folders; checked against xarray's decoding."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.cf_stores import TA_FILL_AT, netcdf_tools, write_nczarr, write_xarray

xr = pytest.importorskip("xarray")
pytestmark = pytest.mark.fuse


def test_decoded_files_and_coordinate_names(tmp_path, mount):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    expected = xr.open_zarr(str(url))
    mnt = mount(str(url), "cf").path
    names = os.listdir(mnt / "tas")
    assert "data.cf.npy" in names and "data.npy" in names
    decoded = np.load(mnt / "tas" / "data.cf.npy")
    assert decoded.dtype == np.float64
    assert np.array_equal(decoded, expected.tas.values, equal_nan=True)
    assert np.load(mnt / "tas" / "data.npy").dtype == np.int16  # the stored values stay
    planes = os.listdir(mnt / "tas" / "planes")
    # time step 4 is day 12: index and date name the same plane
    assert {
        "time_04.npy",
        "time_04.cf.npy",
        "time_2000-01-13.npy",
        "time_2000-01-13.cf.npy",
    } <= set(planes)
    by_date = np.load(mnt / "tas" / "planes" / "time_2000-01-13.cf.npy")
    assert np.array_equal(by_date, expected.tas.values[4], equal_nan=True)
    assert np.array_equal(
        by_date, np.load(mnt / "tas" / "planes" / "time_04.cf.npy"), equal_nan=True
    )
    raw = np.load(mnt / "tas" / "planes" / "time_2000-01-13.npy")
    assert raw.dtype == np.int16 and (raw == -32768).any()
    sst = np.load(mnt / "sst" / "planes" / "time_2000-01-13.cf.npy")
    assert sst.dtype == np.float32 and np.array_equal(sst, expected.sst.values[4], equal_nan=True)
    times = np.load(mnt / "time" / "data.cf.npy")
    assert np.array_equal(times, expected.time.values.astype("datetime64[ns]"))
    info = (mnt / "tas" / "info.txt").read_text()
    assert "time (24): 2000-01-01 .. 2000-03-10" in info and "-> float64" in info


def test_without_the_option_no_decoded_files(tmp_path, mount):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=3, consolidated=False)
    mnt = mount(str(url)).path
    assert "data.cf.npy" not in os.listdir(mnt / "tas")
    planes = os.listdir(mnt / "tas" / "planes")
    assert "time_00.npy" in planes and "time_2000-01-01.npy" in planes
    assert not any(name.endswith(".cf.npy") for name in planes)


@pytest.mark.skipif(not netcdf_tools(), reason="netCDF-C's ncgen/nccopy (netcdf-bin) missing")
def test_nczarr_folders_by_level_and_date(tmp_path, mount):
    url = write_nczarr(tmp_path, "nczarr")
    expected = xr.open_zarr(str(url), consolidated=False).ta.values
    mnt = mount(str(url), "cf").path
    planes = mnt / "ta" / "planes"
    assert {"time_0", "time_2001-02-03T10_00_00"} <= set(os.listdir(planes))
    level_names = set(os.listdir(planes / "time_2001-02-03T10_00_00"))
    assert {"level_1.npy", "level_850.npy", "level_850.cf.npy", "level_1.cf.npy"} <= level_names
    plane = np.load(planes / "time_2001-02-03T10_00_00" / "level_1000.cf.npy")
    assert np.array_equal(plane, expected[1, 0], equal_nan=True)
    assert np.isnan(plane[TA_FILL_AT[2:]]) and np.isnan(expected[TA_FILL_AT])
    same = np.load(planes / "time_1" / "level_0.cf.npy")
    assert np.array_equal(plane, same, equal_nan=True)
    assert not (planes / "time_1" / "level_700.npy").exists()


def test_malformed_cf_attributes_keep_the_node(tmp_path, mount):
    """A string scale_factor: the raw files and info.txt stay, no decoded file is offered."""
    import zarr

    z = zarr.create_array(
        str(tmp_path / "bad.zarr"),
        shape=(2, 3, 4),
        dtype="i2",
        zarr_format=2,
        chunks=(1, 3, 4),
        fill_value=None,
    )
    z[...] = np.arange(24, dtype="i2").reshape(2, 3, 4)
    z.attrs.update(
        {"scale_factor": "0.5", "units": "days since never", "_ARRAY_DIMENSIONS": ["t", "y", "x"]}
    )
    mnt = mount(str(tmp_path / "bad.zarr"), "cf").path
    assert "data.cf.npy" not in os.listdir(mnt)
    assert os.listdir(mnt / "planes") == ["t_0.npy", "t_0.tif", "t_1.npy", "t_1.tif"]
    assert np.array_equal(np.load(mnt / "planes" / "t_1.npy"), z[1])
    info = (mnt / "info.txt").read_text()
    assert "scale_factor '0.5' is not a number" in info


def test_png_previews_of_cf_data_leave_missing_values_out(tmp_path, mount):
    """``-o png,cf``: a packed variable's fill (-32768) is transparent and out of the stretch,
    and the map is north up (latitudes increase with the row: row 0 is the south)."""
    import io

    from PIL import Image

    url = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    expected = xr.open_zarr(str(url)).tas.values[4]  # [lat, lon], south first; NaN at [:3, :5]
    for options in ("png", "png,cf"):
        mnt = mount(str(url), options).path
        image = Image.open(io.BytesIO((mnt / "tas" / "planes" / "time_04.png").read_bytes()))
        assert image.mode == "LA"
        grey, alpha = (np.asarray(band) for band in image.split())
        north_up = expected[::-1]
        np.testing.assert_array_equal(alpha == 0, np.isnan(north_up))
        valid = grey[alpha == 255]
        assert valid.min() == 0 and valid.max() == 255  # the stretch spans the real values
        low, high = np.nanpercentile(north_up, [0.5, 99.5], method="nearest")
        scaled = np.clip((north_up - low) / (high - low), 0, 1) * 255
        ok = ~np.isnan(north_up)
        assert np.abs(grey[ok].astype(float) - scaled[ok]).max() <= 1.0
