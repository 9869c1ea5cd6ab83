"""The reader: carries out a plan (STYLE 5). Cache, fetch, decode, place.

For each chunk the planner names: a decoded copy in the shared cache is placed at once; the rest
are fetched (async stores: every request of the read in flight at once, shard indexes first,
then inner chunks, coalesced; sync stores: each chunk fetched by the task that decodes it) and
decoded in the decode pool (a small read from a sync store: on the calling thread), each
straight into its place in the output. A missing chunk reads as
the fill value. A chunk that fails does not stop the others: the read finishes what it can, then
raises the first failure (so a viewer can still show the rest of a plane).
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import logging
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from . import cache, scheduler, stats
from .coalesce import coalesce
from .codecs import ChunkSpec
from .errors import ChunkDecodeError, ReadCancelled, ZarrfsError
from .grid import grid_shape
from .metadata import ArrayMetadata, fill_array
from .planner import ChunkRequest
from .sharding import ShardingCodec
from .store import ByteRequest, Store, url_below

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


class ArrayReader:
    """Reads chunks of one array. The chunk a read decodes is the inner chunk when sharded."""

    def __init__(self, store: Store, path: str, meta: ArrayMetadata):
        self.store = store
        self.path = path
        self.meta = meta
        chain = meta.codecs
        codec = chain.array_bytes
        # partial shard reads only where the shard object is exactly index + inner chunks
        self.sharding = (
            codec
            if isinstance(codec, ShardingCodec) and not chain.array_array and not chain.bytes_bytes
            else None
        )
        self.chunk_shape = self.sharding.chunk_shape if self.sharding else meta.chunk_shape
        #: the codecs of one read chunk: the inner chain when shards are read partially
        self.chain = self.sharding.codecs if self.sharding else meta.codecs
        self._chunk_nbytes = math.prod(self.chunk_shape) * meta.data_type.dtype.itemsize
        self._cps = self.sharding.chunks_per_shard(meta.chunk_shape) if self.sharding else None
        self.fill = fill_array(meta)
        self.spec = ChunkSpec(
            self.chunk_shape,
            meta.data_type.stored_dtype,
            meta.order,
            meta.fill_value if meta.data_type.dtype.kind == "O" else self.fill,
        )
        self._prefix = f"{path}/" if path else ""
        # cached chunks and shard indexes belong to this metadata: an array rewritten under
        # the same URL (read again after open()) must never meet chunks decoded for the old
        # one (an int16 chunk of 3 was placed into a float32 array of chunks of 2)
        self._identity = (
            store.url,
            path,
            hashlib.blake2b(repr(meta).encode(), digest_size=8).hexdigest(),
        )

    # ----------------------------------------------------------------- keys
    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        """The store key holding this (read) chunk: its shard's key when sharded."""
        if self._cps:
            chunk_coords = tuple(c // n for c, n in zip(chunk_coords, self._cps, strict=True))
        return self._prefix + self.meta.chunk_key_encoding.key(chunk_coords)

    def _shard_major(self, coords: tuple[int, ...]) -> tuple:
        if not self.sharding:
            return coords
        return tuple(i // n for i, n in zip(coords, self._cps, strict=True)) + coords

    def _cache_key(self, coords: tuple[int, ...]) -> tuple:
        return (*self._identity, coords)

    # ----------------------------------------------------------------- read
    def execute(
        self,
        targets: list[Target],
        *,
        token: scheduler.CancelToken | None = None,
        on_chunk: Callable[[ChunkEvent], None] | None = None,
        priority: int = scheduler.PRIORITY_VISIBLE,
        keep_whole: bool = True,
    ) -> None:
        """Fill every target; raise the first failure once all chunks are done. Decoded
        chunks go to the shared cache; with ``keep_whole`` False only those the targets
        read in part do (a streaming reader never comes back for the others)."""
        token = token or scheduler.CancelToken()
        by_chunk: dict[tuple[int, ...], list[Target]] = defaultdict(list)
        for t in targets:
            by_chunk[t[0].chunk_coords].append(t)
        caching = cache.chunks.would_keep(self._chunk_nbytes)
        pending = []
        for coords, ts in by_chunk.items():
            hit = cache.chunks.get(self._cache_key(coords)) if caching else None
            if hit is not None:
                self._place(hit, ts, on_chunk)
            else:
                pending.append(coords)
        if not pending:
            return
        token.check(self.path)
        # shard by shard (C order within): a task's chunks then share shards, each of which
        # is read in one range (in plain C order, a task of one z-layer took half of each of
        # several shards, and two tasks each read a range spanning every shard's middle)
        pending.sort(key=self._shard_major)
        inflight = scheduler.inflight
        owned, waited = inflight.claim([self._cache_key(c) for c in pending])
        mine = [pending[i] for i in owned]
        futures: list[concurrent.futures.Future] = []
        if mine:
            job = functools.partial(
                self._job,
                by_chunk=by_chunk,
                token=token,
                on_chunk=on_chunk,
                caching=caching,
                keep_whole=keep_whole,
            )
            if self.store.is_async:
                self._dispatch_arrivals(mine, job, priority, futures, token)
            elif len(mine) * self._chunk_nbytes <= _INLINE_BYTES:
                futures = [scheduler.run_here(job(mine, None))]
            else:
                futures = [
                    scheduler.run_decode(job(batch, None), priority)
                    for batch in _batches(mine, _task_size(len(mine), self._chunk_nbytes))
                ]
        first = self._wait(futures)
        for i, slot in waited:
            first = (
                self._take(pending[i], slot, by_chunk[pending[i]], token, on_chunk, caching)
                or first
            )
        if token.cancelled:
            raise ReadCancelled(path=self.path)
        if first is not None:
            raise first

    def _take(self, coords, slot, targets, token, on_chunk, caching) -> BaseException | None:
        """Place a chunk another read was decoding; do it here if that read gave up."""
        value = slot.wait()
        if value is _CANCELLED and not token.cancelled:
            data = self._locate([coords])[coords]
            value = (
                data
                if data is _MISSING or isinstance(data, ZarrfsError)
                else self._guarded_decode(data, coords, caching=False)
            )
        if isinstance(value, BaseException):
            if isinstance(value, ZarrfsError):
                self._failed(coords, value, targets, on_chunk)
            return value
        if value is _MISSING:
            self._place_fill(coords, targets, on_chunk)
        elif value is not _CANCELLED:
            self._place(value, targets, on_chunk)
        return None

    def _guarded_decode(self, data, coords, caching, dest=None):
        try:
            return self._decode(data, coords, caching, dest)
        except ZarrfsError as exc:
            return exc

    def _direct_target(self, targets) -> np.ndarray | None:
        """The output memory (flat bytes) a chunk can be decoded into directly: one target
        reading the whole chunk, inside the array, into a C-contiguous region of the same
        dtype and byte order as the decoded chunk; else None."""
        if len(targets) != 1:
            return None
        req, out = targets[0]
        if not req.whole_chunk or out.dtype != self._decoded_dtype:
            return None
        region = out[(*req.out_selection, ...)]  # "..." keeps a 0-d region a view, not a copy
        if region.nbytes != self._chunk_nbytes or not region.flags.c_contiguous:
            return None  # (an edge chunk that overhangs the array has a smaller region)
        return region.reshape(-1).view(np.uint8)

    @functools.cached_property
    def _decoded_dtype(self) -> np.dtype | None:
        """The dtype a direct-decoding chain produces in C order, when it can."""
        if not self.chain.direct or self.meta.order != "C" or self.spec.dtype.kind == "O":
            return None
        codec = self.chain.array_bytes
        endian = codec.configuration.get("endian", "little") if codec.name == "bytes" else None
        dtype = self.spec.dtype
        if endian and (dtype.itemsize > 1 or dtype.fields):
            dtype = dtype.newbyteorder("<" if endian == "little" else ">")
        return dtype

    def _placed(self, targets, on_chunk) -> None:
        if on_chunk:
            for req, _ in targets:
                on_chunk(ChunkEvent(req.chunk_coords, "loaded", req.out_selection))

    def _wait(self, futures: list[concurrent.futures.Future]) -> BaseException | None:
        """Wait for every task; the first failure, if any."""
        first: BaseException | None = None
        concurrent.futures.wait(futures)  # one wake-up at the end, not one per task
        for f in futures:
            try:
                f.result()
            except concurrent.futures.CancelledError:
                first = first or ReadCancelled(path=self.path)
            except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
                first = first or exc
        return first

    def _job(self, batch, located, *, by_chunk, token, on_chunk, caching, keep_whole):
        """One task: fetch (sync stores) and decode a batch of chunks, placing each and handing
        each result to reads waiting for the same chunk."""

        def run():
            done: set = set()
            try:
                return self._run_batch(
                    batch, located, by_chunk, token, on_chunk, caching, keep_whole, done
                )
            finally:
                for coords in batch:  # cancelled or failed before its turn
                    if coords not in done:
                        scheduler.inflight.publish(self._cache_key(coords), _CANCELLED)

        return run

    def _run_batch(
        self, batch, located, by_chunk, token, on_chunk, caching, keep_whole, done
    ) -> None:
        if token.cancelled:
            return
        raw = located if located is not None else self._locate(batch)  # errors per chunk
        first: BaseException | None = None
        t0, decoded = time.perf_counter(), 0
        key, publish = self._cache_key, scheduler.inflight.publish
        direct = self._decoded_dtype is not None
        for coords in batch:
            if token.cancelled:
                break
            targets, data, share = by_chunk[coords], raw[coords], _share
            if isinstance(data, ZarrfsError):  # this chunk could not be fetched: only this one
                self._failed(coords, data, targets, on_chunk)
                first, value = first or data, data
            elif data is _MISSING:
                self._place_fill(coords, targets, on_chunk)
                value = _MISSING
            else:
                keep = caching and (keep_whole or not all(r.whole_chunk for r, _ in targets))
                # straight into the output only when not kept (the output is the caller's)
                dest = self._direct_target(targets) if direct and not keep else None
                try:
                    value = self._decode(data, coords, keep, dest)
                except ZarrfsError as exc:
                    self._failed(coords, exc, targets, on_chunk)
                    first, value = first or exc, exc
                else:
                    decoded += 1
                    if dest is not None:  # already in place; the output is the caller's
                        self._placed(targets, on_chunk)
                        share = np.copy
                    else:
                        if keep:
                            cache.chunks.put(key(coords), value)
                        self._place(value, targets, on_chunk)
            publish(key(coords), value, share)
            done.add(coords)
        stats.add(decode_seconds=time.perf_counter() - t0, chunks_decoded=decoded)
        if first is not None:
            raise first

    def _failed(self, coords, exc: ZarrfsError, targets, on_chunk) -> None:
        key = self.chunk_key(coords)
        if exc.key is None:
            exc.key = key
        if exc.path is None:
            exc.path = self.store.full_path(self.path) if self.path else self.store.url
        stats.add(chunk_errors=1)
        log.warning("chunk %s of %s: %s", key, self.path or "/", exc.message)
        if on_chunk:
            for req, _ in targets:
                on_chunk(ChunkEvent(coords, "failed", req.out_selection, exc))

    def _decode(self, raw: bytes, coords, caching: bool, dest=None) -> np.ndarray:
        chain = self.chain
        try:
            dtype = self._decoded_dtype
            if dtype is not None and dest is None and not caching:  # the common, hot case
                flat, chunk = _scratch(self._chunk_nbytes, dtype, self.chunk_shape)
                chain.decode_bytes_into(raw, flat)
                return chunk
            if chain.direct:
                buf = (
                    dest
                    if dest is not None
                    else np.empty(self._chunk_nbytes, np.uint8)
                    if caching
                    else _scratch(self._chunk_nbytes, np.uint8, (-1,))[0]
                )
                return chain.decode_into(raw, self.spec, buf)
            return chain.decode(raw, self.spec)
        except ChunkDecodeError as exc:
            where = url_below(self.store.url, self.path)
            exc.message = f"chunk {self.chunk_key(coords)!r} of {where}: {exc.message}"
            exc.args = (exc.message,)
            raise

    def _place(self, chunk, targets, on_chunk) -> None:
        for req, out in targets:
            out[req.out_selection] = chunk[req.chunk_selection]
        self._placed(targets, on_chunk)

    def _place_fill(self, coords, targets, on_chunk) -> None:
        stats.add(chunks_missing=1)
        for req, out in targets:
            out[req.out_selection] = self.fill
            if on_chunk:
                on_chunk(ChunkEvent(coords, "missing", req.out_selection))

    # ------------------------------------------------------------- fetching
    def _dispatch_arrivals(self, mine, job, priority, futures, token) -> None:
        """Async stores: every chunk's bytes requested at once, and each burst of arrivals
        handed to the decode pool as it lands (decoding overlaps the transfer, and a viewer
        sees each chunk as soon as it is there). Tasks go into ``futures`` as they start."""
        size = _task_size(len(mine), self._chunk_nbytes)
        started: set = set()
        try:
            for arrived in self._arrivals(mine, token):
                for part in map(dict, _batches(arrived, size)):
                    futures.append(scheduler.run_decode(job(list(part), part), priority))
                    started.update(part)
        except BaseException as exc:
            self._wait(futures)  # the output is the caller's again once we raise
            for c in mine:
                if c not in started:
                    scheduler.inflight.publish(self._cache_key(c), exc)
            raise
        for c in mine:  # cancelled before their bytes came
            if c not in started:
                scheduler.inflight.publish(self._cache_key(c), _CANCELLED)

    def _locate(self, coords_list) -> dict:
        """Bytes of every chunk, _MISSING, or the StoreError/ChunkDecodeError of that chunk
        alone, once all have arrived."""
        out: dict = {}
        for arrived in self._arrivals(coords_list):
            out.update(arrived)
        return out

    def _arrivals(
        self, coords_list, token: scheduler.CancelToken | None = None
    ) -> Iterator[list[tuple[tuple[int, ...], object]]]:
        """``(coords, bytes | _MISSING | error of that chunk alone)`` of every chunk, in
        bursts as they arrive, fetched in as few waves as the layout allows: one for plain
        chunks; for shards one when every inner chunk of a shard is wanted (the whole shard is
        read), else the indexes first, then the inner chunks (coalesced). Stops early, without
        the rest, once ``token`` is cancelled."""
        stop = (lambda: token.cancelled) if token is not None else None
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
            return answer
        if req.start is None:  # a whole chunk object
            return _MISSING if answer is None else answer
        data = None if answer is None else answer[offset : offset + (req.end - req.start)]
        if data is None or len(data) != req.end - req.start:
            return ChunkDecodeError(
                f"shard {req.key!r} is truncated: inner chunk {coords} wants bytes "
                f"{req.start}-{req.end}, got {0 if data is None else len(data)}",
                path=self.store.url,
                key=req.key,
                codec="sharding_indexed",
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
        """Where an inner chunk lies in its shard, ``(offset, length)``; or _MISSING, or the
        error that makes it unreadable."""
        if isinstance(index, ZarrfsError):
            return index
        if index is None:
            return _MISSING
        inner = tuple(i % n for i, n in zip(coords, self._cps, strict=True))
        try:
            where = self.sharding.locate(index, inner, shard_size)
        except ChunkDecodeError as exc:
            return exc
        return _MISSING if where is None else where

    def _shard_chunks(self, key: str, coords: list, shard) -> list[tuple[tuple[int, ...], object]]:
        """The chunks of a shard read whole, cut out of it (its index is cached on the way)."""
        if isinstance(shard, ZarrfsError):
            return [(c, shard) for c in coords]
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
            exc.key, exc.path = key, self.store.url
            exc.message = f"shard index of {key!r}: {exc.message}"
            exc.args = (exc.message,)
            return exc
        cache.shard_indexes.put((*self._identity, key), index)
        return index

    def _inner_count(self, key_coords: tuple[int, ...]) -> int:
        """How many inner chunks of the shard with these coords lie inside the array."""
        cps = self._cps
        grid = grid_shape(self.meta.shape, self.chunk_shape)
        return math.prod(
            min((k + 1) * n, g) - k * n for k, n, g in zip(key_coords, cps, grid, strict=True)
        )

    def _shard_indexes(self, by_shard: dict[str, list], stop=None) -> tuple[dict, dict[str, list]]:
        """Every shard's index (or its error), fetched in one wave where not cached; except
        the shards worth reading whole (async stores, every inner chunk wanted): those come
        back in the second dict, with their chunks, for the caller to fetch. Once ``stop()``,
        indexes still on the way are errors (ReadCancelled), never taken for absent shards."""
        cps = self._cps
        found: dict = {}
        whole: dict[str, list] = {}
        requests: list[tuple[str, ByteRequest]] = []
        for key, coords in by_shard.items():
            known, index = cache.shard_indexes.lookup((*self._identity, key))
            if known:
                found[key] = index
                continue
            shard_coords = tuple(i // n for i, n in zip(coords[0], cps, strict=True))
            if self.store.is_async and len(coords) == self._inner_count(shard_coords):
                whole[key] = coords
            else:
                requests.append((key, self.sharding.index_request(key, self.meta.chunk_shape)))
        fetched = self.store.fetch_each([r for _, r in requests], stop)
        for (key, _), data in zip(requests, fetched, strict=True):
            found[key] = data if isinstance(data, ZarrfsError) else self._index(key, data)
        return found, whole


#: a read from a sync store decoding at most this much does it on the calling thread: waking
#: workers and waiting for them cost more than they save (a 256x256 window of nine 32 KiB
#: chunks: 0.48 ms instead of 0.71; a window of four 512 KiB chunks is faster in the pool)
_INLINE_BYTES = 1 << 20

#: decoded bytes one task may take on: enough that per-task costs vanish next to decoding,
#: little enough that a visible read never waits long behind a prefetch's task
_BATCH_BYTES = 4 << 20


def _task_size(chunks: int, chunk_nbytes: int) -> int:
    """Chunks per task: two tasks per worker where the budget allows (each task costs Python
    time under the GIL, and both workers contend for it), more for large reads."""
    per_task = math.ceil(chunks / (2 * scheduler.decode_workers()))
    return max(1, min(per_task, _BATCH_BYTES // max(1, chunk_nbytes)))


def _batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


_local = threading.local()


def _scratch(nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A per-thread reusable buffer for chunks that are not kept in the cache: its first
    ``nbytes`` flat, and the same bytes as an array of ``dtype`` and ``shape``."""
    key = (nbytes, dtype, shape)
    if getattr(_local, "key", None) == key:
        return _local.views
    buf = getattr(_local, "buf", None)
    if buf is None or buf.nbytes < nbytes:
        buf = _local.buf = np.empty(nbytes, np.uint8)
    flat = buf[:nbytes]
    _local.key, _local.views = key, (flat, flat.view(dtype).reshape(shape))
    return _local.views


class _Missing:
    def __repr__(self) -> str:
        return "<missing chunk>"


_MISSING = _Missing()
_CANCELLED = _Missing()  # the owner of an in-flight chunk gave up: a waiter does it itself


def _share(value):
    """Chunks decoded into a thread's scratch buffer are copied before another read gets them."""
    buf = getattr(_local, "buf", None)
    if isinstance(value, np.ndarray) and buf is not None and np.may_share_memory(value, buf):
        return value.copy()
    return value
