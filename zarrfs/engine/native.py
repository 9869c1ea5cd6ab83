"""The native chunk path: tensorstore reads an array's chunks in compiled code.

The Python pipeline (:mod:`.reader`) spends Python time under the GIL on every chunk; where
chunks are small that time, not the codec, is the read. For an array tensorstore reads exactly
as the spec says (and as zarrfs does), the whole selection goes to tensorstore instead, which
plans, fetches, decodes and places every chunk in its own threads, straight into the output.
Which arrays (:func:`decide`, with the reason shown by ``zarrfs info --debug``):

- a local store (tensorstore's ``file`` kvstore): remote stores, fsspec chains, zip archives and
  kerchunk references stay on the Python pipeline, with its retries, timeouts and failure
  semantics;
- data types, codecs, chunk key encodings and fill values from a short list that tensorstore
  reads bit for bit as zarrfs (:mod:`.native_rules`); a writer's quirk, any other codec
  (lzma, delta, pcodec, fixedscaleoffset ...), strings and structured types stay Python;
- confined: tensorstore follows symlinks, zarrfs's local reads never leave the store's root
  (:mod:`.confine`). The native path serves an array only when its directory holds no symlink
  (:func:`native_rules.symlink_in`, a walk done once per array directory and process), or when
  the user trusts the store (``follow_symlinks=true``). A mount others can read (``allow_other``)
  turns the native path off (``set_native(False)``), since a symlink made after the walk would
  be followed. A mount without it, by root too, is read by its owner alone (the kernel refuses
  everyone else), who could read a file such a symlink leads to anyway: it reads natively.

The handle is opened from the metadata zarrfs has already parsed (``assume_metadata``: no
second metadata read). Every failure of a native read is read again by the Python pipeline
(the whole selection, or the chunk that failed when the read reports chunk by chunk): a corrupt
chunk, a decompression bomb or a missing file then fails, or reads, exactly as on the Python
path, with zarrfs's own errors. Whatever tensorstore cannot do, zarrfs does; the answers are
the same (``tests/engine/test_native.py`` reads the conformance corpus both ways).

One cache budget: a read that comes back (``submit``, ``read_flat``) reads through a context
whose cache pool is half the decoded-chunk budget, reserved out of the chunk table's; a read
made once (``array[sel]``) keeps nothing, as on the Python path. ``ZARRFS_NATIVE=0`` or
``set_native(False)`` turns the native path off.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import queue
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import cache, native_rules, scheduler, stats
from .errors import ReadCancelled
from .planner import ChunkRequest, DimSelection, count_chunks

log = logging.getLogger(__name__)

ENV = "ZARRFS_NATIVE"
#: how often a background native read looks whether it was cancelled (seconds)
_POLL_SECONDS = 0.05


class _Switch:
    """Whether the native path is on, and why not when it is off."""

    def __init__(self) -> None:
        off = os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off")
        self.enabled = not off
        self.reason = f"{ENV}={os.environ.get(ENV)}" if off else ""


_switch = _Switch()


def set_native(enabled: bool, reason: str = "") -> None:
    """Turn the native (tensorstore) path on or off for every array of the process; ``reason``
    is what ``zarrfs info --debug`` says while it is off."""
    _switch.enabled = bool(enabled)
    _switch.reason = "" if enabled else (reason or "turned off by set_native(False)")


def native_enabled() -> bool:
    return _switch.enabled


@dataclass(frozen=True)
class Decision:
    """Which path reads an array, and why."""

    native: bool
    reason: str

    @property
    def path(self) -> str:
        return "native (tensorstore)" if self.native else "Python pipeline"

    def describe(self) -> str:
        return f"{self.path}: {self.reason}"


# ---------------------------------------------------------------- contexts, one budget


class _Contexts:
    """The process's tensorstore contexts (thread pools and cache pool shared by every handle):
    ``once`` keeps no chunk; ``keep`` has a cache pool of half the decoded-chunk budget, which
    the chunk table gives up while the pool exists. A new budget, :func:`clear_caches` or a
    fork makes new ones (``generation``), and handles reopen in them.

    Both are children of one context holding the decode and copy threads
    (:func:`_copy_concurrency`), kept while the thread count stays: tensorstore keeps a thread
    that ran a task for a pool's task group waiting on that group for 20 ms after its last
    task, so a read through another group right after one through the first (``once`` after
    ``keep``, or after the contexts were renewed) found no idle thread and waited for a new
    one to start (a 256 x 256 window 1.1-1.3x slower)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = 0
        self._made: dict[str, Any] = {}
        self._threads: tuple[dict, Any] | None = None
        self.used = False

    def get(self, kind: str):
        with self.lock:
            self._follow_threads()
            context = self._made.get(kind)
            if context is None:
                context = self._made[kind] = self._make(kind)
            self.used = True
            return context, self.generation

    def _make(self, kind: str):
        import tensorstore as ts

        pool = 0
        if kind == "keep":
            pool = cache.chunks.capacity // 2
            cache.chunks.reserve(pool)
        return ts.Context({"cache_pool": {"total_bytes_limit": pool}}, self._threads_context())

    def _threads_context(self):
        import tensorstore as ts

        concurrency = _copy_concurrency()
        if self._threads is None or self._threads[0] != concurrency:
            made = ts.Context({"data_copy_concurrency": concurrency})
            self._threads = (concurrency, made)
        return self._threads[1]

    def reset(self) -> None:
        with self.lock:
            self._renew()

    def follow_threads(self) -> None:
        """New contexts from the next read on where the thread count changed."""
        with self.lock:
            self._follow_threads()

    def _follow_threads(self) -> None:
        # (checked and renewed under the lock, here and before a context is made: a context
        # made while set_threads() ran, on the new threads, never leaves the others made
        # before it on the old ones)
        made = self._threads
        if made is not None and made[0] != _copy_concurrency():
            self._renew()

    def _renew(self) -> None:
        self._made.clear()
        self.generation += 1
        cache.chunks.reserve(0)


