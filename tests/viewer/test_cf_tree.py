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
