"""The chunk source of sharded arrays (v3 ``sharding_indexed``, read partially), see :mod:`fetch`.

A read chunk is an inner chunk; its bytes lie in its shard, where the shard's index says. This
source holds what that layout needs, and the reader nothing of it:

- each shard's index, fetched once (its end or start) and cached in :data:`cache.shard_indexes`;
- the choice per shard: read it **whole** in one request (an async store, every inner chunk of
  the shard wanted, its index not yet known: the index is cut out of the shard), or its index
  first and then the **ranges** of the wanted inner chunks, nearby ranges coalesced;
- the planning of a selection touching many inner chunks per shard (a shard request each,
  expanded by :func:`planner.plan_in_shard` into the inner chunks its index says are stored);
- the order a read's tasks take chunks: shard by shard, so a task's ranges share shards.

Models: tensorstore's sharding kvstore, zarrita.js's sharded chunk getter.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Callable
from itertools import chain, repeat
from operator import floordiv, mod, mul

import numpy as np

from . import cache
from .coalesce import coalesce
from .errors import ChunkDecodeError, ZarrfsError
from .fetch import ChunkSource, Fetched, PlainChunks, Request, fetched, partial_sharding
from .grid import grid_shape
from .metadata import ArrayMetadata
from .planner import DimSelection, ShardRequest, count_chunks, plan, plan_in_shard
from .sharding import MISSING as INDEX_MISSING
from .sharding import ShardingCodec
from .store import ByteRequest, Store
from .store_request import piece

_MISSING = int(INDEX_MISSING)
_tuple = tuple.__new__  # (a named tuple made with every field: no Python call per chunk)

#: a read touching more inner chunks than this plans them only once the shards' indexes say
#: which are stored (tiny inner chunks: millions per shard, most absent)
_PLAN_INNER_LIMIT = 1 << 14


class ShardedChunks(ChunkSource):
    """Inner chunks of shards: located through each shard's (cached) index."""

    def __init__(
        self,
        store: Store,
        path: str,
        meta: ArrayMetadata,
        identity: tuple,
        sharding: ShardingCodec,
    ):
        super().__init__(store, path, meta, identity)
        self.sharding = sharding
        self.chunk_shape = sharding.chunk_shape
        self.chain = sharding.codecs
        self.shard_shape = meta.chunk_shape
        self.cps = sharding.chunks_per_shard(meta.chunk_shape)
        #: an inner chunk's place in its shard's index, C order: sum of (coords % cps) * these
        self._strides = tuple(np.cumprod((1, *self.cps[:0:-1]))[::-1].tolist())
        self._cps, self._strides_array = np.array(self.cps, np.int64), np.array(self._strides)

    def shard_coords(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i // n for i, n in zip(coords, self.cps, strict=True))

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        """The key of the shard holding this inner chunk."""
        return self.prefix + self.encode_key(self.shard_coords(coords))

    # ---------------------------------------------------------------- plan
    def plan(self, dims: tuple[DimSelection, ...], *, streaming: bool = False) -> list[Request]:
        """One request per inner chunk; or, for a selection touching many inner chunks, one
        per shard, planned further by :meth:`expand` from the shard's index. ``streaming`` (a
        read reporting each chunk) always plans per chunk."""
        if not streaming and count_chunks(dims, self.chunk_shape) > _PLAN_INNER_LIMIT:
            return [ShardRequest(*r) for r in plan(dims, self.shard_shape, self.meta.shape)]
        return plan(dims, self.chunk_shape, self.meta.shape)

    def expand(self, targets, stop: Callable[[], bool]):
        """Shard requests become requests for the inner chunks their shard's index says are
        stored; the rest of each shard's region is returned as ``(output region, inner chunks
        not stored)`` for the reader to fill. Other targets pass."""
        plain = [t for t in targets if not isinstance(t[0], ShardRequest)]
        shards = [t for t in targets if isinstance(t[0], ShardRequest)]
        if not shards:
            return plain, [], None
        keys = [self.prefix + self.encode_key(r.chunk_coords) for r, _ in shards]
        indexes = self.indexes(list(dict.fromkeys(keys)), stop)
        first, absent = None, []
        for (req, out), key in zip(shards, keys, strict=True):
            index = indexes[key]
            if isinstance(index, BaseException):
                first = first or index
                continue
            if index is None:  # an absent shard: every inner chunk missing
                stored = np.zeros(self.cps, bool)
            else:
                stored = (index[..., 0] != INDEX_MISSING) | (index[..., 1] != INDEX_MISSING)
            requests, missing = plan_in_shard(
                req, self.shard_shape, self.chunk_shape, self.meta.shape, stored
            )
            view = out[(*req.out_selection, ...)]
            if missing:
                absent.append((view, missing))
            plain.extend((r, view) for r in requests)
        return plain, absent, first

    def order(self, coords):
        """Shard by shard (C order within): a task's chunks then share shards, each of which
        is read in one range (in plain C order, a task of one z-layer took half of each of
        several shards, and two tasks each read a range spanning every shard's middle).
        Sorted by NumPy (a Python key per chunk took 0.5-1 ms of a 256-chunk plane, on the
        calling thread before any task began)."""
        if len(coords) < 2:
            return list(coords)
        at = _coords_array(coords, len(self.cps))
        keys = np.concatenate([at // self._cps, at], axis=1)
        return [coords[i] for i in np.lexsort(keys.T[::-1]).tolist()]

    # --------------------------------------------------------------- fetch
    def arrivals(self, coords_list, stop=None):
        """Every chunk's :class:`Fetched`, in bursts as they arrive, in as few waves as the
        layout allows: one when every inner chunk of a shard is wanted (the whole shard is
        read), else the indexes first, then the inner chunks (coalesced)."""
        ready, wanted, whole = self._sources(coords_list, stop)
        if stop is not None and stop():  # while shard indexes were on the way
            return
        if ready:
            yield [fetched(c, answer) for c, answer in ready.items()]
        merged, parts = self._ranges(wanted)
        shards, first_shard = list(whole.items()), len(merged)
        merged.extend(ByteRequest(key) for key, _ in shards)
        for arrived in self.store.stream(merged, stop):
            out = []
            for j, answer in arrived:
                if j >= first_shard:
                    key, coords = shards[j - first_shard]
                    out.extend(self._shard_chunks(key, coords, answer))
                    continue
                for c, r, offset in parts[j]:
                    out.append(fetched(c, self._cut(c, r, answer, offset)))
            yield out

    def spans(self, coords_list):
        """Every chunk's :data:`~fetch.Span` from a sync store, range by range: each coalesced
        range read just before its chunks are decoded (while its bytes are in the CPU's
        cache), each chunk its place in the range (no copy); a chunk not stored, or whose
        index or range failed, its None or error."""
        ready, wanted, _ = self._sources(coords_list)  # (a sync store reads no shard whole)
        for c, answer in ready.items():
            yield c, answer, 0, 0
        merged, parts = self._ranges(wanted)
        for request, chunks in zip(merged, parts, strict=True):
            answer = next(iter(self.store.stream([request])))[0][1]
            for c, r, offset in chunks:
                stop = offset + r.end - r.start
                if type(answer) is bytes and stop <= len(answer):
                    yield c, answer, offset, stop
                else:
                    cut = self._cut(c, r, answer, offset)
                    yield c, cut, 0, len(cut) if not isinstance(cut, ZarrfsError) else 0

    def file_ranges(self, coords_list) -> tuple[int, list] | None:
        """For the compiled chunk loop (:mod:`.chunkloop`), each chunk of a local store's
        shards where :meth:`spans` finds it: the directory descriptor the shards are opened
        below (-1: by name), and for each chunk ``(coords, (name, start, stop), None)``
        where its shard's index places it (one name object a shard), or ``(coords, None,
        span)`` for a chunk its index answers itself (not stored; an index that failed).
        Each shard's chunks looked up in its index by NumPy. None for other stores."""
        made = self.store.whole_files()
        if made is None:
            return None
        dirfd, base = made
        coords_list = list(coords_list)
        if not coords_list:
            return dirfd, []
        at = _coords_array(coords_list, len(self.cps))
        shards = at // self._cps
        # runs of one shard's chunks (order() puts a read's chunks shard by shard)
        change = np.flatnonzero((shards[1:] != shards[:-1]).any(axis=1)) + 1
        bounds = [0, *change.tolist(), len(coords_list)]
        keys = [self.prefix + self.encode_key(tuple(shards[a].tolist())) for a in bounds[:-1]]
        indexes = self.indexes(list(dict.fromkeys(keys)))
        inner = (at % self._cps) @ self._strides_array
        out: list = []
        names: dict[str, bytes] = {}
        for key, a, b in zip(keys, bounds[:-1], bounds[1:], strict=True):
            chunks, index = coords_list[a:b], indexes[key]
            if not isinstance(index, np.ndarray):  # an absent shard, or its index's error
                out.extend((c, None, (c, self._inner(c, index), 0, 0)) for c in chunks)
                continue
            where = index.reshape(-1, 2)[inner[a:b]]
            starts, lengths = where[:, 0], where[:, 1]
            absent = (starts == INDEX_MISSING) & (lengths == INDEX_MISSING)
            name = names.get(key)
            if name is None:
                name = names[key] = base + os.fsencode(key)
            # (a sum past 2**64 wraps below its start: the loop refuses it, the Python way
            # says what is wrong)
            stops = (starts + lengths).tolist()
            if not absent.any():  # (tuples made by zip: no Python call a chunk)
                located = zip(repeat(name), starts.tolist(), stops, strict=True)
                out.extend(zip(chunks, located, repeat(None)))
                continue
            for c, gone, start, stop in zip(
                chunks, absent.tolist(), starts.tolist(), stops, strict=True
            ):
                out.append((c, None, (c, None, 0, 0)) if gone else (c, (name, start, stop), None))
        return dirfd, out

    @staticmethod
    def _ranges(wanted: list) -> tuple[list[ByteRequest], list[list]]:
        """The chunks' range requests coalesced, and for each merged request its chunks
        ``(coords, request, offset in the merged answer)``."""
        merged, mapping = coalesce([r for _, r in wanted])
        parts: list[list] = [[] for _ in merged]
        for (c, r), (j, offset) in zip(wanted, mapping, strict=True):
            parts[j].append((c, r, offset))
        return merged, parts

    def _cut(self, coords, req: ByteRequest, answer, offset: int):
        """One inner chunk's bytes out of the answer to its (merged) range request."""
        if isinstance(answer, ZarrfsError):
            return self.context_error(answer, req.key)
        data = None if answer is None else piece(answer, offset, offset + req.end - req.start)
        if data is None or len(data) != req.end - req.start:
            return ChunkDecodeError(
                f"shard {req.key!r} of {self.url} is truncated: inner chunk {coords} wants "
                f"bytes {req.start}-{req.end}, got {0 if data is None else len(data)}",
                path=self.url,
                key=req.key,
                codec="sharding_indexed",
                store_url=self.store.url,
                node_path=self.path,
            )
        return data

    def _sources(self, coords_list, stop=None):
        """What is known of each chunk before its own bytes are fetched (a missing inner
        chunk, an unreadable index); the range request for each other chunk; and the shards
        to read whole, with their chunks."""
        cps = self.cps
        by_coords: dict[tuple[int, ...], list] = defaultdict(list)
        for c in coords_list:  # (map, not a generator: no Python call per chunk)
            by_coords[tuple(map(floordiv, c, cps))].append(c)
        by_shard = {self.prefix + self.encode_key(k): v for k, v in by_coords.items()}
        indexes, whole = self._shard_indexes(by_shard, stop)
        out: dict = {}
        wanted: list[tuple[tuple[int, ...], ByteRequest]] = []
        for key, index in indexes.items():
            chunks = by_shard[key]
            if isinstance(index, np.ndarray):  # (offset, nbytes) by inner chunk, as ints
                table = index.reshape(-1, 2).tolist()
                strides = self._strides
                for c in chunks:
                    offset, nbytes = table[sum(map(mul, map(mod, c, cps), strides))]
                    if offset == _MISSING and nbytes == _MISSING:
                        out[c] = None
                    else:
                        wanted.append((c, _tuple(ByteRequest, (key, offset, offset + nbytes))))
            else:  # an absent shard (None) or its index's error, for each of its chunks
                for c in chunks:
                    out[c] = self._inner(c, index)
        return out, wanted, whole

    def _inner(self, coords, index, shard_size: int | None = None):
        """Where an inner chunk lies in its shard, ``(offset, length)``; or None, or the
        error that makes it unreadable."""
        if isinstance(index, ZarrfsError):
            return index
        if index is None:
            return None
        inner = tuple(i % n for i, n in zip(coords, self.cps, strict=True))
        try:
            return self.sharding.locate(index, inner, shard_size)
        except ChunkDecodeError as exc:
            return self.context_error(exc, self.chunk_key(coords))

    def _shard_chunks(self, key: str, coords: list, shard) -> list[Fetched]:
        """The chunks of a shard read whole, cut out of it (its index is cached on the way)."""
        if isinstance(shard, ZarrfsError):
            error = self.context_error(shard, key)
            return [Fetched(c, error=error) for c in coords]
        raw = shard
        if shard is not None:
            size = self.sharding.index_size(self.shard_shape)
            at = 0 if self.sharding.index_location == "start" else len(shard) - size
            raw = piece(shard, max(0, at), at + size)
        index = self._index(key, raw)
        out = []
        for c in coords:
            where = self._inner(c, index, None if shard is None else len(shard))
            part = (
                piece(shard, where[0], where[0] + where[1]) if isinstance(where, tuple) else where
            )
            out.append(fetched(c, part))
        return out

    # ------------------------------------------------------------- indexes
    def _index(self, key: str, raw: bytes | None):
        """A shard's decoded index (None: the shard is absent), cached; or its error."""
        try:
            index = None if raw is None else self.sharding.decode_index(raw, self.shard_shape)
        except ChunkDecodeError as exc:
            return self.context_error(exc, key, f"shard index of {key!r}: {exc.message}")
        cache.shard_indexes.put((*self.identity, key), index)
        return index

    def _inner_count(self, shard: tuple[int, ...]) -> int:
        """How many inner chunks of the shard with these coords lie inside the array."""
        grid = grid_shape(self.meta.shape, self.chunk_shape)
        return math.prod(
            min((k + 1) * n, g) - k * n for k, n, g in zip(shard, self.cps, grid, strict=True)
        )

    def indexes(self, keys: list[str], stop: Callable[[], bool] | None = None) -> dict:
        """Each shard's decoded index (None: the shard is absent) or its error; those not
        cached fetched in one wave."""
        found: dict = {}
        todo = []
        for key in keys:
            known, index = cache.shard_indexes.lookup((*self.identity, key))
            if known:
                found[key] = index
            else:
                todo.append(key)
        requests = [self.sharding.index_request(key, self.shard_shape) for key in todo]
        for key, data in zip(todo, self.store.fetch_each(requests, stop), strict=True):
            found[key] = (
                self.context_error(data, key)
                if isinstance(data, ZarrfsError)
                else self._index(key, data)
            )
        return found

    def _shard_indexes(self, by_shard: dict[str, list], stop=None) -> tuple[dict, dict[str, list]]:
        """Every shard's index (or its error), fetched in one wave where not cached; except
        the shards worth reading whole (async stores, every inner chunk wanted, index not
        cached): those come back in the second dict, with their chunks, for the caller to
        fetch. Once ``stop()``, indexes still on the way are errors (ReadCancelled), never
        taken for absent shards."""
        whole: dict[str, list] = {}
        for key, coords in by_shard.items():
            if not self.store.is_async or cache.shard_indexes.lookup((*self.identity, key))[0]:
                continue
            if len(coords) == self._inner_count(self.shard_coords(coords[0])):
                whole[key] = coords
        return self.indexes([k for k in by_shard if k not in whole], stop), whole


def _coords_array(coords: list[tuple[int, ...]], ndim: int) -> np.ndarray:
    """Chunk coordinates as an ``(n, ndim)`` int64 array (``np.array`` of a list of tuples
    spends about 0.1 ms finding a plane's 256 tuples' shape; this about half)."""
    flat = np.fromiter(chain.from_iterable(coords), dtype=np.int64, count=len(coords) * ndim)
    return flat.reshape(len(coords), ndim)


def chunk_source(store: Store, path: str, meta: ArrayMetadata, identity: tuple) -> ChunkSource:
    """The source for this array's layout: shards read partially, or one object a chunk."""
    sharding = partial_sharding(meta)
    if sharding is None:
        return PlainChunks(store, path, meta, identity)
    return ShardedChunks(store, path, meta, identity, sharding)
