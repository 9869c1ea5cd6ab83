"""Hostile stores through the front ends: ``zarrfs get`` and ``zarrfs view --screenshot`` of a
decompression bomb and of metadata past a limit end with one clear line and a non-zero status,
each in a process capped in memory (``prlimit``-style, ``resource.setrlimit`` before exec) and
time (the subprocess timeout). The mount's side: ``tests/fuse/test_hostile_mount.py``."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile import write_bomb_store, write_hostile_metadata

REPO = Path(__file__).resolve().parents[1]
CAP = 2 << 30  # address space: a 2 GiB bomb decoded whole could not fit beside the interpreter


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        XDG_CONFIG_HOME=str(tmp_path),
        MALLOC_ARENA_MAX="2",
        ZARRFS_MAX_METADATA_BYTES="1M",
    )
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_cap_memory,
    )


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    return write_bomb_store(tmp_path_factory.mktemp("bomb") / "b.zarr", "zstd")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_metadata(tmp_path_factory.mktemp("meta") / "h.zarr")


def test_cli_get_of_a_bomb(bomb, tmp_path):
    out = tmp_path / "o.npy"
    result = run(
        "-m", "zarrfs.cli", "get", str(bomb / "bomb"), "[...]", "-o", str(out), tmp_path=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "decompression bomb" in result.stderr


@pytest.mark.parametrize("node", ["bomb", "huge_attrs", "deep_attrs", "void_2g"])
def test_viewer_screenshot_of_hostile_nodes(bomb, hostile, node, tmp_path):
    root = bomb if node == "bomb" else hostile
    result = run(
        "-m",
        "viewer.cli",
        "view",
        str(root),
        "--node",
        node,
        "--screenshot",
        str(tmp_path / "o.png"),
        "--timeout",
        "30",
        tmp_path=tmp_path,
    )
    assert result.returncode == 4, result.stderr  # the window showed the error
    assert "Traceback" not in result.stderr
