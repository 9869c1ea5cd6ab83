"""Reads checked against zarr-python as the independent writer: layouts, codecs, sharding,
read_flat, background reads with cancellation and chunk events, the shared cache."""

from __future__ import annotations

import threading

import numcodecs
import numpy as np
import pytest
import zarr.codecs as zc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrfs
import zarrfs.engine as engine


def _volume(shape=(6, 50, 70), dtype="uint16", seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4000, size=shape).astype(dtype)


CASES = {
    "v3-zstd": dict(zarr_format=3, chunks=(2, 16, 32)),
    "v3-blosc-sharded": dict(
        zarr_format=3,
        chunks=(1, 8, 16),
        shards=(2, 32, 64),
        compressors=zc.BloscCodec(cname="zstd", shuffle="shuffle"),
    ),
    "v3-sharded-index-start": {},  # written below with the index at the shard's start
    "v3-transpose": dict(
        zarr_format=3, chunks=(3, 16, 32), filters=zc.TransposeCodec(order=(2, 0, 1))
    ),
    "v2-blosc-F": dict(
        zarr_format=2,
        chunks=(4, 16, 16),
        order="F",
        compressors=numcodecs.Blosc(cname="lz4", shuffle=2),
    ),
    "v2-slash-gzip": dict(
        zarr_format=2,
        chunks=(3, 20, 30),
        compressors=numcodecs.GZip(),
        chunk_key_encoding={"name": "v2", "separator": "/"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reads_match_writer(zarr_writer, case):
    options = dict(CASES[case])
    data = _volume()
    if case == "v3-sharded-index-start":
        import zarr

        w = zarr_writer(data[:1, :1, :1], zarr_format=3)  # the store and its root group
        z = zarr.create_array(
            store=str(w.root),
            name="array",
            shape=data.shape,
            dtype=data.dtype,
            chunks=(2, 16, 32),
            serializer=zc.ShardingCodec(chunk_shape=(1, 8, 16), index_location="start"),
            compressors=None,
            overwrite=True,
            zarr_format=3,
        )
        z[...] = data
    else:
        w = zarr_writer(data, **options)
    arr = zarrfs.open(str(w.root))["array"]
    assert arr.shape == data.shape and arr.dtype == data.dtype
    np.testing.assert_array_equal(arr[...], data)
    for sel in [
        (3, slice(None), slice(None)),
        (slice(None), 17, slice(5, 66, 3)),
        (slice(None, None, -1), slice(40, 2, -7), -1),
        (Ellipsis, 0),
    ]:
        np.testing.assert_array_equal(arr[sel], data[sel])


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_sharded_read_fetches_only_needed_inner_chunks(zarr_writer):
    data = _volume((1, 64, 64))
    w = zarr_writer(data, chunks=(1, 8, 8), shards=(1, 64, 64), zarr_format=3)
    arr = zarrfs.open(str(w.root))["array"]
    assert arr.chunks == (1, 8, 8) and arr.shards == (1, 64, 64)
    engine.set_cache_size(0)
    try:
        engine.reset_stats()
        np.testing.assert_array_equal(arr[0, 8:16, 8:24], data[0, 8:16, 8:24])
        assert engine.stats()["chunks_decoded"] == 2
    finally:
        engine.set_cache_size(512 * 2**20)


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_a_whole_sharded_read_fetches_each_shard_once(zarr_writer, monkeypatch, loop):
    """Reading every chunk of a local sharded array reads each shard's bytes once: decode
    tasks take chunks shard by shard. In plain C order of chunk coordinates, one task took a
    z-layer of several shards and another the next layer; zarr-python stores inner chunks in
    Morton order, so both tasks' ranges spanned each shard, and the read fetched 1.9x what
    was stored. (The Python loop reads a shard's chunks in one coalesced range, the compiled
    loop each chunk's range from the shard's one open descriptor.)"""
    from zarrfs.engine import chunkloop, scheduler

    monkeypatch.setattr(chunkloop, "_enabled", loop == "compiled")

    monkeypatch.setattr(scheduler, "decode_workers", lambda: 2)  # 16 chunks per task here
    data = _volume((8, 512, 512))  # 4 MiB: read by tasks of the pool, not inline
    w = zarr_writer(data, chunks=(2, 128, 128), shards=(4, 256, 256), zarr_format=3)
    stored = sum(f.stat().st_size for f in (w.root / "array" / "c").rglob("*") if f.is_file())
    arr = zarrfs.open(str(w.root))["array"]
    engine.set_cache_size(0)
    try:
        engine.reset_stats()
        np.testing.assert_array_equal(arr[...], data)
        got = engine.stats()
        assert got["chunks_decoded"] == 64
        # per shard: its index, then one range of its chunks (or each chunk's)
        assert got["requests"] == (8 + 64 if loop == "compiled" else 2 * 8)
        assert got["bytes_fetched"] <= stored
    finally:
        engine.set_cache_size(512 * 2**20)


@pytest.mark.parametrize(
    ("values", "codec"),
    [
        (np.arange(-50, 50, dtype="<i2").reshape(10, 10), "astype"),
        (np.linspace(-1, 1, 100).reshape(10, 10), "astype to f4"),
        (np.arange(100).reshape(10, 10) % 3 == 0, "packbits"),
        (np.arange(7) % 2 == 1, "packbits"),
    ],
)
def test_v3_numcodecs_filters_that_change_the_stored_type(tmp_path, values, codec):
    """zarr-python's v3 numcodecs.astype stores ``encode_dtype``; numcodecs.packbits stores
    one uint8 of padding count plus a bit per element: the ``bytes`` codec must decode that,
    not the array's own type and shape (both failed with 'chunk holds N bytes')."""
    import warnings

    import zarr
    from zarr.codecs import numcodecs as znc

    stored = {"astype": "<i4", "astype to f4": "<f4"}.get(codec)
    filters = (
        [znc.PackBits()]
        if codec == "packbits"
        else [znc.AsType(encode_dtype=stored, decode_dtype=values.dtype.str)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numcodecs codecs have no Zarr v3 specification
        arr = zarr.create_array(
            str(tmp_path / "a.zarr"),
            shape=values.shape,
            dtype=values.dtype,
            chunks=tuple(max(1, s // 2) for s in values.shape),
            filters=filters,
            compressors=None,
            fill_value=0,
        )
        arr[...] = values
        expected = zarr.open_array(str(tmp_path / "a.zarr"))[...]
    got = zarrfs.open(str(tmp_path / "a.zarr"))[...]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_an_array_rewritten_under_its_url_never_reads_the_old_chunks(tmp_path):
    """Chunks decoded for one metadata are not served to an array opened again after another
    writer replaced it (new type, new chunks): the shared cache is keyed by the metadata too."""
    import zarr

    where = str(tmp_path / "a.zarr")
    zarr.create_array(where, shape=(6,), chunks=(3,), dtype="i2", fill_value=0)[...] = np.arange(
        6, dtype="i2"
    )
    np.testing.assert_array_equal(zarrfs.open(where)[...], np.arange(6))  # now cached
    new = np.arange(6, dtype="f4") / 2
    zarr.create_array(where, shape=(6,), chunks=(2,), dtype="f4", fill_value=0, overwrite=True)[
        ...
    ] = new
    got = zarrfs.open(where)[...]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, new)


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_missing_chunks_read_fill(zarr_writer):
    data = np.full((40, 40), 7.5, dtype="f4")
    data[:10, :10] = np.arange(100).reshape(10, 10)
    w = zarr_writer(data, chunks=(10, 10), fill_value=7.5)
    arr = zarrfs.open(str(w.root))["array"]
    assert arr.fill_value == np.float32(7.5)
    engine.reset_stats()
    np.testing.assert_array_equal(arr[...], data)
    assert engine.stats()["chunks_missing"] >= 15


@pytest.mark.parametrize("dtype", ["M8[s]", "m8[ms]"])
def test_v2_datetimes_without_fill_value_read_missing_chunks_as_nat(tmp_path, dtype):
    """zarr-python takes a v2 ``fill_value: null`` as NaT for times and writes no all-NaT chunk."""
    import zarr

    z = zarr.create_array(
        str(tmp_path / "t.zarr"),
        shape=(6,),
        chunks=(2,),
        dtype=dtype,
        zarr_format=2,
        fill_value=None,
    )
    z[...] = np.array([5, "NaT", "NaT", "NaT", 7, 8], dtype=dtype)
    assert not (tmp_path / "t.zarr" / "1").exists()  # the all-NaT chunk was not written
    got = zarrfs.open(str(tmp_path / "t.zarr"))[...]
    assert got.dtype == np.dtype(dtype)
    assert (
        got.view("i8").tolist()
        == z[...].view("i8").tolist()
        == [5, -(2**63), -(2**63), -(2**63), 7, 8]
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_random_selections_equal_numpy(tmp_path_factory, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12))
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in shape)
    values = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape) * 3 - 5
    root = tmp_path_factory.mktemp("prop") / "s.zarr"
    from tests.zarr_oracle import write_array

    write_array(root, values, chunks=chunks, zarr_format=data.draw(st.sampled_from([2, 3])))
    arr = zarrfs.open(str(root))["array"]
    sel = data.draw(hnp.basic_indices(shape, allow_newaxis=False))
    np.testing.assert_array_equal(arr[sel], values[sel])
    start = data.draw(st.integers(0, values.size))
    stop = data.draw(st.integers(start, values.size))
    np.testing.assert_array_equal(arr.read_flat(start, stop), values.reshape(-1)[start:stop])


def test_read_flat_big_endian_native(zarr_writer):
    data = np.arange(3 * 17 * 19, dtype=">i4").reshape(3, 17, 19)
    w = zarr_writer(data, chunks=(2, 5, 7), zarr_format=2)
    arr = zarrfs.open(str(w.root))["array"]
    flat = arr.read_flat(40, 700)
    assert flat.dtype == np.dtype("=i4")
    np.testing.assert_array_equal(flat, data.reshape(-1)[40:700])


def test_submit_events_and_result(zarr_writer):
    data = _volume((2, 64, 64))
    w = zarr_writer(data, chunks=(1, 16, 16))
    arr = zarrfs.open(str(w.root))["array"]
    engine.set_cache_size(0)
    events = []
    lock = threading.Lock()

    def on_chunk(ev):
        with lock:
            events.append(ev)

    try:
        fut = arr.submit((1, slice(None), slice(None)), on_chunk=on_chunk)
        np.testing.assert_array_equal(fut.result(timeout=30), data[1])
    finally:
        engine.set_cache_size(512 * 2**20)
    assert sorted(e.chunk_coords for e in events) == sorted(
        arr.chunks_in((1, slice(None), slice(None)))
    )
    assert {e.status for e in events} == {"loaded"}
    assert fut.out is not None and fut.done()


def test_cancelled_read_raises_and_stops(zarr_writer):
    data = _volume((4, 256, 256))
    w = zarr_writer(data, chunks=(1, 16, 16))
    arr = zarrfs.open(str(w.root))["array"]
    engine.set_cache_size(0)
    try:
        gate = threading.Event()
        blocker = arr.submit((0, slice(0, 16), slice(0, 16)), on_chunk=lambda ev: gate.wait(10))
        futs = [arr.submit((k, slice(None), slice(None))) for k in range(1, 4)]
        for f in futs:
            f.cancel()
        gate.set()
        blocker.result(timeout=30)
        for f in futs:
            with pytest.raises(engine.ReadCancelled):
                f.result(timeout=30)
            assert f.cancelled()
    finally:
        engine.set_cache_size(512 * 2**20)


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_cache_serves_repeat_reads(zarr_writer):
    """``array[...]`` keeps a chunk once it is read a second time (a plane read once costs no
    cache memory); the third read is served from the cache. The front ends that come back ask
    for their chunks to be kept at once: the viewer's ``submit`` and the mount's
    ``read_flat`` re-reads are served from the cache the second time."""
    data = _volume((1, 128, 128))
    w = zarr_writer(data, chunks=(1, 64, 64))  # 8 KiB chunks: more than SMALL_CHUNK
    arr = zarrfs.open(str(w.root))["array"]
    engine.clear_caches()
    np.testing.assert_array_equal(arr[...], data)
    assert engine.cache_info()["items"] == 0  # read once: not kept
    engine.reset_stats()
    np.testing.assert_array_equal(arr[...], data)  # read again: decoded and kept
    s = engine.stats()
    assert s["chunks_decoded"] == 4 and s["cache_hits"] == 0
    assert engine.cache_info()["items"] == 4
    engine.reset_stats()
    np.testing.assert_array_equal(arr[...], data)
    s = engine.stats()
    assert s["chunks_decoded"] == 0 and s["cache_hits"] == 4 and s["requests"] == 0
    info = engine.cache_info()
    assert info["size"] > 0 and info["capacity"] > 0
    for first_read, again in [
        (lambda: arr.submit(...).result(timeout=30), lambda: arr.submit(...).result(timeout=30)),
        (lambda: arr.read_flat(0, data.size), lambda: arr.read_flat(0, data.size)),
    ]:
        engine.clear_caches()
        np.testing.assert_array_equal(first_read().reshape(data.shape), data)
        assert engine.cache_info()["items"] == 4  # kept at once
        engine.reset_stats()
        np.testing.assert_array_equal(again().reshape(data.shape), data)
        s = engine.stats()
        assert s["chunks_decoded"] == 0 and s["cache_hits"] == 4 and s["requests"] == 0


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_small_chunks_are_kept_on_their_first_read(zarr_writer):
    """A chunk of at most one page (a coordinate's, say) is kept at once: xarray reads its
    coordinates twice on open, and there is no page fault to save."""
    from zarrfs.engine import reader

    data = _volume((1, 64, 64))
    w = zarr_writer(data, chunks=(1, 32, 32))  # 2 KiB chunks
    assert 32 * 32 * 2 <= reader.SMALL_CHUNK
    arr = zarrfs.open(str(w.root))["array"]
    engine.clear_caches()
    np.testing.assert_array_equal(arr[...], data)
    assert engine.cache_info()["items"] == 4
    engine.reset_stats()
    np.testing.assert_array_equal(arr[...], data)
    s = engine.stats()
    assert s["chunks_decoded"] == 0 and s["cache_hits"] == 4 and s["requests"] == 0


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_admission_on_the_second_read_is_bounded(zarr_writer, monkeypatch):
    """The table remembers a bounded number of chunks read and not kept: the oldest are
    forgotten (read once more, they count as read once); clear_caches forgets them all."""
    from zarrfs.engine import cache

    monkeypatch.setattr(cache, "_SEEN_KEYS", 2)
    data = _volume((1, 128, 128))
    w = zarr_writer(data, chunks=(1, 64, 64))  # more than SMALL_CHUNK: kept on a second read
    arr = zarrfs.open(str(w.root))["array"]
    engine.clear_caches()
    arr[...]  # four chunks seen; the table remembers the last two
    arr[...]
    assert engine.cache_info()["items"] == 2
    engine.clear_caches()
    arr[0, :64, :64]
    engine.clear_caches()
    arr[0, :64, :64]
    assert engine.cache_info()["items"] == 0


def test_hierarchy_navigation(tmp_path):
    from tests.zarr_oracle import write_array

    root = tmp_path / "h.zarr"
    write_array(
        root, np.arange(10), path="g1/g2/a", attributes={"units": "m"}, dimension_names=("x",)
    )
    write_array(root, np.ones((2, 3)), path="g1/b")
    import zarr

    zarr.open_group(str(root), mode="a").attrs["title"] = "root"
    g = zarrfs.open(str(root))
    assert g.kind == "group" and g.attrs == {"title": "root"}
    assert g.keys() == ["g1"] and g["g1"].keys() == ["b", "g2"]
    a = g["g1/g2/a"]
    assert a.attrs == {"units": "m"} and a.dimension_names == ("x",) and a.path == "g1/g2/a"
    assert "g1" in g and "nope" not in g
    with pytest.raises(engine.NodeNotFoundError) as missing:
        g["g1/nope"]
    assert missing.value.path == f"{root}/g1/nope"
    assert zarrfs.open(str(root / "g1" / "g2" / "a"))[3] == 3
    # a child's URL reopens it: a local store's absolute path keeps its leading slash
    assert a.url == f"{root}/g1/g2/a" and g.url == str(root)
    np.testing.assert_array_equal(zarrfs.open(a.url)[...], np.arange(10))
    assert zarrfs.open(root.as_uri() + "/")["g1"].url == root.as_uri() + "/g1"


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_concurrent_reads_of_one_chunk_decode_it_once(zarr_writer):
    """A read and a prefetch (or two viewers) asking for the same chunks share one decode."""
    data = _volume((1, 512, 512))
    w = zarr_writer(data, chunks=(1, 256, 256))
    arr = zarrfs.open(str(w.root))["array"]
    plane = (0, slice(None), slice(None))
    for capacity in (0, 512 * 2**20):  # scratch buffers (no cache) and cached chunks
        engine.set_cache_size(capacity)
        engine.clear_caches()
        engine.reset_stats()
        gate, entered = threading.Event(), threading.Event()

        def hold(ev, entered=entered, gate=gate):  # chunks stay in flight until the gate opens
            entered.set()
            gate.wait(10)

        first = arr.submit(plane, on_chunk=hold)
        assert entered.wait(10)
        others = [arr.submit(plane) for _ in range(4)]
        threading.Event().wait(0.2)  # let them claim (and find the chunks in flight)
        gate.set()
        direct = arr.read_flat(0, data.size)
        for f in [first, *others]:
            np.testing.assert_array_equal(f.result(timeout=30), data[0])
        np.testing.assert_array_equal(direct, data.reshape(-1))
        decoded = engine.stats()["chunks_decoded"]
        assert decoded == 4 if capacity else decoded <= 8, decoded
    engine.set_cache_size(512 * 2**20)


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_contiguous_chunks_decode_straight_into_the_output(zarr_writer, monkeypatch, python_loop):
    """Chunks spanning whole rows of a plane land in the output with no intermediate buffer
    (not kept: the cache off, or read for the first time); partial chunks go through the
    lean loop's stage and one copy; a chunk read again is decoded into memory the cache keeps."""
    import zarrfs.engine.reader as reader

    monkeypatch.setattr(reader, "SMALL_CHUNK", 0)  # these 1.5 KiB chunks stand for large ones
    done = []
    real = reader.ArrayReader._decode
    monkeypatch.setattr(
        reader.ArrayReader,
        "_decode",
        lambda self, *a: done.append(real(self, *a)) or done[-1],
    )

    def where():
        kinds = ["output" if d.in_place else "kept" if d.keep else "buffer" for d in done]
        done.clear()
        return sorted(kinds)

    data = _volume((3, 64, 48))
    for options in [
        dict(zarr_format=3, compressors=zc.BloscCodec(cname="lz4")),
        dict(zarr_format=2, compressors=numcodecs.Blosc()),
        dict(zarr_format=3, compressors=None),
    ]:
        w = zarr_writer(data, chunks=(1, 16, 48), **options)
        arr = zarrfs.open(str(w.root))["array"]
        for capacity in (0, 512 * 2**20):
            engine.set_cache_size(capacity)
            engine.clear_caches()
            try:
                done.clear()
                np.testing.assert_array_equal(arr[1], data[1])
                np.testing.assert_array_equal(
                    arr.read_flat(48 * 16, data.size) if not capacity else arr[2],
                    data.reshape(-1)[48 * 16 :] if not capacity else data[2],
                )
                assert where() == ["output"] * (15 if not capacity else 8)  # all in place
                np.testing.assert_array_equal(arr[0, 5:40], data[0, 5:40])
                # rows 0-15 and 32-47 are partial: the lean loop decodes them into its
                # stage and copies them (no _decode); rows 16-31 lie whole inside the
                # selection and are decoded in place
                assert where() == ["output"]
                np.testing.assert_array_equal(arr[1], data[1])  # read again
                assert where() == ["kept" if capacity else "output"] * 4
            finally:
                engine.set_cache_size(512 * 2**20)


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_small_reads_decode_on_the_calling_thread(zarr_writer, monkeypatch):
    """A read of at most _INLINE_BYTES from a local store decodes where it was asked (no
    worker hand-off); a larger one goes to the decode pool as tasks, which the waiting caller
    shares with the workers. Both read the right values, and a chunk that fails still raises,
    naming its key."""
    import zarrfs.engine.reader as reader
    import zarrfs.engine.scheduler as scheduler

    threads, tasks = [], []
    real_run_decode = scheduler.run_decode
    monkeypatch.setattr(
        scheduler, "run_decode", lambda fn, *a: (tasks.append(fn), real_run_decode(fn, *a))[1]
    )
    real = reader.ArrayReader.run_task

    def run_task(self, task):  # the thread of each chunk (the lean loop calls no _decode)
        threads.extend([threading.current_thread()] * len(task.coords))
        return real(self, task)

    monkeypatch.setattr(reader.ArrayReader, "run_task", run_task)
    monkeypatch.setattr(reader, "_INLINE_BYTES", 64 * 64 * 2 * 4)  # four chunks
    monkeypatch.setattr(scheduler, "decode_parallelism", lambda nbytes, **_: 2)  # two tasks a read
    data = _volume((2, 256, 256))
    w = zarr_writer(data, chunks=(1, 64, 64))
    arr = zarrfs.open(str(w.root))["array"]
    engine.set_cache_size(0)
    try:
        np.testing.assert_array_equal(arr[1, 10:100, 30:120], data[1, 10:100, 30:120])  # 4
        assert len(threads) == 4 and set(threads) == {threading.current_thread()} and not tasks
        threads.clear()
        np.testing.assert_array_equal(arr[1], data[1])  # 16 chunks
        assert len(threads) == 16 and len(tasks) == 2
        assert {t.name for t in threads} <= {
            threading.current_thread().name,
            *(f"zarrfs-decode-{i}" for i in range(scheduler.decode_workers())),
        }
        (w.root / "array" / "c" / "1" / "1" / "0").write_bytes(b"not zstd at all")
        with pytest.raises(engine.ChunkDecodeError, match="c/1/1/0"):
            arr[1, 70:80, 0:10]
    finally:
        engine.set_cache_size(512 * 2**20)


def test_reads_work_in_a_forked_child(zarr_writer):
    """The mount daemonizes with fork(): pools, locks and the in-flight table start fresh."""
    import os

    data = _volume((2, 64, 64))
    w = zarr_writer(data, chunks=(1, 16, 16))
    arr = zarrfs.open(str(w.root))["array"]
    np.testing.assert_array_equal(arr[0], data[0])  # pools and caches exist before the fork
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if a fresh read is right
        ok = False
        try:
            engine.clear_caches()
            ok = np.array_equal(arr[1], data[1]) and np.array_equal(
                arr.submit(0).result(30), data[0]
            )
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
def test_submit_without_keeping_whole_chunks(zarr_writer):
    """keep_whole_chunks=False (the mount's sequential read-ahead): chunks the selection covers
    whole are decoded into the output and not kept; chunks it covers in part are kept, for the
    neighbouring read; the values are the same either way."""
    data = _volume((2, 64, 48))
    w = zarr_writer(data, chunks=(1, 16, 16), zarr_format=3)
    arr = zarrfs.open(str(w.root))["array"]
    engine.clear_caches()
    try:
        # rows 8-39 of plane 1: rows 16-31 are whole chunks (3 of them), rows 8-15 and 32-39
        # cut 6 chunks in part
        got = arr.submit((1, slice(8, 40)), keep_whole_chunks=False).result(timeout=30)
        np.testing.assert_array_equal(got, data[1, 8:40])
        assert engine.cache_info()["items"] == 6
        engine.clear_caches()
        got = arr.submit((1, slice(8, 40))).result(timeout=30)
        np.testing.assert_array_equal(got, data[1, 8:40])
        assert engine.cache_info()["items"] == 9
    finally:
        engine.clear_caches()


@pytest.mark.parametrize(
    "index_codecs",
    [["bytes"], ["bytes", "crc32c"], ["bytes-big", "crc32c"]],
    ids=["bytes", "bytes-crc32c", "big-endian"],
)
@pytest.mark.parametrize("location", ["end", "start"])
def test_shard_indexes_of_every_codec_chain_read_as_written(tmp_path, index_codecs, location):
    """Shard indexes with and without a checksum, big-endian and at either end, as
    zarr-python writes them: the usual chains are read inline, the others by the codecs."""
    import zarr
    import zarr.codecs as zc

    made = {
        "bytes": zc.BytesCodec(),
        "bytes-big": zc.BytesCodec(endian="big"),
        "crc32c": zc.Crc32cCodec(),
    }
    data = np.random.default_rng(3).integers(0, 2**16, size=(40, 72)).astype("u2")
    z = zarr.create_array(
        tmp_path / "a.zarr",
        shape=data.shape,
        dtype="u2",
        chunks=(32, 32),
        serializer=zc.ShardingCodec(
            chunk_shape=(8, 8),
            codecs=[zc.BytesCodec(), zc.ZstdCodec()],
            index_codecs=[made[n] for n in index_codecs],
            index_location=location,
        ),
        compressors=None,
    )
    z[:30, :] = data[:30]  # (a shard's last inner chunks, and the last shard row, absent)
    expected = data.copy()
    expected[30:] = 0
    arr = zarrfs.open(str(tmp_path / "a.zarr"))
    np.testing.assert_array_equal(arr[...], expected)
    np.testing.assert_array_equal(arr[5:35, 20:70], expected[5:35, 20:70])