_contexts = _Contexts()


def _copy_concurrency() -> dict:
    """tensorstore's decode and copy threads: the decode workers (``ZARRFS_DECODE_THREADS``),
    at most one per CPU this process may use. tensorstore decodes without the GIL, so one thread
    a CPU keeps every CPU busy, and more only add wake-ups. At one per CPU it is tensorstore's
    own shared pool (``{}``: its default, one task group for the whole process, which any other
    use of tensorstore in the process shares too); below that, a limit of zarrfs's own."""
    threads = min(scheduler.decode_workers(), scheduler.usable_cpus())
    if threads >= (os.cpu_count() or 1):  # (tensorstore's shared limit: one per CPU online)
        return {}
    return {"limit": threads}


def set_threads(
    decode: int | None = None, io: int | None = None, *, pin: bool | None = None
) -> None:
    """Set the decode and I/O pool sizes (:func:`.scheduler.set_threads`); tensorstore's
    decode and copy threads follow from the next read on (new contexts where their count
    changes, whose cache pool starts empty)."""
    scheduler.set_threads(decode, io, pin=pin)
    _contexts.follow_threads()


def set_cache_size(nbytes: int) -> None:
    """Set the decoded-chunk budget in bytes (0 disables caching): the chunk table's and the
    native path's cache pool's together."""
    cache.set_cache_size(nbytes)
    _contexts.reset()


def clear_caches() -> None:
    """Forget every decoded chunk and shard index, the native path's too."""
    cache.clear_caches()
    _contexts.reset()


def _after_fork_in_child() -> None:
    """tensorstore's threads do not survive ``fork()``: a child of a process that used them
    reads on the Python pipeline (the mount forks before it opens anything, so it is not one)."""
    global _fold_lock
    _fold_lock = threading.Lock()
    _contexts.lock = threading.Lock()
    if _contexts.used:
        _contexts._made.clear()
        _contexts._threads = None
        set_native(False, "tensorstore ran in this process before fork()")


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------- its counters

#: the engine's counters (engine/stats.py) as tensorstore counts them: its file kvstore's
#: reads and bytes, and the chunks its cache read from them (decoded)
_COUNTERS = {
    "/tensorstore/kvstore/file/read": "requests",
    "/tensorstore/kvstore/file/bytes_read": "bytes_fetched",
    "/tensorstore/cache/kvs_cache_read": "chunks_decoded",  # (its "changed" category)
}
_counted_from: dict[str, int] = {}
#: chunks of each direct read (``read_new``), tallied as ``native_reads`` and ``native_chunks``
#: when the counters are asked: an append costs a direct read ~0.3 µs where ``stats.add`` (a
#: lock, a dict of keywords) cost ~3 µs, and 10-15 µs on the caches a tensorstore read leaves
_direct_reads: deque[int] = deque()
_direct_totals = {"native_reads": 0, "native_chunks": 0}
_fold_lock = threading.Lock()
_FOLD_AT = 4096


