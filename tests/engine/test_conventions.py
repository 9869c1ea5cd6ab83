"""One of each shared convention in the engine: the chunk grid, the object-codec table, where a
checksum failure becomes a ChecksumError, and JSON values."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import dtypes, metadata_v2
from zarrfs.engine.metadata_v2 import parse_zarray

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


def _write_zarray(root, doc: dict, chunk: bytes | None = None):
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zarray").write_text(json.dumps(doc))
    if chunk is not None:
        (root / "0").write_bytes(chunk)


def test_chunk_grid_shape_is_exact_past_float_precision(tmp_path):
    """``ceil(shape / chunks)`` in integers: 2**53 + 1 chunks of one element each."""
    _write_zarray(tmp_path / "a", {**BASE, "shape": [2**53 + 1], "chunks": [1]})
    assert zarrfs.open(str(tmp_path / "a")).chunk_grid_shape == (2**53 + 1,)
    assert engine.summary(zarrfs.open(str(tmp_path / "a")))["nchunks"] == 2**53 + 1


def test_one_object_codec_table():
    """The ``.zarray`` parser finds an object codec by the table the data types read it by."""
    assert metadata_v2.OBJECT_CODECS is dtypes.OBJECT_CODECS
    configs = {
        "categorize": {"labels": ["a"], "dtype": "<U1", "astype": "|u1"},
        "vlen-array": {"dtype": "<i4"},
    }
    for codec, kind in dtypes.OBJECT_CODECS.items():
        config = {"id": codec, **configs.get(codec, {})}
        doc = {**BASE, "dtype": "|O", "fill_value": None, "filters": [config]}
        if kind is None:
            with pytest.raises(engine.UnsupportedError, match=repr(codec)):
                parse_zarray(doc, None, path="a")
        else:
            assert parse_zarray(doc, None, path="a").data_type.name == kind


@pytest.mark.parametrize("codec", ["crc32", "adler32", "fletcher32", "jenkins_lookup3"])
def test_a_checksum_codec_builds_the_checksum_error(tmp_path, codec):
    stored = bytearray(numcodecs.get_codec({"id": codec}).encode(np.arange(4, dtype="<i4")))
    stored[1] ^= 0xFF  # a data byte, for checksums at the start or the end
    _write_zarray(tmp_path / "a", {**BASE, "compressor": {"id": codec}}, bytes(stored))
    with pytest.raises(engine.ChecksumError) as caught:
        zarrfs.open(str(tmp_path / "a"))[...]
    assert caught.value.codec == codec and "checksum mismatch" in str(caught.value)


def test_a_compressor_whose_message_says_checksum_is_not_a_checksum_error(tmp_path):
    """A corrupt zstd frame whose own content checksum fails is a corrupt chunk of the zstd
    codec, not a ChecksumError: that class is built by checksum codecs, never guessed from a
    message."""
    stored = bytearray(numcodecs.Zstd(checksum=True).encode(np.arange(64, dtype="<i4")))
    stored[-1] ^= 0xFF  # the frame's content checksum
    _write_zarray(
        tmp_path / "a",
        {**BASE, "shape": [64], "chunks": [64], "compressor": {"id": "zstd", "checksum": True}},
        bytes(stored),
    )
    with pytest.raises(engine.ChunkDecodeError) as caught:
        zarrfs.open(str(tmp_path / "a"))[...]
    assert "checksum" in str(caught.value).lower()  # zstd's own words
    assert not isinstance(caught.value, engine.ChecksumError) and caught.value.codec == "zstd"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x00a", "AGE="),
        (np.bytes_(b"\x00a"), "AGE="),
        (np.float32("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (np.complex64(1 - 2j), [1.0, -2.0]),
        (np.datetime64("2020-01-02", "D"), "2020-01-02"),
        (np.array([(1, 2)], dtype="<i2,<i2")[0], "AQACAA=="),
        ({"a": (np.int64(3), [b"\xff"])}, {"a": [3, ["/w=="]]}),
    ],
)
def test_json_values_one_convention(value, expected):
    assert engine.json_value(value) == expected
    json.dumps(engine.json_value(value))
