"""The docks and exports use the image view's small interface (``ImageView.shown`` and its
kin), never its controller, ViewBox or items: the view can change inside without them."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import zarrfs.viewer

#: the image view's insides
INSIDES = {"controller", "view_box", "graphics", "histogram", "image_item", "composite_item"}
#: the modules around the image view: the window, its docks and the exports
AROUND = ("main_window.py", "series_view.py", "export.py", "status.py", "info_panel.py")


@pytest.mark.parametrize("module", AROUND)
def test_the_docks_do_not_reach_into_the_image_view(module):
    tree = ast.parse((Path(zarrfs.viewer.__file__).parent / module).read_text())
    reaching = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in INSIDES
        and ast.unparse(node.value) in ("image", "view", "self.image", "window.image")
    ]
    assert reaching == []


def test_shown_describes_the_plane_on_screen(window, idle, ome_images, tmp_path):
    from tests.cf_stores import write_xarray

    assert window.image.shown() is None
    written = ome_images("ome-zarr-py", "0.4")
    window.open_store(str(written.path), {})
    idle(window)
    shown = window.image.shown()
    assert shown.node_path == "s0" and shown.array.shape == written.data.shape
    assert shown.channels is not None and shown.channels.axis == 0
    assert shown.state.indices[1] == 2 and not shown.north_up and shown.cf is None

    url = write_xarray(tmp_path / "c.zarr", zarr_format=3)
    window.open_store(str(url), {}, path="tas", indices=[4])
    idle(window)
    window.image.cf_tools.raw_check.setChecked(True)
    idle(window)
    shown = window.image.shown()
    assert shown.channels is None and shown.cf is not None and shown.raw
    assert shown.north_up  # the latitudes run south to north: drawn north up
    assert shown.levels == window.image.controller.current_levels
    assert shown.lut.shape == (256, 3) and shown.lut.dtype == np.uint8
