"""The engine over a real loopback HTTP server (latency, faults) and an S3-compatible server.

Round trips and request counts come from the server's own records, never from timings.
"""

from __future__ import annotations

import gc
import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fsspec.implementations.http import HTTPFileSystem

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import cache, gcpause
from zarrfs.engine.store_obstore import Objects


@pytest.fixture(autouse=True)
def _cold_cache():
    # a fresh HTTP client per test: a pooled keep-alive connection to an earlier test's server
    # (whose port a new server may reuse) would cost one retried request
    HTTPFileSystem.clear_instance_cache()
    engine.set_cache_size(0)
    yield
    engine.set_cache_size(512 * 2**20)


#: long enough that a busy client still issues one wave of requests, and a busy server still
#: starts handling all of them, before the first answer (the counter sees when the server
#: starts a request; under a full CI run 0.15 s once split 24 concurrent requests in two)
LATENCY = 0.4
#: how long a stalled response keeps a read waiting in the streaming tests
STALL = 3.0


@pytest.fixture(params=["threads", "loop"])
def request_path(request, monkeypatch):
    """obstore's requests each on a request thread (small reads), or all started on the
    event loop (larger ones): every failure behaves the same on either."""
    from zarrfs.engine import store_async

    monkeypatch.setattr(store_async, "THREADED_REQUESTS", 1024 if request.param == "threads" else 0)
    return request.param


def _expected(corpus_dir: Path, entry_id: str) -> tuple[dict, np.ndarray]:
    manifest = json.loads((corpus_dir / "manifest.json").read_text())
    entry = next(e for e in manifest["entries"] if e["id"] == entry_id)
    return entry, np.load(corpus_dir / entry["expected"]["file"])


@pytest.fixture
def volume(zarr_writer):
    rng = np.random.default_rng(1)
    data = rng.integers(0, 60000, size=(4, 256, 256), dtype=np.uint16)
    plain = zarr_writer(data, path="plain", chunks=(1, 64, 64))
    zarr_writer(data, path="sharded", chunks=(1, 32, 32), shards=(1, 128, 128), root=plain.root)
    return plain.root, data


@pytest.mark.usefixtures("request_path")
def test_plane_in_one_round_trip(http_server, volume):
    root, data = volume
    server = http_server(root, latency=LATENCY)
    arr = zarrfs.open(server.url + "/plain")
    server.stats.reset()
    np.testing.assert_array_equal(arr[2], data[2])
    assert server.stats.requests["GET"] == 16 and server.stats.requests["HEAD"] == 0
    assert server.stats.round_trips() == 1


def test_sharded_window_in_two_round_trips(http_server, volume):
    root, data = volume
    server = http_server(root, latency=LATENCY)
    arr = zarrfs.open(server.url + "/sharded")
    server.stats.reset()
    window = (1, slice(100, 164), slice(60, 124))  # spans 4 shards, 12 inner chunks
    np.testing.assert_array_equal(arr[window], data[window])
    assert server.stats.requests["HEAD"] == 0
    assert server.stats.round_trips() == 2  # the shard indexes, then the inner chunks
    server.stats.reset()
    np.testing.assert_array_equal(arr[window], data[window])  # indexes are cached now
    assert server.stats.round_trips() == 1


def test_sharded_plane_reads_whole_shards_in_one_round_trip(http_server, volume):
    root, data = volume
    server = http_server(root, latency=LATENCY)
    arr = zarrfs.open(server.url + "/sharded")
    server.stats.reset()
    np.testing.assert_array_equal(arr[3], data[3])
    assert server.stats.round_trips() == 1
    assert server.stats.requests["GET"] == 4  # 4 shards, each read whole (no index first)


def test_open_is_one_round_trip(http_server, volume):
    root, _ = volume
    server = http_server(root, latency=LATENCY)
    arr = zarrfs.open(server.url + "/plain")
    assert arr.shape == (4, 256, 256)
    assert server.stats.round_trips() == 1


