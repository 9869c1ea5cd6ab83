"""Exceptions -> errno, once, for every FUSE operation.

mfusepy turns any exception that is not an ``OSError`` into EINVAL, which tells a program its
request was malformed; a decorator on every operation translates first, through one table, so the
mount answers ENOENT for names that do not exist, EROFS for writes and EIO for data that cannot be
fetched or decoded (with one log line naming the array and the chunk key), and never EINVAL.

Only the named not-found errors (``NodeNotFoundError``, ``FileNotFoundError``) are ENOENT. A bare
``KeyError`` is a bug, not a missing name: like anything else unexpected it answers EIO and is
logged once, with its traceback, so it never hides as a silent "No such file".
"""

from __future__ import annotations

import errno
import functools
import logging
import threading
import time

import zarrfs.engine as engine

from ._fuselib import FuseOSError

log = logging.getLogger(__name__)


class ReadOnlyError(OSError):
    """Any attempt to change the mount."""

    def __init__(self) -> None:
        super().__init__(errno.EROFS, "zarrfs mounts are read-only")


#: First matching class wins, so subclasses come before their bases.
ERRNO_TABLE: tuple[tuple[type[BaseException], int], ...] = (
    (engine.NodeNotFoundError, errno.ENOENT),
    (FileNotFoundError, errno.ENOENT),
    (NotADirectoryError, errno.ENOTDIR),
    (IsADirectoryError, errno.EISDIR),
    (PermissionError, errno.EACCES),
    (engine.ChunkDecodeError, errno.EIO),  # includes ChecksumError
    (engine.StoreError, errno.EIO),
    (engine.UnsupportedError, errno.EIO),
    (engine.MetadataError, errno.EIO),
    (engine.ReadCancelled, errno.EIO),
    (engine.ZarrfsError, errno.EIO),
    (MemoryError, errno.ENOMEM),
    (TimeoutError, errno.ETIMEDOUT),
)

#: errno values an OSError may pass through unchanged; anything else becomes EIO.
PASS_THROUGH = frozenset(
    {
        errno.ENOENT,
        errno.EROFS,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EIO,
        errno.ENOMEM,
        errno.ENODATA,
        errno.ENOSYS,
        errno.ENOTSUP,
        errno.EBADF,
        errno.EINTR,
        errno.ETIMEDOUT,
        errno.ENOTEMPTY,
        errno.EEXIST,
    }
)


def errno_for(error: BaseException) -> int:
    """The errno a FUSE operation answers for ``error``."""
    for error_type, number in ERRNO_TABLE:
        if isinstance(error, error_type):
            return number
    if isinstance(error, OSError) and error.errno in PASS_THROUGH:
        return error.errno
    return errno.EIO


def fuse_errors(operation):
    """Decorator for every FUSE operation: translate exceptions through ``ERRNO_TABLE``."""

    @functools.wraps(operation)
    def wrapper(self, path, *args):
        try:
            return operation(self, path, *args)
        except FuseOSError:
            raise
        except Exception as error:
            number = errno_for(error)
            _log_failure(operation.__name__, path, error, number)
            raise FuseOSError(number) from error

    return wrapper


#: seconds during which the same failure (node, chunk, message) is logged once: the kernel
#: asks again for pages a failed read left out, and readers retry
REPEAT_QUIET = 10.0
_logged: dict[tuple, float] = {}
_logged_lock = threading.Lock()


def _first_in_a_while(what: tuple) -> bool:
    now = time.monotonic()
    with _logged_lock:
        if now - _logged.get(what, -REPEAT_QUIET) < REPEAT_QUIET:
            return False
        if len(_logged) > 1000:
            _logged.clear()
        _logged[what] = now
        return True


def _log_failure(operation: str, path: str, error: BaseException, number: int) -> None:
    if number in (errno.ENOENT, errno.ENOTDIR, errno.EROFS, errno.EISDIR):
        return  # ordinary answers, not failures
    if isinstance(error, engine.ReadCancelled):  # the mount is stopping (``daemon``)
        log.info("%s %s: %s: the mount is stopping", operation, path, errno.errorcode[number])
    elif isinstance(error, engine.ZarrfsError):
        if not _first_in_a_while((error.path, error.key, error.message)):
            return
        where = f"array {error.path!r} chunk {error.key!r}" if error.key else f"node {error.path!r}"
        log.error(
            "%s %s: %s (%s): %s", operation, path, errno.errorcode[number], where, error.message
        )
    elif number == errno.EIO:
        if _first_in_a_while((path, type(error).__qualname__, str(error))):
            log.error("%s %s failed unexpectedly; answering EIO", operation, path, exc_info=error)
    else:
        log.warning("%s %s: %s: %s", operation, path, errno.errorcode[number], error)
