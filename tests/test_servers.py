"""The test servers behave like real ones for the real clients (fsspec/aiohttp, s3fs, http.client).

Concurrency is proved from the server's own request records (overlap), never from wall-clock
totals; latency only makes concurrent requests overlap reliably on a busy machine.
"""

from __future__ import annotations

import http.client
import os
import threading
from pathlib import Path

import aiohttp
import fsspec
import numpy as np
import pytest
import s3fs

from tests.servers import HttpServer, apply_range

BODY = bytes(range(256)) * 4  # 1024 bytes, every offset distinguishable mod 256
OBJECTS = {"a/zarr.json": b'{"zarr_format": 3}', "a/c/0/0": BODY, "top": b"hello"}
LATENCY = 0.2  # long enough that requests issued together overlap even on a loaded machine


def http_fs(**client_kwargs) -> fsspec.AbstractFileSystem:
    return fsspec.filesystem("http", skip_instance_cache=True, client_kwargs=client_kwargs)


def raw_request(server_or_port, method, key, headers=None):
    """One request with http.client: (status, headers, body), to check the wire format."""
    port = getattr(server_or_port, "port", server_or_port)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, "/" + key, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


# ------------------------------------------------------------------------------ sources and GET


def test_cat_from_dict_directory_callable_and_layers(http_server, tmp_path):
    (tmp_path / "a" / "c" / "0").mkdir(parents=True)
    for key, value in OBJECTS.items():
        (tmp_path / key).write_bytes(value)
    fs = http_fs()
    generated = {"a/c/0/0": BODY}
    sources = [
        OBJECTS,
        tmp_path,
        str(tmp_path),
        [{"a/zarr.json": OBJECTS["a/zarr.json"]}, OBJECTS.get],
    ]
    for source in sources:
        server = http_server(source)
        for key, value in OBJECTS.items():
            assert fs.cat(server.url_for(key)) == value
    server = http_server([{"a/zarr.json": b"{}"}, generated.get])
    assert fs.cat(server.url_for("a/c/0/0")) == BODY
    assert fs.cat(server.url_for("a/zarr.json")) == b"{}"
    with pytest.raises(FileNotFoundError):
        fs.cat(server.url_for("a/c/9/9"))  # the generator returned None


