"""Viewer test setup: headless Qt, settings in tmp_path, a window fixture and store builders."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")


@pytest.fixture(autouse=True, scope="session")
def _survive_pyside_refcount_bug():
    """See viewer/qt_compat.py: PySide6 6.12 on Python 3.11 leaks references to True/None."""
    from zarrfs.viewer import qt_compat

    qt_compat.top_up()
    yield
    qt_compat.top_up()


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_gui_thread():
    """See viewer/qt_compat.py: a QObject freed by the GC on a worker thread crashes Qt later."""
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.enable()


@pytest.fixture(autouse=True)
def _settings_in_tmp(tmp_path, monkeypatch):
    """QSettings (recent stores) write under tmp_path, never the user's config."""
    from PySide6.QtCore import QSettings

    folder = tmp_path / "settings"
    folder.mkdir()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    yield folder


@pytest.fixture
def window(qtbot):
    """A shown main window (closed after the test, its background work stopped)."""
    from zarrfs.viewer.app import make_app
    from zarrfs.viewer.main_window import MainWindow

    make_app()
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    try:
        yield win
    finally:
        win.close()


def wait_idle(qtbot, win, timeout: float = 20.0) -> None:
    """Process events until nothing is loading (raises on timeout)."""
    from zarrfs.viewer.app import is_idle

    deadline = time.monotonic() + timeout
    idle_since = None
    while time.monotonic() < deadline:
        qtbot.wait(10)
        if is_idle(win):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 0.1:
                return
        else:
            idle_since = None
    raise AssertionError(f"viewer still loading after {timeout} s")


@pytest.fixture
def idle(qtbot):
    return lambda win, timeout=20.0: wait_idle(qtbot, win, timeout)


@pytest.fixture
def sample_store(tmp_path):
    """A v3 store written by zarr-python with one array of each kind the viewer shows."""
    import zarr

    path = tmp_path / "sample.zarr"
    root = zarr.open_group(path, mode="w")
    root.attrs.update({"title": "sample", "nested": {"list": [1, 2, {"deep": True}]}})
    rng = np.random.default_rng(0)
    volume = rng.integers(0, 60000, size=(6, 90, 130), dtype=np.uint16)
    a = root.create_array(
        "images/volume",
        shape=volume.shape,
        chunks=(1, 32, 48),
        dtype="uint16",
        dimension_names=["z", "y", "x"],
        fill_value=7,
    )
    a[:] = volume
    root["images"].attrs["kind"] = "images"
    root.create_array("line", shape=(500,), chunks=(64,), dtype="float64")[:] = np.sin(
        np.arange(500) / 20
    )
    root.create_array("scalar", shape=(), dtype="int32")[()] = 42
    strings = root.create_array("names", shape=(7,), chunks=(3,), dtype=str)
    strings[:] = np.array([f"name-{i}" for i in range(7)])
    cplx = root.create_array("wave", shape=(40, 50), chunks=(16, 16), dtype="complex64")
    cplx[:] = (np.arange(2000).reshape(40, 50) * (1 + 2j)).astype(np.complex64)
    flags = root.create_array("mask", shape=(30, 40), chunks=(16, 16), dtype="bool")
    flags[:] = (np.arange(1200).reshape(30, 40) % 3) == 0
    return path, {"volume": volume}
