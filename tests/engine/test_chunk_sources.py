"""The lean read pipeline: one chunk source per layout, batched decode tasks, decode in place.

Stores are written by zarr-python; bytes a source returns are compared with the files it wrote
(or decoded and compared with the data), values read with the data written.
"""

from __future__ import annotations

import logging

import numcodecs
import numpy as np
import pytest
import zarr.codecs as zc
from fsspec.implementations.http import HTTPFileSystem

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import cache, reader, scheduler
from zarrfs.engine.codec_registry import ChunkSpec
from zarrfs.engine.fetch import PlainChunks
from zarrfs.engine.fetch_sharded import ShardedChunks
from zarrfs.engine.planner import normalize_selection

# the Python pipeline's own chunk sources and tasks: the native path would take these arrays
pytestmark = pytest.mark.usefixtures("python_pipeline")


@pytest.fixture(autouse=True)
def _cold():
    HTTPFileSystem.clear_instance_cache()
    engine.clear_caches()
    engine.set_cache_size(0)
    yield
    engine.set_cache_size(512 * 2**20)
    engine.clear_caches()


def _data(shape, dtype="<u2", seed=3):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 60000, size=shape).astype(dtype)


def _source(arr):
    return arr._reader.source


# ------------------------------------------------------------------------- plain chunks


def test_plain_chunks_give_each_stored_object_and_none_for_a_missing_one(zarr_writer):
    data = _data((64, 64))
    data[32:, 32:] = 0  # left unwritten by zarr-python (the fill value)
    w = zarr_writer(data, chunks=(32, 32), fill_value=0)
    arr = zarrfs.open(str(w.root))["array"]
    source = _source(arr)
    assert isinstance(source, PlainChunks)
    coords = [(1, 1), (0, 1), (0, 0)]
    got = source.fetch(coords)
    assert [f.coords for f in got] == coords  # in the order asked
    assert got[0].data is None and got[0].error is None  # missing: the fill value
    for f in got[1:]:
        stored = (w.root / "array" / "c" / str(f.coords[0]) / str(f.coords[1])).read_bytes()
        assert bytes(f.data) == stored


def test_plain_chunks_fail_one_unreadable_chunk_alone(zarr_writer):
    data = _data((64, 64))
    w = zarr_writer(data, chunks=(32, 32))
    bad = w.root / "array" / "c" / "0" / "1"
    bad.unlink()
    bad.mkdir()  # a directory where a chunk should be: that request fails, not the others
    arr = zarrfs.open(str(w.root))["array"]
    got = {f.coords: f for f in _source(arr).fetch([(0, 0), (0, 1), (1, 0)])}
    assert isinstance(got[(0, 1)].error, engine.StoreError)
    assert "c/0/1" in str(got[(0, 1)].error)
    assert got[(0, 0)].error is None and got[(1, 0)].error is None
    assert bytes(got[(1, 0)].data) == (w.root / "array" / "c" / "1" / "0").read_bytes()


def test_each_gives_what_fetch_gives_one_chunk_at_a_time(zarr_writer):
    """A task reads each chunk of a sync store as it decodes it: the same bytes, missing
    chunks and errors as fetching them all at once, in the order asked."""
    data = _data((64, 96))
    data[32:, 64:] = 0  # left unwritten by zarr-python (the fill value)
    w = zarr_writer(data, chunks=(32, 32), fill_value=0)
    bad = w.root / "array" / "c" / "0" / "1"
    bad.unlink()
    bad.mkdir()  # a directory where a chunk should be: that chunk fails alone
    source = _source(zarrfs.open(str(w.root))["array"])
    coords = [(1, 2), (0, 1), (0, 0), (1, 0)]

    def seen(fetched):
        return [(f.coords, f.data, type(f.error), str(f.error)) for f in fetched]

    assert seen(source.each(coords)) == seen(source.fetch(coords))
    got = dict(zip(coords, source.each(coords), strict=True))
    assert got[(1, 2)].data is None and got[(1, 2)].error is None
    assert isinstance(got[(0, 1)].error, engine.StoreError) and "c/0/1" in str(got[(0, 1)].error)
    assert got[(1, 0)].data == (w.root / "array" / "c" / "1" / "0").read_bytes()


# ----------------------------------------------------------------------- sharded chunks