def test_cat_file_ranges_match_slices(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    url = server.url_for("a/c/0/0")
    assert fs.cat_file(url, start=10, end=20) == BODY[10:20]
    assert fs.cat_file(url, start=1000) == BODY[1000:]
    assert fs.cat_file(url, start=-7) == BODY[-7:]
    assert fs.cat_file(url, start=5, end=5000) == BODY[5:]
    ranges = [r for (_, _, r) in server.stats.log]
    assert ranges == ["bytes=10-19", "bytes=1000-", "bytes=-7", "bytes=5-4999"]
    assert [r.status for r in server.stats.records()] == [206] * 4
    with pytest.raises(aiohttp.ClientResponseError) as info:
        fs.cat_file(url, start=len(BODY), end=len(BODY) + 10)
    assert info.value.status == 416


@pytest.mark.parametrize(
    ("header", "status", "content_range", "payload"),
    [
        ("bytes=0-0", 206, "bytes 0-0/1024", slice(0, 1)),
        ("bytes=100-199", 206, "bytes 100-199/1024", slice(100, 200)),
        ("bytes=1000-", 206, "bytes 1000-1023/1024", slice(1000, None)),
        ("bytes=1000-9999", 206, "bytes 1000-1023/1024", slice(1000, None)),
        ("bytes=-24", 206, "bytes 1000-1023/1024", slice(1000, None)),
        ("bytes=-5000", 206, "bytes 0-1023/1024", slice(None)),
        ("bytes=1024-", 416, "bytes */1024", None),
        ("bytes=-0", 416, "bytes */1024", None),
        ("bytes=5-2", 200, None, slice(None)),  # invalid: ignored, as RFC 9110 allows
        ("bytes=0-1,5-6", 200, None, slice(None)),  # several ranges: unsupported, whole object
        (None, 200, None, slice(None)),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_range_header_on_the_wire(http_server, header, status, content_range, payload):
    server = http_server(OBJECTS)
    got_status, headers, body = raw_request(
        server, "GET", "a/c/0/0", {"Range": header} if header else {}
    )
    assert (got_status, headers.get("Content-Range")) == (status, content_range)
    assert headers["Accept-Ranges"] == "bytes"
    assert int(headers["Content-Length"]) == len(body)
    if payload is not None:
        assert body == BODY[payload]
    assert apply_range(BODY, header)[0] == status


def test_head_404_and_empty_object(http_server):
    server = http_server({**OBJECTS, "empty": b""})
    status, headers, body = raw_request(server, "HEAD", "a/c/0/0")
    assert (status, headers["Content-Length"], body) == (200, "1024", b"")
    status, headers, body = raw_request(server, "GET", "nope")
    assert status == 404 and int(headers["Content-Length"]) == len(body) > 0
    assert raw_request(server, "HEAD", "nope")[0] == 404
    assert raw_request(server, "GET", "empty")[:1] == (200,)
    assert raw_request(server, "GET", "empty", {"Range": "bytes=0-"})[0] == 416
    with pytest.raises(FileNotFoundError):
        http_fs().cat_file(server.url_for("nope"))


def test_keep_alive_reuses_one_connection(http_server):
    server = http_server(OBJECTS)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        for key in ["top", "a/zarr.json", "top"]:
            conn.request("GET", "/" + key)
            response = conn.getresponse()
            assert response.read() == OBJECTS[key] and not response.will_close
    finally:
        conn.close()
    assert len({r.peer_port for r in server.stats.records()}) == 1


# ------------------------------------------------------------------------------- listing and info


def test_ls_info_and_find_over_a_directory(http_server, zarr_writer):
    written = zarr_writer(np.arange(60, dtype="u2").reshape(6, 10), path="g/arr", chunks=(3, 5))
    server = http_server(written.root)
    fs = http_fs()
    files = sorted(
        p.relative_to(written.root).as_posix() for p in written.root.rglob("*") if p.is_file()
    )
    assert "g/arr/c/1/1" in files
    assert fs.ls(server.url_for("g/arr"), detail=False) == [
        server.url_for("g/arr/c/"),
        server.url_for("g/arr/zarr.json"),
    ]
    assert fs.ls(server.url + "/", detail=False) == [
        server.url_for("g/"),
        server.url_for("zarr.json"),
    ]
    assert fs.isdir(server.url_for("g/arr/c"))
    found = sorted(u[len(server.url) + 1 :] for u in fs.find(server.url))
    assert found == files
    chunk = written.root / "g/arr/c/1/1"
    assert fs.info(server.url_for("g/arr/c/1/1"))["size"] == chunk.stat().st_size
    assert fs.cat(server.url_for("g/arr/c/1/1")) == chunk.read_bytes()


def test_ls_dict_and_layered_sources(http_server):
    server = http_server([{"x/zarr.json": b"{}"}, {"x/y/c/0": b"1", "x/b": b"2"}, lambda key: None])
    fs = http_fs()
    assert fs.ls(server.url_for("x"), detail=False) == [
        server.url_for("x/b"),
        server.url_for("x/y/"),
        server.url_for("x/zarr.json"),
    ]
    with pytest.raises(FileNotFoundError):
        fs.ls(server.url_for("nothing-here"))


def test_names_with_spaces_and_percent_are_quoted(http_server):
    server = http_server({"d/a b%.txt": b"odd"})
    fs = http_fs()
    (url,) = fs.ls(server.url_for("d"), detail=False)
    assert fs.cat(url) == b"odd"
    assert server.stats.records()[-1].path == "/d/a%20b%25.txt"


# --------------------------------------------------------------------------- counters and overlap


def test_counters_count_methods_and_bytes(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    fs.info(server.url_for("a/c/0/0"))
    fs.cat_file(server.url_for("a/c/0/0"), start=0, end=100)
    fs.cat(server.url_for("top"))
    assert server.stats.requests == {"HEAD": 1, "GET": 2}
    assert server.stats.bytes_sent == 100 + len(b"hello")
    assert server.stats.log[0] == ("HEAD", "/a/c/0/0", None)
    server.stats.reset()
    assert server.stats.requests == {} and server.stats.round_trips() == 0


def test_concurrent_requests_are_one_round_trip(http_server):
    server = http_server(OBJECTS, latency=LATENCY)
    fs = http_fs()
    n = 16
    url = server.url_for("a/c/0/0")
    starts = [i * 64 for i in range(n)]
    got = fs.cat_ranges([url] * n, starts, [s + 64 for s in starts])
    assert got == [BODY[s : s + 64] for s in starts]
    assert server.stats.round_trips() == 1
    assert server.stats.max_in_flight() == n


def test_sequential_requests_are_n_round_trips(http_server):
    server = http_server(OBJECTS, latency=LATENCY)
    fs = http_fs()
    fs.cat(server.url_for("a/zarr.json"))  # one wave of metadata ...
    fs.cat_ranges([server.url_for("a/c/0/0")] * 3, [0, 1, 2], [1, 2, 3])  # ... one of chunks
    for _ in range(3):
        fs.cat(server.url_for("top"))
    assert server.stats.round_trips() == 5
    assert server.stats.round_trips(match=r"/c/") == 1
    assert server.stats.round_trips(match=r"top$") == 3
    assert server.stats.max_in_flight() == 3


# -------------------------------------------------------------------------------------- faults


def test_status_for_next_n_requests_then_recovers(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    server.faults.fail_next(2, status=503)
    for _ in range(2):
        with pytest.raises(aiohttp.ClientResponseError) as info:
            fs.cat(server.url_for("top"))
        assert info.value.status == 503
    assert fs.cat(server.url_for("top")) == b"hello"


def test_status_for_matching_keys_until_cleared(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    server.faults.status(500, pattern=r"/c/")
    assert fs.cat(server.url_for("a/zarr.json")) == OBJECTS["a/zarr.json"]
    for _ in range(3):
        with pytest.raises(aiohttp.ClientResponseError) as info:
            fs.cat_file(server.url_for("a/c/0/0"), start=0, end=10)
        assert info.value.status == 500
    server.faults.clear()
    assert fs.cat_file(server.url_for("a/c/0/0"), start=0, end=10) == BODY[:10]


def test_truncated_body_is_a_payload_error(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    server.faults.truncate(count=1, keep=100)
    with pytest.raises(aiohttp.ClientPayloadError):
        fs.cat(server.url_for("a/c/0/0"))
    assert server.stats.records()[-1].bytes_sent == 100
    assert fs.cat(server.url_for("a/c/0/0")) == BODY


def test_stall_with_a_read_timeout_raises_timeout(http_server):
    server = http_server(OBJECTS)
    fs = http_fs(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=0.5))
    server.faults.stall(60, count=1)
    with pytest.raises(TimeoutError):  # fsspec's FSTimeoutError subclasses it
        fs.cat(server.url_for("top"))
    assert fs.cat(server.url_for("top")) == b"hello"


def test_connection_reset_is_a_client_error_and_retried_once(http_server):
    server = http_server(OBJECTS)
    fs = http_fs()
    server.faults.reset(count=1)
    assert fs.cat(server.url_for("top")) == b"hello"  # aiohttp retried the idempotent GET
    assert [r.status for r in server.stats.records()] == [0, 200]
    server.faults.reset()
    with pytest.raises(aiohttp.ClientError):
        fs.cat(server.url_for("top"))
    server.faults.clear()
    assert fs.cat(server.url_for("top")) == b"hello"


def test_close_ends_a_stalled_request_and_frees_the_port():
    server = HttpServer(OBJECTS).start()
    port = server.port
    result = {}
    thread = threading.Thread(target=lambda: result.update(got=raw_request(port, "GET", "top")))
    try:
        server.faults.stall(600)
        thread.start()
        while server.stats.in_flight == 0 and thread.is_alive():
            thread.join(0.01)
    finally:
        server.close()
    thread.join(30)
    assert not thread.is_alive() and result["got"][0] == 200  # the stall ended at close
    with pytest.raises(ConnectionRefusedError):
        raw_request(port, "GET", "top")


# ------------------------------------------------------------------------------------- S3 (moto)


def test_s3_store_lists_and_reads_an_uploaded_tree(s3_store, zarr_writer):
    written = zarr_writer(np.arange(24, dtype="<i4").reshape(4, 6), chunks=(2, 3), zarr_format=2)
    url, options = s3_store(written.root)
    assert os.environ["AWS_CONFIG_FILE"] == os.devnull  # no developer AWS setup leaks in
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    bucket_path = url.removeprefix("s3://")
    files = sorted(
        p.relative_to(written.root).as_posix() for p in written.root.rglob("*") if p.is_file()
    )
    assert sorted(p[len(bucket_path) + 1 :] for p in fs.find(url)) == files
    assert sorted(fs.ls(url + "/array", detail=False)) == [
        f"{bucket_path}/array/{name}" for name in sorted(os.listdir(written.root / "array"))
    ]
    zarray = (written.root / "array/.zarray").read_bytes()
    assert fs.cat(url + "/array/.zarray") == zarray
    assert fs.cat_file(url + "/array/.zarray", start=3, end=17) == zarray[3:17]
    assert fs.cat_file(url + "/array/.zarray", start=-9) == zarray[-9:]
    ranges = fs.cat_ranges([url + "/array/.zarray"] * 3, [0, 5, 10], [5, 10, 15])
    assert ranges == [zarray[0:5], zarray[5:10], zarray[10:15]]
    with pytest.raises(FileNotFoundError):
        fs.cat(url + "/array/9.9")


def test_s3_store_gives_each_call_a_fresh_bucket(s3_store, tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "k").write_bytes(b"1")
    first, options = s3_store(tmp_path / "one", prefix="")
    second, _ = s3_store(tmp_path / "one", prefix="deep/er")
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    assert first != second and second.endswith("/deep/er")
    assert fs.cat(first + "/k") == fs.cat(second + "/k") == b"1"


# --------------------------------------------------------------------------- oracle and corpus


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_writer_round_trips_through_zarr_python(zarr_writer, zarr_format):
    import zarr

    data = np.arange(7 * 9, dtype=">u2").reshape(7, 9)
    options = {"shards": (4, 6)} if zarr_format == 3 else {}
    written = zarr_writer(data, path="g/a", chunks=(2, 3), zarr_format=zarr_format, **options)
    array = zarr.open_array(str(written.root), path=written.path, mode="r")
    np.testing.assert_array_equal(array[...], data)
    assert array.metadata.zarr_format == zarr_format
    assert (array.shards, array.chunks) == (
        ((4, 6), (2, 3)) if zarr_format == 3 else (None, (2, 3))
    )
    assert written.location == written.root / "g" / "a"


def test_zarr_writer_leaves_fill_value_chunks_unwritten(zarr_writer):
    data = np.zeros((4, 4), dtype="f8")
    data[:2, :2] = 1.5
    written = zarr_writer(data, chunks=(2, 2), fill_value=0.0)
    assert sorted(p.name for p in (written.location / "c").rglob("*") if p.is_file()) == ["0"]
    assert (written.location / "c" / "0" / "0").is_file()


def test_corpus_dir_is_the_copy_in_the_repository(corpus_dir):
    """The corpus ships with the repository: a fresh clone needs nothing beside it."""
    assert (corpus_dir / "manifest.json").is_file() and (corpus_dir / "corpus").is_dir()
    if "ZARRFS_CONFORMANCE" not in os.environ:
        assert corpus_dir == Path(__file__).resolve().parent / "conformance"
