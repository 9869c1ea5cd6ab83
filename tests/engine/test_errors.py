"""Bad input gets a specific exception naming the store, key and reason; nothing else breaks."""

from __future__ import annotations

import json
import pickle

import numcodecs
import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine


def _write_zarray(root, doc, chunks: dict | None = None):
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zarray").write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    for key, value in (chunks or {}).items():
        (root / key).write_bytes(value)


BASE = {
    "zarr_format": 2,
    "shape": [4],
    "chunks": [4],
    "dtype": "<i4",
    "compressor": None,
    "fill_value": 0,
    "order": "C",
    "filters": None,
}


def _read_error(where, error_type):
    """``where``: a node, or the URL of one. A node whose metadata cannot be used is a broken
    member of its group (``error`` says why; reading it raises), and open() of its URL raises
    that error; an array whose codecs cannot be built opens and its reads raise."""
    if isinstance(where, str):
        try:
            where = zarrfs.open(where)
        except error_type:
            with pytest.raises(error_type) as err:
                zarrfs.open(where)
            return err
    node = where
    assert isinstance(node.error, error_type), node.error
    with pytest.raises(error_type) as err:
        node.read()
    assert str(err.value) == str(node.error)
    return err


def test_missing_node(tmp_path):
    with pytest.raises(engine.NodeNotFoundError) as err:
        zarrfs.open(str(tmp_path / "nothing.zarr"))
    assert isinstance(err.value, FileNotFoundError)
    assert "nothing.zarr" in str(err.value)


def test_malformed_json_names_document(tmp_path):
    _write_zarray(tmp_path / "a", '{"zarr_format": 2, "shape": [4,')
    err = _read_error(str(tmp_path / "a"), engine.MetadataError)
    assert ".zarray" in str(err.value) and "malformed JSON" in str(err.value)


def test_missing_field_named(tmp_path):
    doc = {k: v for k, v in BASE.items() if k != "chunks"}
    _write_zarray(tmp_path / "a", doc)
    err = _read_error(str(tmp_path / "a"), engine.MetadataError)
    assert err.value.field == "chunks" and "'chunks'" in str(err.value)


def test_unknown_codec_named(tmp_path):
    _write_zarray(tmp_path / "a", {**BASE, "compressor": {"id": "fancyzip", "level": 3}})
    err = _read_error(str(tmp_path / "a"), engine.UnknownCodecError)
    assert err.value.codec == "fancyzip" and "fancyzip" in str(err.value)


def test_unknown_v3_codec_and_dtype(tmp_path):
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "mystery"}],
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(doc))
    err = _read_error(str(tmp_path / "a"), engine.UnknownCodecError)
    assert err.match("mystery")
    doc["codecs"] = [{"name": "bytes"}]
    doc["data_type"] = "int3"
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(doc))
    err = _read_error(str(tmp_path / "a"), engine.UnknownDataTypeError)
    assert err.match("int3")


V3 = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [4],
    "data_type": "int32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
    "chunk_key_encoding": {"name": "default"},
    "fill_value": 0,
    "codecs": [{"name": "bytes"}],
}


@pytest.mark.parametrize(
    ("document", "error", "words"),
    [
        (
            {**V3, "codecs": [{"name": "bytes"}, {"name": "mystery"}]},
            engine.UnknownCodecError,
            "unknown codec 'mystery'; zarrfs knows blosc",
        ),
        ({**V3, "data_type": "int3"}, engine.UnknownDataTypeError, "int3"),
        (
            {
                **V3,
                "codecs": [
                    {"name": "transpose", "configuration": {"order": [1]}},
                    {"name": "bytes"},
                ],
            },
            engine.MetadataError,
            "transpose",
        ),
        (
            {**V3, "codecs": [{"name": "bytes", "configuration": {"endian": "middle"}}]},
            engine.MetadataError,
            "endian",
        ),
        ({**BASE, "compressor": {"id": "fancyzip"}}, engine.UnknownCodecError, "fancyzip"),
        ({**BASE, "dtype": "<q9"}, engine.UnknownDataTypeError, "q9"),
    ],
    ids=["v3 codec", "v3 data type", "transpose order", "endian", "v2 codec", "v2 dtype"],
)
def test_metadata_errors_name_the_document(tmp_path, document, error, words):
    """What the CLI, the mount's log and the viewer show is the message: it names the
    document it is about, whichever part of the parser raised."""
    name = "zarr.json" if document["zarr_format"] == 3 else ".zarray"
    (tmp_path / "arr").mkdir()
    (tmp_path / "arr" / name).write_text(json.dumps(document))
    err = _read_error(str(tmp_path / "arr"), error)
    assert str(err.value).startswith(f"{tmp_path / 'arr' / name}: ")
    assert words in str(err.value)
    err = _read_error(zarrfs.open(str(tmp_path))["arr"], error)  # a child, through its group
    assert f"{tmp_path / 'arr' / name}: " in str(err.value)


