"""The viewer exits promptly even when a store stops answering in the middle of a read.

The store's own timeout is set far above the subprocess's bound, so a process that waits for
the stalled read to time out exceeds the bound (``subprocess.TimeoutExpired``) instead of
passing slowly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zarr

REPO = Path(__file__).resolve().parents[2]
STORE_TIMEOUT = "300"  # seconds a stalled request would take to fail
BOUND = 60  # the process must be gone well before that

CLOSE_WHILE_LOADING = """
import sys, time
from zarrfs.viewer.app import make_app
from zarrfs.viewer.main_window import MainWindow
app = make_app()
window = MainWindow()
window.show()
window.open_store(sys.argv[1], {}, path=sys.argv[2] or None)
deadline = time.monotonic() + 30
while time.monotonic() < deadline and int(sys.argv[3]) > 0:
    app.processEvents()
    if window.stack.currentWidget() is not window.placeholder:
        break
    time.sleep(0.01)
for _ in range(20):  # let the stalled read start
    app.processEvents()
    time.sleep(0.01)
window.close()
print("closed", window.background.pending, flush=True)
"""


def stalled_store(tmp_path, http_server, pattern):
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    root.create_array("z", shape=(), dtype="f4")[()] = 1
    root.create_array("s", shape=(10,), chunks=(5,), dtype=str)[:] = ["x"] * 10
    server = http_server(tmp_path / "s.zarr")
    server.faults.stall(600, pattern=pattern)
    return server


def run(args, tmp_path):
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        XDG_CONFIG_HOME=str(tmp_path),
        ZARRFS_TIMEOUT=STORE_TIMEOUT,
    )
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=BOUND
    )


@pytest.mark.parametrize("node, pattern", [(None, None), ("z", r"^z/c")])
def test_screenshot_timeout_on_a_stalled_store_exits(tmp_path, http_server, node, pattern):
    server = stalled_store(tmp_path, http_server, pattern)
    args = [
        "-m",
        "zarrfs.viewer.cli",
        "view",
        server.url,
        "--screenshot",
        str(tmp_path / "o.png"),
        "--timeout",
        "2",
    ] + (["--node", node] if node else [])
    result = run(args, tmp_path)
    assert result.returncode == 3, result.stderr  # "still loading": saved what was shown
    assert "still loading after 2 s" in result.stderr


@pytest.mark.parametrize(
    "node, pattern, wait_for_view",
    [
        ("", None, 0),  # engine.open itself stalls
        ("z", r"^z/c", 1),  # a 0-d read
        ("s", r"^s/c/", 1),  # a table's block of rows
    ],
)
def test_closing_the_window_during_a_stalled_read_exits(
    tmp_path, http_server, node, pattern, wait_for_view
):
    server = stalled_store(tmp_path, http_server, pattern)
    result = run(["-c", CLOSE_WHILE_LOADING, server.url, node, str(wait_for_view)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("closed")
    assert "Traceback" not in result.stderr


def test_background_workers_never_hold_the_process(qtbot):
    from zarrfs.viewer.tasks import Background

    release = threading.Event()
    background = Background(workers=2)
    try:
        background.run(release.wait, lambda _: None)
        names = {t.name: t.daemon for t in threading.enumerate() if t.name.startswith("viewer")}
        assert names and all(names.values()), names
    finally:
        background.close()
        release.set()
