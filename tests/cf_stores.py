"""Climate stores written by the real writers: xarray's ``to_zarr`` and netCDF-C's ``nccopy``.

The dataset is the one of issue 21: ``tas`` (time, lat, lon) packed as int16 with
``scale_factor``, ``add_offset`` and ``_FillValue`` -32768, a float32 ``sst`` with NaN over a
patch of "ocean", a CF time coordinate, ``lat``/``lon`` coordinates with units.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

PACKING = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32768}


def climate_dataset(calendar: str = "standard", steps: int = 24, dask: bool = False):
    """The dataset fed to the writers (values chosen so that packing loses nothing)."""
    import xarray as xr

    rng = np.random.default_rng(21)
    lat = np.linspace(-89.5, 89.5, 18)
    lon = np.arange(0.0, 360.0, 20.0)
    tas = np.round(250.0 + 50.0 * rng.random((steps, lat.size, lon.size)), 2)
    tas[:, :3, :5] = np.nan
    time_attrs = {"units": "days since 2000-01-01", "calendar": calendar}
    ds = xr.Dataset(
        {
            "tas": (
                ("time", "lat", "lon"),
                tas,
                {"units": "K", "long_name": "air temperature", "standard_name": "air_temperature"},
            ),
            "sst": (("time", "lat", "lon"), tas.astype("float32"), {"units": "K"}),
        },
        coords={
            "time": ("time", np.arange(steps) * 3, time_attrs),
            "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": ("lon", lon, {"units": "degrees_east"}),
        },
    )
    ds = xr.decode_cf(ds)
    return ds.chunk({"time": 5, "lat": 9}) if dask else ds


def write_xarray(
    path: Path,
    zarr_format: int = 2,
    consolidated: bool = True,
    calendar: str = "standard",
    dask: bool = False,
    steps: int = 24,
) -> Path:
    ds = climate_dataset(calendar, steps, dask)
    encoding = {"tas": dict(PACKING)}
    if not dask:
        encoding["tas"]["chunks"] = (7, 18, 9)
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=consolidated, encoding=encoding)
    return path


#: where ``ta`` holds the fill value -999 (time 1, level 0, lat 1, lon 0)
TA_FILL_AT = (1, 0, 1, 0)


def _cdl() -> str:
    values = [str(v) for v in range(1, 121)]
    values[int(np.ravel_multi_index(TA_FILL_AT, (4, 3, 5, 2)))] = "-999"
    return (
        """netcdf climate {
dimensions:
    time = 4 ;
    level = 3 ;
    lat = 5 ;
    lon = 2 ;
variables:
    double time(time) ;
        time:units = "hours since 2001-02-03 04:00:00" ;
        time:calendar = "360_day" ;
    int level(level) ;
        level:units = "hPa" ;
    float lat(lat) ;
        lat:units = "degrees_north" ;
    float lon(lon) ;
        lon:units = "degrees_east" ;
    short ta(time, level, lat, lon) ;
        ta:units = "K" ;
        ta:long_name = "air temperature" ;
        ta:scale_factor = 0.5 ;
        ta:add_offset = 200. ;
        ta:_FillValue = -999s ;
data:
    time = 0, 6, 12, 18 ;
    level = 1000, 850, 500 ;
    lat = -60, -30, 0, 30, 60 ;
    lon = 10.5, 20.5 ;
    ta = """
        + ", ".join(values)
        + """ ;
}
"""
    )


def netcdf_tools() -> bool:
    return shutil.which("ncgen") is not None and shutil.which("nccopy") is not None


def write_nczarr(tmp_path: Path, mode: str = "nczarr") -> Path:
    """``ncgen`` a netCDF-4 file (``ta`` (time, level, lat, lon) packed int16, 360_day times),
    ``nccopy`` it to Zarr with NCZarr's ``mode``
    ("nczarr": netCDF-C's own layout, "zarr": pure Zarr v2 with ``_ARRAY_DIMENSIONS``)."""
    cdl = tmp_path / "climate.cdl"
    cdl.write_text(_cdl())
    nc = tmp_path / "climate.nc"
    subprocess.run(["ncgen", "-4", "-o", str(nc), str(cdl)], check=True, capture_output=True)
    out = tmp_path / f"climate-{mode}.zarr"
    subprocess.run(
        ["nccopy", str(nc), f"file://{out}#mode={mode},file"], check=True, capture_output=True
    )
    return out


def write_encoded(
    path: Path,
    variables: dict,
    zarr_format: int = 2,
    chunks: tuple[int, ...] | None = None,
) -> Path:
    """Stored values written as they are by xarray's ``to_zarr``, with CF attributes:
    ``variables`` maps a name to ``(stored, attrs, fill)``: the stored array (its first
    dimensions named ``time``, ``y``, ``x``), attributes such as ``scale_factor`` or
    ``missing_value`` (xarray writes them as given), and the ``_FillValue`` (None: none),
    which xarray writes as v2's ``fill_value`` or v3's ``_FillValue`` attribute."""
    import warnings

    import xarray as xr

    data, encoding = {}, {}
    for name, (stored, attrs, fill) in variables.items():
        dims = ("time", "y", "x")[3 - stored.ndim :]
        data[name] = (dims, stored, attrs)
        encoding[name] = {"_FillValue": fill}
        if chunks is not None:
            encoding[name]["chunks"] = chunks
    with warnings.catch_warnings():  # v3 consolidated metadata is not in the spec (zarr says)
        warnings.simplefilter("ignore")
        xr.Dataset(data).to_zarr(path, zarr_format=zarr_format, encoding=encoding)
    return path
