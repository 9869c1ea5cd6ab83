"""The one place that imports the FUSE binding.

mfusepy loads libfuse2 when both libfuse2 and libfuse3 are installed unless ``FUSE_LIBRARY_NAME``
says otherwise, so we ask for libfuse3 before importing (a user's own setting wins). fusepy with
libfuse2 is the fallback when mfusepy is missing (fusepy ignores ``FUSE_LIBRARY_NAME``). Nothing else in zarrfs imports a FUSE binding.
"""

from __future__ import annotations

import ctypes
import os
import signal

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")

try:
    import mfusepy as _binding

    BINDING = "mfusepy"
except ImportError:  # pragma: no cover - exercised only where mfusepy is absent
    import fuse as _binding  # type: ignore[no-redef]

    BINDING = "fusepy"

FuseOSError = _binding.FuseOSError
Operations = _binding.Operations
fuse_get_context = _binding.fuse_get_context

#: Major version of the loaded libfuse (2 or 3).
FUSE_MAJOR_VERSION: int = int(getattr(_binding, "fuse_version_major", 2))

_READDIR_PLUS = 1  # libfuse 3: fuse_readdir_flags FUSE_READDIR_PLUS
_FILL_DIR_PLUS = 2  # libfuse 3: fuse_fill_dir_flags FUSE_FILL_DIR_PLUS


class _PlusFUSE(_binding.FUSE):  # type: ignore[misc, valid-type]
    """mfusepy's FUSE, answering the kernel's READDIRPLUS with every entry's attributes, and
    reading straight into libfuse's reply buffer.

    mfusepy hands libfuse names only, so ``ls -l`` costs a LOOKUP per entry after the listing.
    When the operations offer ``readdir_entries(path, start)`` (an iterator of ``(name, attrs
    or None)`` from entry ``start`` on; not a FUSE operation name, so mfusepy does not register
    it), entries go to libfuse with their offsets, which is what makes libfuse's high-level API
    turn attributes into READDIRPLUS entries (with offset 0 it drops them): the kernel then
    caches every entry and its attributes for the entry timeout. A full reply buffer stops the
    listing; the kernel asks again from the last offset.

    mfusepy's ``read`` copies the ``bytes`` an operation returns into libfuse's buffer. When the
    operations offer ``read_into(path, buffer, offset, fh)`` (a writable memoryview of the
    request's size; returns the count written), array bytes are copied once, from where the
    engine decoded them, instead of twice.
    """

    def read(self, path, buf, size, offset, fip):
        read_into = getattr(self.operations, "read_into", None)
        if read_into is None:
            return super().read(path, buf, size, offset, fip)
        buffer = memoryview((ctypes.c_char * size).from_address(ctypes.addressof(buf.contents)))
        decoded = None if path is None else path.decode(self.encoding, self.errors)
        return read_into(
            decoded, buffer.cast("B"), offset, fip.contents if self.raw_fi else fip.contents.fh
        )

    def readdir_fuse_3(self, path, buf, filler, offset, fip, flags):
        entries = getattr(self.operations, "readdir_entries", None)
        if entries is None:
            return super().readdir_fuse_3(path, buf, filler, offset, fip, flags)
        decoded = None if path is None else path.decode(self.encoding, self.errors)
        plus = _FILL_DIR_PLUS if flags & _READDIR_PLUS else 0
        for index, (name, attrs) in enumerate(entries(decoded, offset), start=offset + 1):
            st = None
            if attrs is not None:  # None: the kernel looks this entry up by itself
                st = _binding.c_stat()
                _binding.set_st_attrs(st, attrs, use_ns=self.use_ns)
            fill = plus if st is not None and name not in (".", "..") else 0
            if filler(buf, name.encode(self.encoding, self.errors), st, index, fill) != 0:
                break
        return 0


FUSE = _PlusFUSE if BINDING == "mfusepy" and FUSE_MAJOR_VERSION == 3 else _binding.FUSE


