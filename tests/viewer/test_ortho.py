"""Orthogonal views: the XZ and YZ planes through the crosshair equal zarr-python's slices of
the array; clicking moves the crosshair; each pane reads on its own, lazily."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt


def test_xz_and_yz_through_the_crosshair(window, idle, qtbot, sample_store):
    path, arrays = sample_store
    volume = arrays["volume"]  # (z 6, y 90, x 130), dimension names z, y, x
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    view = window.image
    qtbot.keyClick(view, Qt.Key.Key_O)
    idle(window)
    assert view.ortho.isVisible() and view.ortho.depth == 0
    state = view.state
    y, x = state.indices[1], state.indices[2]
    assert (y, x) == (45, 65)  # the centre
    xz, yz = view.ortho.xz, view.ortho.yz
    np.testing.assert_array_equal(xz.image_item.image, volume[:, y, :])
    np.testing.assert_array_equal(yz.image_item.image, volume[:, :, x].T)

    view._crosshair_moved(1, 10)  # as a click on row 10 of the main view does
    view._crosshair_moved(2, 100)
    view._crosshair_moved(0, 4)  # depth: the main view's z slider moves
    idle(window)
    assert view.axes.sliders[0].value() == 4
    g = view.controller.request.geometry  # the main view, narrower now: its screen's stride
    s = int(g.sy)
    plane = volume[4, g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
    np.testing.assert_array_equal(view.image_item.image, plane)
    np.testing.assert_array_equal(xz.image_item.image, volume[:, 10, :])
    np.testing.assert_array_equal(yz.image_item.image, volume[:, :, 100].T)
    assert xz.row_line.value() == 4.5 and yz.col_line.value() == 4.5
    assert view.crosshair[0].value() == 10.5 and view.crosshair[1].value() == 100.5

    qtbot.keyClick(view, Qt.Key.Key_O)
    assert not view.ortho.isVisible()


def test_ortho_of_a_composite_with_true_aspect(window, idle, qtbot, ome_images):
    """XZ of a z-stack with 2 µm steps and 0.5 µm pixels: the composite, four times as tall
    per element as wide."""
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    view.set_ortho(True)
    idle(window)
    xz = view.ortho.xz
    assert xz.controller.composite and xz.composite_item.image.shape == (4, 64, 3)
    assert xz.view_box.state["aspectLocked"] == 0.25
