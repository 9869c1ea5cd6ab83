"""Finding nodes: what one open store's documents say about its nodes (the metadata cache).

Finding a node costs one round trip: ``zarr.json``, ``.zarray``, ``.zgroup``, ``.zattrs`` (and the
root's ``.zmetadata``) are requested together. Consolidated metadata (v2 ``.zmetadata``, v3 inline
``consolidated_metadata``) answers every later question about descendants without a request.
Without it, a group lists its directory; in v3 a child directory with no ``zarr.json`` is an
implicit group (v3 core spec, "Implicit groups") when a node lies below it: the directories
below are searched a level at a time (one round trip per level for their documents), at most
``_IMPLICIT_SEARCH`` of them, so that opening a directory that holds no Zarr data does not walk
the whole tree under it. Conventions name children a listing cannot show through declarers
(``engine/declarers.py``).
"""

from __future__ import annotations

import logging
import threading

from . import limits
from .declarers import DECLARERS, Declarer
from .errors import (
    AccessDeniedError,
    MetadataError,
    NodeNotFoundError,
    ZarrfsError,
)
from .metadata import (
    MALFORMED,
    GroupMetadata,
    Metadata,
    contained,
    load_json,
    parse_v3,
    readable_document,
)
from .metadata_v2 import parse_zarray, parse_zgroup, parse_zmetadata
from .names import usable, usable_paths
from .store import Store
from .store_request import ByteRequest
from .store_urls import url_below

log = logging.getLogger(__name__)

#: the documents that may describe a node, asked for together
DOCUMENTS = ("zarr.json", ".zarray", ".zgroup", ".zattrs")
_IMPLICIT_SEARCH = 100  # directories listed, at most, to find a node below a bare directory
_DECLARE_ROUNDS = 3  # round trips, at most, for the children declarers name


def join_path(*parts: str) -> str:
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
        #: children found per (path, zarr_format): a listing is a round trip on a remote store,
        #: and the tree, the CF view of each array and the mount all ask for the same groups
        self._children_of: dict[tuple[str, int], list[str]] = {}
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
        keys = [*DOCUMENTS, ".zmetadata"] if self.use_consolidated is not False else list(DOCUMENTS)
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
            keys = [f"{path}/{d}" for d in DOCUMENTS]
            got = _settled(dict(zip(DOCUMENTS, self._documents(keys), strict=True)))
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
        keys = [f"{p}/{d}" for p in todo for d in DOCUMENTS]
        got = self._documents(keys)
        for i, p in enumerate(todo):
            docs = dict(
                zip(DOCUMENTS, got[i * len(DOCUMENTS) : (i + 1) * len(DOCUMENTS)], strict=True)
            )
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
                below += [join_path(directory, d) for d in dirs]
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
            self.prefetch([join_path(path, n) for n in new])
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
        """Sorted names of the nodes directly below ``path``, those that can be a file name;
        listed once per open store, as the metadata is read once (a failed listing is not
        kept)."""
        with self._lock:
            known = self._children_of.get((path, zarr_format))
        if known is not None:
            return list(known)
        names = usable(self._children(path, zarr_format), url_below(self.store.url, path))
        with self._lock:
            self._children_of[(path, zarr_format)] = names
        return list(names)

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
        self.prefetch([join_path(path, d) for d in dirs])
        names = []
        for d in dirs:
            try:
                child = self.metadata(join_path(path, d))
            except ZarrfsError:
                names.append(d)  # a broken child is still a child; opening it raises
                continue
            if child is not None and (zarr_format == 3 or child.zarr_format == 2):
                names.append(d)
        with self._lock:
            for d in declared:
                child, error = (
                    self.nodes.get(join_path(path, d)),
                    self.errors.get(join_path(path, d)),
                )
                if (error is not None and not isinstance(error, AccessDeniedError)) or (
                    child is not None and (zarr_format == 3 or child.zarr_format == 2)
                ):
                    names.append(d)
        return sorted(names)


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
