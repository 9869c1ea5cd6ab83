"""The mount's ``.tif`` files as GDAL (rasterio's bundled GDAL) and tifffile read them through a
real mount: GeoTIFF of CF planes (EPSG:4326, a store GDAL wrote itself), the decoded ``-o cf``
planes with NaN as nodata, and OME-Zarr planes and composites calibrated for ImageJ/Fiji.
``tests/test_geotiff.py`` checks the same tags through ``zarrfs get``."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

from tests.geo_stores import GEOSTATIONARY, ROTATED_POLE, write_gdal, write_latlon, write_mapped
from tests.ome_writers import write_ome_zarr_py

rasterio = pytest.importorskip("rasterio")
xr = pytest.importorskip("xarray")
pytestmark = pytest.mark.fuse


def test_cf_planes_are_geotiffs(tmp_path, mount):
    lat, lon = np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)
    url = write_latlon(tmp_path / "ll.zarr", lat, lon)
    raw = xr.open_zarr(str(url), mask_and_scale=False, consolidated=False)
    decoded = xr.open_zarr(str(url), consolidated=False)
    mnt = mount(str(url), "cf").path
    planes = mnt / "t2m" / "planes"
    with rasterio.open(planes / "time_2020-07-01.tif") as f:
        assert f.crs.to_epsg() == 4326
        assert f.transform.to_gdal() == pytest.approx((-183.75, 7.5, 0.0, 62.5, 0.0, -5.0))
        assert f.xy(24, 47) == pytest.approx((lon[47], lat[24]))
        assert f.nodata == -32767 and f.scales == (0.01,) and f.offsets == (273.15,)
        assert f.units == ("K",) and f.tags()["time"] == "2020-07-01"
        assert np.array_equal(f.read(1), raw.t2m.values[1])
    with rasterio.open(planes / "time_2.cf.tif") as f:
        assert f.dtypes == ("float32",) and np.isnan(f.nodata)  # int16 counts: float32
        assert f.scales == (1.0,) and f.offsets == (0.0,)  # already unscaled
        assert f.crs.to_epsg() == 4326 and f.tags()["time"] == "2020-08-01"
        expected = decoded.t2m.values[2].astype(np.float32)  # xarray's decode, as float32
        assert np.isnan(expected[0, 0]) and np.array_equal(f.read(1), expected, equal_nan=True)
    assert (planes / "time_2.cf.npy").stat().st_size == 128 + 8 * lat.size * lon.size  # float64
    assert (mnt / "t2m" / "planes" / "time_1.tif").stat().st_size == (
        planes / "time_2020-07-01.tif"
    ).stat().st_size


def test_rotated_pole_and_geostationary_grids(tmp_path, mount):
    """CF grid mappings no GeoTIFF key has a code for reach GDAL through the mount's files (the
    WKT in the citation); one PROJ cannot express gets none, and info.txt says why."""
    import pyproj

    x, y = -28.0 + 0.44 * np.arange(40), 21.0 - 0.44 * np.arange(30)
    write_mapped(tmp_path / "s.zarr" / "rot", ROTATED_POLE, x, y, ("rlat", "rlon"), "degrees")
    angles_x, angles_y = -0.1 + 0.001 * np.arange(40), 0.08 - 0.001 * np.arange(30)
    geos = GEOSTATIONARY
    write_mapped(tmp_path / "s.zarr" / "geos", geos, angles_x, angles_y, ("y", "x"), "rad")
    odd = {"grid_mapping_name": "made_up_projection"}
    write_mapped(tmp_path / "s.zarr" / "odd", odd, x * 1000, y * 1000, ("y", "x"), "m")
    mnt = mount(str(tmp_path / "s.zarr")).path
    with rasterio.open(mnt / "rot" / "tas" / "data.tif") as f:
        proj = f.crs.to_dict()
        assert (proj["proj"], proj["o_lat_p"], proj["lon_0"]) == ("ob_tran", 39.25, 18.0)
        assert f.xy(3, 5) == pytest.approx((x[5], y[3]))
    with rasterio.open(mnt / "geos" / "tas" / "data.tif") as f:
        proj = pyproj.CRS(f.crs.to_wkt()).to_dict()
        assert (proj["proj"], proj["sweep"], proj["h"]) == (
            "geos",
            "x",
            geos["perspective_point_height"],
        )
        height = geos["perspective_point_height"]
        assert f.xy(0, 0) == pytest.approx((angles_x[0] * height, angles_y[0] * height))
    with rasterio.open(mnt / "odd" / "tas" / "data.tif") as f:
        assert f.crs is None and f.xy(0, 0) == pytest.approx((x[0] * 1000, y[0] * 1000))
    info = " ".join((mnt / "odd" / "tas" / "info.txt").read_text().split())
    assert (
        "no CRS (grid_mapping crs: PROJ cannot express grid_mapping_name 'made_up_projection'"
        in info
    )
    assert "Pole rotation" in (mnt / "rot" / "tas" / "info.txt").read_text()


def test_irregular_grid_says_why_in_info(tmp_path, mount):
    lat = np.array([-60.0, -40.0, -25.0, -10.0, 0.0, 10.0, 25.0, 40.0, 60.0])
    url = write_latlon(tmp_path / "irr.zarr", lat, np.arange(0.0, 360.0, 30.0))
    mnt = mount(str(url)).path
    with pytest.warns(rasterio.errors.NotGeoreferencedWarning):
        with rasterio.open(mnt / "t2m" / "planes" / "time_0.tif") as f:
            assert f.transform.is_identity and f.crs is None
            assert f.nodata == -32767
    info = (mnt / "t2m" / "info.txt").read_text()
    assert "none in .tif files: lat is not regular" in info


def test_a_store_written_by_gdal(tmp_path, mount):
    url = tmp_path / "utm.zarr"
    data = write_gdal(url, 32631, (500_000.0, 4_600_000.0), 100.0)
    mnt = mount(str(url)).path
    with rasterio.open(url) as original, rasterio.open(mnt / "utm" / "data.tif") as f:
        assert f.crs.to_epsg() == 32631 and f.transform == original.transform
        assert f.nodata == -9999
        assert np.array_equal(f.read(1), data)


def test_ome_planes_and_composite_are_calibrated(tmp_path, mount):
    """A channel's plane: ImageJ's description (unit, spacing), label, LUT and window. The
    composite of several: OME-XML valid against the schema (physical sizes, the blended
    channels' names and colours), its pixel size in centimetres, which ImageJ shows in µm."""
    from ome_types import from_xml

    written = write_ome_zarr_py(tmp_path, "0.4")
    mnt = mount(str(written.path), "composite").path
    with tifffile.TiffFile(mnt / "s0" / "planes" / "c_1" / "z_2.tif") as f:
        assert f.imagej_metadata["unit"] == "micron"
        assert f.imagej_metadata["spacing"] == 2.0
        numerator, denominator = f.pages[0].tags["YResolution"].value
        assert numerator / denominator == pytest.approx(2.0)  # 0.5 micron pixels
        assert np.array_equal(f.asarray(), written.data[1, 2])
        assert f.imagej_metadata["Labels"] == "GFP"  # its omero name, colour (a LUT), window
        assert f.imagej_metadata["Ranges"] == (0.0, 2000.0)
        lut = np.asarray(f.imagej_metadata["LUTs"]).reshape(3, 256)
        assert lut[:, -1].tolist() == [0, 255, 0] and lut[1, 128] == 128
    composite = mnt / "s0" / "planes" / "composite" / "z_2.tif"
    with tifffile.TiffFile(composite) as f:
        assert f.is_ome and f.series[0].axes == "YXS"
        ome = from_xml(f.ome_metadata, validate=True)
        page = f.pages[0]
        assert page.tags["ResolutionUnit"].value == tifffile.RESUNIT.CENTIMETER
        assert page.get_resolution("MICROMETER") == pytest.approx((2.0, 2.0))
        # ImageJ (no Bio-Formats) shows a cm pixel size of at most 1e-3 cm in µm
        assert 1 / page.get_resolution()[0] <= 1e-3
        assert page.tags["IJMetadata"].value["Labels"] == "composite of DAPI, GFP"
    pixels = ome.images[0].pixels
    assert (pixels.size_x, pixels.size_y, pixels.size_c) == (64, 48, 3)
    assert pixels.physical_size_x == 0.5 and pixels.physical_size_x_unit.value == "µm"
    assert pixels.physical_size_y == 0.5 and pixels.physical_size_z == 2.0
    assert [c.name for c in pixels.channels] == ["composite of DAPI, GFP"]
    blended = {m.k: m.value for m in ome.structured_annotations.map_annotations[0].value.ms}
    assert blended == {
        "DAPI": "color #0000FF, window 100..3000",
        "GFP": "color #00FF00, window 0..2000",
    }
    with tifffile.TiffFile(mnt / "s1" / "planes" / "c_0" / "z_0.tif") as f:
        numerator, denominator = f.pages[0].tags["XResolution"].value
        assert numerator / denominator == pytest.approx(1.0)  # level 1: 1 micron pixels