def _tensorstore_counts() -> dict[str, int]:
    """tensorstore's counts so far in this process (process-wide, as the engine's); none
    before anything imported it (collecting them costs ~40 µs: done when asked, not per read)."""
    ts = sys.modules.get("tensorstore")
    if ts is None:
        return {}
    counts = dict.fromkeys(_COUNTERS.values(), 0)
    for metric in ts.experimental_collect_matching_metrics("/tensorstore/"):
        name = _COUNTERS.get(metric["name"])
        for value in metric["values"] if name else ():
            if value.get("category", "changed") == "changed":
                counts[name] += int(value.get("value", 0))
    return counts


def _fold_direct_reads() -> dict[str, int]:
    """The direct reads' tally, with every read appended since the last fold added in (a
    ``popleft`` at a time: reads appending meanwhile lose nothing)."""
    with _fold_lock:
        reads = chunks = 0
        while True:
            try:
                n = _direct_reads.popleft()
            except IndexError:
                break
            reads += 1
            chunks += n
        _direct_totals["native_reads"] += reads
        _direct_totals["native_chunks"] += chunks
        return dict(_direct_totals)


def _all_counts() -> dict[str, int]:
    counts = _tensorstore_counts()
    counts.update(_fold_direct_reads())
    return counts


def counters() -> dict[str, int]:
    """What the native path read since :func:`reset_counters`, for the engine's counters:
    requests, bytes fetched, chunks decoded (tensorstore's metrics count every use of it in
    the process; zarrfs's native path is its one use in zarrfs's front ends), and the direct
    reads (``read_new``) with the chunks they touched."""
    return {k: v - _counted_from.get(k, 0) for k, v in _all_counts().items()}


def reset_counters() -> None:
    _counted_from.clear()
    _counted_from.update(_all_counts())


# ---------------------------------------------------------------- the handle


def decide(store, path: str, meta) -> Decision:
    """Whether tensorstore reads this array (without opening it), and why (or why not)."""
    if not _switch.enabled:
        return Decision(False, f"the native path is off ({_switch.reason})")
    if _tensorstore_missing():
        return Decision(False, f"tensorstore cannot be imported ({_tensorstore_missing()})")
    reason = native_rules.refusal(store, path, meta)
    if reason:
        return Decision(False, reason)
    return Decision(True, native_rules.acceptance(meta))


@functools.cache
def _tensorstore_missing() -> str | None:
    try:
        import tensorstore  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


class _OpenedOnce:
    """The process's handles in the ``once`` context (which keeps no chunk), by their spec:
    a fresh ``zarrfs.open`` of an array read before (as a script reads, a plane a handle)
    takes the handle opened for the same metadata instead of opening another (``ts.open``
    took 0.45 ms of a 6-10 ms plane, its own open 0.2). Safe because nothing is kept there:
    every read asks the files as they are now; the spec holds the whole metadata, so an
    array rewritten with other metadata gets a handle of its own. At most
    :data:`_OPENED_ONCE` handles, the least recently used dropped."""

    def __init__(self) -> None:
        self._handles: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(kind: str, strict: bool, generation: int, spec: dict) -> tuple | None:
        if kind != "once" or strict:
            return None
        try:
            return generation, json.dumps(spec, sort_keys=True)
        except (TypeError, ValueError):  # (a spec JSON cannot hold: never shared)
            return None

    def get(self, kind: str, strict: bool, generation: int, spec: dict):
        key = self._key(kind, strict, generation, spec)
        if key is None:
            return None
        with self._lock:
            handle = self._handles.get(key)
            if handle is not None:
                self._handles.move_to_end(key)
            return handle

    def put(self, kind: str, strict: bool, generation: int, spec: dict, handle):
        key = self._key(kind, strict, generation, spec)
        if key is not None:
            with self._lock:
                handle = self._handles.setdefault(key, handle)
                while len(self._handles) > _OPENED_ONCE:
                    self._handles.popitem(last=False)
        return handle


#: handles of the ``once`` context kept for fresh opens of the same arrays
_OPENED_ONCE = 256
_opened = _OpenedOnce()


