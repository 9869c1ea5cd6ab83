"""Open the store while Qt loads: the first thing ``zarrfs view URL`` does.

Importing PySide6 and pyqtgraph and building the window take about half a second; opening a
remote store takes its transport's import (aiohttp for HTTP, 0.2 s) and round trips, then the
pyramid of the image to show takes more. A daemon thread, started before Qt is imported, opens
the store and finds that pyramid (its metadata stays in the open store's cache), so that the
window, once built, finds them ready. Nothing here imports Qt.

Once the store is open, the thread also starts reading the plane the window will most likely
show first (its default plane, every channel, at the level a typical window needs), at prefetch
priority and only when small: the chunks are decoded on another CPU while Qt still loads, and
the window's own read finds them in the engine's cache, or in flight (never fetched twice).

The window receives the open as a future (``MainWindow.open_store(..., opening=)``); a failure
reaches it through the future and is reported there, as any failure to open. The thread is a
daemon and never waits on a read: a stalled store never keeps the process from exiting.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading

logger = logging.getLogger(__name__)


#: the image area of a new window (rows, columns), to guess the level it shows first
SCREEN = (600, 700)
#: the most a guessed first plane may decode (bytes) and touch (chunks)
WARM_BYTES = 64 << 20
WARM_CHUNKS = 64


def start(
    url: str, options: dict, path: str | None = None, warm: bool = True
) -> concurrent.futures.Future:
    """A future of ``engine.open(url, **options)``, whose metadata of the node at ``path``
    (default: the root) and of its pyramid's levels is already fetched when it completes;
    ``warm``: then start reading its likely first plane (``first_plane``)."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        try:
            root, found = _open(url, options, path)
        except BaseException as exc:  # noqa: BLE001 - handed to the window, which reports it
            future.set_exception(exc)
            return
        future.set_result(root)
        if warm and found is not None:
            try:
                _warm(found)
            except Exception:  # noqa: BLE001 - only a head start
                logger.debug("no first plane read ahead for %s", url, exc_info=True)

    threading.Thread(target=run, name="zarrfs-early-open", daemon=True).start()
    return future


def _open(url: str, options: dict, path: str | None):
    import zarrfs.engine as engine

    from . import pyramid

    root, found = engine.open(url, **options), None
    try:
        node = root[path.strip("/")] if path and path.strip("/") and root.kind == "group" else root
        found = pyramid.find_pyramid(root, node)
        pyramid.image_group(root, node)
    except Exception:  # noqa: BLE001 - only a head start: the window meets and reports it
        logger.debug("no head start for %s of %s", path, url, exc_info=True)
    return root, found


def first_plane(found, screen: tuple[int, int] = SCREEN) -> tuple[int, tuple] | None:
    """``(level, selection)`` of the plane a window of ``screen`` image pixels shows first
    for the pyramid ``found``: the last two axes, the image's default indices (``defaultZ``
    and ``defaultT``) elsewhere, every channel; ``None`` when it has fewer than two axes."""
    from .channels import default_indices
    from .tiles import choose_level

    shape = found.levels[0].shape
    if len(shape) < 2:
        return None
    y, x = len(shape) - 2, len(shape) - 1
    k = choose_level(found.levels, y, x, max(shape[y] / screen[0], shape[x] / screen[1]))
    level = found.levels[k]
    indices = default_indices(found.image, found.axis_names, shape)
    channel = found.image.channel_axis if found.image is not None else None
    selection = tuple(
        slice(None)
        if a in (y, x, channel)
        else min(int(indices.get(a, 0) / level.factors[a]), level.shape[a] - 1)
        for a in range(len(shape))
    )
    return k, selection


def _warm(found) -> None:
    import numpy as np

    import zarrfs.engine as engine

    planned = first_plane(found)
    if planned is None:
        return
    k, selection = planned
    array = found.arrays[k]
    if array.error is not None:
        return
    shape = [n for n, s in zip(found.levels[k].shape, selection, strict=True) if s == slice(None)]
    if int(np.prod(shape)) * np.dtype(array.dtype).itemsize > WARM_BYTES:
        return
    if sum(1 for _ in array.chunks_in(selection)) > WARM_CHUNKS:
        return
    array.submit(selection, priority=engine.PRIORITY_PREFETCH)
