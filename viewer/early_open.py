"""Open the store while Qt loads: the first thing ``zarrfs view URL`` does.

Importing PySide6 and pyqtgraph and building the window take about half a second; opening a
remote store takes its transport's import (aiohttp for HTTP, 0.2 s) and round trips, then the
pyramid of the image to show takes more. A daemon thread, started before Qt is imported, opens
the store and finds that pyramid (its metadata stays in the open store's cache), so that the
window, once built, finds them ready. Nothing here imports Qt.

The window receives the open as a future (``MainWindow.open_store(..., opening=)``); a failure
reaches it through the future and is reported there, as any failure to open. The thread is a
daemon: a stalled store never keeps the process from exiting.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading

logger = logging.getLogger(__name__)


def start(url: str, options: dict, path: str | None = None) -> concurrent.futures.Future:
    """A future of ``engine.open(url, **options)``, whose metadata of the node at ``path``
    (default: the root) and of its pyramid's levels is already fetched when it completes."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        try:
            root = _open(url, options, path)
        except BaseException as exc:  # noqa: BLE001 - handed to the window, which reports it
            future.set_exception(exc)
        else:
            future.set_result(root)

    threading.Thread(target=run, name="zarrfs-early-open", daemon=True).start()
    return future


def _open(url: str, options: dict, path: str | None):
    import zarrfs.engine as engine

    from . import pyramid

    root = engine.open(url, **options)
    try:
        node = root[path.strip("/")] if path and path.strip("/") and root.kind == "group" else root
        pyramid.find_pyramid(root, node)
        pyramid.image_group(root, node)
    except Exception:  # noqa: BLE001 - only a head start: the window meets and reports it
        logger.debug("no head start for %s of %s", path, url, exc_info=True)
    return root
