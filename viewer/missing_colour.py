"""Missing values in a colour of their own (View > Missing values).

A CF variable's missing values (``_FillValue``, ``missing_value``, outside ``valid_range``) are
NaN once decoded and drawn transparent (``colouring``); without a backdrop they showed the
view's black, the same as the low end of the grey map, so a missing block read as data. A
backdrop under the plane (and only under it: the view around stays black) shows through them:
a chequer by default, as image editors show transparency, or a named colour. The choice is a
setting (``missing_colour``). The full-resolution export paints the same (:func:`paint`).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QActionGroup, QBrush, QColor, QPainter, QPixmap
from PySide6.QtWidgets import QGraphicsRectItem

#: the choices of the menu, by the name the setting stores
COLOURS = {
    "chequer": None,
    "magenta": "#ff00ff",
    "white": "#ffffff",
    "grey": "#808080",
}
DEFAULT = "chequer"
#: the two greys of the chequer, and its square (in screen pixels)
CHEQUER = ("#9a9a9a", "#c8c8c8")
_SQUARE = 8


def brush(name: str) -> QBrush:
    """The brush of ``name`` (an unknown name: the chequer)."""
    colour = COLOURS.get(name)
    if colour is not None:
        return QBrush(QColor(colour))
    tile = QPixmap(2 * _SQUARE, 2 * _SQUARE)
    tile.fill(QColor(CHEQUER[0]))
    painter = QPainter(tile)
    for x, y in ((0, 0), (_SQUARE, _SQUARE)):
        painter.fillRect(x, y, _SQUARE, _SQUARE, QColor(CHEQUER[1]))
    painter.end()
    return QBrush(tile)


def paint(rgb: np.ndarray, missing: np.ndarray, name: str) -> None:
    """Paint the pixels of ``rgb`` (rows, columns, 3 ``uint8``) where ``missing`` is true as
    the screen shows missing values: the named colour, or the chequer in squares of 8 pixels
    (the light grey at the top-left square, as :func:`brush`'s tile)."""
    colour = COLOURS.get(name, COLOURS[DEFAULT])
    if colour is not None:
        rgb[missing] = _rgb(colour)
        return
    rows, cols = np.indices(missing.shape, sparse=True)
    light = (rows // _SQUARE + cols // _SQUARE) % 2 == 0
    rgb[missing & ~light] = _rgb(CHEQUER[0])
    rgb[missing & light] = _rgb(CHEQUER[1])


def _rgb(colour: str) -> tuple[int, int, int]:
    """``"#rrggbb"`` as (red, green, blue)."""
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


class MissingBackdrop(QGraphicsRectItem):
    """The backdrop under a plane of ``width`` x ``height`` elements (``cover``)."""

    def __init__(self, name: str = DEFAULT):
        super().__init__()
        self.setPen(QColor(0, 0, 0, 0))
        self.setZValue(-100)  # under every image item of the view
        self.setFlag(QGraphicsRectItem.GraphicsItemFlag.ItemIgnoresParentOpacity)
        self.name = ""
        self.set_colour(name)

    def set_colour(self, name: str) -> None:
        self.name = name if name in COLOURS else DEFAULT
        self.setBrush(brush(self.name))

    def cover(self, width: float, height: float) -> None:
        self.setRect(QRectF(0, 0, width, height))

    def paint(self, painter, option, widget=None) -> None:
        """Fill in device pixels, so the chequer's squares stay 8 pixels at any zoom."""
        device = painter.transform().mapRect(self.rect())
        painter.save()
        painter.resetTransform()
        painter.fillRect(device, self.brush())
        painter.restore()


def install(window, view_menu) -> None:
    """View > Missing values: the choices, the one saved in ``window.settings`` applied."""
    saved = str(window.settings.value("missing_colour", DEFAULT) or DEFAULT)
    window.image.missing.set_colour(saved)
    menu = view_menu.addMenu("Missing values")
    group = QActionGroup(menu)
    for name in COLOURS:
        action = menu.addAction(name)
        action.setCheckable(True)
        action.setChecked(name == window.image.missing.name)
        group.addAction(action)
        action.triggered.connect(lambda _on, n=name: _choose(window, n))


def _choose(window, name: str) -> None:
    window.image.missing.set_colour(name)
    window.settings.setValue("missing_colour", name)
