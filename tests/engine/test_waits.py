"""No wait without an end (issue 19): a read that fails anywhere hands its failure to every read
waiting for the same chunk, and the next read works; errors are built once per read."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import cache, fetch, reader, store

# the Python pipeline's chunk table: owners, waiters, settling (the native path keeps no table);
# failures put into the Python loop's stages (the compiled loop leaves every chunk it does not
# finish to them, and settles the rest as the lean loop does)
pytestmark = pytest.mark.usefixtures("python_loop")


class Injected(RuntimeError):
    """The failure a test puts into one stage of the owner's read."""


#: (stage, the object and method whose call fails in the owner's thread)
STAGES = {
    "fetch": (fetch.PlainChunks, "each"),  # (a sync store: each chunk as it is decoded)
    "decode": (reader.ArrayReader, "_decode"),
    "place": (reader.ArrayReader, "_place"),
    "cache insert": (cache.ChunkTable, "_keep"),
}


@pytest.fixture
def fresh_cache():
    engine.clear_caches()
    yield
    engine.clear_caches()


def _entry(arr, coords):
    return cache.chunks._items.get(arr._reader._cache_key(coords))


def _until(condition, what: str, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.005)


@pytest.mark.parametrize("stage", STAGES)
def test_a_failure_at_any_stage_reaches_every_waiter(stage, zarr_writer, monkeypatch, fresh_cache):
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    w = zarr_writer(data, chunks=(32, 32))
    arr = zarrfs.open(str(w.root))["array"]
    owner_name = "owner-read"
    cls, name = STAGES[stage]
    original = getattr(cls, name)
    if stage == "cache insert":  # read once before: the owner's read (the second) keeps it
        monkeypatch.setattr(reader, "SMALL_CHUNK", 0)  # (these 2 KiB chunks are not kept at once)
        arr[:32, :32]

    def failing(*args, **kwargs):
        if threading.current_thread().name == owner_name:
            # fail only once a second read waits for the chunk this read owns
            _until(lambda: getattr(_entry(arr, (0, 0)), "event", None) is not None, "a waiter")
            raise Injected(stage)
        return original(*args, **kwargs)

    monkeypatch.setattr(cls, name, failing)
    if stage == "fetch":  # (the lean and compiled loops read local files themselves: the
        # careful way here)
        monkeypatch.setattr(store.Store, "whole_reader", lambda self, expect: None)
        monkeypatch.setattr(store.Store, "whole_files", lambda self: None)
    outcome: dict[str, BaseException | np.ndarray] = {}

    def read(who: str) -> None:
        try:
            outcome[who] = arr[:32, :32]
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome[who] = exc

    owner = threading.Thread(target=read, args=("owner",), name=owner_name)
    owner.start()
    _until(lambda: _entry(arr, (0, 0)) is not None, "the owner claims the chunk")
    waiter = threading.Thread(target=read, args=("waiter",), name="waiting-read")
    waiter.start()
    owner.join(30)
    waiter.join(30)
    assert not owner.is_alive() and not waiter.is_alive(), "a read never ended"
    assert isinstance(outcome["owner"], Injected), outcome
    assert isinstance(outcome["waiter"], Injected), outcome
    assert outcome["waiter"] is not outcome["owner"]  # one instance per read, chained
    assert outcome["waiter"].__cause__ is outcome["owner"]
    assert _entry(arr, (0, 0)) is None  # nothing left pending
    monkeypatch.undo()
    np.testing.assert_array_equal(arr[:32, :32], data[:32, :32])
    np.testing.assert_array_equal(arr[...], data)


def test_a_cancelled_waiter_stops_waiting(zarr_writer, monkeypatch, fresh_cache):
    """A read waiting for another read's chunk ends when it is cancelled, without waiting for
    the other; the other then completes normally."""
    data = np.arange(64, dtype="i4").reshape(8, 8)
    w = zarr_writer(data, chunks=(8, 8))
    arr = zarrfs.open(str(w.root))["array"]
    release = threading.Event()
    original = fetch.PlainChunks.each  # (a sync store: each chunk as it is decoded)

    def slow(self, coords_list):
        if threading.current_thread().name == "owner-read":
            release.wait(30)
        return original(self, coords_list)

    monkeypatch.setattr(fetch.PlainChunks, "each", slow)
    monkeypatch.setattr(store.Store, "whole_reader", lambda self, expect: None)  # (as above)
    monkeypatch.setattr(store.Store, "whole_files", lambda self: None)
    outcome = {}
    owner = threading.Thread(
        target=lambda: outcome.setdefault("owner", arr[...]), name="owner-read"
    )
    owner.start()
    _until(lambda: _entry(arr, (0, 0)) is not None, "the owner claims the chunk")
    future = arr.submit(...)
    _until(lambda: _entry(arr, (0, 0)).event is not None, "the background read waits")
    future.cancel()
    with pytest.raises(engine.ReadCancelled):
        future.result(timeout=10)
    release.set()
    owner.join(30)
    np.testing.assert_array_equal(outcome["owner"], data)


def test_a_down_store_fails_each_chunk_with_its_own_error(http_server, zarr_writer, fresh_cache):
    """Every chunk of a read from a store taken as down gets an error of its own, naming its
    key, the store and the node; never one instance shared by every chunk."""
    data = np.arange(4 * 16, dtype="i4").reshape(4, 16)
    w = zarr_writer(data, chunks=(1, 16))
    server = http_server(w.root)
    arr = zarrfs.open(server.url)["array"]
    server.close()
    with pytest.raises(engine.StoreError):
        arr[0]
    events = []
    with pytest.raises(engine.StoreError) as raised:
        arr.submit(..., on_chunk=events.append).result(timeout=30)
    errors = [e.error for e in events]
    assert len(errors) == 4 and all(isinstance(e, engine.StoreError) for e in errors)
    assert len({id(e) for e in errors}) == 4
    assert sorted(e.key for e in errors) == [arr.chunk_key((i, 0)) for i in range(4)]
    for e in errors:
        assert e.store_url == arr.store.url and e.node_path == "array"
        assert "unreachable" in e.message and e.__cause__ is not None
    assert raised.value in errors
