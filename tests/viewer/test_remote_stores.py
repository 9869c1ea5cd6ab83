"""The viewer over each remote store kind: the loopback HTTP server, S3 (moto) and Azure Blob
Storage (Azurite), all through obstore; the first composite is a numpy blend of what was
written."""

from __future__ import annotations

import numpy as np
import pytest

from tests.viewer.test_composite import assert_close, numpy_blend
from tests.viewer.test_first_frame import COLORS, WINDOWS, write_image


@pytest.mark.parametrize("kind", ["http", "s3", "azure"])
def test_first_composite_over_each_store(kind, window, idle, tmp_path, request):
    data = np.random.default_rng(7).integers(0, 4000, (3, 3, 64, 96), dtype=np.uint16)
    write_image(tmp_path / "image.zarr", data)
    if kind == "http":
        url, options = request.getfixturevalue("http_server")(tmp_path / "image.zarr").url, {}
    else:
        url, options = request.getfixturevalue(f"{kind}_store")(tmp_path / "image.zarr")
    window.open_store(url, options)
    idle(window)
    assert_close(window.image.composite_item, numpy_blend(list(data[:, 1]), COLORS, WINDOWS))
