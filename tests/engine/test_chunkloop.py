"""The compiled chunk loop of the Python pipeline (zarrfs/engine/_chunkloop.c): it reads what
zarr-python wrote, bit for bit, and every chunk it does not finish (absent, corrupt, outside
the store, longer than expected) reads as the Python loop reads it: the same values, the same
errors."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import numcodecs
import numpy as np
import pytest
import zarr

import zarrfs
from zarrfs.engine import chunkloop
from zarrfs.engine.errors import ZarrfsError


@pytest.fixture
def loop_calls(python_pipeline, monkeypatch):
    """The compiled loop on, the native path off; each call's outcomes recorded."""
    monkeypatch.setattr(chunkloop, "_enabled", True)
    calls: list[list[int]] = []
    run = chunkloop.run

    def recorded(*args):
        outcomes = run(*args)
        calls.append(list(outcomes))
        return outcomes

    monkeypatch.setattr(chunkloop, "run", recorded)
    return calls


def _both(path, selection, monkeypatch, out=None):
    """The selection read with the compiled loop, then with the Python loop alone: each its
    values, or its error's type and message."""
    answers = []
    for on in (True, False):
        monkeypatch.setattr(chunkloop, "_enabled", on)
        arr = zarrfs.open(str(path))
        try:
            answers.append(arr.read(selection, out=None if out is None else out.copy()))
        except ZarrfsError as exc:
            answers.append((type(exc), exc.message))
    return answers


def test_the_compiled_loop_is_built():
    """The setup installs a C compiler: a build without the loop would pass every other test
    here on the Python loop alone."""
    assert chunkloop._chunkloop is not None
    assert set(chunkloop._FUNCTIONS) == {1, 2}  # c-blosc's and zstd's, from numcodecs


SELECTIONS = [
    (1,),
    (slice(None),),
    (2, slice(3, 300), slice(5, 511, 3)),
    (slice(None), slice(None, None, -3), 7),
    (0, slice(250, 70, -2), slice(None, None, -1)),
    (3, 130, slice(None)),
    (slice(1, 3), slice(60, 70), slice(60, 70)),
    # steps past the dimension: one element each (a step times a stride overflowed in C)
    (slice(None), slice(None, None, 2**62), slice(3, None, -(2**61))),
]


@pytest.mark.parametrize(
    "layout",
    [
        "v2-blosc",
        "v3-blosc",
        "v3-zstd",
        "v3-sharded-blosc",
        "v3-sharded-zstd",
        "v2-zstd-f8",
        "v2-zstd-big",
    ],
)
def test_every_selection_reads_what_zarr_python_wrote(tmp_path, loop_calls, layout):
    rng = np.random.default_rng(7)
    data = rng.integers(0, 60000, size=(4, 300, 520)).astype("u2")  # edge chunks on 2 axes
    path = tmp_path / "a.zarr"
    blosc = zarr.codecs.BloscCodec(cname="zstd", shuffle="shuffle")
    if layout == "v2-blosc":
        z = zarr.create_array(
            path,
            shape=data.shape,
            chunks=(1, 64, 64),
            dtype="u2",
            zarr_format=2,
            compressors=numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.BITSHUFFLE),
        )
    elif layout.startswith("v2-zstd"):  # big-endian: values swapped into a native output
        dtype = ">f8" if layout.endswith("big") else "<f8"
        data = data.astype(dtype) / 7
        z = zarr.create_array(
            path,
            shape=data.shape,
            chunks=(1, 64, 64),
            dtype=dtype,
            zarr_format=2,
            compressors=numcodecs.Zstd(level=3),
        )
    else:
        compressor = zarr.codecs.ZstdCodec() if layout.endswith("zstd") else blosc
        shards = (2, 128, 256) if "sharded" in layout else None
        z = zarr.create_array(
            path,
            shape=data.shape,
            chunks=(1, 64, 64),
            shards=shards,
            dtype="u2",
            compressors=[compressor],
        )
    z[:] = data
    for selection in SELECTIONS:
        loop_calls.clear()
        arr = zarrfs.open(str(path))  # (a chunk read again is kept: the Python loop keeps it)
        np.testing.assert_array_equal(arr[selection], data[selection], err_msg=str(selection))
        done = [o for call in loop_calls for o in call]
        if layout.endswith("big"):  # (the Python loop swaps the bytes)
            assert not done
        else:
            assert done and all(o > 0 for o in done), (selection, done)


