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

from .. import tiff_meta
from ..tiff import tiff_layout
from . import cf_files, formats, layout, versions
from . import composite as composite_files
from .files import ArrayBytesFile, BytesFile, GeneratedFile, MountStats
from .npy import npy_header

log = logging.getLogger(__name__)

_RESOLVED_CAPACITY = 200_000
#: the key of an array's ``tiff_meta.Describer`` in its plane folders' ``headers``
DESCRIBER = "describer"


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
    """``planes/`` and its sub-levels: entries computed from indices, never all held at once.

    With ``coordinates`` (a 1-D CF coordinate along an axis), entries are also named by
    coordinate value beside the index names. With ``composite`` (``-o composite``, an OME-Zarr
    image with a channel axis), the level of the channel axis also offers ``composite`` (a
    directory, or ``composite.tif`` at the last level): below it the prefix holds ``None`` for
    the channel axis and planes are RGB ``.tif`` composites of every active channel."""

    def __init__(
        self,
        context: NodeContext,
        array,
        labels: list[str],
        prefix: tuple,
        headers: dict | None = None,
        coordinates: cf_files.CoordinateNames | None = None,
        composite: composite_files.CompositeSpec | None = None,
    ):
        self.context = context
        self.headers = {} if headers is None else headers  # kind -> prefix bytes, per array
        self.array = array
        self.labels = labels
        self.prefix = prefix
        self.coordinates = coordinates  # entries named by coordinate value, beside the indices
        self.composite = composite
        shape = tuple(array.shape)
        self.axis = len(prefix)
        self.count = shape[self.axis]
        self.is_last_level = self.axis == len(shape) - 3
        self.in_composite = None in prefix
        if self.in_composite:
            self.kinds = ["tif"]
        else:
            self.kinds = layout.plane_file_kinds(np.dtype(array.dtype), shape[-2:], context.options)
            self.kinds += cf_files.plane_kinds(array, context.options)
        # at most ``max_listed`` entries: ``ls`` and file managers hold and sort a whole
        # listing, and each entry costs the daemon its attributes (READDIRPLUS)
        per = len(self.kinds) if self.is_last_level else 1
        self.cap = cap = context.options.max_listed
        self.listed = min(self.count * per, cap)
        if self.count * per > cap:
            log.warning(
                "%s: listing the first %d of %d entries of a plane folder (-o max_listed; "
                "every name is reachable by its path)",
                array.path or "/",
                cap,
                self.count * per,
            )
        self._extra: list[str] | None = None

    def _value_stems(self) -> dict[str, int]:
        """Entry stems named by coordinate value; none past ``max_listed`` entries (the
        coordinate would be read whole)."""
        if self.coordinates is None or self.count > self.cap:
            return {}
        return self.coordinates.stems(self.axis)

    @property
    def offers_composite(self) -> bool:
        return self.composite is not None and self.composite.axis == self.axis

    def names(self) -> list[str]:
        return list(self.iter_names())

    def _extra_names(self) -> list[str]:
        """The names listed after the index names: coordinate values, then ``composite``;
        none once the index names alone reach ``max_listed``."""
        if self._extra is None:
            stems = list(self._value_stems()) if self.listed < self.cap else []
            names = [f"{s}.{k}" for s in stems for k in self.kinds] if self.is_last_level else stems
            if self.offers_composite:
                names.append(composite_files.NAME + (".tif" if self.is_last_level else ""))
            self._extra = names[: self.cap - self.listed]
        return self._extra

    def iter_names(self, start: int = 0) -> Iterator[str]:
        """Names from entry ``start`` on, computed from indices (readdir with offsets), at
        most ``max_listed`` in all."""
        label = self.labels[self.axis]
        if not self.is_last_level:
            for i in range(start, self.listed):
                yield layout.plane_entry_name(label, i, self.count)
        else:
            per = len(self.kinds)
            for i in range(start, self.listed):
                index = layout.plane_entry_name(label, i // per, self.count)
                yield f"{index}.{self.kinds[i % per]}"
        yield from self._extra_names()[max(0, start - self.listed) :]

    def _split(self, name: str) -> tuple[str, str] | None:
        """``(stem, kind)`` of an entry name; the kind is "" above the last level."""
        if not self.is_last_level:
            return name, ""
        kinds = self.kinds + (["tif"] if self.offers_composite else [])
        longest_first = sorted(set(kinds), key=len, reverse=True)  # "cf.npy" before "npy"
        kind = next((k for k in longest_first if name.endswith(f".{k}")), "")
        return (name[: -len(kind) - 1], kind) if kind else None

    def lookup(self, name: str):
        label = self.labels[self.axis]
        split = self._split(name)
        if split is None:
            return None
        stem, kind = split
        if self.offers_composite and stem == composite_files.NAME:
            if self.is_last_level and kind != "tif":
                return None
            index = None
        else:
            if self.is_last_level and kind not in self.kinds:
                return None
            index = layout.parse_plane_entry(stem, label, self.count)
            if index is None and stem.startswith(label + "_"):
                index = self._value_stems().get(stem)
            if index is None:
                return None
        prefix = self.prefix + (index,)
        if not self.is_last_level:
            return PlaneDirectory(
                self.context,
                self.array,
                self.labels,
                prefix,
                self.headers,
                self.coordinates,
                self.composite,
            )
        if None in prefix:
            return composite_files.composite_file(self.array, self.composite, prefix)
        return self.context.plane_file(self.array, prefix, kind, self.headers)


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
    def array_file(self, array, kind: str, describer=None):
        if kind == "tif":
            return _tif_file(self, array, describer)
        return _ARRAY_FILES[kind](self, array)

    def byte_file(self, array, prefix: bytes, start: int, count: int) -> ArrayBytesFile:
        return ArrayBytesFile(array, prefix, start, count, self.stats, self.options.prefetch)

    def plane_file(self, array, index: tuple[int, ...], kind: str, headers: dict | None = None):
        """One plane as a file; ``headers`` caches the header of every plane where it is the
        same (and, under :data:`DESCRIBER`, the array's ``tiff_meta.Describer``)."""
        headers = {} if headers is None else headers
        describer = headers.setdefault(DESCRIBER, tiff_meta.Describer(array))
        if kind in cf_files.CF_KINDS:
            return cf_files.plane_file(self, array, index, kind, describer)
        height, width = tuple(array.shape)[-2:]
        plane = 0  # C order, in Python integers: a leading shape may pass 2**63 elements
        for i, n in zip(index, tuple(array.shape)[:-2], strict=True):
            plane = plane * n + i
        start = plane * height * width
        if kind == "png":
            selection = index + (slice(None), slice(None))
            decode = self.options.cf
            return GeneratedFile(
                lambda: formats.preview_png(*formats.preview_values(array, selection, decode))
            )
        dtype = np.dtype(array.dtype)
        if kind == "npy":
            prefix = headers.get(kind)
            if prefix is None:
                prefix = headers[kind] = npy_header(dtype, (height, width))
            return self.byte_file(array, prefix, start, height * width)
        # a TIFF's tags may name the plane's channel or position: shared where they are equal
        prefix = headers.get((kind, describer.shared_key(index)))
        if prefix is None:
            tags = describer.plane_tags(index)
            prefix = tiff_layout(dtype, (height, width), tags=tags).prefix
            shared = describer.shared_key(index)
            if shared is not None:
                headers[(kind, shared)] = prefix
        return self.byte_file(array, prefix, start, height * width)


def _npy_file(context: NodeContext, array):
    shape = tuple(array.shape)
    return context.byte_file(array, npy_header(np.dtype(array.dtype), shape), 0, prod(shape))


def _raw_file(context: NodeContext, array):
    return context.byte_file(array, b"", 0, prod(tuple(array.shape)))


def _tif_file(context: NodeContext, array, describer=None):
    shape = tuple(array.shape)
    tags = (describer or tiff_meta.Describer(array)).plane_tags(())
    return context.byte_file(
        array, tiff_layout(np.dtype(array.dtype), shape, tags=tags).prefix, 0, prod(shape)
    )


def _json_file(context: NodeContext, array):
    return GeneratedFile(lambda: formats.json_bytes(array.read(...)))


def _csv_file(context: NodeContext, array):
    return GeneratedFile(lambda: formats.csv_bytes(array.read(...)))


def _png_file(context: NodeContext, array):
    decode = context.options.cf
    return GeneratedFile(lambda: formats.preview_png(*formats.preview_values(array, ..., decode)))


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
    return (json.dumps(engine.json_value(value), indent=2, ensure_ascii=False) + "\n").encode()


def _info_text(node) -> bytes:
    return engine.format_summary(engine.summary(node)).encode()


def _levels_below(levels: dict, name: str) -> dict:
    """The entries of ``levels`` (``{relative path: engine.Level}``) under the child ``name``,
    re-keyed relative to it; the child's own level, if it is one, under ``""``."""
    below = {}
    for path, level in levels.items():
        if path == name:
            below[""] = level
        elif path.startswith(name + "/"):
            below[path[len(name) + 1 :]] = level
    return below


def build_node_directory(context: NodeContext, node, levels=None):
    """The directory of a group or an array. ``levels``: the OME-Zarr pyramid levels at or below
    ``node`` that an ancestor image declares, ``{relative path: engine.Level}``."""
    return Directory(lambda: _node_entries(context, node, levels or {}))


def _node_entries(context: NodeContext, node, levels: dict) -> dict:
    if node.kind == "array":
        return _array_entries(context, node, levels.get(""))
    if node.kind == "broken":  # metadata the engine cannot use: what it has, no data files
        log.warning("/%s: %s", node.path, " ".join(node.error.message.split()))
        return context.node_files(node)
    return _group_entries(context, node, levels)


def _group_entries(context: NodeContext, group, inherited: dict) -> dict:
    """A group's children, each opened only when its own directory is first used: a child
    whose metadata cannot be used holds only ``meta.json``, ``attrs.json`` (EIO) and ``info.txt``;
    an array whose codecs cannot be built has its files, whose reads fail with EIO and a log
    line naming it; a child that cannot be fetched fails alone, with EIO; its siblings and
    the group still list.

    An image's levels may sit deeper than its children (ngff-zarr: ``scale0/image``): they are
    handed down until the array is reached, so every level gets the image's axis names."""
    levels = {p: v for p, v in inherited.items() if p} | engine.image_levels(group)
    entries: dict = {
        name: Directory(
            lambda name=name: _node_entries(context, group[name], _levels_below(levels, name))
        )
        for name in group.keys()
    }
    for name, file in context.node_files(group).items():
        entries[layout.unique_name(name, entries)] = file
    return entries


def _array_entries(context: NodeContext, array, level) -> dict:
    """``level``: the ``engine.Level`` this array is in an OME-Zarr image, or None."""
    entries: dict = {}
    describer = tiff_meta.Describer(array, level)
    for name, kind in layout.array_file_kinds(array, context.options):
        entries[name] = context.array_file(array, kind, describer)
    entries.update(cf_files.array_files(context, array, describer))
    if layout.has_planes(array):
        ome_axes = level.axis_names if level is not None else None
        labels = layout.axis_labels(len(array.shape), array.dimension_names, ome_axes)
        names = cf_files.coordinate_names(array, labels, layout.plane_entry_name, level)
        composite = composite_files.channel_axis(array, level, context.options)
        entries[layout.PLANES_DIR] = PlaneDirectory(
            context, array, labels, (), {DESCRIBER: describer}, names, composite
        )
    entries.update(context.node_files(array))
    return entries


class _VersionContext(NodeContext):
    """A version folder's context: its root's ``info.txt`` starts by saying which version."""

    def __init__(self, base: NodeContext, preface: Callable[[], str]):
        super().__init__(base.options, base.stats, base.mtime)
        self.preface = preface

    def node_files(self, node) -> dict[str, BytesFile]:
        files = super().node_files(node)
        if not node.path:
            files["info.txt"] = BytesFile(lambda: self.preface().encode() + _info_text(node))
        return files


def _version_folder(context: NodeContext, open_root, preface) -> Directory:
    """One version's whole hierarchy, opened when first looked into."""
    inner = _VersionContext(context, preface)

    def entries() -> dict:
        try:
            root = open_root()
        except engine.NodeNotFoundError:  # a snapshot with no node yet (a repository's first)
            return {"info.txt": BytesFile(lambda: preface().encode())}
        return _node_entries(inner, root, {})

    return Directory(entries)


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
        preface = versions.shown_version_text(node)  # a repository's: which version is shown
        root_context = context if preface is None else _VersionContext(context, preface)
        inner = build_node_directory(root_context, node)
        folders = versions.version_folders(
            node, lambda open_root, preface: _version_folder(context, open_root, preface), Directory
        )

        def entries() -> dict:
            combined = versions.add_to(dict(inner.entries), folders)
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
