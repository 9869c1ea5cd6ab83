"""CF decoding of values (packing, masking, times), fast: the arithmetic of :mod:`cf`'s
``decode`` and ``read_decoded``.

CF conventions 1.11, 8.1 "Packed Data" (``stored * scale_factor + add_offset``) and 2.5.1
(``_FillValue``/``missing_value``/``valid_range`` compared with the *packed* values), with
xarray's dtype and order of operations, so that the values are bit for bit xarray's.

Where the time goes (a 4096 x 4096 int16 plane, 16.8 M elements, one core): a cast, a multiply
and an add over 64 Ki-element blocks that stay in the CPU's cache (12 ms), the fill checks (4 ms:
a block's minimum, and a comparison where it can hold the fill), and the first touch of a new
128 MB float64 result's pages (10-12 ms on this VM; no faster from two threads at load 4). Hence:

* **Blocks of contiguous memory.** Unpacking a chunk's region of a wide plane in place (rows
  of 512 elements, 32 KiB apart) ran 3x slower than the same work on contiguous memory: rows
  a power of two apart fall in the same cache sets. Whole rows are decoded instead.
* **Not overlapping the read.** Decoding each band of rows in the decode worker that placed
  its last chunk (``Array.submit(on_chunk=...)``) did overlap the read, but the read already
  keeps both workers busy decompressing, so the decode's CPU added to the wall time; with the
  reader of the one-table pipeline it was 10 ms slower than reading whole, then decoding
  (``benchmarks/README.md``).
* **The caller helps.** :func:`decode` of a large array hands blocks to the decode pool and
  decodes blocks itself until none are left (never waits on a pool it may be running in).
* **No lookup table.** A table of the decoded value of every 16-bit stored value, applied
  with ``np.take``, gives the same bits but took 1.4x as long as the arithmetic, masking
  included (``bench_cf.py``: 23-28 ms against 17-19 ms a plane, one thread): numpy's gather
  is a loop of scalar copies, the cast, multiply and add are SIMD.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from . import scheduler
from .cf_time import decode_times
from .planner import normalize_selection, out_shape

_Item = TypeVar("_Item")


class Variable(Protocol):
    """What decoding reads of a :class:`cf.Variable` (``cf`` imports this module, so this
    one names the attributes instead of importing the class)."""

    @property
    def packing(self) -> Any: ...
    @property
    def masking(self) -> Any: ...
    @property
    def time(self) -> Any: ...
    @property
    def encoded(self) -> bool: ...
    @property
    def decoded_dtype(self) -> np.dtype: ...


#: elements decoded at a time: the stored block and its float result stay in the CPU's cache
_BLOCK = 1 << 16
#: elements from which decoding is worth spreading over the decode workers (below: one thread)
_PARALLEL = 1 << 20


def decode(var: Variable, stored: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Stored values to the CF view (see :func:`cf.decode`): into ``out`` when given, which
    must then have the decoded dtype (``var.decoded_dtype``, or any for times) and the stored
    shape; it may be a strided view (a tile of a larger plane)."""
    stored = np.asarray(stored)
    if not var.encoded:
        return _into(out, stored)
    if var.time is not None:
        numbers = stored
        if var.packing or var.masking:  # unpacked and masked (NaN) as float64, then dates
            numbers = np.empty(stored.shape, dtype=np.float64)
            _decode_all(_Numbers(var, stored.dtype), stored, numbers)
        return _into(out, decode_times(numbers, var.time))
    target = _target(var, stored.shape, out)
    _decode_all(_Numbers(var, stored.dtype), stored, target)
    return target


def read(array, selection, var: Variable, out: np.ndarray | None = None) -> np.ndarray:
    """``array.read(selection)`` decoded (see :func:`cf.read_decoded`): read whole into a
    buffer kept between reads, then decoded (decoding band by band as the chunks landed was
    tried and measured slower: see the module docstring)."""
    if var.time is not None or not var.encoded:
        return decode(var, array.read(selection), out)
    shape = out_shape(normalize_selection(selection, tuple(array.shape)))
    target = _target(var, shape, out)
    with _stored_buffer(shape, np.dtype(array.dtype)) as stored:
        array.read(selection, out=stored)
        _decode_all(_Numbers(var, stored.dtype), stored, target)
    return target


_scratch_lock = threading.Lock()
_scratch: np.ndarray | None = None
#: the largest stored plane kept between reads (4096 x 4096 int16 is 32 MiB)
_SCRATCH_BYTES = 64 << 20


@contextlib.contextmanager
def _stored_buffer(shape: tuple[int, ...], dtype: np.dtype) -> Iterator[np.ndarray]:
    """Where a decoded read puts the stored values: one buffer kept by the process between
    reads (the first touch of a new 32 MiB array's pages cost about 2.5 ms of CPU here, a
    sixth of the raw read), or a new array when it is in use by another read or too large.
    Every write into it has ended when the read returns or raises."""
    global _scratch
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _SCRATCH_BYTES or not _scratch_lock.acquire(blocking=False):
        yield np.empty(shape, dtype=dtype)
        return
    try:
        if _scratch is None or _scratch.nbytes < nbytes:
            _scratch = None  # the old one goes before the new one is allocated
            _scratch = np.empty(nbytes, dtype=np.uint8)
        yield _scratch[:nbytes].view(dtype).reshape(shape)
    finally:
        _scratch_lock.release()


def _target(var: Variable, shape: tuple[int, ...], out: np.ndarray | None) -> np.ndarray:
    dtype = var.decoded_dtype
    if out is None:
        return np.empty(shape, dtype=dtype)
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f"out must be {dtype} of shape {shape}, not {out.dtype} {out.shape}")
    return out


