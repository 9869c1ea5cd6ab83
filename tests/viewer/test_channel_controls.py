"""The channel controls of an OME-Zarr image: the ``c`` slider only in single-channel mode,
channel names in the theme's text colour beside a swatch of the channel's colour, and the
channels (names, colours, windows) in the info panel, as the writer's ``omero`` gave them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from tests import ome_writers


def channel_widgets(view):
    axis = view.controller.channels.axis
    return [view.axes.sliders[axis], view.axes.spins[axis], view.axes.labels[axis]]


def test_c_slider_only_in_single_channel_mode(window, idle, qtbot, ome_images):
    window.open_store(str(ome_images("ome-zarr-py", "0.4").path), {})
    idle(window)
    view = window.image
    assert view.controller.composite
    assert all(w.isHidden() for w in channel_widgets(view))
    z_slider = view.axes.sliders[1]
    assert not z_slider.isHidden() and z_slider.isVisibleTo(window)

    qtbot.keyClick(view, Qt.Key.Key_C)  # one channel: the c slider chooses it
    idle(window)
    assert not view.controller.composite
    assert all(not w.isHidden() and w.isVisibleTo(window) for w in channel_widgets(view))
    assert all(w.isEnabled() for w in channel_widgets(view))
    view.axes.sliders[0].setValue(2)
    idle(window)
    assert view.state.indices[0] == 2

    qtbot.keyClick(view, Qt.Key.Key_C)  # back to the composite: hidden again
    idle(window)
    assert view.controller.composite
    assert all(w.isHidden() for w in channel_widgets(view))


def test_channel_names_in_text_colour_beside_a_swatch(window, idle, ome_images):
    window.open_store(str(ome_images("ome-zarr-py", "0.5").path), {})
    idle(window)
    panel = window.image.channel_panel
    names = [c["label"] for c in ome_writers.OMERO["channels"]]
    colors = [c["color"] for c in ome_writers.OMERO["channels"]]
    assert [row[0].text() for row in panel.rows] == names
    text = panel.palette().color(QPalette.ColorRole.WindowText)
    for (check, *_), swatch, color in zip(panel.rows, panel.swatches, colors, strict=True):
        assert check.styleSheet() == ""  # the name in the theme's colour, not dark blue
        assert check.palette().color(QPalette.ColorRole.WindowText) == text
        assert swatch.toolTip() == f"#{color}"
        assert f"rgb({', '.join(str(v) for v in bytes.fromhex(color))})" in swatch.styleSheet()
        assert swatch.isVisibleTo(window)


def channel_items(window) -> tuple[str, list[tuple[str, str]]]:
    summary = window.info.summary
    for i in range(summary.topLevelItemCount()):
        item = summary.topLevelItem(i)
        if item.text(0) == "channels":
            children = [item.child(k) for k in range(item.childCount())]
            return item.text(1), [(c.text(0), c.text(1)) for c in children]
    raise AssertionError("no channels row in the info panel")


def test_info_panel_lists_the_channels(window, idle, ome_images):
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    expected = []
    for k, c in enumerate(ome_writers.OMERO["channels"]):
        window_text = f"window {c['window']['start']}-{c['window']['end']}"
        inactive = "" if c["active"] else "  (inactive)"
        expected.append((f"{k}: {c['label']}", f"#{c['color']}  {window_text}{inactive}"))
    assert channel_items(window) == ("3", expected)

    window.open_store(str(written.path), {}, path="s0")  # level 0: the same channels
    idle(window)
    assert window.info.node_path() == "s0"
    assert channel_items(window) == ("3", expected)


def test_info_panel_default_channels_without_omero(window, idle, ome_images):
    window.open_store(str(ome_images("ngff-zarr", "0.4").path), {})
    idle(window)
    count, rows = channel_items(window)
    assert count == "2"
    assert rows == [("0: 0", "#00FF00  window auto"), ("1: 1", "#FF00FF  window auto")]
