"""Groups and arrays: ``open(url)`` and the objects it returns.

Finding nodes' metadata (one round trip a node, consolidated metadata, implicit groups) is
:mod:`.lookup`'s job.

A node whose metadata cannot be used is a :class:`Broken` member of its group (its documents
and the error; its attributes, children and data raise the error), and an array whose codecs
cannot be built opens as usual, failing only its reads (``Array.error`` says why): one broken
node never stops its group or its siblings.
"""

from __future__ import annotations

import logging
import math
import threading

import numpy as np

from . import native, scheduler
from .errors import (
    MetadataError,
    NodeNotFoundError,
    ReadTooLargeError,
    ZarrfsError,
)
from .grid import flat_boxes, grid_shape
from .lookup import DOCUMENTS, Hierarchy, join_path
from .metadata import (
    ArrayMetadata,
    BrokenMetadata,
    GroupMetadata,
    Metadata,
)
from .names import is_usable
from .planner import chunks_in, normalize_selection, out_shape
from .reader import ArrayReader, ChunkEvent, Target
from .sizes import human_size
from .store import Store
from .store_urls import url_below

log = logging.getLogger(__name__)
_READERS = threading.Lock()  # building an array's reader


class Node:
    """What groups and arrays share."""

    kind = "node"

    def __init__(self, hierarchy: Hierarchy, path: str, meta: Metadata):
        self._hierarchy = hierarchy
        self.path = path
        self.metadata = meta

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def url(self) -> str:
        return url_below(self._hierarchy.store.url, self.path)

    @property
    def store(self) -> Store:
        return self._hierarchy.store

    @property
    def zarr_format(self) -> int:
        return self.metadata.zarr_format

    @property
    def attrs(self) -> dict:
        return self.metadata.attributes

    @property
    def stored_metadata(self) -> dict:
        return self.metadata.document

    @property
    def parent(self) -> Group | None:
        """The group holding this node; None for the node that was opened."""
        if not self.path:
            return None
        path = self.path.rpartition("/")[0]
        meta = self._hierarchy.metadata(path)
        return _node(self._hierarchy, path, meta) if isinstance(meta, GroupMetadata) else None

    @property
    def implicit(self) -> bool:
        return isinstance(self.metadata, GroupMetadata) and self.metadata.implicit

    @property
    def error(self) -> ZarrfsError | None:
        """Why this node's data cannot be read (None when it can)."""
        return None

    def __repr__(self) -> str:
        return f"<zarrfs {type(self).__name__} {self.url!r}>"


class Group(Node):
    kind = "group"

    def keys(self) -> list[str]:
        return self._hierarchy.children(self.path, self.zarr_format)

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, name: str) -> bool:
        try:
            self[name]
        except NodeNotFoundError:
            return False
        return True

    def __getitem__(self, name: str) -> Group | Array:
        parts = [p for p in name.split("/") if p]
        if not parts or not all(is_usable(p) for p in parts):
            raise self._hierarchy.not_found(f"invalid node name {name!r}", self.path)
        path = join_path(self.path, *parts)
        meta = self._hierarchy.metadata(path)
        if meta is None:
            raise self._hierarchy.not_found(f"no node {name!r} in {self.url}", path)
        return _node(self._hierarchy, path, meta)

    def prefetch(self, names) -> None:
        """Fetch the metadata of the nodes at ``names`` (relative paths, "a/b" too) in one
        round trip, so that opening them afterwards costs none. Names that are not nodes are
        passed over; a broken one raises when it is opened."""
        paths = [
            join_path(self.path, *parts)
            for parts in ([p for p in n.split("/") if p] for n in names)
            if parts and all(is_usable(p) for p in parts)
        ]
        self._hierarchy.prefetch(paths)

    def members(self) -> list[tuple[str, Group | Array]]:
        return [(n, self[n]) for n in self.keys()]

    def arrays(self) -> list[tuple[str, Array]]:
        return [(n, m) for n, m in self.members() if isinstance(m, Array)]

    def groups(self) -> list[tuple[str, Group]]:
        return [(n, m) for n, m in self.members() if isinstance(m, Group)]


