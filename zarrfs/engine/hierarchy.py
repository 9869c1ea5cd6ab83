"""Groups and arrays: ``open(url)`` and the objects it returns.

Finding a node costs one round trip: ``zarr.json``, ``.zarray``, ``.zgroup``, ``.zattrs`` (and the
root's ``.zmetadata``) are requested together. Consolidated metadata (v2 ``.zmetadata``, v3 inline
``consolidated_metadata``) answers every later question about descendants without a request.
Without it, a group lists its directory; in v3 a child directory with no ``zarr.json`` is an
implicit group (v3 core spec, "Implicit groups") when a node lies below it: the directories
below are searched a level at a time (one round trip per level for their documents), at most
``_IMPLICIT_SEARCH`` of them, so that opening a directory that holds no Zarr data does not walk
the whole tree under it.

A node whose metadata cannot be used opens as a :class:`Broken` node (its attributes, its
documents and the error), and an array whose codecs cannot be built opens as usual, failing only
its reads (``Array.error`` says why): one broken node never stops its group or its siblings.
"""

from __future__ import annotations

import logging
import math
import threading

import numpy as np

from . import limits, scheduler
from .declarers import DECLARERS, Declarer
from .errors import (
    AccessDeniedError,
    MetadataError,
    NodeNotFoundError,
    ReadTooLargeError,
    ZarrfsError,
)
from .grid import flat_boxes, grid_shape
from .metadata import (
    MALFORMED,
    ArrayMetadata,
    BrokenMetadata,
    GroupMetadata,
    Metadata,
    contained,
    load_json,
    parse_v3,
    readable_document,
)
from .metadata_v2 import parse_zarray, parse_zgroup, parse_zmetadata
from .names import is_usable, usable, usable_paths
from .planner import chunks_in, normalize_selection, out_shape
from .reader import ArrayReader, ChunkEvent, Target
from .sizes import human_size
from .store import Store
from .store_request import ByteRequest
from .store_urls import url_below

_DOCS = ("zarr.json", ".zarray", ".zgroup", ".zattrs")
_IMPLICIT_SEARCH = 100  # directories listed, at most, to find a node below a bare directory
_DECLARE_ROUNDS = 3  # round trips, at most, for the children declarers name
log = logging.getLogger(__name__)
_READERS = threading.Lock()  # building an array's reader


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


