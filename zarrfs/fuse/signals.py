"""SIGTERM, SIGHUP and SIGINT for a serving mount: what needs FUSE requests answered ends first.

libfuse ends its loop on these signals by itself, and a FUSE thread that has just taken a
request from the kernel may then drop it unanswered. The kernel ends such a request only when
the device is released. A page-cache push (``pagecache``) waiting for a read that holds the page
it fills then never returns, and as it is a write to the device, the device is never released:
neither the daemon nor the reader could ever exit (the test of stopping a pushing daemon hung in
about one run of six).

So these signals get Python's handler instead of libfuse's (libfuse installs its own only
where none is set). Whichever thread the kernel picks (threads that C libraries started, such as
OpenBLAS's, take signals too), Python's C-level handler writes the signal's number to a pipe,
and one thread waits on that pipe. It runs ``before_exit`` while FUSE requests are still being
answered, then ends libfuse's loop: ``fuse_exit``, and a SIGUSR2 that interrupts the main
thread's wait in libfuse. Before the mount is live, it interrupts the main thread instead
(KeyboardInterrupt). SIGINT (Ctrl-C on a mount in the foreground) is handled the same way:
mfusepy would reset it to the default for libfuse, and is told to leave it (``_fuselib``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

from . import _fuselib

log = logging.getLogger(__name__)

TERMINATE = frozenset({signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
_WAKE = signal.SIGUSR2


class Shutdown:
    """Install with :meth:`install` from the main thread; :meth:`serving` from FUSE ``init``;
    :meth:`uninstall` once libfuse's loop has returned. Only with libfuse 3 through mfusepy
    (elsewhere libfuse's own handling stays)."""

    def __init__(self, before_exit: Callable[[], None]):
        self._before_exit = before_exit
        self._lock = threading.Lock()
        self._fuse: int | None = None
        self.requested: signal.Signals | None = None  # the signal that asked to unmount
        self._main = threading.get_ident()  # built, like installed, on the main thread
        self._previous: dict = {}
        self._pipe: tuple[int, int] | None = None

    def install(self) -> bool:
        if not _fuselib.can_exit_loop():
            return False
        self._pipe = os.pipe()
        os.set_blocking(self._pipe[1], False)
        for number in (*TERMINATE, _WAKE):
            self._previous[number] = signal.signal(number, self._handler)
        _fuselib.keep_sigint(True)
        self._previous["wakeup"] = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
        threading.Thread(
            target=self._watch, args=(self._pipe[0],), name="zarrfs-signals", daemon=True
        ).start()
        return True

    def serving(self) -> None:
        """The mount is live (call from ``init``): a signal now ends libfuse's loop."""
        if self._pipe is None:
            return
        with self._lock:
            self._fuse = _fuselib.fuse_handle()
            late = self.requested is not None and self._fuse is not None
        if late:  # the signal came while libfuse mounted; not on a FUSE thread (it may wait)
            threading.Thread(target=self._finish, name="zarrfs-exit", daemon=True).start()

    def uninstall(self) -> None:
        """Handlers and wakeup descriptor as before (the waiting thread stays, idle)."""
        if self._pipe is None:
            return
        _fuselib.keep_sigint(False)
        signal.set_wakeup_fd(self._previous.pop("wakeup"))
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _watch(self, fd: int) -> None:
        while True:
            number = os.read(fd, 1)[0]
            if number in TERMINATE:
                break
        log.info("%s: unmounting", signal.Signals(number).name)
        with self._lock:
            self.requested = signal.Signals(number)
            serving = self._fuse is not None
        if serving:
            self._finish()
        else:  # opening the store, or libfuse mounting: serving() ends the loop if it starts
            signal.pthread_kill(self._main, _WAKE)

    def _finish(self) -> None:
        try:
            self._before_exit()
        except Exception:  # noqa: BLE001 - the loop must end all the same
            log.exception("stopping before exit failed")
        _fuselib.exit_loop(self._fuse)
        signal.pthread_kill(self._main, _WAKE)

    def _handler(self, signum, frame) -> None:
        """Python's part, on the main thread whenever it next runs Python (in a FUSE callback,
        or after libfuse returns): nothing to do once serving; before, stop what it does."""
        if signum == _WAKE and self.requested is not None and self._fuse is None:
            raise KeyboardInterrupt
