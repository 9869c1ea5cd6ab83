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
import re
from dataclasses import dataclass
from typing import Any

from fsspec.asyn import AsyncFileSystem

from .store import Store

#: names in a listing known to be objects without asking (each node's document)
_DOCUMENT = "zarr.json"
#: a line of Icechunk's report that names a cause: its first (``x``) and each ``->``
_REPORT_MARK = re.compile(r"^\s*(?:x\s|[|`]-+>)\s*")
_DOCUMENTS = frozenset((_DOCUMENT, ".zarray", ".zgroup", ".zattrs", ".zmetadata"))


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


class SessionFileSystem(AsyncFileSystem):
    """fsspec's async interface over an Icechunk session's (read-only) zarr-python store."""

    protocol = "icechunk"
    cachable = False  # one instance per session: fsspec must not hand it to another version
    async_impl = True

    def __init__(self, zarr_store: Any, **kwargs):
        super().__init__(**kwargs)
        from zarr.core.buffer import default_buffer_prototype

        self.zarr_store = zarr_store
        self._prototype = default_buffer_prototype()

    async def _cat_file(self, path, start=None, end=None, **kwargs):
        document = path.rsplit("/", 1)[-1] in _DOCUMENTS
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

    @classmethod
    def of_session(cls, session: Any, url: str, repository: Any, version: Any) -> VersionStore:
        return cls(
            fs=SessionFileSystem(session.store),
            root="",
            url=url,
            repository=repository,
            version=version,
        )
