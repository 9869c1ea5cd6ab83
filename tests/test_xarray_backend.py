"""The xarray backend: ``xarray.open_dataset(url, engine="zarrfs", chunks={})``.

The venv's installed zarrfs may be another checkout, so the tests pass the entry point class as
``engine=``; one test checks that ``pyproject.toml`` registers that class under ``zarrfs``.
"""

from __future__ import annotations

import importlib
import json
import pickle
import tomllib

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.cf_stores import climate_dataset, write_xarray

xr = pytest.importorskip("xarray")
pytest.importorskip("dask")
from zarrfs.xarray_backend import ZarrfsBackendEntrypoint  # noqa: E402

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def _open(url, **kwargs):
    return xr.open_dataset(str(url), engine=ZarrfsBackendEntrypoint, chunks={}, **kwargs)


def test_the_entry_point_is_registered_in_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    target = project["entry-points"]["xarray.backends"]["zarrfs"]
    module, _, name = target.partition(":")
    assert getattr(importlib.import_module(module), name) is ZarrfsBackendEntrypoint
    # installed, it must not take .zarr paths from xarray's own engine unasked
    assert not ZarrfsBackendEntrypoint().guess_can_open("/data/x.zarr")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
@pytest.mark.parametrize("dask", [False, True])
def test_dataset_equals_xarrays_own_reading(tmp_path, zarr_format, consolidated, dask):
    url = write_xarray(tmp_path / "c.zarr", zarr_format, consolidated, dask=dask)
    ours = _open(url)
    theirs = xr.open_zarr(str(url), consolidated=consolidated)
    xr.testing.assert_identical(ours.load(), theirs.load())
    assert set(ours.coords) == {"time", "lat", "lon"}
    assert ours.tas.dtype == np.float64 and ours.tas.attrs["units"] == "K"


@pytest.mark.usefixtures("python_pipeline")  # counts decoded chunks, and the cache's hits
def test_lazy_and_chunked_like_the_zarr_chunks(tmp_path):
    url = write_xarray(tmp_path / "c.zarr", 3)
    engine.reset_stats()
    ds = _open(url)
    # only the three 1-D coordinates (one chunk each) are read, for xarray's indexes
    assert engine.stats()["chunks_decoded"] <= 3
    assert ds.tas.chunks == ((7, 7, 7, 3), (18,), (9, 9))
    assert ds.tas.encoding["preferred_chunks"] == {"time": 7, "lat": 18, "lon": 9}
    engine.reset_stats()
    point = ds.tas.isel(lat=4, lon=11).values
    assert engine.stats()["chunks_decoded"] == 4  # the chunks under that point only
    assert np.allclose(point, climate_dataset().tas.values[:, 4, 11])


def test_mean_with_a_dask_distributed_cluster(tmp_path):
    from dask.distributed import Client, LocalCluster

    url = write_xarray(tmp_path / "c.zarr", 2, dask=True)
    expected = np.nanmean(climate_dataset().tas.values, axis=0)
    cluster = LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    try:
        with Client(cluster):
            mean = _open(url).tas.mean("time").compute()
    finally:
        cluster.close()
    assert np.allclose(mean.values, expected, equal_nan=True, rtol=0, atol=1e-9)


def test_dask_arrays_pickle_as_urls(tmp_path):
    """Dask's worker processes get the arrays by pickle: each reopens the store there."""
    from zarrfs.xarray_backend import ZarrfsBackendArray

    url = write_xarray(tmp_path / "c.zarr", 2)
    tas = _open(url).tas
    copy = pickle.loads(pickle.dumps(tas.data))
    assert np.array_equal(copy.compute(), tas.values, equal_nan=True)
    backend = ZarrfsBackendArray(str(url), "tas", {})
    clone = pickle.loads(pickle.dumps(backend))
    assert clone._array is None and clone.shape == backend.shape
    key = (slice(0, 2), 3, slice(None))
    assert np.array_equal(clone._read(key), backend._read(key))


def test_a_writer_quirk_zarr_python_refuses(tmp_path):
    """GDAL's early v3 driver named the ``bytes`` codec ``endian`` (its draft name): zarr-python
    refuses the array, zarrfs reads it."""
    url = write_xarray(tmp_path / "c.zarr", 3, consolidated=False)
    doc_path = url / "sst" / "zarr.json"
    doc = json.loads(doc_path.read_text())
    assert doc["codecs"][0]["name"] == "bytes"
    doc["codecs"][0]["name"] = "endian"
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="endian"):
        xr.open_zarr(str(url), consolidated=False)
    ds = _open(url)
    assert np.array_equal(ds.sst.values, climate_dataset().sst.values, equal_nan=True)


def test_over_http(tmp_path, http_server):
    url = write_xarray(tmp_path / "c.zarr", 3, consolidated=True)
    server = http_server(str(tmp_path / "c.zarr"))
    ds = _open(server.url)
    expected = xr.open_zarr(str(url)).load()
    xr.testing.assert_identical(ds.load(), expected)


def test_decode_times_false_keeps_the_numbers(tmp_path):
    url = write_xarray(tmp_path / "c.zarr", 2, calendar="360_day")
    ds = _open(url, decode_times=False)
    assert ds.time.dtype.kind in "iu" and ds.time.attrs["calendar"] == "360_day"
    assert _open(url).time.values[1].calendar == "360_day"


@pytest.mark.parametrize(
    "attrs",
    [
        {"scale_factor": "0.5"},
        {"units": "days since never"},
        {"_FillValue": "none", "add_offset": [1, 2]},
    ],
)
def test_malformed_cf_attributes_open_with_the_stored_values(tmp_path, attrs):
    import zarr

    data = np.arange(6, dtype="i2").reshape(2, 3)
    z = zarr.create_array(
        str(tmp_path / "bad.zarr"), shape=data.shape, dtype="i2", zarr_format=2, fill_value=None
    )
    z[...] = data
    z.attrs.update({**attrs, "long_name": "kept", "_ARRAY_DIMENSIONS": ["y", "x"]})
    ds = _open(tmp_path / "bad.zarr")
    assert np.array_equal(ds["data"].values, data)
    assert ds["data"].attrs == {"long_name": "kept"}
    assert ds["data"].encoding["zarrfs_malformed_attributes"] == attrs


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_over_object_stores(tmp_path, request, kind):
    """S3 (moto) and Azure Blob Storage (Azurite) through obstore, Dask chunks included."""
    url = write_xarray(tmp_path / "c.zarr", 3, consolidated=True)
    remote, options = request.getfixturevalue(f"{kind}_store")(tmp_path / "c.zarr")
    ds = _open(remote, storage_options=options)
    xr.testing.assert_identical(ds.load(), xr.open_zarr(str(url)).load())
