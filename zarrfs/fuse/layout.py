"""Names in the mounted folder: which files a node offers and what they are called.

The scheme (documented in README.md, section "What the folder shows"):

* every node: ``attrs.json``, ``meta.json``, ``info.txt``;
* an array of a fixed-size type: ``data.npy``, ``data.raw``; 2-D and numeric also ``data.tif``;
* a variable-length string/bytes array: ``data.json`` (size known only after decoding);
* 3 or more dimensions: ``planes/<a>_<i>/.../<b>_<j>.npy|.tif``, one directory level per leading
  axis but the last, whose index names the files; ``<a>`` is the dimension name (array metadata,
  else OME-Zarr axes, else ``dim<k>``), ``<i>`` zero-padded to the width of the largest index;
* opt-in (``-o png``, ``-o csv``): ``data.png`` / plane ``.png`` previews, ``data.csv``;
  (``-o composite``) ``planes/.../composite/<b>_<j>.tif``: an OME-Zarr plane's channels as one
  RGB TIFF, beside the channel axis' ``<c>_<i>`` entries (``composite.py``).

A child node whose name equals a generated name keeps its name; the generated entry gets ``_``
prefixed until it is unique (``attrs.json`` -> ``_attrs.json``), the same rule at every level.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from math import prod

import numpy as np

from ..tiff import supports_tiff
from .npy import supports_npy

CONTROL_DIR = ".zarrfs"
PLANES_DIR = "planes"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() also takes "²" and "١"


def unique_name(name: str, taken: Iterable[str]) -> str:
    """``name``, or ``_name``, ``__name`` ... whichever is not taken (deterministic)."""
    taken = set(taken)
    while name in taken:
        name = "_" + name
    return name


def csv_supported(dtype: np.dtype) -> bool:
    return dtype.kind in "biufcUSMmO" and not dtype.fields


def png_supported(dtype: np.dtype) -> bool:
    return dtype.kind in "biuf"


#: the largest file size ``stat`` can report (``off_t``); a byte file of an array larger than
#: this (less its header) is not offered
MAX_FILE_SIZE = (1 << 63) - 1
_HEADER_ROOM = 1 << 20


def fits_a_file(shape: tuple[int, ...], dtype: np.dtype) -> bool:
    return prod(shape) * dtype.itemsize <= MAX_FILE_SIZE - _HEADER_ROOM


def array_file_kinds(array, options) -> list[tuple[str, str]]:
    """``(file name, kind)`` of the data files an array offers, in listing order."""
    dtype = np.dtype(array.dtype)
    shape = tuple(array.shape)
    kinds: list[tuple[str, str]] = []
    if supports_npy(dtype):
        if fits_a_file(shape, dtype):  # else no byte files (planes, if any, still are)
            kinds += [("data.npy", "npy"), ("data.raw", "raw")]
        if len(shape) == 2 and supports_tiff(dtype, shape) and fits_a_file(shape, dtype):
            kinds.append(("data.tif", "tif"))
    elif array.size <= options.json_max_elements:
        kinds.append(("data.json", "json"))
    if options.csv and len(shape) in (1, 2) and csv_supported(dtype):
        if array.size <= options.csv_max_elements:
            kinds.append(("data.csv", "csv"))
    if options.png and len(shape) == 2 and png_supported(dtype) and min(shape) > 0:
        kinds.append(("data.png", "png"))
    return kinds


def plane_file_kinds(dtype: np.dtype, plane_shape: tuple[int, int], options) -> list[str]:
    """Extensions a plane file is offered in."""
    if not supports_npy(dtype) or not fits_a_file(plane_shape, dtype):
        return []
    kinds = ["npy"]
    if supports_tiff(dtype, plane_shape):
        kinds.append("tif")
    if options.png and png_supported(dtype) and min(plane_shape) > 0:
        kinds.append("png")
    return kinds


def has_planes(array) -> bool:
    return len(array.shape) >= 3 and supports_npy(np.dtype(array.dtype)) and array.size > 0


def axis_labels(ndim: int, dimension_names, ome_axes=None) -> list[str]:
    """One safe label per axis: dimension names, else OME axes, else ``dim<k>``."""
    labels = []
    for k in range(ndim):
        label = None
        for source in (dimension_names, ome_axes):
            if source and k < len(source) and source[k]:
                label = str(source[k])
                break
        label = _UNSAFE.sub("_", label) if label else f"dim{k}"
        labels.append(label)
    return labels


def index_width(count: int) -> int:
    return len(str(max(count - 1, 0)))


def plane_entry_name(label: str, index: int, count: int) -> str:
    return f"{label}_{index:0{index_width(count)}d}"


def parse_plane_entry(name: str, label: str, count: int) -> int | None:
    """The index a directory or file stem names, or None (wrong label, width or out of range)."""
    prefix = label + "_"
    digits = name[len(prefix) :]
    if (
        not name.startswith(prefix)
        or len(digits) != index_width(count)
        or not _DIGITS.fullmatch(digits)
    ):
        return None
    index = int(digits)
    return index if index < count else None
