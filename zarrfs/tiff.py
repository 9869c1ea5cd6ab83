"""An uncompressed single-image TIFF laid out from metadata alone.

TIFF 6.0 (baseline, sections 2 and 7-8) and BigTIFF: the file is ``header + IFD + strip tables +
tag values + padding`` followed by the plane's C-order pixels in native byte order, one sample
per pixel, ``RowsPerStrip`` rows per strip (about 256 KiB each, so GDAL/QGIS get small blocks).
The prefix is computed here byte for byte, so the file size is exact and any byte range maps to
a pixel range. BigTIFF (magic 43, 8-byte offsets) is used only when the file would pass 4 GiB.
Big-endian arrays arrive native from the engine, so the header's byte order is the machine's.

Extra tags (:class:`Tag`: GeoTIFF, GDAL's metadata and nodata, resolution, a description;
``zarrfs/tiff_meta.py`` says which) come from metadata and coordinates, never from the pixels:
the mount (``zarrfs/fuse``) and ``zarrfs get`` write the same files with them.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

import numpy as np

BYTE, ASCII, SHORT, LONG, RATIONAL, DOUBLE, LONG8 = 1, 2, 3, 4, 5, 12, 16
_FORMATS = {BYTE: "B", SHORT: "H", LONG: "I", RATIONAL: "I", DOUBLE: "d", LONG8: "Q"}
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
class Tag:
    """One IFD entry beyond the baseline ones: ``values`` is text (ASCII, NUL added), numbers
    (a RATIONAL as numerator, denominator pairs, flattened) or ``bytes`` already packed in the
    machine's byte order (ImageJ's metadata, packed by tifffile)."""

    code: int
    type: int
    values: str | tuple | bytes

    @property
    def count(self) -> int:
        if isinstance(self.values, str):  # ASCII
            return len(self.values.encode("utf-8")) + 1
        if isinstance(self.values, bytes):
            return len(self.values) // struct.calcsize(_FORMATS[self.type])
        return len(self.values) // (2 if self.type == RATIONAL else 1)

    @property
    def nbytes(self) -> int:
        """The size of the packed value, without packing it."""
        if self.type == ASCII:
            return self.count
        if isinstance(self.values, bytes):
            return len(self.values)
        return len(self.values) * struct.calcsize(_FORMATS[self.type])

    def pack(self, order: str) -> bytes:
        if isinstance(self.values, bytes):
            return self.values
        if isinstance(self.values, str):  # ASCII
            return self.values.encode("utf-8") + b"\0"
        return struct.pack(f"{order}{len(self.values)}{_FORMATS[self.type]}", *self.values)


@dataclass(frozen=True)
class TiffLayout:
    """The computed prefix of the file and where the pixels start."""

    prefix: bytes  # header, IFD, strip tables, tag values, padding: exactly ``data_offset`` bytes
    data_offset: int
    data_size: int
    bigtiff: bool

    @property
    def size(self) -> int:
        return self.data_offset + self.data_size


def tiff_layout(
    dtype: np.dtype, shape: tuple[int, int], samples: int = 1, tags: tuple[Tag, ...] = ()
) -> TiffLayout:
    """Lay out a TIFF of one ``shape`` plane of ``dtype`` (native byte order); ``samples=3``:
    an RGB image, its samples interleaved per pixel (``-o composite``); ``tags``: extra entries
    (codes above the baseline ones, each at most once)."""
    if not supports_tiff(dtype, shape) or samples not in (1, 3):
        raise ValueError(f"no TIFF for dtype {dtype}, shape {shape} and {samples} samples")
    height, width = shape
    data_size = height * width * dtype.itemsize * samples
    rows_per_strip, strip_count = _strips(dtype, height, width, samples)
    extra = sum(t.nbytes + 1 for t in tags)
    # classic TIFF's prefix is under 256 bytes plus 8 per strip and the tags: decide first
    bigtiff = data_size + 512 + 8 * strip_count + extra > _CLASSIC_LIMIT
    strips = (rows_per_strip, strip_count)
    return _build(dtype, width, height, strips, data_size, bigtiff, samples, tags)


def _build(dtype, width, height, strips, data_size, bigtiff, samples, tags) -> TiffLayout:
    order = "<" if sys.byteorder == "little" else ">"
    rows_per_strip, strip_count = strips
    offset_type = LONG8 if bigtiff else LONG
    inline_bytes = 8 if bigtiff else 4
    entry_size, count_format = (20, "Q") if bigtiff else (12, "H")
    header_size = 16 if bigtiff else 8
    row_bytes = width * dtype.itemsize * samples
    strip_bytes = rows_per_strip * row_bytes
    counts = [min(strip_bytes, data_size - i * strip_bytes) for i in range(strip_count)]

    def entries(data_offset: int) -> list[Tag]:
        offsets = tuple(data_offset + i * strip_bytes for i in range(strip_count))
        base = [
            Tag(256, LONG, (width,)),
            Tag(257, LONG, (height,)),
            Tag(258, SHORT, (dtype.itemsize * 8,) * samples),
            Tag(259, SHORT, (1,)),  # no compression
            Tag(262, SHORT, (1 if samples == 1 else 2,)),  # BlackIsZero or RGB
            Tag(273, offset_type, offsets),
            Tag(277, SHORT, (samples,)),
            Tag(278, LONG, (rows_per_strip,)),
            Tag(279, offset_type, tuple(counts)),
            Tag(284, SHORT, (1,)),  # chunky
            Tag(339, SHORT, (_SAMPLE_FORMATS[dtype.kind],) * samples),
        ]
        return sorted(base + list(tags), key=lambda t: t.code)

    ifd_size = struct.calcsize(order + count_format) + (11 + len(tags)) * entry_size
    ifd_size += inline_bytes
    # the values that do not fit an entry follow the IFD, each at an even offset; their sizes
    # do not depend on where the pixels start, so lay out twice: to find it, then with it
    outside_at = header_size + ifd_size
    sizes = [t.nbytes for t in entries(0)]
    end = outside_at + sum(n + n % 2 for n in sizes if n > inline_bytes)
    data_offset = -(-end // _DATA_ALIGNMENT) * _DATA_ALIGNMENT
    out = bytearray()
    if bigtiff:
        out += (b"II" if order == "<" else b"MM") + struct.pack(order + "HHHQ", 43, 8, 0, 16)
    else:
        out += (b"II" if order == "<" else b"MM") + struct.pack(order + "HI", 42, 8)
    final = entries(data_offset)
    out += struct.pack(order + count_format, len(final))
    outside = bytearray()
    for tag in final:
        packed = tag.pack(order)
        out += struct.pack(order + ("HHQ" if bigtiff else "HHI"), tag.code, tag.type, tag.count)
        if len(packed) <= inline_bytes:
            out += packed + bytes(inline_bytes - len(packed))
        else:
            where = outside_at + len(outside)
            out += struct.pack(order + ("Q" if bigtiff else "I"), where)
            outside += packed + bytes(len(packed) % 2)
    out += bytes(inline_bytes)  # no next IFD
    out += outside
    out += bytes(data_offset - len(out))
    return TiffLayout(bytes(out), data_offset, data_size, bigtiff)
