"""Regressions for bugs found in review, each of which returned wrong data or failed too much:
0-d outputs with the cache off, truncated blosc chunks, servers that ignore Range, names with
glob characters over HTTP, and one unreadable chunk failing its neighbours."""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pytest
import zarr.codecs as zc

import zarrfs
import zarrfs.engine as engine


@pytest.fixture
def no_cache():
    engine.set_cache_size(0)
    engine.clear_caches()
    yield
    engine.set_cache_size(512 * 2**20)


def test_zero_d_outputs_with_cache_off(zarr_writer, no_cache):
    w = zarr_writer(np.array(42.5), path="s")
    data = np.arange(12, dtype="i4").reshape(3, 4) * 10 + 5
    zarr_writer(data, path="m", chunks=(1, 1), root=w.root)
    g = zarrfs.open(str(w.root))
    assert g["s"][()] == 42.5 and g["s"].read()[()] == 42.5
    assert g["m"][1, 1] == data[1, 1]
    assert g["m"].submit((2, 3)).result(30)[()] == data[2, 3]


def test_truncated_blosc_chunk_is_an_error(zarr_writer, no_cache):
    data = np.arange(4096, dtype="f4")
    w = zarr_writer(data, chunks=(4096,), compressors=zc.BloscCodec(cname="lz4", shuffle="shuffle"))
    chunk = w.location / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[: len(chunk.read_bytes()) // 2])
    with pytest.raises(engine.ChunkDecodeError, match="truncated"):
        zarrfs.open(str(w.root))["array"][...]


@pytest.fixture
def plain_http_server():
    """Python's own static server, which ignores Range and answers 200 with the whole file."""
    servers = []

    def start(directory):
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
        handler.log_message = lambda *a: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def test_server_ignoring_range_still_reads_right(plain_http_server, zarr_writer, no_cache):
    data = np.arange(8 * 12, dtype="u2").reshape(8, 12)
    w = zarr_writer(data, chunks=(1, 3), shards=(4, 12), compressors=None)
    url = plain_http_server(w.root)
    arr = zarrfs.open(url + "/array")
    np.testing.assert_array_equal(arr[...], data)  # whole shards: fills the index cache
    np.testing.assert_array_equal(arr[2:5, 4:9], data[2:5, 4:9])  # ranges, answered whole


def test_glob_characters_in_names_over_http(http_server, zarr_writer, no_cache):
    data = np.arange(16).reshape(4, 4)
    w = zarr_writer(data, path="x[1]", chunks=(2, 2))
    zarr_writer(data, path="star*", chunks=(2, 2), root=w.root, consolidate=True)
    server = http_server(w.root)
    g = zarrfs.open(server.url)
    np.testing.assert_array_equal(g["x[1]"][...], data)
    np.testing.assert_array_equal(g["star*"][...], data)


@pytest.mark.parametrize("sharded", [False, True])
def test_one_unreadable_chunk_does_not_fail_the_others(http_server, zarr_writer, no_cache, sharded):
    data = np.arange(64 * 8, dtype="i4").reshape(64, 8)
    opts = dict(chunks=(1, 8), shards=(8, 8)) if sharded else dict(chunks=(1, 8))
    w = zarr_writer(data, **opts)
    server = http_server(w.root)
    arr = zarrfs.open(server.url + "/array")
    bad_rows = range(24, 32) if sharded else range(5, 6)
    server.faults.status(403, pattern=r"c/3/0$" if sharded else r"c/5/0$")
    events = []
    fut = arr.submit(..., on_chunk=events.append, out=np.full(data.shape, -1, dtype="i4"))
    with pytest.raises(engine.StoreError):
        fut.result(30)
    good = [r for r in range(64) if r not in bad_rows]
    np.testing.assert_array_equal(fut.out[good], data[good])
    failed = sorted(e.chunk_coords[0] for e in events if e.status == "failed")
    assert failed == list(bad_rows)
    assert sum(e.status == "loaded" for e in events) == len(good)


def test_key_error_is_not_a_missing_chunk_outside_zip(tmp_path):
    from zarrfs.engine.store import Store

    store = Store.from_url(str(tmp_path))
    assert not store._is_absent(KeyError("x"))
    assert store._is_absent(FileNotFoundError("x"))


def test_zip_store_with_missing_chunks(zarr_writer, tmp_path):
    import shutil

    data = np.zeros((20, 20), dtype="i2")
    data[:10, :10] = 7
    w = zarr_writer(data, chunks=(10, 10), path="a/b")
    archive = shutil.make_archive(str(tmp_path / "store"), "zip", w.root)
    g = zarrfs.open(f"zip::{archive}")
    assert g.keys() == ["a"]
    np.testing.assert_array_equal(g["a/b"][...], data)  # 3 of 4 chunks missing: fill value
    np.testing.assert_array_equal(
        zarrfs.open(f"zip::{archive}")["a"]["b"][5:15, 5:15], data[5:15, 5:15]
    )
    # a node's url reopens it: the path goes inside the chain's first link
    assert g["a/b"].url == f"zip://a/b::{archive}" and g["a"]["b"].url == g["a/b"].url
    np.testing.assert_array_equal(zarrfs.open(g["a/b"].url)[...], data)
    assert zarrfs.open(g["a"].url)["b"].url == g["a/b"].url
    cached = zarrfs.open(f"simplecache::zip::{archive}")  # a wrapper passes the path on
    assert cached["a/b"].url == f"simplecache::zip://a/b::{archive}"
    np.testing.assert_array_equal(zarrfs.open(cached["a/b"].url)[...], data)
