"""A node whose metadata cannot be used, or whose codec cannot be built, is listed with the error
icon, and selecting it shows the reason in the metadata panel (and reads nothing); its siblings
show their data as usual."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.test_contained import broken_store
from zarrfs.viewer.tree_model import NODE_ROLE


def _icon_key(model, index):
    from PySide6.QtCore import Qt

    return model.data(index, Qt.ItemDataRole.DecorationRole).cacheKey()


@pytest.mark.parametrize("consolidated", [False, True], ids=["listed", "consolidated"])
def test_broken_nodes_have_the_error_icon_and_their_reason(window, idle, tmp_path, consolidated):
    from zarrfs.viewer.resources import icon

    root = tmp_path / "store.zarr"
    data = broken_store(root, 3, consolidated)
    window.open_store(str(root), {}, path="good")
    idle(window)
    np.testing.assert_array_equal(window.image.image_item.image, data["good"])
    model = window.model
    top = model.index(0, 0)
    rows = {
        model.index(r, 0, top).data(): model.index(r, 0, top) for r in range(model.rowCount(top))
    }
    assert sorted(rows) == ["codec", "dtype", "good", "malformed"]
    error_icon = icon("error").cacheKey()
    for name in ("codec", "dtype", "malformed"):
        assert model.item(rows[name]).error, name
        assert _icon_key(model, rows[name]) == error_icon, name
    assert not model.item(rows["good"]).error and _icon_key(model, rows["good"]) != error_icon

    for name, words in (("codec", "mystery"), ("dtype", "int3"), ("malformed", "shape")):
        window.show_node(model.data(rows[name], NODE_ROLE))
        idle(window)
        reason = window.info.summary_value("error")
        assert reason and words in reason, (name, reason)
        assert window.stack.currentWidget() is window.placeholder
        assert words in window.placeholder.text()
    assert window.info.summary_value("kind").startswith("array")  # what its document says
    window.show_node(model.data(rows["codec"], NODE_ROLE))
    idle(window)
    assert window.info.summary_value("shape") == "[3, 4]"  # what parsed is there