def test_must_understand(tmp_path):
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {}, "future": {"x": 1}}
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zarr.json").write_text(json.dumps(doc))
    err = _read_error(str(tmp_path / "g"), engine.UnsupportedError)
    assert err.match("future")
    doc["future"] = {"must_understand": False}
    (tmp_path / "g" / "zarr.json").write_text(json.dumps(doc))
    assert zarrfs.open(str(tmp_path / "g")).kind == "group"


def test_pickle_refused_never_unpickled(tmp_path):
    class Boom:
        def __reduce__(self):
            return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))

    payload = pickle.dumps(np.array([Boom()], dtype=object))
    _write_zarray(
        tmp_path / "a", {**BASE, "dtype": "|O", "filters": [{"id": "pickle"}]}, {"0": payload}
    )
    err = _read_error(str(tmp_path / "a"), engine.UnsupportedError)
    assert err.match("pickle")
    assert not (tmp_path / "PWNED").exists()


def test_corrupt_chunk_raises_decode_error_with_key(tmp_path):
    blob = numcodecs.Zstd().encode(np.arange(4, dtype="<i4").tobytes())
    _write_zarray(
        tmp_path / "a", {**BASE, "compressor": {"id": "zstd", "level": 1}}, {"0": blob[:-3]}
    )
    arr = zarrfs.open(str(tmp_path / "a"))
    with pytest.raises(engine.ChunkDecodeError) as err:
        arr[...]
    assert err.value.key == "0" and err.value.codec == "zstd"


def test_wrong_size_chunk(tmp_path):
    _write_zarray(tmp_path / "a", BASE, {"0": np.arange(3, dtype="<i4").tobytes()})
    with pytest.raises(engine.ChunkDecodeError, match="12 bytes, expected 16"):
        zarrfs.open(str(tmp_path / "a"))[...]


def test_checksum_mismatch(tmp_path):
    good = numcodecs.CRC32().encode(np.arange(4, dtype="<i4").tobytes())
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # flip a data bit, keep the stored checksum
    _write_zarray(tmp_path / "a", {**BASE, "compressor": {"id": "crc32"}}, {"0": bytes(bad)})
    with pytest.raises(engine.ChecksumError):
        zarrfs.open(str(tmp_path / "a"))[...]


def test_v3_crc32c_mismatch(zarr_writer, tmp_path):
    import zarr.codecs as zc

    data = np.arange(16, dtype="i4")
    w = zarr_writer(data, chunks=(16,), compressors=[zc.Crc32cCodec()], zarr_format=3)
    chunk = w.location / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 1
    chunk.write_bytes(bytes(raw))
    with pytest.raises(engine.ChecksumError, match="crc32c"):
        zarrfs.open(str(w.root))["array"][...]


def test_truncated_shard(zarr_writer):
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    w = zarr_writer(data, chunks=(8, 8), shards=(64, 64), compressors=None)
    shard = w.location / "c" / "0" / "0"
    raw = shard.read_bytes()
    shard.write_bytes(raw[:100] + raw[-(64 * 16 + 4) :])  # index intact, chunks cut
    engine.set_cache_size(0)
    try:
        with pytest.raises(engine.ChunkDecodeError, match="truncated"):
            zarrfs.open(str(w.root))["array"][40:48, 40:48]
    finally:
        engine.set_cache_size(512 * 2**20)


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_shard_index_whose_checksum_differs_fails_its_shard_alone(
    zarr_writer, monkeypatch, native
):
    """The usual index codecs (bytes, crc32c) are read inline: a flipped bit in an index
    still raises the crc32c codec's ChecksumError, and the other shard reads as written."""
    monkeypatch.setenv("ZARRFS_NATIVE", native)
    data = np.arange(64 * 128, dtype="u2").reshape(64, 128)
    w = zarr_writer(data, chunks=(8, 8), shards=(64, 64), compressors=None)
    shard = w.location / "c" / "0" / "1"
    raw = bytearray(shard.read_bytes())
    raw[-20] ^= 1  # an entry of the index, not its stored checksum
    shard.write_bytes(bytes(raw))
    arr = zarrfs.open(str(w.root))["array"]
    with pytest.raises(engine.ChecksumError, match="crc32c") as caught:
        arr[:, 64:]
    assert caught.value.codec == "crc32c"
    np.testing.assert_array_equal(arr[:, :64], data[:, :64])


def test_out_of_range_index(zarr_writer):
    w = zarr_writer(np.arange(10), chunks=(5,))
    arr = zarrfs.open(str(w.root))["array"]
    with pytest.raises(engine.SelectionError, match="out of bounds"):
        arr[10]
    with pytest.raises(IndexError):
        arr[0, 0]


