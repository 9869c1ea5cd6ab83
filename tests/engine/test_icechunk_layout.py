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

    copy = tmp_path / "copy"
    shutil.copytree(history.path, copy)
    sid = history.branches["main"]
    _cut(copy / "snapshots" / sid, keep)
    with pytest.raises(icechunk_layout.LayoutError):
        _layout(copy, sid).nodes()


def _cut(file, keep: float) -> None:
    """An Icechunk file's FlatBuffer cut to ``keep`` of its length, its header and its
    compression intact."""
    import zstandard

    data = file.read_bytes()
    head = len(icechunk_layout.MAGIC) + 24 + 3
    body = zstandard.ZstdDecompressor().stream_reader(data[head:]).read()
    file.write_bytes(
        data[:head] + zstandard.ZstdCompressor().compress(body[: int(len(body) * keep)])
    )


@pytest.fixture(scope="module")
def many_chunks(tmp_path_factory):
    """A 3-d array of 4 x 15 x 20 chunks (1,200 references: native, inline and absent), then
    a commit that rewrites some chunks, inlines others and leaves one plane alone; (the
    repository, [(snapshot id, values)] oldest first)."""
    path = tmp_path_factory.mktemp("many_chunks") / "repo"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    rng = np.random.default_rng(28)
    values = rng.integers(0, 1 << 30, (4, 150, 400), dtype="int32")  # 800-byte chunks: native
    values[1, :50] = 7  # constant chunks compress to a few bytes: inline
    values[3, 100:] = -5  # the fill value: never written (absent)
    session = repo.writable_session("main")
    arr = zarr.create_array(
        session.store,
        name="a/b",
        shape=values.shape,
        chunks=(1, 10, 20),
        dtype="int32",
        fill_value=-5,
    )
    arr[:3] = values[:3]
    arr[3, :100] = values[3, :100]
    versions = [(session.commit("first"), values.copy())]
    session = repo.writable_session("main")
    arr = zarr.open_array(session.store, path="a/b")
    values[0, 20:70, 30:90] = rng.integers(0, 1 << 30, (50, 60), dtype="int32")
    values[2, :10] = 3
    arr[0, 20:70, 30:90] = values[0, 20:70, 30:90]
    arr[2, :10] = values[2, :10]
    versions.append((session.commit("second"), values.copy()))
    return path, versions


def test_many_references_answer_as_icechunk_does_at_each_version(many_chunks):
    """Every key's answer (native files, inline bytes, absent) equals Icechunk's at each
    version, and each version reads back what was written then (NumPy over the manifest's
    vectors: the references' order in the file is not the index order)."""
    path, versions = many_chunks
    kinds = _every_key_answers_as_icechunk_does(path, [sid for sid, _ in versions])
    assert kinds >= {"absent", "present", "bytes", "FileRange"}
    for sid, values in versions:
        layout = _layout(path, sid)
        node = layout.nodes()["a/b"]
        refs = layout._refs_of(node.manifests[0][0], node.node_id)
        assert len(list(refs.values())) == 4 * 15 * 20 - 5 * 20  # one plane's half absent
        assert refs.get((0, 15, 0), ASK) is ASK  # past the grid
        assert refs.get((0, 0), ASK) is ASK  # another rank
        arr = engine.open(str(path), snapshot=sid)["a/b"]
        np.testing.assert_array_equal(arr[...], values)
        np.testing.assert_array_equal(arr[2, 5:95, 17:333], values[2, 5:95, 17:333])
    first, second = (engine.open(str(path), snapshot=sid)["a/b"] for sid, _ in versions)
    assert not np.array_equal(first[0], second[0])


def test_a_remembered_chunk_read_still_checks_its_file(tmp_path, many_chunks):
    """A chunk read before is read again by one lookup of what it was: a chunk file that
    vanished or was cut since is still an error, never the fill value or short bytes."""
    import shutil

    path, versions = many_chunks
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    sid, values = versions[-1]
    arr = engine.open(str(copy), snapshot=sid)["a/b"]
    np.testing.assert_array_equal(arr[2], values[2])
    np.testing.assert_array_equal(arr[2], values[2])  # now through the remembered reads
    layout = arr._hierarchy.store.layout
    asked = layout.chunk_read("a/b/c/2/5/7")
    assert asked is not None and asked.key.startswith("chunks/") and asked.start == 0
    file = copy / asked.key
    file.write_bytes(file.read_bytes()[:-1])
    engine.clear_caches()
    with pytest.raises(engine.StoreError, match="shorter than the snapshot says"):
        arr[2]
    file.unlink()
    engine.clear_caches()
    with pytest.raises(engine.StoreError, match="is not there"):
        arr[2]
    np.testing.assert_array_equal(arr[1], values[1])  # its neighbours still read


@pytest.mark.parametrize("keep", [0.6, 0.3, 0.05])
def test_a_cut_manifest_is_a_layout_error_never_a_guess(tmp_path, many_chunks, keep):
    """A manifest whose FlatBuffer ends early: a LayoutError for the layout; the array is then
    read through Icechunk, which says what is wrong: never wrong values."""
    import shutil

    path, versions = many_chunks
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    sid, values = versions[0]
    layout = _layout(copy, sid)
    node = layout.nodes()["a/b"]
    _cut(copy / "manifests" / node.manifests[0][0], keep)
    with pytest.raises(icechunk_layout.LayoutError):
        layout._refs_of(node.manifests[0][0], node.node_id)
    arr = engine.open(str(copy), snapshot=sid)["a/b"]
    try:
        got = arr[1, 40:60, 30:70]  # inline and native chunks
    except engine.ZarrfsError:
        return
    np.testing.assert_array_equal(got, values[1, 40:60, 30:70])


def test_zarr_v2_documents_are_absent_without_asking_icechunk(history, monkeypatch):
    """A plain open asks for Zarr v2's documents too: a repository holds none (Icechunk says
    "not found" to each), answered by the layout without a round trip into Icechunk."""
    sid = history.branches["main"]
    layout = _layout(history.path, sid)
    for key in (".zgroup", ".zattrs", ".zmetadata", "g/.zgroup", "g/temp/.zarray"):
        assert answer(layout, key, None, None) is None, key
    _refuse_icechunk(monkeypatch)
    calls = []
    monkeypatch.setattr(
        "zarrfs.engine.icechunk_store.fsspec.asyn.sync", lambda *a, **k: calls.append(a)
    )
    root = engine.open(str(history.path), snapshot=sid)
    np.testing.assert_array_equal(root["g/temp"][...], history.values[sid]["g/temp"])
    assert calls == []
