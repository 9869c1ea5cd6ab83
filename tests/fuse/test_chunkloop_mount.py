"""The mount reads through the Python pipeline's compiled chunk loop (engine/_chunkloop.c) where
the native path is off (``ZARRFS_NATIVE=0``; a mount by root reads on the Python pipeline), and
serves what zarr-python wrote, bit for bit, with the loop on and off."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import zarr

from tests.fuse.conftest import needs_fuse

pytestmark = [needs_fuse, pytest.mark.fuse]


@pytest.fixture
def planes(tmp_path):
    """4 x 512 x 512 uint16 in 32 KiB chunks (zstd), and a sharded copy, by zarr-python."""
    data = np.random.default_rng(28).integers(0, 2**16, size=(4, 512, 512)).astype("u2")
    root = tmp_path / "planes.zarr"
    group = zarr.open_group(root, mode="w")
    group.create_array("plain", shape=data.shape, chunks=(1, 128, 128), dtype="u2")[:] = data
    group.create_array(
        "sharded", shape=data.shape, chunks=(1, 128, 128), shards=(1, 256, 512), dtype="u2"
    )[:] = data
    return root, data


@pytest.mark.parametrize("loop", ["1", "0"])
def test_data_npy_reads_what_zarr_python_wrote(planes, mount, monkeypatch, loop):
    root, data = planes
    monkeypatch.setenv("ZARRFS_NATIVE", "0")
    monkeypatch.setenv("ZARRFS_CHUNKLOOP", loop)
    info = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "info", "--debug", str(root / "plain")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert info.returncode == 0, info.stderr
    said = "the chunk loop compiled" if loop == "1" else "the chunk loop in Python (turned off)"
    assert said in info.stdout, info.stdout
    mounted = mount(root)
    for name in ("plain", "sharded"):
        np.testing.assert_array_equal(np.load(mounted.path / name / "data.npy"), data)
        raw = (mounted.path / name / "data.raw").read_bytes()
        assert raw == data.tobytes()