class NativeArray:
    """One array's tensorstore handles (one per context kind, opened on first use and again
    when the contexts change) and its reads. Built only for an array :func:`decide` accepts."""

    def __init__(
        self,
        spec: dict,
        decision: Decision,
        chunk_shape: tuple[int, ...],
        path: str = "",
        *,
        shape: tuple[int, ...] = (),
        dtype: np.dtype | None = None,
    ):
        self.path = path
        self.spec = spec
        self.decision = decision
        self.chunk_shape = chunk_shape
        #: the array's shape and the data type zarrfs reads it as (its direct reads' bounds,
        #: and whether tensorstore's array is the answer as it comes)
        self.shape = shape
        self.expected_dtype = dtype
        self._handles: dict[str, tuple[int, Any]] = {}
        self._lock = threading.Lock()
        #: the NumPy data type tensorstore reads the array as (set by the first handle), and
        #: whether it is the one zarrfs reads it as (its arrays are then the answer as they come)
        self.dtype: np.dtype | None = None
        self.reads_as_zarrfs = False
        #: the largest direct read, in elements (``_DIRECT_BYTES``)
        self._direct_elements = _DIRECT_BYTES // max(1, dtype.itemsize if dtype else 1)

    @classmethod
    def open(cls, store, path: str, meta, chunk_shape) -> tuple[NativeArray | None, Decision]:
        """The native reads of an array, or None and why not (tensorstore refusing the
        metadata is a reason too)."""
        decision = decide(store, path, meta)
        if not decision.native:
            return None, decision
        spec = native_rules.spec(store, path, meta)
        shape, dtype = tuple(meta.shape), meta.data_type.dtype
        native = cls(spec, decision, chunk_shape, path, shape=shape, dtype=dtype)
        try:
            native.handle("once")
        except Exception as exc:  # noqa: BLE001 - tensorstore's refusal is a reason, not a failure
            reason = f"tensorstore cannot open it ({' '.join(str(exc).split())})"
            return None, Decision(False, reason)
        return native, decision

    def handle(self, kind: str, *, strict: bool = False):
        """The handle in the context ``kind``; ``strict``: one that fails on a missing chunk
        instead of filling it."""
        import tensorstore as ts

        name = f"{kind}-strict" if strict else kind
        made = self._handles.get(name)  # every read asks: no lock where it is made already
        if made is not None and made[0] == _contexts.generation:
            return made[1]
        context, generation = _contexts.get(kind)
        with self._lock:
            made = self._handles.get(name)
            if made is not None and made[0] == generation:
                return made[1]
        # a chunk kept since this handle opened is trusted, as the chunk table's are (not
        # checked against its file's generation on every read: tensorstore's default opened
        # and stat'ed each file again); one kept before it (an earlier handle's, in the shared
        # pool) is checked once: a fresh handle sees the store as it is now
        spec = {**self.spec, "recheck_cached_data": "open"}
        if strict:
            spec["fill_missing_data_reads"] = False
        opened = _opened.get(kind, strict, generation, spec)
        if opened is None:
            opened = ts.open(spec, read=True, open=True, assume_metadata=True, context=context)
            opened = _opened.put(kind, strict, generation, spec, opened.result())
        with self._lock:
            self._handles[name] = (generation, opened)
            self.dtype = opened.dtype.numpy_dtype
            self.reads_as_zarrfs = self.dtype == self.expected_dtype
        return opened

    # ------------------------------------------------------------ reads

    def read(self, boxes: list[tuple[tuple[DimSelection, ...], np.ndarray]], *, keep: bool):
        """Fill each output with its selection, all at once; False when tensorstore failed
        (the caller reads it all again on the Python pipeline)."""
        futures = []
        try:
            for dims, out in boxes:
                futures.append(self._write(dims, out, keep))
        except Exception as exc:  # noqa: BLE001 - read again by the Python pipeline
            return self._failed(exc, futures)
        for f in futures:
            if f.exception() is not None:  # every write ends before the Python path's
                return self._failed(f.exception(), futures)
        chunks = sum(_chunks_touched(dims, self.chunk_shape) for dims, _ in boxes)
        stats.add(native_reads=1, native_chunks=chunks)
        return True

    def read_new(self, selection) -> np.ndarray | None:
        """A selection of non-negative integers and step-less slices (what scripts and the
        viewer ask; anything else is the planner's to normalise) read into an array
        tensorstore allocates: no second buffer, no copy, and as little Python as a read can
        have (a read's Python runs on the caches tensorstore's threads left: every call and
        every object costs several times its ``timeit`` figure). None when the selection is
        not one of those, or tensorstore failed (the caller reads it again on the Python
        pipeline)."""
        direct = _direct_index(selection, self.shape, self.chunk_shape)
        if direct is None or direct[2] > self._direct_elements:
            return None
        try:
            made = self._handles.get("once")  # handle("once"), inline where it is made
            if made is not None and made[0] == _contexts.generation:
                handle = made[1]
            else:
                handle = self.handle("once")
            if not self.reads_as_zarrfs:  # NumPy's casts are the Python path's
                return None
            result = handle[direct[0]].read().result()
        except Exception as exc:  # noqa: BLE001 - read again by the Python pipeline
            self._failed(exc)
            return None
        _direct_reads.append(direct[1])
        if len(_direct_reads) > _FOLD_AT:
            _fold_direct_reads()
        return result

    def read_async(
        self,
        dims: tuple[DimSelection, ...],
        out: np.ndarray,
        token: scheduler.CancelToken,
        *,
        keep: bool,
    ) -> bool:
        """:meth:`read` for a background read: cancelled with its token (tensorstore's
        future too). False when tensorstore failed."""
        try:
            future = self._write(dims, out, keep)
        except Exception as exc:  # noqa: BLE001 - read again by the Python pipeline
            return self._failed(exc)
        done: queue.SimpleQueue = queue.SimpleQueue()
        future.add_done_callback(lambda f: done.put(f))
        _wait_for(done, 1, [future], token, lambda f: None, self.path)
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - read again by the Python pipeline
            return self._failed(exc)
        stats.add(native_reads=1, native_chunks=_chunks_touched(dims, self.chunk_shape))
        return True

    def read_chunks(
        self,
        requests: list[ChunkRequest],
        out: np.ndarray,
        token: scheduler.CancelToken,
        on_chunk: Callable,
        event: Callable,
        *,
        keep: bool,
    ) -> list[ChunkRequest]:
        """A background read reporting chunk by chunk: one tensorstore read per chunk, all at
        once, each reported (``on_chunk(event(request))``) as it lands. Missing chunks are not
        filled here (tensorstore cannot say a chunk is missing): they, and every chunk that
        failed, are returned for the Python pipeline to read and report."""
        strict = self.handle("keep" if keep else "once", strict=True)
        if out.dtype != strict.dtype.numpy_dtype:  # NumPy's casts are the Python path's
            return list(requests)
        futures, failed = [], []
        done: queue.SimpleQueue = queue.SimpleQueue()
        for req in requests:
            try:
                f = _into(out[req.out_selection], strict[_chunk_index(req, self.chunk_shape)])
            except Exception:  # noqa: BLE001 - the Python pipeline reads it
                failed.append(req)
                continue
            futures.append(f)
            f.add_done_callback(lambda f, req=req: done.put((f, req)))

        def landed(item) -> None:
            f, req = item
            if f.exception() is None:
                on_chunk(event(req))
            else:
                failed.append(req)

        _wait_for(done, len(futures), futures, token, landed, self.path)
        landed_natively = len(requests) - len(failed)
        stats.add(native_reads=1, native_chunks=landed_natively, native_fallbacks=len(failed))
        return failed

    def covers_whole_chunks(self, dims: tuple[DimSelection, ...], shape: tuple[int, ...]) -> bool:
        """Whether a selection reads only whole chunks (every step 1, every edge on a chunk
        boundary or the array's end): such a read made once need not go through the cache
        pool (``keep=False``), which costs a decoded copy of each chunk in fresh memory."""
        for d, c, n in zip(dims, self.chunk_shape, shape, strict=True):
            if d.count == 0:
                return False
            if (d.step != 1 and d.count > 1) or (d.drop and c != 1):
                return False
            if d.start % c or (d.stop % c and d.stop != n):
                return False
        return True

    # ------------------------------------------------------------ helpers

    def _write(self, dims: tuple[DimSelection, ...], out: np.ndarray, keep: bool):
        handle = self.handle("keep" if keep else "once")
        if out.dtype != handle.dtype.numpy_dtype:  # NumPy's casts are the Python path's
            raise TypeError(f"an output of {out.dtype}, not {handle.dtype.numpy_dtype}")
        index, flips = _ts_index(dims)
        return _into(out if flips is None else out[flips], handle[index])

    def _failed(self, exc: BaseException, futures=()) -> bool:
        """A failed native read, to be read again on the Python pipeline once every write of
        it has ended (none then races the Python pipeline's into the same output)."""
        for f in futures:
            f.exception()
        log.debug("native read failed, reading on the Python pipeline: %s", exc)
        stats.add(native_fallbacks=1)
        return False


