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
from zarrfs.engine.hierarchy import Hierarchy, _node
from zarrfs.engine.ome import declared_children, declared_paths
from zarrfs.engine.store import Store


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


def test_the_ome_declarer_names_children_from_known_attributes():
    """The declarer alone, over plain dicts: what a node and its ancestors declare, the
    series once the OME group is known, nothing for what is not known or not OME-Zarr."""
    plate = {"plate": {"rows": [{"name": "A"}], "wells": [{"path": "A/1"}, {"path": "A/2"}]}}
    known: dict[str, dict] = {
        "": {},
        "plate": plate,
        "img": {"ome": {"multiscales": [{"datasets": [{"path": "0"}, {"path": "1"}]}]}},
    }
    assert declared_children("plate", known.get) == ["A"]
    assert declared_children("plate/A", known.get) == ["1", "2"]  # named by the plate above
    assert declared_children("plate/A/1", known.get) == []  # the well is not known yet
    known["plate/A/1"] = {"well": {"images": [{"path": "0"}]}}
    assert declared_children("plate/A/1", known.get) == ["0"]
    assert declared_children("img", known.get) == ["0", "1", "labels"]
    assert declared_children("", known.get) == [] == declared_children("nowhere", known.get)
    b2r = {"": {"bioformats2raw.layout": 3}}
    assert declared_children("", b2r.get) == ["0", "OME"]
    b2r["OME"] = {"series": ["0", "1", "/2/", "a/b", "..", "", 5]}
    assert declared_children("", b2r.get) == ["0", "1", "2", "OME"]
    b2r["OME"] = {"series": "0123"}  # not a list: no series
    assert declared_children("", b2r.get) == ["0", "OME"]


def _plain_groups(root):
    """A group ``a`` holding ``b``, and a group ``c``: no convention names any of them."""
    top = zarr.open_group(str(root), mode="w", zarr_format=2)
    top.create_group("a").create_group("b")
    top.create_group("c")
    return root


def _keys(url: str, declarers, path: str = "") -> list[str]:
    hierarchy = Hierarchy(Store.from_url(url), None, declarers)
    hierarchy.load_root()
    return _node(hierarchy, path, hierarchy.metadata(path)).keys()


def test_the_hierarchy_asks_its_declarers(http_server, tmp_path):
    """The plug-in interface with made-up declarers: children named and there are shown; asked
    again once the named children are known (a round per round trip); none, nothing."""
    server = http_server(_plain_groups(tmp_path / "plain.zarr"))
    server.listings = False
    assert _keys(server.url, ()) == []

    def top(path, attributes):
        return ["a", "missing"] if path == "" else []

    def after_a(path, attributes):  # names "c" once "a" has been fetched
        return ["c"] if path == "" and attributes("a") is not None else []

    def below(path, attributes):
        return ["b"] if path == "a" and attributes("") is not None else []

    assert _keys(server.url, (top,)) == ["a"]
    assert _keys(server.url, (top, after_a)) == ["a", "c"]
    assert _keys(server.url, (after_a,)) == []  # nothing fetched "a": "c" never named
    assert _keys(server.url, (below,), "a") == ["b"]