@pytest.fixture
def sharded(zarr_writer):
    data = _data((128, 128))
    data[64:, 64:] = 0  # one whole shard of fill values: not stored
    w = zarr_writer(data, chunks=(16, 16), shards=(64, 64), fill_value=0)
    return w.root, data


def _inner(data, coords, chunk=16):
    return data[tuple(slice(c * chunk, (c + 1) * chunk) for c in coords)]


def _decoded(source, fetched):
    spec = ChunkSpec(source.chunk_shape, np.dtype("<u2"), "C", np.zeros((), "<u2"))
    return source.chain.decode(fetched.data, spec)


def _logged_requests(monkeypatch, store):
    """Every ByteRequest the store is asked for (the real store answers them)."""
    asked = []
    real = type(store).stream

    def stream(self, requests, stop=None):
        asked.extend(requests)
        return real(self, requests, stop)

    monkeypatch.setattr(type(store), "stream", stream)
    return asked


def test_sharded_chunks_locally_read_the_index_then_ranges(sharded, monkeypatch):
    root, data = sharded
    arr = zarrfs.open(str(root))["array"]
    source = _source(arr)
    assert isinstance(source, ShardedChunks) and source.chunk_shape == (16, 16)
    asked = _logged_requests(monkeypatch, arr._reader.store)
    coords = [(0, 0), (1, 2), (5, 5)]  # two inner chunks of shard (0, 0), one absent shard
    got = source.fetch(coords)
    assert got[2].data is None and got[2].error is None
    for f in got[:2]:
        np.testing.assert_array_equal(_decoded(source, f), _inner(data, f.coords))
    # the indexes (one wave), then byte ranges of the inner chunks: never a whole shard
    assert all(r.start is not None for r in asked)
    assert {r.key for r in asked} == {"array/c/0/0", "array/c/1/1"}
    asked.clear()
    source.fetch([(3, 3)])  # shard (0, 0) again: its index is cached, one range
    assert len(asked) == 1 and asked[0].start >= 0 and asked[0].end - asked[0].start < 4096


def test_sharded_chunks_over_http_read_a_fully_wanted_shard_whole(
    http_server, sharded, monkeypatch
):
    root, data = sharded
    server = http_server(root)
    arr = zarrfs.open(server.url + "/array")
    source = _source(arr)
    asked = _logged_requests(monkeypatch, arr._reader.store)
    whole = [(i, j) for i in range(4) for j in range(4, 8)]  # every inner chunk of shard (0, 1)
    part = [(4, 0), (5, 1)]  # two of shard (1, 0)
    got = {f.coords: f for burst in source.arrivals(whole + part) for f in burst}
    assert set(got) == set(whole + part)
    for c in whole + part:
        np.testing.assert_array_equal(_decoded(source, got[c]), _inner(data, c))
    shard_01 = [r for r in asked if r.key == "c/0/1"]
    assert len(shard_01) == 1 and shard_01[0].start is None  # whole, its index cut out of it
    shard_10 = [r for r in asked if r.key == "c/1/0"]
    assert len(shard_10) == 2 and all(r.start is not None for r in shard_10)  # index, range
    asked.clear()
    got = source.fetch([(0, 4)])  # the whole shard's index was cached on the way
    np.testing.assert_array_equal(_decoded(source, got[0]), _inner(data, (0, 4)))
    assert len(asked) == 1 and asked[0].start is not None


def test_sharded_chunks_expand_a_shard_request_from_its_index(sharded):
    """A shard request becomes requests for the stored inner chunks; the absent shard's
    region comes back to be filled, with how many inner chunks it holds."""
    root, data = sharded
    arr = zarrfs.open(str(root))["array"]
    source = _source(arr)
    dims = normalize_selection((slice(None), slice(None)), arr.shape)
    out = np.full(arr.shape, 7, "<u2")
    shard_requests = [(r, out) for r in source.plan(dims)]
    assert len(shard_requests) == 8 * 8  # few inner chunks: planned per chunk
    from zarrfs.engine import fetch_sharded

    fetch_sharded._PLAN_INNER_LIMIT, limit = 0, fetch_sharded._PLAN_INNER_LIMIT
    try:
        shard_requests = [(r, out) for r in source.plan(dims)]
    finally:
        fetch_sharded._PLAN_INNER_LIMIT = limit
    assert len(shard_requests) == 4  # one per shard
    targets, absent, error = source.expand(shard_requests, lambda: False)
    assert error is None
    assert len(targets) == 3 * 16  # the stored inner chunks of three shards
    assert [n for _, n in absent] == [16]
    view, _ = absent[0]
    assert view.shape == (64, 64) and np.shares_memory(view, out[64:, 64:])


