"""Stores written by other implementations than zarr-python: tensorstore (a real second
writer), and the metadata quirks of GDAL and netCDF-C (NCZarr) reproduced document by document."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import zarrfs

#: every writer's store reads the same on both paths (tensorstore where it reads the array)
pytestmark = pytest.mark.usefixtures("both_read_paths")

ts = pytest.importorskip("tensorstore")


def _ts_write(path, driver, data, chunks, **metadata):
    spec = {
        "driver": driver,
        "kvstore": {"driver": "file", "path": str(path)},
        "metadata": {"shape": list(data.shape), **metadata},
    }
    if driver == "zarr3":
        spec["metadata"].update(
            chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            data_type=str(data.dtype),
        )
    else:
        spec["metadata"].update(chunks=list(chunks), dtype=data.dtype.str)
    store = ts.open(spec, create=True, delete_existing=True).result()
    store[...].write(data).result()


@pytest.mark.parametrize("dtype", ["uint16", "float32", "int64", "complex64", "bool"])
def test_tensorstore_zarr3(tmp_path, dtype):
    rng = np.random.default_rng(3)
    data = (rng.random((13, 17, 9)) * 100).astype(dtype)
    _ts_write(
        tmp_path / "a",
        "zarr3",
        data,
        (4, 5, 9),
        codecs=[
            {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "gzip", "configuration": {"level": 3}},
        ],
    )
    arr = zarrfs.open(str(tmp_path / "a"))
    np.testing.assert_array_equal(arr[...], data)
    np.testing.assert_array_equal(arr[5, ::-2, 3:], data[5, ::-2, 3:])


def test_tensorstore_zarr3_sharded(tmp_path):
    data = np.arange(32 * 48, dtype="<u4").reshape(32, 48)
    _ts_write(
        tmp_path / "a",
        "zarr3",
        data,
        (16, 24),
        codecs=[
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [8, 8],
                    "codecs": [{"name": "bytes"}, {"name": "zstd"}],
                    "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }
        ],
    )
    arr = zarrfs.open(str(tmp_path / "a"))
    assert arr.shards == (16, 24) and arr.chunks == (8, 8)
    np.testing.assert_array_equal(arr[...], data)
    np.testing.assert_array_equal(arr[3:29, 5:40:3], data[3:29, 5:40:3])


@pytest.mark.parametrize("order", ["C", "F"])
def test_tensorstore_zarr2(tmp_path, order):
    data = np.arange(20 * 30, dtype=">i2").reshape(20, 30)
    _ts_write(
        tmp_path / "a",
        "zarr",
        data,
        (7, 11),
        order=order,
        compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
        fill_value=None,
    )
    arr = zarrfs.open(str(tmp_path / "a"))
    np.testing.assert_array_equal(arr[...], data)


def _v2(root, doc, data, attrs=None):
    root.mkdir(parents=True)
    (root / ".zarray").write_text(json.dumps(doc))
    if attrs is not None:
        (root / ".zattrs").write_text(json.dumps(attrs))
    codec = numcodecs.get_codec(doc["compressor"]) if doc.get("compressor") else None
    chunk = np.ascontiguousarray(data).tobytes()
    (root / "0.0").write_bytes(codec.encode(chunk) if codec else chunk)


def test_netcdf_c_nczarr_quirks(tmp_path):
    """NCZarr writes extra keys into .zarray/.zattrs and `_ARRAY_DIMENSIONS`; `<i1` bytes."""
    data = np.arange(-6, 6, dtype="i1").reshape(3, 4)
    doc = {
        "zarr_format": 2,
        "shape": [3, 4],
        "chunks": [3, 4],
        "dtype": "<i1",
        "fill_value": -127,
        "order": "C",
        "compressor": {"id": "zlib", "level": 1},
        "filters": None,
        "dimension_separator": ".",
        "_nczarr_array": {"dimrefs": ["/x", "/y"], "storage": "chunked"},
    }
    _v2(
        tmp_path / "v",
        doc,
        data,
        {
            "_ARRAY_DIMENSIONS": ["x", "y"],
            "units": "K",
            "_nczarr_attr": {"types": {"units": "<U1"}},
        },
    )
    arr = zarrfs.open(str(tmp_path / "v"))
    np.testing.assert_array_equal(arr[...], data)
    assert arr.attrs["_ARRAY_DIMENSIONS"] == ["x", "y"]


def test_blosc_shuffle_as_string(tmp_path):
    data = np.arange(12, dtype="<f8").reshape(3, 4)
    doc = {
        "zarr_format": 2,
        "shape": [3, 4],
        "chunks": [3, 4],
        "dtype": "<f8",
        "fill_value": "NaN",
        "order": "C",
        "filters": None,
        "compressor": {
            "id": "blosc",
            "cname": "zstd",
            "clevel": 3,
            "shuffle": "bitshuffle",
            "blocksize": 0,
        },
    }
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".zarray").write_text(json.dumps(doc))
    chunk = numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2).encode(data.tobytes())
    (tmp_path / "b" / "0.0").write_bytes(chunk)
    np.testing.assert_array_equal(zarrfs.open(str(tmp_path / "b"))[...], data)


def test_gdal_v3_quirks(tmp_path):
    """GDAL's early v3 driver wrote the `endian` codec name (the draft name of `bytes`), data
    types as {"name": ...} objects and empty storage_transformers."""
    data = np.arange(6 * 5, dtype="<f4").reshape(6, 5)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [6, 5],
        "data_type": {"name": "float32"},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6, 5]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "storage_transformers": [],
        "codecs": [
            {"name": "endian", "configuration": {"endian": "little"}},
            {"name": "gzip", "configuration": {"level": 6}},
        ],
        "attributes": {"_CRS": {"wkt": 'LOCAL_CS["x"]'}},
        "dimension_names": ["y", "x"],
    }
    (tmp_path / "g" / "c" / "0").mkdir(parents=True)
    (tmp_path / "g" / "zarr.json").write_text(json.dumps(doc))
    (tmp_path / "g" / "c" / "0" / "0").write_bytes(numcodecs.GZip(6).encode(data.tobytes()))
    arr = zarrfs.open(str(tmp_path / "g"))
    np.testing.assert_array_equal(arr[...], data)
    assert arr.dimension_names == ("y", "x")
