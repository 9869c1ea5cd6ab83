"""The daemon's process and kernel tuning: glibc's allocator thresholds, the mount's readahead."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.fuse.conftest import needs_fuse
from zarrfs.fuse import kernel

_ALLOCATES = """
import ctypes, sys
from zarrfs.fuse.allocator import keep_freed_memory
if sys.argv[1] == "tuned":
    assert keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = libc.sbrk.restype = ctypes.c_void_p
libc.malloc.argtypes, libc.sbrk.argtypes = (ctypes.c_size_t,), (ctypes.c_ssize_t,)
block = libc.malloc(8 << 20)
print("heap" if block < libc.sbrk(0) else "mmap")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("mode", "where"), [("default", "mmap"), ("tuned", "heap")])
def test_freed_memory_is_kept_in_the_heap(mode, where):
    """8 MiB blocks (libfuse's reply buffers and decoded windows are that size) come from fresh
    mmap pages by default, from the reused heap once the daemon has set its thresholds."""
    result = subprocess.run(
        [sys.executable, "-c", _ALLOCATES, mode], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == where


def test_mount_device_reads_the_last_mount_at_the_path(tmp_path):
    point = tmp_path / "a dir"
    point.mkdir()
    escaped = str(point.resolve()).replace(" ", "\\040")
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        f"40 22 0:51 / {escaped} ro,nosuid - fuse.zarrfs first ro\n"
        f"41 40 0:57 / {escaped} ro,nosuid - fuse.zarrfs second ro\n"
        f"42 22 0:58 / {escaped}x ro - fuse.zarrfs other ro\n"
    )
    assert kernel.mount_device(str(point), str(table)) == "0:57"
    assert kernel.mount_device(str(tmp_path / "elsewhere"), str(table)) is None
    assert kernel.mount_device(str(point), str(tmp_path / "no such table")) is None


def test_the_mount_table_gives_each_mount_its_type(tmp_path):
    """The type follows the "-" that ends the optional fields, however many there are."""
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:51 / /mnt/a ro,nosuid shared:7 master:2 - fuse.zarrfs s3://b/x.zarr ro\n"
        "41 22 0:52 / /mnt/b rw - tmpfs tmpfs rw\n"
    )
    assert kernel.mount_table(str(table)) == [
        (b"/", "8:1", "ext4"),
        (b"/mnt/a", "0:51", "fuse.zarrfs"),
        (b"/mnt/b", "0:52", "tmpfs"),
    ]


def test_set_readahead_writes_kib_or_says_why_not(tmp_path, monkeypatch, caplog):
    sysfs = tmp_path / "bdi"
    (sysfs / "0:57").mkdir(parents=True)
    (sysfs / "0:57" / "read_ahead_kb").write_text("128\n")
    monkeypatch.setattr(kernel, "mount_device", lambda mountpoint: "0:57")
    assert kernel.set_readahead("/mnt/x", 1 << 20, sysfs=str(sysfs))
    assert (sysfs / "0:57" / "read_ahead_kb").read_text() == "1024"
    monkeypatch.setattr(kernel, "mount_device", lambda mountpoint: "0:99")
    with caplog.at_level("INFO", logger="zarrfs.fuse.kernel"):
        assert not kernel.set_readahead("/mnt/x", 1 << 20, sysfs=str(sysfs))
    assert "kernel readahead unchanged" in caplog.text
    # a user who may not write it is told how to, with the exact path
    assert f"echo 1024 | sudo tee {sysfs}/0:99/read_ahead_kb" in caplog.text


def _readahead_kb(path) -> int:
    device = os.stat(path).st_dev
    with open(f"/sys/class/bdi/{os.major(device)}:{os.minor(device)}/read_ahead_kb") as setting:
        return int(setting.read())


@needs_fuse
@pytest.mark.fuse
@pytest.mark.skipif(os.geteuid() != 0, reason="only root may set a mount's readahead")
def test_a_real_mount_gets_its_kernel_readahead(mount, zarr_writer):
    import numpy as np

    written = zarr_writer(np.arange(10, dtype="u2"), path="a", chunks=(4,))
    assert _readahead_kb(mount(written.root).path) == 1024
    assert _readahead_kb(mount(written.root, "kernel_readahead=256K").path) == 256
    assert _readahead_kb(mount(written.root, "kernel_readahead=0").path) == 128  # the kernel's
