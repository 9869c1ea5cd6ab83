"""The virtual tree: path -> directory or file, built lazily over ``zarrfs.engine`` nodes.

Testable without mounting: ``VirtualTree(root_node, options).resolve("/a/b/data.npy")`` returns a
directory (``names()``, ``lookup(name)``) or a file (``size``, ``open().read(offset, size)``).
Nothing here decodes data to answer a listing or a size; directories build their entries once and
keep them (the store is an immutable snapshot; with ``ttl`` the whole tree is rebuilt after it).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from math import prod

import numpy as np

import zarrfs.engine as engine

from . import formats, layout
from .files import ArrayBytesFile, BytesFile, GeneratedFile, MountStats
from .npy import npy_header
from .tiff import tiff_layout

log = logging.getLogger(__name__)

_RESOLVED_CAPACITY = 200_000


class Directory:
    """A directory whose entries are built on first use by ``build() -> {name: entry}``."""

    def __init__(self, build: Callable[[], dict]):
        self._build = build
        self._entries: dict | None = None
        self._lock = threading.Lock()

    @property
    def entries(self) -> dict:
        if self._entries is None:
            with self._lock:
                if self._entries is None:
                    self._entries = self._build()
        return self._entries

    def names(self) -> list[str]:
        return list(self.entries)

    def iter_names(self, start: int = 0) -> Iterator[str]:
        return itertools.islice(self.entries, start, None)

    def lookup(self, name: str):
        return self.entries.get(name)


class PlaneDirectory:
    """``planes/`` and its sub-levels: entries computed from indices, never all held at once."""

    def __init__(
        self,
        context: NodeContext,
        array,
        labels: list[str],
        prefix: tuple[int, ...],
        headers: dict | None = None,
    ):
        self.context = context
        self.headers = {} if headers is None else headers  # kind -> prefix bytes, per array
        self.array = array
        self.labels = labels
        self.prefix = prefix
        shape = tuple(array.shape)
        self.axis = len(prefix)
        self.count = shape[self.axis]
        self.is_last_level = self.axis == len(shape) - 3
        self.kinds = layout.plane_file_kinds(np.dtype(array.dtype), shape[-2:], context.options)
        # at most ``max_listed`` entries: ``ls`` and file managers hold and sort a whole
        # listing, and each entry costs the daemon its attributes (READDIRPLUS)
        per = len(self.kinds) if self.is_last_level else 1
        cap = context.options.max_listed
        self.listed = min(self.count * per, cap)
        if self.count * per > cap:
            log.warning(
                "%s: listing the first %d of %d entries of a plane folder (-o max_listed; "
                "every name is reachable by its path)",
                array.path or "/",
                cap,
                self.count * per,
            )

    def names(self) -> list[str]:
        return list(self.iter_names())

    def iter_names(self, start: int = 0) -> Iterator[str]:
        """Names from entry ``start`` on, computed from indices (readdir with offsets), at
        most ``max_listed`` in all."""
        label = self.labels[self.axis]
        if not self.is_last_level:
            for i in range(start, self.listed):
                yield layout.plane_entry_name(label, i, self.count)
            return
        per = len(self.kinds)
        for i in range(start, self.listed):
            yield f"{layout.plane_entry_name(label, i // per, self.count)}.{self.kinds[i % per]}"

    def lookup(self, name: str):
        label = self.labels[self.axis]
        stem, dot, kind = name.rpartition(".") if self.is_last_level else (name, "", "")
        if self.is_last_level and (not dot or kind not in self.kinds):
            return None
        index = layout.parse_plane_entry(stem, label, self.count)
        if index is None:
            return None
        if not self.is_last_level:
            return PlaneDirectory(
                self.context, self.array, self.labels, self.prefix + (index,), self.headers
            )
        return self.context.plane_file(self.array, self.prefix + (index,), kind, self.headers)


class NodeContext:
    """What building entries needs: options, counters, and the file factories by kind."""

    def __init__(self, options, stats: MountStats, mtime: float):
        self.options = options
        self.stats = stats
        self.mtime = mtime

    # -- documents ---------------------------------------------------------------------------
    def node_files(self, node) -> dict[str, BytesFile]:
        return {
            "attrs.json": BytesFile(lambda: _pretty_json(node.attrs)),
            "meta.json": BytesFile(lambda: _pretty_json(node.stored_metadata)),
            "info.txt": BytesFile(lambda: _info_text(node)),
        }

    # -- array data --------------------------------------------------------------------------
    def array_file(self, array, kind: str):
        return _ARRAY_FILES[kind](self, array)

    def byte_file(self, array, prefix: bytes, start: int, count: int) -> ArrayBytesFile:
        return ArrayBytesFile(array, prefix, start, count, self.stats, self.options.prefetch)

    def plane_file(self, array, index: tuple[int, ...], kind: str, headers: dict | None = None):
        """One plane as a file; ``headers`` caches the (identical) header of every plane."""
        height, width = tuple(array.shape)[-2:]
        plane = 0  # C order, in Python integers: a leading shape may pass 2**63 elements
        for i, n in zip(index, tuple(array.shape)[:-2], strict=True):
            plane = plane * n + i
        start = plane * height * width
        if kind == "png":
            selection = index + (slice(None), slice(None))
            return GeneratedFile(lambda: formats.preview_png(array.read(selection)))
        headers = {} if headers is None else headers
        prefix = headers.get(kind)
        if prefix is None:
            dtype = np.dtype(array.dtype)
            prefix = headers[kind] = (
                npy_header(dtype, (height, width))
                if kind == "npy"
                else tiff_layout(dtype, (height, width)).prefix
            )
        return self.byte_file(array, prefix, start, height * width)


def _npy_file(context: NodeContext, array):
    shape = tuple(array.shape)
    return context.byte_file(array, npy_header(np.dtype(array.dtype), shape), 0, prod(shape))


def _raw_file(context: NodeContext, array):
    return context.byte_file(array, b"", 0, prod(tuple(array.shape)))


def _tif_file(context: NodeContext, array):
    shape = tuple(array.shape)
    return context.byte_file(
        array, tiff_layout(np.dtype(array.dtype), shape).prefix, 0, prod(shape)
    )


def _json_file(context: NodeContext, array):
    return GeneratedFile(lambda: formats.json_bytes(array.read(...)))


def _csv_file(context: NodeContext, array):
    return GeneratedFile(lambda: formats.csv_bytes(array.read(...)))


def _png_file(context: NodeContext, array):
    return GeneratedFile(lambda: formats.preview_png(array.read(...)))


#: file kind (see ``layout.array_file_kinds``) -> factory.
_ARRAY_FILES = {
    "npy": _npy_file,
    "raw": _raw_file,
    "tif": _tif_file,
    "json": _json_file,
    "csv": _csv_file,
    "png": _png_file,
}


def _pretty_json(value) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False, default=_json_default) + "\n").encode()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("latin1")
    return str(value)


def _info_text(node) -> bytes:
    if hasattr(engine, "summary"):
        text = engine.format_summary(engine.summary(node))
    else:  # until the engine offers summary(): the essentials from metadata
        text = _basic_summary(node)
    return (text if text.endswith("\n") else text + "\n").encode()


def _basic_summary(node) -> str:
    lines = [f"{node.kind}: /{node.path}", f"zarr_format: {node.zarr_format}"]
    if node.kind == "array":
        lines += [
            f"shape: {tuple(node.shape)}",
            f"data_type: {node.data_type}",
            f"chunks: {tuple(node.chunks)}",
            f"dimension_names: {node.dimension_names}",
        ]
    return "\n".join(lines)


def ome_axes_by_path(group) -> dict[str, list[str]]:
    """``{array name: [axis names]}`` for the pyramid levels of an OME-Zarr image group."""
    if not hasattr(engine, "multiscales"):
        return {}
    try:
        descriptions = engine.multiscales(group) or []
    except Exception:  # not OME-Zarr, or metadata the engine rejects: no axis names then
        log.debug("no OME multiscales for %r", getattr(group, "path", ""), exc_info=True)
        return {}
    found: dict[str, list[str]] = {}
    for description in descriptions:
        axes = [
            _field(axis, "name") if not isinstance(axis, str) else axis
            for axis in (_field(description, "axes") or [])
        ]
        for dataset in _field(description, "datasets") or []:
            path = dataset if isinstance(dataset, str) else _field(dataset, "path")
            if path is not None and axes:
                found[str(path)] = [str(a) if a else "" for a in axes]
    return found


def _field(value, name):
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def build_node_directory(context: NodeContext, node, ome_axes=None):
    """The directory of a group or an array."""
    return Directory(lambda: _node_entries(context, node, ome_axes))


def _node_entries(context: NodeContext, node, ome_axes) -> dict:
    if node.kind == "array":
        return _array_entries(context, node, ome_axes)
    return _group_entries(context, node)


def _group_entries(context: NodeContext, group) -> dict:
    """A group's children, each opened only when its own directory is first used: a child
    whose metadata is broken (bad JSON, an unknown codec) or cannot be fetched then fails
    alone, with EIO and a log line naming it, while its siblings and the group still list."""
    ome = ome_axes_by_path(group)
    entries: dict = {
        name: Directory(lambda name=name: _node_entries(context, group[name], ome.get(name)))
        for name in group.keys()
    }
    for name, file in context.node_files(group).items():
        entries[layout.unique_name(name, entries)] = file
    return entries


def _array_entries(context: NodeContext, array, ome_axes) -> dict:
    entries: dict = {}
    for name, kind in layout.array_file_kinds(array, context.options):
        entries[name] = context.array_file(array, kind)
    if layout.has_planes(array):
        labels = layout.axis_labels(len(array.shape), array.dimension_names, ome_axes)
        entries[layout.PLANES_DIR] = PlaneDirectory(context, array, labels, ())
    entries.update(context.node_files(array))
    return entries


class VirtualTree:
    """Path resolution over a root node, plus the hidden control folder at the top."""

    def __init__(
        self,
        open_root: Callable[[], object],
        options,
        stats: MountStats | None = None,
        control: Callable[[VirtualTree], dict] | None = None,
    ):
        self.options = options
        self.stats = stats or MountStats()
        self.mtime = time.time()
        self._open_root = open_root
        self._control = control
        self._root = None
        self._built_at = 0.0
        self._resolved: dict[str, object] = {}  # path -> entry; the tree is immutable
        self._lock = threading.Lock()

    def root(self) -> Directory:
        ttl = self.options.ttl
        with self._lock:
            expired = ttl is not None and time.monotonic() - self._built_at > ttl
            if self._root is None or expired:
                if expired:  # chunks may have changed too: decoded copies and shard indexes go
                    engine.clear_caches()
                self._root = self._build_root()
                self._built_at = time.monotonic()
                self._resolved = {}
            return self._root

    def _build_root(self) -> Directory:
        node = self._open_root()
        context = NodeContext(self.options, self.stats, self.mtime)
        inner = build_node_directory(context, node)

        def entries() -> dict:
            combined = dict(inner.entries)
            if self._control is not None:
                name = layout.unique_name(layout.CONTROL_DIR, combined)
                combined[name] = Directory(lambda: self._control(self))
            return combined

        return Directory(entries)

    def resolve(self, path: str):
        """The entry at ``path`` ("/" is the root); FileNotFoundError / NotADirectoryError."""
        self.stats.add("lookups")
        root = self.root()
        cached = self._resolved.get(path)
        if cached is not None:
            return cached
        entry = root
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if not hasattr(entry, "lookup"):
                raise NotADirectoryError(path)
            entry = entry.lookup(part)
            if entry is None:
                raise FileNotFoundError(path)
        if len(self._resolved) >= _RESOLVED_CAPACITY:
            self._resolved = {}
        self._resolved[path] = entry
        return entry


def is_directory(entry) -> bool:
    return hasattr(entry, "lookup")