def test_an_output_of_another_dtype_takes_the_python_loop(tmp_path, loop_calls, monkeypatch):
    data = np.arange(4 * 128 * 128, dtype="u2").reshape(4, 128, 128)
    z = zarr.create_array(tmp_path / "a.zarr", shape=data.shape, chunks=(1, 64, 64), dtype="u2")
    z[:] = data
    out = np.zeros((128, 128), dtype="f8")
    got = zarrfs.open(str(tmp_path / "a.zarr")).read(2, out=out)
    np.testing.assert_array_equal(got, data[2].astype("f8"))
    assert not [o for call in loop_calls for o in call]  # (no chunk taken by the loop)


def test_absent_chunks_read_as_the_fill_value(tmp_path, loop_calls, monkeypatch):
    data = np.arange(2 * 128 * 128, dtype="i4").reshape(2, 128, 128)
    z = zarr.create_array(
        tmp_path / "a.zarr", shape=data.shape, chunks=(1, 64, 64), dtype="i4", fill_value=-5
    )
    z[:] = data
    for key in ("c/1/0/1", "c/1/1/1", "c/0/1/0"):
        os.remove(tmp_path / "a.zarr" / key)
    expected = z[:]
    assert (expected == -5).sum() == 3 * 64 * 64
    with_loop, without = _both(tmp_path / "a.zarr", slice(None), monkeypatch)
    np.testing.assert_array_equal(with_loop, expected)
    np.testing.assert_array_equal(without, expected)
    outcomes = sorted(o for call in loop_calls for o in call)
    assert outcomes[:3] == [-errno.ENOENT] * 3 and all(o > 0 for o in outcomes[3:])


