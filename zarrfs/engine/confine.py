"""Keys stay inside their store, and local files are read inside their store's root.

A store is a tree someone else wrote, and a mount often runs as root with ``allow_other``: a
chunk that is a symlink to ``/etc/shadow``, or a consolidated entry named ``../outside/.zarray``,
must not make zarrfs read (and serve to every user) a file outside the store. Two checks:

- every key is made of ordinary names: no empty, ``.`` or ``..`` component, no NUL (all stores);
- a local file is opened relative to the store's root with ``openat2(RESOLVE_BENEATH)``, so the
  kernel itself refuses any resolution (a symlink, however placed or swapped) that leaves the
  root, at the cost of no extra system call. Where ``openat2`` is missing (Linux before 5.6,
  a seccomp filter), the path the kernel opened (``/proc/self/fd``) is checked instead.

A user who trusts the store opts out with ``open(url, follow_symlinks=True)`` (on the command
line ``-O follow_symlinks=true``, in a mount ``-o follow_symlinks``).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import sys
import threading
from collections.abc import Callable

_OPENAT2 = 437  # the same number on every architecture (the generic syscall table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_BENEATH = 0x02, 0x08
#: O_NONBLOCK: a FIFO (or a device) where a file should be is never waited for
_OPEN_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


class OutsideRoot(Exception):  # noqa: N818 - the store words it as a StoreError
    """A local path resolved outside the store's root."""


_ESCAPES = (
    "it resolves (through a symlink) to a {} outside the store's root, which zarrfs does not "
    "read unless the storage option follow_symlinks=true is given"
)


def bad_key_reason(key: str) -> str | None:
    """Why ``key`` cannot name an object inside a store, or None when it can."""
    if "\0" in key:
        return "it holds a NUL byte"
    padded = f"/{key}/"  # (substring tests: a chunk key is checked on every read)
    if "//" in padded or "/./" in padded or "/../" in padded:
        return "it has an empty, '.' or '..' component"
    return None


class Root:
    """A store's resolved root, and a descriptor of it (opened on first use, closed with the
    object) that files are opened under."""

    def __init__(self, root: str):
        self.path = os.path.realpath(root or ".")
        self._fd: int | None = None
        self._lock = threading.Lock()

    def fd(self) -> int:
        if self._fd is not None:  # (once open, it stays open: no lock on every read)
            return self._fd
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            return self._fd

    def __del__(self, _close=os.close):  # (bound now: at exit, ``os`` may be gone already)
        if self._fd is not None:
            _close(self._fd)

    def __repr__(self) -> str:
        return f"Root({self.path!r})"


