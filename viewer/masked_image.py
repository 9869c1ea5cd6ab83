"""An ImageItem that draws NaN transparent without pyqtgraph's slow path.

pyqtgraph draws a float image holding NaN through an RGBA lookup of every pixel: about seven
times the time of the same image without NaN (14 ms against 2 ms for 1400 x 1024 float32, one
run). A CF variable's fill values are NaN once decoded (a whole ocean of them), and the picture
is drawn again as each tile lands. Here the NaN are given the low level for pyqtgraph's fast
indexed path, and the picture is then made transparent where they were (about 4 ms).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage


class MaskedImageItem(pg.ImageItem):
    """``pg.ImageItem`` whose NaN pixels are transparent (as pyqtgraph's own), drawn faster."""

    def render(self) -> None:
        image, levels = self.image, self.levels
        missing = None
        if levels is not None and not self.autoDownsample:
            missing = nan_mask(image)
        if missing is None:
            super().render()
            return
        low = np.asarray(levels, dtype=np.float64).ravel()[0]
        self.image = np.where(missing, image.dtype.type(low), image)
        self._imageHasNans = False
        try:
            super().render()
        finally:
            self.image, self._imageHasNans = image, None
        if self.qimage is not None:
            self.qimage = transparent_where(self.qimage, missing)


def nan_mask(image) -> np.ndarray | None:
    """Where a 2-D float image is NaN; None when nowhere (one reduction to tell)."""
    if image is None or image.ndim != 2 or image.dtype.kind != "f" or image.size == 0:
        return None
    if not np.isnan(image.min()):
        return None
    return np.isnan(image)


def transparent_where(qimage: QImage, mask: np.ndarray) -> QImage:
    """A copy of ``qimage`` with transparent pixels where ``mask`` (rows, columns) is true.

    Premultiplied ARGB, the format Qt paints without converting: a transparent pixel is then
    0 in all four bytes, whatever the byte order."""
    argb = qimage.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
    rows = np.frombuffer(argb.bits(), dtype=np.uint32).reshape(argb.height(), -1)
    rows[:, : argb.width()][mask] = 0
    return argb
