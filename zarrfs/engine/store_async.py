"""Every request of a read in flight at once on fsspec's event loop, answers handed over as they
land: the one place where the engine's I/O is asynchronous (STYLE 4), behind the store's
synchronous :meth:`~zarrfs.engine.store.Store.stream`.

Each request that fails transiently is retried on its own; at most fsspec's
``nofiles_gather_batch_size`` requests are in flight at once; the cyclic garbage collector is
held off while they go out (``gcpause``); a reader that gives up (``stop``) cancels the rest.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
from collections.abc import Callable, Iterator, Sequence

import fsspec

from . import gcpause
from .errors import StoreError
from .store_faults import describe, retry_delay
from .store_request import ByteRequest

_POLL_SECONDS = 0.05  # how often a waiting stream asks whether its reader gave up
_END = object()  # the last item of the queue


def _in_flight_limit() -> int:
    """Requests one stream keeps in flight at once: fsspec's own setting for many small
    requests (``nofiles_gather_batch_size``, 1280 by default)."""
    return int(fsspec.config.conf.get("nofiles_gather_batch_size", 1280))


def arrivals(
    fs: fsspec.AbstractFileSystem,
    url: str,
    requests: Sequence[ByteRequest],
    full_path: Callable[[str], str],
    stop: Callable[[], bool] | None,
) -> Iterator[list[tuple[int, object]]]:
    """Raw results (bytes or the exception of the last attempt) of every request to the store
    at ``url`` (``full_path(key)``: a key's path in ``fs``, or a StoreError refusing it), yielded
    in bursts of ``(index, result)`` as they land."""
    arrived: queue.SimpleQueue = queue.SimpleQueue()

    async def one(i: int, req: ByteRequest, gate: asyncio.Semaphore) -> None:
        try:
            path = full_path(req.key)
        except StoreError as exc:
            arrived.put((i, exc))
            return
        for attempt in itertools.count():
            try:
                async with gate:
                    data = await fs._cat_file(path, start=req.start, end=req.end)
            except Exception as exc:  # noqa: BLE001 - sorted out by the store
                delay = retry_delay(req.key, exc, attempt)
                if delay is not None:
                    await asyncio.sleep(delay)
                    continue
                arrived.put((i, exc))
            else:
                arrived.put((i, data))
            return

    async def every() -> None:
        try:
            gate = asyncio.Semaphore(_in_flight_limit())
            gcpause.hold()  # released once every request had its first turn (sent)
            try:
                tasks = [asyncio.ensure_future(one(i, r, gate)) for i, r in enumerate(requests)]
            finally:
                asyncio.get_running_loop().call_soon(gcpause.release)
            await asyncio.gather(*tasks)
        finally:
            arrived.put(_END)

    left = set(range(len(requests)))
    try:
        loop = fs.loop
        future = asyncio.run_coroutine_threadsafe(every(), loop)
    except Exception as exc:  # noqa: BLE001 - e.g. a filesystem used across fork()
        yield [(i, exc) for i in sorted(left)]
        return
    try:
        while left:
            try:
                item = arrived.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if stop is not None and stop():
                    return
                if not loop.is_running():  # its thread died: nothing more will come
                    break
                continue
            burst = []
            while item is not _END:
                burst.append(item)
                left.discard(item[0])
                try:
                    item = arrived.get_nowait()
                except queue.Empty:
                    break
            if burst:
                yield burst
            if item is _END:
                break
            if stop is not None and stop():
                return
    finally:
        future.cancel()
    if left:  # the loop gave up on the batch: never report those objects as absent
        failure = future.exception() if future.done() and not future.cancelled() else None
        reason = describe(failure) if failure else "the request was dropped"
        yield [
            (
                i,
                StoreError(
                    f"cannot read {requests[i].key!r} from {url}: {reason}",
                    path=url,
                    store_url=url,
                    key=requests[i].key,
                ),
            )
            for i in sorted(left)
        ]
