"""Stores that answer 403 for objects that do not exist.

S3 (and S3-compatible servers, over s3:// or plain HTTPS) answer a client that may read objects
but not list the bucket with 403 AccessDenied for every key that is not there. Opening a node
probes ``zarr.json``, ``.zarray``, ``.zgroup`` and ``.zattrs`` at once, so on such a bucket
every node had some of its probes refused, and no node opened. Those refusals cannot matter
once the documents that decide the node were read; everywhere else a 403 stays an error (a
missing chunk on such a bucket is never taken for the fill value).
"""

from __future__ import annotations

import numpy as np
import pytest
from fsspec.implementations.http import HTTPFileSystem

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine.store import ByteRequest, Store


@pytest.fixture(autouse=True)
def _fresh_client():
    HTTPFileSystem.clear_instance_cache()  # no pooled connection to an earlier test's server
    engine.set_cache_size(0)
    yield
    engine.set_cache_size(512 * 2**20)


def _objects_only(http_server, root):
    server = http_server(root)
    server.objects_only = True
    return server


def test_v3_array_and_consolidated_group_open(http_server, zarr_writer):
    data = np.arange(24 * 20, dtype="f4").reshape(24, 20)
    w = zarr_writer(
        data,
        path="g/a",
        chunks=(8, 8),
        attributes={"unit": "K"},
        dimension_names=("y", "x"),
        consolidate=True,
    )
    server = _objects_only(http_server, w.root)
    arr = zarrfs.open(f"{server.url}/g/a")
    np.testing.assert_array_equal(arr[...], data)
    assert arr.attrs == {"unit": "K"} and arr.dimension_names == ("y", "x")
    root = zarrfs.open(server.url)  # .zmetadata refused: the v3 inline consolidated metadata
    assert root.keys() == ["g"] and root["g"].keys() == ["a"]
    np.testing.assert_array_equal(root["g/a"][3:17, 5], data[3:17, 5])
    assert server.stats.requests.get("HEAD", 0) == 0


@pytest.mark.parametrize("attributes", [None, {"long_name": "temperature"}])
def test_v2_array_opens_with_or_without_attributes(http_server, zarr_writer, attributes):
    data = np.arange(60, dtype=">i4").reshape(6, 10)
    w = zarr_writer(data, zarr_format=2, chunks=(3, 5), attributes=attributes)
    server = _objects_only(http_server, w.root)
    arr = zarrfs.open(f"{server.url}/array")  # zarr.json and, without attributes, .zattrs: 403
    assert arr.zarr_format == 2 and arr.attrs == (attributes or {})
    np.testing.assert_array_equal(arr[...], data)
    group = zarrfs.open(server.url)  # the v2 root group: .zarray and .zmetadata refused
    assert group.zarr_format == 2


def test_a_missing_chunk_is_an_error_not_the_fill_value(http_server, zarr_writer):
    data = np.zeros((20, 20), dtype="i2")
    data[:10, :10] = 5  # the other three chunks equal the fill value: never written
    w = zarr_writer(data, chunks=(10, 10))
    server = _objects_only(http_server, w.root)
    arr = zarrfs.open(f"{server.url}/array")
    np.testing.assert_array_equal(arr[:10, :10], data[:10, :10])
    with pytest.raises(engine.AccessDeniedError) as err:
        arr[15, 15]
    assert err.value.key.endswith("c/1/1") and "403" in str(err.value)
    assert isinstance(err.value, engine.StoreError)


def test_a_node_refused_whole_is_access_denied_not_absent(http_server, zarr_writer):
    w = zarr_writer(np.arange(4), path="array")
    server = _objects_only(http_server, w.root)
    with pytest.raises(engine.AccessDeniedError) as err:
        zarrfs.open(f"{server.url}/no-such-array")
    assert "zarr.json" in str(err.value)
    with pytest.raises(engine.AccessDeniedError):
        zarrfs.open(server.url)["no-such-array"]


def test_a_listing_refused_says_to_open_nodes_by_path(http_server, zarr_writer):
    data = np.arange(6)
    w = zarr_writer(data, path="g/array")  # not consolidated: keys() must list
    server = _objects_only(http_server, w.root)
    with pytest.raises(engine.AccessDeniedError, match="open its nodes by their paths"):
        zarrfs.open(server.url).keys()
    np.testing.assert_array_equal(zarrfs.open(server.url)["g/array"][...], data)


def test_other_failures_of_documents_that_do_not_decide_the_node(http_server, zarr_writer):
    data = np.arange(12, dtype="u1").reshape(3, 4)
    v3 = zarr_writer(data, path="v3")
    zarr_writer(data, path="v2", zarr_format=2, attributes={"a": 1}, root=v3.root)
    server = http_server(v3.root)
    server.faults.status(500, pattern=r"v3/\.z")  # the v2 documents of a v3 node: irrelevant
    np.testing.assert_array_equal(zarrfs.open(f"{server.url}/v3")[...], data)
    server.faults.clear()
    server.faults.status(500, pattern=r"v2/\.zattrs$")  # the attributes of a v2 node: not
    with pytest.raises(engine.StoreError) as err:  # silently left out
        zarrfs.open(f"{server.url}/v2")
    assert not isinstance(err.value, engine.AccessDeniedError)
    assert err.value.key == ".zattrs" and "/v2" in str(err.value)


def test_s3fs_permission_error_is_access_denied(monkeypatch):
    store = Store.from_url("memory://access-denied")

    def refuse(path, start=None, end=None):
        raise PermissionError("Access Denied")  # what s3fs raises for S3's AccessDenied

    monkeypatch.setattr(store.fs, "cat_file", refuse)
    [result] = store.fetch_each([ByteRequest("x/zarr.json")])
    assert isinstance(result, engine.AccessDeniedError) and result.key == "x/zarr.json"
