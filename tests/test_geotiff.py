"""GeoTIFF and calibrated TIFF from ``zarrfs get -o x.tif``, read back by GDAL (rasterio's
bundled GDAL), tifffile and ome-types, and checked against what the writers were fed: xarray's
CF coordinates and packing, a Lambert conformal grid mapping, GDAL's own Zarr store, and
OME-Zarr pixel sizes and channels. The mount's files are the same bytes (``test_same_bytes``);
``tests/fuse/test_mount_geotiff.py`` reads them through a real mount."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

import zarrfs.engine as engine
from tests.geo_stores import (
    GEOSTATIONARY,
    LCC,
    ROTATED_POLE,
    write_gdal,
    write_latlon,
    write_lcc,
    write_mapped,
)
from tests.ome_writers import write_ome_zarr_py
from zarrfs.cli import main
from zarrfs.fuse.options import MountOptions
from zarrfs.fuse.tree import VirtualTree

rasterio = pytest.importorskip("rasterio")
xr = pytest.importorskip("xarray")


def _get(url, selection: str, out) -> None:
    assert main(["get", str(url), selection, "-o", str(out)]) == 0


def _edges(values: np.ndarray) -> tuple[float, float]:
    """(outer edge of the first cell, spacing) of regular cell centres."""
    step = (values[-1] - values[0]) / (values.size - 1)
    return values[0] - step / 2, step


@pytest.mark.parametrize(
    "lat, lon",
    [
        (np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)),  # north up, -180..180
        (np.linspace(-89.0, 89.0, 90), np.arange(0.0, 360.0, 2.5)),  # south up, 0..360
    ],
    ids=["descending-180", "ascending-360"],
)
def test_latlon_plane_is_a_geotiff_in_epsg4326(tmp_path, lat, lon):
    url = write_latlon(tmp_path / "ll.zarr", lat, lon)
    ds = xr.open_zarr(str(url), mask_and_scale=False, consolidated=False)
    out = tmp_path / "july.tif"
    _get(url / "t2m", "[1]", out)
    with rasterio.open(out) as f:
        x0, dx = _edges(lon)
        y0, dy = _edges(lat)
        assert f.crs.to_epsg() == 4326
        assert f.transform.to_gdal() == pytest.approx((x0, dx, 0.0, y0, 0.0, dy))
        assert f.nodata == -32767
        assert f.scales == (0.01,) and f.offsets == (273.15,)
        assert f.units == ("K",) and f.descriptions == ("2 metre temperature",)
        tags = f.tags()
        assert tags["time"] == "2020-07-01" and tags["AREA_OR_POINT"] == "Area"
        assert tags["long_name"] == "2 metre temperature"
        band = f.read(1)
        assert band.dtype == np.int16
        assert np.array_equal(band, ds.t2m.values[1])  # the stored values, unscaled
        # the centre of pixel (row 3, column 5) is the coordinates written there
        assert f.xy(3, 5) == pytest.approx((lon[5], lat[3]))


def test_decoded_plane_is_float32_with_nan_as_nodata(tmp_path):
    """``get --decode``: int16 counts unpacked to float32 (xarray's values, to float32), NaN
    as nodata, no scale or offset left to apply; a float64 variable stays float64."""
    import zarr

    lat, lon = np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)
    url = write_latlon(tmp_path / "ll.zarr", lat, lon)
    decoded = xr.open_zarr(str(url), consolidated=False)
    out = tmp_path / "july.tif"
    assert main(["get", str(url / "t2m"), "[1]", "--decode", "-o", str(out)]) == 0
    with rasterio.open(out) as f:
        assert f.dtypes == ("float32",) and np.isnan(f.nodata)
        assert f.scales == (1.0,) and f.offsets == (0.0,) and f.crs.to_epsg() == 4326
        expected = decoded.t2m.values[1].astype(np.float32)
        assert np.isnan(expected[0, 0]) and np.array_equal(f.read(1), expected, equal_nan=True)
    fine = zarr.open_array(str(url / "t2m"), mode="r+")  # steps float32 cannot tell apart
    fine.attrs["scale_factor"] = 1e-9  # beside an offset of 273.15
    out64 = tmp_path / "fine.tif"
    assert main(["get", str(url / "t2m"), "[1]", "--decode", "-o", str(out64)]) == 0
    with rasterio.open(out64) as f:
        assert f.dtypes == ("float64",)


def test_a_window_shifts_the_geotransform(tmp_path):
    lat, lon = np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)
    url = write_latlon(tmp_path / "ll.zarr", lat, lon)
    out = tmp_path / "w.tif"
    _get(url / "t2m", "[0, 4:20:2, ::-1]", out)
    with rasterio.open(out) as f:
        assert f.shape == (8, lon.size)
        assert f.xy(0, 0) == pytest.approx((lon[-1], lat[4]))
        assert f.xy(7, 10) == pytest.approx((lon[-11], lat[18]))
        assert f.tags()["time"] == "2020-06-01"


def test_irregular_coordinates_get_no_geotransform(tmp_path):
    lat = np.array([-60.0, -40.0, -25.0, -10.0, 0.0, 10.0, 25.0, 40.0, 60.0])  # not regular
    url = write_latlon(tmp_path / "irr.zarr", lat, np.arange(0.0, 360.0, 30.0))
    out = tmp_path / "irr.tif"
    _get(url / "t2m", "[0]", out)
    with rasterio.open(out) as f:
        assert f.transform.is_identity and f.crs is None  # none rather than a wrong one
        assert f.nodata == -32767 and f.scales == (0.01,)  # the rest still holds
    geo = engine.cf.georeference(engine.open(str(url))["t2m"])
    assert isinstance(geo, engine.cf.NoGeoreference) and "lat is not regular" in geo.reason
    text = engine.format_summary(engine.summary(engine.open(str(url))["t2m"]))
    assert "lat is not regular" in text


def test_lambert_conformal_grid_mapping_parameters(tmp_path):
    url = write_lcc(tmp_path / "lcc.zarr")
    out = tmp_path / "lcc.tif"
    _get(url / "tas", "[...]", out)
    with rasterio.open(out) as f:
        proj = f.crs.to_dict()
        assert proj["proj"] == "lcc"
        assert (proj["lat_1"], proj["lat_2"]) == tuple(LCC["standard_parallel"])
        assert proj["lon_0"] == LCC["longitude_of_central_meridian"]
        assert proj["lat_0"] == LCC["latitude_of_projection_origin"]
        assert proj["R"] == LCC["earth_radius"]
        assert f.transform.to_gdal() == pytest.approx(
            (-512_500.0, 25_000.0, 0.0, 412_500.0, 0.0, -25_000.0)
        )
        assert np.array_equal(f.read(1), np.arange(1200, dtype="float32").reshape(30, 40))


def test_rotated_pole_grid_mapping(tmp_path):
    """CORDEX's rotated pole (no GeoTIFF key has a code for it): GDAL reads it from the WKT in
    the citation, as PROJ's ``ob_tran`` with the pole written."""
    x, y = -28.0 + 0.44 * np.arange(40), 21.0 - 0.44 * np.arange(30)
    url = write_mapped(tmp_path / "rot.zarr", ROTATED_POLE, x, y, ("rlat", "rlon"), "degrees")
    out = tmp_path / "rot.tif"
    _get(url / "tas", "[...]", out)
    with rasterio.open(out) as f:
        proj = f.crs.to_dict()
        assert (proj["proj"], proj["o_proj"]) == ("ob_tran", "longlat")
        assert proj["o_lat_p"] == ROTATED_POLE["grid_north_pole_latitude"]
        assert proj["lon_0"] == ROTATED_POLE["grid_north_pole_longitude"] + 180
        assert proj["o_lon_p"] == ROTATED_POLE["north_pole_grid_longitude"]
        assert f.transform.to_gdal() == pytest.approx((-28.22, 0.44, 0.0, 21.22, 0.0, -0.44))
        assert f.xy(3, 5) == pytest.approx((x[5], y[3]))
        assert np.array_equal(f.read(1), np.arange(1200, dtype="float32").reshape(30, 40))


def test_geostationary_grid_mapping_with_scanning_angles(tmp_path):
    """GOES-16's view, x/y in radians (CF: scanning angles): GDAL gets the CRS with its sweep
    axis and satellite height, and the geotransform in metres (angle times that height)."""
    import pyproj

    x, y = -0.1 + 0.001 * np.arange(40), 0.08 - 0.001 * np.arange(30)
    url = write_mapped(tmp_path / "geos.zarr", GEOSTATIONARY, x, y, ("y", "x"), "rad")
    out = tmp_path / "geos.tif"
    _get(url / "tas", "[...]", out)
    height = GEOSTATIONARY["perspective_point_height"]
    with rasterio.open(out) as f:
        proj = pyproj.CRS(f.crs.to_wkt()).to_dict()  # rasterio's to_dict drops the sweep
        assert (proj["proj"], proj["sweep"]) == ("geos", "x")
        assert proj["h"] == height and proj["lon_0"] == -75
        ellipsoid = pyproj.CRS(f.crs.to_wkt()).ellipsoid
        assert ellipsoid.semi_major_metre == GEOSTATIONARY["semi_major_axis"]
        assert ellipsoid.semi_minor_metre == pytest.approx(GEOSTATIONARY["semi_minor_axis"])
        expected = ((x[0] - 0.0005) * height, 0.001 * height, 0.0)
        expected += ((y[0] + 0.0005) * height, 0.0, -0.001 * height)
        assert f.transform.to_gdal() == pytest.approx(expected, rel=1e-9)


def test_a_grid_mapping_proj_cannot_express_gets_no_crs(tmp_path, capsys):
    x, y = 1000.0 * np.arange(40), 1000.0 * np.arange(30)[::-1]
    mapping = {"grid_mapping_name": "made_up_projection", "false_easting": 0.0}
    url = write_mapped(tmp_path / "odd.zarr", mapping, x, y, ("y", "x"), "m")
    out = tmp_path / "odd.tif"
    _get(url / "tas", "[...]", out)
    with rasterio.open(out) as f:
        assert f.crs is None  # none rather than a wrong one; the grid is still placed
        assert f.transform.to_gdal() == pytest.approx((-500.0, 1000.0, 0.0, 29500.0, 0.0, -1000.0))
    capsys.readouterr()
    assert main(["info", str(url / "tas")]) == 0
    out_text = " ".join(capsys.readouterr().out.split())
    assert (
        "no CRS (grid_mapping crs: PROJ cannot express grid_mapping_name 'made_up_projection'"
        in (out_text)
    )


def test_grid_mapping_crs_wkt_with_an_epsg_code(tmp_path):
    from rasterio.crs import CRS

    wkt = CRS.from_epsg(3035).to_wkt()
    url = write_lcc(tmp_path / "wkt.zarr", wkt=wkt)
    out = tmp_path / "wkt.tif"
    _get(url / "tas", "[...]", out)
    with rasterio.open(out) as f:
        assert f.crs.to_epsg() == 3035  # crs_wkt wins over the parameters


def test_spatial_ref_without_an_epsg_code_travels_as_wkt(tmp_path):
    """rioxarray's ``spatial_ref``: a WKT with no EPSG code reaches GDAL whole."""
    from rasterio.crs import CRS

    proj4 = "+proj=laea +lat_0=52 +lon_0=10 +x_0=4321000 +y_0=3210000 +ellps=GRS80 +units=m"
    url = write_lcc(tmp_path / "sr.zarr", wkt=CRS.from_proj4(proj4).to_wkt(), key="spatial_ref")
    out = tmp_path / "sr.tif"
    _get(url / "tas", "[...]", out)
    with rasterio.open(out) as f:
        proj = f.crs.to_dict()
        assert proj["proj"] == "laea" and (proj["lat_0"], proj["lon_0"]) == (52, 10)
        assert (proj["x_0"], proj["y_0"]) == (4321000, 3210000)


def test_a_store_written_by_gdal(tmp_path, capsys):
    url = tmp_path / "utm.zarr"
    data = write_gdal(url, 32631, (500_000.0, 4_600_000.0), 100.0)
    out = tmp_path / "utm.tif"
    _get(url / "utm", "[...]", out)
    with rasterio.open(url) as original, rasterio.open(out) as f:
        assert f.crs == original.crs and f.crs.to_epsg() == 32631
        assert f.transform == original.transform
        assert f.nodata == original.nodata == -9999
        assert np.array_equal(f.read(1), data)
    capsys.readouterr()
    assert main(["info", str(url / "utm")]) == 0  # opened by its own URL: its parent's X, Y
    assert "EPSG:32631 (from _CRS); corner 500000, 4600000; cells 100 x -100" in (
        capsys.readouterr().out
    )


def test_same_bytes_as_the_mount(tmp_path):
    url = write_latlon(tmp_path / "ll.zarr", np.linspace(60.0, -60.0, 25), np.arange(0, 360, 15.0))
    out = tmp_path / "p.tif"
    _get(url / "t2m", "[2]", out)
    tree = VirtualTree(lambda: engine.open(str(url)), MountOptions())
    entry = tree.resolve("/t2m/planes/time_2020-08-01.tif")
    assert bytes(entry.open().read(0, entry.size)) == out.read_bytes()


def test_ome_plane_is_calibrated_for_imagej(tmp_path):
    written = write_ome_zarr_py(tmp_path, "0.4")
    out = tmp_path / "plane.tif"
    _get(written.path / "s0", "[1, 2]", out)
    with tifffile.TiffFile(out) as f:
        ij = f.imagej_metadata
        assert ij["unit"] == "micron" and ij["spacing"] == 2.0
        assert ij["Labels"] == "GFP" and ij["Ranges"] == (0.0, 2000.0)
        page = f.pages[0]
        x = page.tags["XResolution"].value
        assert x[0] / x[1] == pytest.approx(1 / 0.5)  # pixels per micron
        assert np.array_equal(page.asarray(), written.data[1, 2])


def test_ome_channels_become_an_ome_tiff_that_validates(tmp_path):
    from ome_types import from_xml

    written = write_ome_zarr_py(tmp_path, "0.4")
    out = tmp_path / "stack.ome.tif"
    _get(written.path / "s0", "[0:2, 1]", out)
    with tifffile.TiffFile(out) as f:
        ome = from_xml(f.ome_metadata, validate=True)
        assert np.array_equal(f.asarray(), written.data[0:2, 1])
        page = f.pages[0]  # Fiji without Bio-Formats: centimetres, which ImageJ shows in µm
        assert page.tags["ResolutionUnit"].value == tifffile.RESUNIT.CENTIMETER
        assert page.get_resolution("MICROMETER") == pytest.approx((2.0, 2.0))
    pixels = ome.images[0].pixels
    assert [c.name for c in pixels.channels] == ["DAPI", "GFP"]
    assert [c.color.as_rgb_tuple()[:3] for c in pixels.channels] == [(0, 0, 255), (0, 255, 0)]
    assert pixels.physical_size_x == 0.5 and pixels.physical_size_x_unit.value == "µm"
    assert pixels.physical_size_y == 0.5 and (pixels.size_c, pixels.size_z) == (2, 1)


def test_malformed_crs_attributes_leave_the_rest(tmp_path):
    """A grid_mapping naming nothing and a _CRS that is not GDAL's: the lat/lon grid still gets
    EPSG:4326 and its geotransform; a coordinate that is dates gives a reason, not an error."""
    import zarr

    lat, lon = np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)
    url = write_latlon(tmp_path / "bad.zarr", lat, lon)
    t2m = zarr.open_array(str(url / "t2m"), mode="r+")
    t2m.attrs.update({"grid_mapping": "nowhere", "_CRS": "EPSG:nope"})
    geo = engine.cf.georeference(engine.open(str(url))["t2m"])
    assert geo.crs.epsg == 4326 and (geo.x0, geo.dx) == (-183.75, 7.5)
    t2m.attrs.update({"grid_mapping": 7, "_CRS": {"wkt": 5, "url": ["x"]}})
    assert engine.cf.georeference(engine.open(str(url))["t2m"]).crs.epsg == 4326
    across_time = engine.cf.georeference(engine.open(str(url))["t2m"], axes=(0, 2))
    assert isinstance(across_time, engine.cf.NoGeoreference)
    assert "not over a map" in across_time.reason


