"""Zstandard chunks decode straight into the output when the frame states its size, and are
checked against the chunk's size either way (a frame that does not state it is decoded, then
copied)."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
import zarr.codecs as zc

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine.frame_headers import zstd_content_size


@pytest.fixture(autouse=True)
def no_cache():
    engine.set_cache_size(0)
    engine.clear_caches()
    yield
    engine.set_cache_size(512 * 2**20)


def unsized_frame(payload: bytes) -> bytes:
    """A Zstandard frame that does not state its content size: one raw block (RFC 8878)."""
    assert len(payload) <= 1024  # the block fits the smallest window, 1 KiB
    block = (1 | len(payload) << 3).to_bytes(3, "little")  # last block, raw, its size
    return (0xFD2FB528).to_bytes(4, "little") + bytes([0x00, 0x00]) + block + payload


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65791, 65792, 1 << 20])
def test_content_size_of_numcodecs_frames(size):
    frame = numcodecs.Zstd(level=1).encode(bytes(range(256)) * (size // 256) + bytes(size % 256))
    assert zstd_content_size(frame) == size


def test_content_size_unknown():
    assert zstd_content_size(unsized_frame(b"abc")) is None
    assert numcodecs.Zstd().decode(unsized_frame(b"abc")) == b"abc"  # a valid frame
    assert zstd_content_size(b"\x50\x2a\x4d\x18" + bytes(8)) is None  # a skippable frame
    assert zstd_content_size(b"\x28\xb5\x2f") is None


def test_full_width_chunks_decode_into_the_output(zarr_writer):
    data = np.random.default_rng(1).normal(size=(6, 64, 512)).astype(">f8")
    written = zarr_writer(data, chunks=(1, 16, 512), compressors=zc.ZstdCodec(level=3))
    array = zarrfs.open(str(written.root))["array"]
    assert np.array_equal(array[...], data)
    assert np.array_equal(array[2], data[2])
    assert np.array_equal(array.read_flat(1000, 70000), data.reshape(-1)[1000:70000])


def test_a_frame_without_its_size_is_decoded_then_checked(zarr_writer):
    data = np.arange(96, dtype="<i4").reshape(2, 48)
    written = zarr_writer(data, chunks=(1, 48), compressors=zc.ZstdCodec(level=1))
    chunk = written.location / "c" / "1" / "0"
    chunk.write_bytes(unsized_frame(data[1].tobytes()))
    array = zarrfs.open(str(written.root))["array"]
    assert np.array_equal(array[...], data)
    chunk.write_bytes(unsized_frame(data[1, :40].tobytes()))  # short: never stale bytes
    engine.clear_caches()
    with pytest.raises(engine.ChunkDecodeError, match="expected 192"):
        array[...]


def test_a_frame_stating_a_wrong_size_is_an_error(zarr_writer):
    data = np.arange(96, dtype="<i4").reshape(2, 48)
    written = zarr_writer(data, chunks=(1, 48), compressors=zc.ZstdCodec(level=1))
    chunk = written.location / "c" / "0" / "0"
    chunk.write_bytes(numcodecs.Zstd().encode(data[0, :40].tobytes()))
    with pytest.raises(engine.ChunkDecodeError, match="expected 192"):
        zarrfs.open(str(written.root))["array"][...]