# -- FUSE_NOTIFY_STORE: bytes into the kernel's page cache without a request -------------------
class _FuseBuf(ctypes.Structure):  # fuse_common.h, libfuse 3
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("flags", ctypes.c_int),
        ("mem", ctypes.c_void_p),
        ("fd", ctypes.c_int),
        ("pos", ctypes.c_int64),
        ("spare", ctypes.c_size_t * 2),
    ]  # zeros, in case a newer libfuse appends fields


class _FuseBufvec(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_size_t),
        ("idx", ctypes.c_size_t),
        ("off", ctypes.c_size_t),
        ("buf", _FuseBuf * 1),
    ]


def _store_functions():
    """libfuse 3's ``fuse_get_context``, ``fuse_get_session``, ``fuse_lowlevel_notify_store``
    and ``fuse_exit``, or None (fusepy, libfuse 2)."""
    library = getattr(_binding, "_libfuse", None)
    if BINDING != "mfusepy" or FUSE_MAJOR_VERSION != 3 or library is None:
        return None
    try:  # fresh function objects (indexing): mfusepy's own keep their argument types
        context, session, store, exit_ = (
            library["fuse_get_context"],
            library["fuse_get_session"],
            library["fuse_lowlevel_notify_store"],
            library["fuse_exit"],
        )
    except AttributeError:
        return None
    context.restype = ctypes.POINTER(ctypes.c_void_p)  # its first field: struct fuse *
    session.argtypes, session.restype = (ctypes.c_void_p,), ctypes.c_void_p
    store.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint64,
        ctypes.c_int64,
        ctypes.POINTER(_FuseBufvec),
        ctypes.c_int,
    )
    store.restype = ctypes.c_int
    exit_.argtypes, exit_.restype = (ctypes.c_void_p,), None
    return context, session, store, exit_


_STORE = _store_functions()


def fuse_session() -> int | None:
    """The libfuse session of the mount whose callback is running (call it from one, e.g.
    ``init``); None where the binding cannot store into the page cache."""
    fuse = fuse_handle()
    return _STORE[1](fuse) if fuse else None


def can_exit_loop() -> bool:
    """Whether :func:`fuse_handle` and :func:`exit_loop` work (libfuse 3 through mfusepy)."""
    return _STORE is not None


def fuse_handle() -> int | None:
    """The ``struct fuse`` of the mount whose callback is running (call it from ``init``), for
    :func:`exit_loop`; None with fusepy or libfuse 2."""
    if _STORE is None:
        return None
    context = _STORE[0]()
    return context[0] if context else None


def exit_loop(fuse: int) -> None:
    """Ask libfuse's loop to end (``fuse_exit``): it ends once the main thread wakes."""
    _STORE[3](fuse)


def keep_sigint(keep: bool) -> None:
    """Whether mfusepy's loop leaves SIGINT's handler as it is. mfusepy sets SIGINT to the
    default just before libfuse's loop (Python's default handler could never run there) and
    libfuse then installs its own; kept, a handler of ours stays, and libfuse leaves SIGINT
    alone, as it does any signal with a handler. Only with mfusepy (:func:`can_exit_loop`)."""
    _binding.signal = _signal_keeping_sigint if keep else signal.signal


def _signal_keeping_sigint(number, handler):  # mfusepy's ``signal``, while SIGINT is kept
    if number == signal.SIGINT:
        return signal.getsignal(number)
    return signal.signal(number, handler)


def notify_store(session: int, node_id: int, offset: int, address: int, size: int) -> int:
    """Put ``size`` bytes at ``address`` into the kernel's page cache of the file ``node_id``
    at ``offset`` (FUSE_NOTIFY_STORE); 0, or a negative errno. Pages are marked valid only
    where whole (or ending at the file's end), and the kernel waits for pages a read is filling
    first: never call this from a thread that a FUSE request may be waiting for."""
    vector = _FuseBufvec(count=1)
    vector.buf[0].size = size
    vector.buf[0].mem = address
    return _STORE[2](session, node_id, offset, ctypes.byref(vector), 0)


__all__ = [
    "BINDING",
    "FUSE",
    "FUSE_MAJOR_VERSION",
    "FuseOSError",
    "Operations",
    "fuse_get_context",
    "can_exit_loop",
    "exit_loop",
    "fuse_handle",
    "fuse_session",
    "notify_store",
]