def _into(view: np.ndarray, source):
    """tensorstore writes ``source`` (an indexed handle) straight into ``view``'s memory."""
    import tensorstore as ts

    return ts.array(view, copy=False, write=True).write(source.translate_to[0])


def _direct_index(selection, shape: tuple[int, ...], chunk_shape: tuple[int, ...]):
    """A selection of in-bounds non-negative integers and step-less slices, and ``...``
    alone, as tensorstore's index (bounds explicit, clipped as NumPy clips them), how many
    chunks and elements it touches; None for any other selection (negative indices, steps,
    an empty or out-of-bounds one: the planner's rules and errors)."""
    if selection is Ellipsis:
        selection = ()
    elif type(selection) is not tuple:
        selection = (selection,)
    if len(selection) > len(shape):
        return None
    index: list[int | slice] = []
    chunks = elements = 1
    for axis, n in enumerate(shape):
        s = selection[axis] if axis < len(selection) else _ALL
        kind = type(s)
        if kind is int:
            if not 0 <= s < n:
                return None
            index.append(s)
            continue
        if kind is not slice or s.step is not None:
            return None
        start = 0 if s.start is None else s.start
        stop = n if s.stop is None else s.stop
        if type(start) is not int or type(stop) is not int or start < 0 or stop < 0:
            return None
        stop = min(stop, n)
        if stop <= start:
            return None
        c = chunk_shape[axis]
        chunks *= (stop - 1) // c - start // c + 1
        elements *= stop - start
        index.append(slice(start, stop))
    return tuple(index), chunks, elements


