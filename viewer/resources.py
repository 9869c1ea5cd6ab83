"""Find the viewer's icons and theme through ``importlib.resources``.

The files live in the repository's ``resources/icons`` and ``resources/style`` and install as the
packages ``zarrfs.viewer.icons`` and ``zarrfs.viewer.style`` (``package-dir`` in
``pyproject.toml``), so one lookup serves a wheel, a pipx install and an editable install, and
never a path beside the source tree.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
from importlib.resources import as_file, files
from pathlib import Path

logger = logging.getLogger(__name__)

ICONS = "zarrfs.viewer.icons"
STYLES = "zarrfs.viewer.style"

# Files handed to Qt by name must stay on disk while the process runs: ``as_file`` gives the
# installed file itself, or (for a package in a zip) a temporary copy removed at exit.
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def icon_path(name: str) -> Path | None:
    """The file of the icon ``name`` (``<name>.svg``), or None when the package has none."""
    resource = files(ICONS) / f"{name}.svg"
    if not resource.is_file():
        return None
    return _extracted.enter_context(as_file(resource))


def icon_names() -> list[str]:
    """Every icon the package ships, by name."""
    return sorted(
        entry.name.removesuffix(".svg")
        for entry in files(ICONS).iterdir()
        if entry.name.endswith(".svg")
    )


@functools.cache
def icon(name: str):
    """A QIcon for the icon ``name`` (an empty icon, and a warning, if it is missing)."""
    from PySide6.QtGui import QIcon

    path = icon_path(name)
    if path is None:
        logger.warning("missing icon %s.svg in %s", name, ICONS)
        return QIcon()
    return QIcon(str(path))


def style_sheet(theme: str = "dark") -> str:
    """The Qt style sheet text of a theme ("" when it is missing: Qt's default look)."""
    resource = files(STYLES) / f"{theme}.qss"
    try:
        return resource.read_text(encoding="utf-8")
    except OSError:
        logger.warning("missing style sheet %s.qss in %s", theme, STYLES)
        return ""
