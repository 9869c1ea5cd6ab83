"""The fetch stage of a read: a chunk source per layout gives the stored bytes of chunks (STYLE 5).

The reader asks one question of its array's source: *bytes for these chunks* (as
:class:`Fetched`, in bursts as they land). Two layouts answer it:

- :class:`PlainChunks`: a chunk is one stored object, one request each, all in flight at once.
- :class:`~fetch_sharded.ShardedChunks` (v3 ``sharding_indexed``, read partially): the shard
  index cache, the choice of a whole shard or ranges of it, and the planning of a shard's inner
  chunks from its index all live there.

Everything a read needs is in flight at once (``Store.stream``), and results come back in bursts
as they land, so decoding overlaps the transfer. Per chunk a source gives a :class:`Fetched`:
its bytes, none (no stored chunk: the fill value), or the error of that chunk alone, built here
once with the node's context.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

from . import stats
from .codecs import CodecChain
from .confine import bad_key_reason
from .errors import ZarrfsError
from .metadata import ArrayMetadata
from .planner import ChunkRequest, DimSelection, ShardRequest, plan
from .sharding import ShardingCodec
from .store import ByteRequest, Store, url_below


class Fetched(NamedTuple):
    """The fetch stage's outcome for one chunk: its stored bytes; or ``data`` None (no stored
    chunk: it reads as the fill value); or ``error``, the failure of this chunk alone. (A named
    tuple, as every per-chunk record of a read: made in a fifth of a frozen dataclass's time.)"""

    coords: tuple[int, ...]
    data: bytes | memoryview | None = None
    error: ZarrfsError | None = None


_tuple = tuple.__new__


def fetched(coords: tuple[int, ...], answer) -> Fetched:
    """A chunk's :class:`Fetched` from a store's answer (bytes, None, or an error)."""
    if isinstance(answer, ZarrfsError):
        return Fetched(coords, error=answer)
    return Fetched(coords, answer)


#: a chunk's stored bytes as a sync store gave them: ``(coords, body, start, stop)``, the chunk
#: being ``body[start:stop]`` (a whole file, or its place in a range read for several); or
#: ``body`` None (not stored) or the chunk's error
Span = tuple[tuple[int, ...], "bytes | memoryview | ZarrfsError | None", int, int]


def span_fetched(coords: tuple[int, ...], body, start: int, stop: int) -> Fetched:
    """A :data:`Span` as the :class:`Fetched` the reader's careful path takes (a chunk cut out
    of a longer body is copied: a decoded chunk must not keep the range alive)."""
    if isinstance(body, ZarrfsError):
        return Fetched(coords, error=body)
    if body is not None and (start or stop != len(body)):
        body = bytes(memoryview(body)[start:stop])
    return Fetched(coords, body)


#: a planned piece of work: one chunk's request, or a whole shard's (planned from its index)
Request = ChunkRequest | ShardRequest


class ChunkSource:
    """The stored bytes of one array's read chunks (inner chunks when sharded): what every
    layout shares (keys, the errors' context, the plan of a selection)."""

    #: the shape of a chunk as the reader decodes it, and the codecs that decode it
    chunk_shape: tuple[int, ...]
    chain: CodecChain

    def __init__(self, store: Store, path: str, meta: ArrayMetadata, identity: tuple):
        self.store = store
        self.path = path
        self.meta = meta
        self.identity = identity
        self.url = url_below(store.url, path)
        self.prefix = f"{path}/" if path else ""
        self.encode_key = meta.chunk_key_encoding.key

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        """The store key holding this read chunk."""
        return self.prefix + self.encode_key(coords)

    def key_template(self) -> str | None:
        """Every read chunk's key as a ``%``-template of its coords (``template % coords``,
        C-level formatting, no Python call per chunk), checked once to stay inside the store
        (coordinates are digits: they cannot add a ``..``); None where a chunk's key is not
        its own object's (shards), or the array's path could not name one."""
        return None

    def context_error(self, exc: ZarrfsError, key: str, message: str | None = None) -> ZarrfsError:
        """A new error of ``exc``'s kind (its own fields kept), with this node's context,
        raised from ``exc``."""
        return exc.renewed(
            message or exc.message,
            path=self.url,
            key=key,
            store_url=self.store.url,
            node_path=self.path,
        )

    def plan(self, dims: tuple[DimSelection, ...], *, streaming: bool = False) -> list[Request]:
        """The requests of a selection, one per read chunk."""
        return plan(dims, self.chunk_shape, self.meta.shape)

    def expand(
        self, targets: list, stop: Callable[[], bool]
    ) -> tuple[list, list, BaseException | None]:
        """The targets, with requests planned further once stored data says how (sharded
        arrays); the output regions that read as the fill value (with how many chunks not
        stored they hold); and the first failure. Plain chunks need nothing."""
        return targets, [], None

    def order(self, coords: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """The chunks of a read in the order its tasks take them (they share fetches)."""
        return coords

    def arrivals(
        self, coords_list, stop: Callable[[], bool] | None = None
    ) -> Iterator[list[Fetched]]:
        """Every chunk's :class:`Fetched`, in bursts as they arrive. Stops early, without the
        rest, once ``stop()`` turns true."""
        raise NotImplementedError

    def fetch(self, coords_list) -> list[Fetched]:
        """Every chunk's :class:`Fetched`, in the order asked, once all have arrived."""
        found = {f.coords: f for arrived in self.arrivals(coords_list) for f in arrived}
        return [found[c] for c in coords_list]

    def each(self, coords_list) -> Iterator[Fetched]:
        """Every chunk's :class:`Fetched` from a sync store, in the order asked, as the caller
        takes them (a read's task decodes each before it asks for the next)."""
        return iter(self.fetch(coords_list))

    def files(self) -> tuple[int, bytes] | None:
        """Local files the compiled chunk loop reads itself (:meth:`PlainChunks.files`)."""
        return None

    def spans(self, coords_list) -> Iterator[Span]:
        """Every chunk's stored bytes from a sync store as a :data:`Span`, as the caller takes
        them, for a loop that decodes each at once into memory of its own (never keeping
        ``body``): no copy, no record per chunk."""
        for f in self.each(coords_list):
            body = f.error if f.error is not None else f.data
            yield f.coords, body, 0, len(body) if isinstance(body, bytes | memoryview) else 0


class PlainChunks(ChunkSource):
    """Chunks that are stored objects of their own: one request per chunk, all at once."""

    def __init__(self, store: Store, path: str, meta: ArrayMetadata, identity: tuple):
        super().__init__(store, path, meta, identity)
        self.chunk_shape = meta.chunk_shape
        self.chain = meta.codecs
        #: a stored chunk's likely size at most: its decoded size and a compressor's header
        #: (a local file that size is read in one call)
        self.expect = math.prod(self.chunk_shape) * meta.data_type.dtype.itemsize + 64

    def key_template(self) -> str | None:
        ndim = len(self.chunk_shape)
        template = self.prefix.replace("%", "%%") + self.meta.chunk_key_encoding.template(ndim)
        if bad_key_reason(template % ((0,) * ndim)) is not None:
            return None
        return template

    def files(self) -> tuple[int, bytes] | None:
        """For the compiled chunk loop (:mod:`.chunkloop`), a local store's files as
        :meth:`spans` reads them: the directory descriptor they are opened below (-1: by
        name) and the names' template (``names % coords``); None for other stores."""
        template = self.key_template()
        made = None if template is None else self.store.whole_files()
        if made is None:
            return None
        dirfd, base = made
        return dirfd, base.replace(b"%", b"%%") + os.fsencode(template)

    def file_ranges(self, coords_list) -> tuple[int, list] | None:
        """For the compiled chunk loop, chunks a store keeps as ranges of local files (an
        Icechunk repository's chunk objects, ``VersionStore.chunk_file_ranges``): the
        directory descriptor, and each chunk ``(coords, (name, start, stop), None)``, or
        ``(coords, None, None)`` for one to read the Python way. None for other stores."""
        ranges = getattr(self.store, "chunk_file_ranges", None)
        if ranges is None:
            return None
        made = ranges([self.prefix + self.encode_key(c) for c in coords_list])
        if made is None:
            return None
        dirfd, where = made
        return dirfd, [(c, w, None) for c, w in zip(coords_list, where, strict=True)]

    def arrivals(self, coords_list, stop=None):
        coords_list = list(coords_list)
        requests = [ByteRequest(self.prefix + self.encode_key(c)) for c in coords_list]
        for arrived in self.store.stream(requests, stop):
            out = []
            for i, answer in arrived:
                if isinstance(answer, ZarrfsError):
                    answer = self.context_error(answer, requests[i].key)
                out.append(fetched(coords_list[i], answer))
            yield out

    def each(self, coords_list) -> Iterator[Fetched]:
        """One chunk read at a time, just before it is decoded: its bytes are still in the
        CPU's cache then (reading a task's 128 chunks first, 2.4 MiB, pushed the first out)."""
        keys = [self.prefix + self.encode_key(c) for c in coords_list]
        answers = self.store.read_each(keys, self.expect)
        for coords, key, answer in zip(coords_list, keys, answers, strict=True):
            if answer is None or type(answer) is bytes:  # (made by tuple.__new__, all fields
                yield _tuple(Fetched, (coords, answer, None))  # given: no Python call)
            else:
                yield Fetched(coords, error=self.context_error(answer, key))

    def spans(self, coords_list) -> Iterator[Span]:
        """Each file of a local store read by the store's function (:meth:`Store.whole_reader`)
        under a name made by C-level formatting (:meth:`key_template`); a file it fails on
        is read again the careful way (:meth:`each`), which says why. Other stores: each."""
        template = self.key_template()
        made = None if template is None else self.store.whole_reader(self.expect)
        if template is None or made is None:
            yield from super().spans(coords_list)
            return
        base, read_file = made
        names = base.replace(b"%", b"%%") + os.fsencode(template)  # (a root may hold a %)
        requests = nbytes = 0
        try:
            for coords in coords_list:
                try:
                    body = read_file(names % coords)
                except FileNotFoundError:
                    body = None
                except Exception:  # noqa: BLE001 - read again the careful way, which says why
                    yield from super().spans([coords])
                    continue
                requests += 1
                if body is None:
                    yield coords, None, 0, 0
                else:
                    nbytes += len(body)
                    yield coords, body, 0, len(body)
        finally:  # counted once, not per chunk (a lock each)
            stats.add(requests=requests, bytes_fetched=nbytes)

    def fetch(self, coords_list) -> list[Fetched]:
        out: list = [None] * len(coords_list)
        at = {c: i for i, c in enumerate(coords_list)}
        for arrived in self.arrivals(coords_list):
            for f in arrived:
                out[at[f.coords]] = f
        return out


def partial_sharding(meta: ArrayMetadata) -> ShardingCodec | None:
    """The sharding codec when shards are read partially: where the shard object is exactly
    index + inner chunks (no codec around the sharding codec)."""
    chain = meta.codecs
    codec = chain.array_bytes
    if isinstance(codec, ShardingCodec) and not chain.array_array and not chain.bytes_bytes:
        return codec
    return None
