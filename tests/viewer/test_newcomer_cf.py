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