# ---------------------------------------------------------------------------- batching


def test_reads_whose_chunks_straddle_tasks_are_right(zarr_writer, monkeypatch):
    """Tasks of three chunks each (several per window row, one spanning two rows), on two
    threads: every value where it belongs."""
    data = _data((4, 200, 200))
    w = zarr_writer(data, chunks=(1, 32, 32))
    arr = zarrfs.open(str(w.root))["array"]
    tasks = []
    real = scheduler.run_decode
    monkeypatch.setattr(scheduler, "run_decode", lambda fn, *a: (tasks.append(fn), real(fn, *a))[1])
    monkeypatch.setattr(reader, "_INLINE_BYTES", 0)
    monkeypatch.setattr(reader, "_task_size", lambda chunks, nbytes, parallel: 3)
    for sel in [
        (1,),
        (2, slice(17, 190), slice(5, 150)),
        (3, slice(None, None, -3), slice(40, 41)),
    ]:
        tasks.clear()
        np.testing.assert_array_equal(arr[sel], data[sel])
        assert len(tasks) >= 2
        assert all(len(t.coords) <= 3 for t in tasks)


def test_a_failed_chunk_fails_only_itself_in_its_batch(zarr_writer, monkeypatch):
    data = _data((128, 128))
    w = zarr_writer(data, chunks=(32, 32), compressors=zc.BloscCodec(cname="zstd"))
    (w.root / "array" / "c" / "1" / "2").write_bytes(b"not blosc at all, and short")
    arr = zarrfs.open(str(w.root))["array"]
    monkeypatch.setattr(reader, "_INLINE_BYTES", 0)
    monkeypatch.setattr(reader, "_task_size", lambda chunks, nbytes, parallel: 4)  # 4 batches of 4
    events = []
    future = arr.submit(..., on_chunk=events.append)
    with pytest.raises(engine.ChunkDecodeError, match="c/1/2"):
        future.result(timeout=60)
    status = {e.chunk_coords: e.status for e in events}
    assert status.pop((1, 2)) == "failed"
    assert len(status) == 15 and set(status.values()) == {"loaded"}
    out = future.out
    for i, j in status:
        region = (slice(32 * i, 32 * i + 32), slice(32 * j, 32 * j + 32))
        np.testing.assert_array_equal(out[region], data[region])


# ---------------------------------------------------------------------- decode in place


def _record_in_place(monkeypatch):
    seen = {}
    real = reader.ArrayReader._decode

    def decode(self, read, fetched, task):
        done = real(self, read, fetched, task)
        seen[done.coords] = done.in_place
        return done

    monkeypatch.setattr(reader.ArrayReader, "_decode", decode)
    return seen


def test_chunks_of_whole_rows_decode_in_place_and_the_edge_chunk_does_not(
    zarr_writer, monkeypatch, python_loop
):
    """Chunks covering whole rows of the output land there straight from the codec; the
    last chunk overhangs the array's edge (decoded bigger than its place) and goes through
    the task's buffer. Both read right."""
    data = _data((10, 70))
    w = zarr_writer(data, chunks=(4, 70))
    arr = zarrfs.open(str(w.root))["array"]
    seen = _record_in_place(monkeypatch)
    np.testing.assert_array_equal(arr[...], data)
    assert seen == {(0, 0): True, (1, 0): True, (2, 0): False}


@pytest.mark.parametrize("writer", ["v2 >u2", "v3 bytes big endian"])
def test_big_endian_chunks_decode_in_place(zarr_writer, tmp_path, monkeypatch, writer, python_loop):
    """Big-endian chunks decode straight into a big-endian output; into a native output
    they are swapped on the way (never in place)."""
    import zarr

    if writer == "v2 >u2":
        data = _data((12, 40), ">u2")
        root = zarr_writer(data, chunks=(4, 40), zarr_format=2).root
    else:
        data = _data((12, 40), "<u2")
        root = tmp_path / "big.zarr"
        zarr.create_array(
            str(root),
            name="array",
            data=data,
            chunks=(4, 40),
            serializer=zc.BytesCodec(endian="big"),
            compressors=zc.ZstdCodec(),
        )
    arr = zarrfs.open(str(root))["array"]
    seen = _record_in_place(monkeypatch)
    out = np.empty(data.shape, ">u2")
    arr.read(..., out=out)
    np.testing.assert_array_equal(out, data)
    assert seen == {(0, 0): True, (1, 0): True, (2, 0): True}
    seen.clear()
    native = arr.read(..., out=np.empty(data.shape, "<u2"))
    np.testing.assert_array_equal(native, data)
    # (the lean loop decodes the chunks after the first into its buffer, without _decode)
    assert (0, 0) in seen and set(seen.values()) == {False}


