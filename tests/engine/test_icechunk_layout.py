"""A local repository's chunks read from Icechunk's own files (``icechunk_layout``): every key
of every version answers what Icechunk itself answers (documents, native chunk files, inline
chunks, absent chunks, byte ranges of a shard), chunks are read without Icechunk, and a chunk
file that vanished is an error, never the fill value."""

from __future__ import annotations

import asyncio
import itertools
import json

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.icechunk_repos import icechunk, write_history, zarr
from zarrfs.engine import icechunk_layout
from zarrfs.engine.icechunk_layout import ASK, ChunkLayout, FileRange, answer
from zarrfs.engine.icechunk_store import SessionFileSystem


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("icechunk_layout") / "repo")


@pytest.fixture
def sharded(tmp_path):
    """A root array of 6 x 256 int32 in shards of 2 x 128 (inner chunks 1 x 64: past
    Icechunk's inline threshold, so each shard is a chunk file), one shard never written;
    (the repository, its values)."""
    values = np.arange(6 * 256, dtype="int32").reshape(6, 256) * 7 - 100
    values[4:, 128:] = -1  # the fill value: that shard is never written
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    arr = zarr.create_array(
        session.store,
        shape=(6, 256),
        shards=(2, 128),
        chunks=(1, 64),
        dtype="int32",
        fill_value=-1,
    )
    arr[:4] = values[:4]
    arr[4:, :128] = values[4:, :128]
    session.commit("sharded")
    return tmp_path / "repo", values


def _layout(path, sid) -> ChunkLayout:
    """A snapshot's layout, its files read from disk."""
    return ChunkLayout(
        lambda key: (path / key).read_bytes() if (path / key).exists() else None, sid
    )


def _answer(path, layout, key, start=None, end=None):
    """What the layout answers, a chunk's range read from its file."""
    got = answer(layout, key, start, end)
    if isinstance(got, FileRange):
        with open(path / got.key, "rb") as f:
            f.seek(got.offset)
            return f.read(got.length)
    return got


def _icechunk_answer(store, key, byte_range=None):
    from zarr.core.buffer import default_buffer_prototype

    got = asyncio.run(store.get(key, default_buffer_prototype(), byte_range))
    return None if got is None else got.to_bytes()


def _keys(layout: ChunkLayout):
    """Every document and every chunk key (written or not) of a snapshot."""
    for path in layout.nodes():
        yield (f"{path}/" if path else "") + "zarr.json"
        meta = json.loads(layout.document(path))
        if meta["node_type"] != "array":
            continue
        chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
        grid = [-(-s // c) for s, c in zip(meta["shape"], chunks, strict=True)]
        for index in itertools.product(*(range(n) for n in grid)):
            yield (f"{path}/c/" if path else "c/") + "/".join(map(str, index))


def _every_key_answers_as_icechunk_does(path, snapshots) -> set[str]:
    """The kinds of answer seen."""
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))
    kinds = set()
    for sid in snapshots:
        store = repo.readonly_session(snapshot_id=sid).store
        layout = _layout(path, sid)
        for key in _keys(layout):
            mine = _answer(path, layout, key)
            assert mine is not ASK, key
            assert mine == _icechunk_answer(store, key), (sid, key)
            kinds.add("absent" if mine is None else "present")
        for node in layout.nodes().values():
            for manifest, _ in node.manifests:
                refs = layout._refs_of(manifest, node.node_id)
                kinds |= {type(r).__name__ for r in refs.values()}
    return kinds


def test_every_key_of_every_version_answers_as_icechunk_does(history, sharded):
    kinds = _every_key_answers_as_icechunk_does(history.path, history.order)
    assert kinds >= {"absent", "present", "bytes"}  # small chunks are inline
    path, _ = sharded
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))
    kinds = _every_key_answers_as_icechunk_does(path, [repo.lookup_branch("main")])
    assert kinds >= {"absent", "present", "FileRange"}


def test_byte_ranges_of_a_shard_answer_as_icechunk_does(sharded):
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    path, _ = sharded
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))
    sid = repo.lookup_branch("main")
    store = repo.readonly_session(snapshot_id=sid).store
    layout = _layout(path, sid)
    for start, end, asked in [
        (0, 10, RangeByteRequest(0, 10)),
        (5, None, OffsetByteRequest(5)),
        (-16, None, SuffixByteRequest(16)),
    ]:
        for key in ("c/0/0", "c/2/0", "c/0/1"):
            mine = _answer(path, layout, key, start, end)
            assert mine == _icechunk_answer(store, key, asked), (key, start, end)
    assert isinstance(answer(layout, "c/0/0", None, None), FileRange)
    assert answer(layout, "c/2/1", None, None) is None  # the shard never written


