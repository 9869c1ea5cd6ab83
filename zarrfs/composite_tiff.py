"""The RGB composite ``.tif`` of a plane of an OME-Zarr image: every active channel (``omero``
``active``) scaled by its window and tinted with its colour, added (``engine.blend``, the
viewer's composite). A channel without an ``omero`` window gets ``engine.auto_window`` of its
values in that plane.

An uncompressed RGB TIFF laid out like the other plane files (``tiff.tiff_layout``) with
OME-XML, the pixel size and the blended channels (``tiff_ome.composite_tags``), so its size is
exact before any data is read. The mount's ``-o composite`` files (``zarrfs/fuse/composite.py``)
and the viewer's TIFF export of a composite on screen are these bytes.
"""

from __future__ import annotations

import numpy as np

import zarrfs.engine as engine

from .tiff import tiff_layout
from .tiff_ome import composite_tags


def composite_rgb(array, level, prefix: tuple) -> np.ndarray:
    """The ``uint8`` RGB composite of the plane at ``prefix`` (``None`` at the channel axis)
    of ``array``, a level of an OME-Zarr image (``level``, an ``engine.Level``)."""
    selection = tuple(slice(None) if i is None else i for i in prefix) + (slice(None),) * 2
    values = array.read(selection)  # (channels, height, width)
    channels = level.image.channels(values.shape[0])
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


class CompositeTiff:
    """The composite of the plane at ``prefix``: its layout from metadata, its bytes on
    request (reads every channel of the plane)."""

    def __init__(self, array, level, prefix: tuple):
        self.array = array
        self.level = level
        self.prefix = tuple(prefix)
        count = tuple(array.shape)[level.image.channel_axis]
        shown = tuple(c for c in level.image.channels(count) if c.active)
        tags = composite_tags(level, array, self.prefix, shown)
        self.layout = tiff_layout(np.dtype(np.uint8), tuple(array.shape)[-2:], samples=3, tags=tags)

    @property
    def size(self) -> int:
        return self.layout.size

    def content(self) -> bytes:
        rgb = composite_rgb(self.array, self.level, self.prefix)
        return self.layout.prefix + np.ascontiguousarray(rgb).tobytes()


def write_composite(path, array, level, prefix: tuple) -> None:
    """The mount's composite ``.tif`` of the plane at ``prefix``, byte for byte, at ``path``."""
    content = CompositeTiff(array, level, prefix).content()
    with open(path, "wb") as f:
        f.write(content)
