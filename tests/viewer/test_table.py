"""Tables of strings and records of any number of dimensions: sliders pick the 2-d slice shown."""

from __future__ import annotations

import numpy as np
import zarr


def table_contents(model):
    """Every cell of the model as text, after its row blocks have loaded."""
    return [
        [model.data(model.index(r, c)) for c in range(model.columnCount())]
        for r in range(model.rowCount())
    ]


def load_all(window, idle, model):
    table_contents(model)  # asks for every block
    idle(window)
    return table_contents(model)


def test_string_array_of_three_dimensions_has_sliders(window, idle, tmp_path):
    words = np.array([f"w{t}-{r}-{c}" for t in range(4) for r in range(5) for c in range(3)])
    words = words.reshape(4, 5, 3)
    arr = zarr.create_array(
        tmp_path / "words.zarr",
        shape=words.shape,
        chunks=(2, 2, 2),
        dtype=str,
        dimension_names=["time", "row", "col"],
    )
    arr[:] = words
    window.open_store(str(tmp_path / "words.zarr"), {})
    idle(window)
    view = window.table
    assert window.stack.currentWidget() is view
    assert view.axes.isVisible() and list(view.axes.sliders) == [0]
    assert view.axes.labels[0].text() == "time:"
    stored = zarr.open_array(tmp_path / "words.zarr", mode="r")
    assert load_all(window, idle, view.model) == stored[0].tolist()
    view.axes.sliders[0].setValue(2)
    idle(window)
    assert load_all(window, idle, view.model) == stored[2].tolist()
    # rows along time, columns along col: the slider moves to "row"
    view.axes.y_combo.setCurrentIndex(0)
    idle(window)
    assert list(view.axes.sliders) == [1] and view.axes.labels[1].text() == "row:"
    view.axes.sliders[1].setValue(4)
    idle(window)
    assert load_all(window, idle, view.model) == stored[:, 4, :].tolist()
    view.axes.x_combo.setCurrentIndex(1)  # rows along time, columns along row
    idle(window)
    view.axes.y_combo.setCurrentIndex(1)  # the same axis twice swaps: rows along row
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (1, 0)
    assert list(view.axes.sliders) == [2] and view.axes.labels[2].text() == "col:"
    view.axes.sliders[2].setValue(1)
    idle(window)
    assert load_all(window, idle, view.model) == stored[:, :, 1].T.tolist()


def test_records_of_two_dimensions_slide_along_the_other_axis(window, idle, tmp_path):
    from tests.zarr_oracle import write_array

    records = np.zeros((3, 6), dtype=[("id", "<i4"), ("name", "S4")])
    records["id"] = np.arange(18).reshape(3, 6)
    records["name"] = [[f"n{i}".encode() for i in range(j * 6, j * 6 + 6)] for j in range(3)]
    write_array(tmp_path / "rec.zarr", records, path="rec", zarr_format=2, chunks=(2, 4))
    window.open_store(str(tmp_path / "rec.zarr"), {}, path="rec")
    idle(window)
    view = window.table
    assert window.stack.currentWidget() is view
    assert not view.axes.x_combo.isVisible() and list(view.axes.sliders) == [0]
    view.axes.sliders[0].setValue(2)
    idle(window)
    model = view.model
    assert [model.headerData(c, _horizontal()) for c in range(2)] == ["id", "name"]
    stored = zarr.open_array(tmp_path / "rec.zarr" / "rec", mode="r")[2]
    assert load_all(window, idle, model) == [[str(r["id"]), _text(r["name"])] for r in stored]


def _horizontal():
    from PySide6.QtCore import Qt

    return Qt.Orientation.Horizontal


def _text(value):
    from zarrfs.viewer import transforms

    return transforms.format_value(value)
