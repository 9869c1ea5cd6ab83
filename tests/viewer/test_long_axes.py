"""Axes longer than 2**31 - 1: the slider runs over a scaled range, the spin box holds the exact
index; and ``--screenshot`` never exits 0 after an exception in a callback."""

from __future__ import annotations

import numpy as np

from tests.hostile import write_huge_shapes
from tests.viewer.test_cli import REPO, run_view

LAST = (1 << 40) - 1


def test_an_axis_of_two_to_the_forty(window, idle, tmp_path):
    root = write_huge_shapes(tmp_path / "huge.zarr")
    window.open_store(str(root / "planes"), {}, indices=[LAST])
    idle(window)
    view = window.image
    assert window.stack.currentWidget() is view and not window.message_bar.messages()
    assert view.state.indices[0] == LAST and view.axes.spins[0].value() == LAST
    slider = view.axes.sliders[0]
    assert slider.value() == slider.maximum()
    np.testing.assert_array_equal(view.image_item.image, np.full((2, 2), 3))
    view.axes.spins[0].setValue(LAST - 1)  # exact, one below the end
    idle(window)
    assert view.state.indices[0] == LAST - 1
    slider.setValue(0)
    idle(window)
    assert view.state.indices[0] == 0 and view.axes.spins[0].value() == 0
    slider.setValue(slider.maximum() // 2)
    idle(window)
    assert abs(view.state.indices[0] - LAST // 2) <= LAST >> 20


FAILING_CALLBACK = """
import sys
import viewer.main_window as mw
def broken(self, *args):
    raise RuntimeError("broken on purpose")
mw.MainWindow._current_changed = broken
from viewer.cli import main
sys.exit(main())
"""


def test_screenshot_exits_non_zero_after_an_exception_in_a_callback(tmp_path):
    import os
    import subprocess
    import sys

    root = write_huge_shapes(tmp_path / "huge.zarr")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            FAILING_CALLBACK,
            "view",
            str(root),
            "--screenshot",
            str(tmp_path / "o.png"),
            "--timeout",
            "20",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 5, result.stderr
    assert "broken on purpose" in result.stderr
    ok = run_view(
        root / "planes", "--index", str(LAST), "--screenshot", tmp_path / "p.png", tmp_path
    )
    assert ok.returncode == 0, ok.stderr
