"""``zarrfs desktop install|uninstall``: a valid desktop entry and icon under ``$XDG_DATA_HOME``
whose command opens a folder in the viewer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from zarrfs import desktop
from zarrfs.cli import main

DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo.zarr"
STRING_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def validate(path: Path) -> None:
    """desktop-file-validate (desktop-file-utils, installed by packaging/setup.sh)."""
    assert shutil.which("desktop-file-validate"), "desktop-file-utils: run packaging/setup.sh"
    result = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def entry_keys(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line)


def exec_argv(value: str) -> list[str]:
    """Exec= as a launcher reads it: string escapes, then the quoting rules, which are a POSIX
    shell's double quotes (so /bin/sh splits it), then ``%%`` for a literal ``%``."""
    unescaped = re.sub(r"\\(.)", lambda m: STRING_ESCAPES[m.group(1)], value)
    words = subprocess.run(
        ["sh", "-c", f"printf '%s\\0' {unescaped}"], capture_output=True, text=True, check=True
    ).stdout
    return [arg.replace("%%", "%") for arg in words.split("\0")[:-1]]


def run_zarrfs(tmp_path, *args, **env):
    return subprocess.run(
        [sys.executable, "-m", "zarrfs", *args],
        cwd=tmp_path,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_install_then_the_entry_opens_a_folder(tmp_path):
    home = tmp_path / "data"
    result = run_zarrfs(tmp_path, "desktop", "install", XDG_DATA_HOME=str(home))
    assert result.returncode == 0, result.stderr
    entry = home / "applications" / "zarrfs-viewer.desktop"
    icon = home / "icons" / "hicolor" / "scalable" / "apps" / "zarrfs.svg"
    assert result.stdout.split() == ["installed", str(icon), "installed", str(entry)]
    validate(entry)
    assert icon.read_bytes() == (files("zarrfs.viewer.icons") / "zarrfs.svg").read_bytes()
    keys = entry_keys(entry)
    assert keys["Icon"] == "zarrfs" and keys["Type"] == "Application"
    assert keys["MimeType"] == "inode/directory;x-scheme-handler/s3;x-scheme-handler/gs;"
    mime_cache = (home / "applications" / "mimeinfo.cache").read_text()
    assert "inode/directory=zarrfs-viewer.desktop;" in mime_cache
    assert "x-scheme-handler/s3=zarrfs-viewer.desktop;" in mime_cache

    argv = exec_argv(keys["Exec"])
    assert argv[-2:] == ["view", "%u"] and Path(argv[0]).is_absolute()
    assert keys["TryExec"] == argv[0]
    # what a file manager runs for the folder: %u as a file: URL
    shot = tmp_path / "shot.png"
    command = [*argv[:-1], DEMO.as_uri(), "--node", "images/cells", "--screenshot", str(shot)]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    opened = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert opened.returncode == 0, opened.stderr
    assert "missing" not in opened.stderr and shot.stat().st_size > 0


def test_exec_quotes_a_command_with_reserved_characters(tmp_path):
    program = "/opt/my apps/$HOME `x` \"q\" 'a' 100%\\b/zarrfs"
    desktop.install(tmp_path, command=[program, "-X", "dev"])
    entry = desktop.entry_path(tmp_path)
    validate(entry)
    keys = entry_keys(entry)
    assert exec_argv(keys["Exec"]) == [program, "-X", "dev", "view", "%u"]
    assert re.sub(r"\\(.)", lambda m: STRING_ESCAPES[m.group(1)], keys["TryExec"]) == program


def test_uninstall_removes_its_files_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert main(["desktop", "install"]) == 0
    other = tmp_path / "applications" / "other.desktop"
    other.write_text("[Desktop Entry]\n")
    capsys.readouterr()
    assert main(["desktop", "uninstall"]) == 0
    assert capsys.readouterr().out.split() == [
        "removed",
        str(desktop.entry_path(tmp_path)),
        "removed",
        str(desktop.icon_install_path(tmp_path)),
    ]
    assert other.exists() and not desktop.entry_path(tmp_path).exists()
    assert not desktop.icon_install_path(tmp_path).exists()
    assert main(["desktop", "uninstall"]) == 0
    assert capsys.readouterr().out.startswith("nothing to remove")


def test_install_without_the_viewer_is_refused(tmp_path, monkeypatch, capsys):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "PySide6" else real_find_spec(name, *a),
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert main(["desktop", "install"]) == 1
    err = capsys.readouterr().err
    assert "the viewer is not installed (no PySide6)" in err and "zarrfs[viewer]" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("value", [None, "", "relative/data"])
def test_data_home_defaults_to_local_share(value, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    environ = {} if value is None else {"XDG_DATA_HOME": value}
    assert desktop.data_home(environ) == tmp_path / ".local" / "share"
    assert desktop.data_home({"XDG_DATA_HOME": "/x/y"}) == Path("/x/y")
