"""The channels of an OME-Zarr image as the viewer draws them: plain Python (STYLE rule 10).

An image with a channel axis opens as a composite: every active channel (``omero`` ``active``)
added in its colour, each scaled by its own window (``omero`` ``start``/``end``, else
``engine.auto_window`` of the loaded pixels, which suits sparse channels). The pixels come from
``engine.Blender`` (``engine.blend``, as the mount's ``-o composite`` files, keeping its
working buffers from tile to tile). Toggling a channel or changing its window only re-blends
the buffered values: nothing is read again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import zarrfs.engine as engine

#: pixels sampled (at most) to choose an automatic window
_AUTO_SAMPLE = 250_000


@dataclass
class ChannelView:
    label: str
    color: tuple[int, int, int]
    window: tuple[float, float] | None  # None: automatic, from the loaded pixels
    visible: bool = True
    auto_window: tuple[float, float] | None = None  # the last automatic window found


@dataclass
class ChannelState:
    """The channel axis, one ``ChannelView`` per channel, and whether they are composited."""

    axis: int
    channels: list[ChannelView]
    composite: bool = True
    blender: engine.Blender = field(default_factory=engine.Blender, repr=False, compare=False)

    @classmethod
    def for_image(cls, image, shape: tuple[int, ...]) -> ChannelState | None:
        """The channels of an ``engine.Image`` whose channel axis is in ``shape``, or None."""
        axis = image.channel_axis if image is not None else None
        if axis is None or axis >= len(shape) or len(shape) < 3:
            return None
        channels = [
            ChannelView(
                c.label,
                c.color,
                (c.window.start, c.window.end) if c.window is not None else None,
                c.active,
            )
            for c in image.channels(shape[axis])
        ]
        return cls(axis, channels)

    def windows(self, raw: np.ndarray, known: np.ndarray) -> list[tuple[float, float]]:
        """Each channel's window; automatic ones from the ``known`` pixels of ``raw``
        (channels, rows, cols), kept when nothing is known yet."""
        step = max(1, int(math.sqrt(known.size / _AUTO_SAMPLE)))
        mask = known[::step, ::step]
        out = []
        for k, channel in enumerate(self.channels):
            if channel.window is not None:
                out.append(channel.window)
                continue
            if channel.visible and mask.any():
                channel.auto_window = engine.auto_window(raw[k, ::step, ::step][mask])
            out.append(channel.auto_window or (0.0, 1.0))
        return out

    def key(self, windows: list[tuple[float, float]]) -> tuple:
        """What the blend depends on besides the values: equal keys blend equal pixels."""
        return (tuple(windows), tuple((c.visible, c.color) for c in self.channels))

    def render(
        self,
        raw: np.ndarray,
        windows: list[tuple[float, float]],
        out: np.ndarray | None = None,
        blender: engine.Blender | None = None,
    ) -> np.ndarray:
        """The composite (rows, cols, 3) ``uint8`` of the visible channels of ``raw``
        (channels, rows, cols), with ``windows`` (from :meth:`windows`); into ``out``.
        ``blender``: the calling thread's (a Blender is not thread-safe), else this state's."""
        shown = [k for k, c in enumerate(self.channels) if c.visible]
        if out is None:
            out = np.empty(raw.shape[1:] + (3,), np.uint8)
        if not shown:
            out[...] = 0
            return out
        return (blender or self.blender)(
            [raw[k] for k in shown],
            [self.channels[k].color for k in shown],
            [windows[k] for k in shown],
            out=out,
        )


def default_indices(image, axis_names: tuple[str, ...], shape: tuple[int, ...]) -> dict[int, int]:
    """``{axis: index}`` of the plane an image opens on: ``omero`` ``rdefs`` ``defaultZ`` and
    ``defaultT`` on the axes named ``z`` and ``t`` (clamped to the array)."""
    omero = getattr(image, "omero", None)
    if omero is None:
        return {}
    out = {}
    for name, value in (("z", omero.default_z), ("t", omero.default_t)):
        if value is not None and name in axis_names:
            axis = axis_names.index(name)
            out[axis] = min(value, shape[axis] - 1)
    return out