def test_a_stack_is_one_band_per_plane(tmp_path):
    lat, lon = np.linspace(60.0, -60.0, 25), np.arange(-180.0, 180.0, 7.5)
    url = write_latlon(tmp_path / "ll.zarr", lat, lon)
    raw = xr.open_zarr(str(url), mask_and_scale=False, consolidated=False)
    out = tmp_path / "summer.tif"
    _get(url / "t2m", "[0:3, 2:5]", out)
    with rasterio.open(out) as f:
        assert f.count == 3 and f.crs.to_epsg() == 4326
        assert f.xy(0, 0) == pytest.approx((lon[0], lat[2]))
        assert f.scales == (0.01,) * 3 and f.offsets == (273.15,) * 3 and f.nodata == -32767
        assert [f.tags(b)["time"] for b in (1, 2, 3)] == ["2020-06-01", "2020-07-01", "2020-08-01"]
        assert f.descriptions[1] == "2 metre temperature at time=2020-07-01"
        assert np.array_equal(f.read(), raw.t2m.values[0:3, 2:5])


def test_each_channel_plane_names_its_own_channel(tmp_path):
    """Planes of one channel share a header; another channel's planes get their own."""
    import io

    written = write_ome_zarr_py(tmp_path, "0.4")
    tree = VirtualTree(lambda: engine.open(str(written.path)), MountOptions())
    labels = []
    for name in ("c_0/z_1", "c_0/z_3", "c_1/z_1", "c_2/z_0"):
        entry = tree.resolve(f"/s0/planes/{name}.tif")
        with tifffile.TiffFile(io.BytesIO(bytes(entry.open().read(0, entry.size)))) as f:
            labels.append(f.imagej_metadata["Labels"])
            c, z = int(name[2]), int(name[-1])
            assert np.array_equal(f.asarray(), written.data[c, z])
    assert labels == ["DAPI", "DAPI", "GFP", "RFP"]


