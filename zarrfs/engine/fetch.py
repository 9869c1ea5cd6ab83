"""The fetch stage of a read: the stored bytes of each chunk a plan needs (STYLE 5).

Plain chunks are one request each. Sharded arrays (v3 ``sharding_indexed``, read partially)
first need each shard's index (cached in :data:`cache.shard_indexes`), then the byte range of
each inner chunk, nearby ranges coalesced; a shard every one of whose inner chunks is wanted is
read whole in one request, its index cut out of it. Everything a read needs is in flight at once
(``Store.stream``), and results come back in bursts as they land, so decoding overlaps the
transfer.

Per chunk the stage gives a :class:`Fetched`: its bytes, none (no stored chunk: the fill value),
or the error of that chunk alone, built here once with the node's context.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import cache
from .coalesce import coalesce
from .errors import ChunkDecodeError, ZarrfsError
from .grid import grid_shape
from .metadata import ArrayMetadata
from .sharding import ShardingCodec
from .store import ByteRequest, Store, url_below


@dataclass(frozen=True, slots=True)
class Fetched:
    """The fetch stage's outcome for one chunk: its stored bytes; or ``data`` None (no stored
    chunk: it reads as the fill value); or ``error``, the failure of this chunk alone."""

    coords: tuple[int, ...]
    data: bytes | memoryview | None = None
    error: ZarrfsError | None = None


def _fetched(coords: tuple[int, ...], answer) -> Fetched:
    if isinstance(answer, ZarrfsError):
        return Fetched(coords, error=answer)
    return Fetched(coords, answer)


class ChunkFetcher:
    """Fetches the stored bytes of chunks of one array (inner chunks when sharded)."""

    def __init__(
        self,
        store: Store,
        path: str,
        meta: ArrayMetadata,
        sharding: ShardingCodec | None,
        identity: tuple,
        chunk_key: Callable[[tuple[int, ...]], str],
    ):
        self.store = store
        self.path = path
        self.meta = meta
        self.sharding = sharding
        self.chunk_key = chunk_key
        self._identity = identity
        self._cps = sharding.chunks_per_shard(meta.chunk_shape) if sharding else None
        self.chunk_shape = sharding.chunk_shape if sharding else meta.chunk_shape
        self.url = url_below(store.url, path)

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

    def locate(self, coords_list) -> dict[tuple[int, ...], Fetched]:
        """Every chunk's :class:`Fetched`, once all have arrived."""
        return {f.coords: f for arrived in self.arrivals(coords_list) for f in arrived}

    def arrivals(
        self, coords_list, stop: Callable[[], bool] | None = None
    ) -> Iterator[list[Fetched]]:
        """Every chunk's :class:`Fetched`, in bursts as they arrive, fetched in as few waves as
        the layout allows: one for plain chunks; for shards one when every inner chunk of a
        shard is wanted (the whole shard is read), else the indexes first, then the inner
        chunks (coalesced). Stops early, without the rest, once ``stop()`` turns true."""
        for arrived in self._arrivals(coords_list, stop):
            yield [_fetched(coords, answer) for coords, answer in arrived]

    def _arrivals(
        self, coords_list, stop: Callable[[], bool] | None = None
    ) -> Iterator[list[tuple[tuple[int, ...], object]]]:
        """``(coords, bytes | None | error of that chunk alone)``, in bursts as they arrive."""
        ready, wanted, whole = self._sources(coords_list, stop)
        if stop is not None and stop():  # while shard indexes were on the way
            return
        if ready:
            yield list(ready.items())
        requests = [r for _, r in wanted]
        merged, mapping = coalesce(requests)
        parts: dict[int, list[int]] = defaultdict(list)  # merged request -> its requests
        for i, (j, _) in enumerate(mapping):
            parts[j].append(i)
        shards, first_shard = list(whole.items()), len(merged)
        merged.extend(ByteRequest(key) for key, _ in shards)
        for arrived in self.store.stream(merged, stop):
            out = []
            for j, answer in arrived:
                if j >= first_shard:
                    key, coords = shards[j - first_shard]
                    out.extend(self._shard_chunks(key, coords, answer))
                    continue
                for i in parts[j]:
                    (c, r), (_, offset) = wanted[i], mapping[i]
                    out.append((c, self._cut(c, r, answer, offset)))
            yield out

    def _cut(self, coords, req: ByteRequest, answer, offset: int):
        """One chunk's bytes out of the answer to its (merged) request."""
        if isinstance(answer, ZarrfsError):
            return self.context_error(answer, req.key)
        if req.start is None:  # a whole chunk object
            return None if answer is None else answer
        data = None if answer is None else answer[offset : offset + (req.end - req.start)]
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

    def _sources(
        self, coords_list, stop=None
    ) -> tuple[dict, list[tuple[tuple[int, ...], ByteRequest]], dict[str, list]]:
        """What is known of each chunk before its own bytes are fetched (a missing inner
        chunk, an unreadable index); the request for each other chunk (its object, or its
        byte range in its shard); and the shards to read whole, with their chunks."""
        if not self.sharding:
            return {}, [(c, ByteRequest(self.chunk_key(c))) for c in coords_list], {}
        by_shard: dict[str, list] = defaultdict(list)
        for c in coords_list:
            by_shard[self.chunk_key(c)].append(c)
        indexes, whole = self._shard_indexes(by_shard, stop)
        out: dict = {}
        wanted: list[tuple[tuple[int, ...], ByteRequest]] = []
        for key, index in indexes.items():
            for c in by_shard[key]:
                where = self._inner(c, index)
                if isinstance(where, tuple):
                    wanted.append((c, ByteRequest(key, where[0], where[0] + where[1])))
                else:
                    out[c] = where
        return out, wanted, whole

    def _inner(self, coords, index, shard_size: int | None = None):
        """Where an inner chunk lies in its shard, ``(offset, length)``; or None, or the
        error that makes it unreadable."""
        if isinstance(index, ZarrfsError):
            return index
        if index is None:
            return None
        inner = tuple(i % n for i, n in zip(coords, self._cps, strict=True))
        try:
            where = self.sharding.locate(index, inner, shard_size)
        except ChunkDecodeError as exc:
            return self.context_error(exc, self.chunk_key(coords))
        return None if where is None else where

    def _shard_chunks(self, key: str, coords: list, shard) -> list[tuple[tuple[int, ...], object]]:
        """The chunks of a shard read whole, cut out of it (its index is cached on the way)."""
        if isinstance(shard, ZarrfsError):
            error = self.context_error(shard, key)
            return [(c, error) for c in coords]
        raw = shard
        if shard is not None:
            size = self.sharding.index_size(self.meta.chunk_shape)
            raw = shard[:size] if self.sharding.index_location == "start" else shard[-size:]
        index = self._index(key, raw)
        out = []
        for c in coords:
            where = self._inner(c, index, None if shard is None else len(shard))
            out.append(
                (c, shard[where[0] : where[0] + where[1]] if isinstance(where, tuple) else where)
            )
        return out

    def _index(self, key: str, raw: bytes | None):
        """A shard's decoded index (None: the shard is absent), cached; or its error."""
        try:
            index = None if raw is None else self.sharding.decode_index(raw, self.meta.chunk_shape)
        except ChunkDecodeError as exc:
            return self.context_error(exc, key, f"shard index of {key!r}: {exc.message}")
        cache.shard_indexes.put((*self._identity, key), index)
        return index

    def _inner_count(self, key_coords: tuple[int, ...]) -> int:
        """How many inner chunks of the shard with these coords lie inside the array."""
        cps = self._cps
        grid = grid_shape(self.meta.shape, self.chunk_shape)
        return math.prod(
            min((k + 1) * n, g) - k * n for k, n, g in zip(key_coords, cps, grid, strict=True)
        )

    def indexes(self, keys: list[str], stop: Callable[[], bool] | None = None) -> dict:
        """Each shard's decoded index (None: the shard is absent) or its error; those not
        cached fetched in one wave."""
        found: dict = {}
        todo = []
        for key in keys:
            known, index = cache.shard_indexes.lookup((*self._identity, key))
            if known:
                found[key] = index
            else:
                todo.append(key)
        shard_shape = self.meta.chunk_shape
        requests = [self.sharding.index_request(key, shard_shape) for key in todo]
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
        cps = self._cps
        whole: dict[str, list] = {}
        for key, coords in by_shard.items():
            if not self.store.is_async or cache.shard_indexes.lookup((*self._identity, key))[0]:
                continue
            shard_coords = tuple(i // n for i, n in zip(coords[0], cps, strict=True))
            if len(coords) == self._inner_count(shard_coords):
                whole[key] = coords
        return self.indexes([k for k in by_shard if k not in whole], stop), whole
