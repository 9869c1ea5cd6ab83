"""GDAL's Zarr v3 dialect, written at test time by the GDAL that rasterio's wheel bundles (3.10):
arrays whose ``codecs`` leave out the array->bytes codec (``[gzip]``, ``[blosc]``,
``[transpose, gzip]`` with ``"order": "F"``, or no ``codecs`` at all) and ``"fill_value":
null``. Each is read with the little-endian ``bytes`` codec GDAL means, after the array->array
codecs and before the bytes->bytes ones, with one warning an array, and compared with what GDAL
reads back."""

from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest
import rasterio  # the dev extra; its wheel bundles GDAL

import zarrfs.engine as engine

BANDS, HEIGHT, WIDTH = 3, 5, 7  # chunks of 2 x 3: partial chunks on both edges

CASES = {  # name: (dtype, creation options, what GDAL writes as codecs)
    "none": ("<i2", {"COMPRESS": "NONE"}, None),
    "gzip": ("<u2", {"COMPRESS": "GZIP"}, ["gzip"]),
    "blosc": ("<f4", {"COMPRESS": "BLOSC"}, ["blosc"]),
    "fortran": ("<u2", {"COMPRESS": "GZIP", "CHUNK_MEMORY_LAYOUT": "F"}, ["transpose", "gzip"]),
    "fortran-raw": ("<f8", {"COMPRESS": "NONE", "CHUNK_MEMORY_LAYOUT": "F"}, ["transpose"]),
    "pixel": ("<i4", {"COMPRESS": "GZIP", "INTERLEAVE": "PIXEL"}, ["gzip"]),
}


def _values(dtype: str) -> np.ndarray:
    n = BANDS * HEIGHT * WIDTH
    values = (np.arange(n) * 997 - n * 300).astype(dtype)  # wider than a byte, signs mixed
    return values.reshape(BANDS, HEIGHT, WIDTH)


def _write(path, dtype: str, options: dict, window=None):
    data = _values(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NotGeoreferencedWarning: no geotransform given
        with rasterio.open(
            path,
            "w",
            driver="Zarr",
            width=WIDTH,
            height=HEIGHT,
            count=BANDS,
            dtype=data.dtype,
            FORMAT="ZARR_V3",
            BLOCKSIZE="1,2,3" if options.get("INTERLEAVE") != "PIXEL" else "2,3,3",
            **options,
        ) as dataset:
            if window is None:
                dataset.write(data)
            else:
                dataset.write(data[(slice(None), *window)], window=_window(window))
    return data


def _window(window):
    from rasterio.windows import Window

    rows, cols = window
    return Window(cols.start, rows.start, cols.stop - cols.start, rows.stop - rows.start)


def _gdal_reads(path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rasterio.open(path) as dataset:
            return dataset.read()


def _array(root):
    """The one array GDAL writes, named after the store, and its zarr.json."""
    name = root.name.removesuffix(".zarr")
    return engine.open(str(root))[name], json.loads((root / name / "zarr.json").read_text())


def _bands_first(values: np.ndarray, pixel: bool) -> np.ndarray:
    if pixel:  # INTERLEAVE=PIXEL: (y, x, band)
        return np.moveaxis(values, -1, 0)
    return values.reshape(BANDS, HEIGHT, WIDTH)


@pytest.mark.parametrize("case", list(CASES))
def test_gdal_v3_arrays_read_as_gdal_reads_them(tmp_path, caplog, case):
    dtype, options, codecs = CASES[case]
    root = tmp_path / f"{case.replace('-', '_')}.zarr"
    written = _write(root, dtype, options)
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine"):
        array, doc = _array(root)
        if codecs:
            assert [c["name"] for c in doc["codecs"]] == codecs
        else:
            assert "codecs" not in doc
        assert doc["fill_value"] is None or np.isnan(array.fill_value)
        values = array[...]
    assert array.error is None and array.dtype == np.dtype(dtype)
    gdal = _gdal_reads(root)
    np.testing.assert_array_equal(gdal, written)  # GDAL's own round trip, the oracle
    np.testing.assert_array_equal(_bands_first(values, "PIXEL" in options.values()), gdal)
    quirk = [r.getMessage() for r in caplog.records if "array->bytes" in r.getMessage()]
    if codecs:
        assert len(quirk) == 1 and "bytes (little-endian)" in quirk[0]
        shown = quirk[0].split("read as ")[1]  # in its place: after array->array codecs
        at = codecs.count("transpose")
        assert shown.startswith(str([*codecs[:at], "bytes (little-endian)", *codecs[at:]])), shown
    else:
        assert any('no "codecs" read as [bytes' in r.getMessage() for r in caplog.records)
    document = str(root / root.name.removesuffix(".zarr") / "zarr.json")
    warned = [
        r for r in caplog.records if r.levelno == logging.WARNING and document in r.getMessage()
    ]
    assert len(warned) == 1  # one warning an array, naming each quirk

    # every way of reading it: a region across chunk edges, the flat range the mount reads
    np.testing.assert_array_equal(array[..., 1:4, 2:6], values[..., 1:4, 2:6])
    np.testing.assert_array_equal(array.read_flat(5, 40), values.reshape(-1)[5:40])


def test_chunks_gdal_did_not_write_read_as_zero(tmp_path):
    """GDAL writes only the chunks a write touched; with ``"fill_value": null`` (no nodata)
    GDAL reads the rest as zero, and so does zarrfs."""
    root = tmp_path / "part.zarr"
    _write(root, "<i2", {"COMPRESS": "GZIP"}, window=(slice(0, 2), slice(0, 3)))
    array, doc = _array(root)
    assert doc["fill_value"] is None and not (root / "part" / "c" / "0" / "1" / "0").exists()
    gdal = _gdal_reads(root)
    assert (gdal[:, 2:, :] == 0).all() and (gdal[:, :2, :3] != 0).any()
    np.testing.assert_array_equal(array[...], gdal)


def test_a_chain_with_an_unknown_codec_is_not_completed(tmp_path):
    """Only chains of codecs known to be array->array or bytes->bytes get the bytes codec: a
    chain with a codec zarrfs cannot build still fails naming that codec."""
    root = tmp_path / "odd.zarr"
    _write(root, "<u2", {"COMPRESS": "GZIP"})
    meta = root / "odd" / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["codecs"].append({"name": "frobnicate"})
    meta.write_text(json.dumps(doc))
    array, _ = _array(root)
    assert isinstance(array.error, engine.UnknownCodecError)
    doc["codecs"] = [{"name": "gzip"}, {"name": "transpose", "configuration": {"order": "F"}}]
    meta.write_text(json.dumps(doc))
    array, _ = _array(root)
    assert isinstance(array.error, engine.MetadataError)  # out of order: refused as written
    assert "array->bytes" in array.error.message