def test_consolidated_corpus_over_http(http_server, corpus_dir):
    store = corpus_dir / "corpus/zarr-python-3/v3_hierarchy_consolidated.zarr"
    server = http_server(store)
    root = zarrfs.open(server.url)
    assert root.keys() == ["a", "empty_group", "root_array"]
    entry, expected = _expected(
        corpus_dir, "zarr-python-3/v3_hierarchy_consolidated.zarr/a/array_in_a"
    )
    np.testing.assert_array_equal(root["a/array_in_a"][...], expected)


def test_missing_chunk_is_fill_over_http(http_server, zarr_writer):
    data = np.zeros((20, 20), dtype="i2")
    data[:10, :10] = 5
    w = zarr_writer(data, chunks=(10, 10))
    server = http_server(w.root)
    np.testing.assert_array_equal(zarrfs.open(server.url)["array"][...], data)


@pytest.mark.usefixtures("request_path")
def test_transient_5xx_is_retried(http_server, volume):
    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.fail_next(2, status=503)
    np.testing.assert_array_equal(arr[0, :64, :64], data[0, :64, :64])


@pytest.mark.usefixtures("request_path")
def test_persistent_5xx_is_a_store_error(http_server, volume):
    root, _ = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.status(500, pattern=r"c/1/0/0")
    with pytest.raises(engine.StoreError) as err:
        arr[1, :64, :64]
    assert "c/1/0/0" in str(err.value) and err.value.key.endswith("c/1/0/0")
    server.faults.clear()
    assert arr[1, 0, 0] == arr[1, :64, :64][0, 0]  # and the next read works


@pytest.mark.usefixtures("request_path")
def test_truncated_body_is_an_error_not_wrong_data(http_server, volume):
    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.truncate(pattern=r"c/3/0/0")
    with pytest.raises(engine.ZarrfsError):
        arr[3, :64, :64]
    server.faults.clear()
    np.testing.assert_array_equal(arr[3, :64, :64], data[3, :64, :64])


@pytest.mark.usefixtures("request_path")
def test_stall_times_out(http_server, volume, monkeypatch):
    root, _ = volume
    monkeypatch.setenv("ZARRFS_TIMEOUT", "1")
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.stall(8, pattern=r"c/2/")
    with pytest.raises(engine.StoreError):
        arr[2, :64, :64]


def test_connection_refused_is_store_error(http_server, volume):
    root, _ = volume
    server = http_server(root)
    url = server.url
    server.close()
    with pytest.raises(engine.StoreError):
        zarrfs.open(url + "/plain")


def test_s3_reads_match(s3_store, volume, corpus_dir):
    root, data = volume
    url, options = s3_store(root)
    arr = zarrfs.open(url + "/sharded", **options)
    np.testing.assert_array_equal(arr[1, 30:200, 17:99], data[1, 30:200, 17:99])
    np.testing.assert_array_equal(zarrfs.open(url + "/plain", **options)[...], data)
    url2, options2 = s3_store(corpus_dir / "corpus/zarr-python-3/v2_hierarchy.zarr")
    g = zarrfs.open(url2, **options2)
    assert g.keys() == ["a", "empty_group", "root_array"]
    entry, expected = _expected(corpus_dir, "zarr-python-3/v2_hierarchy.zarr/a/b/c/d/e/deep_array")
    np.testing.assert_array_equal(g["a/b/c/d/e/deep_array"][...], expected)


def test_listing_children_is_two_round_trips(http_server, zarr_writer):
    w = zarr_writer(np.arange(4), path="g/a0")
    for i in range(1, 6):
        zarr_writer(np.arange(4), path=f"g/a{i}", root=w.root)
    server = http_server(w.root, latency=LATENCY)
    g = zarrfs.open(server.url + "/g")
    server.stats.reset()
    assert g.keys() == [f"a{i}" for i in range(6)]
    assert server.stats.round_trips() == 2  # the listing, then every child's documents at once
    assert [m.shape for _, m in g.members()] == [(4,)] * 6
    server.stats.reset()  # listed once per open store, as its metadata is read once
    assert g.keys() == zarrfs.open(server.url + "/g").keys() == [f"a{i}" for i in range(6)]
    listings = [r.path for r in server.stats.records() if "." not in r.path.rsplit("/", 1)[-1]]
    assert listings == ["/g"], server.stats.log  # the new handle's; none for the old one


