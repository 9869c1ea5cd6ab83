"""``-o composite``: a plane of an OME-Zarr image's channels as one RGB ``.tif``.

Where ``planes/.../c_1/z_017.tif`` is one channel, ``planes/.../composite/z_017.tif`` is every
active channel of that plane (``omero`` ``active``) scaled by its window and tinted with its
colour, added (``engine.blend``, the viewer's composite). A channel without an ``omero`` window
gets ``engine.auto_window`` of its values in that plane. The file is an uncompressed RGB TIFF
laid out like the other plane files (``tiff.tiff_layout``, calibrated like them:
``tiff_meta.calibration_tags``, with the names of the channels it blends), so its size is
exact before any data is read; the pixels are rendered, all at once, when it is opened.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import zarrfs.engine as engine

from ..tiff import tiff_layout
from ..tiff_meta import calibration_tags
from .files import BytesFile

NAME = "composite"


@dataclass(frozen=True)
class CompositeSpec:
    """The channel axis of an array and the OME-Zarr level that colours its channels."""

    axis: int
    level: engine.Level


def channel_axis(array, level, options) -> CompositeSpec | None:
    """What ``composite`` files of ``array`` need, or None where it offers none: the option is
    off, the array is no image level, its channel axis is one of the plane's own two axes, or
    its values are not numbers."""
    if not getattr(options, "composite", False) or level is None:
        return None
    axis = level.image.channel_axis
    ndim = len(array.shape)
    if axis is None or axis >= ndim - 2 or np.dtype(array.dtype).kind not in "biuf":
        return None
    return CompositeSpec(axis, level)


def composite_rgb(array, spec: CompositeSpec, prefix: tuple) -> np.ndarray:
    """The ``uint8`` RGB composite of the plane at ``prefix`` (``None`` at the channel axis)."""
    selection = tuple(slice(None) if i is None else i for i in prefix) + (slice(None),) * 2
    values = array.read(selection)  # (channels, height, width)
    channels = spec.level.image.channels(values.shape[0])
    shown = [k for k, c in enumerate(channels) if c.active]
    if not shown:
        return np.zeros(values.shape[1:] + (3,), np.uint8)
    windows = [
        (channels[k].window.start, channels[k].window.end)
        if channels[k].window is not None
        else engine.auto_window(values[k])
        for k in shown
    ]
    return engine.blend([values[k] for k in shown], [channels[k].color for k in shown], windows)


class CompositeFile:
    """``planes/.../composite/<plane>.tif``: exact size from metadata, content on open."""

    direct_io = False

    def __init__(self, array, spec: CompositeSpec, prefix: tuple):
        self.array = array
        self.spec = spec
        self.prefix = prefix
        count = tuple(array.shape)[spec.axis]
        shown = tuple(c for c in spec.level.image.channels(count) if c.active)
        tags = calibration_tags(spec.level, len(array.shape), channels=shown, composite=True)
        plane = tuple(array.shape)[-2:]
        self.layout = tiff_layout(np.dtype(np.uint8), plane, samples=3, tags=tags)

    @property
    def size(self) -> int:
        return self.layout.size

    def open(self) -> BytesFile:
        content = self.layout.prefix + composite_rgb(self.array, self.spec, self.prefix).tobytes()
        return BytesFile(lambda: content)


def composite_file(array, spec: CompositeSpec, prefix: tuple) -> CompositeFile:
    return CompositeFile(array, spec, prefix)
