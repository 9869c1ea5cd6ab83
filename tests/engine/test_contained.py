"""A node whose metadata zarrfs cannot use is contained to itself: its group opens and lists it,
its siblings read, and it opens with what did parse, failing only its data reads with an error
naming the node, the document and the reason. Stores written by zarr-python, then broken in the
ways other writers break them (an unknown codec or data type, a malformed entry), in the node's
own documents and in consolidated metadata alike."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.zarr_oracle import write_array

NAMES = ("codec", "dtype", "good", "malformed")


def _break_v2(doc: dict, name: str):
    if name == "codec":
        return {**doc, "compressor": {"id": "fancyzip", "level": 3}}
    if name == "dtype":
        return {**doc, "dtype": "<q9"}
    if name == "malformed":
        return ["not", "an", "object"]
    return doc


def _break_v3(doc: dict, name: str):
    if name == "codec":
        return {**doc, "codecs": [*doc["codecs"], {"name": "mystery"}]}
    if name == "dtype":
        return {**doc, "data_type": "int3"}
    if name == "malformed":
        return {**doc, "shape": "six"}
    return doc


def broken_store(root: Path, zarr_format: int, consolidated: bool) -> dict[str, np.ndarray]:
    """A group of four arrays written by zarr-python, three of them then broken (in the
    consolidated metadata too when ``consolidated``); returns what was written."""
    data = {}
    for i, name in enumerate(NAMES):
        data[name] = np.arange(12, dtype="i4").reshape(3, 4) * (i + 1)
        write_array(
            root,
            data[name],
            path=name,
            zarr_format=zarr_format,
            chunks=(2, 2),
            attributes={"name": name},
            consolidate=consolidated and name == NAMES[-1],
        )
    document = ".zarray" if zarr_format == 2 else "zarr.json"
    fix = _break_v2 if zarr_format == 2 else _break_v3
    for name in NAMES:
        path = root / name / document
        path.write_text(json.dumps(fix(json.loads(path.read_text()), name)))
    if consolidated and zarr_format == 2:
        meta = json.loads((root / ".zmetadata").read_text())
        for name in NAMES:
            entry = f"{name}/.zarray"
            meta["metadata"][entry] = fix(meta["metadata"][entry], name)
        (root / ".zmetadata").write_text(json.dumps(meta))
    elif consolidated:
        top = json.loads((root / "zarr.json").read_text())
        members = top["consolidated_metadata"]["metadata"]
        for name in NAMES:
            members[name] = fix(members[name], name)
        (root / "zarr.json").write_text(json.dumps(top))
    return data


@pytest.mark.parametrize("consolidated", [False, True], ids=["listed", "consolidated"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_broken_node_stops_nothing_but_its_data(tmp_path, zarr_format, consolidated):
    root = tmp_path / "store.zarr"
    data = broken_store(root, zarr_format, consolidated)
    group = engine.open(str(root))
    assert group.kind == "group" and group.keys() == sorted(NAMES)
    np.testing.assert_array_equal(group["good"][...], data["good"])
    assert group["good"].error is None

    codec = group["codec"]  # the codec is resolved on first read, not when the node opens
    assert codec.kind == "array" and codec.shape == (3, 4) and codec.dtype == np.dtype("i4")
    assert codec.attrs == {"name": "codec"} and codec.chunks == (2, 2)
    assert isinstance(codec.error, engine.UnknownCodecError)
    assert [c["name"] for c in codec.codecs][-1] in ("fancyzip", "mystery")
    document = ".zmetadata#codec/.zarray" if consolidated and zarr_format == 2 else "codec"
    for read in (
        lambda: codec[...],
        lambda: codec.read_flat(0, 4),
        lambda: codec.submit().result(10),
    ):
        with pytest.raises(engine.UnknownCodecError) as err:
            read()
        assert document in str(err.value) and str(root) in str(err.value)
        assert err.value.codec in ("fancyzip", "mystery")

    for name, error in (
        ("dtype", engine.UnknownDataTypeError),
        ("malformed", engine.MetadataError),
    ):
        node = group[name]
        assert node.kind == "broken" and node.node_type in ("array", None)
        assert isinstance(node.error, error) and str(root) in node.error.message
        if not (name == "malformed" and zarr_format == 2):
            assert node.node_type == "array"
        assert node.stored_metadata
        raised = []
        for use in (
            lambda n: n.read(),
            lambda n: n[...],
            lambda n: n.attrs,
            lambda n: n.keys(),
        ):
            with pytest.raises(error) as err:  # never an empty answer that looks true
                use(node)
            assert str(err.value) == str(node.error) and err.value.__cause__ is node.error
            raised.append(err.value)
        assert len({id(e) for e in raised}) == len(raised)  # a fresh copy each time


def test_an_unknown_v3_data_type_keeps_its_document_and_attributes(tmp_path):
    root = tmp_path / "store.zarr"
    broken_store(root, 3, consolidated=False)
    node = engine.open(str(root))["dtype"]
    assert node.kind == "broken" and node.zarr_format == 3 and node.path == "dtype"
    assert node.stored_metadata["zarr.json"]["data_type"] == "int3"
    assert node.stored_metadata["zarr.json"]["attributes"] == {"name": "dtype"}
    assert "int3" in node.error.message
    assert f"{root / 'dtype' / 'zarr.json'}: " in node.error.message


def test_opening_a_broken_node_raises_its_error(tmp_path):
    """The node a URL names is not contained: its error is the answer to open()."""
    root = tmp_path / "store.zarr"
    broken_store(root, 3, consolidated=False)
    with pytest.raises(engine.UnknownDataTypeError) as first:
        engine.open(str(root / "dtype"))
    with pytest.raises(engine.UnknownDataTypeError) as second:
        engine.open(str(root / "dtype"))
    assert first.value is not second.value
    assert f"{root / 'dtype' / 'zarr.json'}: " in str(first.value) and "int3" in str(first.value)


def test_malformed_json_is_shown_as_text(tmp_path):
    root = tmp_path / "store.zarr"
    broken_store(root, 2, consolidated=False)
    (root / "good" / ".zarray").write_text('{"zarr_format": 2, "shape": [4,')
    node = engine.open(str(root))["good"]
    assert node.kind == "broken" and node.node_type == "array" and node.zarr_format == 2
    assert node.stored_metadata[".zarray"] == '{"zarr_format": 2, "shape": [4,'
    assert node.stored_metadata[".zattrs"] == {"name": "good"}
    assert "malformed JSON" in node.error.message


def _deep(levels: int):
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "zattrs",
    [json.dumps({"x": _deep(700)}), '{"name": "half', "[1, 2]"],
    ids=["too-deep", "malformed", "not-an-object"],
)
def test_a_group_whose_attributes_cannot_be_read_never_answers_empty(tmp_path, zattrs):
    """A v2 group whose .zattrs cannot be read: its attributes, children and open() raise;
    its parent and siblings list and read."""
    root = tmp_path / "store.zarr"
    data = broken_store(root, 2, consolidated=False)
    bad = root / "bad"
    bad.mkdir()
    (bad / ".zgroup").write_text('{"zarr_format": 2}')
    (bad / ".zattrs").write_text(zattrs)
    with pytest.raises(engine.MetadataError) as err:
        dict(engine.open(str(bad)).attrs)
    assert ".zattrs" in str(err.value)
    group = engine.open(str(root))
    assert "bad" in group.keys() and group["bad"].kind == "broken"
    for use in (lambda: group["bad"].attrs, group["bad"].keys):
        with pytest.raises(engine.MetadataError):
            use()
    np.testing.assert_array_equal(group["good"][...], data["good"])
    assert engine.summary(group)["members"][0]["name"] == "bad"


def test_a_v3_group_whose_attributes_are_too_deep_never_answers_empty(tmp_path):
    root = tmp_path / "deep.zarr"
    root.mkdir()
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {"x": _deep(700)}}
    (root / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(engine.MetadataError) as err:
        engine.open(str(root))
    assert "zarr.json" in str(err.value)


def test_a_zmetadata_that_cannot_be_used_is_passed_over_for_listing(tmp_path, caplog):
    root = tmp_path / "store.zarr"
    data = broken_store(root, 2, consolidated=True)
    (root / ".zmetadata").write_text('{"metadata": [')
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine.hierarchy"):
        group = engine.open(str(root))
    assert group.keys() == sorted(NAMES)
    np.testing.assert_array_equal(group["good"][...], data["good"])
    assert [r.getMessage() for r in caplog.records if ".zmetadata" in r.getMessage()]
    with pytest.raises(engine.MetadataError, match="zmetadata"):
        engine.open(str(root), consolidated=True)  # asked for: its failure is the answer


def test_a_sharded_array_with_an_unknown_inner_codec_tells_its_chunks(tmp_path):
    written = write_array(
        tmp_path / "s.zarr", np.arange(64, dtype="u2").reshape(8, 8), chunks=(2, 4), shards=(4, 8)
    )
    path = written.location / "zarr.json"
    doc = json.loads(path.read_text())
    doc["codecs"][0]["configuration"]["codecs"].append({"name": "mystery"})
    path.write_text(json.dumps(doc))
    arr = engine.open(str(written.location))
    assert isinstance(arr.error, engine.UnknownCodecError)
    assert arr.chunks == (2, 4) and arr.shards == (4, 8)
    with pytest.raises(engine.UnknownCodecError, match="mystery"):
        arr[0]


def test_a_broken_pyramid_level_says_why_it_cannot_be_opened(tmp_path):
    root = tmp_path / "image.zarr"
    for level in ("0", "1"):
        write_array(root, np.zeros((4, 4), "u1"), path=level, zarr_format=2, chunks=(2, 2))
    multiscales = [
        {
            "version": "0.4",
            "axes": [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}],
            "datasets": [
                {"path": p, "coordinateTransformations": [{"type": "scale", "scale": [1, 1]}]}
                for p in ("0", "1")
            ],
        }
    ]
    (root / ".zattrs").write_text(json.dumps({"multiscales": multiscales}))
    doc = json.loads((root / "1" / ".zarray").read_text())
    (root / "1" / ".zarray").write_text(json.dumps(_break_v2(doc, "dtype")))
    group = engine.open(str(root))
    (multiscale,) = engine.multiscales(group)
    with pytest.raises(engine.MetadataError, match="'1' cannot be opened: .*q9"):
        engine.levels(group, multiscale)
