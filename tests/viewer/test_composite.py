"""OME-Zarr channels in the viewer: the composite on screen equals a numpy blend of the data fed
to ome-zarr-py / ngff-zarr with the channel colours and windows; toggles and windows re-blend
without reading; C switches to one channel; defaultZ chooses the starting plane; the readout
names each channel's value."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

import zarrfs.engine as engine
from tests import ome_writers


def numpy_blend(planes, colors, windows) -> np.ndarray:
    """The oracle: each plane's window mapped to 0..1, times its colour, summed, clipped."""
    total = np.zeros(planes[0].shape + (3,))
    for plane, color, (start, end) in zip(planes, colors, windows, strict=True):
        scaled = np.clip((plane.astype(float) - start) / (end - start), 0, 1)
        total += scaled[..., None] * np.array(color, float)
    return np.rint(np.clip(total, 0, 255)).astype(np.uint8)


def rendered(item) -> np.ndarray:
    """The pixels pyqtgraph draws for an ImageItem (after its levels and lookup table)."""
    from PySide6.QtGui import QImage

    item.render()
    image = item.qimage.convertToFormat(QImage.Format.Format_RGB888)
    height, width, stride = image.height(), image.width(), image.bytesPerLine()
    raw = np.frombuffer(image.constBits(), np.uint8, count=height * stride)
    return raw.reshape(height, stride)[:, : width * 3].reshape(height, width, 3).copy()


def assert_close(item, expected: np.ndarray) -> None:
    """What ``item`` holds and what it draws both equal ``expected``."""
    for got in (item.image, rendered(item)):
        assert got.shape == expected.shape and got.dtype == np.uint8
        assert np.abs(got.astype(int) - expected).max() <= 1  # one rounding step (float32)


CHANNELS = ome_writers.OMERO["channels"]
COLORS = [tuple(bytes.fromhex(c["color"])) for c in CHANNELS]
WINDOWS = [(c["window"]["start"], c["window"]["end"]) for c in CHANNELS]


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_composite_equals_numpy_blend(window, idle, qtbot, ome_images, version):
    written = ome_images("ome-zarr-py", version)
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    assert view.state.indices[1] == 2  # omero rdefs defaultZ
    data = written.data[:, 2]
    assert_close(
        view.composite_item, numpy_blend(data[:2], COLORS[:2], WINDOWS[:2])
    )  # RFP inactive
    assert not view.histogram.isVisible()

    requests = engine.stats()["requests"]
    view.channel_panel.set_visible_channel(0, False)  # DAPI off: GFP alone
    view.channel_panel.set_visible_channel(2, True)  # RFP on
    view.channel_panel.set_window(1, 500.0, 1500.0)
    idle(window)
    expected = numpy_blend(data[1:], COLORS[1:], [(500.0, 1500.0), WINDOWS[2]])
    assert_close(view.composite_item, expected)
    assert engine.stats()["requests"] == requests  # re-blended, nothing read again

    text = view.describe_position(10.5, 20.5)
    assert f"DAPI {data[0, 10, 20]}" in text and f"RFP {data[2, 10, 20]}" in text
    assert "c=" not in text and "z=2" in text

    qtbot.keyClick(view, Qt.Key.Key_C)  # one channel, in grey, chosen by the c slider
    idle(window)
    assert view.image_item.isVisible() and not view.composite_item.isVisible()
    assert view.image_item.image.ndim == 2 and view.histogram.isVisible()
    np.testing.assert_array_equal(view.image_item.image, data[0])
    qtbot.keyClick(view, Qt.Key.Key_C)
    idle(window)
    assert_close(view.composite_item, expected)
    qtbot.keyClick(view, Qt.Key.Key_Up)  # z steps, not c: only the new tiles are blended
    idle(window)
    assert view.state.indices[:2] == [0, 3]
    later = written.data[:, 3]
    windows = [(500.0, 1500.0), WINDOWS[2]]
    assert_close(view.composite_item, numpy_blend(later[1:], COLORS[1:], windows))


def test_automatic_windows_without_omero(window, idle, ome_images):
    """ngff-zarr writes no omero: default colours (two channels: green, magenta) and windows
    from the data (engine.auto_window), on the nested levels (scale0/image)."""
    written = ome_images("ngff-zarr", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    channels = view.controller.channels
    assert [c.color for c in channels.channels] == [(0, 255, 0), (255, 0, 255)]
    assert view.state.dimension_names == ("c", "z", "y", "x")  # nested levels: OME axis names
    data = written.data[:, view.state.indices[1]]
    windows = [engine.auto_window(plane) for plane in data]
    assert_close(
        view.composite_item, numpy_blend(list(data), [(0, 255, 0), (255, 0, 255)], windows)
    )


def test_plain_arrays_keep_one_channel(window, idle, sample_store):
    path, arrays = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    assert window.image.controller.channels is None
    assert not window.image.channel_panel.isVisible()
    np.testing.assert_array_equal(window.image.image_item.image, arrays["volume"][0])


def test_tiles_blend_as_they_land(window, idle, tmp_path):
    """Many chunks per plane: the composite is blended tile by tile as they land (and when the
    plane changes, only the new tiles), yet equals the blend of the whole plane."""
    rng = np.random.default_rng(1)
    data = rng.integers(0, 1000, (2, 3, 100, 90), dtype=np.uint16)
    ome_writers.write_czyx(
        tmp_path / "tiles.zarr", data, (1, 1, 16, 16), [("FF8000", 100, 900), ("0080FF", 0, 500)]
    )
    window.open_store(str(tmp_path / "tiles.zarr"), {})
    idle(window)
    view = window.image
    assert len(view.controller.request.tiles) > 1
    colors, windows = [(255, 128, 0), (0, 128, 255)], [(100, 900), (0, 500)]
    for z in (0, 2, 1):
        view.axes.sliders[1].setValue(z)
        idle(window)
        assert_close(view.composite_item, numpy_blend(list(data[:, z]), colors, windows))
