"""``zarrfs unmount`` of a wedged daemon cleans up: the daemon is stopped on purpose (SIGSTOP)
with a reader waiting on it, so the plain unmount fails (busy); the daemon must then be ended
(SIGTERM, then SIGKILL), the reader released, the mount gone, and the exit status 0."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.fuse.conftest import needs_fuse, zarrfs_command
from tests.hostile import write_v2_array
from zarrfs.fuse.daemon import is_mounted
from zarrfs.fuse.unmount import runtime_dir

pytestmark = [needs_fuse, pytest.mark.fuse]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def test_unmount_of_a_wedged_daemon_ends_it(tmp_path, mount):
    write_v2_array(tmp_path, "a", bytes(range(256)) * 16, None)
    m = mount(str(tmp_path / "a"), daemon=True)
    pid = m.daemon_pid()
    assert any(runtime_dir().glob("*.json"))  # the daemon noted itself
    os.kill(pid, signal.SIGSTOP)
    reader = subprocess.Popen(
        ["cat", str(m.path / "data.raw")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        time.sleep(0.5)
        assert reader.poll() is None  # waiting on the stopped daemon
        result = subprocess.run(
            zarrfs_command("unmount", str(m.path)), capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert not is_mounted(str(m.path))
        assert _gone(pid)
        reader.wait(timeout=10)  # released (with an error), not left in the kernel
        assert reader.returncode != 0
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
        reader.kill()
        reader.wait()
