"""Fault-injection soak of a real mount over a loopback HTTP server, and the daemon's memory
after a burst.

For ``ZARRFS_SOAK_SECONDS`` (3 by default; set it higher for a long soak) random byte ranges of
``data.raw`` are read while the server switches between faults (403s, 503s, truncated
bodies, connection resets, short stalls) and none. Every read either returns exactly the bytes
zarr-python stored or fails with EIO: wrong bytes must be 0. The counts and the daemon's
resident memory (before, at its peak, and after two idle seconds, when freed memory is handed
back) are printed; the memory after must come back near where it started.
"""

from __future__ import annotations

import errno
import os
import random
import threading
import time

import pytest

from tests.fuse.conftest import needs_fuse
from tests.hostile import rss, write_bomb_store, write_remote_store

pytestmark = [needs_fuse, pytest.mark.fuse]

SOAK_SECONDS = float(os.environ.get("ZARRFS_SOAK_SECONDS", "3"))
MiB = 1 << 20


def settled_rss(pid: int, seconds: float = 4.0) -> int:
    """The daemon's RSS after it has been idle long enough to hand freed memory back."""
    time.sleep(seconds)
    return rss(pid)


def _switch_faults(server, stop: threading.Event, rng: random.Random) -> None:
    faults = server.faults
    while not stop.wait(rng.uniform(0.2, 1.5)):
        faults.clear()
        choice = rng.randrange(6)
        pattern = rf"c/{rng.randrange(16)}/"
        if choice == 5:
            faults.status(403, pattern=pattern)  # not retried: those reads fail
        elif choice == 1:
            faults.status(503, pattern=pattern)
        elif choice == 2:
            faults.truncate(pattern=pattern)
        elif choice == 3:
            faults.reset(pattern=pattern)
        elif choice == 4:
            faults.stall(0.3, pattern=pattern)


def test_fault_soak_never_returns_wrong_bytes(tmp_path, http_server, mount):
    data = write_remote_store(tmp_path / "s.zarr", seed=1)
    expected = data.tobytes()
    server = http_server(tmp_path / "s.zarr")
    m = mount(server.url, "cache_size=256K", "prefetch=0")  # most reads go to the server
    pid = m.process.pid
    before = settled_rss(pid, 0)
    rng = random.Random(7)
    stop = threading.Event()
    switcher = threading.Thread(target=_switch_faults, args=(server, stop, rng), daemon=True)
    switcher.start()
    reads = errors = wrong = short = 0
    peak = before
    deadline = time.monotonic() + SOAK_SECONDS
    fd = os.open(m.path / "data.raw", os.O_RDONLY)
    try:
        while time.monotonic() < deadline:
            size = rng.choice([4096, 65536, 1 << 20])
            offset = rng.randrange(0, len(expected) - size)
            try:
                got = os.pread(fd, size, offset)
            except OSError as exc:
                assert exc.errno == errno.EIO, exc
                errors += 1
            else:
                wrong += got != expected[offset : offset + len(got)]
                short += len(got) != size  # a failure past the first page: a short read
            reads += 1
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the next read asks the daemon
            if reads % 20 == 0:
                peak = max(peak, rss(pid))
    finally:
        stop.set()
        switcher.join()
        server.faults.clear()
        os.close(fd)
    after = settled_rss(pid)
    print(
        f"\nsoak {SOAK_SECONDS:g} s: {reads} reads, {errors} EIO, {short} short, {wrong} wrong; "
        f"daemon RSS "
        f"{before / MiB:.0f} MiB before, {peak / MiB:.0f} peak, {after / MiB:.0f} after idle"
    )
    assert wrong == 0
    assert reads > 10 and errors < reads
    assert after < before + 64 * MiB


def test_a_bomb_leaves_the_daemon_as_it_was(tmp_path, mount):
    root = write_bomb_store(tmp_path / "b.zarr", "zstd")
    m = mount(str(root))
    pid = m.process.pid
    assert (m.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
    before = settled_rss(pid, 0)
    with pytest.raises(OSError) as caught:
        (m.path / "bomb" / "data.raw").read_bytes()
    assert caught.value.errno == errno.EIO
    peak = rss(pid)
    after = settled_rss(pid)
    print(
        f"\nzstd bomb (2 GiB): daemon RSS {before / MiB:.0f} MiB before, {peak / MiB:.0f} "
        f"right after, {after / MiB:.0f} after idle"
    )
    assert peak < before + 64 * MiB and after < before + 64 * MiB