def test_a_level_below_its_image_is_calibrated_as_in_the_mount(tmp_path):
    """ngff-zarr's levels sit two groups below the image (``scale0/image``): ``get`` finds the
    image there, as the mount does, and writes the mount's bytes."""
    from tests.ome_writers import write_ngff_zarr

    written = write_ngff_zarr(tmp_path, "0.4")
    out = tmp_path / "plane.tif"
    _get(written.path / "scale0" / "image", "[1, 2]", out)
    with tifffile.TiffFile(out) as f:
        assert f.imagej_metadata["unit"] == "micron" and f.imagej_metadata["spacing"] == 2.0
        assert f.pages[0].get_resolution() == pytest.approx((2.0, 2.0))  # 0.5 µm pixels
        assert np.array_equal(f.asarray(), written.data[1, 2])
    tree = VirtualTree(lambda: engine.open(str(written.path)), MountOptions())
    entry = tree.resolve("/scale0/image/planes/c_1/z_2.tif")
    assert bytes(entry.open().read(0, entry.size)) == out.read_bytes()


@pytest.mark.parametrize(
    "unit, symbol, per_cm",
    [("nanometer", "nm", 1e7 / 250), ("foot", "ft", 1 / (250 * 30.48)), ("furlong", None, None)],
)
def test_ome_units_name_their_length_or_leave_it_out(unit, symbol, per_cm):
    """Every NGFF space unit becomes OME's symbol and a resolution per centimetre; a unit OME
    has no symbol for leaves the size out, rather than OME's default (µm)."""
    from types import SimpleNamespace

    from ome_types import from_xml

    from zarrfs import tiff_ome

    axes = tuple(SimpleNamespace(name=n, type="space", unit=unit) for n in "zyx")
    level = SimpleNamespace(
        image=SimpleNamespace(multiscale=SimpleNamespace(axes=axes), channel_axis=None),
        dataset=SimpleNamespace(scale=(1.0, 250.0, 250.0)),
    )
    options = tiff_ome.ome_options(level, [slice(0, 2), slice(None), slice(None)], (2, 8, 8))
    ome = options["metadata"]
    if symbol is None:
        assert "PhysicalSizeX" not in ome and "resolution" not in options
        return
    assert ome["PhysicalSizeXUnit"] == symbol and ome["PhysicalSizeX"] == 250.0
    assert options["resolutionunit"] == "CENTIMETER"
    assert options["resolution"] == pytest.approx((per_cm, per_cm))
    import tifffile

    xml = tifffile.OmeXml()
    xml.addimage(np.uint8, (2, 8, 8), (2, 1, 1, 8, 8, 1), **ome)
    pixels = from_xml(xml.tostring(), validate=True).images[0].pixels
    assert pixels.physical_size_x_unit.value == symbol
