"""The CF view in the mounted folder (what ``engine.cf`` says, rendered as files and names).

* ``-o cf``: ``data.cf.npy`` and plane ``<stem>.cf.npy`` files holding the decoded values
  (unpacked floats, missing values as NaN; dates as ``datetime64[ns]``) of every array whose
  attributes encode something (packing, missing values, CF time), and beside them for floats
  ``.cf.tif``, a GeoTIFF of the decoded values with NaN as its nodata (``zarrfs.tiff_meta``),
  float32 where that holds them (``engine.cf.compact_dtype``: 8- and 16-bit packed counts).
  The size is exact from metadata; a read decodes only the chunks under its bytes.
* Plane folders and files named by coordinate value (``time_2000-01-05/``, ``level_850.npy``)
  beside the index names (``time_04/``), for every axis with a 1-D coordinate variable whose
  values give distinct names; index names always win, so an axis whose value names could be
  taken for index names gets none.
"""

from __future__ import annotations

import logging
import re
import threading

import numpy as np

import zarrfs.engine as engine

from ..tiff import supports_tiff, tiff_layout
from .files import ArrayBytesFile
from .npy import npy_header

log = logging.getLogger(__name__)

CF_KIND, CF_TIFF = "cf.npy", "cf.tif"
CF_KINDS = (CF_KIND, CF_TIFF)
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def decoded_variable(array):
    """The CF variable of an array whose decoded ``.npy`` the mount offers, else None."""
    if array.kind != "array" or np.dtype(array.dtype).kind not in "iuf":
        return None
    var = engine.cf.variable(array)
    if not var.encoded or var.decoded_dtype.kind not in "fM":
        return None
    return var


class DecodedBytesFile(ArrayBytesFile):
    """A ``.npy`` (or, with a TIFF ``header``, a ``.cf.tif`` of ``dtype``) of decoded values:
    elements ``[start, start + count)`` of the C-order array, decoded. No read-ahead windows:
    those hold the stored values."""

    def __init__(
        self, array, var, start: int, count: int, shape: tuple, stats, header=None, dtype=None
    ):
        self.dtype = var.decoded_dtype if dtype is None else dtype
        header = npy_header(self.dtype, shape) if header is None else header
        super().__init__(array, header, start, count, stats, 0)
        self.var = var
        self.itemsize = self.dtype.itemsize

    def read_elements(self, first: int, stop: int, deadline: float | None = None) -> memoryview:
        if deadline is None:
            stored = self.array.read_flat(self.start + first, self.start + stop)
        else:
            stored = self._read_by(first, stop, deadline)
        values = np.ascontiguousarray(engine.cf.decode(self.var, stored), dtype=self.dtype)
        return memoryview(values.reshape(-1).view(np.uint8))


def _tiff_header(var, shape: tuple, tags) -> bytes | None:
    """The ``.cf.tif`` prefix of decoded float values, or None where there is none."""
    dtype = engine.cf.compact_dtype(var)
    if dtype.kind != "f" or len(shape) != 2 or not supports_tiff(dtype, shape):
        return None
    return tiff_layout(dtype, shape, tags=tags).prefix


def array_files(context, array, describer) -> dict:
    """``{"data.cf.npy": file}`` (and ``data.cf.tif`` for a 2-D float result) under ``-o cf``
    for an array that decodes, else ``{}``."""
    var = decoded_variable(array) if context.options.cf else None
    if var is None:
        return {}
    shape = tuple(array.shape)
    files = {"data.cf.npy": DecodedBytesFile(array, var, 0, array.size, shape, context.stats)}
    header = None
    if len(shape) == 2:
        header = _tiff_header(var, shape, describer.plane_tags((), decoded=True))
    if header is not None:
        files["data.cf.tif"] = DecodedBytesFile(
            array, var, 0, array.size, shape, context.stats, header, engine.cf.compact_dtype(var)
        )
    return files


def plane_kinds(array, options) -> list[str]:
    """The extra plane file kinds under ``-o cf`` for an array that decodes: ``cf.npy``, and
    ``cf.tif`` for floats."""
    var = decoded_variable(array) if options.cf else None
    if var is None:
        return []
    plane = tuple(array.shape)[-2:]
    dtype = engine.cf.compact_dtype(var)
    floats = dtype.kind == "f" and supports_tiff(dtype, plane)
    return [CF_KIND, CF_TIFF] if floats else [CF_KIND]


def plane_file(context, array, index: tuple[int, ...], kind: str, describer) -> DecodedBytesFile:
    height, width = tuple(array.shape)[-2:]
    start = int(np.ravel_multi_index(index, tuple(array.shape)[:-2])) * height * width
    var = decoded_variable(array)
    header, dtype = None, None
    if kind == CF_TIFF:
        header = _tiff_header(var, (height, width), describer.plane_tags(index, decoded=True))
        dtype = engine.cf.compact_dtype(var)
    shape = (height, width)
    return DecodedBytesFile(array, var, start, height * width, shape, context.stats, header, dtype)


class CoordinateNames:
    """Per leading axis of one array: plane entry stems named by coordinate value, read once
    (the whole 1-D coordinate) when that axis is first listed or looked up."""

    def __init__(self, array, labels: list[str], index_stem, level=None):
        self.array = array
        self.level = level  # the engine.Level of an OME-Zarr image: channels by name
        self.labels = labels
        self.index_stem = index_stem  # (label, index, count) -> the index name
        self._axes: dict[int, dict[str, int]] = {}
        self._lock = threading.Lock()

    def stems(self, axis: int) -> dict[str, int]:
        """``{stem: index}`` of the value names of ``axis`` (empty when it has none)."""
        with self._lock:
            found = self._axes.get(axis)
            if found is None:
                found = self._axes[axis] = self._build(axis)
            return found

    def _build(self, axis: int) -> dict[str, int]:
        values = self._channel_names(axis)
        coordinate = self._coordinate(axis) if values is None else None
        if coordinate is not None:
            try:
                values = engine.cf.coordinate_labels(coordinate)
            except engine.ZarrfsError as exc:
                log.warning("coordinate %s not read for plane names: %s", coordinate.path, exc)
                return {}
        if values is None:
            return {}
        label, count = self.labels[axis], self.array.shape[axis]
        stems = {f"{label}_{_UNSAFE.sub('_', v)}": i for i, v in enumerate(values)}
        taken = {self.index_stem(label, i, count) for i in range(count)}
        if len(stems) != count or taken & stems.keys():
            return {}  # two values share a name, or a value name reads as an index name
        return stems

    def _channel_names(self, axis: int) -> list[str] | None:
        """The channels' labels (``omero``) along an OME-Zarr image's channel axis."""
        image = self.level.image if self.level is not None else None
        if image is None or image.channel_axis != axis or image.omero is None:
            return None
        return [c.label for c in image.channels(self.array.shape[axis])]

    def _coordinate(self, axis: int):
        names = getattr(self.array, "dimension_names", None)
        parent = getattr(self.array, "parent", None)
        if not names or not names[axis] or parent is None:
            return None
        try:
            found = engine.cf.coordinate_arrays(parent, [names[axis]]).get(names[axis])
        except engine.ZarrfsError:
            return None
        return found if found is not None and found.shape[0] == self.array.shape[axis] else None


def coordinate_names(array, labels: list[str], index_stem, level=None) -> CoordinateNames | None:
    """Value names for an array's planes (coordinate values; channel names of an OME-Zarr
    image, ``level``), or None for an array that can have none."""
    if array.dimension_names is None and level is None:
        return None
    return CoordinateNames(array, labels, index_stem, level)
