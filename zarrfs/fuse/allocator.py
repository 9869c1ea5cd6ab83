"""Keep freed memory in the daemon's allocator instead of handing it back to the kernel.

A sequential read through the mount allocates and frees the same sizes over and over: libfuse's
reply buffer for every request (128 KiB to 1 MiB), zstd's decompression context for every chunk
(about 160 KiB), compressed chunk bytes. glibc serves allocations from 128 KiB up with fresh
``mmap`` pages at first, and trims the top of a heap once 128 KiB or more lies free there, so
each of those buffers is, again and again, new memory that the kernel must fault in and zero:
a profile of ``cat data.npy`` showed a sixth of the daemon's time in page faults and zeroing.
Raising both thresholds makes the same pages serve every request.

After a burst, once the mount has been idle two seconds, :func:`trim_when_idle` hands what is
free back to the kernel (``malloc_trim``), so a burst does not keep its peak for good.

Bounds: allocations up to 32 MiB (glibc's upper limit for the threshold) come from the heaps;
up to 256 MiB may stay free at a heap's top before glibc returns it. The daemon's own process
only; the engine, as a library, never changes the allocator of a process it runs in.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process; False where there is no glibc
    ``mallopt`` (musl, macOS) or it refuses, and nothing changes."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    done = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and done
    log.debug("allocator thresholds %s", "set" if done else "refused")
    return done


def _malloc_trim() -> Callable[[], bool] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return lambda: bool(trim(0))


def trim_when_idle(
    activity: Callable[[], object], stop: threading.Event, idle_seconds: float = 2.0
) -> threading.Thread | None:
    """Hand freed memory back to the kernel once the mount has been idle ``idle_seconds``
    after a burst of activity: the raised thresholds above keep freed memory for good
    otherwise (a burst of large reads, or of failures, left gigabytes in the heaps).
    ``activity()`` changes whenever the mount serves something; polled at half the idle
    time. None where there is no glibc ``malloc_trim``."""
    trim = _malloc_trim()
    if trim is None:
        return None

    def watch() -> None:
        last, busy, changed = activity(), False, time.monotonic()
        while not stop.wait(idle_seconds / 2):
            now, current = time.monotonic(), activity()
            if current != last:
                last, busy, changed = current, True, now
            elif busy and now - changed >= idle_seconds:
                trim()
                busy = False
                log.debug("idle: freed memory returned to the kernel")

    thread = threading.Thread(target=watch, name="zarrfs-trim", daemon=True)
    thread.start()
    return thread
