"""The command line as a newcomer meets it: ``zarrfs info`` of an OME-Zarr group notes its long
attributes in one line (``--attrs`` prints them)."""

from __future__ import annotations

import json

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
