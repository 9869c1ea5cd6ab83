"""Label images over their image: colours from ``image-label`` else a stable palette with 0
transparent, opacity, outlines, ids and properties in the readout, never clipped or scaled by
contrast. The image and labels are ome-zarr-py's (``tests/ome_writers.py``)."""

from __future__ import annotations

import numpy as np

from viewer.labels_overlay import LabelStyle, label_rgba, palette


def test_every_id_gets_a_stable_colour_and_0_is_transparent():
    ids = np.arange(0, 1000, dtype=np.uint32).reshape(25, 40)  # far more than 28 labels
    rgba = label_rgba(ids, None, LabelStyle(opacity=1.0))
    assert rgba[0, 0, 3] == 0 and (rgba.reshape(-1, 4)[1:, 3] == 255).all()
    assert len({tuple(c) for c in rgba.reshape(-1, 4)[1:, :3]}) > 950  # distinct colours
    big = np.array([[2**40 + 3, 7]], np.uint64)
    np.testing.assert_array_equal(label_rgba(big, None, LabelStyle(1.0))[0, :, :3], palette(big[0]))
    np.testing.assert_array_equal(palette(np.array([7])), palette(np.array([7, 8]))[:1])


def test_outlines_keep_only_the_edges():
    ids = np.zeros((8, 8), np.uint16)
    ids[2:6, 2:6] = 5
    alpha = label_rgba(ids, None, LabelStyle(opacity=1.0, outlines=True))[..., 3]
    assert alpha[3, 3] == 0 and alpha[2, 3] == 255 and alpha[0, 0] == 0


def test_overlay_colours_ids_and_properties(window, idle, qtbot, ome_images):
    written = ome_images("ome-zarr-py", "0.5")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    assert view.labels_panel.isVisible()
    view.labels_panel.choose("nuclei")
    qtbot.waitUntil(lambda: view.labels.ids is not None, timeout=20_000)
    idle(window)
    np.testing.assert_array_equal(view.labels.ids, written.labels[2])  # defaultZ 2
    shown = view.labels.item.image
    assert tuple(shown[25, 35]) == tuple(palette(np.array([40]))[0]) + (128,)  # opacity 0.5
    assert shown[0, 0, 3] == 0  # id 0: transparent
    text = view.describe_position(25.5, 35.5)
    assert "nuclei 40" in text

    view.step(-1)  # z 1: id 7, coloured by image-label, with its properties
    qtbot.waitUntil(lambda: view.labels.ids is not None and view.labels.ids[7, 7] == 7)
    idle(window)
    assert tuple(view.labels.item.image[7, 7]) == (255, 0, 0, 128)
    assert "nuclei 7, class: mitotic" in view.describe_position(7.5, 7.5)

    view.labels_panel.opacity.setValue(100)
    view.labels_panel.outlines.setChecked(True)
    assert tuple(view.labels.item.image[5, 7]) == (255, 0, 0, 255)  # the square's edge
    assert view.labels.item.image[7, 7, 3] == 0  # its inside
    view.channel_panel.set_window(0, 0.0, 10.0)  # contrast of the image leaves labels alone
    assert tuple(view.labels.item.image[5, 7]) == (255, 0, 0, 255)
