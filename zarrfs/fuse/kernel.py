"""The kernel's side of a mount: its entry in the mount table, and its readahead, set through
its backing device in sysfs.

The kernel reads a FUSE file ahead of a sequential reader in windows of the mount's readahead,
128 KiB by default; a FUSE server can only lower it (``max_readahead`` at init). One large
``read()``, as ``numpy.load`` makes, then waits for 128 KiB at a time: 1 MiB (the largest FUSE
request) lets the mount's read-ahead windows answer in larger pieces: ``numpy.load`` went from
730 to 830-850 MB/s (benchmarks/bench_mount.py). The setting lives in
``/sys/class/bdi/MAJOR:MINOR/read_ahead_kb``, writable by root only (the fstab helper runs as
root); other users keep the kernel's default, and the log says so.
"""

from __future__ import annotations

import logging
import os
import re

log = logging.getLogger(__name__)

_ESCAPED = re.compile(rb"\\([0-7]{3})")  # mountinfo writes space, tab, newline, \ as octal


def mount_table(mountinfo: str = "/proc/self/mountinfo") -> list[tuple[bytes, str]]:
    """``(mount point, "MAJOR:MINOR")`` for every mount, oldest first; OSError if unreadable."""
    with open(mountinfo, "rb") as table:
        lines = table.read().splitlines()
    return [(_ESCAPED.sub(_unescape, fields[4]), fields[2].decode("ascii", "replace"))
            for fields in (line.split(b" ") for line in lines) if len(fields) > 4]


def _unescape(match: re.Match) -> bytes:
    return bytes([int(match.group(1), 8)])


def mount_device(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """``"MAJOR:MINOR"`` of the filesystem mounted last at ``mountpoint``, or None.

    Resolves the parent folder only: this runs while the mount answers its INIT, and a look at
    the mount point itself would wait for the (single-threaded) daemon, that is, for itself."""
    mountpoint = os.path.abspath(mountpoint)
    target = os.fsencode(os.path.join(os.path.realpath(os.path.dirname(mountpoint)),
                                      os.path.basename(mountpoint)))
    try:
        devices = [device for point, device in mount_table(mountinfo) if point == target]
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
        log.info("kernel readahead unchanged (%s: %s); large sequential reads are faster "
                 "with it raised, as root: echo %d | sudo tee %s", path, error.strerror,
                 nbytes >> 10, path)
        return False
    log.info("kernel readahead %d KiB", nbytes >> 10)
    return True
