"""Write arrays with zarr-python, the independent writer whose output tests read back.

Tests compare what zarrfs decodes with the NumPy array that zarr-python was given, never with
something zarrfs wrote itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class WrittenArray:
    """Where zarr-python put an array, and the values it was given."""

    root: Path  # the store root (a directory)
    path: str  # the array's path inside the store
    data: np.ndarray

    @property
    def location(self) -> Path:
        return self.root / self.path if self.path else self.root


def write_array(
    root: str | Path,
    data: np.ndarray,
    *,
    path: str = "array",
    zarr_format: int = 3,
    chunks: tuple[int, ...] | str = "auto",
    shards: tuple[int, ...] | None = None,
    compressors: Any = "auto",
    filters: Any = "auto",
    fill_value: Any = None,
    attributes: dict | None = None,
    dimension_names: tuple[str, ...] | None = None,
    order: str | None = None,
    chunk_key_encoding: dict | None = None,
    write_empty_chunks: bool = False,
    consolidate: bool = False,
) -> WrittenArray:
    """Write ``data`` under ``root/path`` with zarr-python (parent groups are created).

    ``compressors``/``filters`` take zarr-python's forms (``None`` for none, a numcodecs codec
    for v2, a ``zarr.codecs`` codec for v3). ``write_empty_chunks=False`` (zarr's default)
    leaves chunks that equal the fill value unwritten, which is how tests get missing chunks.
    ``consolidate`` writes consolidated metadata for the whole store.
    """
    import zarr

    data = np.asarray(data)
    kwargs: dict[str, Any] = {}
    if fill_value is not None:
        kwargs["fill_value"] = fill_value
    if chunk_key_encoding is not None:
        kwargs["chunk_key_encoding"] = chunk_key_encoding
    if dimension_names is not None:
        kwargs["dimension_names"] = dimension_names
    zarr.create_array(
        store=str(root),
        name=path or None,
        data=data,
        chunks=chunks,
        shards=shards,
        compressors=compressors,
        filters=filters,
        order=order,
        zarr_format=zarr_format,
        attributes=attributes,
        config={"write_empty_chunks": write_empty_chunks},
        overwrite=True,
        **kwargs,
    )
    if consolidate:
        zarr.consolidate_metadata(str(root), zarr_format=zarr_format)
    return WrittenArray(Path(root), path, data)