@pytest.mark.usefixtures("request_path")
def test_unreachable_store_fails_fast_after_first_error(http_server, volume):
    root, _ = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.close()
    with pytest.raises(engine.StoreError):
        arr[0, :64, :64]
    calls = []
    original = arr.store._arrive_async
    arr.store._arrive_async = lambda reqs, stop: calls.append(reqs) or original(reqs, stop)
    with pytest.raises(engine.StoreError, match="unreachable"):
        arr[1, :64, :64]
    assert calls == []  # no new attempt while the store is marked down


def test_stored_size_local_s3_and_unknown_over_http(http_server, s3_store, volume):
    root, _ = volume
    expected = sum(
        p.stat().st_size
        for p in (root / "plain").rglob("*")
        if p.is_file() and p.name != "zarr.json"
    )
    assert zarrfs.open(str(root / "plain")).stored_size() == expected
    url, options = s3_store(root)
    assert zarrfs.open(url + "/plain", **options).stored_size() == expected
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.stats.reset()
    assert arr.stored_size() is None  # an HTML index tells no sizes: say unknown, not 0
    assert server.stats.requests["GET"] == 0


@pytest.mark.parametrize("path, stalled", [("plain", r"c/1/3/3$"), ("sharded", r"c/1/1/1$")])
@pytest.mark.usefixtures("request_path")
def test_chunks_land_while_a_slow_response_is_still_on_the_wire(http_server, volume, path, stalled):
    """Each chunk is decoded and placed as its response arrives (a whole shard: as that shard
    arrives), not after the slowest response of the read."""
    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/" + path)
    server.faults.stall(STALL, pattern=stalled)
    landed = []
    t0 = time.monotonic()
    future = arr.submit((1,), on_chunk=lambda e: landed.append((time.monotonic() - t0, e)))
    np.testing.assert_array_equal(future.result(timeout=30), data[1])
    late = [e.out_selection for t, e in landed if t >= STALL]
    early = [t for t, _ in landed if t < STALL]
    # the stalled object (the bottom-right chunk, or the bottom-right shard of 16 chunks)
    # lands last; every other chunk long before it
    corner = 192 if path == "plain" else 128
    assert len(late) == (1 if path == "plain" else 16)
    assert all(rows.start >= corner and cols.start >= corner for rows, cols in late)
    assert len(early) + len(late) == (16 if path == "plain" else 64)
    assert max(early) < STALL / 2


@pytest.mark.parametrize(
    "path, selection",
    [
        ("plain", (2,)),
        ("sharded", (2, slice(0, 40), slice(0, 40))),  # part of a shard: its index comes first
    ],
    ids=["chunks", "shard index"],
)
@pytest.mark.usefixtures("request_path")
def test_cancelling_a_read_stops_waiting_for_its_responses(http_server, volume, path, selection):
    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(f"{server.url}/{path}")
    server.faults.stall(STALL, pattern=r"c/2/0/0$")
    future = arr.submit(selection)
    deadline = time.monotonic() + 10
    while not server.stats.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    assert future.cancel()
    with pytest.raises(engine.ReadCancelled):
        future.result(timeout=STALL / 2)
    assert time.monotonic() - t0 < STALL / 2
    server.faults.clear()
    np.testing.assert_array_equal(arr[selection], data[selection])  # read later, in full


def test_collector_is_held_off_while_requests_go_out(http_server, volume, monkeypatch):
    """Every request a read starts on the loop starts with the cyclic collector off (a full
    collection in the middle of a burst of sends puts the rest a round trip late); it is on
    again after. (On request threads: test_store.py.)"""
    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    states = []

    def recording(original):
        def call(self, *args, **kwargs):
            states.append(gc.get_threshold()[0] == gcpause.HELD and gc.isenabled())
            return original(self, *args, **kwargs)

        return call

    monkeypatch.setattr(Objects, "start", recording(Objects.start))
    monkeypatch.setattr(Objects, "get", recording(Objects.get))
    before = gc.get_threshold()
    assert before[0] != gcpause.HELD
    np.testing.assert_array_equal(arr[...], data)  # 64 chunks: on the loop
    assert states == [True] * 64
    assert gc.get_threshold() == before and gc.isenabled()


