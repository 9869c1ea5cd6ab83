"""Axes of an OME-Zarr 0.4 image (Zarr v2: arrays without dimension names) are labelled with
the names its multiscales metadata gives, at every level, and a plain v2 array keeps dim_N."""

from __future__ import annotations

import numpy as np
import zarr


def test_ome_axis_names_label_sliders_and_axis_choices(window, idle, tmp_path):
    path = tmp_path / "ome04.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    axes = [
        {"name": "c", "type": "channel"},
        {"name": "y", "type": "space"},
        {"name": "x", "type": "space"},
    ]
    image = root.create_group(
        "image",
        attributes={
            "multiscales": [
                {"version": "0.4", "axes": axes, "datasets": [{"path": "0"}, {"path": "1"}]}
            ]
        },
    )
    image.create_array("0", data=np.arange(2 * 32 * 32, dtype="u2").reshape(2, 32, 32))
    image.create_array("1", data=np.arange(2 * 16 * 16, dtype="u2").reshape(2, 16, 16))
    root.create_array("plain", data=np.zeros((3, 8, 8), dtype="u1"))
    window.open_store(str(path), {})
    idle(window)
    controls = window.image.axes
    for node in ("image", "image/0", "image/1"):
        window.select_path(node)
        idle(window)
        assert window.image.state.dimension_names == ("c", "y", "x"), node
        assert [label.text() for label in controls.labels.values()] == ["c:"], node
        assert controls.x_combo.currentText().startswith("x ("), node
    window.select_path("plain")
    idle(window)
    assert window.image.state.dimension_names == ("dim_0", "dim_1", "dim_2")