@pytest.mark.parametrize("damage", ["truncated", "garbage", "longer", "empty", "outside"])
def test_a_damaged_chunk_fails_alone_with_the_python_loops_error(
    tmp_path, loop_calls, monkeypatch, damage
):
    data = np.arange(2 * 128 * 128, dtype="u2").reshape(2, 128, 128)
    path = tmp_path / "a.zarr"
    z = zarr.create_array(path, shape=data.shape, chunks=(1, 64, 64), dtype="u2")
    z[:] = data
    chunk = path / "c" / "1" / "1" / "0"  # (chunks past 4 KiB: smaller ones are kept, Python)
    stored = chunk.read_bytes()
    if damage == "truncated":
        chunk.write_bytes(stored[: len(stored) // 2])
    elif damage == "garbage":
        chunk.write_bytes(bytes(range(256)) * 4)
    elif damage == "longer":  # past the loop's one read: the careful way reads it all
        chunk.write_bytes(stored + b"\0" * (64 * 64 * 2 + 100))
    elif damage == "empty":
        chunk.write_bytes(b"")
    else:  # a symlink out of the store: never followed
        secret = tmp_path / "secret"
        secret.write_bytes(stored)
        chunk.unlink()
        chunk.symlink_to(secret)
    with_loop, without = _both(path, slice(None), monkeypatch)
    assert isinstance(with_loop, tuple), "a damaged chunk read as data"
    assert with_loop == without
    assert any(o < 0 for call in loop_calls for o in call)  # the loop left it to Python
    # its siblings still read
    np.testing.assert_array_equal(zarrfs.open(str(path))[0], data[0])
    np.testing.assert_array_equal(zarrfs.open(str(path))[1, :64], data[1, :64])


@pytest.mark.parametrize("damage", ["index-past-end", "index-huge", "inner-garbage"])
def test_a_damaged_shard_fails_as_on_the_python_loop(tmp_path, loop_calls, monkeypatch, damage):
    data = np.arange(2 * 256 * 256, dtype="u2").reshape(2, 256, 256)
    path = tmp_path / "a.zarr"
    z = zarr.create_array(
        path,
        shape=data.shape,
        chunks=(1, 64, 64),
        shards=(1, 128, 128),
        dtype="u2",
        compressors=[zarr.codecs.BloscCodec(cname="zstd")],
    )
    z[:] = data
    shard = path / "c" / "1" / "1" / "0"
    raw = bytearray(shard.read_bytes())
    index_at = len(raw) - (16 * 4 + 4)  # four inner chunks, then the crc32c
    if damage == "inner-garbage":
        raw[:40] = bytes(range(40))
    else:
        entries = np.frombuffer(bytes(raw[index_at : index_at + 64]), "<u8").reshape(4, 2).copy()
        entries[2, 0] = len(raw) + 10 if damage == "index-past-end" else 2**63
        raw[index_at : index_at + 64] = entries.tobytes()
        from crc32c import crc32c

        raw[index_at + 64 :] = np.uint32(crc32c(bytes(raw[index_at : index_at + 64]))).tobytes()
    shard.write_bytes(bytes(raw))
    with_loop, without = _both(path, slice(None), monkeypatch)
    assert isinstance(with_loop, tuple), "a damaged shard read as data"
    assert with_loop == without
    assert any(o < 0 for call in loop_calls for o in call)  # the loop left it to Python
    np.testing.assert_array_equal(zarrfs.open(str(path))[0], data[0])


def test_the_switch_turns_the_loop_off(tmp_path, loop_calls, monkeypatch):
    data = np.arange(4 * 128 * 128, dtype="u2").reshape(4, 128, 128)
    z = zarr.create_array(tmp_path / "a.zarr", shape=data.shape, chunks=(1, 64, 64), dtype="u2")
    z[:] = data
    chunkloop.set_enabled(False)
    try:
        np.testing.assert_array_equal(zarrfs.open(str(tmp_path / "a.zarr"))[:], data)
        assert not loop_calls
        assert "Python" in zarrfs.open(str(tmp_path / "a.zarr")).read_path.reason
    finally:
        chunkloop.set_enabled(True)
    arr = zarrfs.open(str(tmp_path / "a.zarr"))
    np.testing.assert_array_equal(arr[:], data)
    assert loop_calls
    assert "compiled" in arr.read_path.reason


def test_chunks_of_whole_rows_decode_in_place_and_the_edge_chunk_does_not(tmp_path, loop_calls):
    """Chunks covering whole rows of the output are decoded straight into it by the loop
    (their region is the whole chunk, contiguous there); the edge chunk overhanging the array
    and a strided read go through its buffer. All read what zarr-python wrote."""
    data = np.random.default_rng(3).integers(0, 2**31, size=(3, 300, 130)).astype("i4")
    path = tmp_path / "rows.zarr"
    z = zarr.create_array(path, shape=data.shape, chunks=(1, 64, 130), dtype="i4")
    z[:] = data
    for selection in [(1,), (slice(None),), (2, slice(64, 192)), (0, slice(None, None, 2))]:
        loop_calls.clear()
        got = zarrfs.open(str(path))[selection]
        np.testing.assert_array_equal(got, data[selection])
        assert all(o > 0 for call in loop_calls for o in call) and loop_calls


def test_chunks_of_more_than_32_dimensions_take_the_python_loop(tmp_path, loop_calls, monkeypatch):
    """The compiled loop places regions of at most 32 dimensions: an array of 33 reads on the
    Python loop (it raised 'chunkloop: arguments that do not fit'), as NumPy wrote it."""
    shape, chunks = (1,) * 32 + (8192,), (1,) * 32 + (4096,)
    data = np.arange(8192, dtype="<u2").reshape(shape)
    path = tmp_path / "deep.zarr"  # (zarr-python cannot write it: NumPy's broadcast stops at 32)
    path.mkdir()
    compressor = numcodecs.Blosc(cname="lz4")
    meta = {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": "<u2", "order": "C"}
    meta |= {"compressor": compressor.get_config(), "fill_value": 0, "filters": None}
    (path / ".zarray").write_text(json.dumps(meta))
    for i in range(2):
        key = ".".join(["0"] * 32 + [str(i)])
        (path / key).write_bytes(compressor.encode(data[..., i * 4096 : (i + 1) * 4096].copy()))
    with_loop, without = _both(path, (0,) * 32 + (slice(10, 8000, 3),), monkeypatch)
    np.testing.assert_array_equal(with_loop, data[(0,) * 32 + (slice(10, 8000, 3),)])
    np.testing.assert_array_equal(without, with_loop)
    assert not loop_calls
    monkeypatch.setattr(chunkloop, "_enabled", True)
    assert "more than 32 dimensions" in zarrfs.open(str(path)).read_path.reason


_READ_IN_CHILD = """
import sys, zarrfs
from zarrfs.engine import chunkloop, native
native.set_native(False)
chunkloop.set_enabled(sys.argv[2] == "on")
try:
    zarrfs.open(sys.argv[1])[:]
except zarrfs.ZarrfsError as exc:
    print(type(exc).__name__, exc.message)
"""


def test_a_fifo_where_a_chunk_should_be_fails_and_is_never_waited_for(tmp_path):
    """Opening a FIFO for reading waits for a writer, for ever: the compiled loop and the
    Python loop both open chunk files with O_NONBLOCK, and the FIFO's chunk fails alone (a
    child process, so that a read that waits cannot hang the tests)."""
    data = np.arange(2 * 128 * 128, dtype="u2").reshape(2, 128, 128)
    path = tmp_path / "a.zarr"
    zarr.create_array(path, shape=data.shape, chunks=(1, 64, 64), dtype="u2")[:] = data
    chunk = path / "c" / "1" / "1" / "0"
    chunk.unlink()
    os.mkfifo(chunk)
    answers = []
    for loop in ("on", "off"):
        child = subprocess.run(
            [sys.executable, "-c", _READ_IN_CHILD, str(path), loop],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, child.stderr
        answers.append(child.stdout.strip())
    assert answers[0] == answers[1]
    assert answers[0].startswith("StoreError") and "'c/1/1/0'" in answers[0], answers[0]
    assert "not a regular file" in answers[0], answers[0]
    np.testing.assert_array_equal(zarrfs.open(str(path))[0], data[0])  # its siblings read


def test_reads_that_keep_every_chunk_take_the_loop(tmp_path, loop_calls):
    """The mount's ``read_flat`` and the viewer's ``submit`` (its prefetch) keep every chunk
    they read: each goes through the loop, decoded into an array of its own, which the table
    keeps. Read again, they come from the table."""
    from zarrfs.engine import cache

    data = np.random.default_rng(11).integers(0, 2**16, size=(4, 256, 256)).astype("u2")
    path = tmp_path / "a.zarr"
    zarr.create_array(path, shape=data.shape, chunks=(1, 128, 128), dtype="u2")[:] = data
    cache.clear_caches()
    arr = zarrfs.open(str(path))
    np.testing.assert_array_equal(arr.read_flat(0, arr.size), data.ravel())
    done = [o for call in loop_calls for o in call]
    assert len(done) == 16 and all(o > 0 for o in done), done
    loop_calls.clear()
    np.testing.assert_array_equal(arr.read_flat(100, arr.size - 7), data.ravel()[100:-7])
    np.testing.assert_array_equal(arr[2, 5:250], data[2, 5:250])
    assert not loop_calls  # (every chunk from the table, as kept)
    cache.clear_caches()
    np.testing.assert_array_equal(arr.submit((slice(1, 3), slice(None))).result(), data[1:3])
    done = [o for call in loop_calls for o in call]
    assert len(done) == 8 and all(o > 0 for o in done), done
    loop_calls.clear()
    np.testing.assert_array_equal(arr[1:3, ::-1], data[1:3, ::-1])
    assert not loop_calls  # (kept by the background read)


@pytest.mark.parametrize(
    "frame", ["no content size", "two frames", "skippable first", "trailing bytes", "size + 2"]
)
def test_zstd_frames_the_loop_does_not_take_read_as_on_the_python_loop(
    tmp_path, loop_calls, monkeypatch, frame
):
    """zstd chunks as other writers leave them: the loop takes only one frame stating the
    chunk's size, and leaves the rest to the Python loop, which reads or refuses them."""
    zstandard = pytest.importorskip("zstandard")
    data = np.random.default_rng(5).integers(0, 2**16, size=(2, 128, 128)).astype("u2")
    path = tmp_path / "a.zarr"
    zarr.create_array(
        path,
        shape=data.shape,
        chunks=(1, 64, 64),
        dtype="u2",
        compressors=[zarr.codecs.ZstdCodec()],
    )[:] = data
    raw = data[1, 64:, :64].tobytes()
    compress = zstandard.ZstdCompressor().compress
    stored = {
        "no content size": zstandard.ZstdCompressor(write_content_size=False).compress(raw),
        "two frames": compress(raw[:4096]) + compress(raw[4096:]),
        "skippable first": (0x184D2A50).to_bytes(4, "little")
        + bytes([4, 0, 0, 0, 1, 2, 3, 4])
        + compress(raw),
        "trailing bytes": compress(raw) + b"\0\0\0",
        "size + 2": compress(raw + b"xx"),
    }[frame]
    (path / "c" / "1" / "1" / "0").write_bytes(stored)
    with_loop, without = _both(path, slice(None), monkeypatch)
    if isinstance(without, tuple):
        assert with_loop == without
    else:
        np.testing.assert_array_equal(with_loop, without)
        np.testing.assert_array_equal(without, zarr.open_array(path)[:])
    outcomes = [o for call in loop_calls for o in call]
    assert chunkloop.HEADER in outcomes and sum(o > 0 for o in outcomes) == 7


def test_a_shard_index_placing_two_chunks_at_one_range_reads_as_on_the_python_loop(
    tmp_path, loop_calls, monkeypatch
):
    """Two index entries at the same bytes: both chunks read those bytes, on both loops."""
    from crc32c import crc32c

    data = np.random.default_rng(6).integers(0, 2**16, size=(1, 256, 256)).astype("u2")
    path = tmp_path / "a.zarr"
    zarr.create_array(path, shape=data.shape, chunks=(1, 64, 64), shards=(1, 128, 128), dtype="u2")[
        :
    ] = data
    shard = path / "c" / "0" / "1" / "1"
    raw = bytearray(shard.read_bytes())
    at = len(raw) - (16 * 4 + 4)
    entries = np.frombuffer(bytes(raw[at : at + 64]), "<u8").reshape(4, 2).copy()
    entries[0] = entries[3]  # inner chunk (0, 0) at (1, 1)'s bytes
    raw[at : at + 64] = entries.tobytes()
    raw[at + 64 :] = np.uint32(crc32c(bytes(raw[at : at + 64]))).tobytes()
    shard.write_bytes(bytes(raw))
    expected = data.copy()
    expected[0, 128:192, 128:192] = data[0, 192:, 192:]
    with_loop, without = _both(path, slice(None), monkeypatch)
    np.testing.assert_array_equal(with_loop, expected)
    np.testing.assert_array_equal(without, expected)
    outcomes = [o for call in loop_calls for o in call]
    assert len(outcomes) == 16 and all(o > 0 for o in outcomes), outcomes


def test_an_icechunk_repository_reads_as_on_the_python_loop(tmp_path, loop_calls, monkeypatch):
    """An Icechunk repository's chunk objects read by the loop from the layout's ranges; its
    inline chunks (small ones), absent chunks and a chunk object shorter than the snapshot
    says go to the Python loop, which reads or refuses them as without the loop."""
    icechunk = pytest.importorskip("icechunk")
    data = np.random.default_rng(8).integers(0, 2**16, size=(2, 128, 192)).astype("u2")
    data[0, :64, :64] = 7  # compresses to a few bytes: inlined in the manifest
    data[1, 64:, 128:] = 0  # the fill value: not written
    root = tmp_path / "repo"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(root)))
    session = repo.writable_session("main")
    zarr.group(store=session.store).create_array(
        "a", shape=data.shape, chunks=(1, 64, 64), dtype="u2", fill_value=0
    )[:] = data
    session.commit("planes")
    with_loop, without = _both(root / "a", slice(None), monkeypatch)
    np.testing.assert_array_equal(with_loop, data)
    np.testing.assert_array_equal(without, data)
    outcomes = [o for call in loop_calls for o in call]
    assert len(outcomes) == 10 and all(o > 0 for o in outcomes), outcomes  # (12 less 2)
    largest = max((root / "chunks").iterdir(), key=lambda p: p.stat().st_size)
    largest.write_bytes(largest.read_bytes()[:100])
    loop_calls.clear()
    with_loop, without = _both(root / "a", slice(None), monkeypatch)
    assert isinstance(with_loop, tuple) and with_loop == without
    assert "shorter than the snapshot says" in with_loop[1]
    assert chunkloop.SOURCE in [o for call in loop_calls for o in call]


def test_a_read_told_of_each_chunk_takes_the_loop_and_hears_of_every_chunk(tmp_path, loop_calls):
    """The viewer's reads (``submit(on_chunk=...)``) take the loop, a few chunks a call, and
    hear of each chunk once it is in place: every event's region holds zarr-python's values
    at that moment."""
    data = np.random.default_rng(5).integers(0, 2**16, size=(2, 200, 300)).astype("u2")
    path = tmp_path / "a.zarr"
    z = zarr.create_array(path, shape=data.shape, chunks=(1, 64, 64), dtype="u2")
    z[:] = data
    arr = zarrfs.open(str(path))
    out = np.zeros((150, 250), dtype="u2")
    seen: list = []
    wrong: list = []

    def told(event):  # (a worker thread: the region must be in place already)
        seen.append(event)
        region = out[event.out_selection]
        if event.status != "loaded" or (region != expected[event.out_selection]).any():
            wrong.append(event)

    expected = data[1, 25:175, 30:280]
    arr.submit((1, slice(25, 175), slice(30, 280)), on_chunk=told, out=out).result(timeout=60)
    np.testing.assert_array_equal(out, expected)
    assert not wrong
    assert sorted(e.chunk_coords for e in seen) == [(1, i, j) for i in range(3) for j in range(5)]
    calls = [call for call in loop_calls if call]
    assert calls and all(len(call) <= 16 and all(o > 0 for o in call) for call in calls)


def test_spans_are_read_from_any_contiguous_buffer_where_they_lie():
    """The loop reads a span from ``bytes`` or from any C-contiguous buffer (a transport's
    answer: obstore's ``Bytes``, a memoryview of a shard's body, a NumPy array), with no
    copy; one body for several chunks, with another body between its uses; a buffer that is
    not contiguous is left to the Python way (its outcome below 0)."""
    import numcodecs

    codec = numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE)
    chunks = [np.arange(16, dtype="<u2").reshape(4, 4) + 100 * i for i in range(6)]
    frames = [bytes(codec.encode(c)) for c in chunks]
    shard = memoryview(bytearray(frames[0] + frames[1]))  # two chunks in one body
    a, b = len(frames[0]), len(frames[0]) + len(frames[1])
    array = np.frombuffer(frames[3], np.uint8)
    strided = memoryview(frames[4] * 2)[::2]  # (as long as the frame, not contiguous)
    bodies = [
        (shard, 0, a),
        (shard, a, b),
        (frames[2], 0, len(frames[2])),
        (array, 0, array.size),
        (strided, 0, len(strided)),
        (shard, 0, a),  # (the first body again, after others)
    ]
    out = np.zeros((4, 24), "<u2")
    targets = [
        (((i,), (slice(0, 4), slice(0, 4)), (slice(0, 4), slice(4 * i, 4 * i + 4))), out)
        for i in range(6)
    ]
    sources = [((i,), *body) for i, body in enumerate(bodies)]
    spec = chunkloop._FUNCTIONS[chunkloop._BLOSC]
    outcomes = chunkloop.run(
        targets, sources, chunkloop.SPANS, spec, np.empty(32, np.uint8), (4, 4), 2
    )
    assert outcomes[:4] == [len(f) for f in frames[:4]] and outcomes[5] == len(frames[0])
    assert outcomes[4] < 0
    expected = np.hstack([*chunks[:4], np.zeros((4, 4), "<u2"), chunks[0]])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("layout", ["plain", "sharded", "large"])
def test_chunks_from_an_http_server_take_the_loop_and_fail_as_on_the_python_loop(
    tmp_path, loop_calls, monkeypatch, http_server, layout
):
    """Chunks that arrived from an async store (the loopback HTTP server: obstore), small or
    large, are decoded by the loop where obstore's answers lie: what zarr-python wrote, bit
    for bit, over every selection; a chunk not stored reads as the fill value; a damaged one
    fails alone, with the Python loop's error."""
    rng = np.random.default_rng(11)
    data = rng.integers(0, 60000, size=(4, 300, 520)).astype("u2")
    path = tmp_path / "a.zarr"
    shards = (2, 128, 256) if layout == "sharded" else None
    chunks = (1, 256, 512) if layout == "large" else (1, 64, 64)  # (256 KiB, 8 KiB)
    z = zarr.create_array(
        path, shape=data.shape, chunks=chunks, shards=shards, dtype="u2", fill_value=9
    )
    z[:] = data
    url = http_server(str(tmp_path)).url_for("a.zarr")
    for selection in SELECTIONS:
        loop_calls.clear()
        got = zarrfs.open(url)[selection]
        np.testing.assert_array_equal(got, data[selection], err_msg=str(selection))
        done = [o for call in loop_calls for o in call]
        assert done and all(o > 0 for o in done), (selection, done)
    if layout == "sharded":
        return  # (a shard's damage: test_a_damaged_shard_fails_as_on_the_python_loop)
    os.remove(path / "c" / "0" / "0" / "1")
    chunk = path / "c" / "1" / "1" / "0"
    chunk.write_bytes(chunk.read_bytes()[:100])
    expected = data.copy()
    expected[0, : chunks[1], chunks[2] : 2 * chunks[2]] = 9
    np.testing.assert_array_equal(zarrfs.open(url)[0], expected[0])  # (the loop on)
    with_loop, without = _both(url, 1, monkeypatch)  # (the loop off from here on)
    assert isinstance(with_loop, tuple), "a damaged chunk read as data"
    assert with_loop == without
    assert any(o < 0 for call in loop_calls for o in call)  # the loop left it to Python
    np.testing.assert_array_equal(zarrfs.open(url)[0], expected[0])
    np.testing.assert_array_equal(zarrfs.open(url)[1, :64], data[1, :64])


def test_info_says_which_loop_reads_a_remote_array(tmp_path, loop_calls, http_server):
    """``zarrfs info --debug``'s reason for an array over HTTP: its chunks, small or large,
    decoded in the compiled loop as they arrive; a chain the loop does not take, in Python."""
    for name, chunks, compressors in (
        ("small", (1, 64, 64), "auto"),
        ("large", (1, 256, 512), "auto"),
        ("gzip", (1, 64, 64), zarr.codecs.GzipCodec()),
    ):
        z = zarr.create_array(
            tmp_path / f"{name}.zarr",
            shape=(2, 256, 512),
            chunks=chunks,
            dtype="u2",
            compressors=compressors,
        )
        z[:] = 7
    server = http_server(str(tmp_path))
    arrived = "chunk loop compiled (chunks decoded and placed off the GIL as they arrive)"
    for name in ("small", "large"):
        path = zarrfs.open(server.url_for(f"{name}.zarr")).read_path
        assert not path.native and arrived in path.reason, (name, path.reason)
    gzip = zarrfs.open(server.url_for("gzip.zarr")).read_path
    assert "chunk loop in Python (codecs it does not take" in gzip.reason


def test_a_big_endian_array_is_read_the_python_way_once_and_info_says_why(tmp_path, loop_calls):
    """Chunks stored big-endian decode into an output of the machine's byte order, which the
    loop does not take: such an array's chunks go the Python way from the start (before, each
    batch went through the loop, which sent every chunk back to be fetched again), and
    ``info --debug`` says so instead of "compiled". Values as zarr-python wrote them."""
    data = np.arange(2 * 128 * 192, dtype=">u2").reshape(2, 128, 192)
    z = zarr.create_array(
        tmp_path / "big.zarr",
        shape=data.shape,
        chunks=(1, 64, 64),
        dtype=">u2",
        serializer=zarr.codecs.BytesCodec(endian="big"),
        compressors=zarr.codecs.ZstdCodec(),
    )
    z[:] = data
    arr = zarrfs.open(str(tmp_path / "big.zarr"))
    reason = arr.read_path.reason
    assert "the chunk loop in Python (chunks stored big-endian" in reason, reason
    got = arr[...]
    np.testing.assert_array_equal(got, data)
    assert got.dtype.isnative and not loop_calls
