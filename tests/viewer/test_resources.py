"""Icons and theme come from the installed package ``zarrfs.viewer`` through importlib.resources."""

from __future__ import annotations

import logging
from importlib.resources import files

from zarrfs.viewer import resources


def test_every_icon_renders(qapp):
    names = resources.icon_names()
    assert {"zarrfs", "group", "array-2d", "error", "copy", "open-url"} <= set(names)
    for name in names:
        assert (
            resources.icon_path(name).read_bytes()
            == (files("zarrfs.viewer.icons") / f"{name}.svg").read_bytes()
        )
        pixmap = resources.icon(name).pixmap(32, 32)
        assert not pixmap.isNull(), name
        assert _any_opaque(pixmap), name  # drawn, not an empty image


def _any_opaque(pixmap) -> bool:
    image = pixmap.toImage()
    return any(
        image.pixelColor(x, y).alpha() for x in range(image.width()) for y in range(image.height())
    )


def test_dark_theme_is_loaded(caplog):
    with caplog.at_level(logging.WARNING, logger=resources.__name__):
        text = resources.style_sheet("dark")
    assert "QMainWindow" in text or "QWidget" in text
    assert not caplog.records


def test_a_missing_icon_is_named_and_empty(qapp, caplog):
    with caplog.at_level(logging.WARNING, logger=resources.__name__):
        assert resources.icon("no-such-icon").isNull()
        assert resources.style_sheet("no-such-theme") == ""
    messages = [r.getMessage() for r in caplog.records]
    assert any("missing icon no-such-icon.svg" in m for m in messages), messages
    assert any("missing style sheet no-such-theme.qss" in m for m in messages), messages