def test_a_sharded_array_reads_what_was_written(sharded):
    path, values = sharded
    arr = engine.open(str(path))
    np.testing.assert_array_equal(arr[...], values)
    np.testing.assert_array_equal(arr[3:5, 100:200], values[3:5, 100:200])


def _refuse_icechunk(monkeypatch) -> None:
    """Every read through Icechunk's store fails the test."""

    async def batch(self, requests):
        raise AssertionError(f"asked Icechunk for {[r.key for r in requests]}")

    async def one(self, path, start=None, end=None, **kwargs):
        raise AssertionError(f"asked Icechunk for {path}")

    monkeypatch.setattr(SessionFileSystem, "_cat_batch", batch)
    monkeypatch.setattr(SessionFileSystem, "_cat_file", one)


def test_chunks_are_read_without_icechunk(history, monkeypatch):
    _refuse_icechunk(monkeypatch)
    for sid in history.order:
        root = engine.open(str(history.path), snapshot=sid)
        for array_path, values in history.values[sid].items():
            np.testing.assert_array_equal(root[array_path][...], values)


def test_a_chunk_file_that_vanished_is_an_error(tmp_path, sharded):
    path, _ = sharded
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    for chunk in (copy / "chunks").iterdir():
        chunk.unlink()
    arr = engine.open(str(copy))
    with pytest.raises(engine.StoreError, match="c/0/0"):
        arr[0]


def test_a_file_of_another_spec_version_is_left_to_icechunk(tmp_path, history):
    """A snapshot this reader does not know (here: its spec version byte changed) is read
    through Icechunk, which says what is wrong: never guessed at."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(history.path, copy)
    sid = history.branches["main"]
    layout = _layout(copy, sid)
    snapshot = copy / "snapshots" / sid
    data = bytearray(snapshot.read_bytes())
    data[len(icechunk_layout.MAGIC) + 24] = 99
    snapshot.write_bytes(bytes(data))
    with pytest.raises(icechunk_layout.LayoutError, match="spec 99"):
        layout.nodes()


def test_chunks_in_a_bucket_are_read_without_icechunk(sharded, s3_server, monkeypatch):
    """Over S3 the snapshot, manifest and chunk objects come through the engine's own S3
    store, with the same storage options; a chunk object deleted since is an error."""
    path, values = sharded
    url = s3_server.upload_dir(path, prefix="repos/sharded")
    options = s3_server.storage_options()

    _refuse_icechunk(monkeypatch)
    arr = engine.open(url, **options)
    np.testing.assert_array_equal(arr[...], values)
    bucket, prefix = url.removeprefix("s3://").split("/", 1)
    client = s3_server.client()
    for item in client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/chunks/")["Contents"]:
        client.delete_object(Bucket=bucket, Key=item["Key"])
    engine.clear_caches()  # nothing decoded before kept
    with pytest.raises(engine.StoreError, match="is not there"):
        engine.open(url, **options)[0]


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("c/0/1", ("", (0, 1))),
        ("c", ("", ())),
        ("a/c/3", ("a", (3,))),
        ("c/c/0", ("c", (0,))),
        ("g/c/t/c/1/2", ("g/c/t", (1, 2))),
        ("a/c", ("a", ())),
        ("a/c/x", None),
        ("a/0/1", None),
    ],
)
def test_chunk_keys(key, parsed):
    assert icechunk_layout._chunk_key(key) == parsed


@pytest.mark.parametrize("keep", [0.5, 0.1, 0.02])
def test_a_cut_snapshot_is_a_layout_error_never_a_guess(tmp_path, history, keep):
    """A snapshot whose FlatBuffer ends early (its header and compression intact): every
    offset read past its end is a LayoutError (Icechunk is asked instead)."""
    import shutil

    import zstandard

    copy = tmp_path / "copy"
    shutil.copytree(history.path, copy)
    sid = history.branches["main"]
    snapshot = copy / "snapshots" / sid
    data = snapshot.read_bytes()
    head = len(icechunk_layout.MAGIC) + 24 + 3
    body = zstandard.ZstdDecompressor().stream_reader(data[head:]).read()
    cut = zstandard.ZstdCompressor().compress(body[: int(len(body) * keep)])
    snapshot.write_bytes(data[:head] + cut)
    with pytest.raises(icechunk_layout.LayoutError):
        _layout(copy, sid).nodes()