_ALL = slice(None)
#: the largest read made into an array tensorstore allocates: tensorstore ends the process
#: when an allocation fails, so larger ones go into an array NumPy allocates (and a failure
#: to allocate is a ReadTooLargeError)
_DIRECT_BYTES = 64 << 20


def _ts_index(dims: tuple[DimSelection, ...]) -> tuple[tuple, tuple | None]:
    """The tensorstore index of a normalised selection (ascending), and the reversal of the
    output along the dimensions a negative step reverses (None where there is none)."""
    index: list[int | slice] = []
    flips: list[slice] = []
    for d in dims:
        if d.drop:
            index.append(d.start)
            continue
        index.append(slice(d.start, d.stop, d.step))
        flips.append(slice(None, None, -1) if d.reverse else slice(None))
    return tuple(index), (tuple(flips) if any(f.step == -1 for f in flips) else None)


def _chunks_touched(dims: tuple[DimSelection, ...], chunk_shape: tuple[int, ...]) -> int:
    """How many chunks a selection touches: by arithmetic where every step is 1 (a window,
    a plane: a read's Python time matters on this path), else by the planner."""
    if any(d.step != 1 and d.count > 1 for d in dims):
        return count_chunks(dims, chunk_shape)
    return math.prod(
        (d.stop - 1) // c - d.start // c + 1 if d.count else 0
        for d, c in zip(dims, chunk_shape, strict=True)
    )


def _chunk_index(req: ChunkRequest, chunk_shape: tuple[int, ...]) -> tuple:
    """A chunk request's ``chunk_selection`` in array coordinates."""
    index: list[int | slice] = []
    for c, n, s in zip(req.chunk_coords, chunk_shape, req.chunk_selection, strict=True):
        origin = c * n
        if isinstance(s, slice):
            index.append(slice(origin + s.start, origin + s.stop, s.step))
        else:
            index.append(origin + int(s))
    return tuple(index)


def _wait_for(done: queue.SimpleQueue, count: int, futures, token, landed, path="") -> None:
    """Take ``count`` finished futures from ``done`` (``landed`` each); a cancelled token
    cancels every future and raises ReadCancelled."""
    for _ in range(count):
        while True:
            if token.cancelled:
                for f in futures:
                    f.cancel()
                raise ReadCancelled(path=path, node_path=path)
            try:
                f = done.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            landed(f)
            break


__all__ = [
    "ENV",
    "Decision",
    "NativeArray",
    "clear_caches",
    "decide",
    "native_enabled",
    "set_cache_size",
    "set_native",
    "set_threads",
]
