"""Stores from other writers through a real mount: what each file holds equals what the writer
was given (GDAL 3.6's LZMA with a delta filter, zarrita.js's defaults; see tests/stores)."""

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
