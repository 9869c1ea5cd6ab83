"""Decompression that stops at the size a chunk can have (decompression bombs).

A few kilobytes of zstd, bz2 or gzip can expand to gigabytes. Every compressor here decodes at
most ``limit + 1`` bytes, the one extra byte telling a stream that holds more than the chunk can
from one that fills it exactly, and raises :class:`ChunkDecodeError` past the limit without
decoding further. Streams are run through the standard library's incremental decompressors
(``max_length``) and zstandard's streaming reader; blosc and lz4 state their decoded size in a
header, which is checked before anything is allocated. Codecs that cannot produce more bytes
than they are given (checksums, shuffles) need no bound; any other numcodecs codec is decoded by
numcodecs and its output size checked afterwards.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable

import numcodecs
import numpy as np
import zstandard
from numcodecs.compat import ensure_contiguous_ndarray

from .errors import ChunkDecodeError
from .frame_headers import blosc_nbytes, lz4_nbytes, zstd_content_size

#: zstd windows up to this size are always accepted (what zstd's levels up to 19 use when the
#: size of what they compress is not known); larger ones only up to the chunk's limit.
_ZSTD_MIN_WINDOW = 8 << 20
#: memory an xz/lzma decoder may use for its dictionary (xz -9 needs 65 MiB)
_LZMA_MEMLIMIT = 128 << 20
#: codecs whose output is never larger than their input, plus a small header
_NOT_EXPANDING = frozenset(
    {"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3", "shuffle", "bitround"}
)


def too_large(codec: str, limit: int) -> ChunkDecodeError:
    return ChunkDecodeError(
        f"chunk decodes to more than the {limit} bytes it can hold: corrupt, or a "
        "decompression bomb; nothing past that size was decoded",
        codec=codec,
    )


def check_stated(codec: str, stated: int, limit: int) -> None:
    """Refuse a header's decoded size larger than the chunk before anything is allocated."""
    if stated > limit:
        raise ChunkDecodeError(
            f"chunk header says it decodes to {stated} bytes, more than the {limit} it can hold "
            "(corrupt, or a decompression bomb); nothing was decoded",
            codec=codec,
        )


def _streams(
    codec: str, data, limit: int, new: Callable[[], object], *, concatenated: bool = True
) -> bytes:
    """Run a standard-library decompressor, and a fresh one per concatenated stream (gzip
    members, bz2 and xz streams), until the input ends or ``limit + 1`` bytes are out. Without
    ``concatenated`` (zlib, as ``zlib.decompress``), bytes after the stream are ignored."""
    view = memoryview(ensure_contiguous_ndarray(data)).cast("B")
    parts: list[bytes] = []
    total = 0
    while True:
        dec = new()
        parts.append(dec.decompress(view, limit + 1 - total))
        total += len(parts[-1])
        if total > limit:
            raise too_large(codec, limit)
        if not dec.eof:
            if _stalled(dec):
                raise ChunkDecodeError("compressed stream is truncated", codec=codec)
            raise too_large(codec, limit)  # pragma: no cover - max_length stopped it
        view = memoryview(dec.unused_data)
        if not view or not concatenated:
            return b"".join(parts)


def _stalled(dec) -> bool:
    """Whether a decompressor that has not reached its end ran out of input (truncated), as
    opposed to having stopped at ``max_length``."""
    needs = getattr(dec, "needs_input", None)
    if needs is not None:
        return bool(needs)
    return not dec.unconsumed_tail  # zlib


def _zlib(impl, data, limit):
    return _streams(
        "zlib", data, limit, lambda: zlib.decompressobj(zlib.MAX_WBITS), concatenated=False
    )


def _gzip(impl, data, limit):
    return _streams("gzip", data, limit, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))


def _bz2(impl, data, limit):
    return _streams("bz2", data, limit, bz2.BZ2Decompressor)


def _lzma(impl, data, limit):
    fmt, filters = impl.format, impl.filters
    if fmt == lzma.FORMAT_RAW:
        return _streams("lzma", data, limit, lambda: lzma.LZMADecompressor(fmt, None, filters))
    return _streams(
        "lzma", data, limit, lambda: lzma.LZMADecompressor(fmt, _LZMA_MEMLIMIT, filters)
    )


def _zstd(impl, data, limit):
    stated = zstd_content_size(data)
    if stated is not None:
        check_stated("zstd", stated, limit)
        return impl.decode(data)
    window = max(_ZSTD_MIN_WINDOW, 1 << max(10, limit.bit_length()))
    dctx = zstandard.ZstdDecompressor(max_window_size=min(window, 1 << 31))
    out = np.empty(limit + 1, np.uint8)
    got = 0
    try:
        with dctx.stream_reader(
            ensure_contiguous_ndarray(data), read_across_frames=True, closefd=False
        ) as reader:
            while got <= limit:
                n = reader.readinto(memoryview(out)[got:])
                if not n:
                    break
                got += n
    except zstandard.ZstdError as exc:
        raise ChunkDecodeError(f"zstd: {exc}", codec="zstd") from exc
    if got > limit:
        raise too_large("zstd", limit)
    return out[:got]


def _blosc(impl, data, limit):
    check_stated("blosc", blosc_nbytes(data), limit)
    return impl.decode(data)


def _lz4(impl, data, limit):
    check_stated("lz4", lz4_nbytes(ensure_contiguous_ndarray(data)), limit)
    return impl.decode(data)


_BOUNDED: dict[str, Callable] = {
    "zlib": _zlib,
    "gzip": _gzip,
    "bz2": _bz2,
    "lzma": _lzma,
    "zstd": _zstd,
    "blosc": _blosc,
    "lz4": _lz4,
}


def decode(impl: numcodecs.abc.Codec, data, limit: int):
    """``impl.decode(data)``, never producing (or allocating for) more than ``limit`` bytes."""
    codec_id = impl.codec_id
    bounded = _BOUNDED.get(codec_id)
    if bounded is not None:
        return bounded(impl, data, limit)
    out = impl.decode(data)
    if codec_id not in _NOT_EXPANDING:
        nbytes = out.nbytes if hasattr(out, "nbytes") else len(out)
        if nbytes > limit and getattr(out, "dtype", None) != np.dtype(object):
            raise too_large(codec_id, limit)
    return out
