"""The reader: carries out a plan (STYLE 5) as explicit stages, per chunk.

Each stage takes and returns small records (named tuples: thousands per read):

``plan`` (the pure planner: a :data:`Target` per chunk: its request and the output it fills)
-> ``claim`` (the chunk table: a kept chunk is placed at once; a chunk another read is doing is
waited for; the rest are this read's to do) -> ``fetch`` (the array's chunk source,
:mod:`fetch` for plain chunks, :mod:`fetch_sharded` for shards: the reader knows nothing of
the layout; a :class:`~fetch.Fetched` per chunk: bytes, none stored, or its error; async stores
have every request of the read in flight at once, and each burst of arrivals goes to the decode pool as a
:class:`DecodeTask` as it lands; sync stores fetch in the task that decodes) -> ``decode`` (a
:class:`Decoded`: the chunk's :class:`~cache.ChunkResult` and where the chunk lives: straight in
the output where it can, memory of its own when kept, else the task's buffer) -> ``place`` (into
every target, reported) -> ``settle`` (the result goes to the table: kept, and handed to every
read waiting for it). A missing chunk reads as the fill value. A chunk that fails does not stop
the others: the read finishes what it can, then raises the first failure (so a viewer can still
show the rest of a plane). Every chunk a read claims is settled whatever happens (loaded,
missing, failed, or abandoned when the read was cancelled), so no read waits forever.

What a read keeps (``keep``): ``"reused"`` (the default of ``Array.read``: a chunk is kept when
it is read a second time, a plane read once costs no new cache memory; a chunk of at most
:data:`SMALL_CHUNK` bytes, such as a coordinate's, is kept at once: its memory comes from
what the allocator already holds), ``"always"`` (the front ends
that come back: the viewer's ``submit``, the mount's ``read_flat``), ``"partial"`` (only chunks
the read covers in part: a streaming reader never comes back for the others).
"""

from __future__ import annotations

import concurrent.futures
import errno
import functools
import itertools
import logging
import math
import operator
import time
import typing
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import cache, chunkloop, scheduler, stats
from .cache import ABANDONED, MISSING, ChunkResult, Entry, failed, loaded
from .codecs import ChunkSpec
from .errors import ChunkDecodeError, ReadCancelled, ZarrfsError
from .fetch import Fetched, Request, span_fetched
from .fetch_sharded import chunk_source
from .metadata import ArrayMetadata, fill_array
from .store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkEvent:
    """What happened to one chunk of a background read."""

    chunk_coords: tuple[int, ...]
    status: str  # "loaded" | "missing" | "failed"
    out_selection: tuple[slice, ...]
    error: BaseException | None = None


#: A piece of work for one chunk (or one shard): where it goes (request + output array).
Target = tuple[Request, np.ndarray]

#: what a read keeps in the chunk table (see the module docstring)
KEEP = ("reused", "always", "partial")
#: a chunk this small is kept at once even by a "reused" read (one page: no page fault to save)
SMALL_CHUNK = 4096


@dataclass
class Read:
    """One read under way: its targets by chunk, how it reports and what it keeps, the chunks
    it claimed (each settled once), and its first failure."""

    by_chunk: dict[tuple[int, ...], typing.Sequence[Target]]
    token: scheduler.CancelToken
    on_chunk: Callable[[ChunkEvent], None] | None
    keep: str
    caching: bool
    owned: dict[tuple[int, ...], Entry] = field(default_factory=dict)
    first: BaseException | None = None
    #: some chunk was left undone (cancelled): the read raises ReadCancelled
    incomplete: bool = False
    #: by output array (its id): whether whole chunks decode straight into it
    direct: dict[int, bool] = field(default_factory=dict)

    def fail(self, error: BaseException) -> None:
        self.first = self.first or error

    def keeps(self, coords) -> bool:
        """Whether this chunk, claimed by this read, goes to the table."""
        if not self.caching:
            return False
        if self.keep == "always":
            return True
        if self.keep == "partial":
            return not all(r.whole_chunk for r, _ in self.by_chunk[coords])
        entry = self.owned.get(coords)  # "reused": kept when read before
        return entry is not None and entry.reread


