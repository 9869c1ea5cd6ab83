"""The cursor readout of a zoomed-out plane names the element whose value it shows."""

from __future__ import annotations

import numpy as np
import zarr


def test_readout_of_a_strided_plane_names_the_sample_shown(window, idle, tmp_path):
    path = tmp_path / "big.zarr"
    data = np.arange(3000 * 3000, dtype="u4").reshape(3000, 3000)  # each value its own index
    zarr.create_array(str(path), data=data, chunks=(500, 500), dimension_names=["y", "x"])
    window.open_store(str(path), {})
    idle(window)
    controller = window.image.controller
    g = controller.request.geometry
    assert controller.request.level == 0 and g.sy > 1  # zoomed out to fit: every n-th element
    row, col = 7, 11
    y, x = g.y0 + row * g.sy + g.sy / 2, g.x0 + col * g.sx + g.sx / 2  # between two samples
    text = window.image.describe_position(y, x)
    sample = (int(g.y0 + row * g.sy), int(g.x0 + col * g.sx))
    assert f"[y={sample[0]}, x={sample[1]}]" in text
    assert text.split("]")[1].split()[0] == str(data[sample])
