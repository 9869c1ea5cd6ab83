"""An xarray backend: ``xarray.open_dataset(url, engine="zarrfs", chunks={})``.

Opens any group or array the zarrfs engine opens (every store URL, storage options, the writer
quirks zarr-python refuses) as a lazily loaded Dataset. Each variable is a ``BackendArray`` over
the engine's ``Array``: nothing is read until values are asked for, and then only the chunks
under the selection. ``encoding["preferred_chunks"]`` is the Zarr chunk shape (the inner chunks
when sharded), so with ``chunks={}`` the Dask chunks follow the Zarr chunks.

What the stored attributes mean (dimension names, which fill value masks) comes from
``zarrfs.engine.cf``; the decoding itself is xarray's own (``decode_cf_variables``), so that
``mask_and_scale``, ``decode_times``, ``use_cftime`` and the rest behave as with any backend.
Attributes ``engine.cf`` cannot parse (a string ``scale_factor``, units "days since never")
would make xarray's decoding raise: they are logged and kept aside in
``encoding["zarrfs_malformed_attributes"]``, and the variable opens with its stored values.
Registered as the ``xarray.backends`` entry point ``zarrfs`` (``pyproject.toml``).
"""

from __future__ import annotations

import logging
import threading

import numpy as np
from xarray import Dataset, Variable, conventions
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

import zarrfs.engine as engine

log = logging.getLogger(__name__)

#: attributes that describe the storage, not the variable (xarray's zarr backend drops them too)
_STORAGE_ATTRS = ("_ARRAY_DIMENSIONS", "_NCZARR_ATTR", "_nczarr_attr")


class ZarrfsBackendArray(BackendArray):
    """One engine array, read lazily with NumPy basic indexing.

    Picklable for Dask's distributed workers: it pickles as the URL, the node's path and the
    storage options, and opens the store again on first use in the other process."""

    def __init__(self, url: str, path: str, options: dict, array=None):
        self.url, self.path, self.options = url, path, options
        self._array = array
        self._lock = threading.Lock()
        node = self.array
        self.shape = tuple(node.shape)
        self.dtype = np.dtype(node.dtype)

    @property
    def array(self):
        if self._array is None:
            with self._lock:
                if self._array is None:
                    node = engine.open(self.url, **self.options)
                    self._array = node[self.path] if self.path else node
        return self._array

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        return np.asarray(self.array.read(key))

    def __getstate__(self) -> dict:
        return {k: getattr(self, k) for k in ("url", "path", "options", "shape", "dtype")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _array=None, _lock=threading.Lock())


def _variable(url: str, options: dict, array) -> Variable:
    var = engine.cf.variable(array)
    attrs = {k: v for k, v in array.attrs.items() if k not in _STORAGE_ATTRS}
    for problem in var.problems:  # xarray's decoding would raise on them: the raw view stays
        log.warning("zarrfs: %s: %s", array.path or array.url, problem)
    malformed = {name: attrs.pop(name) for name in var.ignored if name in attrs}
    if var.masking is not None and var.masking.fill_values:  # the fill that masks, as a number
        attrs["_FillValue"] = var.masking.fill_values[0]
        if len(var.masking.fill_values) > 1 and "missing_value" not in attrs:
            attrs["missing_value"] = list(var.masking.fill_values[1:])
    else:
        attrs.pop("_FillValue", None)
    lazy = indexing.LazilyIndexedArray(ZarrfsBackendArray(url, array.path, options, array))
    chunks = tuple(array.chunks)
    encoding = {
        "chunks": chunks,
        "preferred_chunks": dict(zip(var.dimensions, chunks, strict=True)),
        "source": array.url,
    }
    if malformed:
        encoding["zarrfs_malformed_attributes"] = malformed
    return Variable(var.dimensions, lazy, attrs, encoding)


class ZarrfsBackendEntrypoint(BackendEntrypoint):
    """``engine="zarrfs"``: any store zarrfs opens, lazily, CF-decoded by xarray."""

    description = "Open Zarr v2/v3 stores (local, HTTP, S3, GCS, fsspec chains) with zarrfs"
    url = "https://github.com/zarrfs/zarrfs"
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "use_cftime",
        "decode_timedelta",
        "group",
        "consolidated",
        "storage_options",
    )

    def open_dataset(
        self,
        filename_or_obj,
        *,
        drop_variables=None,
        mask_and_scale=True,
        decode_times=True,
        concat_characters=True,
        decode_coords=True,
        use_cftime=None,
        decode_timedelta=None,
        group: str | None = None,
        consolidated: bool | None = None,
        storage_options: dict | None = None,
    ) -> Dataset:
        url = str(filename_or_obj)
        options = {**(storage_options or {}), "consolidated": consolidated}
        root = engine.open(url, **options)
        node = root[group] if group else root
        arrays = [node] if node.kind == "array" else _arrays(node)
        variables = {a.name or "data": _variable(url, options, a) for a in arrays}
        attrs = {} if node.kind == "array" else _group_attrs(node)
        variables, attrs, coord_names = conventions.decode_cf_variables(
            variables,
            attrs,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )
        dataset = Dataset(variables, attrs=attrs)
        return dataset.set_coords(coord_names.intersection(variables))

    def guess_can_open(self, filename_or_obj) -> bool:
        """Never: installing zarrfs must not change which engine ``open_dataset`` picks for a
        ``.zarr`` path; ask for ``engine="zarrfs"``."""
        return False


def _arrays(group) -> list:
    """The group's arrays; one whose metadata is broken is left out with a warning."""
    found = []
    for name in group.keys():
        try:
            child = group[name]
        except engine.ZarrfsError as exc:
            log.warning("zarrfs: %s left out of the dataset: %s", name, exc.message)
            continue
        if child.kind == "array":
            found.append(child)
    return found


def _group_attrs(group) -> dict:
    return {k: v for k, v in group.attrs.items() if not k.lower().startswith("_nc")}
