"""Shards of tiny inner chunks (issue 19): planning a read costs what the shard index holds, not
what the shard's shape counts. Shards are written by a generator here (index all "missing" but
for a few inner chunks), checked against zarr-python where zarr-python can read them in time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrfs
import zarrfs.engine as engine
from zarrfs.engine import fetch_sharded

FILL = 7
EMPTY = 2**64 - 1


def write_sparse(
    root: Path, shape: tuple[int, int], stored: dict, index_bytes: bytes | None = None
):
    """A v3 uint8 array of one shard of 1x1 inner chunks (raw bytes, index at the end, no
    checksum) holding ``stored`` ({(row, col): value}); or a shard of ``index_bytes`` only."""
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": FILL,
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [1, 1],
                    "codecs": [{"name": "bytes"}],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                    "index_location": "end",
                },
            }
        ],
        "attributes": {},
    }
    root.mkdir(parents=True)
    (root / "zarr.json").write_text(json.dumps(meta))
    if index_bytes is None:
        index = np.full((*shape, 2), EMPTY, dtype="<u8")
        body = bytearray()
        for (r, c), value in sorted(stored.items()):
            index[r, c] = (len(body), 1)
            body.append(value)
        index_bytes = bytes(body) + index.tobytes()
    (root / "c" / "0").mkdir(parents=True)
    (root / "c" / "0" / "0").write_bytes(index_bytes)


def expected(shape, stored) -> np.ndarray:
    out = np.full(shape, FILL, dtype="u1")
    for (r, c), value in stored.items():
        out[r, c] = value
    return out


STORED = {(0, 0): 1, (3, 5): 2, (40, 17): 3, (63, 63): 4, (10, 60): 5}
SELECTIONS = [
    (...,),
    (slice(2, 50), slice(4, 61)),
    (slice(None, None, 3), slice(1, None, 2)),
    (slice(None, None, -1), slice(60, 2, -7)),
    (3, slice(None)),
    (slice(None), 17),
    (40, 17),
]


@pytest.mark.usefixtures("python_pipeline")  # its own mechanics: counters, cache
@pytest.mark.parametrize("selection", SELECTIONS, ids=str)
def test_shard_planned_from_its_index_reads_as_zarr_python(tmp_path, monkeypatch, selection):
    """Inner chunks planned from the index (forced for a small shard) read exactly what
    zarr-python reads, for every kind of selection."""
    shape = (64, 64)
    write_sparse(tmp_path / "a", shape, STORED)
    monkeypatch.setattr(fetch_sharded, "_PLAN_INNER_LIMIT", 0)
    engine.clear_caches()
    engine.reset_stats()
    arr = zarrfs.open(str(tmp_path / "a"))
    oracle = zarr.open_array(str(tmp_path / "a"), mode="r")
    got = arr[selection]
    np.testing.assert_array_equal(got, oracle[...][selection])  # (no negative steps there)
    np.testing.assert_array_equal(got, expected(shape, STORED)[selection])
    touched = np.zeros(shape, bool)
    touched[selection] = True
    assert engine.stats()["chunks_decoded"] == sum(touched[k] for k in STORED)


#: run in a child under a memory cap: the whole read of a 1024 x 2048 shard of 1x1 chunks
CAPPED = """
import resource, sys, numpy as np, zarrfs, zarrfs.engine as engine
resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))
arr = zarrfs.open(sys.argv[1])
try:
    out = arr[...]
except engine.ChunkDecodeError as error:
    print("ChunkDecodeError", error.key, error.message)
else:
    print("read", int(np.count_nonzero(out != 7)), int(out.sum()), engine.stats()["chunks_decoded"])
"""


def _capped(root: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CAPPED, str(root)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_64_byte_shard_of_tiny_chunks_fails_at_once_in_little_memory(tmp_path):
    """2 MB of 1x1 inner chunks whose shard is 64 bytes: one clear error for the shard, not
    two million planned chunks (that took 30 s and ran out of memory before)."""
    write_sparse(tmp_path / "a", (1024, 2048), {}, index_bytes=bytes(64))
    out = _capped(tmp_path / "a")
    assert out.startswith("ChunkDecodeError c/0/0 shard index of 'c/0/0'"), out
    assert "64 bytes" in out


def test_a_sparse_shard_of_tiny_chunks_reads_what_its_index_holds(tmp_path):
    stored = {(0, 0): 1, (511, 1024): 2, (1023, 2047): 3}
    write_sparse(tmp_path / "a", (1024, 2048), stored)
    out = _capped(tmp_path / "a")
    total = 1024 * 2048 * FILL + sum(v - FILL for v in stored.values())
    assert out == f"read 3 {total} 3", out