class Array(Node):
    kind = "array"
    metadata: ArrayMetadata

    @property
    def _reader(self) -> ArrayReader:
        """Built once, on first use: it resolves the codecs, which raise (each time) where
        they cannot be built."""
        reader = self.__dict__.get("_built_reader")
        if reader is None:
            with _READERS:  # one reader per array: it dedupes concurrent reads of a chunk
                reader = self.__dict__.get("_built_reader")
                if reader is None:
                    reader = ArrayReader(self._hierarchy.store, self.path, self.metadata)
                    self.__dict__["_built_reader"] = reader
        return reader

    @property
    def error(self) -> ZarrfsError | None:
        try:
            _ = self._reader
        except ZarrfsError as exc:
            return exc
        return None

    @property
    def _native(self) -> native.NativeArray | None:
        """tensorstore's reads of this array, where it reads it (:mod:`.native`)."""
        if not native.native_enabled():
            return None
        made = self.__dict__.get("_native_made")  # (every read asks: one lookup once made)
        return (made or self._read_path())[0]

    def _read_path(self) -> tuple[native.NativeArray | None, native.Decision]:
        made = self.__dict__.get("_native_made")
        if made is None:
            reader = self._reader  # a reader that cannot be built raises, on every read
            with _READERS:
                made = self.__dict__.get("_native_made")
                if made is None:
                    made = native.NativeArray.open(
                        self.store, self.path, self.metadata, reader.chunk_shape
                    )
                    self.__dict__["_native_made"] = made
        return made

    @property
    def read_path(self) -> native.Decision:
        """Which path reads this array's chunks, and why: the native one (tensorstore) or the
        Python pipeline."""
        try:
            if not native.native_enabled():
                decision = native.decide(self.store, self.path, self.metadata)
            else:
                decision = self._read_path()[1]
        except ZarrfsError as exc:
            return native.Decision(False, f"its codecs cannot be built ({exc.message})")
        if decision.native:
            return decision
        try:
            loop = self._reader.loop_note
        except ZarrfsError:
            return decision
        return native.Decision(False, f"{decision.reason}; {loop}")

    # ------------------------------------------------------------ description
    shape = property(lambda self: self.metadata.shape)
    ndim = property(lambda self: len(self.metadata.shape))
    size = property(lambda self: math.prod(self.metadata.shape))
    dtype = property(lambda self: self.metadata.data_type.dtype)
    data_type = property(lambda self: self.metadata.data_type.name)
    order = property(lambda self: self.metadata.order)
    dimension_names = property(lambda self: self.metadata.dimension_names)

    @property
    def chunks(self) -> tuple[int, ...]:
        try:
            return self._reader.chunk_shape
        except ZarrfsError:  # codecs that cannot be built: the chunks their listing declares
            return self.metadata.declared_inner_chunks() or self.metadata.chunk_shape

    @property
    def shards(self) -> tuple[int, ...] | None:
        try:
            sharded = self._reader.sharding is not None
        except ZarrfsError:
            sharded = self.metadata.declared_inner_chunks() is not None
        return self.metadata.chunk_shape if sharded else None

    @property
    def fill_value(self):
        fill = self.metadata.fill_value
        return fill if self.dtype.kind == "O" else np.asarray(fill, dtype=self.dtype)[()]

    @property
    def codecs(self) -> list[dict]:
        try:
            chain = self.metadata.codecs
        except ZarrfsError:  # not buildable: as the document lists them
            return [dict(c) for c in self.metadata.codec_source.listed]
        return [c.to_json() for c in chain.codecs if c.name != "v2_layout"]

    @property
    def nbytes(self) -> int | None:
        return None if self.dtype.kind == "O" else self.size * self.dtype.itemsize

    @property
    def chunk_grid_shape(self) -> tuple[int, ...]:
        return grid_shape(self.shape, self.chunks)

    def chunk_key(self, chunk_coords) -> str:
        return self._reader.chunk_key(tuple(chunk_coords))

    def chunk_region(self, chunk_coords) -> tuple[slice, ...]:
        return tuple(
            slice(i * c, min((i + 1) * c, n))
            for i, c, n in zip(chunk_coords, self.chunks, self.shape, strict=True)
        )

    def chunks_in(self, selection=...) -> list[tuple[int, ...]]:
        return chunks_in(normalize_selection(selection, self.shape), self.chunks)

    def stored_size(self) -> int | None:
        """Bytes of the stored chunk objects (lists the store), or None where a listing does
        not tell sizes (HTTP)."""
        if not self.store.lists_sizes:
            return None
        prefix = f"{self.path}/" if self.path else ""
        sizes = self.store.list_prefix_sizes(self.path)
        return sum(
            n
            for k, n in sizes.items()
            if k.startswith(prefix) and k.rsplit("/", 1)[-1] not in (*DOCUMENTS, ".zmetadata")
        )

    # ---------------------------------------------------------------- reading
    def _empty(self, shape) -> np.ndarray:
        """The result of a read; ReadTooLargeError naming the bytes asked for where it cannot
        be allocated (NumPy's own "array is too big" names neither the array nor the size)."""
        try:
            return np.empty(shape, dtype=self.dtype)
        except (ValueError, MemoryError) as exc:
            nbytes = math.prod(shape) * self.dtype.itemsize
            where = url_below(self.store.url, self.path)
            raise ReadTooLargeError(
                f"reading {shape} of {where} needs {nbytes:,} bytes ({human_size(nbytes)}), "
                "more than this process can allocate: read a smaller selection",
                nbytes=nbytes,
                path=where,
            ) from exc

    def read(self, selection=..., out: np.ndarray | None = None) -> np.ndarray:
        fast = self._native
        if out is None and fast is not None:  # tensorstore's own array is the answer
            result = fast.read_new(selection)
            if result is not None:
                return result
        dims = normalize_selection(selection, self.shape)
        shape = out_shape(dims)
        if out is None:
            out = self._empty(shape)
        elif out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, the selection {shape}")
        if fast is None or not fast.read([(dims, out)], keep=False):
            self._reader.execute([(r, out) for r in self._reader.plan(dims)])
        return out

    def __getitem__(self, selection):
        out = self.read(selection)
        return out[()] if out.ndim == 0 else out

    def read_flat(self, start: int, stop: int) -> np.ndarray:
        """Elements ``start:stop`` of the C-order flattened array."""
        start, stop = max(0, start), min(self.size, stop)
        result = self._empty(max(0, stop - start))
        boxes = []
        for offset, box in flat_boxes(start, stop, self.shape):
            dims = normalize_selection(box, self.shape)
            shape = out_shape(dims)
            boxes.append((dims, result[offset : offset + math.prod(shape)].reshape(shape)))
        fast = self._native
        if fast is not None and fast.read(boxes, keep=True):
            return result
        targets: list[Target] = [(r, v) for d, v in boxes for r in self._reader.plan(d)]
        self._reader.execute(targets, keep="always")  # the mount reads a chunk in pieces
        return result

    def submit(
        self,
        selection=...,
        priority: int = scheduler.PRIORITY_VISIBLE,
        on_chunk=None,
        out: np.ndarray | None = None,
        keep_whole_chunks: bool = True,
    ) -> scheduler.ReadFuture:
        """A background read; see the package docstring. Its chunks are kept in the shared
        cache at once (the viewer comes back to them). ``keep_whole_chunks=False``: chunks the
        selection covers whole are not kept (a streaming reader that never comes back to them
        saves the memory and a copy); chunks it covers in part are."""
        dims = normalize_selection(selection, self.shape)
        if out is None:
            out = self._empty(out_shape(dims))
        # a read tensorstore is known to take whole is planned only if it fails: a plan costs
        # Python time per chunk (~10 µs), on the caller's thread (the mount's request thread)
        made = self.__dict__.get("_native_made")
        unplanned = on_chunk is None and made is not None and made[0] is not None
        requests = None if unplanned else self._reader.plan(dims, streaming=on_chunk is not None)
        token = scheduler.CancelToken()

        def work():
            fast = self._native  # here: its first use may walk a directory (not the GUI's)
            todo = requests
            if fast is not None and on_chunk is not None:
                todo = fast.read_chunks(requests, out, token, on_chunk, _loaded, keep=True)
            elif fast is not None:
                # as on the Python path, chunks the selection covers whole are kept only if asked
                keep = keep_whole_chunks or not fast.covers_whole_chunks(dims, self.shape)
                if fast.read_async(dims, out, token, keep=keep):
                    return out
            if todo is None:
                todo = self._reader.plan(dims)
            self._reader.execute(
                [(r, out) for r in todo],
                token=token,
                on_chunk=on_chunk,
                priority=priority,
                keep="always" if keep_whole_chunks else "partial",
            )
            return out

        return scheduler.ReadFuture(out, token, scheduler.run_io(work, priority), self.path)


