"""The metadata panel shows any attributes readably and quickly, and never stops the data
from showing: non-ASCII text as itself, deep nesting cut with "…", huge documents capped."""

from __future__ import annotations

import json

import numpy as np
import zarr

from zarrfs.viewer import info_panel


def array_with_attrs(tmp_path, attrs_text: str):
    """A 4 x 4 array whose zarr.json carries ``attrs_text`` verbatim as its attributes."""
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    root.create_array("a", shape=(4, 4), chunks=(2, 2), dtype="u1")[:] = 5
    path = tmp_path / "s.zarr" / "a" / "zarr.json"
    meta = json.dumps(json.loads(path.read_text()))
    path.write_text(meta[:-1] + ', "attributes": ' + attrs_text + "}")
    return tmp_path / "s.zarr"


def top_level(tree) -> dict:
    return {
        tree.topLevelItem(i).text(0): tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
    }


def test_non_ascii_attributes_read_as_text(window, idle, tmp_path):
    attrs = {"name": "データ", "unit": "µm", "who": ["Zoë", "Åsa"]}
    window.open_store(str(array_with_attrs(tmp_path, json.dumps(attrs))), {}, path="a")
    idle(window)
    items = top_level(window.info.attributes)
    assert items["unit"].text(1) == '"µm"'
    assert items["name"].text(1) == '"データ"'
    assert items["who"].text(1) == '["Zoë", "Åsa"]'
    raw = window.info.raw.toPlainText()
    assert '"name": "データ"' in raw and "\\u" not in raw


def test_deeply_nested_attributes_still_show_the_array(window, idle, tmp_path):
    depth = 600
    text = '{"deep": ' + '{"k": ' * depth + "1" + "}" * depth + "}"
    window.open_store(str(array_with_attrs(tmp_path, text)), {}, path="a")
    idle(window)
    assert window.stack.currentWidget() is window.image
    np.testing.assert_array_equal(window.image.image_item.image, np.full((4, 4), 5, "u1"))
    item, levels = top_level(window.info.attributes)["deep"], 0
    while item.childCount():
        item, levels = item.child(0), levels + 1
    assert item.text(1) == info_panel.ELLIPSIS
    assert levels == info_panel.MAX_DEPTH
    assert "…" in window.info.raw.toPlainText()


def test_huge_attributes_are_capped(window, idle, tmp_path):
    attrs = {"points": list(range(300_000)), **{f"key{i}": i for i in range(300)}}
    window.open_store(str(array_with_attrs(tmp_path, json.dumps(attrs))), {}, path="a")
    idle(window)
    limit = info_panel.MAX_ITEMS
    tree = window.info.attributes
    assert tree.topLevelItemCount() == limit + 1
    assert tree.topLevelItem(limit).text(0) == f"… {301 - limit} more"
    points = top_level(tree)["points"]
    assert points.text(1) == "[300000]" and points.childCount() == limit + 1
    assert points.child(0).text(1) == "0" and points.child(limit - 1).text(1) == str(limit - 1)
    assert points.child(limit).text(0) == f"… {300_000 - limit} more"
    raw = window.info.raw.toPlainText()
    assert raw.startswith("{") and raw.endswith("more characters)")
    assert len(raw) < info_panel.MAX_RAW_CHARS + 100
