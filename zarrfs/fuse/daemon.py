"""Mounting and unmounting: daemonize, open the store, serve until unmounted.

The daemon forks *before* it opens the store: fsspec's async filesystems (http, s3, gcs) and the
engine's pools do not survive ``fork()``. A pipe from the daemon back to the calling process
carries either ``ready`` (sent from FUSE ``init``, i.e. the kernel mount is live) or the error that
prevented the mount, so ``zarrfs mount`` exits non-zero with the reason on the calling terminal.
SIGINT/SIGTERM/SIGHUP are handled by libfuse, which leaves its loop and unmounts cleanly.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import zarrfs.engine as engine

from .allocator import keep_freed_memory, trim_when_idle
from .control import RingLogHandler, control_entries
from .files import MountStats
from .kernel import mount_table, set_readahead
from .options import MountOptions, fuse_mount_kwargs
from .pagecache import PagePusher
from .signals import Shutdown
from .tree import VirtualTree
from .unmount import forget_daemon, record_daemon

log = logging.getLogger(__name__)

#: seconds a termination signal waits for a page-cache push under way (its read is answered
#: by a FUSE thread, within the engine's own timeouts)
_STOP_WAIT = 60.0

READY = b"ready\n"


class MountError(Exception):
    """The mount could not be made; the message is for the user's terminal."""


def is_mounted(mountpoint: str) -> bool:
    """True if ``mountpoint`` is in the mount table, also when its daemon died (stale)."""
    return mounted_type(mountpoint) is not None


def mounted_type(mountpoint: str) -> str | None:
    """The file system type of the last mount at ``mountpoint`` ("" if the table cannot be
    read but something is mounted there), or None."""
    wanted = {os.fsencode(os.path.abspath(mountpoint))}
    try:
        wanted.add(os.fsencode(os.path.realpath(mountpoint)))
    except OSError:  # a stale FUSE mount cannot be resolved
        pass
    try:
        kinds = [kind for point, _, kind in mount_table() if point in wanted]
    except OSError:
        return "" if os.path.ismount(mountpoint) else None
    return kinds[-1] if kinds else None


def normalize_url(url: str) -> str:
    """Local paths become absolute: the daemon changes to ``/``."""
    if "://" in url or "::" in url:
        return url
    return os.path.abspath(os.path.expanduser(url))


def check_mountpoint(mountpoint: str) -> str:
    path = os.path.abspath(os.path.expanduser(mountpoint))
    if is_mounted(path):
        raise MountError(f"{path} is already a mount point (zarrfs unmount {path} first)")
    if not os.path.isdir(path):
        raise MountError(f"mount point {path} does not exist or is not a directory")
    return path