def test_gc_pauses_nest_and_keep_the_prior_state():
    before = gc.get_threshold()
    assert gc.isenabled() and before[0] != gcpause.HELD
    try:
        gcpause.hold()
        gcpause.hold()
        gcpause.release()
        assert gc.get_threshold() == (gcpause.HELD, *before[1:])  # one pause is still on
        assert gc.isenabled()  # (never off: a library recording it inherits "on")
        gcpause.release()
        assert gc.get_threshold() == before
        gcpause.release()  # unmatched: ignored
        assert gc.get_threshold() == before
        gc.disable()  # off by the program's own choice: a pause leaves it off
        gcpause.hold()
        gcpause.release()
        assert not gc.isenabled() and gc.get_threshold() == before
        gc.enable()
        gcpause.hold()
        gc.set_threshold(5000, *before[1:])  # the program's own threshold, set meanwhile
        gcpause.release()
        assert gc.get_threshold() == (5000, *before[1:])  # kept
    finally:
        gc.enable()
        gc.set_threshold(*before)


def test_no_collection_starts_during_a_gc_pause():
    """Cyclic garbage made during a pause starts no collection (the young generation's
    count passes its usual threshold many times over); the collector runs again after."""
    started: list[int] = []

    def note(phase, info):
        if phase == "start":
            started.append(info["generation"])

    def cycles(n):
        for _ in range(n):
            a: list = []
            a.append(a)

    gc.collect()
    gc.callbacks.append(note)
    try:
        gcpause.hold()
        try:
            cycles(20 * gc.get_threshold()[1] * 700)
            assert started == [] and gc.isenabled()
        finally:
            gcpause.release()
        cycles(20 * 700)
        assert started  # (the pause over, collections start again)
    finally:
        gc.callbacks.remove(note)
        gc.collect()


def test_a_child_forked_during_a_gc_pause_has_its_collector_on():
    """A pause belongs to threads a forked child does not have: the child starts with the
    collector as it was before the pause, and its own pauses nest from nothing."""
    import os

    read_end, write_end = os.pipe()
    before = gc.get_threshold()
    gcpause.hold()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                first = gc.get_threshold() == before
                gcpause.hold()
                gcpause.release()
                after = gc.get_threshold() == before
                os.write(write_end, f"{first} {after} {gcpause._depth}".encode())
            finally:
                os._exit(0)
    finally:
        gcpause.release()
    answer = _child_answer(pid, read_end, write_end)
    assert answer == b"True True 0"
    assert gc.get_threshold() == before and gc.isenabled()


WEIRD_NAMES = ["a b", "x#y", "p%20q", "q?r", "é", "plus+sign"]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidate", [False, True])
def test_names_that_are_url_syntax_read_over_http(
    http_server, zarr_writer, zarr_format, consolidate
):
    """A '#', '?' or '%' in a node's name is part of the name, not of the URL: each array
    reads its own chunks (not fill values from a truncated URL), and a listing of an index
    page gives the names as stored."""
    root = None
    for i, name in enumerate(WEIRD_NAMES):
        w = zarr_writer(
            np.arange(20, dtype="i4").reshape(4, 5) + 100 * (i + 1),
            path=f"g/{name}",
            chunks=(2, 5),
            zarr_format=zarr_format,
            root=root,
            consolidate=consolidate and i == len(WEIRD_NAMES) - 1,
        )
        root = w.root
    server = http_server(root)
    g = zarrfs.open(server.url + "/g")
    assert g.keys() == sorted(WEIRD_NAMES)
    for i, name in enumerate(WEIRD_NAMES):
        expected = np.arange(20, dtype="i4").reshape(4, 5) + 100 * (i + 1)
        np.testing.assert_array_equal(g[name][...], expected)  # not the fill value, 0


@pytest.mark.usefixtures("request_path")
def test_a_stalled_store_fails_after_two_timeouts_then_fails_fast(http_server, volume, monkeypatch):
    """No answer: the request is tried twice (one timeout each), not four times; then the
    store counts as down for a few seconds, so that a program retrying the read (the kernel
    does, through the mount) is not held up again."""
    root, _ = volume
    monkeypatch.setenv("ZARRFS_TIMEOUT", "1")
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.stall(30, pattern=r"c/2/0/0$")
    server.stats.reset()
    with pytest.raises(engine.StoreError):
        arr[2, :64, :64]
    assert server.stats.in_flight == 2 and server.stats.records() == []  # both still stalled
    # the chunk table remembers the stall (and the store counts as down): no third request
    with pytest.raises(engine.StoreTimeoutError, match="fail at once"):
        arr[2, :64, :64]
    assert server.stats.in_flight == 2 and server.stats.records() == []  # no third request


