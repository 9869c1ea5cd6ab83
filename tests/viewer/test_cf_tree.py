"""The tree tells coordinates from data variables (their own icon, after the data variables) and
shows each array's CF ``long_name`` and ``units``, from the metadata the listing fetched anyway:
over HTTP, listing asks for nothing but metadata documents."""

from __future__ import annotations

import pytest

import zarrfs.engine as engine
from tests.cf_stores import write_xarray
from tests.viewer.test_tree import fetch_all, listed_model, names
from zarrfs.viewer.resources import icon
from zarrfs.viewer.tree_model import COLUMNS

xr = pytest.importorskip("xarray")


def _rows(model):
    top = model.index(0, 0)
    return {
        model.index(r, 0, top).data(): [model.index(r, c, top) for c in range(len(COLUMNS))]
        for r in range(model.rowCount(top))
    }


def _text(index) -> str:
    return index.data() or ""


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False], ids=["consolidated", "listed"])
def test_columns_and_coordinates_as_xarray_says(qtbot, tmp_path, zarr_format, consolidated):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=zarr_format, consolidated=consolidated)
    ds = xr.open_zarr(path, decode_cf=False, consolidated=consolidated)
    model, background = listed_model(qtbot, path)
    try:
        fetch_all(qtbot, model)
        top = model.index(0, 0)
        # data variables first, then coordinates: the order of xarray's data_vars and coords
        assert names(model, top) == sorted(ds.data_vars) + sorted(ds.coords)
        assert COLUMNS[3:] == ("Long name", "Units")
        rows = _rows(model)
        for name in list(ds.data_vars) + list(ds.coords):
            attrs = ds[name].attrs
            assert _text(rows[name][3]) == attrs.get("long_name", ""), name
            assert _text(rows[name][4]) == attrs.get("units", ""), name
        assert _text(rows["tas"][3]) == "air temperature" and _text(rows["tas"][4]) == "K"
        assert _text(rows["lat"][4]) == "degrees_north"
        coordinate = icon("coordinate").cacheKey()
        for name in ("time", "lat", "lon"):
            assert rows[name][0].data(1).cacheKey() == coordinate, name  # DecorationRole
            assert "coordinate" in rows[name][0].data(3)  # ToolTipRole
        for name in ("tas", "sst"):
            assert rows[name][0].data(1).cacheKey() != coordinate, name
            assert "coordinate" not in rows[name][0].data(3)
    finally:
        background.close()


def test_auxiliary_coordinates_named_by_a_sibling(qtbot, tmp_path):
    """A 2-D ``lat2d`` that ``tas`` names in its ``coordinates`` attribute (xarray writes it for
    non-dimension coordinates) is a coordinate; an unrelated 1-D array is not."""
    import numpy as np

    ds = xr.Dataset(
        {"tas": (("y", "x"), np.zeros((3, 4)), {"units": "K"}), "other": ("z", np.arange(5))},
        coords={"lat2d": (("y", "x"), np.ones((3, 4)), {"units": "degrees_north"})},
    )
    ds.to_zarr(tmp_path / "aux.zarr", zarr_format=2)
    assert "lat2d" in engine.open(str(tmp_path / "aux.zarr"))["tas"].attrs["coordinates"]
    model, background = listed_model(qtbot, tmp_path / "aux.zarr")
    try:
        fetch_all(qtbot, model)
        top = model.index(0, 0)
        assert names(model, top) == ["other", "tas", "lat2d"]
        rows = _rows(model)
        assert "auxiliary" in rows["lat2d"][0].data(3)
        assert rows["lat2d"][0].data(1).cacheKey() == icon("coordinate").cacheKey()
        assert rows["other"][0].data(1).cacheKey() != icon("coordinate").cacheKey()
    finally:
        background.close()


def test_listing_over_http_reads_no_data(qtbot, qtmodeltester, tmp_path, http_server):
    """The columns come from the metadata the listing fetches: no chunk is asked for, and the
    model passes qtmodeltester with the new columns."""
    path = write_xarray(tmp_path / "c.zarr", zarr_format=3, consolidated=False)
    server = http_server(str(path))
    model, background = listed_model(qtbot, server.url)
    try:
        fetch_all(qtbot, model)
        qtmodeltester.check(model, force_py=True)
        chunks = [r.path for r in server.stats.records() if "/c/" in r.path]
        assert chunks == []
        assert _text(_rows(model)["tas"][3]) == "air temperature"
    finally:
        background.close()


def _visible(tree, column: int) -> bool:
    header = tree.header()
    left = header.sectionViewportPosition(column)
    return (
        not tree.isColumnHidden(column)
        and left >= 0
        and left + header.sectionSize(column) <= tree.viewport().width()
    )


def test_the_window_shows_the_cf_columns_only_where_they_say_something(
    window, qtbot, tmp_path, ome_images
):
    """A store of CF arrays: the tree pane widens so that the long name and units columns show
    beside the name (no scrolling sideways); a store without CF attributes (OME-Zarr) hides
    those empty columns and keeps its width."""
    path = write_xarray(tmp_path / "c.zarr", zarr_format=2)
    window.resize(1440, 860)
    window.show()
    before = window.splitter.sizes()[0]
    window.open_store(str(path))
    qtbot.waitUntil(lambda: window.model.shows_cf_columns(""), timeout=20000)
    qtbot.waitUntil(lambda: window.splitter.sizes()[0] > before, timeout=5000)
    tree = window.tree
    qtbot.wait(100)
    assert all(_visible(tree, c) for c in range(len(COLUMNS))), (
        window.splitter.sizes(),
        tree.width(),
        tree.viewport().width(),
        [tree.header().sectionViewportPosition(c) for c in range(len(COLUMNS))],
        [tree.header().sectionSize(c) for c in range(len(COLUMNS))],
    )
    assert window.splitter.sizes()[0] <= sum(window.splitter.sizes()) / 3 + 1  # the map keeps room
    rows = _rows(window.model)
    assert _text(rows["tas"][3]) == "air temperature"

    window.open_store(str(ome_images("ome-zarr-py", "0.4").path))
    qtbot.waitUntil(lambda: window.root is not None and window.model.rowCount() > 0, timeout=20000)
    qtbot.wait(200)
    assert tree.isColumnHidden(3) and tree.isColumnHidden(4)
    assert not tree.isColumnHidden(1) and not tree.isColumnHidden(2)
