"""Physical space of an OME-Zarr image as the viewer uses it: plain Python (STYLE rule 10).

``coordinateTransformations`` give each pyramid level a scale and a translation per axis, in the
units its axes name: element ``i`` along an axis sits at ``translation + i * scale``. The viewer
shows those coordinates beside the indices, draws a scale bar, and draws anisotropic planes
(the XZ plane of a z-stack) with their true aspect ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .coordinates import MAX_ELEMENTS, AxisCoordinate

#: Unit names of the NGFF spec (UDUNITS-2) shortened for the screen.
SHORT_UNITS = {
    "angstrom": "Å",
    "nanometer": "nm",
    "micrometer": "µm",
    "micron": "µm",
    "millimeter": "mm",
    "centimeter": "cm",
    "meter": "m",
    "kilometer": "km",
    "nanosecond": "ns",
    "microsecond": "µs",
    "millisecond": "ms",
    "second": "s",
    "minute": "min",
    "hour": "h",
}


def short_unit(unit: str | None) -> str:
    return SHORT_UNITS.get(unit, unit) if unit else ""


@dataclass(frozen=True)
class PhysicalAxes:
    """Scale, translation and unit per axis of the array on screen."""

    scale: tuple[float, ...]
    translation: tuple[float, ...]
    units: tuple[str | None, ...]
    types: tuple[str | None, ...]

    @classmethod
    def for_level(cls, image, node_path: str, ndim: int) -> PhysicalAxes | None:
        """The transforms of the dataset ``node_path`` is (by its path's end; else the first
        level), or None without an image or a scale for every axis."""
        if image is None:
            return None
        datasets = image.multiscale.datasets
        matching = [d for d in datasets if node_path == d.path or node_path.endswith("/" + d.path)]
        dataset = matching[0] if matching else (datasets[0] if datasets else None)
        axes = image.multiscale.axes
        if dataset is None or dataset.scale is None or not len(dataset.scale) == len(axes) == ndim:
            return None
        return cls(
            dataset.scale,
            dataset.translation or (0.0,) * ndim,
            tuple(a.unit for a in axes),
            tuple(a.type for a in axes),
        )

    def coordinate(self, axis: int, index: float) -> float:
        return self.translation[axis] + index * self.scale[axis]

    def describe(self, axis: int, index: float) -> str | None:
        """``"5.25 µm"`` for element ``index`` along ``axis``; None for a channel axis."""
        if self.types[axis] == "channel":
            return None
        unit = short_unit(self.units[axis])
        value = f"{self.coordinate(axis, index):.4g}"
        return f"{value} {unit}" if unit else value

    def aspect(self, y_axis: int, x_axis: int) -> float:
        """Screen pixels per x unit over per y unit (pyqtgraph's ratio) for the true shape."""
        sy, sx = abs(self.scale[y_axis]), abs(self.scale[x_axis])
        return sx / sy if sy > 0 and sx > 0 else 1.0

    def bar(self, x_axis: int, view_width: float) -> tuple[float, float, str]:
        """A scale bar for a view ``view_width`` elements wide: ``(elements, physical length,
        label)``, the length a 1, 2 or 5 times a power of ten near a fifth of the view."""
        step = abs(self.scale[x_axis])
        target = max(view_width, 1e-12) * step / 5
        power = 10 ** math.floor(math.log10(target))
        length = max(m * power for m in (1, 2, 5) if m * power <= target)
        unit = short_unit(self.units[x_axis])
        label = f"{length:g} {unit}" if unit else f"{length:g}"
        return length / step, length, label


def axis_coordinates(physical: PhysicalAxes | None, names, shape) -> dict[int, AxisCoordinate]:
    """``{axis: AxisCoordinate}`` of the axes with a unit (not the channel axis), in that
    unit: the image's axes are then ticked in µm, titled "x (µm)", as napari does."""
    out: dict[int, AxisCoordinate] = {}
    if physical is None:
        return out
    for axis, size in enumerate(shape):
        unit = short_unit(physical.units[axis])
        if not unit or physical.types[axis] == "channel" or size > MAX_ELEMENTS:
            continue
        numbers = physical.translation[axis] + np.arange(size) * physical.scale[axis]
        out[axis] = AxisCoordinate(names[axis], "number", unit, numbers, numbers)
    return out
