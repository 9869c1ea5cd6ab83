"""``zarrfs desktop install|uninstall``: the viewer in this user's application menu.

Follows freedesktop.org's specifications: the Base Directory Specification for where
(``$XDG_DATA_HOME``, else ``~/.local/share``), the Desktop Entry Specification (1.4) for the entry
(``applications/zarrfs-viewer.desktop``, the name the viewer gives Qt as its desktop file), and
the Icon Theme Specification for the icon (a scalable SVG in the ``hicolor`` theme, which every
desktop falls back to). The entry runs this installation's ``zarrfs`` by absolute path: the
``bin`` folder of a virtual environment or of pipx is often not on the desktop session's PATH.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

log = logging.getLogger(__name__)

ENTRY_NAME = "zarrfs-viewer.desktop"
ICON_NAME = "zarrfs"  # the entry's Icon=, looked up in the icon theme
MIME_TYPES = ("inode/directory", "x-scheme-handler/s3", "x-scheme-handler/gs")

# Desktop Entry Specification, "The Exec key": characters that make an argument need quotes, and
# those that need a backslash inside the quotes.
_RESERVED = frozenset(" \t\n\"'\\><~|&;$*?#()`")
_ESCAPED_IN_QUOTES = frozenset('"`$\\')


def data_home(environ=os.environ) -> Path:
    """``$XDG_DATA_HOME``, or ``~/.local/share`` when it is unset, empty or relative (the spec
    says to ignore a relative one)."""
    value = environ.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "share"


def entry_path(home: Path) -> Path:
    return home / "applications" / ENTRY_NAME


def icon_install_path(home: Path) -> Path:
    return home / "icons" / "hicolor" / "scalable" / "apps" / f"{ICON_NAME}.svg"


def zarrfs_command() -> list[str]:
    """The command that runs this installation of zarrfs: the ``zarrfs`` script beside the
    interpreter (a venv, pipx), else the interpreter with ``-m zarrfs``."""
    script = Path(sys.executable).parent / "zarrfs"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "zarrfs"]


def escape_string(text: str) -> str:
    """A value of type string: backslash, newline, tab and carriage return escaped."""
    table = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return "".join(table.get(char, char) for char in text)


def exec_argument(arg: str) -> str:
    """One argument of ``Exec=``: ``%`` doubled, quoted when it holds a reserved character
    (with ``"``, backquote, ``$`` and backslash escaped inside), then escaped as a string."""
    arg = arg.replace("%", "%%")
    if any(char in _RESERVED for char in arg):
        arg = '"' + "".join("\\" + c if c in _ESCAPED_IN_QUOTES else c for c in arg) + '"'
    return escape_string(arg)


def desktop_entry(command: list[str]) -> str:
    """The text of the entry that runs ``command view URL``."""
    exec_line = " ".join([*map(exec_argument, command), "view", "%u"])
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            "Version=1.4",
            "Name=zarrfs viewer",
            "GenericName=Zarr Viewer",
            "Comment=Browse Zarr v2/v3 stores and view their arrays, loading only what is on screen",
            f"TryExec={escape_string(command[0])}",
            f"Exec={exec_line}",
            f"Icon={ICON_NAME}",
            "Terminal=false",
            "Categories=Science;DataVisualization;Qt;",
            "MimeType=" + "".join(f"{mime};" for mime in MIME_TYPES),
            "Keywords=zarr;ome-zarr;ngff;array;hdf;microscopy;",
            "StartupWMClass=zarrfs",
            "",
        ]
    )


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` at once (a menu never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.chmod(0o644)
    partial.replace(path)


def _refresh(home: Path) -> None:
    """Update the caches desktops read, where their tools are installed: the MIME cache (so file
    managers offer the viewer for folders) and the icon cache (only where one already exists;
    without one, desktops read the folder)."""
    commands = [["update-desktop-database", "-q", str(home / "applications")]]
    theme = home / "icons" / "hicolor"
    if (theme / "icon-theme.cache").exists():
        commands.append(["gtk-update-icon-cache", "-q", "-t", "-f", str(theme)])
    for command in commands:
        if shutil.which(command[0]) is None:
            log.debug("%s is not installed; not run", command[0])
            continue
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode:
            log.warning("%s failed: %s", command[0], result.stderr.strip())


def install(home: Path, command: list[str] | None = None) -> list[Path]:
    """Write the entry and the icon under ``home``; returns the files written."""
    icon = (files("zarrfs.viewer.icons") / f"{ICON_NAME}.svg").read_bytes()
    entry = desktop_entry(command or zarrfs_command()).encode("utf-8")
    written = [icon_install_path(home), entry_path(home)]  # the icon first: the entry names it
    for path, data in zip(written, (icon, entry), strict=True):
        _write(path, data)
    _refresh(home)
    return written


def uninstall(home: Path) -> list[Path]:
    """Remove the entry and the icon from ``home``; returns the files removed."""
    removed = []
    for path in (entry_path(home), icon_install_path(home)):
        if path.is_file():
            path.unlink()
            removed.append(path)
    if removed:
        _refresh(home)
    return removed


def viewer_missing() -> list[str]:
    """The viewer's packages that are not installed (``pip install 'zarrfs[viewer]'``)."""
    return [name for name in ("PySide6", "pyqtgraph") if importlib.util.find_spec(name) is None]


def run(args: argparse.Namespace) -> int:
    home = data_home()
    if args.action == "install":
        missing = viewer_missing()
        if missing:
            print(
                f"zarrfs: error: the viewer is not installed (no {', '.join(missing)}); "
                "install it with pip install 'zarrfs[viewer]', then run this again",
                file=sys.stderr,
            )
            return 1
        for path in install(home):
            print(f"installed {path}")
        return 0
    removed = uninstall(home)
    for path in removed:
        print(f"removed {path}")
    if not removed:
        print(f"nothing to remove: no zarrfs desktop entry in {home}")
    return 0


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "desktop",
        help="add the viewer to this user's application menu (or remove it)",
        description="Install (or remove) the viewer's desktop entry and icon for this user, "
        "under $XDG_DATA_HOME (default ~/.local/share): the application menu then lists "
        "'zarrfs viewer', which opens folders and s3:// and gs:// URLs.",
    )
    parser.add_argument("action", choices=["install", "uninstall"])
    parser.set_defaults(func=run)