def _loaded(request) -> ChunkEvent:
    """The event of a chunk the native path read."""
    return ChunkEvent(request.chunk_coords, "loaded", request.out_selection)


class Broken(Node):
    """A node whose metadata cannot be used (an unknown data type, a malformed field or
    document, attributes that cannot be read): listed in its group, its stored documents
    readable (``stored_metadata``, text where JSON did not parse), ``error`` saying why. Its
    attributes, its children and its data raise that error (a fresh copy each time), never an
    empty answer that looks true. ``node_type`` is what its document declares ("array",
    "group" or None). :func:`open` of a broken node's URL raises its error: a ``Broken`` is
    met only as a member of a group that opens."""

    kind = "broken"
    metadata: BrokenMetadata

    @property
    def node_type(self) -> str | None:
        return self.metadata.node_type

    @property
    def error(self) -> ZarrfsError:
        return self.metadata.error

    @property
    def attrs(self) -> dict:
        raise self._fresh_error()

    def read(self, *args, **kwargs):
        raise self._fresh_error()

    keys = __getitem__ = read_flat = submit = read

    def _fresh_error(self) -> ZarrfsError:
        error = self.metadata.error
        return error.at(error.path or self.url)  # chained to the kept one


def _node(hierarchy: Hierarchy, path: str, meta: Metadata) -> Group | Array | Broken:
    if isinstance(meta, BrokenMetadata):
        return Broken(hierarchy, path, meta)
    return (
        Array(hierarchy, path, meta)
        if isinstance(meta, ArrayMetadata)
        else Group(hierarchy, path, meta)
    )


def open(  # noqa: A001
    url: str,
    *,
    consolidated: bool | None = None,
    follow_symlinks: bool = False,
    **storage_options,
) -> Group | Array:
    """Open the group or array at ``url`` in a Zarr store (``opener.open`` also finds Icechunk
    repositories). ``follow_symlinks``: a local store's symlinks are followed wherever they
    lead."""
    store = Store.from_url(str(url), follow_symlinks=follow_symlinks, **storage_options)
    return open_store(store, consolidated)


def open_store(store: Store, consolidated: bool | None = None) -> Group | Array:
    """The node at the root of an opened store; one that cannot be read raises its error."""
    hierarchy = Hierarchy(store, consolidated)
    try:
        meta = hierarchy.load_root()
    except (ZarrfsError, MemoryError):
        raise
    except (ValueError, TypeError) as exc:  # a parser bug must not look like a crash
        raise MetadataError(f"cannot read metadata at {store.url}: {exc}", path=store.url) from exc
    node = _node(hierarchy, "", meta)
    if isinstance(node, Broken):  # the node asked for cannot be read: say why, now
        raise node._fresh_error()
    return node


__all__ = ["Array", "Broken", "ChunkEvent", "Group", "Node", "open", "open_store"]
