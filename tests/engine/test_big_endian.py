"""Big-endian arrays read by every path that decodes a chunk, compared with what zarr-python
stored: with the cache off (chunks decoded straight into the output, or into a task's buffer),
a first read (not kept), ``read_flat`` (kept) and the mount's read-ahead
(``submit(keep_whole_chunks=False)``: whole chunks decoded straight into the window). The
straight paths must swap the bytes: a reader that took the stored bytes as native read ``0,
16777216, ...`` for ``0, 1, ...``."""

from __future__ import annotations

import numpy as np
import pytest
import zarr.codecs
from numcodecs import Zlib

import zarrfs.engine as engine

CASES = {  # id: (zarr_format, dtype, compressors)
    "v2-raw": (2, ">i4", None),
    "v2-zlib": (2, ">f8", Zlib(level=1)),
    "v2-u2-zlib": (2, ">u2", Zlib(level=1)),
    "v3-bytes-big": (3, ">i4", None),
    "v3-bytes-big-zstd": (3, ">f8", zarr.codecs.ZstdCodec(level=1)),
    "v3-bytes-big-gzip": (3, ">i2", zarr.codecs.GzipCodec(level=1)),
}


def _values(dtype: str) -> np.ndarray:
    """Values whose bytes differ in every position (a missed swap cannot read them right)."""
    values = np.arange(30 * 110).reshape(30, 110) * 7 + 1
    if np.dtype(dtype).kind == "i":
        values = values - 1500
    return (values / 3 if np.dtype(dtype).kind == "f" else values).astype(dtype)


@pytest.fixture
def no_cache():
    engine.clear_caches()
    engine.set_cache_size(0)
    try:
        yield
    finally:
        engine.set_cache_size(512 * 2**20)
        engine.clear_caches()


def _big_endian(tmp_path, case) -> tuple[str, np.ndarray]:
    """A store zarr-python wrote, and its values: v2 with a ``>`` dtype, v3 with the
    ``bytes`` codec big-endian."""
    zarr_format, dtype, compressors = CASES[case]
    data = _values(dtype)
    root = str(tmp_path / "big.zarr")
    extra = {"serializer": zarr.codecs.BytesCodec(endian="big")} if zarr_format == 3 else {}
    zarr.create_array(
        store=root,
        name="array",
        data=data,
        chunks=(10, 50),
        compressors=compressors,
        zarr_format=zarr_format,
        **extra,
    )
    array = engine.open(root)["array"]
    if zarr_format == 3:
        assert array.codecs[0] == {"name": "bytes", "configuration": {"endian": "big"}}
    else:
        assert array.stored_metadata[".zarray"]["dtype"] == dtype
    return root, data


@pytest.mark.parametrize("case", list(CASES))
def test_big_endian_read_with_the_cache_off(tmp_path, no_cache, case):
    root, expected = _big_endian(tmp_path, case)
    array = engine.open(root)["array"]
    np.testing.assert_array_equal(array[...], expected)  # whole chunks straight into the output
    np.testing.assert_array_equal(array[3:27, 7:93], expected[3:27, 7:93])  # through a buffer
    np.testing.assert_array_equal(array[:, 50:100], expected[:, 50:100])
    np.testing.assert_array_equal(array.read_flat(17, 2900), expected.reshape(-1)[17:2900])


@pytest.mark.parametrize("case", list(CASES))
def test_big_endian_read_ahead_as_the_mount_reads(tmp_path, case):
    """The mount's read-ahead: ``submit(keep_whole_chunks=False)`` into its own buffer."""
    root, expected = _big_endian(tmp_path, case)
    engine.clear_caches()
    array = engine.open(root)["array"]
    for selection in ((slice(0, 20), slice(None)), (slice(10, 30), slice(0, 50))):
        out = np.empty(expected[selection].shape, array.dtype)
        future = array.submit(selection, out=out, keep_whole_chunks=False)
        np.testing.assert_array_equal(future.result(30), expected[selection])
    np.testing.assert_array_equal(array[...], expected)  # first read: decoded, not kept
    np.testing.assert_array_equal(array[...], expected)  # second read: kept
