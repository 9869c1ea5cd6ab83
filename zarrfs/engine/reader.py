"""The reader: carries out a plan (STYLE 5). Cache, fetch, decode, place.

For each chunk the planner names: a decoded copy in the shared cache is placed at once; the rest
are fetched (async stores: every request of the read in flight at once, shard indexes first,
then inner chunks, coalesced; sync stores: each chunk fetched by the task that decodes it) and
decoded in the decode pool, each straight into its place in the output. A missing chunk reads as
the fill value. A chunk that fails does not stop the others: the read finishes what it can, then
raises the first failure (so a viewer can still show the rest of a plane).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import cache, scheduler, stats
from .codecs import ChunkSpec
from .coalesce import coalesce, split
from .errors import ChunkDecodeError, ReadCancelled, ZarrfsError
from .metadata import ArrayMetadata, fill_array
from .planner import ChunkRequest
from .sharding import ShardingCodec
from .store import ByteRequest, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkEvent:
    """What happened to one chunk of a background read."""

    chunk_coords: tuple[int, ...]
    status: str  # "loaded" | "missing" | "failed"
    out_selection: tuple[slice, ...]
    error: BaseException | None = None


#: A piece of work for one chunk: where it goes (request + output array).
Target = tuple[ChunkRequest, np.ndarray]

_INDEX_CACHE_ENTRIES = 8192
_index_lock = threading.Lock()
_index_cache: OrderedDict[tuple[str, str], np.ndarray | None] = OrderedDict()


class ArrayReader:
    """Reads chunks of one array. The chunk a read decodes is the inner chunk when sharded."""

    def __init__(self, store: Store, path: str, meta: ArrayMetadata):
        self.store = store
        self.path = path
        self.meta = meta
        chain = meta.codecs
        codec = chain.array_bytes
        # partial shard reads only where the shard object is exactly index + inner chunks
        self.sharding = (codec if isinstance(codec, ShardingCodec) and not chain.array_array
                         and not chain.bytes_bytes else None)
        self.chunk_shape = self.sharding.chunk_shape if self.sharding else meta.chunk_shape
        self.fill = fill_array(meta)
        self.spec = ChunkSpec(self.chunk_shape, meta.data_type.stored_dtype, meta.order,
                              meta.fill_value if meta.data_type.dtype.kind == "O" else self.fill)
        self._prefix = f"{path}/" if path else ""

    # ----------------------------------------------------------------- keys
    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        """The store key holding this (read) chunk: its shard's key when sharded."""
        if self.sharding:
            cps = self.sharding.chunks_per_shard(self.meta.chunk_shape)
            chunk_coords = tuple(c // n for c, n in zip(chunk_coords, cps, strict=True))
        return self._prefix + self.meta.chunk_key_encoding.key(chunk_coords)

    def _cache_key(self, coords: tuple[int, ...]) -> tuple:
        return (self.store.url, self.path, coords)

    # ----------------------------------------------------------------- read
    def execute(self, targets: list[Target], *, token: scheduler.CancelToken | None = None,
                on_chunk: Callable[[ChunkEvent], None] | None = None,
                priority: int = scheduler.PRIORITY_VISIBLE) -> None:
        """Fill every target; raise the first failure once all chunks are done."""
        token = token or scheduler.CancelToken()
        by_chunk: dict[tuple[int, ...], list[Target]] = defaultdict(list)
        for t in targets:
            by_chunk[t[0].chunk_coords].append(t)
        pending = []
        for coords, ts in by_chunk.items():
            hit = cache.chunks.get(self._cache_key(coords))
            if hit is not None:
                self._place(hit, ts, on_chunk)
            else:
                pending.append(coords)
        if not pending:
            return
        token.check(self.path)
        if self.store.is_async:
            located = self._locate_remote(pending)
            jobs = [(c, located[c]) for c in pending]
        else:
            jobs = [(c, None) for c in pending]
        futures = [scheduler.run_decode(self._job(c, data, by_chunk[c], token, on_chunk),
                                        priority) for c, data in jobs]
        self._wait(futures, token)

    def _wait(self, futures: list[concurrent.futures.Future], token) -> None:
        first: BaseException | None = None
        for f in futures:
            try:
                f.result()
            except concurrent.futures.CancelledError:
                first = first or ReadCancelled(path=self.path)
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                first = first or exc
        if token.cancelled:
            raise ReadCancelled(path=self.path)
        if first is not None:
            raise first

    def _job(self, coords, data, targets, token, on_chunk):
        def run():
            if token.cancelled:
                return
            key = self.chunk_key(coords)
            try:
                raw = data if data is not None else self._fetch_local(coords)
                if raw is _MISSING:
                    self._place_fill(coords, targets, on_chunk)
                    return
                if token.cancelled:
                    return
                chunk = self._decode(raw, key)
            except ZarrfsError as exc:
                if exc.key is None:
                    exc.key = key
                if exc.path is None:
                    exc.path = self.store.full_path(self.path) if self.path else self.store.url
                stats.add(chunk_errors=1)
                log.warning("chunk %s of %s: %s", key, self.path or "/", exc.message)
                if on_chunk:
                    for req, _ in targets:
                        on_chunk(ChunkEvent(coords, "failed", req.out_selection, exc))
                raise
            cache.chunks.put(self._cache_key(coords), chunk)
            self._place(chunk, targets, on_chunk)

        return run

    def _decode(self, raw: bytes, key: str) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            chain = self.sharding.codecs if self.sharding else self.meta.codecs
            chunk = chain.decode(raw, self.spec)
        except ChunkDecodeError as exc:
            exc.message = f"chunk {key!r} of {self.path or '/'}: {exc.message}"
            exc.args = (exc.message,)
            raise
        finally:
            stats.add(decode_seconds=time.perf_counter() - t0)
        stats.add(chunks_decoded=1)
        return chunk

    def _place(self, chunk, targets, on_chunk) -> None:
        for req, out in targets:
            out[req.out_selection] = chunk[req.chunk_selection]
            if on_chunk:
                on_chunk(ChunkEvent(req.chunk_coords, "loaded", req.out_selection))

    def _place_fill(self, coords, targets, on_chunk) -> None:
        stats.add(chunks_missing=1)
        for req, out in targets:
            out[req.out_selection] = self.fill
            if on_chunk:
                on_chunk(ChunkEvent(coords, "missing", req.out_selection))

    # ------------------------------------------------------------- fetching
    def _fetch_local(self, coords):
        """Sync stores: this chunk's bytes, read by the decode task itself."""
        if not self.sharding:
            data = self.store.get(self.chunk_key(coords))
            return _MISSING if data is None else data
        return self._locate_remote([coords])[coords]

    def _locate_remote(self, coords_list) -> dict:
        """Bytes (or _MISSING) of every chunk, fetched in as few waves as the layout allows."""
        if not self.sharding:
            keys = [self.chunk_key(c) for c in coords_list]
            got = self.store.fetch([ByteRequest(k) for k in keys])
            return {c: (_MISSING if d is None else d) for c, d in zip(coords_list, got,
                                                                      strict=True)}
        indexes = self._shard_indexes({self.chunk_key(c) for c in coords_list})
        cps = self.sharding.chunks_per_shard(self.meta.chunk_shape)
        out: dict = {}
        wanted: list[tuple[tuple[int, ...], ByteRequest]] = []
        for c in coords_list:
            key = self.chunk_key(c)
            index = indexes[key]
            inner = tuple(i % n for i, n in zip(c, cps, strict=True))
            where = None if index is None else self.sharding.locate(index, inner)
            if where is None:
                out[c] = _MISSING
            else:
                wanted.append((c, ByteRequest(key, where[0], where[0] + where[1])))
        requests = [r for _, r in wanted]
        merged, mapping = coalesce(requests)
        for (c, r), data in zip(wanted, split(requests, mapping, self.store.fetch(merged)),
                                strict=True):
            if data is None or len(data) != r.end - r.start:
                raise ChunkDecodeError(
                    f"shard {r.key!r} is truncated: inner chunk {c} wants bytes "
                    f"{r.start}-{r.end}, got {0 if data is None else len(data)}",
                    path=self.store.url, key=r.key, codec="sharding_indexed")
            out[c] = data
        return out

    def _shard_indexes(self, keys: set[str]) -> dict[str, np.ndarray | None]:
        found: dict[str, np.ndarray | None] = {}
        missing = []
        with _index_lock:
            for k in keys:
                ck = (self.store.url, k)
                if ck in _index_cache:
                    _index_cache.move_to_end(ck)
                    found[k] = _index_cache[ck]
                else:
                    missing.append(k)
        if missing:
            shard_shape = self.meta.chunk_shape
            requests = [self.sharding.index_request(k, shard_shape) for k in missing]
            for k, data in zip(missing, self.store.fetch(requests), strict=True):
                try:
                    index = None if data is None else self.sharding.decode_index(data,
                                                                                 shard_shape)
                except ChunkDecodeError as exc:
                    exc.key, exc.path = k, self.store.url
                    exc.message = f"shard index of {k!r}: {exc.message}"
                    exc.args = (exc.message,)
                    raise
                found[k] = index
                with _index_lock:
                    _index_cache[(self.store.url, k)] = index
                    while len(_index_cache) > _INDEX_CACHE_ENTRIES:
                        _index_cache.popitem(last=False)
        return found


class _Missing:
    def __repr__(self) -> str:
        return "<missing chunk>"


_MISSING = _Missing()