def test_engine_imports_no_front_end():
    import subprocess
    import sys

    code = (
        "import sys, zarrfs, zarrfs.engine as e; "
        "bad = [m for m in ('mfusepy', 'fuse', 'PySide6', 'pyqtgraph') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_broken_child_does_not_hide_its_siblings(zarr_writer):
    w = zarr_writer(np.arange(3), path="good")
    zarr_writer(np.arange(3), path="bad", root=w.root)
    (w.root / "bad" / "zarr.json").write_text("{not json")
    g = zarrfs.open(str(w.root))
    assert g.keys() == ["bad", "good"]
    np.testing.assert_array_equal(g["good"][...], np.arange(3))
    err = _read_error(g["bad"], engine.MetadataError)
    assert err.match("malformed JSON") and g["bad"].kind == "broken"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"chunk_grid": {"name": "regular", "configuration": "x"}},
            "chunk_grid.configuration must be an object",
        ),
        (
            {"chunk_key_encoding": {"name": "default", "configuration": 5}},
            "chunk_key_encoding.configuration must be an object",
        ),
        ({"data_type": {"name": "structured", "configuration": {"fields": "x"}}}, "malformed"),
        ({"data_type": {"name": "structured", "configuration": {"fields": [[1]]}}}, "malformed"),
    ],
)
def test_a_document_of_the_wrong_shape_is_a_metadata_error(tmp_path, change, words):
    """Parsers meet strings where objects belong: a MetadataError naming the document, opened
    as the root or as a child, never an AttributeError or IndexError."""
    (tmp_path / "g" / "a").mkdir(parents=True)
    (tmp_path / "g" / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    (tmp_path / "g" / "a" / "zarr.json").write_text(json.dumps({**V3, **change}))
    for open_it in (
        lambda: str(tmp_path / "g" / "a"),
        lambda: zarrfs.open(str(tmp_path / "g"))["a"],
    ):
        err = _read_error(open_it(), engine.MetadataError)
        assert words in str(err.value) and "a/zarr.json" in str(err.value)


@pytest.mark.parametrize("consolidated", [False, True])
def test_an_impossible_v2_subarray_is_a_metadata_error(tmp_path, consolidated):
    root = tmp_path / "g"
    root.mkdir()
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    doc = {**BASE, "dtype": [["x", "<i4", [2**70, 1]]]}
    _write_zarray(root / "a", doc)
    if consolidated:
        (root / ".zmetadata").write_text(
            json.dumps(
                {
                    "zarr_consolidated_format": 1,
                    "metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": doc},
                }
            )
        )
    err = _read_error(zarrfs.open(str(root))["a"], engine.MetadataError)
    assert "malformed" in str(err.value) or "dtype" in str(err.value)


def test_a_zip_chain_over_a_file_that_is_no_zip(tmp_path):
    (tmp_path / "garbage.zip").write_bytes(bytes(range(100)))
    with pytest.raises(engine.StoreError) as err:
        zarrfs.open(f"zip::{tmp_path / 'garbage.zip'}")
    assert "BadZipFile" in str(err.value)
    with pytest.raises(engine.NodeNotFoundError):
        zarrfs.open(f"zip::{tmp_path / 'missing.zip'}")


def test_a_directory_with_no_zarr_data_is_not_walked_whole(tmp_path, monkeypatch):
    """Opening a big directory that holds no Zarr node looks into at most a hundred of its
    directories, then says so; an implicit group a few levels above its nodes still opens."""
    for i in range(30):
        for j in range(10):
            (tmp_path / "plain" / f"d{i}" / f"e{j}").mkdir(parents=True)
    listed = []
    real = engine.store.Store.list_dir
    monkeypatch.setattr(
        engine.store.Store,
        "list_dir",
        lambda self, prefix: listed.append(prefix) or real(self, prefix),
    )
    with pytest.raises(engine.NodeNotFoundError):
        zarrfs.open(str(tmp_path / "plain"))
    assert 30 < len(listed) <= 100
    (tmp_path / "deep" / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "deep" / "a" / "b" / "c" / "zarr.json").write_text(json.dumps(V3))
    root = zarrfs.open(str(tmp_path / "deep"))
    assert root.kind == "group" and root.implicit and root.keys() == ["a"]
    assert root["a/b/c"].shape == (4,)


