"""Stores from other writers through a real mount: what each file holds equals what the writer
was given (GDAL 3.6's LZMA with a delta filter, zarrita.js's defaults; see tests/stores), and
GDAL 3.10's Zarr v3, written at test time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fuse.conftest import needs_fuse

pytestmark = [needs_fuse, pytest.mark.fuse]
STORES = Path(__file__).resolve().parents[1] / "stores"


def test_a_gdal_store_mounts_and_every_array_reads(mount):
    written = np.load(STORES / "gdal" / "values.npz")
    mounted = mount(STORES / "gdal" / "lzma.zarr")
    for name in written.files:
        np.testing.assert_array_equal(
            np.load(mounted.path / name / "data.npy"), written[name], err_msg=name
        )
    assert "'delta'" in (mounted.path / ".zarrfs" / "log").read_text()


def test_a_zarrita_store_mounts_and_every_array_reads(mount):
    values = json.loads((STORES / "zarrita" / "values.json").read_text())
    mounted = mount(STORES / "zarrita" / "defaults.zarr")
    for name, v in values.items():
        expected = np.array(v["data"], dtype=v["dtype"]).reshape(v["shape"])
        np.testing.assert_array_equal(np.load(mounted.path / name / "data.npy"), expected)


def test_gdal_v3_arrays_mount_as_gdal_reads_them(mount, tmp_path):
    """GDAL 3.10's v3 dialect (no array->bytes codec; transpose "F"), written now by
    rasterio's GDAL: every plane and the whole array through the mount equal GDAL's read."""
    from tests.engine.test_gdal_v3 import _gdal_reads, _write

    root = tmp_path / "fortran.zarr"
    _write(root, "<u2", {"COMPRESS": "GZIP", "CHUNK_MEMORY_LAYOUT": "F"})
    gdal = _gdal_reads(root)
    mounted = mount(root)
    np.testing.assert_array_equal(np.load(mounted.path / "fortran" / "data.npy"), gdal)
    planes = sorted((mounted.path / "fortran" / "planes").glob("*.npy"))
    assert len(planes) == len(gdal)
    for band, plane in zip(gdal, planes, strict=True):
        np.testing.assert_array_equal(np.load(plane), band)
    assert "without an array->bytes codec" in (mounted.path / ".zarrfs" / "log").read_text()
