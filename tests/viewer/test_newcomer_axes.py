"""The sliders as a newcomer meets them: the number box fits its longest text on every axis;
an OME channel axis shows the channel's name, a z axis its position in µm; ``--index`` skips
a composite's channel axis and takes dates."""

from __future__ import annotations

import pytest

from tests.cf_stores import write_xarray


def _fits(spin) -> bool:
    text = spin.lineEdit().text()
    room = spin.lineEdit().width()
    return spin.lineEdit().fontMetrics().horizontalAdvance(text) < room


def test_number_box_fits_its_longest_text(window, idle, sample_store):
    path, _ = sample_store
    window.open_store(str(path), {}, path="images/volume", indices=[5])
    idle(window)
    spin = window.image.axes.spins[0]
    assert spin.lineEdit().text() == "5 / 5"
    assert spin.minimumWidth() >= spin.fontMetrics().horizontalAdvance("5 / 5")
    assert _fits(spin)


def test_ome_sliders_show_channel_names_and_micrometres(window, idle, ome_images):
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    z_spin = view.axes.spins[1]
    assert z_spin.lineEdit().text() == "4 µm (2 / 3)"  # defaultZ 2, z steps of 2 µm
    assert _fits(z_spin)
    z_spin.lineEdit().setText("6 µm")
    z_spin.editingFinished.emit()
    assert view.state.indices[1] == 3
    view.channel_panel.toggle_composite()  # one channel: its slider shows the name
    idle(window)
    c_spin = view.axes.spins[0]
    assert c_spin.isVisible()
    assert c_spin.lineEdit().text() == "DAPI (0 / 2)"
    c_spin.lineEdit().setText("gfp")
    c_spin.editingFinished.emit()
    assert view.state.indices[0] == 1
    assert _fits(c_spin)


def test_index_in_composite_mode_skips_the_channel_axis(window, idle, ome_images):
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {}, indices=[3])
    idle(window)
    assert window.image.state.indices[:2] == [0, 3]  # z=3, the channel untouched
    assert not window.message_bar.messages()


def test_index_takes_dates(window, idle, tmp_path):
    pytest.importorskip("xarray")
    url = write_xarray(tmp_path / "c.zarr")
    window.open_store(str(url), {}, path="tas", indices=["2000-01-10"])
    idle(window)
    assert window.image.state.indices[0] == 3  # days 0, 3, 6, 9 ...: the 10th is step 3
    assert window.image.axes.spins[0].lineEdit().text().startswith("2000-01-10 (3 / 23)")
    window.open_store(str(url), {}, path="tas", indices=["1999-01-01x"])
    idle(window)
    assert any("1999-01-01x" in str(m) for m in window.message_bar.messages())


def test_view_options_for_a_figure(window, idle, ome_images):
    from zarrfs.viewer.view_options import ViewOptions

    written = ome_images("ome-zarr-py", "0.4")
    look = ViewOptions(channels=("gfp",), labels="nuclei", colormap="viridis", ortho=True)
    window.open_store(str(written.path), {}, look=look)
    idle(window)
    view = window.image
    assert [c.visible for c in view.channel_panel.state.channels] == [False, True, False]
    assert view.labels.source is not None and view.labels.source.name == "nuclei"
    assert view.colormap_combo.currentText() == "viridis"
    assert view.ortho.isVisible()
    assert not window.message_bar.messages()
    window.open_store(str(written.path), {}, look=ViewOptions(channels=("CY5",), labels="x"))
    idle(window)
    said = " ".join(str(m) for m in window.message_bar.messages())
    assert "CY5" in said and "--labels x" in said


def test_screenshot_takes_the_figure_options(tmp_path, ome_images):
    import os
    import subprocess
    import sys

    from PIL import Image

    written = ome_images("ome-zarr-py", "0.4")
    out = tmp_path / "fig.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    args = ["--channels", "DAPI", "--labels", "nuclei", "--ortho", "--size", "1000x700"]
    result = subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "view", str(written.path), *args, "--screenshot", out],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert Image.open(out).size == (1000, 700)


def test_ome_axes_tick_in_micrometres_with_a_pixels_toggle(window, idle, ome_images):
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    bottom, left = view.image_axes.bottom, view.image_axes.left
    assert bottom.labelText == "x (µm)" and left.labelText == "y (µm)"
    texts = [
        text
        for spacing, values in bottom.tickValues(0, 64, 600)
        for text in bottom.tickStrings(values, 1.0, spacing)
    ]
    numbers = [float(t) for t in texts if t]
    assert numbers and max(numbers) <= 32  # 64 pixels of 0.5 µm
    assert not view.pixels_check.isHidden()
    view.pixels_check.setChecked(True)
    assert bottom.labelText == "x" and left.labelText == "y"
    view.pixels_check.setChecked(False)
    assert bottom.labelText == "x (µm)"
