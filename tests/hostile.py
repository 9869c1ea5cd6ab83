"""Hostile stores, written by the test suite itself, and a runner that reads them under a memory
cap and a time limit.

Every generator writes a small, valid-looking store whose one chunk or document is the attack:
compressed streams that expand far past their chunk (built from a small stream repeated, as
gzip members, bz2 and xz streams and zstd frames may be), headers that lie about sizes, huge
metadata, deep JSON. ``run_capped`` runs a snippet in a fresh interpreter whose address space is
capped (``resource.setrlimit``) a little above what it uses once warmed up, so any allocation of
the bomb's size fails there instead of passing unnoticed.
"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import zstandard

CHUNK = 4096  #: every hostile array is one chunk of 4096 uint8
EXPANDED = 1 << 30  #: what each repeated-stream bomb expands to


def _repeat(block: bytes, piece: int, total: int = EXPANDED) -> bytes:
    """``block`` (one compressed stream of ``piece`` bytes) repeated to expand to ``total``."""
    return block * (total // piece)


def gzip_bomb() -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = 64 << 20
    return _repeat(c.compress(bytes(piece)) + c.flush(), piece)


def zlib_bomb() -> bytes:
    """One zlib stream (no members to repeat): 128 MiB of zeros."""
    return zlib.compress(bytes(128 << 20), 9)


def bz2_bomb() -> bytes:
    piece = 32 << 20
    return _repeat(bz2.compress(bytes(piece), 9), piece)


def lzma_bomb() -> bytes:
    piece = 64 << 20
    return _repeat(lzma.compress(bytes(piece), preset=1), piece)


def zstd_bomb() -> bytes:
    """zstd frames that state no content size (as a streaming writer leaves them)."""
    piece = 64 << 20
    frame = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(bytes(piece))
    return _repeat(frame, piece, 2 << 30)


def zstd_stated_bomb() -> bytes:
    """One zstd frame that states its 256 MiB content size in its header."""
    return zstandard.ZstdCompressor(level=1).compress(bytes(256 << 20))


def blosc_lying_header() -> bytes:
    """A blosc1 header saying 2 GiB decoded, its compressed size true."""
    body = bytes(64)
    return struct.pack("<BBBBIII", 2, 1, 0x01, 1, (2 << 30) - 1, 1 << 20, 16 + len(body)) + body


def lz4_lying_header() -> bytes:
    """numcodecs' LZ4 framing: a 4-byte decoded size (2 GiB here), then the block."""
    return struct.pack("<I", (2 << 30) - 1) + bytes(64)


#: v2 compressor configuration for each bomb (``filters`` force the general decode path)
BOMBS = {
    "gzip": (gzip_bomb, {"id": "gzip", "level": 1}),
    "zlib": (zlib_bomb, {"id": "zlib", "level": 1}),
    "bz2": (bz2_bomb, {"id": "bz2", "level": 1}),
    "lzma": (lzma_bomb, {"id": "lzma", "format": 1, "check": -1, "preset": None, "filters": None}),
    "zstd": (zstd_bomb, {"id": "zstd", "level": 1}),
    "zstd-stated": (zstd_stated_bomb, {"id": "zstd", "level": 1}),
    "blosc": (blosc_lying_header, {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}),
    "lz4": (lz4_lying_header, {"id": "lz4", "acceleration": 1}),
}


def write_v2_array(root: Path, name: str, chunk: bytes, compressor: dict | None, **extra) -> Path:
    """A v2 uint8 array of one 4096-byte chunk whose stored bytes are ``chunk``."""
    node = root / name
    node.mkdir(parents=True, exist_ok=True)
    meta = {
        "zarr_format": 2,
        "shape": [CHUNK],
        "chunks": [CHUNK],
        "dtype": "|u1",
        "compressor": compressor,
        "fill_value": 0,
        "filters": None,
        "order": "C",
        **extra,
    }
    (node / ".zarray").write_text(json.dumps(meta))
    (node / "0").write_bytes(chunk)
    return node


