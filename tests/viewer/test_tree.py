"""The hierarchy model: lazy listing in the background, icons and columns, qtmodeltester."""

from __future__ import annotations

import zarr

import zarrfs.engine as engine
from zarrfs.viewer.tasks import Background
from zarrfs.viewer.tree_model import HierarchyModel, node_icon_name


def listed_model(qtbot, url):
    background = Background()
    model = HierarchyModel(background)
    model.set_root_node(engine.open(str(url)), "store")
    return model, background


def fetch_all(qtbot, model, parent=None):
    """Expand every group (as a view would), waiting for each background listing."""
    from PySide6.QtCore import QModelIndex

    parent = parent or QModelIndex()
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        model.fetchMore(index)  # no-op when listed or being listed
        item = model.item(index)
        if item.is_group:
            qtbot.waitUntil(lambda item=item: item.children is not None, timeout=10_000)
        fetch_all(qtbot, model, index)


def names(model, parent):
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


def test_lazy_listing_and_columns(qtbot, sample_store):
    path, _ = sample_store
    model, background = listed_model(qtbot, path)
    try:
        top = model.index(0, 0)
        assert model.hasChildren(top) and model.rowCount(top) == 0  # not listed yet
        assert model.canFetchMore(top)
        with qtbot.waitSignal(model.listed, timeout=10_000):
            model.fetchMore(top)
        assert not model.canFetchMore(top)
        assert names(model, top) == ["images", "line", "mask", "names", "scalar", "wave"]
        images = model.index(0, 0, top)
        assert model.canFetchMore(images)
        with qtbot.waitSignal(model.listed, timeout=10_000):
            model.fetchMore(images)
        volume = model.index(0, 0, images)
        assert volume.data() == "volume"
        assert model.index(0, 1, images).data() == "(6, 90, 130)"
        assert model.index(0, 2, images).data() == "uint16"
        assert model.find("images/volume") == volume
        assert not model.hasChildren(volume)
    finally:
        background.close()


def test_icons_follow_kind_and_shape(sample_store):
    path, _ = sample_store
    root = engine.open(str(path))
    assert node_icon_name(root) == "group"
    assert node_icon_name(root["line"]) == "array-1d"
    assert node_icon_name(root["scalar"]) == "array-0d"
    assert node_icon_name(root["wave"]) == "array-2d"
    assert node_icon_name(root["images/volume"]) == "array-nd"
    assert node_icon_name(root["names"]) == "array-table"


def test_qtmodeltester_passes_while_listing(qtbot, qtmodeltester, sample_store):
    path, _ = sample_store
    model, background = listed_model(qtbot, path)
    try:
        qtmodeltester.check(model, force_py=True)
        fetch_all(qtbot, model)
        qtmodeltester.check(model, force_py=True)
        assert model.rowCount(model.index(0, 0)) == 6
    finally:
        background.close()


def test_a_broken_child_is_reported_not_fatal(qtbot, tmp_path):
    root = zarr.open_group(tmp_path / "bad.zarr", mode="w")
    root.create_group("broken")
    root.create_array("good", shape=(3,), dtype="i2")
    (tmp_path / "bad.zarr" / "broken" / "zarr.json").write_text("{not json")
    model, background = listed_model(qtbot, tmp_path / "bad.zarr")
    try:
        received = []
        model.listing_failed.connect(received.append)
        top = model.index(0, 0)
        model.fetchMore(top)
        qtbot.waitUntil(lambda: model.item(top).children is not None, timeout=10_000)
        assert received and received[0].title == "Invalid metadata"
        assert "broken/zarr.json" in received[0].text
        assert not model.canFetchMore(top)  # no retry loop
        listed = names(model, top)
        if listed:  # the engine lists siblings of a broken child: each is marked on its own
            assert listed == ["broken", "good"]
            assert model.item(model.index(0, 0, top)).error
            assert model.item(model.index(1, 0, top)).node.shape == (3,)
        else:  # the engine fails the whole listing: the group is marked
            assert model.item(top).error and "broken" in model.item(top).error
    finally:
        background.close()
