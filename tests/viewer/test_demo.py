"""The demo store (resources/demo.zarr, written by zarr-python): every kind of node shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


@pytest.fixture
def demo(tmp_path):
    path = RESOURCES / "demo.zarr"
    if not (path / "zarr.json").exists():
        pytest.importorskip("zarr")
        import importlib.util

        script = path.parent / "make_demo.py"
        if not script.exists():
            pytest.skip("resources/make_demo.py not available")
        spec = importlib.util.spec_from_file_location("make_demo", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.main([str(tmp_path)])
        path = tmp_path / "demo.zarr"
    return path


def test_demo_store_every_node(window, idle, demo):
    window.open_store(str(demo), {})
    idle(window)
    top = window.model.index(0, 0)
    names = [window.model.index(r, 0, top).data() for r in range(window.model.rowCount(top))]
    assert {"volumes", "images", "tables"} <= set(names)
    oracle = zarr.open_group(str(demo), mode="r")

    window.select_path("volumes/phantom")  # sharded
    idle(window)
    view = window.image
    assert window.info.summary_value("shards") not in (None, "null")
    z = view.state.indices[0]
    g = view.controller.request.geometry
    s = int(g.sy)
    expected = oracle["volumes/phantom"][z, g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
    np.testing.assert_array_equal(view.image_item.image, expected)

    window.select_path("images/cells")  # OME-Zarr image group: its pyramid
    idle(window)
    assert window.stack.currentWidget() is view and len(view.controller.levels) == 4
    assert "OME-Zarr multiscales" in {
        window.info.summary.topLevelItem(i).text(0)
        for i in range(window.info.summary.topLevelItemCount())
    }

    window.select_path("tables/profile")
    idle(window)
    np.testing.assert_array_equal(window.line.data, oracle["tables/profile"][:])
    window.select_path("tables/answer")
    idle(window)
    assert window.scalar.value_label.text() == str(oracle["tables/answer"][()])
    window.select_path("tables/records")
    idle(window)
    assert window.stack.currentWidget() is window.table
    model = window.table.model
    model.data(model.index(0, 0))
    idle(window)
    records = oracle["tables/records"][:]
    assert [
        model.headerData(i, __import__("PySide6.QtCore").QtCore.Qt.Orientation.Horizontal)
        for i in range(model.columnCount())
    ] == list(records.dtype.names)
    assert model.data(model.index(0, 0)) == str(records[0][records.dtype.names[0]])


def test_readme_pictures_are_rendered(qapp, tmp_path):
    """packaging/readme_images.py (run by demo.sh): the CF map picture is the window, drawn,
    with the map's colours in it, from a store xarray wrote."""
    import importlib.util

    from PySide6.QtGui import QImage

    script = Path(__file__).resolve().parents[2] / "packaging" / "readme_images.py"
    spec = importlib.util.spec_from_file_location("readme_images", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_climate(tmp_path / "climate.zarr")
    out = tmp_path / "cf.png"
    module.screenshot(str(tmp_path / "climate.zarr"), out, "sst", index=3, colormap="viridis")
    picture = QImage(str(out))
    assert (picture.width(), picture.height()) == module.SIZE
    module.terminal(["$ ls ~/climate", "sst/"], tmp_path / "t.png")
    assert QImage(str(tmp_path / "t.png")).width() > 100
    # viridis's yellow (warm tropics) is on screen: the map was drawn, not an empty window
    rgb = np.frombuffer(picture.convertToFormat(QImage.Format.Format_RGB888).constBits(), np.uint8)
    pixels = rgb[: picture.height() * picture.bytesPerLine()].reshape(picture.height(), -1)
    pixels = pixels[:, : picture.width() * 3].reshape(picture.height(), picture.width(), 3)
    yellow = (pixels[..., 0] > 200) & (pixels[..., 1] > 200) & (pixels[..., 2] < 80)
    assert yellow.sum() > 1000
