"""``cf.coordinate_names``: which children of a group are coordinates, as xarray says (its
``coords`` against its ``data_vars``), from the metadata alone."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.cf_stores import netcdf_tools, write_nczarr, write_xarray
from zarrfs.engine import cf

xr = pytest.importorskip("xarray")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_coordinates_are_xarrays_coords(tmp_path, zarr_format):
    path = write_xarray(tmp_path / "c.zarr", zarr_format=zarr_format)
    found = cf.coordinate_names(engine.open(str(path)).members())
    ds = xr.open_zarr(path)
    assert found == dict.fromkeys(ds.coords, "dimension")
    assert not set(found) & set(ds.data_vars)


def test_auxiliary_coordinates_and_broken_siblings(tmp_path):
    ds = xr.Dataset(
        {"tas": (("y", "x"), np.zeros((3, 4)))},
        coords={"lat2d": (("y", "x"), np.ones((3, 4))), "y": ("y", np.arange(3))},
    )
    ds.to_zarr(tmp_path / "aux.zarr", zarr_format=2)
    (tmp_path / "aux.zarr" / "bad").mkdir()
    (tmp_path / "aux.zarr" / "bad" / ".zarray").write_text("{not json")
    group = engine.open(str(tmp_path / "aux.zarr"), consolidated=False)
    assert group["bad"].kind == "broken"
    assert cf.coordinate_names(group.members()) == {"lat2d": "auxiliary", "y": "dimension"}


def test_auxiliary_arrays_of_a_variable(tmp_path):
    """The arrays a variable's ``coordinates`` attribute names, over its dimensions: not a
    name that is absent or broken, nor one over a dimension the variable lacks."""
    ds = xr.Dataset(
        {
            "tas": (("y", "x"), np.zeros((3, 4))),
            "other": (("z",), np.zeros(5)),
        },
        coords={"lat2d": (("y", "x"), np.ones((3, 4))), "xs": (("x",), np.arange(4.0))},
    )
    ds.to_zarr(tmp_path / "aux.zarr", zarr_format=2, consolidated=False)
    attrs_path = tmp_path / "aux.zarr" / "tas" / ".zattrs"
    attrs = json.loads(attrs_path.read_text())
    attrs["coordinates"] = "lat2d xs nowhere bad other"
    attrs_path.write_text(json.dumps(attrs))
    (tmp_path / "aux.zarr" / "bad").mkdir()
    (tmp_path / "aux.zarr" / "bad" / ".zarray").write_text("{not json")
    group = engine.open(str(tmp_path / "aux.zarr"), consolidated=False)
    found = cf.auxiliary_arrays(group, group["tas"])
    assert sorted(found) == ["lat2d", "xs"]
    assert found["lat2d"].shape == (3, 4) and found["xs"].dimension_names == ("x",)
    assert cf.auxiliary_arrays(group, group["other"]) == {}


@pytest.mark.skipif(not netcdf_tools(), reason="needs ncgen and nccopy (netcdf-bin)")
def test_nczarr_coordinates(tmp_path):
    path = write_nczarr(tmp_path, "zarr")
    found = cf.coordinate_names(engine.open(str(path)).members())
    assert found == dict.fromkeys(("lat", "level", "lon", "time"), "dimension")
