"""Export what you see: the screen PNG equals the screen; the full-resolution PNG of a composite
equals the mount's ``-o composite`` .tif of that plane (read by tifffile), and of one plane its
values through the contrast and colormap on screen."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile
from PIL import Image
from PySide6.QtGui import QImage

from tests.fuse.conftest import mount, needs_fuse  # noqa: F401 - the mount fixture


def png_pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


def export_full(window, qtbot, path):
    saved = []
    window.export_full_png(str(path), on_done=saved.append)
    qtbot.waitUntil(lambda: bool(saved), timeout=20_000)
    return png_pixels(path)


def test_screen_png_equals_the_screen(window, idle, ome_images, tmp_path):
    written = ome_images("ome-zarr-py", "0.5")
    window.open_store(str(written.path), {})
    idle(window)
    window.export_screen_png(str(tmp_path / "screen.png"))
    grabbed = window.image.graphics.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    height, width, stride = grabbed.height(), grabbed.width(), grabbed.bytesPerLine()
    raw = np.frombuffer(grabbed.constBits(), np.uint8, count=height * stride)
    screen = raw.reshape(height, stride)[:, : width * 3].reshape(height, width, 3)
    shown = png_pixels(tmp_path / "screen.png")
    np.testing.assert_array_equal(shown, screen)
    assert len(np.unique(shown.reshape(-1, 3), axis=0)) > 50  # the composite, not a blank


@needs_fuse
@pytest.mark.fuse
@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_full_resolution_png_equals_mount_composite(
    window,
    idle,
    qtbot,
    ome_images,
    mount,  # noqa: F811
    tmp_path,
    version,
):
    written = ome_images("ome-zarr-py", version)
    window.open_store(str(written.path), {})
    idle(window)
    exported = export_full(window, qtbot, tmp_path / "full.png")
    mounted = mount(str(written.path), "composite")
    tif = tifffile.imread(mounted.path / "s0" / "planes" / "composite" / "z_2.tif")
    np.testing.assert_array_equal(exported, tif)


def test_full_resolution_png_of_one_plane(window, idle, qtbot, sample_store, tmp_path):
    path, arrays = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    window.image.set_levels(1000.0, 50000.0)
    exported = export_full(window, qtbot, tmp_path / "plane.png")
    plane = arrays["volume"][0].astype(float)
    grey = np.rint(np.clip((plane - 1000.0) / 49000.0, 0, 1) * 255).astype(np.uint8)
    assert exported.shape == plane.shape + (3,)
    assert np.abs(exported.astype(int) - grey[..., None]).max() <= 1  # the grey colormap
