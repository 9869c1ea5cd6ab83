"""OME-Zarr multiscales (NGFF 0.4 on v2, 0.5 on v3) from the corpus written by ome-zarr-py, and
the summary the CLI and the mount show."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine


def test_ngff_04_and_05(corpus_dir):
    g4 = zarrfs.open(str(corpus_dir / "corpus/ome-zarr/ngff_0.4_cyx_uint16.zarr"))
    (ms,) = engine.multiscales(g4)
    assert ms.axis_names == ("c", "y", "x") and [d.path for d in ms.datasets] == ["s0", "s1", "s2", "s3"]
    assert ms.datasets[1].scale is not None and ms.datasets[1].scale[1] > ms.datasets[0].scale[1]
    g5 = zarrfs.open(str(corpus_dir / "corpus/ome-zarr/ngff_0.5_tczyx_uint8.zarr"))
    (ms5,) = engine.multiscales(g5)
    assert ms5.version == "0.5" and ms5.axis_names == ("t", "c", "z", "y", "x")
    level0 = g5[ms5.datasets[0].path]
    assert engine.axis_names_of_level(g5, ms5.datasets[0].path) == ("t", "c", "z", "y", "x")
    assert level0.ndim == 5


def test_not_ome_and_malformed():
    from zarrfs.engine.ome import parse_multiscales
    assert parse_multiscales({}) == []
    with pytest.raises(engine.MetadataError):
        parse_multiscales({"multiscales": [{"datasets": [{"nopath": 1}]}]})
    with pytest.raises(engine.MetadataError):
        parse_multiscales({"multiscales": {"datasets": []}})


def test_summary_values(zarr_writer):
    data = np.full((6, 7), np.nan, dtype="f4")
    w = zarr_writer(data, chunks=(4, 4), fill_value=np.nan, attributes={"a": [1, 2]},
                    dimension_names=("y", "x"))
    arr = zarrfs.open(str(w.root))["array"]
    s = engine.summary(arr)
    assert s["fill_value"] == "NaN" and s["nchunks"] == 4 and s["chunk_grid"] == [2, 2]
    assert s["nbytes"] == 6 * 7 * 4 and s["dimension_names"] == ["y", "x"]
    text = engine.format_summary(s)
    assert "6 x 7" in text and "NaN" in text and "168 B" in text and "y, x" in text
    group = engine.summary(zarrfs.open(str(w.root)))
    assert group["members"] == [{"name": "array", "kind": "array", "shape": [6, 7],
                                 "dtype": "float32"}]
    assert engine.human_size(3 * 2**20) == "3.0 MiB"
