"""A CF time series at one point over loopback HTTP: only the chunks under the point are
requested, all in one round trip (counted by the server, not timed). The latency is that of
``test_remote`` (a busy CI machine must still issue one wave before the first answer);
``benchmarks/bench_cf.py`` counts the same at 20 ms."""

from __future__ import annotations

import numpy as np
import pytest
from fsspec.implementations.http import HTTPFileSystem

import zarrfs.engine as engine
from zarrfs.engine import cf

xr = pytest.importorskip("xarray")

STEPS = 10_000
LATENCY = 0.4


@pytest.fixture(autouse=True)
def _fresh_client():
    # a pooled keep-alive connection to an earlier test's server would cost a retried request
    HTTPFileSystem.clear_instance_cache()
    yield


def _series_store(path):
    rng = np.random.default_rng(7)
    tas = np.round(250 + 50 * rng.random((STEPS, 8, 8)), 2)
    tas[::97, 2, 5] = np.nan
    ds = xr.Dataset(
        {"tas": (("time", "lat", "lon"), tas, {"units": "K"})},
        coords={
            "time": ("time", np.arange(STEPS), {"units": "hours since 1990-01-01"}),
            "lat": ("lat", np.arange(8.0)),
            "lon": ("lon", np.arange(8.0)),
        },
    )
    encoding = {
        "tas": {
            "dtype": "int16",
            "scale_factor": 0.01,
            "add_offset": 273.15,
            "_FillValue": -32768,
            "chunks": (1000, 4, 4),
        }
    }
    xr.decode_cf(ds).to_zarr(path, zarr_format=2, consolidated=True, encoding=encoding)
    return path


def test_time_series_at_a_point_in_one_round_trip(tmp_path, http_server):
    path = _series_store(tmp_path / "series.zarr")
    server = http_server(str(path), latency=LATENCY)
    tas = engine.open(server.url)["tas"]
    engine.clear_caches()
    server.stats.reset()
    series = cf.read_decoded(tas, (slice(None), 2, 5))
    chunk_gets = server.stats.records(r"/tas/")
    assert sorted(r.path.rsplit("/", 1)[-1] for r in chunk_gets) == [
        f"{t}.0.1" for t in range(10)
    ]  # the 10 chunks under (lat 2, lon 5), nothing else
    assert len(server.stats.records()) == 10
    assert server.stats.round_trips() == 1
    expected = xr.open_zarr(str(path)).tas.values[:, 2, 5]
    assert np.array_equal(series, expected, equal_nan=True) and np.isnan(series[::97]).all()


def test_time_series_through_the_xarray_backend(tmp_path, http_server):
    from zarrfs.xarray_backend import ZarrfsBackendEntrypoint

    path = _series_store(tmp_path / "series.zarr")
    server = http_server(str(path), latency=LATENCY)
    ds = xr.open_dataset(server.url, engine=ZarrfsBackendEntrypoint)
    engine.clear_caches()
    server.stats.reset()
    series = ds.tas.isel(lat=2, lon=5).values
    assert len(server.stats.records(r"/tas/")) == 10 and len(server.stats.records()) == 10
    assert server.stats.round_trips() == 1
    assert np.array_equal(series, xr.open_zarr(str(path)).tas.values[:, 2, 5], equal_nan=True)


def test_coordinates_found_with_one_listing(tmp_path, http_server):
    """A group without consolidated metadata is listed once for all of a variable's
    dimensions (a round trip each was 3 of the 6 before an OME image's first frame)."""
    path = tmp_path / "plain.zarr"
    ds = xr.Dataset(
        {"tas": (("time", "lat", "lon"), np.zeros((4, 3, 2), "f4"))},
        coords={"time": np.arange(4), "lat": [1.0, 2.0, 3.0], "lon": [5.0, 6.0]},
    )
    ds.to_zarr(path, zarr_format=2, consolidated=False)
    server = http_server(str(path))
    root = engine.open(server.url)
    server.stats.reset()
    found = cf.coordinate_arrays(root, ("time", "lat", "lon", "time"))
    assert sorted(found) == ["lat", "lon", "time"]
    assert found["lat"][:].tolist() == [1.0, 2.0, 3.0]
    listings = [r for r in server.stats.records() if r.path.rstrip("/") == ""]
    assert len(listings) == 1, server.stats.log
