"""The kernel's side of a mount: its entry in the mount table, its readahead, set through its
backing device in sysfs, and the node ids by which it knows the mount's files.

The kernel reads a FUSE file ahead of a sequential reader in windows of the mount's readahead,
128 KiB by default; a FUSE server can only lower it (``max_readahead`` at init). One large
``read()``, as ``numpy.load`` makes, then waits for 128 KiB at a time: 1 MiB (the largest FUSE
request) lets the mount's read-ahead windows answer in larger pieces: ``numpy.load`` went from
730 to 830-850 MB/s (benchmarks/bench_mount.py). The setting lives in
``/sys/class/bdi/MAJOR:MINOR/read_ahead_kb``, writable by root only (the fstab helper runs as
root); other users keep the kernel's default, and the log says so. Since the mount pushes its
read-ahead windows into the page cache (``pagecache``), other users read about as fast as root.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re

log = logging.getLogger(__name__)

_ESCAPED = re.compile(rb"\\([0-7]{3})")  # mountinfo writes space, tab, newline, \ as octal


def mount_table(mountinfo: str = "/proc/self/mountinfo") -> list[tuple[bytes, str, str]]:
    """``(mount point, "MAJOR:MINOR", file system type)`` for every mount, oldest first (the
    type follows the ``-`` that ends the optional fields: ``fuse.zarrfs`` for ours); OSError if
    unreadable."""
    with open(mountinfo, "rb") as table:
        lines = table.read().splitlines()
    entries = []
    for fields in (line.split(b" ") for line in lines):
        if len(fields) > 4:
            after = fields.index(b"-", 6) + 1 if b"-" in fields[6:] else len(fields)
            kind = fields[after].decode("utf8", "replace") if after < len(fields) else ""
            entries.append(
                (_ESCAPED.sub(_unescape, fields[4]), fields[2].decode("ascii", "replace"), kind)
            )
    return entries


def _unescape(match: re.Match) -> bytes:
    return bytes([int(match.group(1), 8)])


def mount_device(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """``"MAJOR:MINOR"`` of the filesystem mounted last at ``mountpoint``, or None.

    Resolves the parent folder only: this runs while the mount answers its INIT, and a look at
    the mount point itself would wait for the (single-threaded) daemon, that is, for itself."""
    mountpoint = os.path.abspath(mountpoint)
    target = os.fsencode(
        os.path.join(os.path.realpath(os.path.dirname(mountpoint)), os.path.basename(mountpoint))
    )
    try:
        devices = [device for point, device, _ in mount_table(mountinfo) if point == target]
    except OSError:
        return None
    return devices[-1] if devices else None


def set_readahead(mountpoint: str, nbytes: int, sysfs: str = "/sys/class/bdi") -> bool:
    """Set the mount's kernel readahead to ``nbytes`` (rounded to KiB); False if it cannot."""
    device = mount_device(mountpoint)
    if device is None:
        log.info("kernel readahead unchanged: %s not found in the mount table", mountpoint)
        return False
    path = os.path.join(sysfs, device, "read_ahead_kb")
    try:
        with open(path, "w", encoding="ascii") as setting:
            setting.write(str(max(1, nbytes >> 10)))
    except OSError as error:
        log.info(
            "kernel readahead unchanged (%s: %s); with push_pages=no, large sequential "
            "reads are faster with it raised, as root: echo %d | sudo tee %s",
            path,
            error.strerror,
            nbytes >> 10,
            path,
        )
        return False
    log.info("kernel readahead %d KiB", nbytes >> 10)
    return True


class _FileHandle(ctypes.Structure):  # struct file_handle, room for FUSE's 3 words and more
    _fields_ = [
        ("handle_bytes", ctypes.c_uint),
        ("handle_type", ctypes.c_int),
        ("f_handle", ctypes.c_uint32 * 32),
    ]


_FILEID_INO64_GEN = 0x81  # linux/exportfs.h; FUSE's handle: node id (two words), generation
_AT_EMPTY_PATH = 0x1000
_libc = None


def node_id(path: str, device: str) -> int | None:
    """The node id by which the kernel knows the file at ``path`` in the FUSE mount whose
    device is ``device`` (``"MAJOR:MINOR"``), from ``name_to_handle_at``; None if the path
    lies elsewhere (a mount over the mount point) or the kernel does not say. Looks the path
    up: never call it from a thread that must answer that lookup."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    handle = _FileHandle(handle_bytes=ctypes.sizeof(_FileHandle) - 8)
    mount_id = ctypes.c_int()
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW)  # no FUSE open; one lookup for both
    except OSError as error:
        log.debug("no node id for %s: %s", path, error)
        return None
    try:
        found = os.fstat(fd).st_dev
        if f"{os.major(found)}:{os.minor(found)}" != device:
            return None
        if (
            _libc.name_to_handle_at(
                fd, b"", ctypes.byref(handle), ctypes.byref(mount_id), _AT_EMPTY_PATH
            )
            != 0
        ):
            log.debug("no node id for %s: %s", path, os.strerror(ctypes.get_errno()))
            return None
    finally:
        os.close(fd)
    if handle.handle_type != _FILEID_INO64_GEN or handle.handle_bytes < 8:
        return None
    return (handle.f_handle[0] << 32) | handle.f_handle[1]
