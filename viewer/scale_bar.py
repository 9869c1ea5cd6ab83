"""A scale bar in the image's corner: a round physical length (``physical.PhysicalAxes.bar``)
drawn as a bar of that many elements, chosen again as the view zooms."""

from __future__ import annotations

import pyqtgraph as pg


class ScaleBar(pg.ScaleBar):
    """pyqtgraph's bar (sized in view units: elements), labelled in physical units."""

    def __init__(self):
        super().__init__(size=1, width=6, brush="w", suffix="")
        self.length = 0.0  # the physical length shown
        self.label = ""

    def show_length(self, elements: float, length: float, label: str) -> None:
        self.size, self.length, self.label = elements, length, label
        self.text.setText(label)
        self.updateBar()
