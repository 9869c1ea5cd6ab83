"""Mount fixtures: real FUSE mounts in a subprocess, always unmounted in ``finally``.

``mount(url, *options, storage_options=None, daemon=False)`` starts ``zarrfs mount --foreground``
(or the daemonizing form) in a subprocess, waits until the kernel mount answers, and returns the
mount point. Teardown sends SIGTERM (libfuse unmounts cleanly), then falls back to a lazy
``fusermount3 -uz`` and a kill, so a failed test never leaves a mount behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from zarrfs.fuse.daemon import is_mounted

READY_TIMEOUT = 30.0

needs_fuse = pytest.mark.skipif(
    not (os.path.exists("/dev/fuse") and shutil.which("fusermount3")),
    reason="needs /dev/fuse and fusermount3",
)


def zarrfs_command(*args: str) -> list[str]:
    """``zarrfs ...`` through the mount's own CLI module (independent of zarrfs/cli.py)."""
    return [sys.executable, "-m", "zarrfs.fuse.cli", *args]


def storage_flags(storage_options: dict | None) -> list[str]:
    flags: list[str] = []
    for key, value in (storage_options or {}).items():
        flags += ["-O", f"{key}={json.dumps(value)}"]
    return flags


@dataclass
class Mounted:
    path: Path
    process: subprocess.Popen | None  # None for a daemonized mount
    log_file: Path

    def daemon_pid(self) -> int:
        status = json.loads((self.path / ".zarrfs" / "mount.json").read_text())
        return int(status["pid"])


def wait_mounted(path: Path, process: subprocess.Popen | None, log_file: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if is_mounted(str(path)):
            try:
                os.listdir(path)
                return
            except OSError:
                pass
        if process is not None and process.poll() is not None:
            stderr = _log(log_file.with_name(log_file.name.replace("mount", "stderr")))
            raise RuntimeError(f"mount exited with {process.returncode}: {stderr}")
        time.sleep(0.05)
    raise TimeoutError(f"{path} not mounted after {READY_TIMEOUT}s: {_log(log_file)}")


def _log(log_file: Path) -> str:
    try:
        return log_file.read_text()[-4000:]
    except OSError:
        return "(no log)"


def force_unmount(path: Path) -> None:
    for command in (["fusermount3", "-u", str(path)], ["fusermount3", "-uz", str(path)]):
        if not is_mounted(str(path)):
            return
        subprocess.run(command, capture_output=True, check=False)


@pytest.fixture
def mount(tmp_path):
    """Factory: ``mount(url, *mount_options, storage_options=None, daemon=False) -> Mounted``."""
    mounted: list[Mounted] = []

    def start(
        url: str, *mount_options: str, storage_options: dict | None = None, daemon: bool = False
    ) -> Mounted:
        path = tmp_path / f"mnt{len(mounted)}"
        path.mkdir()
        log_file = tmp_path / f"mount{len(mounted)}.log"
        args = [
            "mount",
            str(url),
            str(path),
            "--log-file",
            str(log_file),
            *storage_flags(storage_options),
        ]
        for option in mount_options:
            args += ["-o", option]
        if daemon:
            result = subprocess.run(
                zarrfs_command(*args), capture_output=True, text=True, timeout=READY_TIMEOUT
            )
            entry = Mounted(path, None, log_file)
            mounted.append(entry)
            if result.returncode != 0:
                raise RuntimeError(f"mount failed: {result.stderr}")
            wait_mounted(path, None, log_file)
            return entry
        with open(tmp_path / f"stderr{len(mounted)}.log", "ab") as stderr:
            process = subprocess.Popen(
                zarrfs_command(*args, "--foreground"), stdout=subprocess.DEVNULL, stderr=stderr
            )
        entry = Mounted(path, process, log_file)
        mounted.append(entry)
        wait_mounted(path, process, log_file)
        return entry

    try:
        yield start
    finally:
        for entry in mounted:
            _stop(entry)


def _stop(entry: Mounted) -> None:
    try:
        if entry.process is not None and entry.process.poll() is None:
            entry.process.send_signal(signal.SIGTERM)
            try:
                entry.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                entry.process.kill()
                entry.process.wait(timeout=10)
        elif entry.process is None and is_mounted(str(entry.path)):
            subprocess.run(["fusermount3", "-u", str(entry.path)], capture_output=True, check=False)
    finally:
        force_unmount(entry.path)
