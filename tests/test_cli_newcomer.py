"""The command line as a newcomer meets it: ``zarrfs info`` of an OME-Zarr group notes its long
attributes in one line (``--attrs`` prints them)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from zarrfs.cli import main


@pytest.fixture(scope="module")
def ome_image(tmp_path_factory):
    pytest.importorskip("ome_zarr")
    from tests.ome_writers import write_ome_zarr_py

    return write_ome_zarr_py(tmp_path_factory.mktemp("ome"), "0.4")


def test_info_of_an_ome_group_notes_its_attributes_in_one_line(ome_image, capsys):
    assert main(["info", str(ome_image.path)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("attributes")]
    assert len(lines) == 1
    assert "multiscales, omero" in lines[0] and "--attrs" in lines[0]
    assert '"coordinateTransformations"' not in out
    assert "channels" in out and "DAPI" in out  # the summary itself stays
    assert len(out.splitlines()) < 30

    assert main(["info", str(ome_image.path), "--attrs"]) == 0
    whole = capsys.readouterr().out
    assert '"coordinateTransformations"' in whole and '"rdefs"' in whole

    assert main(["info", str(ome_image.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attributes"]["omero"]["rdefs"]["defaultZ"] == 2


def test_info_keeps_short_attributes_inline(capsys):
    from pathlib import Path

    demo = Path(__file__).resolve().parent.parent / "resources" / "demo.zarr"
    assert main(["info", str(demo)]) == 0
    assert '"title": "zarrfs demo store"' in capsys.readouterr().out


# ----------------------------------------------------------------- get --decode, --sel


@pytest.fixture(scope="module")
def climate(tmp_path_factory):
    pytest.importorskip("xarray")
    from tests.cf_stores import write_xarray

    return write_xarray(tmp_path_factory.mktemp("cf") / "c.zarr", calendar="standard")


def _xarray(url):
    import xarray as xr

    return xr.open_dataset(url, engine="zarr")


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".tif"])
def test_get_decode_gives_what_xarray_decodes(climate, tmp_path, suffix):
    out = tmp_path / f"tas{suffix}"
    assert main(["get", str(climate / "tas"), "[2]", "--decode", "-o", str(out)]) == 0
    expected = _xarray(climate)["tas"].isel(time=2).values
    assert np.isnan(expected).any()  # the fill value is missing, not -32768
    if suffix == ".npy":
        got = np.load(out)
    elif suffix == ".csv":
        got = np.loadtxt(out, delimiter=",")
    else:
        import tifffile

        got = tifffile.imread(out)
        # a TIFF of packed 16-bit counts holds float32 (every decoded value kept apart):
        # xarray's decode, to float32
        assert got.dtype == np.float32
        expected = expected.astype(np.float32)
    np.testing.assert_array_equal(got, expected)


def test_get_decode_of_times_gives_dates(climate, tmp_path):
    out = tmp_path / "time.npy"
    assert main(["get", str(climate / "time"), "--decode", "-o", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out), _xarray(climate)["time"].values)


@pytest.mark.parametrize(
    ("sel", "index", "xarray_sel"),
    [
        (["time=2000-03-01", "lat=10:40"], "[...]", {"time": "2000-03-01", "lat": (10, 40)}),
        (["lat=-30.5", "lon=100:200"], "[5]", {"lat": -30.5, "lon": (100, 200)}),
        (["time=2000-01-05:2000-01-10"], "[:, 3]", {"time": ("2000-01-05", "2000-01-10")}),
        (["lon=:40"], "[0, :2]", {"lon": (None, 40)}),
    ],
)
def test_get_sel_matches_xarray_sel(climate, tmp_path, sel, index, xarray_sel):
    out = tmp_path / "s.npy"
    args = ["get", str(climate / "tas"), index, "--decode", "-o", str(out)]
    for s in sel:
        args += ["--sel", s]
    assert main(args) == 0
    ds = _xarray(climate)["tas"]
    points = {k: v for k, v in xarray_sel.items() if not isinstance(v, tuple)}
    ranges = {k: slice(*v) for k, v in xarray_sel.items() if isinstance(v, tuple)}
    picked = ds.sel(points, method="nearest") if points else ds
    picked = picked.sel(ranges)
    if index == "[5]":
        picked = picked.isel(time=5)
    elif index == "[:, 3]":
        picked = picked.isel(lat=3)
    elif index == "[0, :2]":
        picked = picked.isel(time=0, lat=slice(None, 2))
    np.testing.assert_array_equal(np.load(out), picked.values)


def test_get_sel_errors_name_the_dimension(climate, tmp_path, capsys):
    out = str(tmp_path / "x.npy")
    assert main(["get", str(climate / "tas"), "--sel", "depth=3", "-o", out]) == 1
    assert "depth" in capsys.readouterr().err
    assert main(["get", str(climate / "tas"), "--sel", "time=soon", "-o", out]) == 1
    assert "'soon' is not a date" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["get", str(climate / "tas"), "[1]", "--sel", "time=2000-01-05", "-o", out])
    assert exit_.value.code == 2
    assert "selected twice" in capsys.readouterr().err
