"""The Python pipeline's per-chunk loop for a batch of chunks in compiled code
(``_chunkloop.c``), with the GIL let go once a batch instead of four times a chunk.

Why: two threads decoding 32 KiB chunks in Python each let go of the GIL at every system call
and every codec call (open, read, close, decode: four times a chunk) and take it back after;
the other thread, waiting, is woken each time, and on a virtual machine a wake-up on the
other CPU costs more than the chunk's Python (about 1.5 context switches a chunk measured:
two threads read a plane no faster than one). The compiled loop reads a batch of chunks
(each local file opened below the store's root with ``openat2``, read in one ``pread`` and
closed; or the spans of a shard's bytes), checks each compressor's header, decodes each
with the codec numcodecs ships (c-blosc's ``blosc_decompress_ctx``, zstd's
``ZSTD_decompress``, found in numcodecs' own extension modules: no codec of our own) and
copies each chunk's selected region into the output.

It decides only "done": every other chunk (absent, longer than expected, a header that says
otherwise, a codec that refuses, a selection it does not take) comes back with its outcome,
and the reader reads it again the Python way, which says why (its error, with its context).
So the answers are the Python pipeline's, byte for byte; ``ZARRFS_CHUNKLOOP=0`` (or
:func:`set_enabled`) runs every chunk through Python, the reference.

Without a C compiler at install time the module is not built, and the loop stays in Python.
"""

from __future__ import annotations

import ctypes
import logging
import os

import numcodecs.blosc
import numcodecs.zstd

from .codecs import CodecChain
from .codecs_numcodecs import _CheckedBlosc, _SizedZstd

log = logging.getLogger(__name__)

try:
    from . import _chunkloop  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the loop stays in Python
    _chunkloop = None

#: what ``_chunkloop.run`` reads: whole files by name, spans of bytes read already, or ranges
#: of files by name
FILES, SPANS, RANGES = 0, 1, 2

#: outcomes of a chunk other than done (a size >= 0) and -errno, as ``_chunkloop.c`` has them
NOT_WHOLE, HEADER, DECODE, SELECTION, SOURCE = -1000, -1001, -1002, -1003, -1004

_BLOSC, _ZSTD = 1, 2

#: the most dimensions a chunk the loop takes may have (``ZF_MAXDIM``): more stay in Python
MAX_DIMS = 32

_enabled = os.environ.get("ZARRFS_CHUNKLOOP", "1").strip().lower() not in (
    "0",
    "false",
    "no",
    "off",
)


def set_enabled(on: bool) -> None:
    """Turn the compiled loop on or off for the arrays opened from now on (off: every chunk
    decoded by the Python loop, the reference)."""
    global _enabled
    _enabled = bool(on)


def built() -> bool:
    """Whether the compiled loop was built (a C compiler at install time)."""
    return _chunkloop is not None


def available() -> bool:
    """Whether the compiled loop was built and is on."""
    return _chunkloop is not None and _enabled


def _address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value or 0


def _functions() -> dict[int, tuple]:
    """The codecs' C functions by kind, as addresses; a kind whose functions numcodecs does
    not export is missing (its chunks stay on the Python loop)."""
    found: dict[int, tuple] = {}
    try:
        blosc = ctypes.CDLL(numcodecs.blosc.__file__)
        found[_BLOSC] = (_BLOSC, _address(blosc.blosc_decompress_ctx))
    except (OSError, AttributeError) as exc:
        log.debug("c-blosc's functions not found (%s): blosc chunks decode in Python", exc)
    try:
        zstd = ctypes.CDLL(numcodecs.zstd.__file__)
        found[_ZSTD] = (
            _ZSTD,
            _address(zstd.ZSTD_decompress),
            _address(zstd.ZSTD_getFrameContentSize),
            _address(zstd.ZSTD_findFrameCompressedSize),
        )
    except (OSError, AttributeError) as exc:
        log.debug("zstd's functions not found (%s): zstd chunks decode in Python", exc)
    return found


_FUNCTIONS = _functions() if _chunkloop is not None else {}


def codec(chain: CodecChain, ndim: int) -> tuple | None:
    """What the compiled loop decodes ``chain``'s chunks of ``ndim`` dimensions with (a
    direct chain of one Blosc1 or zstd compressor, at most :data:`MAX_DIMS` dimensions), or
    None: the loop is off or not built, or the chain or the chunks are others."""
    if not available() or not chain.direct or len(chain.bytes_bytes) != 1 or ndim > MAX_DIMS:
        return None
    compressor = chain.bytes_bytes[0]
    if isinstance(compressor, _CheckedBlosc):
        return _FUNCTIONS.get(_BLOSC)
    if isinstance(compressor, _SizedZstd):
        return _FUNCTIONS.get(_ZSTD)
    return None


def run(
    targets, sources, mode, spec, scratch, chunk_shape, itemsize, dirfd=-1, expect=0, owns=None
):
    """Read, decode and place a batch (``_chunkloop.c``'s ``run``): each chunk's stored size
    when done, else its outcome (< 0). ``owns``: for each chunk None, or the array of its own
    a chunk to keep is decoded into."""
    return _chunkloop.run(  # type: ignore[union-attr]
        targets, sources, mode, spec, scratch, chunk_shape, itemsize, dirfd, expect, owns
    )