def _into(out: np.ndarray | None, values: np.ndarray) -> np.ndarray:
    if out is None:
        return values
    out[...] = values
    return out


def _decode_all(numbers: _Numbers, stored: np.ndarray, target: np.ndarray) -> None:
    """Every block of ``stored`` into ``target``: on the decode workers and this thread
    together when there are enough of them."""
    blocks = _blocks(stored.shape)
    if stored.size < _PARALLEL or scheduler.decode_workers() < 2:
        _decode_blocks(numbers, stored, target, blocks)
        return
    _share(blocks, lambda block: numbers(stored[block], target[block]))


def _decode_blocks(
    numbers: _Numbers, stored: np.ndarray, target: np.ndarray, blocks: list | None = None
) -> None:
    for block in _blocks(stored.shape) if blocks is None else blocks:
        numbers(stored[block], target[block])


def _blocks(shape: tuple[int, ...]) -> list[tuple]:
    """Index tuples splitting an array of ``shape`` into C-order pieces of about ``_BLOCK``
    elements: whole trailing rows where they fit, else runs along the first axis whose
    trailing part fits."""
    if not shape:
        return [(...,)]  # a 0-d view ((): a scalar, which no ufunc writes into)
    axis = 0
    while axis < len(shape) - 1 and math.prod(shape[axis + 1 :]) > _BLOCK:
        axis += 1
    inner = math.prod(shape[axis + 1 :])
    rows = max(1, _BLOCK // max(1, inner))
    outer = itertools.product(*(range(n) for n in shape[:axis]))
    return [
        (*head, slice(i, min(i + rows, shape[axis])))
        for head in outer
        for i in range(0, shape[axis], rows)
    ]


def _share(items: Sequence[_Item], work: Callable[[_Item], None]) -> None:
    """``work(item)`` for each item, by this thread and up to one task per decode worker,
    each taking the next item until none is left. The calling thread works too, so the
    work ends even when every worker is busy (or this is one of them); tasks that never
    started are cancelled. An item is one block (about 50 µs of work): a worker that the OS
    sets aside mid-way holds back one block, not a run of them."""
    lock = threading.Lock()
    pending = iter(items)

    def drain() -> None:
        while True:
            with lock:
                item = next(pending, None)
            if item is None:
                return
            work(item)

    helpers = min(scheduler.decode_workers(), len(items) - 1)
    futures = [scheduler.run_decode(drain) for _ in range(helpers)]
    try:
        drain()
    finally:
        for future in futures:
            if not future.cancel():
                future.exception()  # wait for it
    for future in futures:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error


class _Numbers:
    """How stored blocks of one variable become numbers: settled once per decode from the
    variable and the stored dtype, then applied block by block (thread-safe: no state)."""

    def __init__(self, var: Variable, dtype: np.dtype):
        packing, masking = var.packing, var.masking
        self.scale = packing.scale_factor if packing else None
        self.offset = packing.add_offset if packing else None
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        fills = [v for v in masking.fill_values if v == v] if masking else []
        low = masking.valid_min if masking else None
        high = masking.valid_max if masking else None
        if info is not None:  # values a stored integer cannot hold need no comparison
            fills = [v for v in fills if info.min <= v <= info.max]
            low = low if low is not None and low > info.min else None
            high = high if high is not None and high < info.max else None
        self.fills, self.valid_min, self.valid_max = tuple(fills), low, high
        # the block's range rules out comparisons; only the ends that can rule one out are
        # computed (a fill at the type's minimum, as xarray's int16 default, needs no max)
        self.need_low = low is not None or any(info is None or v > info.min for v in fills)
        self.need_high = high is not None or any(info is None or v < info.max for v in fills)
        floats = dtype.kind == "f"  # fmin/fmax skip NaN; integers have none
        self.minimum = np.fmin.reduce if floats else np.minimum.reduce
        self.maximum = np.fmax.reduce if floats else np.maximum.reduce

    def __call__(self, raw: np.ndarray, out: np.ndarray) -> None:
        """xarray's order (mask, then ``* scale_factor``, then ``+ add_offset``) gives the
        same bits as unpacking first: a masked value is NaN either way. Three passes (a cast,
        a multiply, an add) are faster than a multiply that casts as it goes (buffered)."""
        np.copyto(out, raw, casting="unsafe")
        if self.scale is not None:
            np.multiply(out, self.scale, out=out)
        if self.offset is not None:
            np.add(out, self.offset, out=out)
        missing = self._missing(raw)
        if missing is not None:
            np.copyto(out, np.nan, where=missing)

    def _missing(self, raw: np.ndarray) -> np.ndarray | None:
        """Where ``raw`` holds a missing value; None when nowhere. A NaN fill needs no mask
        (NaN stays NaN through unpacking)."""
        if raw.size == 0 or not (self.need_low or self.need_high):
            return None
        low = self.minimum(raw, axis=None) if self.need_low else None
        high = self.maximum(raw, axis=None) if self.need_high else None
        tests: list[tuple[np.ufunc, object]] = [
            (np.equal, v)
            for v in self.fills
            if (low is None or low <= v) and (high is None or v <= high)
        ]
        if self.valid_min is not None and low is not None and low < self.valid_min:
            tests.append((np.less, self.valid_min))
        if self.valid_max is not None and high is not None and high > self.valid_max:
            tests.append((np.greater, self.valid_max))
        missing = None
        for compare, value in tests:
            hit = compare(raw, value)
            missing = hit if missing is None else np.logical_or(missing, hit, out=missing)
        return missing
