"""Read-ahead windows stored into the kernel's page cache (FUSE_NOTIFY_STORE), on real mounts.

A sequential reader then finds most pages cached and asks the daemon only for the first page
of each window; every byte it reads, and every byte read later from the page cache, must be
what zarr-python stored. Counters from ``.zarrfs/stats.json``, never timings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

import numpy as np
import pytest

from tests.fuse.conftest import needs_fuse
from zarrfs.fuse import kernel
from zarrfs.fuse.npy import npy_header
from zarrfs.fuse.readahead import PAGE, window_pages

pytestmark = needs_fuse

PREFETCH = "prefetch=4M"  # 1 MiB windows: the arrays below span several
SMALL_READAHEAD = "kernel_readahead=0"  # the kernel's 128 KiB, as in a mount by a non-root user


@pytest.fixture
def stored(zarr_writer):
    """float32 (301, 71, 67), 5.7 MB: no size here is a multiple of a page or a window."""
    rng = np.random.default_rng(11)
    data = rng.normal(size=(301, 71, 67)).astype(np.float32)
    data[100:140] = 0  # the fill value: zarr-python leaves these chunks out
    return zarr_writer(data, chunks=(13, 32, 30), fill_value=0.0), data


def stats(mounted) -> dict:
    return json.loads((mounted.path / ".zarrfs" / "stats.json").read_text())["mount"]


def read_sequentially(path, step: int) -> bytes:
    parts = []
    with open(path, "rb", buffering=0) as file:
        while part := file.read(step):
            parts.append(part)
    return b"".join(parts)


def test_window_pages_leave_out_the_first_page_and_keep_the_files_end():
    assert window_pages(128, 128 + (1 << 20), 10 << 20) == (PAGE, (1 << 20) // PAGE * PAGE)
    assert window_pages(0, 1 << 20, 10 << 20) == (PAGE, 1 << 20)  # aligned: still one left out
    size = 3 * PAGE + 100
    assert window_pages(PAGE + 5, size, size) == (2 * PAGE, size)  # the partial last page too
    begin, end = window_pages(10, PAGE - 10, 10 << 20)
    assert begin >= end  # nothing whole to push


def test_node_id_of_a_file_elsewhere_is_none(tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(b"x")
    device = os.stat(plain).st_dev
    assert kernel.node_id(str(plain), "0:0") is None  # not the mount's device
    assert (
        kernel.node_id(str(tmp_path / "missing"), f"{os.major(device)}:{os.minor(device)}") is None
    )


def test_pushed_npy_and_raw_read_back_exactly(mount, stored):
    written, data = stored
    mounted = mount(written.root, "push_pages=yes", PREFETCH, SMALL_READAHEAD)
    folder = mounted.path / written.path
    loaded = np.load(folder / "data.npy")  # one large read(), as numpy.load makes
    assert loaded.dtype == data.dtype and np.array_equal(loaded, data)
    raw = read_sequentially(folder / "data.raw", 128 << 10)  # as cat reads
    assert raw == data.tobytes()
    counters = stats(mounted)
    assert counters["pushes"] >= 8 and counters["bytes_pushed"] > data.nbytes  # both files
    # the page cache now holds the files: any range read later is still exact
    expected = npy_header(data.dtype, data.shape) + data.tobytes()
    rng = np.random.default_rng(5)
    with open(folder / "data.npy", "rb", buffering=0) as file:
        for offset in [
            0,
            PAGE - 3,
            1 << 20,
            (1 << 20) + 126,
            len(expected) - 5,
            *rng.integers(0, len(expected), 40),
        ]:
            size = int(rng.integers(1, 3 * PAGE))
            assert os.pread(file.fileno(), size, int(offset)) == expected[offset : offset + size]


def test_a_reader_slower_than_decoding_asks_for_little_more_than_first_pages(mount, stored):
    """Windows decoded before the reader comes are in the page cache when it does: the daemon
    answers the first reads, then about one page per window."""
    written, data = stored
    mounted = mount(written.root, "push_pages=yes", PREFETCH, SMALL_READAHEAD)
    parts = []
    with open(mounted.path / written.path / "data.raw", "rb", buffering=0) as file:
        while part := file.read(128 << 10):
            parts.append(part)
            threading.Event().wait(0.003)  # a reader busy with what it read
    assert b"".join(parts) == data.tobytes()
    counters = stats(mounted)
    assert counters["bytes_pushed"] > data.nbytes // 2
    assert counters["bytes_served"] < data.nbytes // 4


def test_pushed_plane_files_read_back_exactly(mount, zarr_writer):
    rng = np.random.default_rng(12)
    data = rng.integers(0, 2**16, size=(3, 1031, 1029), dtype=np.uint16)  # 2 MB planes
    written = zarr_writer(data, chunks=(1, 256, 300))
    mounted = mount(written.root, "push_pages=yes", PREFETCH, SMALL_READAHEAD)
    planes = mounted.path / written.path / "planes"
    for k in range(3):
        (name,) = [n for n in os.listdir(planes) if n.endswith(f"{k}.npy")]
        assert np.array_equal(np.load(planes / name), data[k])
    assert stats(mounted)["pushes"] >= 3


def test_pushes_by_default_and_none_when_turned_off(mount, stored):
    written, data = stored
    off = mount(written.root, "push_pages=no", PREFETCH)
    assert np.array_equal(np.load(off.path / written.path / "data.npy"), data)
    assert stats(off)["pushes"] == 0
    default = mount(written.root, PREFETCH)  # as root: with the kernel's readahead at 1 MiB
    assert np.array_equal(np.load(default.path / written.path / "data.npy"), data)
    assert stats(default)["pushes"] > 0


@pytest.mark.parametrize("attempt", range(2))  # a race: it hung in about one run of six
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_the_daemon_while_it_pushes(mount, zarr_writer, number, attempt):
    """SIGTERM or SIGINT (Ctrl-C) in the middle of a pushed read: pushes stop while FUSE
    requests are still answered, then libfuse's loop ends, and the daemon exits cleanly; the reader gets an error
    or the rest of the file, never wrong bytes. (Left to libfuse, the signal could leave a push
    waiting forever for a read libfuse dropped, and neither process could exit.)"""
    rng = np.random.default_rng(13)
    data = rng.normal(size=(64, 512, 512)).astype(np.float32)  # 64 MiB
    written = zarr_writer(data, chunks=(4, 256, 256))
    mounted = mount(written.root, "push_pages=yes", "prefetch=16M")
    path = mounted.path / written.path / "data.raw"
    outcome: dict[str, object] = {}

    def read() -> None:
        got = bytearray()
        try:
            with open(path, "rb", buffering=0) as file:
                while part := file.read(1 << 20):
                    got += part
                    if len(got) == 8 << 20:
                        outcome["started"] = True
        except OSError as error:
            outcome["error"] = error.errno
        outcome["bytes"] = bytes(got)

    reader = threading.Thread(target=read)
    reader.start()
    while "started" not in outcome and reader.is_alive():
        threading.Event().wait(0.001)
    mounted.process.send_signal(number)
    assert mounted.process.wait(timeout=20) == 0
    assert f"{signal.Signals(number).name}: unmounting" in mounted.log_file.read_text()
    reader.join(timeout=20)
    assert not reader.is_alive()
    got = outcome["bytes"]
    assert got == data.tobytes()[: len(got)]  # whatever arrived is right
    subprocess.run(["fusermount3", "-u", str(mounted.path)], capture_output=True, check=False)
