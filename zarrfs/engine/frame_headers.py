"""Decoded sizes that compressed frames state in their headers, read before decoding: to check
them against a chunk's size before anything is allocated (``bounded``), and to decode straight
into a buffer of that size (``codecs_numcodecs``)."""

from __future__ import annotations

import struct

from .errors import ChunkDecodeError

BLOSC_HEADER = struct.Struct("<4xI4xI")  # Blosc1: decoded size at bytes 4-8, stored at 12-16


def blosc_nbytes(data) -> int:
    """The decoded size from a Blosc1 header, after checking that the buffer is as long as the
    header says: numcodecs does not, and a truncated chunk would decode to wrong values,
    reading past the buffer's end."""
    size = len(data) if type(data) is bytes else memoryview(data).nbytes
    if size < 16:
        raise ChunkDecodeError(
            f"blosc chunk of {size} bytes is shorter than its header", codec="blosc"
        )
    nbytes, cbytes = BLOSC_HEADER.unpack_from(data)
    if cbytes != size:
        raise ChunkDecodeError(
            f"blosc chunk holds {size} bytes, its header says {cbytes}: truncated or corrupt",
            codec="blosc",
        )
    return nbytes


def lz4_nbytes(data) -> int:
    """The decoded size numcodecs' LZ4 writes in a chunk's first four bytes (little-endian)."""
    view = memoryview(data).cast("B")
    if len(view) < 4:
        raise ChunkDecodeError("lz4 chunk is shorter than its header", codec="lz4")
    return int.from_bytes(view[:4], "little")


_ZSTD_MAGIC = 0xFD2FB528


def zstd_content_size(data) -> int | None:
    """The decoded size a Zstandard frame header states (RFC 8878, 3.1.1.1), or None where
    it does not (no content size field, or not a frame: a skippable frame, say)."""
    view = memoryview(data).cast("B")
    if len(view) < 6 or int.from_bytes(view[:4], "little") != _ZSTD_MAGIC:
        return None
    descriptor = view[4]
    single_segment = (descriptor >> 5) & 1
    at = 5 + (1 - single_segment) + (0, 1, 2, 4)[descriptor & 3]  # window, dictionary id
    size = (single_segment, 2, 4, 8)[descriptor >> 6]
    if not size or len(view) < at + size:
        return None
    value = int.from_bytes(view[at : at + size], "little")
    return value + 256 if size == 2 else value
