"""Blosc chunks decoded by c-blosc through ctypes (``engine/blosc_direct.py``): the values
zarr-python wrote, for every inner compressor and shuffle, with numcodecs' own call as the
fallback; a corrupt chunk fails alone, with the codec's error."""

from __future__ import annotations

import numcodecs.blosc
import numpy as np
import pytest
import zarr.codecs as zc

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import blosc_direct

# the Python pipeline decodes these chunks (the native path would read these arrays itself)
pytestmark = pytest.mark.usefixtures("python_pipeline")


@pytest.fixture(autouse=True)
def _cold():
    engine.clear_caches()
    yield
    engine.clear_caches()


@pytest.fixture(params=["c-blosc", "numcodecs"])
def decoder(request, monkeypatch):
    """Both ways a blosc chunk is decoded: c-blosc's own call, or numcodecs' where that call
    cannot be found."""
    if request.param == "numcodecs":
        monkeypatch.setattr(blosc_direct, "_decompress_ctx", None)
    elif blosc_direct._decompress_ctx is None:
        pytest.skip("this numcodecs exports no blosc_decompress_ctx")
    return request.param


@pytest.mark.parametrize("cname", ["lz4", "zstd", "blosclz", "zlib"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("dtype", ["u1", "<u2", ">i4", "<f8"])
def test_blosc_chunks_read_as_zarr_python_wrote_them(zarr_writer, decoder, cname, shuffle, dtype):
    rng = np.random.default_rng(7)
    data = (rng.normal(0, 1000, (40, 52)) + np.arange(52)).astype(dtype)
    codec = zc.BloscCodec(cname=cname, shuffle=shuffle, typesize=np.dtype(dtype).itemsize)
    w = zarr_writer(data, chunks=(16, 52), compressors=codec)  # whole rows: in place too
    arr = zarrfs.open(str(w.root))["array"]
    np.testing.assert_array_equal(arr[...], data)  # straight into the output
    np.testing.assert_array_equal(arr[3:37, 5:50], data[3:37, 5:50])  # through a buffer


def test_any_buffer_decodes_as_numcodecs_decodes_it():
    data = (np.arange(5000) % 977).astype("<u4")
    frame = numcodecs.blosc.compress(data, b"zstd", 5, 1)
    for source in (frame, memoryview(frame), bytearray(frame), np.frombuffer(frame, "u1")):
        out = np.zeros(data.nbytes, np.uint8)
        blosc_direct.decompress_into(source, out)
        np.testing.assert_array_equal(out.view("<u4"), data)


def test_a_corrupt_blosc_chunk_fails_alone(zarr_writer, decoder):
    data = np.arange(64 * 64, dtype="<u2").reshape(64, 64)
    w = zarr_writer(data, chunks=(32, 64), compressors=zc.BloscCodec(cname="lz4"))
    chunk = w.location / "c" / "1" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[32:] = bytes(len(raw) - 32)  # its header intact, its compressed blocks zeros
    chunk.write_bytes(bytes(raw))
    arr = zarrfs.open(str(w.root))["array"]
    with pytest.raises(engine.ChunkDecodeError) as raised:
        arr[...]
    assert raised.value.codec == "blosc" and "c/1/0" in str(raised.value)
    np.testing.assert_array_equal(arr[:32], data[:32])  # its neighbour reads