# ------------------------------------------------------------------------- the lean loop


@pytest.mark.parametrize(
    "layout",
    [
        {"zarr_format": 3, "compressors": zc.BloscCodec(cname="zstd")},
        {"zarr_format": 2, "compressors": numcodecs.Blosc("lz4"), "sep": "/"},
        {"zarr_format": 2, "compressors": numcodecs.Zstd()},
        {"zarr_format": 3, "compressors": None},
    ],
    ids=["v3 blosc", "v2 blosc nested", "v2 zstd", "v3 raw"],
)
def test_the_lean_loop_reads_common_chunks_and_hands_every_other_to_the_careful_path(
    zarr_writer, tmp_path, monkeypatch, layout
):
    """A plane read by the lean loop (local store, chunks decoded into the task's buffer and
    placed): the common chunks never meet ``_decode``; a missing chunk reads as the fill
    value, a truncated one and one past the store's root (a symlink) fail alone with the
    careful path's errors naming them, a chunk with bytes past its end fails as the careful
    path says (read whole, then its header checked). Values compared with zarr-python's."""
    layout = dict(layout)
    sep = layout.pop("sep", None)
    data = _data((4, 128, 128))
    data[1, 32:64, 64:96] = 0  # (a chunk of the fill value: not written)
    key = {"chunk_key_encoding": {"name": "v2", "separator": sep}} if sep else {}
    w = zarr_writer(data, chunks=(1, 32, 32), **layout, **key)
    stored = w.root / "array"
    sep = sep or ("/" if layout["zarr_format"] == 3 else ".")
    name = (
        (lambda *c: "c/" + "/".join(map(str, c)))
        if layout["zarr_format"] == 3
        else (lambda *c: sep.join(map(str, c)))
    )
    assert not (stored / name(1, 1, 2)).exists()
    truncated, outside, longer = (
        stored / name(2, 0, 1),
        stored / name(2, 3, 3),
        stored / name(3, 2, 0),
    )
    truncated.write_bytes(truncated.read_bytes()[:-7])
    secret = tmp_path / "secret"
    secret.write_bytes(outside.read_bytes())
    outside.unlink()
    outside.symlink_to(secret)
    longer.write_bytes(longer.read_bytes() + bytes(32 * 32 * 2 + 64))
    arr = zarrfs.open(str(w.root))["array"]
    decoded, lean = [], []
    real_decode, real_lean = reader.ArrayReader._decode, reader.ArrayReader._run_lean
    monkeypatch.setattr(
        reader.ArrayReader,
        "_decode",
        lambda self, read, f, task: (decoded.append(f.coords), real_decode(self, read, f, task))[1],
    )
    monkeypatch.setattr(
        reader.ArrayReader,
        "_run_lean",
        lambda self, task, *a: (lean.append(len(task.coords)), real_lean(self, task, *a))[1],
    )
    np.testing.assert_array_equal(arr[0], data[0])
    np.testing.assert_array_equal(arr[1], data[1])
    assert sum(lean) == 32
    assert len(decoded) <= 4  # each task's first chunk: whether the output takes chunks whole
    assert (1, 1, 2) in decoded  # the missing chunk: the fill value, by _place
    with pytest.raises(engine.ChunkDecodeError, match=f"chunk .array/{name(2, 0, 1)}. of "):
        arr[2, :32, 32:64]
    with pytest.raises(engine.StoreError, match="outside the store's root"):
        arr[2, 96:, 96:]
    with pytest.raises(engine.ChunkDecodeError, match=name(3, 2, 0)):
        arr[3, 64:96, 0:32]
    out = np.zeros((128, 128), "<u2")
    with pytest.raises(engine.ZarrfsError):
        arr.read((2,), out=out)
    good = np.ones((4, 4), bool)
    good[0, 1] = good[3, 3] = False
    for i, j in zip(*np.nonzero(good), strict=True):
        region = (slice(32 * i, 32 * i + 32), slice(32 * j, 32 * j + 32))
        np.testing.assert_array_equal(out[region], data[2][region])


