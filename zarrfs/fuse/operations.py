"""The FUSE operations: thin answers over the virtual tree, every one behind ``fuse_errors``.

Read-only throughout: the mount is made with ``-o ro`` and every changing operation answers EROFS
here as well (a binding without ``ro`` still cannot write). Handles of open files live in a dict
keyed by the number libfuse stores in ``fi.fh``. Files of known size keep the kernel page cache
across opens (the store is an immutable snapshot); files of unknown size use direct I/O.

Beware: every attribute of this class named like a FUSE operation is registered as one.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable

from ._fuselib import FuseOSError, Operations
from .errnos import ReadOnlyError, fuse_errors
from .files import ArrayBytesFile
from .pagecache import PagePusher
from .tree import VirtualTree, is_directory

log = logging.getLogger(__name__)

MAX_READAHEAD = 4 << 20
BLOCK_SIZE = 1 << 20  # st_blksize: cp, cat and stdio size their buffers by it
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class ZarrfsOperations(Operations):
    use_ns = True  # times as integer nanoseconds (mfusepy)

    def __init__(
        self,
        tree: VirtualTree,
        on_ready: Callable[[], None] | None = None,
        pages: PagePusher | None = None,
    ):
        self._tree = tree
        self._on_ready = on_ready
        self._pages = pages
        self._handles: dict[int, object] = {}
        self._handle_ids = itertools.count(1)
        self._handles_lock = threading.Lock()
        self._uid = os.getuid() if tree.options.uid is None else tree.options.uid
        self._gid = os.getgid() if tree.options.gid is None else tree.options.gid
        self._mtime_ns = int(tree.mtime * 1e9)
        self.was_ready = False
        self._reads = 0  # reads being answered
        self._last_read = time.monotonic()  # when the last one was answered
        self._reads_lock = threading.Lock()

    def init_with_config(self, conn_info, config):
        """Called once the kernel mount is live: widen readahead, tell whoever waits we are ready."""
        if conn_info is not None and hasattr(conn_info, "max_readahead"):
            conn_info.max_readahead = MAX_READAHEAD  # larger kernel reads, fewer round trips
        log.info("mounted")
        self.was_ready = True
        if self._on_ready is not None:
            self._on_ready()

    def destroy(self, path):
        if self._pages is not None:
            self._pages.close()  # before libfuse frees the session it pushes through
        log.info("unmounted")

    # -- reading ------------------------------------------------------------------------------
    @fuse_errors
    def getattr(self, path, fh=None):
        return self._attrs(self._tree.resolve(path))

    def _attrs(self, entry) -> dict:
        common = {
            "st_uid": self._uid,
            "st_gid": self._gid,
            "st_mtime": self._mtime_ns,
            "st_ctime": self._mtime_ns,
            "st_atime": self._mtime_ns,
            "st_blksize": BLOCK_SIZE,
        }
        if is_directory(entry):
            return {**common, "st_mode": stat.S_IFDIR | 0o555, "st_nlink": 2, "st_size": 0}
        size = entry.size
        return {
            **common,
            "st_mode": stat.S_IFREG | 0o444,
            "st_nlink": 1,
            "st_size": size,
            "st_blocks": -(-size // 512),
        }

    @fuse_errors
    def readdir(self, path, fh):
        return [".", "..", *self._directory(path).iter_names()]

    @fuse_errors
    def readdir_entries(self, path, start=0):
        """Entries of a directory from index ``start`` on, each with its attributes (None when
        they cannot be had: its own lookup then reports why), for ``_fuselib``'s READDIRPLUS:
        ``ls -l`` then needs no lookup per entry."""
        directory = self._directory(path)
        names = itertools.chain([".", ".."][start:], directory.iter_names(max(0, start - 2)))
        return self._entries(directory, names)

    def _entries(self, directory, names):
        for name in names:
            try:
                entry = directory if name in (".", "..") else directory.lookup(name)
                yield name, self._attrs(entry)
            except Exception:  # noqa: BLE001
                yield name, None

    def _directory(self, path):
        entry = self._tree.resolve(path)
        if not is_directory(entry):
            raise NotADirectoryError(path)
        return entry

    @fuse_errors
    def access(self, path, amode):
        self._tree.resolve(path)
        if amode & os.W_OK:
            raise ReadOnlyError()
        return 0

    @fuse_errors
    def open(self, path, fi):
        if fi.flags & _WRITE_FLAGS:
            raise ReadOnlyError()
        entry = self._tree.resolve(path)
        if is_directory(entry):
            raise IsADirectoryError(path)
        if isinstance(entry, ArrayBytesFile) and self._pages is not None:
            handle = entry.open(self._pages.file(path))
        else:
            handle = entry.open()
        with self._handles_lock:
            number = next(self._handle_ids)
            self._handles[number] = handle
        fi.fh = number
        fi.direct_io = 1 if entry.direct_io else 0
        fi.keep_cache = 1 if (self._tree.options.keep_page_cache and not entry.direct_io) else 0
        self._tree.stats.add("opens")
        return 0

    @fuse_errors
    def read(self, path, size, offset, fi):
        return self._reading(fi, lambda handle: handle.read(offset, size))

    @fuse_errors
    def read_into(self, path, buffer, offset, fi):
        """``read`` straight into libfuse's reply buffer (``_fuselib``); the count written."""
        return self._reading(fi, lambda handle: handle.readinto(offset, buffer))

    def _reading(self, fi, how):
        handle = self._handles.get(fi.fh)
        if handle is None:
            raise FuseOSError(errno.EBADF)
        with self._reads_lock:
            self._reads += 1
        try:
            return how(handle)
        except Exception:
            self._tree.stats.add("read_errors")
            raise
        finally:
            with self._reads_lock:
                self._reads -= 1
                self._last_read = time.monotonic()

    def settle_reads(self, quiet: float = 0.1, limit: float = 2.0) -> None:
        """Wait until no read has been under way for ``quiet`` seconds (at most ``limit``).
        For a stopping mount whose reads were cancelled: the kernel asks again for the pages
        a failed read left out, and those requests get EIO while the loop still runs, not
        ENOTCONN once the mount is gone."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self._reads_lock:
                idle = not self._reads and time.monotonic() - self._last_read >= quiet
            if idle:
                return
            time.sleep(0.01)

    @fuse_errors
    def release(self, path, fi):
        with self._handles_lock:
            handle = self._handles.pop(fi.fh, None)
        if handle is not None:
            handle.release()
        return 0

    @fuse_errors
    def statfs(self, path):
        return {
            "f_bsize": BLOCK_SIZE,
            "f_frsize": BLOCK_SIZE,
            "f_namemax": 255,
            "f_blocks": 0,
            "f_bfree": 0,
            "f_bavail": 0,
            "f_files": 0,
            "f_ffree": 0,
        }

    # -- everything that would change the mount -----------------------------------------------
    @fuse_errors
    def write(self, path, data, offset, fi):
        raise ReadOnlyError()

    @fuse_errors
    def create(self, path, mode, fi=None):
        raise ReadOnlyError()

    @fuse_errors
    def truncate(self, path, length, fh=None):
        raise ReadOnlyError()

    @fuse_errors
    def mkdir(self, path, mode):
        raise ReadOnlyError()

    @fuse_errors
    def mknod(self, path, mode, dev):
        raise ReadOnlyError()

    @fuse_errors
    def rmdir(self, path):
        raise ReadOnlyError()

    @fuse_errors
    def unlink(self, path):
        raise ReadOnlyError()

    @fuse_errors
    def rename(self, path, new_path):
        raise ReadOnlyError()

    @fuse_errors
    def symlink(self, path, source):
        raise ReadOnlyError()

    @fuse_errors
    def link(self, path, source):
        raise ReadOnlyError()

    @fuse_errors
    def chmod(self, path, mode):
        raise ReadOnlyError()

    @fuse_errors
    def chown(self, path, uid, gid):
        raise ReadOnlyError()

    @fuse_errors
    def utimens(self, path, times=None):
        raise ReadOnlyError()

    @fuse_errors
    def setxattr(self, path, name, value, options, position=0):
        raise ReadOnlyError()

    @fuse_errors
    def removexattr(self, path, name):
        raise ReadOnlyError()
