"""Python's cyclic garbage collector held off while a burst of requests goes out.

Sending a request costs aiohttp about 60 µs of Python, so a plane of 256 small chunks takes
15 ms to send, and every object the burst allocates counts towards a collection. Measured
over a 20 ms loopback server: about 20 young-generation collections per plane (1-2 ms in all),
and every few planes a full one that walks every object of the process (13-16 ms in a
bare process, more in a notebook). Requests sent after a full collection leave a whole
round trip late. The collector is off only from when the requests are handed to the event
loop until each has had its first turn (on a kept-alive connection: until it is sent), or
handed to request threads until each has called its transport (never while they wait for
answers), then back to its prior state; garbage from those milliseconds is collected
afterwards.

Pauses nest (several streams on one loop, or on different loops): the collector comes back
once the last pause ends, and only if it was on when the first began.
"""

from __future__ import annotations

import gc
import os
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


def hold() -> None:
    """Begin a pause; every call is matched by one :func:`release`."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def release() -> None:
    """End a pause; the collector is on again after the last one if it was on before."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


def _after_fork_in_child() -> None:
    """A forked child has none of the threads whose pauses were on: none is on in it, and
    the collector is in the state it had before them (the lock may have been held)."""
    global _lock, _depth
    _lock = threading.Lock()
    if _depth and _was_enabled:
        gc.enable()
    _depth = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
