"""Decompression bombs and lying headers: each read ends in a ChunkDecodeError, having decoded
at most one byte past the chunk's size, in a process whose address space is capped 64 MiB above
what it uses before the read (so decoding a bomb whole, 128 MiB to 2 GiB, would fail there)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import zlib

import numpy as np
import pytest
import zstandard

import zarrfs
import zarrfs.engine as engine
from tests.hostile import BOMBS, CHUNK, run_capped, write_bomb_store, write_v2_array

READ = """
import zarrfs, zarrfs.engine as engine
g = zarrfs.open({root!r})
assert (g["good"][...] == 7).all()
cap(64 << 20)
t0 = time.perf_counter()
try:
    g["bomb"][...]
except engine.ChunkDecodeError as exc:
    print(json.dumps({{"error": str(exc), "codec": exc.codec, "key": exc.key,
                      "seconds": time.perf_counter() - t0}}))
else:
    sys.exit("the bomb was decoded")
"""


@pytest.mark.parametrize("filtered", [False, True], ids=["compressor", "with-filter"])
@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_bomb_is_a_decode_error_under_a_memory_cap(tmp_path, kind, filtered):
    root = write_bomb_store(tmp_path / "s.zarr", kind, filtered=filtered)
    out = run_capped("import json\n" + READ.format(root=str(root)), timeout=60)
    result = json.loads(out)
    assert result["key"] == "bomb/0"
    assert "decompression bomb" in result["error"]
    print(kind, filtered, f"{result['seconds']:.4f} s")


def _split(compress, data: bytes) -> bytes:
    """``data`` as two concatenated streams (gzip members, bz2/xz streams, zstd frames)."""
    return compress(data[:1000]) + compress(data[1000:])


STREAMS = {
    "gzip": (lambda d: _split(lambda b: gzip.compress(b, 6), d), {"id": "gzip", "level": 6}),
    "zlib": (lambda d: zlib.compress(d, 6), {"id": "zlib", "level": 6}),
    "bz2": (lambda d: _split(bz2.compress, d), {"id": "bz2", "level": 9}),
    "lzma": (lambda d: _split(lzma.compress, d), BOMBS["lzma"][1]),
    "zstd": (
        lambda d: _split(zstandard.ZstdCompressor(write_content_size=False).compress, d),
        {"id": "zstd", "level": 1},
    ),
}


@pytest.mark.parametrize("filtered", [False, True], ids=["compressor", "with-filter"])
@pytest.mark.parametrize("kind", sorted(STREAMS))
def test_streams_that_fill_the_chunk_read_bit_exact(tmp_path, kind, filtered):
    """The bounds cut nothing off: streams written by the standard library and zstandard (in
    two parts, and zstd frames without a content size) decode to the bytes written."""
    data = np.random.default_rng(5).integers(0, 4, CHUNK, dtype=np.uint8).tobytes()
    compress, compressor = STREAMS[kind]
    filters = [{"id": "delta", "dtype": "|u1"}] if filtered else None
    values = np.frombuffer(data, np.uint8)
    stored = compress(np.diff(values, prepend=np.uint8(0)).tobytes() if filtered else data)
    write_v2_array(tmp_path, "a", stored, compressor, filters=filters)
    engine.clear_caches()
    assert zarrfs.open(str(tmp_path / "a"))[...].tobytes() == data


def test_zlib_ignores_bytes_after_its_stream_as_numcodecs_does(tmp_path):
    import numcodecs

    data = bytes(range(256)) * (CHUNK // 256)
    stored = zlib.compress(data) + b"trailing"
    assert bytes(numcodecs.Zlib().decode(stored)) == data  # the oracle
    write_v2_array(tmp_path, "a", stored, {"id": "zlib", "level": 1})
    engine.clear_caches()
    assert zarrfs.open(str(tmp_path / "a"))[...].tobytes() == data
