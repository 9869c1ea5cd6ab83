"""``zarrfs get``: read a selection (in slabs, with a progress bar) and write it as .npy, .tif or
.csv. TIFF through tifffile, progress through tqdm: well-kept libraries, not hand-written."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .csv_text import write_csv

_SLAB_BYTES = 32 * 2**20  # read big selections in slabs of about this size along the first axis


class OutputError(ValueError):
    """The data does not fit the requested file format."""


def _expand(selection: tuple, ndim: int) -> list:
    items = list(selection)
    if Ellipsis in items:
        i = items.index(Ellipsis)
        items[i : i + 1] = [slice(None)] * (ndim - len(items) + 1)
    return items + [slice(None)] * (ndim - len(items))


def by_value(arr, selection: tuple, wanted: dict[int, int | slice]) -> tuple:
    """``selection`` with the axes of ``wanted`` (``--sel``, by coordinate value) put in;
    those axes must be left whole (``:``) in ``selection``."""
    from zarrfs.storage_options import UsageError

    if Ellipsis not in selection and len(selection) > arr.ndim:
        return selection  # too many indices: the engine says so
    items = _expand(selection, arr.ndim)
    names = arr.dimension_names or ()
    for axis, index in wanted.items():
        if items[axis] != slice(None):
            name = names[axis] if axis < len(names) else f"dim_{axis}"
            raise UsageError(f"axis '{name}' is selected twice: by --sel and by index")
        items[axis] = index
    return tuple(items)


def read_selection(
    arr, selection: tuple, *, progress: bool = False, decode: bool = False
) -> np.ndarray:
    """``arr[selection]`` as an array (CF-decoded with ``decode``), read in slabs along the
    first axis when it is large. Reads that are not cut into slabs get the selection as given,
    so that the engine judges it (``[5]`` on a 0-d array is "too many indices", not the
    scalar)."""
    read = arr.read
    if decode:
        from zarrfs.engine import cf, read_decoded

        var = cf.variable(arr)

        def read(sel, out=None):
            return read_decoded(arr, sel, var, out=out)

    if arr.ndim == 0 or arr.nbytes is None:
        return np.asarray(read(selection))
    items = _expand(selection, arr.ndim)
    if not isinstance(items[0], slice):
        return np.asarray(read(selection))
    rows = range(*items[0].indices(arr.shape[0]))
    row_bytes = arr.nbytes // max(1, arr.shape[0])
    per_slab = max(1, _SLAB_BYTES // max(1, row_bytes))
    if len(rows) <= per_slab:
        return read(tuple(items))
    first = read((slice(rows[0], rows[0] + 1), *items[1:]))
    out = np.empty((len(rows), *first.shape[1:]), dtype=first.dtype)
    bar = _bar(len(rows), progress)
    try:
        for i in range(0, len(rows), per_slab):
            part = rows[i : i + per_slab]
            stop = part[-1] + (1 if part.step > 0 else -1)
            sub = slice(part[0], stop if stop >= 0 else None, part.step)
            read((sub, *items[1:]), out=out[i : i + len(part)])
            bar.update(len(part))
    finally:
        bar.close()
    return out


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="rows", desc="reading", leave=False)


def write_output(
    data: np.ndarray,
    path: Path,
    suffix: str,
    source=None,
    selection: tuple = (),
    decoded: bool = False,
) -> np.ndarray:
    """Write ``data`` in the format ``suffix`` names; returns what was written (variable-length
    strings and bytes go to .npy as fixed-width ``str``/``bytes``: .npy files never pickle).
    ``source``: the array ``data`` is ``source[selection]`` of, whose CF and OME-Zarr metadata
    a TIFF carries (``zarrfs.tiff_meta``); ``decoded``: ``data`` holds its CF-decoded values."""
    if data.dtype.kind == "O" and any(hasattr(v, "calendar") for v in data.flat):
        data = _dates_as_text(data)  # cftime dates of a calendar NumPy has not
    if suffix == ".npy":
        if data.dtype.kind == "O":
            data = _fixed_width(data)
        np.save(path, data, allow_pickle=False)
    elif suffix in (".tif", ".tiff"):
        _write_tiff(data, path, source, selection, decoded)
    else:
        _write_csv(data, path)
    return data


def _dates_as_text(data: np.ndarray) -> np.ndarray:
    """Decoded dates of a non-standard calendar (``cftime`` objects) as ISO text."""
    from zarrfs.engine import cf

    out = np.empty(data.shape, object)
    for index, value in np.ndenumerate(data):
        out[index] = cf.format_value(value)
    return out


def _fixed_width(data: np.ndarray) -> np.ndarray:
    """Variable-length strings or bytes as NumPy ``U``/``S``, which drop trailing NULs: a value
    ending in one would come back shorter, so it is refused rather than changed."""
    text = all(isinstance(v, str) for v in data.flat)
    nul = "\0" if text else b"\0"
    for flat_index, value in enumerate(data.flat):
        if value[-1:] == nul:
            index = ", ".join(map(str, np.unravel_index(flat_index, data.shape)))
            kind = "strings" if text else "bytes"
            raise OutputError(
                f"value [{index}] of the selection ends in a NUL character, "
                f"which .npy fixed-width {kind} cannot hold; use .csv to keep it"
            )
    return data.astype(str if text else bytes)


def _write_tiff(
    data: np.ndarray, path: Path, source=None, selection: tuple = (), decoded: bool = False
) -> None:
    from . import tiff_meta, tiff_ome

    if data.ndim < 2:
        raise OutputError(
            f"TIFF needs a 2-D selection (or a stack of planes), got shape {data.shape}"
        )
    if data.dtype.kind not in "biufc" or data.dtype.fields is not None:  # as the mount offers
        raise OutputError(f"TIFF cannot hold {data.dtype} data; use .npy")
    if data.dtype.kind == "b":
        data = data.astype(np.uint8)
    data = data.astype(data.dtype.newbyteorder("="), copy=False)
    if decoded and source is not None and data.dtype.kind == "f":  # the mount's .cf.tif type
        data = data.astype(tiff_meta.decoded_dtype(source, data.dtype), copy=False)
    tags, ome = (), None
    if source is not None and source.ndim >= 2:
        items = _normalized(_expand(selection, source.ndim), tuple(source.shape))
        level = tiff_meta.level_of(source)
        tags = tiff_meta.selection_tags(source, items, level, decoded)
        if level is not None and data.ndim > 2:
            ome = tiff_ome.ome_options(level, items, tuple(source.shape))
    tiff_meta.write(path, data, tags, ome)


def _normalized(items: list, shape: tuple) -> list:
    """Integers within ``[0, n)``, slices with their bounds (``slice.indices``): a window the
    georeference and the channel list can apply as they are."""
    out = []
    for item, n in zip(items, shape, strict=False):
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            out.append(slice(start, stop if stop >= 0 else None, step))  # -1: before 0
        elif isinstance(item, (int, np.integer)) and -n <= item < n:
            out.append(int(item) % n)
        else:
            out.append(item)
    return out


def _write_csv(data: np.ndarray, path: Path) -> None:
    if data.ndim > 2:
        raise OutputError(f"CSV holds 1-D or 2-D selections, got shape {data.shape}")
    if data.dtype.fields is not None:
        raise OutputError("CSV cannot hold structured data; use .npy")
    with open(path, "w", newline="", encoding="utf-8") as f:
        write_csv(data, f)