def is_below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _openat2_call() -> tuple[Callable[..., int], object, int] | None:
    """What ``openat2(dirfd, path, RESOLVE_BENEATH)`` for reading is called with:
    ``syscall(_OPENAT2, dirfd, path, how, how_size)`` gives the descriptor, or -1 with
    ``ctypes.get_errno()``; None where the kernel (or a seccomp filter) does not offer it."""
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    how = _OpenHow(_OPEN_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    how_ref, how_size = ctypes.byref(how), ctypes.sizeof(how)  # (made once, not per open)
    root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = syscall(_OPENAT2, root, b".", how_ref, how_size)
    finally:
        os.close(root)
    if fd < 0:
        return None
    os.close(fd)
    return syscall, how_ref, how_size


def has_openat2() -> bool:
    """Whether files can be opened below a root with ``openat2(RESOLVE_BENEATH)`` here."""
    return _openat2_call() is not None


def _errno_error() -> OSError:
    code = ctypes.get_errno()
    return OSError(code, os.strerror(code))


@functools.cache
def _openat2() -> Callable[[int, bytes], int] | None:
    """``openat2(dirfd, path, RESOLVE_BENEATH)`` for reading, or None where it is missing."""
    call = _openat2_call()
    if call is None:
        return None
    syscall, how_ref, how_size = call

    def openat2(dirfd: int, path: bytes) -> int:
        fd = syscall(_OPENAT2, dirfd, path, how_ref, how_size)
        if fd < 0:
            raise _errno_error()
        return fd

    return openat2


def open_below(root: Root, key: str) -> int:
    """A descriptor of ``key`` opened for reading under ``root``; OutsideRoot where it resolves
    outside, FileNotFoundError where it does not exist."""
    openat2 = _openat2()
    if openat2 is not None:
        try:
            return openat2(root.fd(), key.encode(_FS_ENCODING, _FS_ERRORS))  # as os.fsencode
        except OSError as exc:
            if exc.errno == errno.EXDEV:  # the resolution left the root
                raise OutsideRoot(_ESCAPES.format("file")) from None
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(exc.errno, exc.strerror, key) from None
            raise
    fd = os.open(os.path.join(root.path, key), _OPEN_FLAGS)
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: resolve the name (racy, but the best there is)
        where = os.path.realpath(os.path.join(root.path, key))
    if not is_below(where, root.path):
        os.close(fd)
        raise OutsideRoot(_ESCAPES.format("file"))
    return fd


class NotWhole(Exception):  # noqa: N818 - never leaves the engine: the caller reads again
    """A file read in one ``pread`` filled it: it may hold more (read it the careful way)."""


def whole_file_reader(root: Root | None, expect: int) -> Callable[[bytes], bytes] | None:
    """:func:`read_local`'s common case for a task's many files, each opened, read in one
    ``pread`` and closed with no Python call between those system calls: ``read(path)``,
    ``path`` the file's bytes (below ``root`` through ``openat2`` when given, as
    :func:`open_below`; else as they are). Anything else raises (FileNotFoundError where the
    file does not exist, :class:`NotWhole` where it may be longer than ``expect``, OSError),
    and the caller reads that file the careful way, which says why. None where ``openat2``
    is missing or ``expect`` is not a size read in one call."""
    if not 0 < expect <= _ONE_CALL:
        return None
    pread, close = os.pread, os.close
    extra: tuple = ()
    if root is None:
        open_fd = functools.partial(os.open, flags=_OPEN_FLAGS)
    else:  # openat2 called through C-level partial: no Python call before the system call
        call = _openat2_call()
        if call is None:
            return None
        syscall, how_ref, how_size = call
        open_fd, extra = functools.partial(syscall, _OPENAT2, root.fd()), (how_ref, how_size)

    def read(path: bytes) -> bytes:
        fd = open_fd(path, *extra)
        if fd < 0:  # (openat2's failure: -1 and errno)
            raise _errno_error()
        try:
            data = pread(fd, expect, 0)
        finally:
            close(fd)
        if len(data) < expect:
            return data
        raise NotWhole

    return read


def check_listed(path: str, root: Root) -> None:
    """Raise OutsideRoot unless the directory ``path`` resolves under ``root``."""
    if not is_below(os.path.realpath(path), root.path):
        raise OutsideRoot(_ESCAPES.format("directory"))


#: the most bytes read_local allocates for a read before it knows the file's size
_ONE_CALL = 4 << 20


def read_local(
    path: str,
    start: int | None = None,
    end: int | None = None,
    fd: int | None = None,
    expect: int = 0,
) -> bytes:
    """A local file or a range of it (as :class:`ByteRequest` says), in three system calls
    where it can: open, one ``pread``, close (``fd``, already open, is read and closed
    instead of ``path``). The kernel stops a bounded range at the file's end; a whole file
    is read in one ``pread`` of ``expect`` bytes (its likely size at most, a chunk's decoded
    size, say): a regular file reads short only at its end. A longer file, a suffix range,
    no ``expect``, or more than :data:`_ONE_CALL` bytes (a buffer that large is not
    allocated on a guess) asks ``fstat`` for the size first.

    Each system call hands the GIL to another thread. ``builtins.open`` and ``read()`` make
    eight (an isatty check, lseeks, a second read to find the end), and two threads decoding
    32 KiB chunks spent their time handing the GIL back and forth: reading and decoding a
    plane of 256 such chunks took 9.1-10.3 ms on two threads against 11 on one, and 7.3-7.6
    with four calls. fsspec's ``cat_file`` makes as many as open(), and more Python."""
    if fd is None:
        fd = os.open(path, _OPEN_FLAGS)
    try:
        data = b""
        if start is not None and 0 <= start and end is not None and end - start <= _ONE_CALL:
            begin, stop = start, max(start, end)
        elif start is None and 0 < expect <= _ONE_CALL:
            data = os.pread(fd, expect, 0)
            if len(data) < expect:
                return data
            begin, stop = 0, os.fstat(fd).st_size  # longer than expected: the rest follows
        else:
            size = os.fstat(fd).st_size
            if start is None:
                begin, stop = 0, size
            elif start < 0:
                begin, stop = max(0, size + start), size
            else:
                begin, stop = min(start, size), size if end is None else min(max(start, end), size)
        while len(data) < stop - begin:  # (a single read stops at 2 GiB)
            more = os.pread(fd, stop - begin - len(data), begin + len(data))
            if not more:  # the end of the file (or it shrank meanwhile: the caller checks)
                break
            data += more
        return data
    except OSError as exc:
        if exc.errno == errno.ESPIPE:  # (pread on a FIFO or a socket, opened O_NONBLOCK)
            raise OSError(exc.errno, "not a regular file (a FIFO or a socket)") from None
        raise
    finally:
        os.close(fd)
