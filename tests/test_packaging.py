"""The installed distribution: one top-level package, ``zarrfs``, runnable as ``python -m zarrfs``.

Run from ``tmp_path`` so that the repository's folders are not on ``sys.path`` by accident: what
imports is what the installation (editable here; a wheel in ``packaging/check_install.py``) gives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo.zarr"


def run_python(tmp_path, *args):
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_python_m_zarrfs_runs_the_command(tmp_path):
    version = run_python(tmp_path, "-m", "zarrfs", "--version")
    assert (version.returncode, version.stdout.strip()) == (0, "zarrfs 0.1.0"), version.stderr
    tree = run_python(tmp_path, "-m", "zarrfs", "tree", str(DEMO))
    assert tree.returncode == 0, tree.stderr
    assert "phantom  64 x 256 x 256 uint16" in tree.stdout
    usage = run_python(tmp_path, "-m", "zarrfs", "--help")
    assert usage.stdout.startswith("usage: zarrfs ")
    assert "view" in usage.stdout and "mount" in usage.stdout


def test_only_zarrfs_is_a_top_level_package(tmp_path):
    code = (
        "import importlib.util as u, zarrfs.viewer.cli, zarrfs.viewer.icons\n"
        "print([n for n in ('viewer', 'resources') if u.find_spec(n)])"
    )
    result = run_python(tmp_path, "-c", code)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_the_demo_writes_where_git_ignores_it():
    """``packaging/demo.sh`` run from the clone writes ``./zarrfs-demo/``: git ignores it."""
    root = Path(__file__).resolve().parent.parent
    script = (root / "packaging" / "demo.sh").read_text()
    assert 'out="$PWD/zarrfs-demo"' in script
    if not (root / ".git").exists():
        pytest.skip("not a git clone")
    proc = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "-q", "zarrfs-demo/viewer.png"], check=False
    )
    assert proc.returncode == 0