def mount(
    url: str,
    mountpoint: str,
    options: MountOptions,
    storage_options: dict,
    foreground: bool = False,
    log_file: str | None = None,
) -> int:
    """Mount and return an exit code; by default returns once the daemon's mount is live.
    ``storage_options``: every storage option of the mount, merged from the command line's
    flags and ``options``' own by ``options.mount_storage_options``."""
    try:
        mountpoint = check_mountpoint(mountpoint)
    except MountError as error:
        print(f"zarrfs mount: {error}", file=sys.stderr)
        return 1
    url = normalize_url(url)
    log_file = os.path.abspath(log_file) if log_file else None
    if log_file:  # checked here, where the caller sees the reason, not in the daemon
        try:
            os.close(os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        except OSError as error:
            print(
                f"zarrfs mount: cannot write the log file {log_file}: {error.strerror}",
                file=sys.stderr,
            )
            return 1
    if foreground:
        return serve(url, mountpoint, options, storage_options, log_file, foreground=True)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child; covered by the mount tests
        os.close(read_end)
        _daemon_child(url, mountpoint, options, storage_options, log_file, write_end)
    os.close(write_end)
    os.waitpid(pid, 0)  # the first child exits as soon as it has forked the daemon
    with os.fdopen(read_end, "rb") as status:
        daemon = b""
        try:
            daemon = status.readline()  # its pid, first
            message = status.read()
        except KeyboardInterrupt:  # Ctrl-C while the store opens: no mount may appear later
            return _stop_daemon(daemon, mountpoint)
    if message.startswith(READY):
        return 0
    text = message.decode("utf8", "replace").strip() or "the mount daemon exited without a word"
    print(f"zarrfs mount: {text}", file=sys.stderr)
    return 1


def _daemon_child(url, mountpoint, options, storage_options, log_file, write_end) -> None:
    """Double fork into a session of its own, then serve; never returns."""
    code = 1
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):
            os.dup2(devnull, fd)
        captured = tempfile.TemporaryFile()  # libfuse writes its mount errors to stderr
        os.dup2(captured.fileno(), 2)
        status = os.fdopen(write_end, "wb", buffering=0)
        status.write(b"%d\n" % os.getpid())

        def ready() -> None:
            os.dup2(_after_ready_fd(log_file, devnull), 2)
            _send(status, READY)

        def failed(message: str) -> None:
            captured.seek(0)
            details = captured.read().decode("utf8", "replace").strip()
            _send(status, (message + (f" ({details})" if details else "")).encode())

        code = serve(
            url,
            mountpoint,
            options,
            storage_options,
            log_file,
            foreground=False,
            on_ready=ready,
            on_failure=failed,
        )
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child
        code = 1
    finally:
        os._exit(code)


def _stop_daemon(pid_line: bytes, mountpoint: str) -> int:
    """SIGTERM to the daemon (it stops opening, or unmounts), and wait until it has gone."""
    try:
        pid = int(pid_line)
        os.kill(pid, signal.SIGTERM)
    except (ValueError, ProcessLookupError):  # it has already gone
        pid = 0
    deadline = time.monotonic() + _STOP_WAIT
    while pid and _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if is_mounted(mountpoint):
        print(f"zarrfs mount: interrupted; {mountpoint} is still mounted", file=sys.stderr)
    else:
        print("zarrfs mount: interrupted; not mounted", file=sys.stderr)
    return 128 + signal.SIGINT


def _alive(pid: int) -> bool:
    try:  # a zombie that nobody reaps (init in a container) has gone too
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _after_ready_fd(log_file: str | None, devnull: int) -> int:
    if log_file:
        return os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    return devnull


def _send(status, message: bytes) -> None:
    try:
        status.write(message)
        status.close()
    except OSError:
        pass  # the caller is gone; nothing to tell


