"""OME-Zarr multiscales (NGFF 0.4 on v2, 0.5 on v3) from the corpus written by ome-zarr-py and
the bundled demo store; malformed metadata is a MetadataError. (The summary: test_summary.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine.ome import Axis, Dataset, levels, parse_multiscales

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo.zarr"


def test_ngff_04_and_05(corpus_dir):
    g4 = zarrfs.open(str(corpus_dir / "corpus/ome-zarr/ngff_0.4_cyx_uint16.zarr"))
    (ms,) = engine.multiscales(g4)
    assert ms.axis_names == ("c", "y", "x") and [d.path for d in ms.datasets] == [
        "s0",
        "s1",
        "s2",
        "s3",
    ]
    assert ms.datasets[1].scale is not None and ms.datasets[1].scale[1] > ms.datasets[0].scale[1]
    g5 = zarrfs.open(str(corpus_dir / "corpus/ome-zarr/ngff_0.5_tczyx_uint8.zarr"))
    (ms5,) = engine.multiscales(g5)
    assert ms5.version == "0.5" and ms5.axis_names == ("t", "c", "z", "y", "x")
    level0 = g5[ms5.datasets[0].path]
    assert engine.axis_names_of_level(g5, ms5.datasets[0].path) == ("t", "c", "z", "y", "x")
    assert level0.ndim == 5


def test_not_ome_and_malformed():
    assert parse_multiscales({}) == [] and parse_multiscales({"ome": {"version": "0.5"}}) == []
    with pytest.raises(engine.MetadataError):
        parse_multiscales({"multiscales": [{"datasets": [{"nopath": 1}]}]})
    with pytest.raises(engine.MetadataError):
        parse_multiscales({"multiscales": {"datasets": []}})


@pytest.mark.parametrize(
    "name, version, axes, n_levels",
    [
        ("ngff_0.4_cyx_uint16.zarr", "0.4", ("c", "y", "x"), 4),
        ("ngff_0.5_tczyx_uint8.zarr", "0.5", ("t", "c", "z", "y", "x"), 3),
        ("ngff_0.5_zyx_float32.zarr", "0.5", ("z", "y", "x"), 5),
    ],
)
def test_corpus_levels_match_their_metadata(corpus_dir, name, version, axes, n_levels):
    """Each level is an array of the right rank; y and x halve with the scale doubling."""
    path = corpus_dir / "corpus/ome-zarr" / name
    g = zarrfs.open(str(path))
    (ms,) = engine.multiscales(g)
    assert ms.version == version and ms.axis_names == axes and ms.name == "conformance image"
    arrays = levels(g, ms)
    assert len(arrays) == n_levels and all(a.ndim == len(axes) for a in arrays)
    for a, b, da, db in zip(arrays, arrays[1:], ms.datasets, ms.datasets[1:], strict=False):
        assert db.scale[-1] == 2 * da.scale[-1]
        assert b.shape[-1] == (a.shape[-1] + 1) // 2 and b.shape[:-2] == a.shape[:-2]
    # the parsed transforms are exactly the stored ones
    doc = json.loads((path / (".zattrs" if version == "0.4" else "zarr.json")).read_text())
    raw = doc["multiscales"] if version == "0.4" else doc["attributes"]["ome"]["multiscales"]
    for d, r in zip(ms.datasets, raw[0]["datasets"], strict=True):
        assert list(d.scale) == r["coordinateTransformations"][0]["scale"]
        assert list(d.translation) == r["coordinateTransformations"][1]["translation"]


def test_demo_cells():
    g = zarrfs.open(str(DEMO / "images" / "cells"))
    (ms,) = engine.multiscales(g)
    assert ms.name == "cells" and ms.version == "0.5"
    assert ms.axes == (
        Axis("c", "channel"),
        Axis("y", "space", "micrometer"),
        Axis("x", "space", "micrometer"),
    )
    assert ms.datasets[0] == Dataset("0", (1.0, 0.325, 0.325), (0.0, 0.0, 0.0))
    assert [a.shape for a in levels(g, ms)] == [
        (2, 512, 512),
        (2, 256, 256),
        (2, 128, 128),
        (2, 64, 64),
    ]
    assert engine.axis_names_of_level(g, "2") == ("c", "y", "x")
    assert engine.axis_names_of_level(g, "nope") is None
    assert engine.multiscales(g["0"]) == []  # an array is never a multiscale
    assert engine.multiscales(zarrfs.open(str(DEMO))) == []


@pytest.mark.parametrize(
    "attrs, field",
    [
        (
            {
                "multiscales": [
                    {
                        "datasets": [
                            {
                                "path": "0",
                                "coordinateTransformations": [{"type": "scale", "scale": ["one"]}],
                            }
                        ]
                    }
                ]
            },
            "scale",
        ),
        (
            {
                "multiscales": [
                    {
                        "axes": [{"name": "y"}, {"name": "x"}],
                        "datasets": [
                            {
                                "path": "0",
                                "coordinateTransformations": [{"type": "scale", "scale": [1.0]}],
                            }
                        ],
                    }
                ]
            },
            "coordinateTransformations",
        ),
        ({"multiscales": [{"axes": {"name": "x"}, "datasets": []}]}, "axes"),
        ({"multiscales": [{"axes": [{"type": "space"}], "datasets": []}]}, "axes"),
        ({"ome": {"version": "0.5", "multiscales": [{"datasets": "0"}]}}, "multiscales"),
        (
            {"multiscales": [{"datasets": [{"path": "0", "coordinateTransformations": [3]}]}]},
            "coordinateTransformations",
        ),
    ],
)
def test_malformed_fields_are_named(attrs, field):
    with pytest.raises(engine.MetadataError) as info:
        parse_multiscales(attrs, path="img")
    assert info.value.field == field and "OME-Zarr" in info.value.message


def test_dataset_naming_no_array(zarr_writer):
    import numpy as np
    import zarr

    w = zarr_writer(np.zeros((4, 4), "u1"), path="img/0")
    ome = {
        "version": "0.5",
        "multiscales": [
            {"axes": [{"name": "y"}, {"name": "x"}], "datasets": [{"path": "0"}, {"path": "1"}]}
        ],
    }
    zarr.open_group(str(w.root / "img"), mode="r+").attrs.update({"ome": ome})
    g = zarrfs.open(str(w.root))["img"]
    (ms,) = engine.multiscales(g)
    with pytest.raises(engine.MetadataError, match="'1'"):
        levels(g, ms)