@pytest.mark.usefixtures("request_path")
def test_a_stalled_chunk_fails_at_once_for_a_moment_then_is_fetched_again(
    http_server, volume, monkeypatch
):
    """A chunk whose requests stalled is remembered as that failure for a moment (never as
    data): a read needing it meanwhile fails at once, without a request; the first read after
    the moment fetches it again. The other chunks of the plane answered, so the store is not
    taken as down."""
    root, data = volume
    monkeypatch.setenv("ZARRFS_TIMEOUT", "0.5")
    monkeypatch.setattr(cache, "STALL_MEMORY", 1.5)
    engine.clear_caches()
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    server.faults.stall(math.inf, pattern=r"c/2/1/1$")
    with pytest.raises(engine.StoreTimeoutError):
        arr[2]
    assert server.stats.in_flight == 2  # the request and its one retry, both unanswered
    asked = len(server.stats.records())
    with pytest.raises(engine.StoreTimeoutError, match="fail at once"):
        arr[2, 64:128, 64:128]
    assert server.stats.in_flight == 2 and len(server.stats.records()) == asked
    np.testing.assert_array_equal(arr[2, :64, :64], data[2, :64, :64])  # others still read
    server.faults.clear()
    time.sleep(1.6)
    np.testing.assert_array_equal(arr[2], data[2])
    engine.clear_caches()


def test_user_client_kwargs_keep_the_default_timeout(http_server, volume, monkeypatch):
    monkeypatch.setenv("ZARRFS_TIMEOUT", "7")
    root, data = volume
    server = http_server(root)
    headers = {"client_kwargs": {"headers": {"X-Token": "abc"}}}
    store = engine.store.Store.from_url(server.url + "/plain", transport="fsspec", **headers)
    kwargs = store.fs.client_kwargs
    assert kwargs["headers"] == {"X-Token": "abc"} and kwargs["timeout"].sock_read == 7
    for transport in ("fsspec", "obstore"):
        server.stats.reset()
        arr = zarrfs.open(server.url + "/plain", transport=transport, **headers)
        np.testing.assert_array_equal(arr[1], data[1])
        listed = engine.store.Store.from_url(server.url, transport=transport, **headers)
        assert "plain" in listed.list_dir("")[0]  # a listing (an HTML index page) too
        sent = [{k.lower(): v for k, v in r.headers} for r in server.stats.records()]
        assert sent and all(h.get("x-token") == "abc" for h in sent), transport


def test_s3_reads_each_object_with_one_get(s3_store, volume, monkeypatch):
    """No HEAD before each GET (s3fs asks for a whole object's size first when it may split
    the download), no LIST for a missing chunk; user config_kwargs keep the timeouts."""
    import s3fs

    root, data = volume
    url, options = s3_store(root)
    calls = []
    original = s3fs.S3FileSystem._call_s3

    async def counting(self, method, *args, **kwargs):
        calls.append(method if isinstance(method, str) else method.__name__)
        return await original(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counting)
    arr = zarrfs.open(
        url + "/plain", transport="fsspec", config_kwargs={"max_pool_connections": 20}, **options
    )
    config = arr.store.fs.config_kwargs
    assert config["max_pool_connections"] == 20 and config["read_timeout"] > 0
    calls.clear()
    np.testing.assert_array_equal(arr[...], data)
    assert calls and set(calls) == {"get_object"}


