"""One version of an Icechunk repository as a store: Icechunk's own read-only Zarr store of a
snapshot, behind the engine's ``Store``.

Icechunk hands out a zarr-python ``Store`` (asynchronous ``get``, ``list_dir``, ``list_prefix``,
``getsize``) of a read-only session. :class:`SessionFileSystem` puts it behind fsspec's
``AsyncFileSystem`` interface on fsspec's event loop, so the engine's ``Store`` reads it as it reads
S3: every request of a read in flight at once, results in bursts as they land, absent keys as
``None`` (Icechunk answers ``KeyError`` for a key with no chunk), every other failure a
``StoreError`` naming the key (a virtual chunk whose file changed or vanished among them).

:class:`VersionStore` is that ``Store`` with the repository and the version it shows. Its URL
names the snapshot (``repo@SNAPSHOTID``): the shared chunk cache is keyed by store URL, so two
versions of one array never share a chunk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import fsspec.asyn
from fsspec.asyn import AsyncFileSystem

from . import icechunk_layout
from .errors import StoreError
from .store import Store
from .store_request import ByteRequest

log = logging.getLogger(__name__)

#: names in a listing known to be objects without asking (each node's document)
_DOCUMENT = "zarr.json"
#: a line of Icechunk's report that names a cause: its first (``x``) and each ``->``
_REPORT_MARK = re.compile(r"^\s*(?:x\s|[|`]-+>)\s*")
_BATCHES = 8  # calls a large read is cut into, so that decoding starts early
_BATCH_MIN = 4  # reads per call at least
_POLL_SECONDS = 0.05  # how often a waiting read asks whether its reader gave up
_V2_DOCUMENTS = icechunk_layout.V2_DOCUMENTS
_DOCUMENTS = frozenset((_DOCUMENT, *_V2_DOCUMENTS))


def reason(exc: BaseException) -> str:
    """Icechunk's error in one line: its report's chain of causes (``x what``, ``-> why``),
    each said once, without the context frames between them."""
    chain: list[str] = []
    for line in str(exc).splitlines():
        mark = _REPORT_MARK.match(line)
        text = line[mark.end() :].strip() if mark else ""
        if text and not any(text in earlier for earlier in chain):
            chain.append(text)
    return ": ".join(chain) or str(exc).strip() or type(exc).__name__


class IcechunkError(Exception):
    """Icechunk's failure to read a key, in one line (its own report runs to a dozen): a
    virtual chunk whose file changed or vanished, a manifest that cannot be read."""


def _byte_request(start: int | None, end: int | None):
    """zarr-python's ByteRequest for an fsspec-style range (a negative start: a suffix)."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if start is None:
        return None
    if start < 0:
        return SuffixByteRequest(-start)
    return OffsetByteRequest(start) if end is None else RangeByteRequest(start, end)


def _is_document(key: str) -> bool:
    return key.rsplit("/", 1)[-1] in _DOCUMENTS


def _is_v2_document(key: str) -> bool:
    """A Zarr v2 document: never in a repository (Icechunk holds Zarr v3 only and answers
    every such key "not found"), so answered absent without asking (each absent key of a
    batch would be asked again alone: a node's lookup cost 5 ms instead of 1)."""
    return key.rsplit("/", 1)[-1] in _V2_DOCUMENTS


def _range_tuple(req: ByteRequest) -> tuple[int | None, int | None]:
    """Icechunk's range of a read: ``(start, end)``, ``(start, None)``, ``(None, suffix)``;
    a node's document whole (see ``_cat_file``)."""
    if req.start is None or _is_document(req.key):
        return (None, None)
    return (None, -req.start) if req.start < 0 else (req.start, req.end)


def _answer(req: ByteRequest, got) -> bytes:
    data = bytes(got)
    return data[req.start : req.end] if _is_document(req.key) and req.start is not None else data


