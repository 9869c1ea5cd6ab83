"""Python's cyclic garbage collector held off while a burst of requests goes out.

Sending a request costs aiohttp about 60 µs of Python, so a plane of 256 small chunks takes
15 ms to send, and every object the burst allocates counts towards a collection. Measured
over a 20 ms loopback server: about 20 young-generation collections per plane (1-2 ms in all),
and every few planes a full one that walks every object of the process (13-16 ms in a
bare process, more in a notebook). Requests sent after a full collection leave a whole
round trip late. The collector is held off only from when the requests are handed to the event
loop until each has had its first turn (on a kept-alive connection: until it is sent), or
handed to request threads until each has called its transport (never while they wait for
answers), then back to its prior state; garbage from those milliseconds is collected
afterwards.

The pause raises the young generation's threshold out of reach rather than disabling the
collector: ``gc.isenabled()`` stays as the program left it, so a library that records it
meanwhile (dask's ``slice_array`` decorator did, at import) never inherits "off". A
threshold the program sets during a pause is kept when the pause ends.

Pauses nest (several streams on one loop, or on different loops): the threshold comes back
once the last pause ends.
"""

from __future__ import annotations

import gc
import os
import threading

_lock = threading.Lock()
_depth = 0
#: the young generation's threshold during a pause: no allocation count reaches it
HELD = 1 << 30
_prior: tuple[int, ...] | None = None  # the thresholds before the first pause


def hold() -> None:
    """Begin a pause; every call is matched by one :func:`release`."""
    global _depth, _prior
    with _lock:
        if _depth == 0:
            _prior = gc.get_threshold()
            gc.set_threshold(HELD, *_prior[1:])
        _depth += 1


def release() -> None:
    """End a pause; after the last one the thresholds are as before, unless the program
    changed them meanwhile (then they stay as it set them)."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0:
            _restore()


def _restore() -> None:
    global _prior
    prior, _prior = _prior, None
    if prior is not None and gc.get_threshold() == (HELD, *prior[1:]):
        gc.set_threshold(*prior)


def _after_fork_in_child() -> None:
    """A forked child has none of the threads whose pauses were on: none is on in it, and
    the thresholds are as before them (the lock may have been held)."""
    global _lock, _depth
    _lock = threading.Lock()
    if _depth:
        _restore()
    _depth = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