def serve(
    url: str,
    mountpoint: str,
    options: MountOptions,
    storage_options: dict,
    log_file: str | None,
    foreground: bool,
    on_ready: Callable[[], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
) -> int:
    """Open the store, mount, and serve until unmounted (in this process). Returns an exit code."""
    from ._fuselib import FUSE  # loads libfuse: only in the process that serves
    from .operations import ZarrfsOperations

    ring = _setup_logging(options, log_file, foreground)
    keep_freed_memory()
    pages: PagePusher | None = None
    operations: ZarrfsOperations | None = None
    device: str | None = None  # the mount's, once live: its runtime file names the daemon
    idle = threading.Event()  # set: the idle trimmer stops

    def before_exit() -> None:  # while libfuse still answers requests
        engine.cancel_all_reads()  # FUSE threads waiting for a slow store answer EIO at once
        if operations is not None:
            operations.settle_reads()  # and the kernel's second asks get EIO too
        if pages is not None:
            pages.close(_STOP_WAIT)  # pushes end before libfuse stops answering reads

    stopping = Shutdown(before_exit)
    stopping.install()

    def fail(message: str) -> int:
        log.error("%s", message)
        if on_failure is not None:
            on_failure(message)
        else:
            print(f"zarrfs mount: {message}", file=sys.stderr)
        return 1

    def run() -> int:
        nonlocal pages, operations
        try:
            if options.cache_size is not None:
                engine.set_cache_size(options.cache_size)
            if options.allow_other:
                # other users read through it: a symlink made in the store after the native
                # path checked it must never serve them a file they could not read themselves
                engine.set_native(False, "a mount others can read (allow_other) reads confined")
            # a decode worker per CPU, kept there: woken after an idle spell, unpinned workers
            # often ran one after the other on the CPU of the thread that woke them
            engine.set_threads(pin=True)
            open_root = _root_opener(url, options, storage_options)
            first = open_root()
        except Exception as error:  # noqa: BLE001 - any failure to open is reported, not raised
            return fail(f"cannot open {url}: {error}")
        opened = [first]

        def root():
            return opened.pop() if opened else open_root()

        def ready() -> None:  # runs in FUSE init
            nonlocal device
            stopping.serving()
            device = record_daemon(mountpoint)
            if options.kernel_readahead:
                set_readahead(mountpoint, options.kernel_readahead)
            if pages is not None:
                pages.attach()
            if on_ready is not None:
                on_ready()

        tree = VirtualTree(root, options, MountStats(), control_entries(url, ring))
        trim_when_idle(tree.stats.snapshot, idle)
        pages = PagePusher(mountpoint, tree.stats) if options.push_pages else None
        operations = ZarrfsOperations(tree, on_ready=ready, pages=pages)
        kwargs = fuse_mount_kwargs(options, fsname=url)
        log.info("mounting %s at %s", url, mountpoint)
        try:
            FUSE(
                operations, mountpoint, foreground=True, raw_fi=True, debug=options.debug, **kwargs
            )
        except Exception as error:  # noqa: BLE001
            if operations.was_ready:  # libfuse 3 reports a loop ended by a signal as error 8
                log.info("stopped (%s); unmounted", error)
                return 0
            return fail(f"cannot mount {url} at {mountpoint}: {error}")
        return 0

    try:
        return run()
    except KeyboardInterrupt:  # a signal before the mount was live (``signals``)
        number = stopping.requested or signal.SIGINT  # else Python's own KeyboardInterrupt
        fail(f"{number.name} while mounting {url}: not mounted")
        return 128 + number
    finally:
        forget_daemon(device)
        idle.set()
        stopping.uninstall()


def _root_opener(url: str, options: MountOptions, storage_options: dict):
    """The root's opener: ``storage_options`` as the command line merged them with the ``-o``
    ones (``options.mount_storage_options``)."""
    consolidated, follow_symlinks = options.consolidated, options.follow_symlinks

    def open_root():
        return engine.open(
            url, consolidated=consolidated, follow_symlinks=follow_symlinks, **storage_options
        )

    return open_root


def _setup_logging(options: MountOptions, log_file: str | None, foreground: bool):
    ring = RingLogHandler()
    root = logging.getLogger()
    root.setLevel(options.log_level)
    # the command line's own handler writes to stderr: the daemon's stderr is libfuse's
    # captured errors, then the log file, which would get every line twice
    for handler in [h for h in root.handlers if type(h) is logging.StreamHandler]:
        root.removeHandler(handler)
    root.addHandler(ring)
    # a chunk that fails is logged once by the mount, naming the array and key (``errnos``);
    # the engine's own line for it would be a second
    logging.getLogger("zarrfs.engine.reader").setLevel(logging.ERROR)
    formatter = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    if log_file:
        handler: logging.Handler = logging.FileHandler(log_file)
        handler.setFormatter(formatter)
        root.addHandler(handler)
    if foreground:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter)
        root.addHandler(handler)
    return ring


def unmount(mountpoint: str) -> int:
    """Unmount and leave no daemon behind (``unmount``)."""
    from .unmount import unmount as clean_unmount  # noqa: PLC0415

    return clean_unmount(mountpoint, mounted_type)
