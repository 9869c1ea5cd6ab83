"""Generated file contents whose size depends on the data: JSON, CSV and PNG previews.

These are produced by decoding the whole array (or plane) when the file is opened, so they are
either opt-in (``-o csv``, ``-o png``) or the only sane form of the data (``data.json`` of
variable-length strings/bytes, which have no fixed byte layout). Their ``st_size`` is 0 until the
content has been generated once.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import struct
import zlib

import numpy as np


def json_bytes(values: np.ndarray) -> bytes:
    """Nested JSON lists; ``bytes`` elements become base64 strings (JSON has no bytes)."""

    def convert(item):
        if isinstance(item, bytes | bytearray):
            return base64.b64encode(item).decode("ascii")
        if isinstance(item, np.generic):
            return item.item()
        return item

    data = np.vectorize(convert, otypes=[object])(values) if values.size else values
    return (json.dumps(data.tolist(), ensure_ascii=False, indent=1) + "\n").encode("utf8")


def csv_bytes(values: np.ndarray) -> bytes:
    """One row per line (a 1-D array is one column); floats keep full precision (``repr``)."""
    rows = values.reshape(-1, 1) if values.ndim == 1 else values
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([_csv_cell(item) for item in row])
    return out.getvalue().encode("utf8")


def _csv_cell(item) -> str:
    if isinstance(item, bytes):
        return base64.b64encode(item).decode("ascii")
    if isinstance(item, np.floating | float):
        return repr(float(item))
    return str(item)


def preview_png(plane: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG with automatic contrast (0.5-99.5 percentiles of finite values)."""
    values = np.asarray(plane)
    if values.dtype == bool:
        scaled = values.astype(np.uint8) * 255
    else:
        floats = values.astype(np.float64)
        finite = floats[np.isfinite(floats)]
        low, high = np.percentile(finite, [0.5, 99.5]) if finite.size else (0.0, 1.0)
        if high <= low:
            high = low + 1.0
        normalized = np.clip((floats - low) / (high - low), 0.0, 1.0)
        scaled = np.nan_to_num(normalized * 255.0, nan=0.0).round().astype(np.uint8)
    return _encode_png_gray8(scaled)


def _encode_png_gray8(image: np.ndarray) -> bytes:
    """PNG (ISO/IEC 15948): IHDR, one IDAT of filter-0 rows, IEND."""
    height, width = image.shape
    raw = np.zeros((height, width + 1), np.uint8)
    raw[:, 1:] = image
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)