class Hierarchy:
    """A store plus what is known about its nodes (the metadata cache of one open store)."""

    def __init__(
        self,
        store: Store,
        consolidated: bool | None,
        declarers: tuple[Declarer, ...] = DECLARERS,
    ):
        self.store = store
        self.declarers = declarers
        self.use_consolidated = consolidated
        self.nodes: dict[str, Metadata | None] = {}
        self.errors: dict[str, ZarrfsError] = {}  # children whose metadata is broken
        self.consolidated: dict[str, Metadata] | None = None
        self._undocumented: set[str] = set()  # prefetched paths that had no metadata document
        self._lock = threading.Lock()

    def not_found(self, message: str, node_path: str) -> NodeNotFoundError:
        """The error for no node at ``node_path``, with this store's context."""
        return NodeNotFoundError(
            message,
            path=url_below(self.store.url, node_path),
            store_url=self.store.url,
            node_path=node_path,
        )

    def load_root(self) -> Metadata:
        keys = [*_DOCS, ".zmetadata"] if self.use_consolidated is not False else list(_DOCS)
        got = _settled(dict(zip(keys, self._documents(keys), strict=True)))
        meta = self._parse(got, "")
        if meta is None:
            meta = self._implicit("")
        if meta is None:
            raise self.not_found(f"no Zarr group or array at {self.store.url}", "")
        if self.use_consolidated is not False:
            if isinstance(meta, GroupMetadata) and meta.consolidated is not None:
                self.consolidated = usable_paths(meta.consolidated, self.store.url)
            elif got.get(".zmetadata") is not None:
                self.consolidated = self._zmetadata(got[".zmetadata"])
        self.nodes[""] = meta
        return meta

    def _zmetadata(self, data: bytes) -> dict[str, Metadata] | None:
        """The nodes of a ``.zmetadata`` (its broken entries as broken nodes). One that cannot
        be read as a whole is passed over for listing the store, unless asked for."""
        where = f"{self.store.url}/.zmetadata"
        try:
            nodes = parse_zmetadata(load_json(data, path=where), path=where)
        except (MetadataError, *MALFORMED) as exc:
            if self.use_consolidated:
                raise MetadataError(f"{where}: cannot be used ({exc})", path=where) from exc
            log.warning("%s: cannot be used (%s); listing the store instead", where, exc)
            return None
        nodes.pop("", None)
        return usable_paths(nodes, where)

    def metadata(self, path: str) -> Metadata | None:
        """The metadata of the node at ``path``, or None when there is none."""
        with self._lock:
            error, known = self.errors.get(path), self.nodes.get(path)
            if error is None and path in self.nodes:
                return known
        if error is not None:  # kept from a listing: a fresh error for each caller
            raise error.at(error.path or url_below(self.store.url, path)) from error
        if self.consolidated is not None:
            meta = self.consolidated.get(path)
            if meta is None and any(k.startswith(path + "/") for k in self.consolidated):
                meta = GroupMetadata(3, implicit=True)
        elif path in self._undocumented:  # asked for in a prefetch already: no need again
            meta = self._implicit(path)
        else:
            keys = [f"{path}/{d}" for d in _DOCS]
            got = _settled(dict(zip(_DOCS, self._documents(keys), strict=True)))
            meta = self._parse(got, path) or self._implicit(path)
        with self._lock:
            self.nodes[path] = meta
        return meta

    def prefetch(self, paths: list[str]) -> None:
        """Every document of several nodes in one round trip (a group listing its children);
        a child whose metadata is broken is remembered, and raises when it is opened."""
        todo = [p for p in paths if p not in self.nodes and p not in self.errors]
        if not todo or self.consolidated is not None:
            return
        keys = [f"{p}/{d}" for p in todo for d in _DOCS]
        got = self._documents(keys)
        for i, p in enumerate(todo):
            docs = dict(zip(_DOCS, got[i * len(_DOCS) : (i + 1) * len(_DOCS)], strict=True))
            try:
                meta = self._parse(_settled(docs), p)
            except ZarrfsError as exc:
                with self._lock:
                    self.errors[p] = exc
                continue
            with self._lock:
                if meta is not None:
                    self.nodes[p] = meta
                else:
                    self._undocumented.add(p)

    def _documents(self, keys: list[str]) -> list:
        """Every document in one round trip: bytes, None where absent, or the StoreError of
        that document alone (for :func:`_settled` to judge)."""
        end = limits.MAX_METADATA_BYTES + 1  # one byte more tells a document that is too large
        return self.store.fetch_each([ByteRequest(k, 0, end) for k in keys])

    def _parse(self, got: dict, path: str) -> Metadata | None:
        """The node the documents describe (:class:`BrokenMetadata` where they cannot be
        used), or None where there are none."""
        where = f"{self.store.url}/{path}".rstrip("/")
        main = next((d for d in ("zarr.json", ".zarray", ".zgroup") if got.get(d) is not None), "")
        if not main:
            return None
        names = [main] if main == "zarr.json" else [main, ".zattrs"]
        documents = {d: readable_document(got[d]) for d in names if got.get(d) is not None}
        return contained(
            lambda: self._parse_documents(got, where),
            f"{where}/{main}",
            documents,
            3 if main == "zarr.json" else 2,
        )

    @staticmethod
    def _parse_documents(got: dict, where: str) -> Metadata | None:
        if got.get("zarr.json") is not None:
            return parse_v3(
                load_json(got["zarr.json"], path=f"{where}/zarr.json"), path=f"{where}/zarr.json"
            )
        attrs = None
        if got.get(".zattrs") is not None:
            attrs = load_json(got[".zattrs"], path=f"{where}/.zattrs")
        if got.get(".zarray") is not None:
            return parse_zarray(
                load_json(got[".zarray"], path=f"{where}/.zarray"), attrs, path=f"{where}/.zarray"
            )
        if got.get(".zgroup") is not None:
            return parse_zgroup(
                load_json(got[".zgroup"], path=f"{where}/.zgroup"), attrs, path=f"{where}/.zgroup"
            )
        return None

    def _implicit(self, path: str) -> GroupMetadata | None:
        """A v3 implicit group: a directory with no metadata but with a node (or a broken
        one) below it, searched a level at a time among at most ``_IMPLICIT_SEARCH``
        directories."""
        level, budget = [path], _IMPLICIT_SEARCH
        while level and budget > 0:
            below: list[str] = []
            for directory in level[:budget]:
                dirs, _ = self.store.list_dir(directory)
                below += [_join(directory, d) for d in dirs]
            budget -= len(level)
            below = below[: max(budget, 0)]
            self.prefetch(below)  # the documents of a whole level in one round trip
            with self._lock:
                if any(self.nodes.get(b) is not None or b in self.errors for b in below):
                    return GroupMetadata(3, implicit=True)
            level = below
        return None

    def _declared(self, path: str) -> list[str]:
        """Names of the children of ``path`` that the declarers name, their documents fetched
        (one round trip a round); asked again until they name no new child (a child's own
        metadata may name siblings), at most ``_DECLARE_ROUNDS`` times."""
        names: list[str] = []
        for _ in range(_DECLARE_ROUNDS):
            new = [n for n in self._declarations(path) if n not in names]
            if not new:
                break
            names += new
            self.prefetch([_join(path, n) for n in new])
        return sorted(names)

    def _declarations(self, path: str) -> set[str]:
        """What every declarer names below ``path``, from the metadata known here."""
        self.metadata(path)

        def attributes(node_path: str) -> dict | None:
            meta = self.nodes.get(node_path)
            return None if meta is None else meta.attributes

        with self._lock:
            return {n for declare in self.declarers for n in declare(path, attributes)}

    def children(self, path: str, zarr_format: int) -> list[str]:
        """Sorted names of the nodes directly below ``path``, those that can be a file name."""
        return usable(self._children(path, zarr_format), url_below(self.store.url, path))

    def _children(self, path: str, zarr_format: int) -> list[str]:
        if self.consolidated is not None:
            prefix = f"{path}/" if path else ""
            names = {
                k[len(prefix) :].split("/", 1)[0]
                for k in self.consolidated
                if k.startswith(prefix) and k != path
            }
            return sorted(n for n in names if n)
        refused = None
        try:
            dirs, _ = self.store.list_dir(path)
        except AccessDeniedError as exc:
            dirs, refused = [], exc
        # a store that lists is believed; else perhaps one that cannot list (a web server
        # without directory pages, S3 over HTTPS or without ListBucket): the children the
        # metadata known here declares (engine/declarers.py), where their documents are there
        declared = [] if dirs else self._declared(path)
        if refused is not None and not declared:
            # a node its parent's metadata declares is one whose listing may be refused
            parent, _, name = path.rpartition("/")
            if not (path and name in self._declarations(parent)):
                raise refused
        self.prefetch([_join(path, d) for d in dirs])
        names = []
        for d in dirs:
            try:
                child = self.metadata(_join(path, d))
            except ZarrfsError:
                names.append(d)  # a broken child is still a child; opening it raises
                continue
            if child is not None and (zarr_format == 3 or child.zarr_format == 2):
                names.append(d)
        with self._lock:
            for d in declared:
                child, error = self.nodes.get(_join(path, d)), self.errors.get(_join(path, d))
                if (error is not None and not isinstance(error, AccessDeniedError)) or (
                    child is not None and (zarr_format == 3 or child.zarr_format == 2)
                ):
                    names.append(d)
        return sorted(names)


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
        path = _join(self.path, *parts)
        meta = self._hierarchy.metadata(path)
        if meta is None:
            raise self._hierarchy.not_found(f"no node {name!r} in {self.url}", path)
        return _node(self._hierarchy, path, meta)

    def prefetch(self, names) -> None:
        """Fetch the metadata of the nodes at ``names`` (relative paths, "a/b" too) in one
        round trip, so that opening them afterwards costs none. Names that are not nodes are
        passed over; a broken one raises when it is opened."""
        paths = [
            _join(self.path, *parts)
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
            if k.startswith(prefix) and k.rsplit("/", 1)[-1] not in (*_DOCS, ".zmetadata")
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
        dims = normalize_selection(selection, self.shape)
        shape = out_shape(dims)
        if out is None:
            out = self._empty(shape)
        elif out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, the selection {shape}")
        self._reader.execute([(r, out) for r in self._reader.plan(dims)])
        return out

    def __getitem__(self, selection):
        out = self.read(selection)
        return out[()] if out.ndim == 0 else out

    def read_flat(self, start: int, stop: int) -> np.ndarray:
        """Elements ``start:stop`` of the C-order flattened array."""
        start, stop = max(0, start), min(self.size, stop)
        result = self._empty(max(0, stop - start))
        targets: list[Target] = []
        for offset, box in flat_boxes(start, stop, self.shape):
            dims = normalize_selection(box, self.shape)
            shape = out_shape(dims)
            view = result[offset : offset + math.prod(shape)].reshape(shape)
            targets.extend((r, view) for r in self._reader.plan(dims))
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
        requests = self._reader.plan(dims, streaming=on_chunk is not None)
        token = scheduler.CancelToken()

        def work():
            self._reader.execute(
                [(r, out) for r in requests],
                token=token,
                on_chunk=on_chunk,
                priority=priority,
                keep="always" if keep_whole_chunks else "partial",
            )
            return out

        return scheduler.ReadFuture(out, token, scheduler.run_io(work, priority), self.path)


class Broken(Node):
    """A node whose metadata cannot be used (an unknown data type, a malformed field or
    document): listed in its group, its attributes and documents readable, ``error`` saying
    why; its data cannot be read (``read`` and the other reads raise the error, anew each
    time). ``node_type`` is what its document declares ("array", "group" or None)."""

    kind = "broken"
    metadata: BrokenMetadata

    @property
    def node_type(self) -> str | None:
        return self.metadata.node_type

    @property
    def error(self) -> ZarrfsError:
        return self.metadata.error

    def keys(self) -> list[str]:
        return []

    def read(self, *args, **kwargs):
        error = self.metadata.error
        raise error.at(error.path or self.url) from error

    __getitem__ = read_flat = submit = read


def _settled(got: dict) -> dict:
    """A node's documents with their failures settled: bytes or None (absent) for each, or the
    failure that leaves the node unknown, raised.

    A failure matters only where the document could change what the node is. Once
    ``zarr.json`` is there the node is v3, and nothing else matters. Once ``.zarray`` or
    ``.zgroup`` is there the node is v2, and an access denied on the other documents means
    absent: a bucket that grants reading objects but not listing them (S3 without
    ListBucket) answers 403 for every object that does not exist. Any other failure, and any
    failure where no document was found, is raised: absent and unreadable are never taken
    for each other (a forbidden ``.zattrs`` beside a readable ``.zarray`` is the one
    exception, as it cannot be told from a missing one)."""
    failed = {d: v for d, v in got.items() if isinstance(v, ZarrfsError)}
    if not failed:
        return got
    settled = {d: None if d in failed else v for d, v in got.items()}
    if got.get("zarr.json") is not None and "zarr.json" not in failed:
        return settled
    is_v2 = any(got.get(d) is not None and d not in failed for d in (".zarray", ".zgroup"))
    for exc in failed.values():
        if not (is_v2 and isinstance(exc, AccessDeniedError)):
            raise exc
    return settled


def _node(hierarchy: Hierarchy, path: str, meta: Metadata) -> Group | Array | Broken:
    if isinstance(meta, BrokenMetadata):
        return Broken(hierarchy, path, meta)
    return (
        Array(hierarchy, path, meta)
        if isinstance(meta, ArrayMetadata)
        else Group(hierarchy, path, meta)
    )


def open(url: str, *, consolidated: bool | None = None, **storage_options) -> Group | Array:  # noqa: A001
    """Open the group or array at ``url`` (see the package docstring)."""
    store = Store.from_url(str(url), **storage_options)
    hierarchy = Hierarchy(store, consolidated)
    try:
        meta = hierarchy.load_root()
    except (ZarrfsError, MemoryError):
        raise
    except (ValueError, TypeError) as exc:  # a parser bug must not look like a crash
        raise MetadataError(f"cannot read metadata at {url}: {exc}", path=url) from exc
    return _node(hierarchy, "", meta)


__all__ = ["Array", "Broken", "ChunkEvent", "Group", "Node", "open"]
