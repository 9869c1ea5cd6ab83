"""``-o composite``: a plane of an OME-Zarr image's channels as one RGB ``.tif``.

Where ``planes/.../c_1/z_017.tif`` is one channel, ``planes/.../composite/z_017.tif`` is every
active channel of that plane blended, with OME-XML naming them (``zarrfs.composite_tiff``, the
viewer's TIFF export of a composite too). Its size is exact before any data is read; the
pixels are rendered, all at once, when it is opened.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import zarrfs.engine as engine

from ..composite_tiff import CompositeTiff
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


class CompositeFile:
    """``planes/.../composite/<plane>.tif``: exact size from metadata, content on open."""

    direct_io = False

    def __init__(self, array, spec: CompositeSpec, prefix: tuple):
        self.tiff = CompositeTiff(array, spec.level, prefix)

    @property
    def size(self) -> int:
        return self.tiff.size

    def open(self) -> BytesFile:
        content = self.tiff.content()
        return BytesFile(lambda: content)


def composite_file(array, spec: CompositeSpec, prefix: tuple) -> CompositeFile:
    return CompositeFile(array, spec, prefix)