@pytest.mark.parametrize("transport", ["obstore", "fsspec"])
@pytest.mark.usefixtures("request_path")
def test_a_server_that_ignores_ranges_still_reads_right(tmp_path, zarr_writer, transport):
    """``python -m http.server`` answers every Range request with the whole file (200): the
    asked bytes are sliced out of it (obstore refuses such an answer once; the store then reads
    that server's objects whole), for shard indexes and inner chunks as for whole chunks."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from zarrfs.engine.store import ByteRequest, Store

    data = np.arange(64 * 64, dtype="<u2").reshape(64, 64)
    w = zarr_writer(data, path="s", chunks=(8, 8), shards=(32, 32))
    (w.root / "empty").write_bytes(b"")

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(w.root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        arr = zarrfs.open(f"{url}/s", transport=transport)
        np.testing.assert_array_equal(arr[3:40, 5:61], data[3:40, 5:61])
        store = Store.from_url(url, transport=transport)
        whole = (w.root / "s" / "c" / "0" / "0").read_bytes()
        requests = [
            ByteRequest("s/c/0/0", 10, 30),
            ByteRequest("s/c/0/0", -16),
            ByteRequest("empty"),
        ]
        assert store.fetch(requests) == [whole[10:30], whole[-16:], b""]
    finally:
        server.shutdown()
        server.server_close()


def test_without_obstore_fsspec_reads_what_it_can(http_server, volume, monkeypatch):
    from zarrfs.engine import store_obstore
    from zarrfs.engine.store import Store

    root, data = volume
    server = http_server(root)
    monkeypatch.setattr(store_obstore, "available", lambda: False)
    store = Store.from_url(server.url + "/plain")
    assert store.objects is None and store.fs is not None
    np.testing.assert_array_equal(zarrfs.open(server.url + "/plain")[1], data[1])
    with pytest.raises(engine.StoreError, match=r"zarrfs\[remote\]"):
        Store.from_url("az://container/x", account_name="a")


def test_a_child_forked_after_obstore_started_fails_instead_of_hanging(http_server, volume):
    """obstore's Rust threads do not survive fork(): a read in the child is a clear error,
    never a wait without end (the mount forks before any request, so it never meets this)."""
    import os

    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    np.testing.assert_array_equal(arr[0], data[0])  # the runtime runs in this process
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            engine.clear_caches()
            zarrfs.open(server.url + "/plain")[1]
            os.write(write_end, b"read")
        except engine.StoreError as exc:
            os.write(write_end, f"error {exc}".encode()[:4000])
        finally:
            os._exit(0)
    answer = _child_answer(pid, read_end, write_end)
    assert answer.startswith(b"error") and b"forked" in answer, answer


def test_obstore_bodies_reach_the_reader_uncopied_and_fetch_gives_bytes(http_server, volume):
    """A stream hands obstore's buffers over as memoryviews of them (a 512 KiB chunk's copy
    cost more CPU than obstore's request); fetch and get, which metadata reads use, give
    bytes; the values are the stored bytes either way."""
    from zarrfs.engine.store import ByteRequest, Store

    root, _ = volume
    server = http_server(root)
    store = Store.from_url(server.url + "/plain")
    assert store.objects is not None
    keys = ["c/0/0/0", "c/1/2/3", "zarr.json"]
    stored = {k: (root / "plain" / k).read_bytes() for k in keys}
    requests = [ByteRequest(k) for k in keys] + [ByteRequest("c/1/2/3", 5, 40)]
    streamed = {i: body for burst in store.stream(requests) for i, body in burst}
    assert all(isinstance(streamed[i], memoryview) for i in range(len(requests)))
    assert [bytes(streamed[i]) for i in range(3)] == [stored[k] for k in keys]
    assert bytes(streamed[3]) == stored["c/1/2/3"][5:40]
    fetched = store.fetch(requests)
    assert all(type(b) is bytes for b in fetched)
    assert fetched == [*(stored[k] for k in keys), stored["c/1/2/3"][5:40]]


def test_a_piece_of_a_body_is_its_own_copy_unless_it_is_all_of_it():
    """An inner chunk cut out of a whole shard (or of a coalesced range) owns its bytes: a
    decoded chunk the cache keeps may be a view of them, and must not keep the shard alive."""
    from zarrfs.engine.store_request import piece

    body = memoryview(bytes(range(100)))
    part = piece(body, 10, 20)
    assert type(part) is bytes and part == bytes(range(10, 20))
    assert piece(body, 0, 100) is body
    assert piece(body, 0, 400) is body  # asked past its end: all there is (the caller checks)
    assert piece(body, 95, 105) == bytes(range(95, 100))
    assert piece(b"abcdef", 2, 4) == b"cd"


def test_small_reads_go_on_request_threads_larger_ones_through_the_loop(
    http_server, volume, monkeypatch
):
    """A read of a few chunks waits for each on a thread of its own (its body reaches Python
    there, no hop through the event loop); one of many chunks starts them all from the loop
    (one thread starting hundreds sends them within a round trip). Same bytes either way."""
    from zarrfs.engine import store_async

    root, data = volume
    server = http_server(root, latency=LATENCY)
    arr = zarrfs.open(server.url + "/plain")
    calls: list[tuple[str, str]] = []

    def recording(name, original):
        def call(self, key, req):
            calls.append((name, threading.current_thread().name))
            return original(self, key, req)

        return call

    monkeypatch.setattr(Objects, "start", recording("start", Objects.start))
    monkeypatch.setattr(Objects, "get", recording("get", Objects.get))
    server.stats.reset()
    np.testing.assert_array_equal(arr[2], data[2])  # 16 chunks
    assert 16 <= store_async.THREADED_REQUESTS < 64
    assert len(calls) == 16 and set(calls) == {("get", "zarrfs-request")}
    assert server.stats.round_trips() == 1
    calls.clear()
    server.stats.reset()
    np.testing.assert_array_equal(arr[...], data)  # 64 chunks
    assert len(calls) == 64 and {name for name, _ in calls} == {"start"}
    assert server.stats.round_trips() == 1


def test_a_read_never_waits_behind_requests_stalled_on_the_request_threads(
    http_server, volume, monkeypatch
):
    """Request threads are bounded; once all of them wait (here on a stalled server), a read
    of another server goes through the event loop instead of queueing behind them."""
    from zarrfs.engine import store_async

    root, data = volume
    monkeypatch.setattr(store_async, "_MAX_THREADS", 16)
    stalled, healthy = http_server(root), http_server(root)
    slow = zarrfs.open(stalled.url + "/plain")
    fast = zarrfs.open(healthy.url + "/plain")
    stalled.faults.stall(STALL, pattern=r"c/1/")
    future = slow.submit((1,))  # 16 requests, one on each of the 16 threads
    deadline = time.monotonic() + 10
    while stalled.stats.in_flight < 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stalled.stats.in_flight == 16
    started = []
    original = Objects.start
    monkeypatch.setattr(Objects, "start", lambda self, *a: started.append(a) or original(self, *a))
    t0 = time.monotonic()
    np.testing.assert_array_equal(fast[2], data[2])
    assert time.monotonic() - t0 < STALL / 2 and len(started) == 16
    np.testing.assert_array_equal(future.result(timeout=30), data[1])


def test_a_panic_in_a_request_thread_fails_its_read_and_the_thread_lives_on(
    http_server, volume, monkeypatch
):
    """A request whose transport raises a BaseException (PyO3's PanicException is one) is
    a StoreError of its read, as on the loop; the request thread that waited for it serves
    the next read."""
    from zarrfs.engine import store_async

    class Panic(BaseException):  # as pyo3_runtime.PanicException
        pass

    root, data = volume
    server = http_server(root)
    arr = zarrfs.open(server.url + "/plain")
    original = Objects.get

    def panicking(self, key, req):
        if key.endswith("c/2/1/1"):
            raise Panic("rust panicked")
        return original(self, key, req)

    threads = store_async._RequestThreads()
    monkeypatch.setattr(store_async, "_threads", threads)
    monkeypatch.setattr(Objects, "get", panicking)
    future = arr.submit((2,))  # 16 chunks, each on a request thread
    try:
        with pytest.raises(engine.StoreError, match="rust panicked"):
            future.result(timeout=30)
    finally:
        future.cancel()
    monkeypatch.setattr(Objects, "get", original)
    np.testing.assert_array_equal(arr[2], data[2])
    alive = [t for t in threading.enumerate() if t.name == "zarrfs-request"]
    assert 1 <= threads.threads <= 16 and threads.threads <= len(alive)


def _child_answer(pid: int, read_end: int, write_end: int) -> bytes:
    """What a forked child wrote to the pipe before it ended (the parent's end closed)."""
    import os

    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            return pipe.read()
    finally:
        os.waitpid(pid, 0)
