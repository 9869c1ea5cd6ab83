"""``zarrfs unmount``: the kernel unmount, and when that fails, the daemon ended and the FUSE
connection aborted, so that nothing is left behind.

A wedged daemon (stopped, or stuck) keeps its readers waiting in the kernel and makes a plain
unmount fail (EBUSY); a lazy unmount then only hides the mount and leaves the daemon and its
readers where they were. So: ``fusermount3 -u``; if the mount stays, the daemon that serves it
gets SIGTERM, then SIGKILL after a grace period; if it still lives, the connection is aborted
(``/sys/fs/fuse/connections/N/abort``, which fails every waiting request); then the unmount again,
lazily as a last resort. The exit status is non-zero, with what was left, when anything stays.

The daemon is found without asking the mount (a wedged one would not answer): each daemon notes
its pid in a runtime file named by the mount's device number when the mount goes live
(:func:`record_daemon`); ``.zarrfs/mount.json`` is asked, with a time limit, only when that file
is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .kernel import mount_device

FS_TYPE = "fuse.zarrfs"  # what the mount table says of ours (libfuse's subtype)
GRACE_SECONDS = 5.0
_POLL = 0.05


def runtime_dir() -> Path:
    """Where daemons note their pids: ``/run/zarrfs`` for root, else the user's runtime dir."""
    if os.geteuid() == 0:
        return Path("/run/zarrfs")
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "zarrfs" if base else Path(f"/tmp/zarrfs-{os.geteuid()}")


def _record_path(device: str) -> Path:
    return runtime_dir() / f"{device.replace(':', '_')}.json"


def record_daemon(mountpoint: str) -> str | None:
    """Note this process as the daemon of ``mountpoint`` (called once the mount is live);
    the device it is filed under, or None where it cannot be noted."""
    device = mount_device(mountpoint)
    if device is None:
        return None
    try:
        runtime_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
        _record_path(device).write_text(
            json.dumps({"pid": os.getpid(), "mountpoint": os.path.abspath(mountpoint)})
        )
    except OSError:
        return None
    return device


def forget_daemon(device: str | None) -> None:
    if device is not None:
        try:
            _record_path(device).unlink()
        except OSError:
            pass


def _daemon_pid(path: str, device: str | None) -> int | None:
    """The pid of the daemon serving ``path``: from its runtime file, else from its
    ``.zarrfs/mount.json`` read within two seconds; only a live zarrfs process counts."""
    pid = None
    try:
        if device is not None:
            pid = json.loads(_record_path(device).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        pid = None
    if pid is None:
        try:
            shown = subprocess.run(
                ["cat", os.path.join(path, ".zarrfs", "mount.json")],
                capture_output=True,
                timeout=2,
                check=False,
            )
            pid = json.loads(shown.stdout)["pid"]
        except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
            return None
    return pid if isinstance(pid, int) and _is_zarrfs(pid) else None


def _is_zarrfs(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"zarrfs" in f.read()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL)
    return True


def _end_daemon(pid: int) -> bool:
    """SIGTERM, then SIGKILL after the grace period; whether the daemon is gone."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if _wait_gone(pid, GRACE_SECONDS):
            return True
    return False


def _abort_connection(device: str | None) -> bool:
    """Fail every request waiting on the mount's FUSE connection (its number is the minor
    of the mount's device)."""
    if device is None:
        return False
    try:
        Path(f"/sys/fs/fuse/connections/{device.split(':')[1]}/abort").write_text("1")
    except OSError:
        return False
    return True


def _kernel_unmount(path: str, mounted, lazy: bool) -> str | None:
    """Unmount; None once ``path`` is not mounted, else the helper's message."""
    helper = next((h for h in ("fusermount3", "fusermount") if shutil.which(h)), None)
    command = [helper, "-uz" if lazy else "-u", path] if helper else ["umount", path]
    if helper is None and lazy:
        command.insert(1, "-l")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if not mounted(path):
        return None
    return (result.stderr or result.stdout).strip() or f"{command[0]} failed"


def unmount(mountpoint: str, mounted_type) -> int:
    """Unmount ``mountpoint`` and leave no daemon behind; an exit status."""
    path = os.path.abspath(os.path.expanduser(mountpoint))
    kind = mounted_type(path)
    if kind is None:
        print(f"zarrfs unmount: {path} is not mounted", file=sys.stderr)
        return 1
    if kind != FS_TYPE:  # as root, fusermount3 -u would unmount anything
        print(
            f"zarrfs unmount: {path} is not a zarrfs mount (it is {kind or 'unknown'}); use umount",
            file=sys.stderr,
        )
        return 1

    def mounted(p: str) -> bool:
        return mounted_type(p) is not None

    device = mount_device(path)
    pid = _daemon_pid(path, device)
    error = _kernel_unmount(path, mounted, lazy=False)
    left: list[str] = []
    if error is None:  # unmounted: the daemon ends by itself; make sure
        if pid is not None and not _wait_gone(pid, GRACE_SECONDS) and not _end_daemon(pid):
            left.append(f"the daemon (pid {pid}) is still running")
    else:
        if pid is not None and not _end_daemon(pid):
            left.append(f"the daemon (pid {pid}) could not be ended")
        if (pid is None or left) and not _abort_connection(device):
            left.append("the FUSE connection could not be aborted")
        if mounted(path):
            error = _kernel_unmount(path, mounted, lazy=False)
            if error is not None:
                error = _kernel_unmount(path, mounted, lazy=True)
        if error is not None:
            left.append(f"{path} is still mounted: {error}")
    forget_daemon(device)
    if left:
        print(f"zarrfs unmount: {'; '.join(left)}", file=sys.stderr)
        return 1
    return 0
