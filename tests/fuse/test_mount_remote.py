"""The mount over object stores: S3 (moto) and Azure Blob Storage (Azurite) through obstore, the
daemon forked before obstore's runtime starts (a daemonized mount, as users run it). The files
hold what zarr-python wrote; the tree lists as over a local store. (HTTP mounts are in
test_mount_behaviour.py and test_stalls.py.)"""

from __future__ import annotations

import os

import numpy as np
import pytest


@pytest.fixture(params=["s3", "azure"])
def remote(request, zarr_writer):
    data = np.arange(4 * 90 * 70, dtype="<i4").reshape(4, 90, 70)
    plain = zarr_writer(data, path="image", chunks=(1, 32, 32))
    zarr_writer(data, path="sharded", chunks=(1, 16, 16), shards=(2, 48, 48), root=plain.root)
    url, options = request.getfixturevalue(f"{request.param}_store")(plain.root)
    return url, options, data


def test_daemonized_mount_reads_what_was_written(mount, remote):
    url, options, data = remote
    mounted = mount(url, storage_options=options, daemon=True)
    for name in ("image", "sharded"):
        np.testing.assert_array_equal(np.load(mounted.path / name / "data.npy"), data)
    listed = {
        os.path.relpath(os.path.join(top, f), mounted.path)
        for top, _, files in os.walk(mounted.path)
        for f in files
    }
    assert {"image/data.npy", "sharded/data.npy"} <= listed
