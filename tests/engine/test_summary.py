"""The summary behind ``zarrfs info`` and the mount's ``info.txt``: real values from stores that
zarr-python wrote (and the bundled demo store), JSON-serializable, deterministic text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def test_array_values(zarr_writer):
    data = np.full((6, 7), np.nan, dtype="f4")
    w = zarr_writer(
        data, chunks=(4, 4), fill_value=np.nan, attributes={"a": [1, 2]}, dimension_names=("y", "x")
    )
    s = engine.summary(zarrfs.open(str(w.root))["array"])
    assert s["path"] == "/array" and s["kind"] == "array" and s["zarr_format"] == 3
    assert s["shape"] == [6, 7] and s["dtype"] == "float32" and s["data_type"] == "float32"
    assert s["fill_value"] == "NaN" and s["nchunks"] == 4 and s["chunk_grid"] == [2, 2]
    assert s["nbytes"] == 6 * 7 * 4 and s["dimension_names"] == ["y", "x"]
    assert s["attributes"] == {"a": [1, 2]} and s["shards"] is None and s["order"] == "C"
    assert "stored_bytes" not in s  # listing the store only when asked
    text = engine.format_summary(s)
    assert "6 x 7" in text and "NaN" in text and "168 B" in text and "y, x" in text
    group = engine.summary(zarrfs.open(str(w.root)))
    assert group["kind"] == "group" and group["path"] == "/"
    assert group["members"] == [
        {
            "name": "array",
            "kind": "array",
            "shape": [6, 7],
            "dtype": "float32",
            "data_type": "float32",
        }
    ]


def test_stored_size_and_ratio(zarr_writer):
    data = np.zeros((64, 64), dtype="u2")
    data[::2] = 7  # compresses very well
    w = zarr_writer(data, chunks=(32, 32))
    arr = zarrfs.open(str(w.root))["array"]
    s = engine.summary(arr, stored_size=True)
    stored = sum(f.stat().st_size for f in (w.location / "c").rglob("*") if f.is_file())
    assert s["stored_bytes"] == stored
    assert s["compression_ratio"] == round(data.nbytes / stored, 2) and s["compression_ratio"] > 5
    assert "compression" in engine.format_summary(s)


def test_v2_codecs_and_fill(zarr_writer):
    import numcodecs

    data = np.arange(30, dtype=">i4").reshape(5, 6)
    w = zarr_writer(
        data,
        zarr_format=2,
        chunks=(2, 6),
        fill_value=-5,
        compressors=numcodecs.Blosc(cname="lz4", clevel=3, shuffle=1),
    )
    s = engine.summary(zarrfs.open(str(w.location)))
    assert s["zarr_format"] == 2 and s["fill_value"] == -5 and s["nchunks"] == 3
    names = [c["name"] for c in s["codecs"]]
    assert names[-1] == "blosc" and s["codecs"][-1]["configuration"]["cname"] == "lz4"
    text = engine.format_summary(s)
    assert "Zarr v2" in text and "blosc(" in text and "cname=lz4" in text


def test_json_friendly_for_every_demo_node():
    """Strings, records, 0-d, sharded, OME: every summary survives json.dumps and is stable."""
    root = zarrfs.open(str(RESOURCES / "demo.zarr"))
    seen = {}
    stack = [root]
    while stack:
        node = stack.pop()
        s = engine.summary(node)
        assert json.loads(json.dumps(s)) == s
        assert engine.format_summary(s) == engine.format_summary(engine.summary(node))
        seen[s["path"]] = s
        if node.kind == "group":
            stack.extend(child for _, child in node.members())
    phantom = seen["/volumes/phantom"]
    assert phantom["shape"] == [64, 256, 256] and phantom["chunks"] == [16, 64, 64]
    assert phantom["shards"] == [32, 128, 128] and phantom["nchunks"] == 64
    assert phantom["nbytes"] == 64 * 256 * 256 * 2
    assert seen["/tables/answer"]["shape"] == [] and seen["/tables/answer"]["nchunks"] == 1
    assert seen["/tables/names"]["nbytes"] is None and seen["/tables/names"]["fill_value"] == ""
    assert seen["/tables/records"]["dtype"].startswith("[(") and isinstance(
        seen["/tables/records"]["fill_value"], str
    )  # base64 of the raw bytes
    assert seen["/tables/profile"]["fill_value"] == "NaN"
    cells = seen["/images/cells"]
    (ms,) = cells["multiscales"]
    assert ms["version"] == "0.5" and [d["path"] for d in ms["datasets"]] == ["0", "1", "2", "3"]
    assert [a["unit"] for a in ms["axes"]] == [None, "micrometer", "micrometer"]


def test_format_summary_layout():
    s = engine.summary(zarrfs.open(str(RESOURCES / "demo.zarr" / "volumes" / "phantom")))
    lines = engine.format_summary(s).splitlines()
    keys = {line.split("  ")[0]: line for line in lines if not line.startswith(" ")}
    assert keys["shape"].endswith("64 x 256 x 256")
    assert keys["decoded size"].endswith("8.0 MiB") and keys["shards"].endswith("32 x 128 x 128")
    assert "sharding_indexed(inner chunks [16, 64, 64]" in keys["codecs"]
    assert "zstd(level=5" in keys["codecs"]
    column = {line.index(line.split("  ", 1)[1].lstrip()) for line in keys.values()}
    assert len(column) == 1  # values aligned in one column


def test_group_text_lists_members_and_ome():
    text = engine.format_summary(
        engine.summary(zarrfs.open(str(RESOURCES / "demo.zarr" / "images" / "cells")))
    )
    assert "0  2 x 512 x 512 uint8" in text and "3  2 x 64 x 64 uint8" in text
    tables = engine.format_summary(
        engine.summary(zarrfs.open(str(RESOURCES / "demo.zarr" / "tables")))
    )
    assert "names  16 string" in tables and "answer  () (0-d) int64" in tables
    assert "OME-Zarr" in text and "y (micrometer)" in text and "levels 0, 1, 2, 3" in text


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (int(12.5 * 2**20), "12.5 MiB"),
        (3 * 2**40, "3.0 TiB"),
        (None, "unknown"),
    ],
)
def test_human_size(n, text):
    assert engine.human_size(n) == text
