"""Physical space of an OME-Zarr image in the viewer: coordinates in units beside the indices,
a scale bar of a round length, true aspect for anisotropic planes (an XZ plane of a z-stack
with 2 µm steps and 0.5 µm pixels is drawn four times as tall per element as wide)."""

from __future__ import annotations

from PySide6.QtCore import QPointF

from viewer.physical import PhysicalAxes


def test_bar_is_a_round_length_near_a_fifth_of_the_view():
    axes = PhysicalAxes((2.0, 0.5, 0.5), (0.0, 0.0, 0.0), ("micrometer",) * 3, ("space",) * 3)
    assert axes.bar(2, 100) == (20.0, 10.0, "10 µm")  # 100 elements = 50 µm; a fifth: 10
    assert axes.bar(2, 1000) == (200.0, 100.0, "100 µm")
    assert axes.bar(2, 30) == (4.0, 2.0, "2 µm")
    assert axes.describe(0, 3) == "6 µm" and axes.aspect(0, 2) == 0.25


def screen_length(view, elements: float, axis: str = "x") -> float:
    box = view.view_box
    a = box.mapViewToDevice(QPointF(0, 0))
    b = box.mapViewToDevice(QPointF(elements, 0) if axis == "x" else QPointF(0, elements))
    return abs(b.x() - a.x()) if axis == "x" else abs(b.y() - a.y())


def test_readout_scale_bar_and_true_aspect(window, idle, ome_images):
    written = ome_images("ome-zarr-py", "0.4")  # z 2, y 0.5, x 0.5 micrometer
    window.open_store(str(written.path), {})
    idle(window)
    view = window.image
    text = view.describe_position(10.5, 20.5)
    assert "z=2 (4 µm)" in text and "y=10 (5 µm)" in text and "x=20 (10 µm)" in text

    bar = view.scale_bar
    assert bar.isVisible() and bar.length == bar.size * 0.5
    (x0, x1), _ = view.view_box.viewRange()
    assert bar.label == f"{bar.length:g} µm" and (x1 - x0) * 0.5 / 10 < bar.length
    assert abs(bar.bar.rect().width() - screen_length(view, bar.size)) <= 1

    assert abs(screen_length(view, 1, "y") - screen_length(view, 1, "x")) < 0.01  # y as x
    view.axes.y_combo.setCurrentIndex(1)  # rows: z (XZ plane)
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (1, 3)
    ratio = screen_length(view, 1, "y") / screen_length(view, 1, "x")
    assert abs(ratio - 4.0) < 0.01
