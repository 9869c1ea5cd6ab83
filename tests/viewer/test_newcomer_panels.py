"""What the panels show a newcomer: a composite's automatic windows in use, only the contrast
controls that act on what is shown, the summary's codecs as ``zarrfs info`` prints them and
its CF view, "Centre at" only where it has a use, and clipped texts whole in tooltips."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.cf_stores import write_xarray


def test_composite_shows_its_automatic_windows_and_no_single_plane_controls(
    window, idle, ome_images
):
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view, panel = window.image, window.image.channel_panel
    panel.rows[1][1].setChecked(True)  # GFP: automatic window
    idle(window)
    _, auto, start, end = panel.rows[1]
    used = panel.state.channels[1].auto_window
    assert used is not None and used[1] > 1000  # data run to 4000
    assert (start.value(), end.value()) == pytest.approx(used, abs=1e-3)
    assert not start.isEnabled()
    for widget in (view.colormap_combo, view.auto_levels, view.histogram):
        assert widget.isHidden()
    assert view.cf_tools.centre_box.isHidden()
    panel.toggle_composite()  # one channel: its contrast controls come back
    idle(window)
    assert not view.colormap_combo.isHidden() and not view.auto_levels.isHidden()


def test_summary_codecs_read_as_the_cli_prints_them(window, idle, sample_store):
    path, _ = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    node = engine.open(str(path))["images/volume"]
    text = window.info.summary_value("codecs")
    assert text == engine.codecs_text(node.codecs)
    assert text.startswith("bytes(") and "zstd(" in text
    assert window.image.cf_tools.centre_box.isHidden()  # no CF variable, no diverging map


def test_summary_has_the_cf_view_and_centre_at(window, idle, tmp_path):
    pytest.importorskip("xarray")
    url = write_xarray(tmp_path / "c.zarr")
    window.open_store(str(url), {}, path="tas")
    idle(window)
    summary = window.info.summary
    cf = next(
        summary.topLevelItem(i)
        for i in range(summary.topLevelItemCount())
        if summary.topLevelItem(i).text(0) == "CF"
    )
    rows = {cf.child(k).text(0): cf.child(k).text(1) for k in range(cf.childCount())}
    assert rows["long name"] == "air temperature"
    assert rows["units"] == "K"
    assert rows["packing"] == "stored * 0.01 + 273.15 -> float64"
    assert "time (24): 2000-01-01 .. 2000-03-10" in rows["CF dimensions"]
    assert not window.image.cf_tools.centre_box.isHidden()


def test_clipped_texts_have_tooltips(window, idle, sample_store):
    from PySide6.QtCore import Qt

    path, _ = sample_store
    window.open_store(str(path), {}, path="images/volume")
    idle(window)
    index = window.tree.currentIndex().siblingAtColumn(1)
    assert index.data(Qt.ItemDataRole.ToolTipRole) == index.data() == "(6, 90, 130)"
    summary = window.info.summary
    item = next(
        summary.topLevelItem(i)
        for i in range(summary.topLevelItemCount())
        if summary.topLevelItem(i).text(0) == "codecs"
    )
    assert item.toolTip(1) == item.text(1)


def test_a_label_image_alone_is_drawn_as_labels_at_the_default_plane(window, idle, ome_images):
    from zarrfs.viewer.labels_overlay import palette

    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {}, path="labels/nuclei")
    idle(window)
    view = window.image
    assert view.state.indices[0] == 2  # the image's defaultZ, where label 40 is
    assert view.image_item.opacity() == 0
    rgba = view.labels.item.image
    assert rgba.shape[:2] == (48, 64)
    assert tuple(rgba[25, 35]) == (*palette(np.array([40]))[0], 255)  # opaque, its colour
    assert rgba[0, 0, 3] == 0  # 0 transparent
    assert view.describe_position(25.5, 35.5).endswith("nuclei 40")
    window.open_store(str(written.path), {})  # the image again: drawn, labels off
    idle(window)
    assert view.image_item.opacity() == 1
    assert view.labels.source is None