def test_the_lean_loop_reads_shards_range_by_range_without_copies(
    zarr_writer, monkeypatch, caplog, python_loop
):
    """A sharded plane from a local store: one range request per shard's coalesced inner
    chunks, each read just before its chunks are decoded (the chunks of the first range are
    placed before the second range is asked for), the chunks decoded where they lie in the
    range; an inner chunk whose header states another length fails alone, naming its shard; a shard cut
    short fails the inner chunks past its end, and only those. Values: zarr-python's."""
    data = _data((256, 256))
    data[64:80, 0:16] = 0  # an inner chunk of the fill value: not stored
    w = zarr_writer(
        data,
        chunks=(16, 16),
        shards=(128, 128),
        fill_value=0,
        compressors=zc.BloscCodec(cname="lz4"),
    )
    arr = zarrfs.open(str(w.root))["array"]
    store = arr._reader.store
    asked = _logged_requests(monkeypatch, store)
    placed_before: list[int] = []  # ranges asked for before each chunk was handed over
    real_spans, real_decode = ShardedChunks.spans, reader.ArrayReader._decode
    decoded = []

    def spans(self, coords_list):
        for span in real_spans(self, coords_list):
            assert not isinstance(span[1], bytes) or span[3] - span[2] < len(span[1])  # views
            placed_before.append(len(asked))
            yield span

    monkeypatch.setattr(ShardedChunks, "spans", spans)
    monkeypatch.setattr(
        reader.ArrayReader,
        "_decode",
        lambda self, read, f, task: (decoded.append(f.coords), real_decode(self, read, f, task))[1],
    )
    engine.clear_caches()
    np.testing.assert_array_equal(arr[...], data)
    ranges = [r for r in asked if r.start is not None and r.end is not None and r.start >= 0]
    assert len(ranges) == 4  # one range per shard, each its inner chunks coalesced
    assert placed_before[0] < len(asked)  # the first chunks came before the last range's read
    assert len(placed_before) == 256 and (4, 0) in decoded and len(decoded) <= 5
    # a corrupt inner chunk, and a shard cut short
    index = arr._reader.source.indexes(["array/c/0/0"])["array/c/0/0"]
    offset, length = (int(v) for v in index[1, 1])
    shard = w.root / "array" / "c" / "0" / "0"
    raw = bytearray(shard.read_bytes())
    raw[offset + 12 : offset + 16] = (length + 5).to_bytes(4, "little")  # a header that lies
    shard.write_bytes(bytes(raw))
    other = w.root / "array" / "c" / "1" / "1"
    index11 = arr._reader.source.indexes(["array/c/1/1"])["array/c/1/1"]
    # (the index is cached: cutting the shard leaves its last inner chunks past its end)
    last = int(index11[7, 7][0])
    other.write_bytes(other.read_bytes()[:last])
    monkeypatch.undo()
    out = np.zeros_like(data)
    caplog.set_level(logging.WARNING, logger="zarrfs.engine.reader")
    with pytest.raises(engine.ChunkDecodeError, match="array/c/(0/0|1/1)"):
        arr.read(..., out=out)
    bad = np.zeros((16, 16), bool)
    bad[1, 1] = True
    bad[8:, 8:] = index11[..., 0] >= last  # inner chunks of shard (1, 1) cut off
    assert bad[15, 15] and not bad[8, 8]
    failed = [
        r.getMessage()
        for r in caplog.records
        if "failed" in r.getMessage() or "truncated" in r.getMessage()
    ]
    assert sum("'array/c/0/0'" in m for m in failed) == 1
    assert sum("'array/c/1/1'" in m and "truncated" in m for m in failed) == bad[8:, 8:].sum()
    for i, j in zip(*np.nonzero(~bad), strict=True):
        region = (slice(16 * i, 16 * i + 16), slice(16 * j, 16 * j + 16))
        np.testing.assert_array_equal(out[region], data[region])