def write_bomb_store(root: Path, kind: str, *, filtered: bool = False) -> Path:
    """A group holding ``good`` (a readable array of 4096 sevens, zlib) and ``bomb``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    write_v2_array(root, "good", zlib.compress(bytes([7]) * CHUNK), {"id": "zlib", "level": 1})
    make, compressor = BOMBS[kind]
    filters = [{"id": "delta", "dtype": "|u1"}] if filtered else None
    write_v2_array(root, "bomb", make(), compressor, filters=filters)
    return root


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def rss(pid: int) -> int:
    """Resident memory of process ``pid`` (a mount's daemon), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


_PRELUDE = """
import os, resource, sys, time
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
def cap(extra):
    limit = vm() + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
"""


def run_capped(code: str, *, timeout: float = 60, env: dict | None = None) -> str:
    """Run ``code`` (which calls ``cap(extra_bytes)`` once warmed up) in a fresh interpreter;
    its stdout, or AssertionError with its stderr when it fails."""
    full_env = {**os.environ, "MALLOC_ARENA_MAX": "2", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def _zarray(shape, chunks, dtype="|u1", **extra) -> dict:
    return {
        "zarr_format": 2,
        "shape": shape,
        "chunks": chunks,
        "dtype": dtype,
        "compressor": None,
        "fill_value": None,
        "filters": None,
        "order": "C",
        **extra,
    }


def write_hostile_metadata(root: Path) -> Path:
    """A group of nodes whose metadata is the attack, each beside a readable ``good`` array:

    ``huge_attrs`` (a 64 MiB ``.zattrs``), ``deep_codec`` (a codec configuration nested 100,000
    deep), ``deep_attrs`` (attributes nested 200,000 deep), ``void_2g`` (``|V2147483647``),
    ``bytes_1g`` (``|S1000000000``), ``big_chunks`` (chunks of 8 TiB), ``vast``
    (``[10**12, 10**12]`` float64, nothing stored)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    write_v2_array(root, "good", bytes([7]) * CHUNK, None)
    nodes = {
        "huge_attrs": _zarray([4], [4]),
        "deep_codec": None,
        "deep_attrs": _zarray([4], [4]),
        "void_2g": _zarray([4], [1], "|V2147483647"),
        "bytes_1g": _zarray([4], [1], "|S1000000000"),
        "big_chunks": _zarray([1 << 20, 1 << 20], [1 << 20, 1 << 20], "<f8"),
        "vast": _zarray([10**12, 10**12], [1000, 1000], "<f8", fill_value=0),
    }
    for name, doc in nodes.items():
        (root / name).mkdir()
        if doc is not None:
            (root / name / ".zarray").write_text(json.dumps(doc))
    with open(root / "huge_attrs" / ".zattrs", "w") as f:
        f.write('{"x": "' + "a" * (64 << 20) + '"}')
    deep = json.dumps(_zarray([4], [4]))[:-1] + ', "compressor": {"id": "zlib", "x": '
    (root / "deep_codec" / ".zarray").write_text(
        deep.replace('"compressor": null, ', "") + deep_json(100_000) + "}}"
    )
    (root / "deep_attrs" / ".zattrs").write_text('{"a": ' + deep_json(200_000) + "}")
    return root


def write_huge_shapes(root: Path) -> Path:
    """Arrays whose shapes dwarf any listing or file, nothing stored (all fill value):
    ``planes`` (2**40 planes of 2 x 2 uint8), ``rows`` (2**40 rows of 4 uint8: a 4 TiB file,
    too many rows for TIFF strips) and ``rows62`` (2**62 rows of 2 uint8: past any file size)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    for name, shape, chunks in (
        ("planes", [1 << 40, 2, 2], [1, 2, 2]),
        ("rows", [1 << 40, 4], [1 << 20, 4]),
        ("rows62", [1 << 62, 2], [1 << 20, 2]),
    ):
        (root / name).mkdir()
        (root / name / ".zarray").write_text(json.dumps(_zarray(shape, chunks, fill_value=3)))
    return root


#: child names a consolidated ``.zmetadata`` may hold that cannot be a file name
BAD_NAMES = ["", ".", "..", "nul\0z", "x" * 256]


def write_bad_names(root: Path) -> Path:
    """A v2 group whose consolidated metadata names ``good`` (on disk too) and children that
    cannot be a file name, plus ``../outside`` (an array outside the store)."""
    root.mkdir(parents=True, exist_ok=True)
    write_v2_array(root, "good", bytes([7]) * CHUNK, None)
    write_v2_array(root.parent, "outside", bytes([1]) * CHUNK, None)
    array = json.loads((root / "good" / ".zarray").read_text())
    metadata = {".zgroup": {"zarr_format": 2}, "good/.zarray": array}
    for name in [*BAD_NAMES, "../outside"]:
        path = name or "e/"  # "e//.zarray": a child of e with an empty name
        metadata[f"{path}/.zarray"] = array
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    (root / ".zmetadata").write_text(
        json.dumps({"zarr_consolidated_format": 1, "metadata": metadata})
    )
    return root


def write_remote_store(path: Path, seed: int):
    """The fault runs' store: 256 x 4096 float32 in 16 x 512 zstd chunks (128 chunks of 32 KiB)
    written by zarr-python; its data."""
    import numpy as np
    import zarr
    import zarr.codecs as zc

    data = np.random.default_rng(seed).standard_normal((256, 4096)).astype("f4")
    array = zarr.create_array(
        path, shape=data.shape, chunks=(16, 512), dtype="f4", compressors=zc.ZstdCodec()
    )
    array[:] = data
    return data
