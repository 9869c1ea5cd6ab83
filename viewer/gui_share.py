"""The GUI thread's share of the machine: a CPU the decode workers leave to it.

The engine decodes on one worker per CPU the process may use, and the viewer's pixels are made
on those workers as chunks land (``landing.py``). While a plane decodes, every CPU was busy with
them and the GUI thread, woken to answer a key or paint, waited for one: at real-time priority
(where threads of one priority never preempt each other) 14-17 ms gaps of the event loop in
which the GUI thread did nothing, beside 8-10 ms of its own work. With one decode worker fewer
than the CPUs the GUI thread has one to itself and the longest gap is its own work; the steps,
the first pixels and the composite's z steps took as long as before (``benchmarks/README.md``,
"2026-11-27, late night"). ``ZARRFS_DECODE_THREADS`` (the engine's setting) still wins.
"""

from __future__ import annotations

import os

import zarrfs.engine as engine


def decode_workers(environ=os.environ) -> int | None:
    """The decode workers the viewer asks the engine for: one fewer than the CPUs (at least
    one); None where ``ZARRFS_DECODE_THREADS`` sets them (the user's number stands)."""
    if environ.get("ZARRFS_DECODE_THREADS"):
        return None
    return max(1, engine.usable_cpus() - 1)


def leave_a_cpu_to_the_gui_thread() -> None:
    """Size the engine's decode pool for the viewer (once, at start, before any read)."""
    workers = decode_workers()
    if workers is not None:
        engine.set_threads(decode=workers)
