"""``zarrfs view`` in a terminal: one line and status 1 without a display (never Qt's abort),
and ``--screenshot`` prints none of Qt's platform notes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo.zarr"


def _view(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zarrfs.cli", "view", *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_display_is_one_line_and_status_1(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    result = _view(env, DEMO)
    assert result.returncode == 1
    assert result.stderr == "zarrfs view: no display; use --screenshot PNG or set DISPLAY\n"
    result = _view(dict(env, QT_QPA_PLATFORM="xcb"), DEMO)
    assert result.returncode == 1 and "no display" in result.stderr


def test_no_display_check_follows_the_platform():
    from zarrfs.viewer.cli import no_display

    assert no_display({})
    assert not no_display({"DISPLAY": ":0"})
    assert not no_display({"WAYLAND_DISPLAY": "wayland-0"})
    assert no_display({"WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"})
    assert not no_display({"QT_QPA_PLATFORM": "offscreen"})
    assert not no_display({"QT_QPA_PLATFORM": "wayland;xcb", "DISPLAY": ":1"})


def test_screenshot_prints_no_platform_notes(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    env.pop("QT_LOGGING_RULES", None)
    out = tmp_path / "p.png"
    result = _view(env, DEMO, "--node", "volumes/phantom", "--index", "32", "--screenshot", out)
    assert result.returncode == 0, result.stderr
    assert "propagateSizeHints" not in result.stderr
    assert out.stat().st_size > 10_000
