"""The viewer's memory: work finished on its worker threads is not kept alive by them."""

from __future__ import annotations

import gc
import time
import weakref

import numpy as np


def _all_freed(refs, seconds: float = 10.0) -> list[bool]:
    """Whether each referent is gone, waiting at most ``seconds`` for the workers to go back
    to their loops (a worker lets go of a task once it has handed its result over)."""
    deadline = time.monotonic() + seconds
    while any(r() is not None for r in refs) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return [r() is None for r in refs]


def test_an_idle_worker_keeps_no_finished_task_alive():
    """A finished job's closure (a plane's buffers, say) and its result belong to whoever
    holds its future: an idle worker held both until its next job (a closed window's
    buffers stayed alive)."""
    from zarrfs.viewer.tasks import DaemonPool

    pool = DaemonPool(2, name="test-memory")
    try:
        refs = []
        for k in range(4):
            held = np.full(1 << 16, k, np.uint8)  # what the job's closure holds
            future = pool.submit(lambda held=held: held.copy())
            result = future.result(timeout=30)
            assert (result == k).all()
            refs += [weakref.ref(held), weakref.ref(result)]
            del held, future, result
        assert _all_freed(refs) == [True] * len(refs)
    finally:
        pool.shutdown()
