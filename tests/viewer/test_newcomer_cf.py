"""A CF map as a climate user meets it: missing values in a colour of their own (a setting),
said "missing" in the readout."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF

from tests.cf_stores import write_xarray

pytest.importorskip("xarray")


def pixel(view, x: float, y: float) -> tuple[int, int, int]:
    """The colour on screen at view position (x, y) (elements)."""
    scene = view.view_box.mapViewToScene(QPointF(x, y))
    point = view.graphics.mapFromScene(scene)
    color = view.graphics.viewport().grab().toImage().pixelColor(point)
    return color.red(), color.green(), color.blue()


@pytest.fixture
def climate(tmp_path):
    return write_xarray(tmp_path / "c.zarr")


def test_missing_values_in_their_own_colour(window, idle, climate):
    from zarrfs.viewer import missing_colour

    window.coastlines_action.setChecked(False)  # a coast would cross the pixels looked at
    window.open_store(str(climate), {}, path="tas")
    idle(window)
    view = window.image
    # tas is NaN at lat 0-2, lon 0-4 (the south-west corner; drawn north up)
    chequer = {missing_colour.QColor(c).getRgb()[:3] for c in missing_colour.CHEQUER}
    assert pixel(view, 2.5, 1.5) in chequer
    assert pixel(view, 12.5, 10.5) not in chequer  # data
    missing_colour._choose(window, "magenta")
    assert pixel(view, 2.5, 1.5) == (255, 0, 255)
    assert pixel(view, 12.5, 10.5) != (255, 0, 255)
    assert window.settings.value("missing_colour") == "magenta"
    assert view.describe_position(1.5, 2.5).endswith("tas = missing")


def test_map_title_and_perceptual_colormap(window, idle, climate, tmp_path):
    window.open_store(str(climate), {}, path="tas", indices=[4])
    idle(window)
    view = window.image
    title = view.cf_tools.title
    assert title.isVisible()
    assert title.text() == "air temperature [K]  ·  2000-01-13"
    assert view.state.colormap == "viridis" and view.colormap_combo.currentText() == "viridis"
    view.step(1)
    idle(window)
    assert title.text() == "air temperature [K]  ·  2000-01-16"
    out = tmp_path / "figure.png"
    from zarrfs.viewer import export

    export.screen_png(view, out)
    from PIL import Image

    width, height = Image.open(out).size
    assert width > view.graphics.width() and height > view.graphics.height()  # bar and title
    window.open_store(str(climate), {}, path="lat")  # 1-D: a line, no map title
    idle(window)


def test_raw_arrays_stay_grey_and_untitled(window, idle, sample_store):
    path, _ = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    assert window.image.state.colormap == "grey"
    assert not window.image.cf_tools.title.isVisible()


def _colours(rgb) -> set[tuple[int, int, int]]:
    return {tuple(int(v) for v in c) for c in rgb.reshape(-1, 3)}


def test_exports_draw_missing_values_as_the_screen(window, idle, qtbot, climate, tmp_path):
    """Both PNG exports paint missing values in the colour the screen shows, never black."""
    from PySide6.QtGui import QImage

    from tests.viewer.test_export import export_full, png_pixels
    from zarrfs.viewer import missing_colour

    window.coastlines_action.setChecked(False)  # a coast would cross the pixels looked at
    window.open_store(str(climate), {}, path="tas")
    idle(window)
    view = window.image
    dark, light = ((154, 154, 154), (200, 200, 200))  # the chequer's two greys
    assert {missing_colour.QColor(c).getRgb()[:3] for c in missing_colour.CHEQUER} == {dark, light}
    # tas is NaN at lat rows 0-2, lon columns 0-4: north up, the bottom rows 15-17 of 18
    full = export_full(window, qtbot, tmp_path / "full.png")
    assert full.shape == (18, 18, 3)
    assert tuple(full[15, 0]) == dark and tuple(full[16, 0]) == light  # squares of 8 pixels
    assert _colours(full[15:18, :5]) == {dark, light}
    assert not _colours(full[:15]) & {dark, light, (0, 0, 0)}  # data elsewhere
    assert not _colours(full[15:18, 5:]) & {dark, light, (0, 0, 0)}
    # the screen figure: the chequer seen through the missing block
    window.export_screen_png(str(tmp_path / "screen.png"))
    screen = png_pixels(tmp_path / "screen.png")
    scene = view.view_box.mapViewToScene(QPointF(2.5, 1.5))
    at = view.graphics.viewport().mapTo(view.figure, view.graphics.mapFromScene(scene))
    assert tuple(screen[at.y(), at.x()]) in (dark, light)
    grabbed = view.graphics.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    assert grabbed.pixelColor(view.graphics.mapFromScene(scene)).getRgb()[:3] in (dark, light)
    # a named colour, in both
    missing_colour._choose(window, "magenta")
    full = export_full(window, qtbot, tmp_path / "magenta.png")
    assert _colours(full[15:18, :5]) == {(255, 0, 255)}
    assert (255, 0, 255) not in _colours(full[:15])
    window.export_screen_png(str(tmp_path / "screen2.png"))
    assert tuple(png_pixels(tmp_path / "screen2.png")[at.y(), at.x()]) == (255, 0, 255)


def test_screenshot_draws_missing_values_in_the_colour_set(climate, tmp_path):
    """``zarrfs view --screenshot`` (a window grab) honours View > Missing values."""
    import os
    import subprocess
    import sys

    import numpy as np
    from PIL import Image

    config = tmp_path / "config"
    (config / "zarrfs").mkdir(parents=True)
    (config / "zarrfs" / "viewer.ini").write_text(
        "[General]\nmissing_colour=magenta\ncoastlines=false\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(config))
    out = tmp_path / "shot.png"
    result = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "view", str(climate), "--node", "tas"]
        + ["--screenshot", str(out), "--size", "1000x700"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    magenta = np.all(rgb == (255, 0, 255), axis=-1)
    rows, cols = np.nonzero(magenta)
    # one block, 5 elements wide and 3 tall, as the plane is drawn (square elements)
    assert magenta.sum() > 100
    width, height = cols.max() - cols.min() + 1, rows.max() - rows.min() + 1
    assert magenta.sum() == width * height
    assert abs(width / height - 5 / 3) < 0.1
