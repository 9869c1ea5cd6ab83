"""Chains of several bytes->bytes codecs, as zarr-python writes them, decode in reverse order
(v3 core spec, "Codecs": decoding runs the chain backwards), each codec with its own size
limit. Each chain is one a decoder running them forwards cannot read."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.codecs as zc
from numcodecs import Shuffle, Zlib

import zarrfs.engine as engine

CHAINS = {  # id: (zarr_format, compressors or (filters, compressor) for v2, codec names read)
    "gzip-zstd": (3, (zc.GzipCodec(level=1), zc.ZstdCodec(level=1)), ["gzip", "zstd"]),
    "zstd-gzip": (3, (zc.ZstdCodec(level=1), zc.GzipCodec(level=1)), ["zstd", "gzip"]),
    "gzip-crc32c": (3, (zc.GzipCodec(level=1), zc.Crc32cCodec()), ["gzip", "crc32c"]),
    "blosc-gzip": (3, (zc.BloscCodec(cname="lz4"), zc.GzipCodec(level=1)), ["blosc", "gzip"]),
    "v2-shuffle-zlib": (2, ([Shuffle(elementsize=4)], Zlib(level=1)), None),
}


@pytest.mark.parametrize("chain", list(CHAINS))
def test_bytes_to_bytes_codecs_decode_in_reverse(tmp_path, chain):
    zarr_format, codecs, names = CHAINS[chain]
    rng = np.random.default_rng(3)
    data = (rng.integers(0, 50, (40, 60)) * 1000 + np.arange(60)).astype("<i4")
    root = str(tmp_path / "chain.zarr")
    if zarr_format == 3:
        kwargs = {"compressors": codecs}
    else:
        kwargs = {"filters": codecs[0], "compressors": codecs[1]}
    zarr.create_array(
        store=root, name="a", data=data, chunks=(16, 25), zarr_format=zarr_format, **kwargs
    )
    engine.clear_caches()
    array = engine.open(root)["a"]
    if names is not None:
        assert [c["name"] for c in array.codecs][1:] == names  # after "bytes", as written
    assert array.error is None
    np.testing.assert_array_equal(array[...], data)
    np.testing.assert_array_equal(array[5:37, 3:59], data[5:37, 3:59])
