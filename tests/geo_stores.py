"""Georeferenced stores written by the real writers: xarray (CF coordinates, a ``grid_mapping``
variable) and GDAL itself (its Zarr driver, through rasterio: ``_CRS`` and X/Y coordinates).
Each writer returns what it was fed, so tests compare what GDAL reads back with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: a Lambert conformal grid as CF appendix F describes it (the parameters only, no WKT)
LCC = {
    "grid_mapping_name": "lambert_conformal_conic",
    "standard_parallel": [30.0, 60.0],
    "longitude_of_central_meridian": 10.0,
    "latitude_of_projection_origin": 45.0,
    "false_easting": 0.0,
    "false_northing": 0.0,
    "earth_radius": 6371229.0,
}


def write_latlon(path: Path, lat: np.ndarray, lon: np.ndarray, zarr_format: int = 2) -> Path:
    """``t2m`` (time, lat, lon) packed as int16 with scale, offset and ``_FillValue``."""
    import xarray as xr

    rng = np.random.default_rng(30)
    values = np.round(260 + 40 * rng.random((3, lat.size, lon.size)), 2)
    values[:, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (
                ("time", "lat", "lon"),
                values,
                {"units": "K", "long_name": "2 metre temperature"},
            )
        },
        coords={
            "time": ("time", np.array(["2020-06-01", "2020-07-01", "2020-08-01"], "M8[ns]")),
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )
    encoding = {
        "t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32767}
    }
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=False, encoding=encoding)
    return path


def write_lcc(path: Path, wkt: str | None = None, key: str = "crs_wkt") -> Path:
    """``tas`` (y, x) on a Lambert conformal grid with a ``grid_mapping`` variable (CF
    parameters; ``wkt`` too, under ``key``, when given), x/y in metres, 25 km cells."""
    import xarray as xr

    x = -500_000.0 + 25_000.0 * np.arange(40)
    y = 400_000.0 - 25_000.0 * np.arange(30)  # north up
    attrs = dict(LCC) if wkt is None else {**LCC, key: wkt}
    ds = xr.Dataset(
        {
            "tas": (
                ("y", "x"),
                np.arange(1200, dtype="float32").reshape(30, 40),
                {"grid_mapping": "lambert_conformal_conic", "units": "K"},
            ),
            "lambert_conformal_conic": ((), np.int32(0), attrs),
        },
        coords={
            "x": ("x", x, {"standard_name": "projection_x_coordinate", "units": "m"}),
            "y": ("y", y, {"standard_name": "projection_y_coordinate", "units": "m"}),
        },
    )
    ds.to_zarr(path, zarr_format=2, consolidated=False)
    return path


def write_gdal(path: Path, epsg: int, origin: tuple[float, float], cell: float) -> np.ndarray:
    """A single-band int16 raster written by GDAL's Zarr driver (through rasterio), north up,
    nodata -9999; returns the values. Its array is ``<path>/<path stem>``."""
    import rasterio
    from rasterio.crs import CRS
    from rasterio.transform import from_origin

    data = np.arange(20 * 30, dtype=np.int16).reshape(20, 30)
    data[0, 0] = -9999
    transform = from_origin(origin[0], origin[1], cell, cell)
    with rasterio.open(
        path,
        "w",
        driver="Zarr",
        width=30,
        height=20,
        count=1,
        dtype="int16",
        crs=CRS.from_epsg(epsg),
        transform=transform,
        nodata=-9999,
    ) as f:
        f.write(data, 1)
    return data


#: CORDEX's EUR-44 domain: a rotated pole (CF 1.11 appendix F, rotated_latitude_longitude)
ROTATED_POLE = {
    "grid_mapping_name": "rotated_latitude_longitude",
    "grid_north_pole_latitude": 39.25,
    "grid_north_pole_longitude": -162.0,
    "north_pole_grid_longitude": 0.0,
}
#: GOES-16's full disk (CF 1.11 appendix F, geostationary): x/y are scanning angles in radians
GEOSTATIONARY = {
    "grid_mapping_name": "geostationary",
    "perspective_point_height": 35786023.0,
    "semi_major_axis": 6378137.0,
    "semi_minor_axis": 6356752.31414,
    "inverse_flattening": 298.2572221,
    "latitude_of_projection_origin": 0.0,
    "longitude_of_projection_origin": -75.0,
    "sweep_angle_axis": "x",
}


def write_mapped(
    path: Path, mapping: dict, x: np.ndarray, y: np.ndarray, names: tuple, units: str
) -> Path:
    """``tas`` (y, x) with a ``grid_mapping`` variable holding ``mapping`` (CF parameters, no
    WKT), its axes named ``names`` (y, x) with the CF standard names of ``mapping``'s kind."""
    import xarray as xr

    rotated = mapping["grid_mapping_name"] == "rotated_latitude_longitude"
    standard = (
        ("grid_latitude", "grid_longitude")
        if rotated
        else (
            "projection_y_coordinate",
            "projection_x_coordinate",
        )
    )
    ds = xr.Dataset(
        {
            "tas": (
                names,
                np.arange(y.size * x.size, dtype="float32").reshape(y.size, x.size),
                {"grid_mapping": "crs", "units": "K"},
            ),
            "crs": ((), np.int32(0), dict(mapping)),
        },
        coords={
            names[1]: (names[1], x, {"standard_name": standard[1], "units": units}),
            names[0]: (names[0], y, {"standard_name": standard[0], "units": units}),
        },
    )
    ds.to_zarr(path, zarr_format=2, consolidated=False)
    return path
