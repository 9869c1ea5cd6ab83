"""Groups on stores that cannot be listed show the children their OME-Zarr metadata names.

A web server without directory pages, and S3 over HTTPS, answer 404 for a directory; S3 without
ListBucket answers 403. ``group.keys()`` there used to be empty (or an error), so an OME-Zarr
image showed no pyramid levels in the mount, the tree or the viewer's hierarchy, though every
level opened by its path. The stores here are written by zarr-python and compared with what the
same store lists when read from disk.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from fsspec.implementations.http import HTTPFileSystem

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine.ome import declared_paths


@pytest.fixture(autouse=True)
def _fresh_client():
    HTTPFileSystem.clear_instance_cache()
    yield


def _axes(names):
    return [{"name": n, "type": "space"} for n in names]


def _image(group, name, *, ome05: bool, with_labels: bool = False):
    """An NGFF image group: two levels, and (optionally) a labels group with one label."""
    multiscales = [{"axes": _axes("yx"), "datasets": [{"path": "0"}, {"path": "1"}]}]
    attrs = (
        {"ome": {"version": "0.5", "multiscales": multiscales}}
        if ome05
        else {"multiscales": [{"version": "0.4", **multiscales[0]}]}
    )
    image = group.create_group(name, attributes=attrs)
    image.create_array("0", data=np.arange(64, dtype="u2").reshape(8, 8), chunks=(4, 4))
    image.create_array("1", data=np.arange(16, dtype="u2").reshape(4, 4), chunks=(4, 4))
    if with_labels:
        names = {"labels": ["cells"]}
        labels = image.create_group("labels", attributes={"ome": names} if ome05 else names)
        _image(labels, "cells", ome05=ome05)
    return image


def _write(root, zarr_format: int):
    ome05 = zarr_format == 3
    top = zarr.open_group(str(root), mode="w", zarr_format=zarr_format)
    _image(top, "image", ome05=ome05, with_labels=True)
    plate = {
        "rows": [{"name": "A"}],
        "columns": [{"name": "1"}],
        "wells": [{"path": "A/1", "rowIndex": 0, "columnIndex": 0}],
    }
    p = top.create_group(
        "plate", attributes={"ome": {"plate": plate}} if ome05 else {"plate": plate}
    )
    well = {"images": [{"path": "0"}]}
    w = p.create_group("A").create_group(
        "1", attributes={"ome": {"well": well}} if ome05 else {"well": well}
    )
    _image(w, "0", ome05=ome05)
    return root


def _walk(group, prefix="") -> list[str]:
    out = []
    for name in group.keys():
        child = group[name]
        out.append(f"{prefix}{name}")
        if child.kind == "group":
            out += _walk(child, f"{prefix}{name}/")
    return out


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("refusal", ["404", "403"])
def test_ome_children_of_a_store_that_cannot_list(http_server, tmp_path, zarr_format, refusal):
    root = _write(tmp_path / "ome.zarr", zarr_format)
    listed = _walk(zarrfs.open(str(root)))
    assert "image/labels/cells/0" in listed and "plate/A/1/0/1" in listed
    server = http_server(root)
    if refusal == "404":
        server.listings = False
    else:
        server.objects_only = True
    top = zarrfs.open(server.url)  # declares nothing: its children cannot be seen
    if refusal == "403":
        with pytest.raises(engine.AccessDeniedError):
            top.keys()
    else:
        assert top.keys() == []
    image = zarrfs.open(f"{server.url}/image")
    assert image.keys() == ["0", "1", "labels"]
    assert _walk(image) == [p.removeprefix("image/") for p in listed if p.startswith("image/")]
    plate = zarrfs.open(f"{server.url}/plate")
    assert _walk(plate) == [p.removeprefix("plate/") for p in listed if p.startswith("plate/")]
    np.testing.assert_array_equal(
        image["labels/cells"]["1"][...], np.arange(16, dtype="u2").reshape(4, 4)
    )


@pytest.mark.parametrize("refusal", ["404", "403"])
def test_every_series_of_a_bioformats2raw_layout(http_server, tmp_path, refusal):
    root = tmp_path / "b2r.zarr"
    top = zarr.open_group(
        str(root), mode="w", zarr_format=2, attributes={"bioformats2raw.layout": 3}
    )
    for series in ("0", "1", "2"):
        _image(top, series, ome05=False)
    top.create_group("OME", attributes={"series": ["0", "1", "2"]})
    listed = _walk(zarrfs.open(str(root)))
    server = http_server(root)
    server.listings, server.objects_only = False, refusal == "403"
    assert _walk(zarrfs.open(server.url)) == listed
    assert zarrfs.open(server.url).keys() == ["0", "1", "2", "OME"]


def test_a_store_that_lists_is_believed(http_server, tmp_path):
    root = tmp_path / "ome.zarr"
    _image(zarr.open_group(str(root), mode="w"), "image", ome05=True)  # no labels group
    server = http_server(root)
    image = zarrfs.open(f"{server.url}/image")
    server.stats.reset()
    assert image.keys() == ["0", "1"]
    assert not [r for r in server.stats.records() if "labels" in r.path]  # never probed


def test_declared_paths_of_each_kind():
    ms = [{"datasets": [{"path": "0"}, {"path": "s1//x"}, {"nopath": 1}, "bad"]}]
    assert declared_paths({"multiscales": ms}) == ["0", "labels", "s1/x"]
    assert declared_paths({"ome": {"multiscales": ms}}) == ["0", "labels", "s1/x"]
    assert declared_paths({"labels": ["a", 3, "b"]}) == ["a", "b"]
    assert declared_paths(
        {"ome": {"plate": {"wells": [{"path": "B/2"}], "rows": [{"name": "A"}, {"name": "B"}]}}}
    ) == ["A", "B", "B/2"]
    assert declared_paths({"well": {"images": [{"path": "0"}, {"path": "1"}]}}) == ["0", "1"]
    assert declared_paths({"bioformats2raw.layout": 3}) == ["0", "OME"]
    for malformed in (
        {"multiscales": "x"},
        {"plate": []},
        {"labels": {"a": 1}},
        {"ome": 5},
        {"well": {"images": [{"path": "../x"}]}},
        {},
    ):
        assert declared_paths(malformed) == []
