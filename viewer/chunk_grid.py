"""An overlay of the chunk grid, each chunk coloured by its state (missing, loading, loaded, failed).

Drawn as one graphics item in array coordinates; only the chunks of the current request are kept,
so the overlay costs no more than the tiles on screen.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QColor, QPainter, QPen

STATE_COLOURS = {
    "loading": QColor(255, 200, 0, 60),
    "loaded": QColor(0, 200, 80, 25),
    "missing": QColor(120, 120, 120, 70),
    "failed": QColor(230, 40, 40, 110),
}


class ChunkGridItem(pg.GraphicsObject):
    """Rectangles of the chunks of one plane; ``set_states`` recolours chunks."""

    def __init__(self):
        super().__init__()
        self._states: dict[tuple[int, int], str] = {}
        self._chunk = (1.0, 1.0)
        self._shape = (0, 0)
        self._bounds = QRectF()
        self.setZValue(10)

    def reset(self, chunk_size: tuple[float, float], shape: tuple[float, float]) -> None:
        """Start over for a plane whose chunks are ``chunk_size`` (rows, cols, level-0 units)."""
        self.prepareGeometryChange()
        self._states = {}
        self._chunk, self._shape = chunk_size, shape
        self._bounds = QRectF(0, 0, shape[1], shape[0])
        self.update()

    def set_states(self, states) -> None:
        """Recolour many chunks, ``[((row, col), state), ...]``, with one repaint."""
        for coords, state in states:
            self._states[tuple(coords)] = state
        self.update()

    def state(self, coords: tuple[int, int]) -> str | None:
        return self._states.get(tuple(coords))

    def states(self) -> dict[tuple[int, int], str]:
        return dict(self._states)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, *args) -> None:
        ch, cw = self._chunk
        pen = QPen(QColor(255, 255, 255, 90))
        pen.setCosmetic(True)
        painter.setPen(pen)
        for (row, col), state in self._states.items():
            rect = QRectF(col * cw, row * ch, cw, ch).intersected(self._bounds)
            painter.setBrush(QBrush(STATE_COLOURS.get(state, QColor(0, 0, 0, 0))))
            painter.drawRect(rect)
