"""A v2 array written by xarray names its dimensions in ``_ARRAY_DIMENSIONS``: the viewer's
sliders and axis choices carry those names (the engine gives them as ``dimension_names``)."""

from __future__ import annotations

import pytest

from tests.cf_stores import write_xarray

pytest.importorskip("xarray")


def test_xarray_dimension_names_label_the_axes(window, idle, tmp_path):
    url = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    window.open_store(str(url), {})
    idle(window)
    window.select_path("tas")
    idle(window)
    assert window.image.state.dimension_names == ("time", "lat", "lon")
    controls = window.image.axes
    assert [label.text() for label in controls.labels.values()] == ["time:"]
    assert controls.x_combo.currentText().startswith("lon (")
    assert controls.y_combo.currentText().startswith("lat (")