def test_the_lean_loop_keeps_the_chunks_of_reads_that_keep_them(zarr_writer):
    """``read_flat`` (the mount's read, which keeps every chunk) through the lean loop: every
    chunk goes to the table, read-only, with its own values (not the task's buffer, which
    held the next chunk); the next read of them decodes nothing."""
    engine.set_cache_size(64 << 20)
    data = _data((96, 128))
    w = zarr_writer(data, chunks=(8, 32), compressors=zc.BloscCodec(cname="zstd"))
    arr = zarrfs.open(str(w.root))["array"]
    before = engine.cache_info()
    np.testing.assert_array_equal(arr.read_flat(0, data.size), data.reshape(-1))
    after = engine.cache_info()
    assert after["items"] - before["items"] == 48 and after["misses"] - before["misses"] == 48
    for i in range(12):
        for j in range(4):
            kept = cache.chunks.get(arr._reader._cache_key((i, j)))
            assert kept is not None and not kept.flags.writeable
            np.testing.assert_array_equal(kept, data[8 * i : 8 * i + 8, 32 * j : 32 * j + 32])
    np.testing.assert_array_equal(arr.read_flat(100, 9000), data.reshape(-1)[100:9000])
    again = engine.cache_info()
    assert again["misses"] == after["misses"] and again["hits"] > after["hits"]


@pytest.mark.parametrize("follow_symlinks", [False, True], ids=["confined", "follow_symlinks"])
def test_the_lean_loop_names_files_under_a_root_holding_percent_signs(
    zarr_writer, tmp_path, monkeypatch, follow_symlinks
):
    """A store whose directory (and array path) holds ``%`` and a space: the files' names
    are formatted from a template, and a ``%`` of the path is not a conversion. Confined
    (openat2 below the root) and not (the path as it is)."""
    data = _data((64, 64))
    root = tmp_path / "100% d%s store.zarr"
    zarr_writer(data, path="a%d b", root=root, chunks=(16, 16))
    arr = zarrfs.open(str(root), follow_symlinks=follow_symlinks)["a%d b"]
    assert arr._reader.source.key_template() == "a%%d b/c/%d/%d"
    store_type = type(arr._reader.store)
    careful = []  # (a file the lean read fails on is read again so: it must not be needed)
    real = store_type.read_each
    monkeypatch.setattr(store_type, "read_each", lambda s, *a: (careful.append(a), real(s, *a))[1])
    before = engine.stats()["requests"]
    np.testing.assert_array_equal(arr[...], data)
    assert engine.stats()["requests"] - before == 16 and not careful


# ---------------------------------------------------------------- chunks read in part


@pytest.mark.parametrize(
    "layout",
    [
        {"chunks": (1, 16, 16), "compressors": zc.BloscCodec(cname="zstd")},
        {"chunks": (2, 8, 16), "compressors": None},
        {"chunks": (1, 8, 8), "shards": (1, 32, 32), "compressors": zc.BloscCodec(cname="lz4")},
    ],
    ids=["blosc", "raw", "sharded"],
)
def test_chunks_read_in_part_take_the_lean_loop(zarr_writer, monkeypatch, layout):
    """A read none of whose chunks is whole (a plane of chunks two layers deep) decodes them
    in the lean loop, not one by one on the general path; selections cutting chunks
    (windows, strides, integers, reversed axes) and chunks kept in the table (a second read)
    read as zarr-python wrote them."""
    data = _data((5, 70, 300), dtype=">i4" if layout["compressors"] is None else "<u2")
    w = zarr_writer(data, **layout)
    arr = zarrfs.open(str(w.root))["array"]
    decoded = []
    real_decode = reader.ArrayReader._decode
    monkeypatch.setattr(
        reader.ArrayReader,
        "_decode",
        lambda self, read, f, task: (decoded.append(f.coords), real_decode(self, read, f, task))[1],
    )
    np.testing.assert_array_equal(arr[2], data[2])
    chunks = -(-70 // layout["chunks"][1]) * -(-300 // layout["chunks"][2])
    assert chunks >= 45 and len(decoded) <= 4  # (each task's first, where whole: in place?)
    monkeypatch.undo()
    for sel in [
        (1, slice(3, 61), slice(5, 290)),
        (slice(1, 4), slice(None), slice(17, 200)),
        (3, slice(None, None, -1), slice(2, 299, 3)),
        (4, 33, slice(None)),
        (slice(None), slice(10, 20), 150),
        (slice(0, 5, 2), slice(60, 8, -3), slice(None, None, -1)),
    ]:
        np.testing.assert_array_equal(arr[sel], data[sel])
    engine.set_cache_size(512 * 2**20)  # read twice: the second read keeps its chunks
    for _ in range(3):
        np.testing.assert_array_equal(arr[0], data[0])
    assert engine.cache_info()["items"] > 0
