"""An uncompressed single-image TIFF laid out from metadata alone.

TIFF 6.0 (baseline, sections 2 and 7-8) and BigTIFF: the file is ``header + IFD + strip tables +
padding`` followed by the plane's C-order pixels in native byte order, one sample per pixel,
``RowsPerStrip`` rows per strip (about 256 KiB each, so GDAL/QGIS get small blocks). The prefix is
computed here byte for byte, so the file size is exact and any byte range maps to a pixel range.
BigTIFF (magic 43, 8-byte offsets) is used only when the file would pass 4 GiB. Big-endian arrays
arrive native from the engine, so the header's byte order is the machine's.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

import numpy as np

_SHORT, _LONG, _LONG8 = 3, 4, 16
_FORMATS = {_SHORT: "H", _LONG: "I", _LONG8: "Q"}
_UINT, _INT, _FLOAT, _COMPLEX = 1, 2, 3, 6
_TARGET_STRIP_BYTES = 256 << 10
_DATA_ALIGNMENT = 16
_CLASSIC_LIMIT = (1 << 32) - 1
#: TIFF states width and height as LONG (32 bits)
_MAX_SIDE = (1 << 32) - 1
#: the most strips a file is laid out with: its tables (8 bytes per strip and table, two
#: tables) are held in memory and served as the file's first bytes. 2**18 strips of 256 KiB
#: cover 64 GiB; larger planes are not offered as TIFF.
MAX_STRIPS = 1 << 18

#: NumPy kind -> TIFF SampleFormat. bool is served as 8-bit unsigned 0/1.
_SAMPLE_FORMATS = {"b": _UINT, "u": _UINT, "i": _INT, "f": _FLOAT, "c": _COMPLEX}


def supports_tiff(dtype: np.dtype, shape: tuple[int, int]) -> bool:
    """Plain numeric dtypes with a non-empty plane whose sides fit TIFF's 32-bit fields and
    whose strip tables stay within :data:`MAX_STRIPS`; no strings, structs, datetimes."""
    if dtype.kind not in _SAMPLE_FORMATS or dtype.fields or min(shape) <= 0:
        return False
    height, width = shape
    return max(height, width) <= _MAX_SIDE and _strips(dtype, height, width)[1] <= MAX_STRIPS


def _strips(dtype: np.dtype, height: int, width: int, samples: int = 1) -> tuple[int, int]:
    """(rows per strip, strip count) for strips of about 256 KiB."""
    row_bytes = width * dtype.itemsize * samples
    rows_per_strip = max(1, min(height, _TARGET_STRIP_BYTES // row_bytes))
    return rows_per_strip, -(-height // rows_per_strip)


@dataclass(frozen=True)
class TiffLayout:
    """The computed prefix of the file and where the pixels start."""

    prefix: bytes  # header, IFD, strip tables, zero padding: exactly ``data_offset`` bytes
    data_offset: int
    data_size: int
    bigtiff: bool

    @property
    def size(self) -> int:
        return self.data_offset + self.data_size


def tiff_layout(dtype: np.dtype, shape: tuple[int, int], samples: int = 1) -> TiffLayout:
    """Lay out a TIFF of one ``shape`` plane of ``dtype`` (native byte order); ``samples=3``:
    an RGB image, its samples interleaved per pixel (``-o composite``)."""
    if not supports_tiff(dtype, shape) or samples not in (1, 3):
        raise ValueError(f"no TIFF for dtype {dtype}, shape {shape} and {samples} samples")
    height, width = shape
    data_size = height * width * dtype.itemsize * samples
    rows_per_strip, strip_count = _strips(dtype, height, width, samples)
    # classic TIFF's prefix is under 256 bytes plus 8 per strip: decide before laying out
    bigtiff = data_size + 256 + 8 * strip_count > _CLASSIC_LIMIT
    return _build(dtype, width, height, rows_per_strip, strip_count, data_size, bigtiff, samples)


def _build(
    dtype, width, height, rows_per_strip, strip_count, data_size, bigtiff, samples
) -> TiffLayout:
    order = "<" if sys.byteorder == "little" else ">"
    offset_type, offset_format = (_LONG8, "Q") if bigtiff else (_LONG, "I")
    inline_bytes = 8 if bigtiff else 4
    entry_size, count_format = (20, "Q") if bigtiff else (12, "H")
    header_size = 16 if bigtiff else 8
    tag_count = 11
    ifd_size = struct.calcsize(order + count_format) + tag_count * entry_size + inline_bytes
    tables_at = header_size + ifd_size
    table_bytes = strip_count * struct.calcsize(offset_format)
    needs_tables = table_bytes > inline_bytes
    tables_size = 2 * table_bytes if needs_tables else 0
    # per-sample values (BitsPerSample, SampleFormat) longer than a value field go after the
    # tables, one short per sample
    per_sample = struct.calcsize("H") * samples
    outside = per_sample > inline_bytes
    bits_at = tables_at + tables_size
    formats_at = bits_at + per_sample
    extras_size = 2 * per_sample if outside else 0
    data_offset = -(-(tables_at + tables_size + extras_size) // _DATA_ALIGNMENT) * _DATA_ALIGNMENT
    row_bytes = width * dtype.itemsize * samples
    strip_bytes = rows_per_strip * row_bytes
    offsets = [data_offset + i * strip_bytes for i in range(strip_count)]
    counts = [min(strip_bytes, data_size - i * strip_bytes) for i in range(strip_count)]
    offsets_blob = struct.pack(f"{order}{strip_count}{offset_format}", *offsets)
    counts_blob = struct.pack(f"{order}{strip_count}{offset_format}", *counts)
    bits_blob = struct.pack(f"{order}{samples}H", *[dtype.itemsize * 8] * samples)
    formats_blob = struct.pack(f"{order}{samples}H", *[_SAMPLE_FORMATS[dtype.kind]] * samples)
    entries = [
        (256, _LONG, 1, width),
        (257, _LONG, 1, height),
        (258, _SHORT, samples, bits_at if outside else bits_blob),
        (259, _SHORT, 1, 1),  # no compression
        (262, _SHORT, 1, 1 if samples == 1 else 2),  # BlackIsZero or RGB
        (273, offset_type, strip_count, tables_at if needs_tables else offsets_blob),
        (277, _SHORT, 1, samples),
        (278, _LONG, 1, rows_per_strip),
        (279, offset_type, strip_count, tables_at + table_bytes if needs_tables else counts_blob),
        (284, _SHORT, 1, 1),  # chunky
        (339, _SHORT, samples, formats_at if outside else formats_blob),
    ]
    out = bytearray()
    if bigtiff:
        out += (b"II" if order == "<" else b"MM") + struct.pack(order + "HHHQ", 43, 8, 0, 16)
    else:
        out += (b"II" if order == "<" else b"MM") + struct.pack(order + "HI", 42, 8)
    out += struct.pack(order + count_format, len(entries))
    for tag, kind, count, value in entries:
        out += struct.pack(order + ("HHQ" if bigtiff else "HHI"), tag, kind, count)
        out += _inline_value(order, kind, value, inline_bytes)
    out += bytes(inline_bytes)  # no next IFD
    if needs_tables:
        out += offsets_blob + counts_blob
    if outside:
        out += bits_blob + formats_blob
    out += bytes(data_offset - len(out))
    return TiffLayout(bytes(out), data_offset, data_size, bigtiff)


def _inline_value(order, kind, value, inline_bytes) -> bytes:
    """The value field of an IFD entry: the value (or table offset) left-justified, zero-padded."""
    packed = value if isinstance(value, bytes) else struct.pack(order + _FORMATS[kind], value)
    return packed + bytes(inline_bytes - len(packed))