class Decoded(NamedTuple):
    """The decode stage's outcome for one chunk: its result; ``in_place``: decoded straight
    into its place in the output (placing it only reports it); ``keep``: decoded into memory
    of its own, for the table to keep."""

    coords: tuple[int, ...]
    result: ChunkResult
    in_place: bool = False
    keep: bool = False


@dataclass(slots=True)
class DecodeTask:
    """One task of the decode pool (or of the calling thread): some chunks of a read, with
    their :class:`Fetched` when they arrived from an async store (else the task fetches them
    from its sync store). Chunks it places and does not keep are decoded into one buffer of
    its own, reused chunk after chunk (fresh memory per chunk measured 5-10% slower)."""

    reader: ArrayReader
    read: Read
    coords: list[tuple[int, ...]]
    fetched: list[Fetched] | None = None
    #: where the compiled loop reads the task's chunks, found by the read before the tasks
    #: were made (:meth:`ArrayReader._loop_sources`: a shard's chunks in its index)
    located: tuple | None = None
    _buffer: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self) -> None:
        self.reader.run_task(self)

    def buffer(self, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]):
        """The task's buffer: flat bytes, and the same bytes as a chunk of ``dtype``."""
        if self._buffer is None:
            flat = np.empty(nbytes, np.uint8)
            self._buffer = flat, flat.view(dtype).reshape(shape)
        return self._buffer


