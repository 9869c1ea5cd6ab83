"""Keep Qt objects safe from Python's garbage collector and from PySide6 refcount bugs.

Garbage collection on the GUI thread only: the cyclic collector runs on whichever thread
happens to allocate, and when it frees a QObject from an engine or I/O worker thread, Qt cannot
unregister that object's timers ("Timers cannot be stopped from another thread") and later
crashes delivering a timer event to freed memory. So automatic collection is switched off and a
GUI-thread timer collects instead (what pyqtgraph's GarbageCollector does).

Refcounts: work around PySide6 refcount bugs that otherwise abort the viewer after a few thousand calls.

PySide6 6.12.0 returns ``True`` from ``SignalInstance.emit()`` and ``None`` from some void calls
(``processEvents``, Python slots invoked from C++) without taking a reference. On Python < 3.12,
where these singletons are not immortal, each such call takes one reference away and after a
few thousand of them the interpreter aborts ("Fatal Python error: bool_dealloc" or
"none_dealloc"), mid-session or at exit. Python 3.12 made them immortal, which is what this
emulates: on older Pythons the singletons' reference counts are kept far from zero, checked
again every 200 ms. Nothing is done on Python >= 3.12.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import logging
import sys

logger = logging.getLogger(__name__)

_SINGLETONS = (True, False, None)
_LOW_WATER = 1 << 24
_TOP_UP = 1 << 28
_timers: list = []


def needed() -> bool:
    return sys.version_info < (3, 12) and sys.implementation.name == "cpython"


def top_up() -> None:
    """Raise the singletons' reference counts well above what the leaks can consume."""
    if not needed():
        return
    for obj in _SINGLETONS:
        if sys.getrefcount(obj) < _LOW_WATER:
            # ob_refcnt is the first field of every CPython object
            ctypes.c_ssize_t.from_address(id(obj)).value += _TOP_UP


def collect_garbage() -> None:
    """What the automatic collector would do by now, generation by generation (as pyqtgraph's
    GarbageCollector does): a full collection walks every object of the process, and one a
    second during a burst of chunk events held the window for 300 ms at a time."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    generation = -1
    for g in range(3):
        if counts[g] <= thresholds[g]:
            break
        generation = g
    if generation >= 0:
        gc.collect(generation)


def collect_on_gui_thread(parent, interval_ms: int = 100) -> None:
    """Disable automatic collection; collect every ``interval_ms`` on ``parent``'s thread."""
    from PySide6.QtCore import QTimer

    gc.disable()
    timer = QTimer(parent)
    timer.setInterval(interval_ms)
    timer.timeout.connect(collect_garbage)
    timer.start()


def install(parent=None) -> None:
    """Top up now and, when a Qt parent is given, every 200 ms from a timer on it."""
    top_up()
    if parent is not None and needed():
        from PySide6.QtCore import QTimer

        timer = QTimer(parent)
        timer.setInterval(200)
        timer.timeout.connect(top_up)
        timer.start()


#: Qt messages that say nothing to the user: the offscreen platform (``--screenshot``) prints
#: this for every window that sizes itself
_UNWANTED = ("This plugin does not support propagateSizeHints()",)


def quiet_platform_notes() -> None:
    """Drop the platform plugin's notes of ``_UNWANTED``; every other Qt message goes where it
    went (the previous handler, else stderr as Qt prints it)."""
    from PySide6.QtCore import qInstallMessageHandler

    previous = None

    def handler(kind, context, message: str) -> None:
        if message.startswith(_UNWANTED):
            return
        if previous is not None:
            previous(kind, context, message)
        else:
            sys.stderr.write(message + "\n")

    previous = qInstallMessageHandler(handler)
    # Qt's last messages come while the interpreter ends: Qt's own handler takes them then
    atexit.register(qInstallMessageHandler, previous)
