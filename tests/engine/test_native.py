"""The native path (tensorstore) reads what the Python pipeline reads, bit for bit, and where it
cannot (a corrupt chunk, a symlink, an array it does not read as the spec says) the Python
pipeline does, with zarrfs's own errors."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import native, scheduler
from zarrfs.engine.scheduler import CancelToken

ts = pytest.importorskip("tensorstore")


def _write(path, data, chunks, shards=None, **kwargs):
    arr = zarr.create_array(
        str(path),
        shape=data.shape,
        dtype=data.dtype,
        chunks=chunks,
        shards=shards,
        fill_value=0,
        compressors=BloscCodec(cname="zstd", clevel=3, shuffle="shuffle"),
        **kwargs,
    )
    arr[...] = data
    return path


def _bits(a: np.ndarray) -> tuple:
    a = np.asarray(a)
    return a.dtype.str, a.shape, np.ascontiguousarray(a).view(np.uint8).tobytes()


# ------------------------------------------------------------------ the corpus, both ways


def _corpus_arrays(corpus_dir):
    manifest = json.loads((corpus_dir / "manifest.json").read_text())
    return [e for e in manifest["entries"] if e["kind"] == "array"]


def test_every_corpus_array_reads_the_same_both_ways(corpus_dir, set_native):
    """Every array of the corpus that the native path takes, read whole and at each of the
    manifest's selections, is bit for bit what the Python pipeline reads (the corpus check
    itself runs both ways in test_conformance.py)."""
    native_count = 0
    for entry in _corpus_arrays(corpus_dir):
        store = str(corpus_dir / entry["store"])
        set_native(True)
        try:
            node = zarrfs.open(store)
            arr = node[entry["path"]] if entry["path"] else node
        except engine.ZarrfsError:
            continue
        if not isinstance(arr, engine.Array) or not arr.read_path.native:
            continue
        native_count += 1
        selections = [...] + [_parse(s["selection"]) for s in entry.get("selections", [])]
        fast = [_bits(arr[s]) for s in selections]
        set_native(False)
        node = zarrfs.open(store)
        slow_arr = node[entry["path"]] if entry["path"] else node
        assert slow_arr.read_path.native is False
        for s, got in zip(selections, fast, strict=True):
            assert got == _bits(slow_arr[s]), (entry["id"], s)
    assert native_count >= 100  # the corpus's plain numeric arrays, v2 and v3, sharded too


def _parse(text: str):
    sys.path.insert(0, str(os.path.dirname(__file__)))
    try:
        from conformance_reader import _selection
    finally:
        sys.path.pop(0)
    return _selection(text)


def test_arrays_off_the_short_list_stay_on_the_python_pipeline(tmp_path, set_native):
    data = np.arange(100, dtype="i4").reshape(10, 10)
    z = zarr.open_array(
        str(tmp_path / "delta"),
        mode="w",
        shape=data.shape,
        chunks=(5, 5),
        dtype="i4",
        zarr_format=2,
        filters=[__import__("numcodecs").Delta(dtype="i4")],
    )
    z[...] = data
    arr = zarrfs.open(str(tmp_path / "delta"))
    assert not arr.read_path.native
    assert "filters ['delta']" in arr.read_path.reason
    assert (arr[...] == data).all()
    set_native(False)
    plain = zarrfs.open(str(_write(tmp_path / "plain", data, (5, 5))))
    assert plain.read_path.describe().startswith("Python pipeline: the native path is off")


# ------------------------------------------------------------------ failures fall back


@pytest.fixture
def corrupt(tmp_path):
    """A 4 x 4 grid of chunks; chunk (1, 2) holds garbage, chunk (3, 3) is missing."""
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64) + 1
    path = _write(tmp_path / "c.zarr", data, (16, 16))
    (path / "c" / "1" / "2").write_bytes(b"not a blosc frame at all" * 4)
    (path / "c" / "3" / "3").unlink()
    data[48:, 48:] = 0
    return path, data


def test_a_corrupt_chunk_fails_only_itself_with_zarrfs_errors(corrupt, set_native):
    path, data = corrupt
    engine.clear_caches()
    arr = zarrfs.open(str(path))
    assert arr.read_path.native
    before = engine.stats()["native_fallbacks"]
    with pytest.raises(engine.ChunkDecodeError) as fast:
        arr[...]
    assert engine.stats()["native_fallbacks"] > before
    out = np.zeros_like(data)
    with pytest.raises(engine.ChunkDecodeError):
        arr.read(..., out=out)
    good = np.ones(data.shape, bool)
    good[16:32, 32:48] = False
    assert (out[good] == data[good]).all()  # the rest of the plane landed
    assert (arr[:16] == data[:16]).all()  # a read without the bad chunk stays native
    set_native(False)
    with pytest.raises(engine.ChunkDecodeError) as slow:
        zarrfs.open(str(path))[...]
    assert type(fast.value) is type(slow.value)
    assert fast.value.key == slow.value.key == "c/1/2"
    assert str(fast.value) == str(slow.value)


def test_chunk_events_of_a_background_read(corrupt):
    """Each chunk reported once: loaded by tensorstore, missing and failed by the Python
    pipeline, which reads again what tensorstore could not."""
    path, data = corrupt
    engine.clear_caches()
    arr = zarrfs.open(str(path))
    events = {}
    future = arr.submit(..., on_chunk=lambda e: events.setdefault(e.chunk_coords, []).append(e))
    with pytest.raises(engine.ChunkDecodeError):
        future.result(timeout=30)
    status = {c: [e.status for e in evs] for c, evs in events.items()}
    assert len(status) == 16
    assert status[(1, 2)] == ["failed"]
    assert status[(3, 3)] == ["missing"]
    assert all(s == ["loaded"] for c, s in status.items() if c not in ((1, 2), (3, 3)))
    out = future.out
    good = np.ones(data.shape, bool)
    good[16:32, 32:48] = False
    assert (out[good] == data[good]).all()


def test_background_and_flat_reads_are_native_and_exact(tmp_path):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 60000, (3, 70, 90), dtype="u2")
    arr = zarrfs.open(str(_write(tmp_path / "s.zarr", data, (1, 16, 16), shards=(1, 32, 48))))
    assert arr.read_path.native and arr.shards == (1, 32, 48)
    before = engine.stats()["native_reads"]
    sel = (slice(None), slice(69, 3, -3), slice(5, 80))
    assert (arr.submit(sel).result(timeout=30) == data[sel]).all()
    assert (arr.read_flat(1234, 17000) == data.ravel()[1234:17000]).all()
    assert (arr[2, ::-1, 7] == data[2, ::-1, 7]).all()
    assert engine.stats()["native_reads"] - before == 3


def test_native_reads_count_their_requests_bytes_and_chunks(tmp_path, set_native):
    """``engine.stats()`` counts what the native path read (as tensorstore counts it): every
    chunk file of a plane once, its stored bytes exactly; the same read on the Python
    pipeline counts the same."""
    data = np.random.default_rng(8).integers(0, 60000, (2, 64, 96), dtype="u2")
    path = _write(tmp_path / "p.zarr", data, (1, 32, 32))
    files = sorted((path / "c" / "1").rglob("*"))
    files = [f for f in files if f.is_file()]
    assert len(files) == 6
    counts = {}
    for way in ("native", "python"):
        engine.clear_caches()
        set_native(way == "native")
        arr = zarrfs.open(str(path))
        assert arr.read_path.native == (way == "native")
        engine.reset_stats()
        np.testing.assert_array_equal(arr[1], data[1])
        s = engine.stats()
        counts[way] = (s["requests"], s["bytes_fetched"], s["chunks_decoded"])
    assert counts["native"] == (6, sum(f.stat().st_size for f in files), 6)
    assert counts["python"] == counts["native"]
    engine.reset_stats()
    assert engine.stats()["requests"] == 0  # a reset clears the native path's counts too


# ------------------------------------------------------------------ confinement


def test_a_symlink_out_of_the_store_keeps_the_confined_path(tmp_path):
    data = np.arange(32 * 32, dtype="u2").reshape(32, 32)
    path = _write(tmp_path / "s.zarr", data, (16, 16))
    secret = _write(tmp_path / "secret.zarr", data + 7, (16, 16))
    (path / "c" / "0" / "1").unlink()
    (path / "c" / "0" / "1").symlink_to(secret / "c" / "0" / "1")
    arr = zarrfs.open(str(path))
    assert not arr.read_path.native
    assert "symlink (c/0/1)" in arr.read_path.reason
    with pytest.raises(engine.StoreError, match="outside the store's root"):
        arr[...]
    trusted = zarrfs.open(str(path), follow_symlinks=True)
    assert trusted.read_path.native  # the user trusts the store: followed, as on the Python path
    assert (trusted[:16, 16:] == data[:16, 16:] + 7).all()


def test_a_symlinked_array_directory_keeps_the_confined_path(tmp_path):
    """A directory on the way to the array that is a symlink (here one staying inside the
    store, which the confined path reads) is read by the Python pipeline."""
    data = np.arange(16, dtype="u2").reshape(4, 4)
    root = tmp_path / "g.zarr"
    zarr.open_group(str(root), mode="w")
    _write(root / "real", data, (2, 2))
    (root / "link").symlink_to("real", target_is_directory=True)
    group = zarrfs.open(str(root))
    assert group["real"].read_path.native
    linked = group["link"]
    assert not linked.read_path.native
    assert linked.read_path.reason.startswith(
        "link is a symlink (zarrfs reads symlinks confined); the chunk loop compiled"
    )
    assert (linked[...] == data).all()


# ------------------------------------------------------------------ cancellation


def test_cancelling_a_read_cancels_tensorstore_futures():
    """A background read whose token is cancelled (``ReadFuture.cancel``, the viewer's stale
    generations) cancels the tensorstore futures it waits for."""
    promise, future = ts.Promise.new()  # a tensorstore future that never finishes by itself
    token = CancelToken()
    token.cancel()
    with pytest.raises(engine.ReadCancelled):
        native._wait_for(queue.SimpleQueue(), 1, [future], token, lambda f: None)
    assert future.cancelled()
    del promise


def test_a_cancelled_background_read_ends_cancelled(tmp_path):
    data = np.arange(8 * 256 * 256, dtype="u2").reshape(8, 256, 256)
    arr = zarrfs.open(str(_write(tmp_path / "b.zarr", data, (1, 32, 32))))
    futures = [arr.submit(k, priority=engine.PRIORITY_PREFETCH) for k in range(8)]
    for f in futures:
        f.cancel()
    for k, f in enumerate(futures):
        try:
            got = f.result(timeout=30)
        except engine.ReadCancelled:
            continue
        assert (got == data[k]).all()  # finished before the cancel: whole and right


# ------------------------------------------------------------------ one budget


def test_a_background_read_of_whole_chunks_keeps_them_only_if_asked(tmp_path):
    """``keep_whole_chunks=False`` (the mount's read-ahead windows) keeps nothing of the chunks
    a native read covers whole, as on the Python path; chunks it covers in part are kept. A
    chunk kept is not decoded again by the next read of it (tensorstore only checks that its
    file did not change)."""
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64) + 1
    path = _write(tmp_path / "k.zarr", data, (16, 16))
    whole, part = (slice(16, 48), slice(None)), (slice(0, 8), slice(None))
    for keep, sel, decoded in ((False, whole, 16), (True, whole, 8), (False, part, 4)):
        engine.clear_caches()
        arr = zarrfs.open(str(path))
        assert arr.read_path.native
        engine.reset_stats()
        for _ in range(2):
            future = arr.submit(sel, keep_whole_chunks=keep)
            assert (future.result(timeout=30) == data[sel]).all()
        assert engine.stats()["chunks_decoded"] == decoded, (keep, sel)


def test_a_background_read_the_native_path_takes_is_not_planned_in_python(tmp_path, monkeypatch):
    """The Python plan of a read (~10 µs a chunk, on the caller's thread: the mount's request
    thread) is made only when tensorstore fails it and the Python pipeline reads it again."""
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    path = _write(tmp_path / "p.zarr", data, (8, 8))
    engine.clear_caches()
    arr = zarrfs.open(str(path))
    assert arr.read_path.native
    reader = arr._reader
    plans = []
    real_plan = reader.plan
    monkeypatch.setattr(reader, "plan", lambda *a, **k: plans.append(a) or real_plan(*a, **k))
    sel = (slice(8, 40), slice(3, 61))
    assert (arr.submit(sel).result(timeout=30) == data[sel]).all()
    assert plans == []
    (path / "c" / "2" / "2").write_bytes(b"not a blosc frame at all" * 4)
    engine.clear_caches()
    with pytest.raises(engine.ChunkDecodeError) as caught:
        arr.submit(sel, keep_whole_chunks=False).result(timeout=30)
    assert caught.value.key == "c/2/2"
    assert len(plans) == 1  # planned for the Python pipeline's second read


def test_the_cache_pool_comes_out_of_the_chunk_budget(tmp_path):
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    arr = zarrfs.open(str(_write(tmp_path / "m.zarr", data, (16, 16))))
    try:
        engine.set_cache_size(64 << 20)
        assert engine.cache_info()["native_pool"] == 0  # nothing read for keeps yet
        assert (arr.submit(...).result(timeout=30) == data).all()
        info = engine.cache_info()
        assert info["capacity"] == 64 << 20
        assert info["native_pool"] == 32 << 20
        context, _ = native._contexts.get("keep")
        assert context.spec.to_json()["cache_pool"]["total_bytes_limit"] == 32 << 20
        once, _ = native._contexts.get("once")
        assert once.spec.to_json()["cache_pool"].get("total_bytes_limit", 0) == 0
        engine.set_cache_size(8 << 20)  # a new budget: a new pool, sized on the next read
        assert engine.cache_info()["native_pool"] == 0
        assert (arr.read_flat(0, 4096) == data.ravel()).all()
        assert engine.cache_info()["native_pool"] == 4 << 20
    finally:
        engine.set_cache_size(512 << 20)


# ------------------------------------------------------------------ zarrfs info --debug


def _info(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "info", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_info_debug_says_which_path_reads_the_array(tmp_path):
    path = _write(tmp_path / "i.zarr", np.zeros((4, 4), "f4"), (2, 2))
    out = _info("--debug", str(path)).stdout
    assert (
        "read path: native (tensorstore): a local store; zarr v3 float32, codecs bytes, "
        "blosc, default chunk keys" in out
    )
    off = _info("--debug", str(path), env={"ZARRFS_NATIVE": "0"}).stdout
    assert "read path: Python pipeline: the native path is off (ZARRFS_NATIVE=0)" in off
    assert "read path" not in _info(str(path)).stdout


def test_an_output_of_another_dtype_is_cast_as_numpy_casts(tmp_path):
    data = np.arange(-50, 50, dtype="i2").reshape(10, 10) * 300
    arr = zarrfs.open(str(_write(tmp_path / "d.zarr", data, (4, 4))))
    assert arr.read_path.native
    out = np.zeros((10, 10), "u1")
    arr.read(..., out=out)
    np.testing.assert_array_equal(out, data.astype("u1"))  # wraps, as NumPy's assignment does


def test_chunks_touched_by_arithmetic_is_the_planners_count():
    from zarrfs.engine.planner import count_chunks, normalize_selection

    rng = np.random.default_rng(7)
    for _ in range(3000):
        shape = tuple(int(n) for n in rng.integers(1, 40, rng.integers(0, 4)))
        chunks = tuple(int(c) for c in rng.integers(1, 10, len(shape)))
        sel = tuple(
            slice(int(rng.integers(-n - 2, n + 2)), int(rng.integers(-n - 2, n + 2)), step)
            for n, step in zip(shape, rng.choice([1, 1, 2, 3, -1, -2], len(shape)), strict=True)
        )
        dims = normalize_selection(sel, shape)
        assert native._chunks_touched(dims, chunks) == count_chunks(dims, chunks)


SELECTIONS = [
    ...,
    (),
    3,
    (3,),
    (3, 5),
    (3, 5, 7),
    (slice(None), 5),
    (slice(2, 5), slice(10, 70), slice(0, 33)),
    (slice(2, 500), slice(60, 1000)),  # stops past the end clip, as NumPy's
    (1, slice(None), slice(13, 14)),
    (slice(5, 5),),  # empty
    (slice(7, 2),),  # empty
    (-1, slice(-20, None)),  # negative: the planner's rules
    (slice(None, None, -1), slice(3, 60, 7)),  # steps, reversal
    (Ellipsis, 4),
    (np.int64(2), slice(1, 9)),  # NumPy integers
    (slice(np.int64(1), np.int64(4)),),
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_a_read_into_tensorstores_own_array_equals_numpys(tmp_path, selection, set_native):
    """``array[sel]`` with no output given returns the array tensorstore allocated for
    in-bounds integers and step-less slices, and the planner's answer for everything else:
    always what NumPy gives for the same selection, as its own writable array."""
    data = np.random.default_rng(5).integers(0, 60000, (6, 80, 50), dtype=np.uint16)
    store = _write(tmp_path / "a.zarr", data, chunks=(2, 16, 16))
    arr = engine.open(str(store))
    assert arr.read_path.native
    expected = data[selection]
    got = arr[selection]
    assert _bits(got) == _bits(expected)
    if isinstance(got, np.ndarray) and got.size:
        got[...] = 0  # the caller's own array: the next read is not changed by it
        assert _bits(arr[selection]) == _bits(expected)
    set_native(False)
    assert _bits(engine.open(str(store))[selection]) == _bits(expected)


def test_out_of_bounds_selections_raise_the_planners_error_on_the_native_path(tmp_path):
    data = np.arange(60, dtype=np.int32).reshape(6, 10)
    arr = engine.open(str(_write(tmp_path / "a.zarr", data, chunks=(3, 5))))
    assert arr.read_path.native
    for bad in [(6,), (0, 10), (slice(None), slice(None), 0), (1.5,)]:
        with pytest.raises(engine.SelectionError):
            arr[bad]


def test_direct_reads_count_the_chunks_they_touch(tmp_path):
    data = np.arange(6 * 80 * 50, dtype=np.uint16).reshape(6, 80, 50)
    arr = engine.open(str(_write(tmp_path / "a.zarr", data, chunks=(2, 16, 16))))
    engine.reset_stats()
    arr[3, 10:40, 0:50]  # chunks: 1 x 3 x 4
    arr[0:6]  # 3 x 5 x 4
    counted = engine.stats()
    assert (counted["native_reads"], counted["native_chunks"]) == (2, 12 + 60)


def test_direct_reads_counted_from_many_threads_lose_none(tmp_path, monkeypatch):
    """Direct reads tally their chunks without a lock (an append each, folded when the
    counters are asked or the tally grows): reads from many threads, folded meanwhile, are
    each counted once."""
    monkeypatch.setattr(native, "_FOLD_AT", 5)  # fold often, while reads append
    data = np.arange(4 * 32 * 32, dtype=np.uint16).reshape(4, 32, 32)
    arr = engine.open(str(_write(tmp_path / "a.zarr", data, chunks=(1, 16, 16))))
    assert arr.read_path.native
    engine.reset_stats()

    def reads():
        for k in range(25):
            assert (arr[k % 4, 8:24, 0:16] == data[k % 4, 8:24, 0:16]).all()  # 2 chunks
            engine.stats()

    threads = [threading.Thread(target=reads) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    counted = engine.stats()
    assert (counted["native_reads"], counted["native_chunks"]) == (100, 200)
    engine.reset_stats()
    assert engine.stats()["native_reads"] == 0


def _copy_pool(context) -> dict:
    return context["data_copy_concurrency"].to_json(include_defaults=True)


def test_every_context_reads_with_one_pool_of_copy_threads(tmp_path, monkeypatch):
    """tensorstore keeps a thread on the task group it last worked for during 20 ms: zarrfs's
    contexts (reads kept or not, before and after a new budget) share one data-copy pool, at
    one thread per CPU tensorstore's own shared one, so that none waits for a thread parked on
    another's; ``set_threads`` sizes it from the next read on."""
    data = np.arange(32 * 32, dtype=np.uint16).reshape(32, 32)
    arr = engine.open(str(_write(tmp_path / "a.zarr", data, chunks=(16, 16))))
    cpus = os.cpu_count()
    monkeypatch.setattr(scheduler, "_usable_cpus", cpus)  # (affinity or a quota may say fewer)
    saved = scheduler._threads
    try:
        engine.set_threads(decode=cpus)
        engine.set_cache_size(64 << 20)
        once, _ = native._contexts.get("once")
        keep, _ = native._contexts.get("keep")
        assert once.parent is not None and once.parent is keep.parent
        assert _copy_pool(once) == _copy_pool(keep) == {"limit": "shared"}
        engine.set_cache_size(32 << 20)  # new contexts, the same threads
        again, _ = native._contexts.get("once")
        assert again is not once and again.parent is once.parent
        engine.set_threads(decode=16 * cpus)  # more than one a CPU: still one a CPU
        assert native._contexts.get("once")[0] is again
        engine.set_threads(decode=1)
        fewer, _ = native._contexts.get("once")
        assert _copy_pool(fewer) == {"limit": 1}
        assert _copy_pool(native._contexts.get("keep")[0]) == {"limit": 1}
        assert (arr[...] == data).all() and (arr.submit(...).result(timeout=30) == data).all()
        # a context made while set_threads() runs (the pool resized, the contexts not yet
        # renewed): every context is made anew on the new threads, none left on the old
        scheduler.set_threads(decode=cpus)
        keep = native._contexts.get("keep")[0]
        native.set_threads(decode=cpus)
        assert native._contexts.get("once")[0] is not fewer
        assert _copy_pool(native._contexts.get("once")[0]) == _copy_pool(keep)
    finally:
        scheduler._threads = saved
        engine.set_threads()
        engine.set_cache_size(512 << 20)


def test_a_fresh_handle_sees_chunks_rewritten_since_an_earlier_one_kept_them(tmp_path):
    """Kept chunks are trusted only by the handle that kept them: after another writer
    rewrites the array, a fresh handle reads the new values, not the shared pool's old ones."""
    old = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    path = _write(tmp_path / "a.zarr", old, chunks=(16, 16))
    first = engine.open(str(path))
    assert first.read_path.native
    assert (first.read_flat(0, 64 * 64) == old.ravel()).all()
    new = old[::-1].copy()
    zarr.open_array(str(path), mode="r+")[...] = new  # same sizes: only the bytes differ
    again = engine.open(str(path))
    assert (again.read_flat(0, 64 * 64) == new.ravel()).all()
    assert (again.submit((slice(0, 64), slice(0, 64))).result(timeout=30) == new).all()


def test_a_kept_chunk_is_served_again_without_touching_its_file(tmp_path):
    """Chunks kept in the native path's cache pool are trusted as the chunk table's are: a
    second read of them makes no request (tensorstore's default opened and stat'ed every
    chunk's file again on every read)."""
    data = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    arr = engine.open(str(_write(tmp_path / "a.zarr", data, chunks=(16, 16))))
    assert arr.read_path.native
    assert (arr.read_flat(0, 32 * 64) == data[:32].ravel()).all()
    engine.reset_stats()
    assert (arr.read_flat(0, 32 * 64) == data[:32].ravel()).all()
    assert (arr.submit((slice(0, 32), slice(8, 40))).result(timeout=30) == data[:32, 8:40]).all()
    counted = engine.stats()
    assert counted["requests"] == 0 and counted["native_reads"] == 2


def test_a_fresh_open_shares_the_handle_and_still_reads_the_files_as_they_are(tmp_path):
    """Fresh opens of an array (a script reading a plane a handle) share one tensorstore
    handle of the context that keeps nothing: it still reads rewritten chunks as they are
    now, and an array rewritten with other metadata gets a handle of its own."""
    path = tmp_path / "a.zarr"
    first = np.arange(2 * 64 * 64, dtype="u2").reshape(2, 64, 64)
    _write(path, first, (1, 32, 32))
    a, b = zarrfs.open(str(path)), zarrfs.open(str(path))
    np.testing.assert_array_equal(a[1], first[1])
    assert a._native.handle("once") is b._native.handle("once")
    rewritten = first[::-1].copy()
    zarr.open_array(str(path), mode="r+")[...] = rewritten  # same metadata, new chunks
    c = zarrfs.open(str(path))
    np.testing.assert_array_equal(c[1], rewritten[1])
    assert c._native.handle("once") is a._native.handle("once")
    other = (np.arange(2 * 64 * 64, dtype="f4") / 3).reshape(2, 64, 64)
    _write(path, other, (1, 16, 16), overwrite=True)  # other metadata
    d = zarrfs.open(str(path))
    np.testing.assert_array_equal(d[1], other[1])
    assert d._native.handle("once") is not a._native.handle("once")
    assert d.read_path.native