class SessionFileSystem(AsyncFileSystem):
    """fsspec's async interface over an Icechunk session's (read-only) zarr-python store."""

    protocol = "icechunk"
    cachable = False  # one instance per session: fsspec must not hand it to another version
    async_impl = True

    def __init__(self, zarr_store: Any, batched: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.batched = batched
        from zarr.core.buffer import default_buffer_prototype

        self.zarr_store = zarr_store
        self.layout: Any = None  # a local repository's ChunkLayout of this snapshot
        self._prototype = default_buffer_prototype()

    async def _cat_file(self, path, start=None, end=None, **kwargs):
        if _is_v2_document(path):
            raise FileNotFoundError(path)
        document = _is_document(path)
        # a node's document is asked for up to the engine's size limit; Icechunk (1.1) panics
        # on a range past the end of one (it keeps them in the snapshot): asked for whole
        asked = None if document else _byte_request(start, end)
        try:
            buffer = await self.zarr_store.get(path, self._prototype, asked)
        except Exception as exc:  # noqa: BLE001 - Icechunk's one class (and a Rust panic)
            raise IcechunkError(reason(exc)) from exc
        if buffer is None:  # Icechunk's KeyError: no such key in this snapshot
            raise FileNotFoundError(path)
        data = buffer.to_bytes()
        return data[start:end] if document and start is not None else data

    async def _cat_batch(self, requests: list[ByteRequest]) -> list:
        """Raw results (bytes, or the exception of that read) of many reads in one call to
        Icechunk, which costs about what one read alone does (each read alone crosses from
        Python to Icechunk's runtime and back). Icechunk's batch answers None both for a key
        with no chunk and for a read that failed (a manifest it could not read), so every None
        is asked again alone, where a failure is an error: absent only when Icechunk says
        so. A call that fails is asked again read by read too. Not ``batched`` (a repository
        with virtual chunks): read by read always, as Icechunk (1.1) checks a virtual chunk's
        file against the modification time or ETag it was committed with only there."""
        raw = getattr(self.zarr_store, "_store", None)  # Icechunk's PyStore
        got: list = [None] * len(requests)
        v2 = [i for i, r in enumerate(requests) if _is_v2_document(r.key)]
        asked = [i for i, r in enumerate(requests) if not _is_v2_document(r.key)]
        if raw is not None and self.batched and asked:
            ranges = [(requests[i].key, _range_tuple(requests[i])) for i in asked]
            try:
                for i, g in zip(asked, await raw.get_partial_values(ranges), strict=True):
                    got[i] = g
            except Exception:  # noqa: BLE001 - each read alone says which one failed
                got = [None] * len(requests)
        for i in v2:
            got[i] = FileNotFoundError(requests[i].key)
        again = [i for i, g in enumerate(got) if g is None]
        alone = await asyncio.gather(
            *(self._cat_file(requests[i].key, requests[i].start, requests[i].end) for i in again),
            return_exceptions=True,
        )
        out: list = [
            g if g is None or isinstance(g, BaseException) else _answer(r, g)
            for r, g in zip(requests, got, strict=True)
        ]
        for i, result in zip(again, alone, strict=True):
            out[i] = result
        return out

    async def _ls(self, path, detail=True, **kwargs):
        prefix = path.strip("/")
        names = [n async for n in self.zarr_store.list_dir(prefix)]
        is_file = await asyncio.gather(*(self._is_object(prefix, n) for n in names))
        entries = [
            {
                "name": f"{prefix}/{n}" if prefix else n,
                "type": "file" if f else "directory",
                "size": 0,
            }
            for n, f in zip(names, is_file, strict=True)
        ]
        return entries if detail else [e["name"] for e in entries]

    async def _is_object(self, prefix: str, name: str) -> bool:
        """Whether a listed name is an object (else a prefix): node documents are; a chunk
        key is when Icechunk knows it (a prefix is no key: Icechunk refuses to parse it)."""
        if name == _DOCUMENT:
            return True
        try:
            return bool(await self.zarr_store.exists(f"{prefix}/{name}" if prefix else name))
        except Exception:  # noqa: BLE001 - "invalid zarr key": a prefix, not an object
            return False

    async def _find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        prefix = path.strip("/")
        keys = [k async for k in self.zarr_store.list_prefix(f"{prefix}/" if prefix else "")]
        sizes = await asyncio.gather(*(self.zarr_store.getsize(k) for k in keys))
        found = {
            k: {"name": k, "type": "file", "size": s} for k, s in zip(keys, sizes, strict=True)
        }
        return found if detail else sorted(found)


@dataclass
class VersionStore(Store):
    """The engine's store over one snapshot of an Icechunk repository."""

    #: the ``Repository`` it belongs to (``icechunk_repo``), and the version it shows
    repository: Any = None
    version: Any = None
    #: the version's chunk layout (``icechunk_layout``): its documents and native chunks
    #: read from the repository's objects through ``repo_store`` (the engine's own Store of
    #: the repository); None: everything through Icechunk
    layout: Any = None
    repo_store: Store | None = None

    def _arrive_async(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None
    ) -> Iterator[list[tuple[int, object]]]:
        """Every request in flight at once: what the layout knows read here, the rest in a few
        calls to Icechunk (``_cat_batch``), each call's results handed over as it lands
        (decoding starts while the rest are read)."""
        fs: SessionFileSystem = self.fs  # type: ignore[assignment]
        todo = list(range(len(requests)))
        ranges: list[tuple[int, icechunk_layout.FileRange]] = []
        if self.layout is not None:
            known, ranges, todo = self._from_layout(requests)
            if known:
                yield known
        if ranges:
            yield from self._read_objects(requests, ranges, stop)
        size = max(_BATCH_MIN, math.ceil(len(todo) / _BATCHES))
        calls: dict[concurrent.futures.Future, list[int]] = {}
        refused: list[tuple[int, object]] = []
        for first in range(0, len(todo), size):
            part = []
            for i in todo[first : first + size]:
                try:
                    self.full_path(requests[i].key)  # refuses keys that could leave the store
                    part.append(i)
                except StoreError as exc:
                    refused.append((i, exc))
            if part:
                batch = fs._cat_batch([requests[i] for i in part])
                calls[asyncio.run_coroutine_threadsafe(batch, fs.loop)] = part
        if refused:
            yield refused
        pending = set(calls)
        try:
            while pending:
                done, pending = concurrent.futures.wait(
                    pending, timeout=_POLL_SECONDS, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for call in done:
                    try:
                        results = call.result()
                    except Exception as exc:  # noqa: BLE001 - the loop's own failure
                        results = [exc] * len(calls[call])
                    yield list(zip(calls[call], results, strict=True))
                if pending and stop is not None and stop():
                    return
        finally:
            for call in pending:
                call.cancel()

    @property
    def is_async(self) -> bool:
        """Not where the layout reads chunks from local files: they are then read as a plain
        local store's, in the read's decode tasks (``_read_sync``), not all up front."""
        local = self.repo_store is not None and not self.repo_store.is_async
        return not (local and self.layout is not None)

    def _read_sync(self, req: ByteRequest, expect: int = 0):
        """One read, in a decode task: as the layout says (documents, inline chunks, chunk
        files), else through Icechunk; its bytes, or the exception of that read. (``expect``,
        a whole object's likely size, is the plain store's: the layout knows every size.)"""
        layout = self.layout
        if layout is not None and req.start is None:  # a chunk read before: one dict lookup
            asked = layout.chunk_read(req.key)
            if asked is not None:
                return self._chunk_object(req, asked, self.repo_store._read_sync(asked))  # type: ignore[union-attr]
        fs: SessionFileSystem = self.fs  # type: ignore[assignment]
        known, ranges, _ = self._from_layout([req])
        if known:
            return known[0][1]
        if ranges:
            where = ranges[0][1]
            asked = ByteRequest(where.key, where.offset, where.offset + where.length)
            return self._chunk_object(req, asked, self.repo_store._read_sync(asked))  # type: ignore[union-attr]
        try:
            return fsspec.asyn.sync(fs.loop, fs._cat_file, req.key, req.start, req.end)
        except Exception as exc:  # noqa: BLE001 - sorted out by stream()
            return exc

    def chunk_file_ranges(self, keys: list[str]) -> tuple[int, list] | None:
        """For the compiled chunk loop (:mod:`.chunkloop`), where a local repository's layout
        puts each whole chunk read of ``keys``: the directory descriptor its objects are
        opened below (as the repository's own store opens them, ``Store.whole_files``) and
        for each key ``(name, start, stop)`` of its chunk object, or None (absent, inline,
        virtual, unknown: read the Python way, which says what it is). None where chunks are
        not read from local objects by the layout."""
        layout, repo = self.layout, self.repo_store
        if layout is None or repo is None:
            return None
        made = repo.whole_files()
        if made is None:
            return None
        dirfd, base = made
        out: list = []
        names: dict[str, bytes] = {}
        try:
            for key in keys:
                asked = layout.chunk_read(key)
                if asked is None:
                    got = icechunk_layout.answer(layout, key, None, None)
                    if not isinstance(got, icechunk_layout.FileRange):
                        out.append(None)
                        continue
                    asked = layout.chunk_read(key)
                    if asked is None:  # (remembered for whole reads only: never here)
                        out.append(None)
                        continue
                name = names.get(asked.key)
                if name is None:
                    name = names[asked.key] = base + os.fsencode(asked.key)
                out.append((name, asked.start, asked.end))
        except icechunk_layout.LayoutError:  # the Python way gives the layout up, and says so
            return None
        return dirfd, out

    def _chunk_object(self, req: ByteRequest, asked: ByteRequest, got):
        """A chunk object's answer checked: the snapshot refers to it, so one that is not
        there (or shorter than referred to) is an error, never absent."""
        if type(got) is bytes and len(got) == asked.end - asked.start:  # type: ignore[operator]
            return got
        if got is None or isinstance(got, FileNotFoundError):
            return self._error(
                f"cannot read {req.key!r} from {self.url}: its chunk object {asked.key} is not "
                "there",
                req.key,
            )
        if isinstance(got, bytes | bytearray | memoryview) and len(got) != asked.end - asked.start:  # type: ignore[operator]
            return self._error(
                f"cannot read {req.key!r} from {self.url}: its chunk object {asked.key} is "
                "shorter than the snapshot says",
                req.key,
            )
        return got

    def _from_layout(self, requests: Sequence[ByteRequest]):
        """(results the layout gives, ``(index, FileRange)`` of chunks to read from the
        repository's objects, indices of the requests left to Icechunk). A layout that cannot
        be read leaves everything to Icechunk from then on."""
        known: list[tuple[int, object]] = []
        ranges: list[tuple[int, icechunk_layout.FileRange]] = []
        rest: list[int] = []
        layout = self.layout  # (another thread may give it up)
        if layout is None:
            return [], [], list(range(len(requests)))
        try:
            for i, req in enumerate(requests):
                got = icechunk_layout.answer(layout, req.key, req.start, req.end)
                if got is icechunk_layout.ASK:
                    rest.append(i)
                elif isinstance(got, icechunk_layout.FileRange):
                    ranges.append((i, got))
                else:  # absent: as Icechunk's store says so
                    known.append((i, FileNotFoundError(req.key) if got is None else got))
        except icechunk_layout.LayoutError as exc:
            log.info("%s: reading through Icechunk (%s)", self.url, exc)
            fs: SessionFileSystem = self.fs  # type: ignore[assignment]
            self.layout = fs.layout = None
            return [], [], list(range(len(requests)))
        return known, ranges, rest

    def _read_objects(
        self,
        requests: Sequence[ByteRequest],
        ranges: list[tuple[int, icechunk_layout.FileRange]],
        stop: Callable[[], bool] | None,
    ) -> Iterator[list[tuple[int, object]]]:
        """Native chunks read from the repository's objects, as they land. A chunk object
        that is not there is an error: the snapshot refers to it, so it is never absent."""
        repo_store: Store = self.repo_store  # type: ignore[assignment]
        asked = [ByteRequest(r.key, r.offset, r.offset + r.length) for _, r in ranges]
        for arrived in repo_store.stream(asked, stop):
            yield [
                (ranges[j][0], self._chunk_object(requests[ranges[j][0]], asked[j], got))
                for j, got in arrived
            ]
