"""Blosc1 chunks decoded by c-blosc itself, straight into a buffer, with no Python around it.

numcodecs' ``blosc.decompress(src, dest)`` runs about 10 µs of Python a call before c-blosc
does (``ensure_contiguous_ndarray`` on the destination, ``multiprocessing.current_process()``
and ``threading.current_thread()`` to choose blosc's global context or one of its own): on a
32 KiB chunk, a third of the codec's time, all of it holding the GIL. The c-blosc numcodecs
ships (in its extension module, or a libblosc it links) exports ``blosc_decompress_ctx``;
called through ctypes, which lets go of the GIL for the call, it decodes with a context of its
own and one thread, as numcodecs does off the main thread. Where the symbol cannot be found, or
the destination is not writable and contiguous, numcodecs decodes.

The caller has checked the header (``frame_headers.blosc_nbytes``: the compressed size it
states is the buffer's, the decoded size it states is the destination's); c-blosc refuses a
destination smaller than the header's decoded size, and writes nothing past it.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable

import numcodecs.blosc
import numpy as np

from .frame_headers import BLOSC_HEADER as _HEADER

log = logging.getLogger(__name__)


def _load():
    """c-blosc's ``blosc_decompress_ctx`` as numcodecs ships it, or None."""
    try:
        function = ctypes.CDLL(numcodecs.blosc.__file__).blosc_decompress_ctx
    except (OSError, AttributeError) as exc:  # a numcodecs built otherwise: its own call
        log.debug("c-blosc's blosc_decompress_ctx not found (%s); numcodecs decodes", exc)
        return None
    function.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    function.restype = ctypes.c_int
    return function


_decompress_ctx = _load()


_address = ctypes.addressof
_char_at = ctypes.c_char.from_buffer  # refuses a read-only or non-contiguous buffer
_cast = ctypes.cast


def decompress_into(data, dest: np.ndarray) -> None:
    """Decode the Blosc1 frame ``data`` (checked by the caller) into ``dest``, a writable,
    C-contiguous array of exactly its decoded size."""
    if _decompress_ctx is not None:
        try:  # (an address through ctypes' view: numpy's ``.ctypes.data`` costs 2 µs)
            at = _address(_char_at(dest))
        except (TypeError, ValueError, BufferError):
            at = None
        if at is not None:
            done = _decompress_ctx(_source(data), at, dest.nbytes, 1)
            if done != dest.nbytes:
                raise RuntimeError(f"error during blosc decompression: {done}")
            return
    numcodecs.blosc.decompress(data, dest)  # (numcodecs checks the destination itself)


def decoder_into(dest: np.ndarray, checked: Callable[[object, int, int], None]) -> Callable | None:
    """A function ``decode(body, start, stop)`` decoding the Blosc1 chunk ``body[start:stop]``
    into ``dest`` (writable, C-contiguous), for a task's many chunks: the destination's
    address found once, the header checked inline (the stored length and the decoded size it
    states both exactly as expected, as :func:`frame_headers.blosc_nbytes` checks them), the
    chunk read where it lies in ``body`` (a shard's range: its address found once per body),
    no Python call between it and c-blosc. Anything else (a body that is not bytes, a header
    that says otherwise, c-blosc refusing) goes to ``checked``, which decodes it the careful
    way or raises the named error. None where c-blosc cannot be called so."""
    if _decompress_ctx is None:
        return None
    try:
        at = _address(_char_at(dest))  # type: ignore[arg-type]  # (an ndarray is a buffer)
    except (TypeError, ValueError, BufferError):
        return None
    nbytes, ctx, header = dest.nbytes, _decompress_ctx, _HEADER.unpack_from
    last: list = [None, 0]  # the last body read at an offset, and its address

    def decode(data, start: int, stop: int, _keep=dest) -> None:  # (``at`` is dest's memory)
        if type(data) is bytes and stop - start >= 16:
            stated, stored = header(data, start)
            if stated == nbytes and stored == stop - start:
                if start == 0:
                    src = data
                else:
                    if last[0] is not data:
                        last[:] = data, _cast(data, ctypes.c_void_p).value  # type: ignore[arg-type]
                    src = last[1] + start
                if ctx(src, at, nbytes, 1) == nbytes:
                    return
        checked(data, start, stop)

    return decode


def _source(data):
    """What c-blosc reads ``data`` from: bytes as they are; another buffer (obstore's bodies
    are read-only memoryviews) by its address, with no copy; a non-contiguous one copied."""
    if type(data) is bytes:
        return data
    try:
        return np.frombuffer(data, dtype=np.uint8).ctypes.data_as(ctypes.c_void_p)
    except (TypeError, ValueError, BufferError):
        return bytes(data)