class ArrayReader:
    """Reads chunks of one array. The chunk a read decodes is the inner chunk when sharded."""

    def __init__(self, store: Store, path: str, meta: ArrayMetadata):
        self.store = store
        self.path = path
        self.meta = meta
        # cached chunks and shard indexes belong to this metadata: an array rewritten under
        # the same URL (read again after open()) must never meet chunks decoded for the old
        # one (an int16 chunk of 3 was placed into a float32 array of chunks of 2)
        self._identity = (store.url, path, _number_of(meta))
        #: the bytes of read chunks, as the array's layout stores them
        self.source = chunk_source(store, path, meta, self._identity)
        self.chunk_shape = self.source.chunk_shape
        #: the sharding codec when shards are read partially (their inner chunks are read)
        self.sharding = getattr(self.source, "sharding", None)
        #: the codecs of one read chunk: the inner chain when shards are read partially
        self.chain = self.source.chain
        self.chunk_key = self.source.chunk_key
        self.plan = self.source.plan
        self._chunk_nbytes = math.prod(self.chunk_shape) * meta.data_type.dtype.itemsize
        self.fill = fill_array(meta)
        self.spec = ChunkSpec(
            self.chunk_shape,
            meta.data_type.stored_dtype,
            meta.order,
            meta.fill_value if meta.data_type.dtype.kind == "O" else self.fill,
        )

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
        keep: str = "reused",
    ) -> None:
        """Fill every target; raise the first failure once all chunks are done. ``keep``:
        which decoded chunks go to the shared table (:data:`KEEP`, the module docstring)."""
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, not {keep!r}")
        token = token or scheduler.CancelToken()
        targets, absent, planned = self.source.expand(targets, lambda: token.cancelled)
        for view, chunks in absent:  # planned from stored data: these chunks are not stored
            view[...] = self.fill
            stats.add(chunks_missing=chunks)
        by_chunk = _by_chunk(targets)
        read = Read(
            by_chunk,
            token,
            on_chunk,
            "always" if keep == "reused" and self._chunk_nbytes <= SMALL_CHUNK else keep,
            cache.chunks.would_keep(self._chunk_nbytes),
            first=planned,
        )
        todo = self.source.order(list(by_chunk))
        while todo:  # a first round even when cancelled: kept chunks still read
            todo = self._round(read, todo, priority)
            if read.token.cancelled:
                read.incomplete |= bool(todo)
                break
        if read.incomplete and read.first is None:
            raise ReadCancelled(path=self.path, node_path=self.path, store_url=self.store.url)
        if read.first is not None:
            raise read.first

    def _round(self, read: Read, todo: list, priority: int) -> list:
        """Claim the chunks, do those now ours, wait for those other reads are doing; the
        chunks those reads abandoned (to claim again)."""
        identity = self._identity
        hits, owned, waited = cache.chunks.claim([(*identity, c) for c in todo])
        mine = [todo[i] for i, _ in owned]
        read.owned.update((todo[i], entry) for i, entry in owned)
        futures: list[concurrent.futures.Future] = []
        error: BaseException | None = None
        try:
            for i, chunk in hits.items():
                self._place(read, todo[i], loaded(chunk))
            if mine:
                read.token.check(self.path)
                self._dispatch(read, mine, priority, futures)
        except BaseException as exc:
            error = None if isinstance(exc, ReadCancelled) else exc
            read.fail(exc)
            raise
        finally:  # every chunk claimed here is settled, whatever happened
            self._wait(read, futures)
            for coords in mine:
                if coords in read.owned:
                    read.incomplete |= error is None
                    self._settle(read, Decoded(coords, failed(error) if error else ABANDONED))
        again = []
        for i, entry in waited:
            result = entry.wait(lambda: read.token.cancelled)
            if result is ABANDONED or isinstance(result.error, ReadCancelled):
                again.append(todo[i])
            elif self._place(read, todo[i], result.taken()) == "missing":
                stats.add(chunks_missing=1)
        return again

    def _dispatch(self, read: Read, mine: list, priority: int, futures: list) -> None:
        """Fetch and decode the chunks this read owns: tasks in the decode pool (a small
        read from a sync store on the calling thread); their futures go into ``futures``."""
        # at most as many of the read's tasks at once as threads its chunks want (more where
        # the compiled loop decodes them, holding the GIL a tenth of the time)
        compiled = self._loop_decodes(read)
        parallel = scheduler.decode_parallelism(self._chunk_nbytes, compiled=compiled)
        lanes = scheduler.Lanes(parallel)
        if self.store.is_async:  # each burst as it lands, spread over the read's threads
            for arrived in self.source.arrivals(mine, lambda: read.token.cancelled):
                for part in _batches(
                    arrived, _task_size(len(arrived), self._chunk_nbytes, parallel)
                ):
                    task = DecodeTask(self, read, [f.coords for f in part], part)
                    futures.append(scheduler.run_decode(task, priority, lanes))
        elif len(mine) * self._chunk_nbytes <= _INLINE_BYTES:
            futures.append(scheduler.run_here(DecodeTask(self, read, mine)))
        elif self._loop is not None and self.source.files() is None and read.on_chunk is None:
            # chunks located for the compiled loop before the tasks are made (a shard's in its
            # index: the indexes read once, by NumPy): the tasks then only read, decode and
            # place, with the GIL let go at once (located in the tasks, two lanes took turns
            # at the GIL for it: a sharded plane 12.3-13.1 ms against 11.4-12.0)
            dirfd, expect, every = self._loop_sources(mine)
            for part in _batches(every, _task_size(len(every), self._chunk_nbytes, parallel)):
                located = (dirfd, expect, part)
                task = DecodeTask(self, read, [c for c, _, _ in part], located=located)
                futures.append(scheduler.run_decode(task, priority, lanes))
        else:
            for batch in _batches(mine, _task_size(len(mine), self._chunk_nbytes, parallel)):
                task = DecodeTask(self, read, batch)
                futures.append(scheduler.run_decode(task, priority, lanes))

    def _loop_decodes(self, read: Read) -> bool:
        """Whether the compiled loop decodes this read's chunks, with the GIL let go a batch
        at a time: a sync store's chunks (an async store's also hold the GIL in the transport's
        Python, about 50 µs a request), into an output of the decoded dtype (the loop sends a
        big-endian array's chunks, or an output of another dtype, the Python way), for a read
        not told of each chunk as it lands (the viewer's: a call, an event and a settling a
        chunk, under the GIL). Asked of the read's first output."""
        if self._loop is None or self.store.is_async or read.on_chunk is not None:
            return False
        targets = next(iter(read.by_chunk.values()), None)
        return targets is not None and targets[0][1].dtype == self._decoded_dtype

    def run_task(self, task: DecodeTask) -> None:
        """A task's chunks fetched (from a sync store: each just before it is decoded),
        decoded, placed and settled, one after the other: by :meth:`_run_lean` where it
        applies, else chunk by chunk through :meth:`_one`. An exception settles the task's
        chunks still open as failed, and goes to the read."""
        read = task.read
        # settled chunks no read waited for: loaded and missing (dropped from the table), and
        # loaded into memory of their own (kept), each list under one lock at the task's end
        dropped: tuple[list[Entry], list[Entry], list] = ([], [], [])
        try:
            if read.token.is_set():
                return
            t0 = time.perf_counter()
            if self._lean and task.fetched is None and (read.on_chunk is None or self._loop):
                decoded, missing = self._run_lean(task, dropped)
            elif task.fetched is not None and self._loop is not None:
                # chunks that arrived from an async store, read where the transport's answer
                # lies (an HTTP plane of 32 KiB chunks decoded in 13.9 ms of the tasks' time
                # instead of 34.3; one of 512 KiB chunks 2-2.5% sooner, 6-7% less CPU)
                task.located = (None, 0, _arrived_spans(task.fetched))
                decoded, missing = self._run_loop(task, dropped)
            else:
                decoded = missing = 0
                cancelled, one = read.token.is_set, self._one
                fetched = task.fetched
                for chunk in self.source.each(task.coords) if fetched is None else fetched:
                    if cancelled():
                        break
                    status = one(read, chunk, task, dropped)
                    decoded += status == "loaded"
                    missing += status == "missing"
            stats.add(
                decode_seconds=time.perf_counter() - t0,
                chunks_decoded=decoded,
                chunks_missing=missing,
            )
        except BaseException as exc:
            read.fail(exc)
            for coords in task.coords:
                self._settle(read, Decoded(coords, failed(exc)))
            raise
        finally:
            if dropped[2]:
                cache.chunks.keep_settled(dropped[2])
            if dropped[0] or dropped[1]:
                cache.chunks.drop_settled(dropped[0], dropped[1])

    def _one(self, read: Read, chunk: Fetched, task: DecodeTask, dropped) -> str:
        """One fetched chunk decoded, placed and settled; its status."""
        done = self._decode(read, chunk, task)
        status = self._place(read, done.coords, done.result, done.in_place)
        self._settle(read, done, dropped)
        return status

    @functools.cached_property
    def _lean(self) -> bool:
        """Whether tasks reading a sync store take :meth:`_run_lean`: chunks decoded by a
        direct chain into bytes of the chunk's dtype (never a view of the stored bytes)."""
        return self.chain.direct and self._decoded_dtype is not None

    def _run_lean(self, task: DecodeTask, dropped) -> tuple[int, int]:
        """The per-chunk loop of the common case (a sync store, a direct chain, one target a
        chunk), with as little Python per chunk as can be, for two threads to decode in
        parallel rather than queue for the GIL. The source gives each chunk's bytes as a
        :data:`~fetch.Span` (a local file named by C-level formatting and read in three
        system calls; an inner chunk's place in its shard's range, read range by range, no
        copy); the chain's function bound to the task's buffer decodes it
        (:meth:`CodecChain.decoder_into`); one numpy assignment places it; the table settles
        it under one lock for many chunks (at the task's end; a chunk to keep, copied out of
        the buffer, :data:`_KEEP_BATCH` at a time): no Python call, no GC-tracked object per
        chunk not kept. Any other chunk (absent, failing, waited for by another read, decoded
        straight into the output) goes through :meth:`_one`: one logic for every other
        outcome. Returns the chunks loaded and missing."""
        if self._loop is not None:
            return self._run_loop(task, dropped)
        read = task.read
        by_chunk, owned, direct = read.by_chunk, read.owned, read.direct
        # whether a chunk is kept: "reused" asks its entry (no call), other modes keeps()
        reused = read.caching and read.keep == "reused"
        keeps = read.keeps if read.caching and not reused else None
        cancelled, one, (done, _, kept) = read.token.is_set, self._one, dropped
        dtype = typing.cast(np.dtype, self._decoded_dtype)  # (not None: see _lean)
        flat, chunk = task.buffer(self._chunk_nbytes, dtype, self.chunk_shape)
        decode = self.chain.decoder_into(flat)
        decoded = missing = 0
        for coords, body, start, stop in self.source.spans(task.coords):
            if cancelled():
                break
            targets = by_chunk[coords]
            entry = owned.get(coords)
            if (
                type(body) is not bytes
                or entry is None
                or entry.event is not None
                or len(targets) != 1
                # (a whole chunk the output may take in place: _one asks, once an output)
                or (targets[0][0].whole_chunk and direct.get(id(targets[0][1])) is not False)
            ):
                status = one(read, span_fetched(coords, body, start, stop), task, dropped)
                decoded += status == "loaded"
                missing += status == "missing"
                continue
            try:
                decode(body, start, stop)
            except ChunkDecodeError:  # decoded again by _one: the error with its context
                one(read, span_fetched(coords, body, start, stop), task, dropped)
                continue
            req, out = targets[0]
            out[req.out_selection] = chunk[req.chunk_selection]
            decoded += 1
            if not (entry.reread if reused else keeps and keeps(coords)):  # (owned: del after)
                del owned[coords]
                done.append(entry)
                continue
            del owned[coords]
            kept.append((entry, _tuple(ChunkResult, ("loaded", chunk.copy(), None))))
            if len(kept) >= _KEEP_BATCH:  # (a read waiting for one waits no longer than this)
                cache.chunks.keep_settled(kept)
                kept.clear()
        return decoded, missing

    @functools.cached_property
    def _loop(self) -> tuple | None:
        """What the compiled loop (:mod:`.chunkloop`) decodes this array's chunks with, where
        it takes them (a lean chain of one compressor it knows, the loop built and on, its
        chunks decoded in the machine's byte order: a big-endian chunk goes into an output of
        native order, which the loop does not take, so its every chunk went the Python way,
        fetched a second time)."""
        if not self._lean or self._swapped:
            return None
        return chunkloop.codec(self.chain, len(self.chunk_shape))

    @functools.cached_property
    def _swapped(self) -> bool:
        """Whether a lean chain decodes chunks in another byte order than the machine's (a
        big-endian array's), which the compiled loop leaves to NumPy's assignment."""
        return self._lean and not typing.cast(np.dtype, self._decoded_dtype).isnative

    @property
    def loop_note(self) -> str:
        """Whether the compiled loop reads this array's chunks, said for ``info --debug``."""
        if self._loop is not None:
            if not self.store.is_async:
                return "the chunk loop compiled (files read, decoded and placed off the GIL)"
            return "the chunk loop compiled (chunks decoded and placed off the GIL as they arrive)"
        if not chunkloop.available():
            why = "turned off" if chunkloop.built() else "not built: no C compiler at install"
        elif self._swapped:
            why = "chunks stored big-endian: NumPy puts them in the machine's byte order"
        else:
            why = (
                "codecs it does not take: it takes one Blosc or zstd compressor"
                if len(self.chunk_shape) <= chunkloop.MAX_DIMS
                else f"chunks of more than {chunkloop.MAX_DIMS} dimensions"
            )
        return f"the chunk loop in Python ({why})"

    def _run_loop(self, task: DecodeTask, dropped) -> tuple[int, int]:
        """:meth:`_run_lean` in compiled code, :data:`_LOOP_BATCH` chunks a call with the GIL
        let go once for them all (:mod:`.chunkloop`): a local store's chunk files read by
        name (:meth:`~.fetch.ChunkSource.files`) or its shards' chunks by range
        (:meth:`~.fetch_sharded.ShardedChunks.file_ranges`), else the source's spans, or the
        answers of chunks that arrived from an async store (:func:`_arrived_spans`). The
        chunks it takes are :meth:`_run_lean`'s (owned, one target, an output of the decoded
        dtype; a chunk to keep decoded into an array of its own, which the table keeps: the
        mount's ``read_flat`` keeps every chunk); every other chunk, and every
        chunk the loop did not finish, goes through :meth:`_one`, which reads it again the
        Python way and says why."""
        read = task.read
        by_chunk, owned = read.by_chunk, read.owned
        reused = read.caching and read.keep == "reused"
        keeps = read.keeps if read.caching and not reused else None
        cancelled, one, (done, _, kept) = read.token.is_set, self._one, dropped
        dtype = typing.cast(np.dtype, self._decoded_dtype)
        flat, _ = task.buffer(self._chunk_nbytes, dtype, self.chunk_shape)
        spec, shape, itemsize = self._loop, self.chunk_shape, dtype.itemsize
        # each chunk: (coords, what the loop reads, what the Python way reads instead: None,
        # the chunk fetched again from the store; else a span)
        dirfd, expect, every = task.located or self._loop_sources(task.coords)
        mode = chunkloop.SPANS if dirfd is None else chunkloop.FILES if expect else chunkloop.RANGES
        if mode == chunkloop.RANGES:
            expect = 2 * self._chunk_nbytes + 1024  # (a longer stored chunk: the Python way)
        fits: dict[int, bool] = {}  # id(output): of the decoded dtype
        decoded = missing = requests = nbytes = 0

        def careful(coords, span) -> None:
            nonlocal decoded, missing
            if span is None:  # fetched again, the careful way, which says why
                status = "missing"
                for f in self.source.each([coords]):
                    status = one(read, f, task, dropped)
            else:
                status = one(read, span_fetched(*span), task, dropped)
            decoded += status == "loaded"
            missing += status == "missing"

        on_chunk = read.on_chunk  # (the viewer's reads: each batch's chunks told as it lands)
        for batch in _batches(every, _LOOP_BATCH if on_chunk is None else _EVENT_BATCH):
            if cancelled():
                break
            mine, targets, sources, owns, others = [], [], [], [], []
            for coords, source, fallback in batch:
                chunk_targets = by_chunk[coords]
                entry = owned.get(coords)
                if (
                    source is None
                    or entry is None
                    or entry.event is not None
                    or len(chunk_targets) != 1
                ):
                    others.append((coords, fallback))
                    continue
                target = chunk_targets[0]
                out = target[1]
                ok = fits.get(id(out))
                if ok is None:
                    ok = fits[id(out)] = out.dtype == dtype
                if not ok:
                    others.append((coords, fallback))
                    continue
                # a chunk to keep (the mount's read_flat keeps every chunk) is
                # decoded into memory of its own, which the table then keeps
                keep = entry.reread if reused else keeps is not None and keeps(coords)
                mine.append((coords, entry, fallback, keep))
                targets.append(target)
                sources.append(source)
                # (a read told of each chunk settles each as it lands, as _one does: a read
                # waiting for it meanwhile gets the chunk itself, so it decodes into its own)
                owns.append(np.empty(shape, dtype) if keep or on_chunk is not None else None)
            outcomes = (
                chunkloop.run(
                    targets,
                    sources,
                    mode,
                    spec,
                    flat,
                    shape,
                    itemsize,
                    -1 if dirfd is None else dirfd,  # (0 is a descriptor too)
                    expect,
                    owns,
                )
                if mine
                else ()
            )
            for (coords, entry, fallback, keep), own, outcome in zip(
                mine, owns, outcomes, strict=True
            ):
                if outcome >= 0:
                    decoded += 1
                    requests += 1
                    nbytes += outcome
                    if on_chunk is not None:
                        for req, _ in by_chunk[coords]:
                            on_chunk(ChunkEvent(coords, "loaded", req.out_selection))
                        self._settle(read, Decoded(coords, loaded(own), keep=keep))
                        continue
                    del owned[coords]
                    if own is None:
                        done.append(entry)
                        continue
                    kept.append((entry, _tuple(ChunkResult, ("loaded", own, None))))
                    if len(kept) >= _KEEP_BATCH:  # (as _run_lean: waiters wait no longer)
                        cache.chunks.keep_settled(kept)
                        kept.clear()
                elif mode == chunkloop.FILES and outcome == -errno.ENOENT:
                    requests += 1
                    careful(coords, (coords, None, 0, 0))
                else:
                    careful(coords, fallback)
            for coords, fallback in others:
                careful(coords, fallback)
        if mode != chunkloop.SPANS:  # (the spans counted their own)
            stats.add(requests=requests, bytes_fetched=nbytes)
        return decoded, missing

    def _loop_sources(self, coords_list) -> tuple[int | None, int, list]:
        """What :meth:`_run_loop` reads each chunk from: ``(dirfd, expect, chunks)``, each
        chunk ``(coords, source, fallback)``; dirfd None where the source's spans are read
        in Python (expect 0), expect 0 for a shard's ranges."""
        source = self.source
        files = source.files()
        if files is not None:
            dirfd, names = files
            return dirfd, source.expect, [(c, names % c, None) for c in coords_list]
        ranges = getattr(source, "file_ranges", None)
        made = ranges(coords_list) if ranges is not None else None
        if made is not None:
            return made[0], 0, made[1]
        every = []
        for span in source.spans(coords_list):  # (a shard's ranges read at once)
            every.append((span[0], span if type(span[1]) is bytes else None, span))
        return None, 0, every

    def _settle(self, read: Read, done: Decoded, dropped: tuple | None = None) -> None:
        """An owned chunk's result to the table (kept when ``done.keep``), once. A chunk
        loaded or missing that no read waits for and the table does not keep goes to
        ``dropped`` when given (loaded, missing: the task drops them all at its end, under
        one lock)."""
        entry = read.owned.pop(done.coords, None)
        if entry is None:
            return
        if dropped is not None and entry.event is None and not done.keep:
            if done.result.error is None:
                dropped[done.result.status != "loaded"].append(entry)
                return
        cache.chunks.settle(entry.key, entry, done.result, keep=done.keep)

    def _wait(self, read: Read, futures: list[concurrent.futures.Future]) -> None:
        """Wait for every task (each ends: fetches are bounded by the store's timeouts); the
        first failure goes to the read."""
        scheduler.help_decode(futures)  # the caller decodes too, rather than only waiting
        concurrent.futures.wait(futures)  # one wake-up at the end, not one per task
        for f in futures:
            try:
                f.result()
            except concurrent.futures.CancelledError:
                read.fail(ReadCancelled(path=self.path, node_path=self.path))
            except BaseException as exc:  # noqa: BLE001 - raised by execute()
                read.fail(exc)

    # -------------------------------------------------------- decode, place
    def _direct_target(self, read: Read, targets) -> np.ndarray | None:
        """The output memory (flat bytes) a chunk can be decoded into directly: one target
        reading the whole chunk, inside the array, into a C-contiguous region of the same
        dtype and byte order as the decoded chunk; else None. Whether an output takes whole
        chunks so is asked once per read (it depends on its dtype and strides alone)."""
        if len(targets) != 1:
            return None
        req, out = targets[0]
        if not req.whole_chunk:
            return None
        fits = read.direct.get(id(out))
        if fits is False:
            return None
        region = out[(*req.out_selection, ...)]  # "..." keeps a 0-d region a view, not a copy
        if region.nbytes != self._chunk_nbytes:  # an edge chunk overhanging the array
            return None
        if fits is None:
            fits = read.direct[id(out)] = (
                out.dtype == self._decoded_dtype and region.flags.c_contiguous
            )
        return region.reshape(-1).view(np.uint8) if fits else None

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

    def _decode(self, read: Read, fetched: Fetched, task: DecodeTask) -> Decoded:
        """One chunk's result from its fetched bytes: decoded into new memory when kept, else
        straight into the output where it can, else into the task's buffer; missing; or
        failed (a decode error as a new error naming the chunk, from the codec's)."""
        coords, raw, error = fetched
        if error is not None:
            return Decoded(coords, failed(error))
        if raw is None:
            return Decoded(coords, MISSING)
        keep = read.caching and read.keeps(coords)
        chain, dtype = self.chain, self._decoded_dtype
        try:
            if not chain.direct:
                return Decoded(coords, loaded(chain.decode(raw, self.spec)), keep=keep)
            if keep:
                buf = np.empty(self._chunk_nbytes, np.uint8)
                return Decoded(coords, loaded(chain.decode_into(raw, self.spec, buf)), keep=True)
            targets = read.by_chunk[coords]
            if dtype is not None and read.direct.get(id(targets[0][1])) is not False:
                dest = self._direct_target(read, targets)
                if dest is not None:
                    chunk = chain.decode_into(raw, self.spec, dest)
                    return Decoded(coords, loaded(chunk), in_place=True)
            if dtype is not None:  # the common, hot case: no codec call to shape the bytes
                made = task._buffer  # (made by the task's first chunk)
                flat, chunk = made or task.buffer(self._chunk_nbytes, dtype, self.chunk_shape)
                chain.decode_bytes_into(raw, flat)
                # (named tuples made by tuple.__new__, every field given: their own __new__
                # is a Python call)
                result = _tuple(ChunkResult, ("loaded", chunk, None))
                return _tuple(Decoded, (coords, result, False, False))
            flat = task.buffer(self._chunk_nbytes, np.dtype(np.uint8), (-1,))[0]
            return Decoded(coords, loaded(chain.decode_into(raw, self.spec, flat)))
        except ChunkDecodeError as exc:
            key = self.chunk_key(coords)
            message = f"chunk {key!r} of {self.source.url}: {exc.message}"
            return Decoded(coords, failed(self.source.context_error(exc, key, message)))

    def _place(self, read: Read, coords, result: ChunkResult, in_place: bool = False) -> str:
        """One chunk's result into every target of it, reported: a loaded chunk's values
        (already there when decoded in place), the fill value for a missing chunk; a failure
        goes to the read (its first is raised at the end) and the log. Returns the status."""
        targets = read.by_chunk[coords]
        status = result.status
        if status == "loaded" and not in_place:
            chunk = result.chunk
            for req, out in targets:
                out[req.out_selection] = chunk[req.chunk_selection]
        elif status == "missing":
            for req, out in targets:
                out[req.out_selection] = self.fill
        elif status == "failed":
            error = result.error
            read.fail(error)
            stats.add(chunk_errors=1)
            message = error.message if isinstance(error, ZarrfsError) else repr(error)
            log.warning("chunk %s of %s: %s", self.chunk_key(coords), self.path or "/", message)
        if read.on_chunk:
            for req, _ in targets:
                read.on_chunk(ChunkEvent(coords, status, req.out_selection, result.error))
        return status


