"""Start the viewer: the QApplication, theme, and the ``--screenshot`` mode.

``--screenshot`` opens the store, shows the node, waits until nothing is loading (tree listings,
metadata and every tile of the plane), saves the window and exits: used for documentation and
for checks, and works headless with ``QT_QPA_PLATFORM=offscreen``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import threading
import time

logger = logging.getLogger(__name__)


def limit_heap_fragmentation() -> None:
    """Keep decoded-chunk-sized allocations out of glibc's per-thread arenas.

    Chunks of a few MB are decoded on many threads; glibc raises its mmap threshold after the
    first free of such a block, after which they come from per-thread arenas that never shrink,
    and resident memory drifts hundreds of MB above the engine's cache budget. A fixed threshold
    returns them to the OS on free. No-op where glibc is absent.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_mmap_threshold = -3
        libc.mallopt(m_mmap_threshold, 512 * 1024)
    except (OSError, AttributeError):
        logger.debug("mallopt unavailable", exc_info=True)


def make_app(argv: list[str] | None = None):
    """The QApplication (created once), with the dark theme and pyqtgraph's options set."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        limit_heap_fragmentation()
        from .gui_share import leave_a_cpu_to_the_gui_thread

        leave_a_cpu_to_the_gui_thread()
        app = QApplication(argv if argv is not None else [sys.argv[0]])
        app.setApplicationName("zarrfs viewer")
        app.setOrganizationName("zarrfs")
        app.setDesktopFileName("zarrfs-viewer")
        from .resources import style_sheet

        app.setStyleSheet(style_sheet("dark"))
        from . import qt_compat

        qt_compat.install(app)
        qt_compat.collect_on_gui_thread(app)
        qt_compat.quiet_platform_notes()
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=False)
    return app


def is_idle(window) -> bool:
    """Nothing in flight: no background task, no tile, no pending node to select."""
    if window.background.pending:
        return False
    if window.stack.currentWidget() is window.image and window.image.busy:
        return False
    current = window.stack.currentWidget()
    if any(current is view and view.busy for view in (window.line, window.scalar, window.table)):
        return False
    if window.series.busy:
        return False
    return window.root is not None or bool(window.message_bar.messages())


def wait_until_idle(app, window, timeout: float, settle: float = 0.15) -> bool:
    """Process events until ``window`` has been idle for ``settle`` seconds (False on timeout)."""
    deadline = time.monotonic() + timeout
    idle_since = None
    while time.monotonic() < deadline:
        app.processEvents()
        if is_idle(window):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                return True
        else:
            idle_since = None
        time.sleep(0.01)
    return False


def take_screenshot(app, window, path: str, timeout: float) -> int:
    """Wait for loading to finish, save the window to ``path``; 0 on success."""
    done = wait_until_idle(app, window, timeout)
    window.grab()  # paint once: tables fetch the rows they show when painted
    done = wait_until_idle(app, window, max(1.0, timeout / 4)) and done
    if not window.grab().save(path):
        print(f"zarrfs view: cannot write {path}", file=sys.stderr)
        return 1
    if not done:
        print(
            f"zarrfs view: still loading after {timeout:g} s; saved what was shown", file=sys.stderr
        )
        return 3
    return 0


def run(
    url: str | None = None,
    storage_options: dict | None = None,
    *,
    node: str | None = None,
    indices: list[int] | None = None,
    screenshot: str | None = None,
    timeout: float = 60.0,
    cache_size: int | None = None,
    size: tuple[int, int] | None = None,
    opening=None,
    look=None,
) -> int:
    """Run the viewer; returns the process exit code. ``opening``: a future of the store
    at ``url`` already being opened (``early_open``)."""
    if screenshot and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import zarrfs.engine as engine

    app = make_app()
    from .main_window import MainWindow

    window = MainWindow(cache_size=cache_size)  # the command line wins over the saved setting
    gc.freeze()  # what the imports and the window made lives as long as the process: never scanned
    try:
        return _run_window(
            app,
            window,
            url,
            storage_options,
            node=node,
            indices=indices,
            screenshot=screenshot,
            timeout=timeout,
            size=size,
            opening=opening,
            look=look,
        )
    finally:
        # the process is ending: no read may keep it waiting for a slow or stalled store
        engine.cancel_all_reads()


def _run_window(
    app,
    window,
    url,
    storage_options,
    *,
    node,
    indices,
    screenshot,
    timeout,
    size,
    opening=None,
    look=None,
) -> int:
    if size:
        window.resize(*size)
    window.show()
    if url:
        window.open_store(
            url, storage_options or {}, path=node, indices=indices, opening=opening, look=look
        )
    if screenshot:
        if not url:
            print("zarrfs view: --screenshot needs a URL", file=sys.stderr)
            return 2
        with _recording_exceptions() as raised:
            code = take_screenshot(app, window, screenshot, timeout)
        failures = window.message_bar.messages()
        for line in failures:
            print(f"zarrfs view: {line}", file=sys.stderr)
        window.close()
        if raised:  # a callback failed: what was saved may be wrong, whatever else happened
            print(
                f"zarrfs view: internal error ({len(raised)}): {raised[0]!r}; traceback above",
                file=sys.stderr,
            )
            return 5
        return code if code or not failures else 4
    return app.exec()


@contextlib.contextmanager
def _recording_exceptions():
    """Exceptions raised in Qt callbacks and in threads, in the order they came (Qt and
    ``threading`` only print them, so ``--screenshot`` would otherwise exit 0)."""
    raised: list[BaseException] = []
    previous, previous_thread = sys.excepthook, threading.excepthook

    def hook(kind, value, traceback):
        raised.append(value)
        previous(kind, value, traceback)

    def thread_hook(args):
        raised.append(args.exc_value)
        previous_thread(args)

    sys.excepthook, threading.excepthook = hook, thread_hook
    try:
        yield raised
    finally:
        sys.excepthook, threading.excepthook = previous, previous_thread
