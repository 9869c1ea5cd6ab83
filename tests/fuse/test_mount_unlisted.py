"""An OME-Zarr image on a web server without directory pages, mounted: its pyramid levels are
folders like any array's (found through the image's metadata, since the server cannot list)."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from tests.fuse.conftest import needs_fuse

pytestmark = [needs_fuse, pytest.mark.fuse]


def test_pyramid_levels_of_an_unlisted_store(tmp_path, mount, http_server):
    root = tmp_path / "image.zarr"
    levels = [np.arange(64 * 64, dtype="u2").reshape(64, 64) // (s + 1) for s in range(2)]
    levels[1] = levels[1][::2, ::2].copy()
    image = zarr.open_group(
        str(root),
        mode="w",
        attributes={
            "ome": {
                "version": "0.5",
                "multiscales": [
                    {
                        "axes": [{"name": "y"}, {"name": "x"}],
                        "datasets": [{"path": "0"}, {"path": "1"}],
                    }
                ],
            }
        },
    )
    for i, level in enumerate(levels):
        image.create_array(str(i), data=level, chunks=(16, 16))
    server = http_server(root)
    server.listings = False  # 404 for every directory, as S3 over HTTPS answers
    mounted = mount(server.url_for(""))
    assert sorted(p.name for p in mounted.path.iterdir() if p.is_dir()) == [".zarrfs", "0", "1"]
    for i, level in enumerate(levels):
        np.testing.assert_array_equal(np.load(mounted.path / str(i) / "data.npy"), level)