_tuple = tuple.__new__

#: a number for each metadata object read, which the chunks decoded for it are cached under: a
#: metadata read again (another open()) is another array to the cache. (A digest of the
#: metadata's ``repr`` cost a fresh handle 0.6 ms before its first request, with its
#: attributes and documents in it; and its codecs' builder's address made it unique anyway.)
_numbers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_counter = itertools.count()


def _number_of(meta: ArrayMetadata) -> int:
    return _numbers.setdefault(meta, next(_counter))


#: a read from a sync store decoding at most this much does it on the calling thread: waking
#: workers and waiting for them cost more than they save (a 256x256 window of nine 32 KiB
#: chunks: 0.48 ms instead of 0.71; a window of four 512 KiB chunks is faster in the pool)
_INLINE_BYTES = 1 << 20

#: chunks the lean loop keeps before it hands them to the table (one lock for them all): a read
#: that comes to wait for one meanwhile waits at most for this many more
_KEEP_BATCH = 16

#: chunks the compiled loop takes in one call: a cancelled read stops within this many
_LOOP_BATCH = 128
#: chunks a call for a read told of each chunk as it lands (the viewer's): a tile shows soon
_EVENT_BATCH = 16

#: decoded bytes one task may take on: enough that per-task costs vanish next to decoding,
#: little enough that a visible read never waits long behind a prefetch's task
_BATCH_BYTES = 4 << 20


