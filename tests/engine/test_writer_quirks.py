"""Stores from writers other than zarr-python, read back and compared with the values each writer
was given: GDAL 3.6 (LZMA with a delta filter, a numcodecs configuration key numcodecs does not
take), zarrita.js (bare numcodecs ids as v3 codec names, ``"codecs": []``, ``"fill_value": null``)
and numcodecs' v3 serializers (``numcodecs.pcodec``, ``numcodecs.zfpy``) as zarr-python 3 writes
them. The GDAL and zarrita stores are checked in under ``tests/stores`` with the scripts that
wrote them (neither writer installs from pip; see those scripts for the versions)."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

import zarrfs.engine as engine

#: every writer's store reads the same on both paths (tensorstore where it reads the array)
pytestmark = pytest.mark.usefixtures("both_read_paths")

STORES = Path(__file__).resolve().parents[1] / "stores"


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_gdal_lzma_with_delta_reads_every_array(caplog):
    """GDAL 3.6.2 writes ``{"id": "lzma", "preset": 6, "delta": 1}``: an xz stream whose
    container names its filters (delta, lzma2), so the values decode without the key."""
    written = np.load(STORES / "gdal" / "values.npz")
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine"):
        group = engine.open(str(STORES / "gdal" / "lzma.zarr"))
        assert group.keys() == sorted(written.files)
        for name in written.files:
            array = group[name]
            assert array.error is None, name
            assert array.dtype == written[name].dtype
            np.testing.assert_array_equal(array[...], written[name], err_msg=name)
            if name.startswith("lzma"):  # shown as stored
                assert array.codecs[0]["configuration"]["delta"] == 1
    delta = [m for m in _warnings(caplog) if "'delta'" in m]
    assert len(delta) == len([n for n in written.files if n.startswith("lzma")])  # one each
    assert all("lzma" in m and ".zmetadata#lzma" in m for m in delta)


def test_zarrita_defaults_read_as_zarrita_reads_them(caplog):
    values = json.loads((STORES / "zarrita" / "values.json").read_text())
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine"):
        group = engine.open(str(STORES / "zarrita" / "defaults.zarr"))
        assert group.keys() == sorted(values)
        for name, v in values.items():
            array = group[name]
            expected = np.array(v["data"], dtype=v["dtype"]).reshape(v["shape"])
            np.testing.assert_array_equal(array[...], expected, err_msg=name)
            assert array.fill_value == 0 and array.error is None
    messages = _warnings(caplog)
    assert [m for m in messages if "plain/zarr.json" in m and '"codecs": []' in m]
    assert [m for m in messages if "'lz4' read as numcodecs.lz4" in m]
    assert [m for m in messages if "'zlib' read as numcodecs.zlib" in m]
    assert len([m for m in messages if '"fill_value": null' in m]) == len(values)


def test_zarrita_plain_array_missing_chunks_read_as_zero(tmp_path):
    """The implied zero fill: a chunk zarrita did not write reads as 0, as zarrita reads it."""
    import shutil

    shutil.copytree(STORES / "zarrita" / "defaults.zarr", tmp_path / "z.zarr")
    (tmp_path / "z.zarr" / "plain" / "c" / "1" / "2").unlink()
    values = json.loads((STORES / "zarrita" / "values.json").read_text())["plain"]
    expected = np.array(values["data"], dtype="i4").reshape(values["shape"])
    expected[4:, 8:] = 0
    np.testing.assert_array_equal(engine.open(str(tmp_path / "z.zarr"))["plain"][...], expected)


@pytest.mark.parametrize("shards", [None, (6, 10)], ids=["plain", "sharded"])
@pytest.mark.parametrize("serializer", ["pcodec", "zfpy"])
def test_numcodecs_serializers_from_zarr_python(tmp_path, serializer, shards):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs.numcodecs import ZFPY, PCodec

    data = np.random.default_rng(7).normal(size=(6, 10))
    codec = PCodec(level=8) if serializer == "pcodec" else ZFPY()  # zfpy: reversible by default
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: numcodecs codecs are not in the spec
        written = zarr.create_array(
            tmp_path / "a.zarr",
            shape=data.shape,
            dtype="f8",
            chunks=(3, 5),
            shards=shards,
            serializer=codec,
            compressors=None,
        )
        written[...] = data
    array = engine.open(str(tmp_path / "a.zarr"))
    assert array.error is None
    np.testing.assert_array_equal(array[...], data)
    np.testing.assert_array_equal(array[1:5, ::-3], data[1:5, ::-3])


@pytest.mark.parametrize("codec_id", ["pcodec", "zfpy"])
def test_numcodecs_serializers_in_v2_still_read(tmp_path, codec_id):
    zarr = pytest.importorskip("zarr")
    import numcodecs

    data = np.arange(60, dtype="f8").reshape(6, 10) / 3
    codec = numcodecs.get_codec({"id": codec_id})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written = zarr.create_array(
            tmp_path / "a.zarr",
            shape=data.shape,
            dtype="f8",
            chunks=(3, 5),
            compressors=codec,
            zarr_format=2,
        )
        written[...] = data
    np.testing.assert_array_equal(engine.open(str(tmp_path / "a.zarr"))[...], data)


def _v2_array(root: Path, compressor: dict, filters=None) -> Path:
    zarr = pytest.importorskip("zarr")
    import numcodecs

    data = np.arange(24, dtype="<i4").reshape(4, 6)
    known = {k: v for k, v in compressor.items() if k != "unknown"}
    filter_codecs = [numcodecs.get_codec(f) for f in filters or []]
    written = zarr.create_array(
        root,
        shape=data.shape,
        dtype="<i4",
        chunks=(2, 3),
        zarr_format=2,
        compressors=numcodecs.get_codec(known),
        filters=filter_codecs or None,
    )
    written[...] = data
    doc = json.loads((root / ".zarray").read_text())
    doc["compressor"] = compressor
    if filters:
        doc["filters"] = [{**f, "unknown": 1} for f in filters]
    (root / ".zarray").write_text(json.dumps(doc))
    return root


def test_an_unknown_key_of_a_self_describing_compressor_is_tolerated(tmp_path, caplog):
    root = _v2_array(tmp_path / "a.zarr", {"id": "zlib", "level": 1, "unknown": 2})
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine"):
        np.testing.assert_array_equal(
            engine.open(str(root))[...], np.arange(24, dtype="<i4").reshape(4, 6)
        )
    assert [m for m in _warnings(caplog) if "'unknown'" in m and "zlib" in m]


def test_an_unknown_key_where_decoding_follows_the_configuration_is_refused(tmp_path):
    """A filter decodes by its configuration: a key numcodecs does not know might have changed
    the values, so the array opens and its reads fail, naming the key."""
    root = _v2_array(
        tmp_path / "a.zarr", {"id": "zlib", "level": 1}, filters=[{"id": "delta", "dtype": "<i4"}]
    )
    array = engine.open(str(root))
    assert array.shape == (4, 6)
    with pytest.raises(engine.UnknownCodecError, match="'unknown'") as err:
        array[...]
    assert err.value.codec == "delta" and str(root / ".zarray") in str(err.value)


def test_raw_lzma_with_an_unknown_key_is_refused(tmp_path):
    """A raw LZMA stream (format 3) does not name its filters: the configuration does."""
    import lzma

    filters = [{"id": lzma.FILTER_LZMA2}]
    root = _v2_array(
        tmp_path / "a.zarr", {"id": "lzma", "format": 3, "filters": filters, "unknown": 1}
    )
    with pytest.raises(engine.UnknownCodecError, match="'unknown'"):
        engine.open(str(root))[...]