def test_the_file_system_root_is_not_the_working_directory():
    for url in ("/", "file:///"):
        store = engine.store.Store.from_url(url)
        assert store.full_path("") == "/" and store.full_path("usr") == "/usr"
        assert store.url == url


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", [str, bytes])
def test_a_corrupt_vlen_item_count_is_a_decode_error(tmp_path, zarr_format, dtype):
    """A chunk whose header claims 2**32 - 16 items: ChunkDecodeError naming the chunk, not an
    attempt to allocate 32 GiB for them."""
    import warnings

    import zarr
    from zarr.core.dtype import VariableLengthBytes, VariableLengthUTF8

    values = np.array(["ab", "c", "", "def"], dtype=object)
    if dtype is bytes:
        values = np.array([v.encode() for v in values], dtype=object)
    root = tmp_path / "v.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no Zarr V3 specification" for these data types
        zarr.create_array(
            str(root),
            shape=(4,),
            chunks=(2,),
            zarr_format=zarr_format,
            dtype=VariableLengthUTF8() if dtype is str else VariableLengthBytes(),
            compressors=None,
        )[:] = values
    key = "1" if zarr_format == 2 else "c/1"
    (root / key).write_bytes((2**32 - 16).to_bytes(4, "little") + bytes(26))
    arr = zarrfs.open(str(root))
    assert arr[:2].tolist() == list(values[:2])
    with pytest.raises(engine.ChunkDecodeError) as err:
        arr[...]
    assert err.value.key == key and "4294967280 items" in str(err.value)
    assert f"chunk {key!r} of {root}" in str(err.value)


@pytest.mark.parametrize("codec_id", ["vlen-utf8", "vlen-bytes", "vlen-array"])
def test_numcodecs_vlen_codecs_check_the_item_count_too(codec_id):
    """The v3 ``numcodecs.vlen-*`` names and the v2 filters check the header like ``vlen-utf8``."""
    from zarrfs.engine.codecs import ChunkSpec
    from zarrfs.engine.codecs_numcodecs import numcodecs_codec, v2_codec

    corrupt = (2**32 - 16).to_bytes(4, "little") + bytes(26)
    spec = ChunkSpec((2,), np.dtype(object))
    config = {"dtype": "<i4"} if codec_id == "vlen-array" else {}
    for codec in (numcodecs_codec(codec_id, config), v2_codec({"id": codec_id, **config})):
        with pytest.raises(engine.ChunkDecodeError, match="4294967280 items"):
            codec.decode(corrupt, spec)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [("1G", 1 << 30), ("64MiB", 64 << 20), ("1048576", 1 << 20), ("lots", 512 << 20)],
)
def test_the_cache_budget_from_the_environment_takes_sizes(text, nbytes):
    """``ZARRFS_CACHE_BYTES=1G`` is 1 GiB, as ``-o cache_size=1G`` is; a value that is not a
    size keeps the default and says so."""
    import os
    import subprocess
    import sys

    code = "import zarrfs.engine as e; print(e.cache_info()['capacity'])"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "ZARRFS_CACHE_BYTES": text},
        check=True,
    )
    assert int(result.stdout) == nbytes
    assert ("not a size: 'lots'" in result.stderr) == (text == "lots")


def test_a_kept_error_is_raised_fresh_by_each_read_never_edited(zarr_writer):
    """A broken node's error is kept with it; every read raises a new instance chained to the
    kept one, which stays as it was built."""
    w = zarr_writer(np.arange(3), path="bad")
    (w.root / "bad" / "zarr.json").write_text("{not json")
    bad = zarrfs.open(str(w.root))["bad"]
    kept, message = bad.error, bad.error.message
    raised = []
    for _ in range(2):
        with pytest.raises(engine.MetadataError) as err:
            bad.read()
        raised.append(err.value)
    assert raised[0] is not raised[1] and kept not in raised
    assert all(e.__cause__ is kept for e in raised)
    assert kept.message == message and kept.__traceback__ is None  # never raised itself


def test_a_listing_keeps_a_childs_failure_and_raises_it_fresh(tmp_path):
    from zarrfs.engine.hierarchy import Hierarchy
    from zarrfs.engine.store import Store

    hierarchy = Hierarchy(Store.from_url(str(tmp_path)), None)
    kept = engine.StoreError(f"cannot read 'x/zarr.json' from {tmp_path}", key="x/zarr.json")
    hierarchy.errors["x"] = kept
    raised = []
    for _ in range(2):
        with pytest.raises(engine.StoreError) as err:
            hierarchy.metadata("x")
        raised.append(err.value)
    assert raised[0] is not raised[1] and all(e.__cause__ is kept for e in raised)
    assert str(tmp_path / "x") in raised[0].message and kept.path is None


def test_a_codecs_own_error_is_named_after_it_in_a_new_error():
    from zarrfs.engine.codec_registry import BytesSpec, Codec
    from zarrfs.engine.codecs import _run

    own = engine.ChecksumError("digest differs")

    class Failing(Codec):
        name = "failing"

        def decode(self, data, spec):
            raise own

    with pytest.raises(engine.ChecksumError) as err:
        _run(Failing(), b"x", BytesSpec(8))
    assert err.value is not own and err.value.__cause__ is own
    assert err.value.codec == "failing" and own.codec is None