def _by_chunk(targets: list[Target]) -> dict[tuple[int, ...], typing.Sequence[Target]]:
    """The targets of each chunk, in the order first asked: where each chunk has one (a
    read into one output), built with no Python call per chunk; else gathered in lists."""
    coords = list(map(_coords_of, map(_first, targets)))
    by_chunk = dict(zip(coords, zip(targets), strict=True))  # (each target as a 1-tuple)
    if len(by_chunk) == len(targets):
        return by_chunk
    gathered: dict[tuple[int, ...], typing.Sequence[Target]] = defaultdict(list)
    for c, t in zip(coords, targets, strict=True):
        gathered[c].append(t)  # type: ignore[attr-defined]
    return gathered


_first = operator.itemgetter(0)
_coords_of = operator.attrgetter("chunk_coords")


def _arrived_spans(fetched: list[Fetched]) -> list[tuple]:
    """Chunks arrived from an async store as :meth:`ArrayReader._run_loop` takes them
    (``(coords, span the loop reads, span the Python way reads)``): the loop reads each answer
    where it lies (``bytes``, or the transport's own buffer, with no copy); a chunk not stored
    or failed goes the Python way, which places the fill value or says what failed."""
    every = []
    for coords, data, error in fetched:
        if error is not None or data is None:
            span = (coords, error, 0, 0)
            every.append((coords, None, span))
            continue
        span = (coords, data, 0, len(data))  # (a span too short for its frame: the Python way)
        every.append((coords, span, span))
    return every


def _task_size(chunks: int, chunk_nbytes: int, parallel: int) -> int:
    """Chunks per task: one task per thread the read decodes on (``parallel``:
    :func:`scheduler.decode_parallelism`) where the budget allows, more tasks for large
    reads."""
    per_task = math.ceil(chunks / parallel)
    return max(1, min(per_task, _BATCH_BYTES // max(1, chunk_nbytes)))


def _batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]
