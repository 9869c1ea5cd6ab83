"""How fast the zarrfs engine reads planes and windows, next to tensorstore and zarr-python.

Run from the repository root::

    /work/.venv/bin/python benchmarks/bench_engine.py            # full size, a few minutes
    /work/.venv/bin/python benchmarks/bench_engine.py --quick    # smoke run, well under 2 min
    /work/.venv/bin/python benchmarks/bench_engine.py --cases 'local/large/*,http/*/window/*'

The datasets are written once with zarr-python under ``benchmarks/_data`` (git-ignored) and
reused. Every engine reads the same selections in one process, interleaved repeat by repeat
(machines are noisy: a burst of load hits all three, not one), and the output is medians and
ratios, never a single time. Each result is checked against the generator that made the data.

Cold reads: a fresh handle per repeat on a fresh URL (an alias of the same data, so no cache
keyed by URL survives), zarrfs with ``set_cache_size(0)``, tensorstore with a zero-byte cache
pool, zarr-python as it comes (it caches no chunks). The OS page cache is warm for everyone and
the HTTP server serves from memory: we measure the libraries, not the disk. Before the timed
cold repeats each engine makes three untimed reads on URLs used only for them, so thread pools
and kept-alive HTTP connections exist and the allocator has settled, as in any session. Warm
reads: one handle, untimed reads to fill the caches, then the timed repeats.

Default reads (``default`` mode) are reads as users run them: every library in its default
configuration (zarrfs with its default 512 MiB decoded-chunk cache, tensorstore with its default
context, zarr-python as it comes), one fresh handle per case, and a different plane for every
read (untimed ones included), so the cache grows as in a session and never hits; past the last
plane every engine opens a fresh handle with an empty cache (a new session) and windows move
16 elements, so a case may have more repeats than there are planes. Engines read in a
balanced order (``balanced_orders``): every engine first once and right after each other
engine once in every round of as many repeats as there are engines (six locally with
``--convoy``: take repeats in multiples of that). Local windows, reads of a millisecond or
two, take eight times the repeats (``WINDOW_REPEATS``): their medians are noisier.

Over HTTP a child process serves the data with a fixed latency per request (``_common``,
``--latency MS``); for every read it reports requests and round trips (waves of overlapping
requests), and for every client the process's CPU time per request. Over HTTP two more clients
join: zarrfs through fsspec (``transport=fsspec``, its transport before obstore) and
zarr-python with its own obstore ``ObjectStore``. ``--jitter MS``
adds a random extra wait of up to MS per answer, as object stores vary: responses then land
over a spread of time, and decoding early ones while waiting for the rest starts to pay.
``--idle MS`` leaves the process idle that long before every timed read, as a viewer or a mount
is between a user's requests: threads then wake on CPUs that were asleep.

Icechunk cases (``icechunk-local/*``, ``icechunk-s3/*``; with Icechunk installed): a plane from
an Icechunk repository beside the same plane from a plain copy of that snapshot, each through a
fresh handle as a script reads (``_icechunk_planes``), locally and over moto's S3 server at ~20
ms a request (``--latency``).
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import _icechunk_planes
import numpy as np
from _common import ServedDirectory, median, round_trips, timed

DATA = Path(__file__).resolve().parent / "_data"
#: untimed reads per engine and case before the timed ones. The first reads of a process are
#: slower for every engine (the 8 MB result of a plane lands on freshly mapped pages until
#: glibc raises its mmap threshold, after a few frees); a session reads more than one plane.
SETTLE_READS = 3
WARM_CACHE = 2**30
#: zarrfs's cache budget per mode ("default": what a user's process gets)
CACHE_BYTES = {"cold": 0, "warm": WARM_CACHE, "default": 512 * 2**20}


@dataclass(frozen=True)
class Config:
    depth: int  # planes; a plane read does not depend on it, only the build time does
    side: int
    repeats: int
    latency: float = 0.020
    jitter: float = 0.0  # up to this much more per HTTP answer (--jitter)
    idle: float = 0.0  # seconds asleep before each timed read (--idle)


FULL = Config(depth=16, side=2048, repeats=11)
QUICK = Config(depth=4, side=1024, repeats=3)


# -------------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Layout:
    name: str
    chunks: tuple[int, int, int]
    shards: tuple[int, int, int] | None = None


def layouts(side: int) -> list[Layout]:
    half = side // 2
    return [
        Layout("large", (1, 512, 512)),  # 512 KiB chunks
        Layout("small", (1, 128, 128)),  # 32 KiB chunks
        Layout("sharded", (1, 128, 128), (1, half, half)),  # 32 KiB inner chunks
    ]


def plane_data(k: int, side: int) -> np.ndarray:
    """Plane ``k``: smooth gradients and waves plus noise (compresses ~2-3x, not trivially)."""
    y, x = np.ogrid[0:side, 0:side]
    y, x = y.astype(np.float32), x.astype(np.float32)
    base = 20000 + 8 * x - 5 * y + 9000 * np.sin(x / 170 + 0.3 * k) * np.cos(y / 230 - 0.2 * k)
    noise = np.random.default_rng(k).normal(0, 40, (side, side)).astype(np.float32)
    return np.clip(base + noise, 0, 65535).astype(np.uint16)


def dataset_path(layout: Layout, cfg: Config) -> Path:
    return DATA / f"{layout.name}-{cfg.depth}x{cfg.side}x{cfg.side}.zarr"


def build_datasets(cfg: Config) -> None:
    """Write every missing dataset with zarr-python; a marker file says a write completed."""
    import zarr
    from zarr.codecs import BloscCodec

    todo = [
        lay
        for lay in layouts(cfg.side)
        if not dataset_path(lay, cfg).with_suffix(".complete").exists()
    ]
    if not todo:
        return
    print(f"building {', '.join(lay.name for lay in todo)} under {DATA} ...", flush=True)
    t0 = time.perf_counter()
    arrays = []
    for lay in todo:
        path = dataset_path(lay, cfg)
        shutil.rmtree(path, ignore_errors=True)
        arrays.append(
            zarr.create_array(
                str(path),
                shape=(cfg.depth, cfg.side, cfg.side),
                dtype="uint16",
                chunks=lay.chunks,
                shards=lay.shards,
                fill_value=0,
                compressors=BloscCodec(cname="zstd", clevel=5, shuffle="shuffle"),
            )
        )
    for k in range(cfg.depth):
        plane = plane_data(k, cfg.side)
        for arr in arrays:
            arr[k] = plane
    for lay in todo:
        dataset_path(lay, cfg).with_suffix(".complete").touch()
    print(f"built in {time.perf_counter() - t0:.1f} s", flush=True)


def stored_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# -------------------------------------------------------------------------------- selections


def selections(cfg: Config, k: int | None = None) -> dict[str, tuple]:
    """A plane, and a 256x256 window that straddles chunk (and shard) boundaries, of plane
    ``k`` (default: the middle one). Past the last plane, ``k`` starts again at the first
    with the window 16 elements up and left (straddling the same boundaries), and
    :func:`run_case` opens every engine afresh: default mode reads every plane and window once
    in a session, and times this short and noisy want more repeats than there are planes."""
    k = cfg.depth // 2 if k is None else k
    k, turn = k % cfg.depth, k // cfg.depth
    w0 = cfg.side // 2 - 24 - 16 * turn
    return {
        "plane": (k, slice(None), slice(None)),
        "window": (k, slice(w0, w0 + 256), slice(w0, w0 + 256)),
    }


# ---------------------------------------------------------------------------------- engines


class Zarrfs:
    """zarrfs as it comes: the native path (tensorstore) where it reads the array."""

    name = "zarrfs"
    native = True

    def __init__(self):
        import zarrfs.engine as engine

        self.engine = engine

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        if mode == "default":  # the cache of a fresh process, growing from empty
            self.engine.clear_caches()
        self.engine.set_cache_size(CACHE_BYTES[mode])
        arr = self.engine.open(location)

        def read(sel):
            self.engine.set_native(self.native)  # (the engines share one process)
            return arr[sel]

        return read


class ZarrfsPython(Zarrfs):
    """zarrfs with the native path off (``ZARRFS_NATIVE=0``): the Python pipeline."""

    name = "zarrfs-py"
    native = False

    def before_read(self, mode: str) -> None:
        """Untimed, before each timed read: the counters from zero; in default mode, the
        chunk table without what the other Python-pipeline engine's read of the same plane
        left (a process reading each plane once never reads a chunk twice: sharing the table,
        the second engine's reads kept every chunk, as a re-read does)."""
        from zarrfs.engine import cache

        if mode == "default":
            cache.chunks.clear()
        self.engine.reset_stats()


class TensorStore:
    name = "tensorstore"

    def __init__(self):
        import tensorstore

        self.ts = tensorstore

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        kvstore = location + "/" if "://" in location else {"driver": "file", "path": location}
        spec: dict = {"driver": "zarr3", "kvstore": kvstore}
        if mode != "default":
            limit = 0 if mode == "cold" else WARM_CACHE
            spec["context"] = {"cache_pool": {"total_bytes_limit": limit}}
        if mode == "warm":  # trust the cache as zarrfs does, no revalidation per read
            spec["recheck_cached_data"] = False
        arr = self.ts.open(spec, read=True).result()
        return lambda sel: arr[sel].read().result()


class ZarrPython:
    name = "zarr-python"

    def __init__(self):
        import zarr

        self.zarr = zarr

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        arr = self.zarr.open_array(location, mode="r")
        return lambda sel: arr[sel]


class ZarrfsManyThreads(ZarrfsPython):
    """zarrfs's Python pipeline as with ``ZARRFS_DECODE_THREADS=16``, interleaved with the
    others in one run: its own decode pool of 16 workers, swapped in around each of its
    reads (more threads must never make a read slower: no convoy on the GIL)."""

    name = "zarrfs@16"
    THREADS = 16

    def __init__(self):
        super().__init__()
        from zarrfs.engine import scheduler

        self.scheduler = scheduler
        self.threads = scheduler.Threads(self.THREADS, None, False)
        self.pools: dict = {}

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        read = super().open(location, mode)
        sched = self.scheduler

        def many(sel):
            saved = sched._threads, sched._pools  # (a benchmark's swap of the module's pools)
            sched._threads, sched._pools = self.threads, self.pools
            try:
                return read(sel)
            finally:
                sched._threads, sched._pools = saved

        return many


class ZarrfsNativeManyThreads(Zarrfs):
    """zarrfs as it comes (the native path) as with ``ZARRFS_DECODE_THREADS=16``: tensorstore
    contexts of its own, made with 16 decode threads set (tensorstore's copy threads: at most
    one per CPU), renewed with each session as the process's are, and the decode pool of 16
    workers (the Python pipeline's part of a read, if any), swapped in around its reads."""

    name = "zarrfs-native@16"
    THREADS = 16
    local_only = True  # the native path reads local stores

    def __init__(self):
        super().__init__()
        from zarrfs.engine import native, scheduler

        self.native, self.scheduler = native, scheduler
        self.threads = scheduler.Threads(self.THREADS, None, False)
        self.pools: dict = {}
        self.contexts = native._Contexts()
        self.contexts.generation = 1 << 30  # never a generation of the process's own

    def _swapped(self, fn, *args):
        sched, native = self.scheduler, self.native
        saved = sched._threads, sched._pools, native._contexts
        sched._threads, sched._pools = self.threads, self.pools
        native._contexts = self.contexts
        try:
            return fn(*args)
        finally:
            sched._threads, sched._pools, native._contexts = saved

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        read = self._swapped(super().open, location, mode)  # (its contexts renewed)
        return lambda sel: self._swapped(read, sel)


class ZarrfsFsspec(Zarrfs):
    """zarrfs reading through fsspec (``-O transport=fsspec``), its transport before obstore."""

    name = "zarrfs-fsspec"
    http_only = True

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        self.engine.set_cache_size(CACHE_BYTES[mode])
        arr = self.engine.open(location, transport="fsspec")
        return lambda sel: arr[sel]


class ZarrPythonObstore(ZarrPython):
    """zarr-python with its own obstore store (``zarr.storage.ObjectStore``)."""

    name = "zp-obstore"
    http_only = True

    def open(self, location: str, mode: str) -> Callable[[tuple], np.ndarray]:
        from obstore.store import HTTPStore
        from zarr.storage import ObjectStore

        store = ObjectStore(HTTPStore.from_url(location, client_options={"allow_http": True}))
        arr = self.zarr.open_array(store, mode="r")
        return lambda sel: arr[sel]


ENGINES = (Zarrfs, ZarrfsPython, TensorStore, ZarrPython, ZarrfsFsspec, ZarrPythonObstore)
#: short names in the tables
SHORT = {
    "zarrfs": "zarrfs",
    "zarrfs-py": "zf-py",
    "zarrfs@16": "zf@16",
    "zarrfs-native@16": "zf-n@16",
    "tensorstore": "ts",
    "zarr-python": "zp",
    "zarrfs-fsspec": "zf-fsspec",
    "zp-obstore": "zp-obs",
}


# ------------------------------------------------------------------------------------ cases


@dataclass(frozen=True)
class Case:
    transport: str  # "local" | "http"
    layout: Layout
    selection: str  # "plane" | "window"
    mode: str  # "cold" | "warm" | "default"

    @property
    def name(self) -> str:
        return f"{self.transport}/{self.layout.name}/{self.selection}/{self.mode}"


@dataclass
class Result:
    case: Case
    seconds: dict[str, list[float]] = field(default_factory=dict)
    trips: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (waves, requests)
    cpu: dict[str, list[float]] = field(default_factory=dict)  # process CPU seconds per read
    #: CPU seconds per read on the threads Python knows (the GIL's part; HTTP cases)
    python_cpu: dict[str, list[float]] = field(default_factory=dict)
    zarrfs_stats: list[dict] = field(default_factory=list)

    def med(self, engine: str) -> float:
        return median(self.seconds.get(engine, []))

    def ratio(self, num: str, den: str) -> float:
        return self.med(num) / self.med(den)

    def cpu_per_request(self, engine: str, python: bool = False) -> float:
        """Median over repeats of the process's CPU seconds per request (decoding included);
        ``python``: only on the threads Python knows."""
        cpu = (self.python_cpu if python else self.cpu).get(engine, [])
        pairs = zip(cpu, self.trips.get(engine, []), strict=False)
        return median(c / max(1, n) for c, (_, n) in pairs)

    def worst_trips(self, engine: str) -> tuple[int, int]:
        return max(self.trips.get(engine, [(0, 0)]))

    def over(self, engine: str, limit: int) -> str:
        """How many repeats took more than ``limit`` round trips, e.g. "1 of 11"."""
        trips = self.trips.get(engine, [])
        return f"{sum(waves > limit for waves, _ in trips)} of {len(trips)}"


def all_cases(cfg: Config) -> list[Case]:
    cases = []
    for transport, lay, sel in itertools.product(
        ("local", "http"), layouts(cfg.side), selections(cfg)
    ):
        for mode in ("cold", "warm", "default") if transport == "local" else ("cold",):
            cases.append(Case(transport, lay, sel, mode))
    return cases


def pick(cases: list[Case], patterns: str) -> list[Case]:
    return [c for c in cases if pick_name(c.name, patterns)]


def pick_name(name: str, patterns: str) -> bool:
    return any(fnmatch.fnmatch(name, p.strip()) for p in patterns.split(",") if p.strip())


#: a plane from an Icechunk repository beside a plain copy (``_icechunk_planes``)
ICECHUNK_CASES = {
    f"icechunk-{where}/{layout}/plane": layout
    for where in ("local", "s3")
    for layout in ("large", "small")
}


def run_icechunk(cfg: Config, names: list[str]) -> list:
    """The Icechunk cases asked for (none without Icechunk installed: said so)."""
    if not names:
        return []
    try:
        import icechunk  # noqa: F401
    except ImportError:
        print("Icechunk cases skipped: pip install 'zarrfs[icechunk]'")
        return []
    wanted = {ICECHUNK_CASES[n] for n in names}
    lays = [lay for lay in layouts(cfg.side) if lay.name in wanted]
    results = _icechunk_planes.run(cfg, lays, DATA, plane_data, SETTLE_READS)
    return [r for r in results if r.name in names]


class Locations:
    """Where each read finds its dataset; every cold read gets a URL of its own."""

    def __init__(self, cfg: Config, server: ServedDirectory | None):
        self.cfg, self.server = cfg, server
        self._tags = itertools.count()

    def fresh(self, case: Case) -> str:
        tag = f"{os.getpid()}-{next(self._tags)}"
        name = dataset_path(case.layout, self.cfg).name
        if case.transport == "http":
            return f"{self.server.alias_url(tag)}/{name}"
        alias = DATA / f"_alias{tag}"
        if not alias.is_symlink():
            alias.symlink_to(".", target_is_directory=True)
        return str(alias / name)

    def cleanup(self) -> None:
        for alias in DATA.glob(f"_alias{os.getpid()}-*"):
            alias.unlink()


def run_case(case: Case, engines, cfg: Config, where: Locations) -> Result:
    result = Result(case)
    engines = [
        e
        for e in engines
        if not getattr(e, "http_only" if case.transport != "http" else "local_only", False)
    ]
    cold = case.mode == "cold"
    # warm and default: one handle each (warm: its caches filled by untimed reads); cold:
    # untimed reads on URLs never used again, so thread pools, HTTP connections and the
    # allocator have settled in
    kept = {} if cold else {e.name: e.open(where.fresh(case), case.mode) for e in engines}
    planes = itertools.count() if case.mode == "default" else itertools.repeat(None)

    def reader(e):
        return kept[e.name] if not cold else e.open(where.fresh(case), case.mode)

    for _ in range(SETTLE_READS):
        sel = selections(cfg, next(planes))[case.selection]
        for e in engines:
            reader(e)(sel)
    orders = balanced_orders(engines, random.Random(f"{case.name}"))
    for _rep in range(case_repeats(case, cfg)):
        k = next(planes)
        if k is not None and k and k % cfg.depth == 0:  # every plane read: a fresh session
            kept = {e.name: e.open(where.fresh(case), case.mode) for e in engines}
        sel = selections(cfg, k)[case.selection]
        expected = plane_data(sel[0], cfg.side)[sel[1:]]
        # every engine after every other equally often (a read right after zarr-python's or
        # a Python pipeline's is ~1.5x slower, whoever makes it)
        order = next(orders)
        for e in order:
            read = reader(e)
            if isinstance(e, ZarrfsPython):
                e.before_read(case.mode)
            if where.server is not None:
                where.server.reset()
            time.sleep(cfg.idle)
            python = _python_cpu() if where.server is not None else 0.0
            cpu = time.process_time()
            seconds, out = timed(lambda read=read, sel=sel: read(sel))
            result.cpu.setdefault(e.name, []).append(time.process_time() - cpu)
            if where.server is not None:
                result.python_cpu.setdefault(e.name, []).append(_python_cpu() - python)
            if not np.array_equal(np.asarray(out), expected):
                raise SystemExit(f"{e.name} read wrong data in {case.name}")
            result.seconds.setdefault(e.name, []).append(seconds)
            if where.server is not None:
                rec = where.server.records()
                result.trips.setdefault(e.name, []).append((round_trips(rec), len(rec)))
            if type(e) is ZarrfsPython:  # the pipeline's own counters (not zarrfs@16's too)
                result.zarrfs_stats.append(e.engine.stats())
    return result


#: local windows (reads of 0.5-2 ms) take this many times the repeats: a median of 12 such
#: reads moved by 5-10% from run to run, and a ratio of two by up to 13% (native@16 against
#: the native path, the same tensorstore threads doing the same work: 1.13 with 12 repeats,
#: 0.99 and 1.03 with 60); eight since a median of 48 still moved by 11% (zarrfs@16 against
#: the Python pipeline on a 32 KiB window, both reading its nine chunks on the calling thread:
#: the same work)
WINDOW_REPEATS = 8


def case_repeats(case: Case, cfg: Config) -> int:
    """The timed repeats of ``case``: ``--repeats``, times :data:`WINDOW_REPEATS` for a local
    window."""
    window = case.selection == "window" and case.transport == "local"
    return cfg.repeats * (WINDOW_REPEATS if window else 1)


def balanced_orders(engines: list, rng: random.Random):
    """The engines' order for each repeat, endlessly: a Williams design, in which every engine
    reads first once and right after each other engine once in every ``len(engines)`` repeats
    (twice that for an odd count), the rows of each round in a new seeded order.

    A read's time depends on the read before it: on this 2-CPU machine a 256 x 256 window
    read right after zarr-python's read or the Python pipeline's took 0.60-0.69 ms, right after
    tensorstore's or zarrfs's native one 0.39-0.46 ms, for zarrfs and tensorstore alike. With a
    random order per repeat, 15 repeats gave one engine four reads after zarr-python's and
    another none, and the same seed every run the same bias (with separate tensorstore thread
    pools, benchmarks/README.md, the native path with 16 threads measured 1.21-1.29x its
    default on that window, run after run)."""
    n = len(engines)
    first, low, high = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...: each difference mod n once
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:  # an odd count needs the mirrored rows too
        rows += [row[::-1] for row in rows]
    while True:
        rng.shuffle(rows)
        for row in rows:
            yield [engines[i] for i in row]


def run(
    cases: list[Case], cfg: Config, convoy: bool = False, only: set[str] | None = None
) -> list[Result]:
    many = (ZarrfsManyThreads, ZarrfsNativeManyThreads) if convoy else ()
    engines = [cls() for cls in ENGINES + many if only is None or cls.name in only]
    results = []
    for transport in ("local", "http"):
        todo = [c for c in cases if c.transport == transport]
        if not todo:
            continue
        server = ServedDirectory(DATA, cfg.latency, cfg.jitter) if transport == "http" else None
        try:
            if server is not None:
                server.__enter__()
            where = Locations(cfg, server)
            for case in todo:
                t0 = time.perf_counter()
                results.append(run_case(case, engines, cfg, where))
                print(f"  {case.name:<28} {time.perf_counter() - t0:6.1f} s", flush=True)
        finally:
            if server is not None:
                server.close()
            Locations(cfg, None).cleanup()
    return results


# ---------------------------------------------------------------------------------- report


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.1f}"


def print_table(results: list[Result]) -> None:
    print(
        "\nmedian ms per read (lower is better); zarrfs: native path where it reads the array, "
        "py = zarrfs with ZARRFS_NATIVE=0, ts = tensorstore, zp = zarr-python"
    )
    head = (
        f"{'case':<28}{'zarrfs':>9}{'py':>9}{'ts':>9}{'zp':>9}  {'zarrfs/ts':>9}{'py/ts':>7}"
        f"{'zp/zarrfs':>10}  {'trips/requests zarrfs ts zp':>28}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        line = (
            f"{r.case.name:<28}{ms(r.med('zarrfs'))}{ms(r.med('zarrfs-py'))}"
            f"{ms(r.med('tensorstore'))}{ms(r.med('zarr-python'))}"
            f"  {r.ratio('zarrfs', 'tensorstore'):9.2f}{r.ratio('zarrfs-py', 'tensorstore'):7.2f}"
            f"{r.ratio('zarr-python', 'zarrfs'):10.2f}"
        )
        if r.trips:
            trips = [
                "{}/{}".format(*r.worst_trips(e)) for e in ("zarrfs", "tensorstore", "zarr-python")
            ]
            line += "  " + " ".join(f"{t:>8}" for t in trips)
        if "zarrfs@16" in r.seconds:
            line += f"  py@16 {ms(r.med('zarrfs@16'))} ({r.ratio('zarrfs@16', 'zarrfs-py'):.2f}x)"
        if "zarrfs-native@16" in r.seconds:
            many = r.ratio("zarrfs-native@16", "zarrfs")
            line += f"  native@16 {ms(r.med('zarrfs-native@16'))} ({many:.2f}x)"
        print(line)


def print_http_peers(results: list[Result]) -> None:
    http = [r for r in results if r.trips]
    if not http:
        return
    names = [e.name for e in ENGINES]
    print(
        "\nHTTP, every client: median ms per read, worst round trips/requests, and CPU µs per "
        "request (decoding included): the process's / on the threads Python knows (the GIL's "
        "part, and for zarrfs's reads of up to 32 requests obstore's work on zarrfs's request "
        "threads, without the GIL; the rest ran on Rust's or C++'s own threads)"
    )
    head = f"{'case':<28}" + "".join(f"{SHORT[n]:>27}" for n in names)
    print(head)
    print("-" * len(head))
    for r in http:
        cells = []
        for n in names:
            trips = "{}/{}".format(*r.worst_trips(n))
            cpu = f"{r.cpu_per_request(n) * 1e6:.0f}/{r.cpu_per_request(n, True) * 1e6:.0f}"
            cells.append(f"{r.med(n) * 1e3:8.1f} {trips:>7} {cpu:>10}")
        print(f"{r.case.name:<28}" + "".join(f"{c:>27}" for c in cells))


def _python_cpu() -> float:
    """CPU seconds so far of the threads Python knows (the caller, event loops, pools), each
    from its own clock: the part of a client's work that runs with the GIL at hand, and
    zarrfs's request threads (``store_async``), which wait in obstore's blocking calls and so
    also do obstore's work for their request, without the GIL. Not counted: Rust's and C++'s
    own threads (obstore's runtime and its hand-over threads, which take the GIL for a moment
    per answer; tensorstore's), nor Python threads that ended."""
    total = 0.0
    for thread in threading.enumerate():
        try:
            total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, TypeError):  # ended meanwhile, or not started
            continue
    return total


def _thread_cpu() -> dict[str, float]:
    """CPU seconds so far of this process: in all ("total", the process's clock, which also
    counts threads that came and went) and on its Python threads ("python": the caller,
    fsspec's loop, the pools; :func:`_python_cpu`). The rest is obstore's Rust threads: its
    runtime's workers and the short-lived threads that hand each answer to Python."""
    return {"total": time.process_time(), "python": _python_cpu()}


def transport_cpu(cfg: Config, repeats: int) -> None:
    """The transports alone: the store's stream of every chunk of a plane (as the reader
    takes it; no decoding), CPU per request of obstore (its Rust threads apart) and of fsspec,
    interleaved, fresh store and URL each time (connections kept, as in a session)."""
    from zarrfs.engine.store import ByteRequest, Store

    print(f"\ntransport alone: a plane's chunks fetched, CPU µs per request ({repeats} x 10 reads)")
    with ServedDirectory(DATA, cfg.latency, cfg.jitter) as server:
        for lay in layouts(cfg.side)[:2]:
            ny, nx = cfg.side // lay.chunks[1], cfg.side // lay.chunks[2]
            keys = [f"c/{cfg.depth // 2}/{y}/{x}" for y in range(ny) for x in range(nx)]
            cpu: dict[str, list[dict[str, float]]] = {"obstore": [], "fsspec": []}
            for rep, transport in itertools.product(range(repeats), cpu):
                url = f"{server.alias_url(f'{transport}{rep}')}/{dataset_path(lay, cfg).name}"
                store = Store.from_url(url, transport=transport)
                requests = [ByteRequest(k) for k in keys]
                store.fetch(requests)  # connections open
                before = _thread_cpu()
                for _ in range(10):
                    for _burst in store.stream(requests):
                        pass
                after = _thread_cpu()
                n = 10 * len(keys)
                cpu[transport].append({k: (after[k] - before[k]) / n for k in after})
            for transport, runs in cpu.items():
                total = median(r["total"] for r in runs) * 1e6
                python = median(r["python"] for r in runs) * 1e6
                print(
                    f"  {lay.name:<6} {len(keys):4d} requests  {transport:<8} "
                    f"python threads {python:6.0f}  other threads {max(0.0, total - python):6.0f}  "
                    f"total {total:6.0f}"
                )


def print_zarrfs_detail(results: list[Result]) -> None:
    print(
        "\nzarrfs-py per read (medians): decode = seconds summed over the decode tasks (a "
        "local store's chunks are read in them too)"
    )
    print(f"{'case':<28}{'wall ms':>9}{'decode ms':>10}{'chunks':>8}{'requests':>9}{'MiB':>7}")
    for r in results:
        if not r.zarrfs_stats:
            continue
        s = r.zarrfs_stats
        print(
            f"{r.case.name:<28}{ms(r.med('zarrfs-py'))}"
            f"{median(x.get('decode_seconds', 0) for x in s) * 1e3:10.1f}"
            f"{median(x.get('chunks_decoded', 0) for x in s):8.0f}"
            f"{median(x.get('requests', 0) for x in s):9.0f}"
            f"{median(x.get('bytes_fetched', 0) for x in s) / 2**20:7.1f}"
        )


def http_trip_limit(case: Case) -> int:
    return 2 if case.layout.shards and case.selection == "window" else 1


TARGETS = [
    (
        "plane from 512 KiB chunks within 1.2x of tensorstore",
        lambda c: c.layout.name == "large" and c.selection == "plane" and c.mode == "cold",
        lambda r: (
            r.ratio("zarrfs", "tensorstore") <= 1.2,
            f"zarrfs/ts {r.ratio('zarrfs', 'tensorstore'):.2f}",
        ),
    ),
    (
        "plane from 512 KiB chunks at least 2x faster than zarr-python",
        lambda c: c.layout.name == "large" and c.selection == "plane" and c.mode == "cold",
        lambda r: (
            r.ratio("zarr-python", "zarrfs") >= 2.0,
            f"zp/zarrfs {r.ratio('zarr-python', 'zarrfs'):.2f}",
        ),
    ),
    (
        "32 KiB chunks (plain or sharded) within 2x of tensorstore",
        lambda c: c.layout.name in ("small", "sharded") and c.mode == "cold",
        lambda r: (
            r.ratio("zarrfs", "tensorstore") <= 2.0,
            f"zarrfs/ts {r.ratio('zarrfs', 'tensorstore'):.2f}",
        ),
    ),
    (
        "HTTP: plane from 512 KiB chunks at least 2x faster than zarr-python (fsspec), no "
        "slower than zarr-python with obstore",
        lambda c: c.transport == "http" and c.layout.name == "large" and c.selection == "plane",
        lambda r: (
            r.ratio("zarr-python", "zarrfs") >= 2.0 and r.ratio("zp-obstore", "zarrfs") >= 1.0,
            f"zp/zarrfs {r.ratio('zarr-python', 'zarrfs'):.2f}, "
            f"zp-obstore/zarrfs {r.ratio('zp-obstore', 'zarrfs'):.2f}",
        ),
    ),
    (
        "HTTP: plane from 32 KiB chunks ahead of tensorstore",
        lambda c: c.transport == "http" and c.layout.name == "small" and c.selection == "plane",
        lambda r: (
            r.ratio("zarrfs", "tensorstore") < 1.0,
            f"zarrfs/ts {r.ratio('zarrfs', 'tensorstore'):.2f}",
        ),
    ),
    (
        "HTTP: CPU per request at most half of zarrfs through fsspec",
        lambda c: c.transport == "http",
        lambda r: (
            r.cpu_per_request("zarrfs") <= 0.5 * r.cpu_per_request("zarrfs-fsspec"),
            f"{r.cpu_per_request('zarrfs') * 1e6:.0f} µs vs "
            f"{r.cpu_per_request('zarrfs-fsspec') * 1e6:.0f} µs through fsspec "
            f"(Python's threads: {r.cpu_per_request('zarrfs', True) * 1e6:.0f} vs "
            f"{r.cpu_per_request('zarrfs-fsspec', True) * 1e6:.0f})",
        ),
    ),
    (
        "HTTP: one round trip per plane or window (two for a sharded window)",
        lambda c: c.transport == "http",
        lambda r: (
            r.worst_trips("zarrfs")[0] <= http_trip_limit(r.case),
            f"{r.worst_trips('zarrfs')[0]} round trips (limit {http_trip_limit(r.case)}),"
            f" {r.worst_trips('zarrfs')[1]} requests; repeats over the limit: "
            f"{r.over('zarrfs', http_trip_limit(r.case))}",
        ),
    ),
]


def _default(layout: str, selection: str):
    return lambda c: c.mode == "default" and c.layout.name in layout and c.selection == selection


def _within(limit: float, engine: str = "zarrfs"):
    def check(r: Result) -> tuple[bool | None, str]:
        if not _measured(r, engine, "tensorstore"):
            return None, "not measured (--engines)"
        ratio = r.ratio(engine, "tensorstore")
        return ratio <= limit, f"{engine}/ts {ratio:.2f}"

    return check


#: reads as users run them (issues 22, 28): every library in its default configuration
DEFAULT_TARGETS = [
    (
        "plane (512 KiB, 32 KiB or sharded chunks) within 1.0x of tensorstore",
        _default(("large", "small", "sharded"), "plane"),
        _within(1.0),
    ),
    (
        "window within 1.1x of tensorstore",
        _default(("large", "small", "sharded"), "window"),
        _within(1.1),
    ),
    (
        "plane of 32 KiB or sharded chunks: zarr-python at least 3x slower",
        _default(("small", "sharded"), "plane"),
        lambda r: (
            (r.ratio("zarr-python", "zarrfs") >= 3.0)
            if _measured(r, "zarr-python", "zarrfs")
            else None,
            f"zp/zarrfs {r.ratio('zarr-python', 'zarrfs'):.2f}",
        ),
    ),
]


#: the Python pipeline (issue 28): what it must reach on its own, in the default configuration
PYTHON_TARGETS = [
    (
        "plane, 32 KiB chunks, within 1.5x of tensorstore",
        _default(("small",), "plane"),
        _within(1.5, "zarrfs-py"),
    ),
    (
        "plane, sharded (32 KiB inner chunks), within 1.3x of tensorstore",
        _default(("sharded",), "plane"),
        _within(1.3, "zarrfs-py"),
    ),
    (
        "16 decode threads within 1.1x of the default pool (--convoy)",
        lambda c: True,
        lambda r: _convoy(r, "zarrfs@16", "zarrfs-py"),
    ),
    (
        "the native path with 16 threads within 1.1x of its default (--convoy)",
        lambda c: c.transport == "local",
        lambda r: _convoy(r, "zarrfs-native@16", "zarrfs"),
    ),
]


def _measured(r: Result, *engines: str) -> bool:
    return all(e in r.seconds for e in engines)


def _convoy(r: Result, many: str, default: str) -> tuple[bool | None, str]:
    if not _measured(r, many, default):
        return None, "not measured (--convoy, --engines)"
    return r.ratio(many, default) <= 1.1, f"{many}/{default} {r.ratio(many, default):.2f}"


def print_targets(results: list[Result]) -> bool:
    ok = True
    for heading, targets in (
        ("cold reads", TARGETS),
        ("default configuration", DEFAULT_TARGETS),
        ("the Python pipeline", PYTHON_TARGETS),
    ):
        print(f"\ntargets ({heading})")
        for title, applies, check in targets:
            print(f"  {title}")
            for r in (r for r in results if applies(r.case)):
                passed, detail = check(r)  # None: not measured in this run
                ok &= passed is not False
                verdict = {True: "PASS", False: "FAIL", None: "----"}[passed]
                print(f"    {verdict}  {r.case.name:<28} {detail}")
    return ok


# ------------------------------------------------------------------------- per-chunk cost


def chunk_overhead(cfg: Config, reads: int = 16) -> dict[str, float]:
    """CPU per chunk of a 32 KiB-chunk plane read on one thread (process CPU time: load from
    other processes shows less than in wall time): zarrfs's whole read on the Python pipeline
    (the native path off; default cache, each plane once); the bare loop doing the same work
    with no pipeline (the same confined open and read of each chunk file, the same blosc call
    into a buffer, a copy into its place); the codec alone on bytes already read (that call).
    Medians over ``reads`` planes, interleaved."""
    import zarrfs.engine as engine
    from zarrfs.engine import confine, native, reader
    from zarrfs.engine.blosc_direct import decompress_into

    lay = next(lay for lay in layouts(cfg.side) if lay.name == "small")
    path = dataset_path(lay, cfg)
    n, side = cfg.side // lay.chunks[1], lay.chunks[1]
    root = confine.Root(str(path))
    buf = np.empty(side * side * 2, np.uint8)
    chunk = buf.view("<u2").reshape(side, side)

    def bare(k: int) -> None:
        out = np.empty((cfg.side, cfg.side), "<u2")
        for i in range(n):
            for j in range(n):
                fd = confine.open_below(root, f"c/{k}/{i}/{j}")
                decompress_into(confine.read_local("", None, None, fd), buf)
                out[i * side : (i + 1) * side, j * side : (j + 1) * side] = chunk

    def codec(raws: list[bytes]) -> None:
        for raw in raws:
            decompress_into(raw, buf)

    # one thread: the whole read on the calling thread, as a small read runs (a benchmark's
    # setting of the threshold); on the Python pipeline, whichever engine of the run read
    # last (they share one process, and each sets the native path for its own reads: left
    # on, this measured tensorstore's threads, 69-71 us a chunk)
    saved, reader._INLINE_BYTES = reader._INLINE_BYTES, 1 << 62
    was_native = native._switch.enabled, native._switch.reason
    engine.set_native(False)
    try:
        engine.clear_caches()
        engine.set_cache_size(CACHE_BYTES["default"])
        arr = engine.open(str(path))
        times: dict[str, list[float]] = {"zarrfs": [], "bare": [], "codec": []}
        for r in range(reads):
            k = r % cfg.depth
            raws = [(path / f"c/{k}/{i}/{j}").read_bytes() for i in range(n) for j in range(n)]
            for name, fn in (
                ("zarrfs", lambda k=k: arr[k]),
                ("bare", lambda k=k: bare(k)),
                ("codec", lambda raws=raws: codec(raws)),
            ):
                t0 = time.process_time()
                fn()
                times[name].append((time.process_time() - t0) / (n * n))
    finally:
        reader._INLINE_BYTES = saved
        engine.set_native(*was_native)
    medians = {name: median(v) for name, v in times.items()}
    return {**medians, **{f"{name} min": min(v) for name, v in times.items()}}


def print_chunk_overhead(cfg: Config) -> bool:
    got = chunk_overhead(cfg)
    above_codec = got["zarrfs"] - got["codec"]
    above_bare = got["zarrfs"] - got["bare"]
    print(
        "\nCPU per 32 KiB chunk, one thread (process CPU time, medians): "
        f"zarrfs {got['zarrfs'] * 1e6:.1f} us, bare loop {got['bare'] * 1e6:.1f} us, "
        f"codec alone {got['codec'] * 1e6:.1f} us"
    )
    print(
        f"  zarrfs above the codec {above_codec * 1e6:.1f} us a chunk (the chunk's file "
        f"system calls and its copy included); above the bare loop {above_bare * 1e6:.1f} us"
    )
    print(
        "  the fastest of the reads (what another process's load adds shows least there): "
        f"zarrfs {got['zarrfs min'] * 1e6:.1f} us, bare loop {got['bare min'] * 1e6:.1f} us: "
        f"{(got['zarrfs min'] - got['bare min']) * 1e6:.1f} us above it"
    )
    passed = above_bare <= 10e-6
    print(f"  {'PASS' if passed else 'FAIL'}  at most 10 us a chunk of the pipeline's own Python")
    return passed


# ------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smaller data ({QUICK.depth}x{QUICK.side}x{QUICK.side}), "
        f"{QUICK.repeats} repeats: a smoke run",
    )
    parser.add_argument(
        "--cases",
        default="*",
        help="comma-separated glob patterns over transport/layout/selection/"
        "mode (cold, warm, default), e.g. 'local/*/plane/cold,http/sharded/*' (default: all)",
    )
    parser.add_argument("--repeats", type=int, help="override the number of repeats")
    parser.add_argument(
        "--transport-cpu",
        action="store_true",
        help="also measure the transports alone (CPU per request of a plane's fetch)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=20.0,
        metavar="MS",
        help="the HTTP server's wait before each answer (default: 20)",
    )
    parser.add_argument(
        "--jitter",
        type=float,
        default=0.0,
        metavar="MS",
        help="HTTP answers wait up to this many ms more than the fixed 20 ms, "
        "at random (seeded), as object stores vary (default: 0)",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        metavar="MS",
        help="sleep this many ms before every timed read, as an interactive "
        "program is idle between requests (default: 0)",
    )
    parser.add_argument(
        "--convoy",
        action="store_true",
        help="also read with a decode pool of 16 threads (zarrfs@16), interleaved: more "
        "threads must not make a read slower",
    )
    parser.add_argument(
        "--engines",
        metavar="NAMES",
        help="comma-separated engines to run (default: all): "
        + ", ".join(cls.name for cls in (*ENGINES, ZarrfsManyThreads, ZarrfsNativeManyThreads))
        + "; targets naming an engine left out say 'not measured'",
    )
    parser.add_argument(
        "--decode-threads",
        type=int,
        metavar="N",
        help="zarrfs's decode threads (set_threads; the native path's too), as "
        "ZARRFS_DECODE_THREADS=N (default: one per CPU)",
    )
    args = parser.parse_args(argv)
    if args.decode_threads:
        import zarrfs.engine as engine

        engine.set_threads(decode=args.decode_threads)
    cfg = QUICK if args.quick else FULL
    cfg = replace(
        cfg,
        repeats=args.repeats or cfg.repeats,
        jitter=args.jitter / 1e3,
        idle=args.idle / 1e3,
        latency=args.latency / 1e3,
    )
    cases = pick(all_cases(cfg), args.cases)
    icechunk_cases = [n for n in ICECHUNK_CASES if pick_name(n, args.cases)]
    if not cases and not icechunk_cases:
        names = [c.name for c in all_cases(cfg)] + list(ICECHUNK_CASES)
        parser.error(f"no case matches {args.cases!r}; cases: " + ", ".join(names))
    DATA.mkdir(parents=True, exist_ok=True)
    build_datasets(cfg)
    for lay in layouts(cfg.side):
        path = dataset_path(lay, cfg)
        raw = cfg.depth * cfg.side * cfg.side * 2
        print(
            f"{lay.name:<8} chunks {lay.chunks} shards {lay.shards}: "
            f"{raw / stored_bytes(path):.2f}x compression"
        )
    print(
        f"{len(cases)} cases, {cfg.repeats} repeats ({cfg.repeats * WINDOW_REPEATS} for local "
        f"windows), HTTP latency {cfg.latency * 1e3:.0f} ms"
        f"{f' + up to {cfg.jitter * 1e3:.0f} ms' if cfg.jitter else ''}, "
        f"{f'{cfg.idle * 1e3:.0f} ms idle before each read, ' if cfg.idle else ''}"
        f"{os.cpu_count()} CPUs, zarrfs decode threads "
        f"{args.decode_threads or os.environ.get('ZARRFS_DECODE_THREADS', 'default')}",
        flush=True,
    )
    only = {n.strip() for n in args.engines.split(",")} if args.engines else None
    known = {cls.name for cls in (*ENGINES, ZarrfsManyThreads, ZarrfsNativeManyThreads)}
    if only is not None and not only <= known:
        parser.error(f"unknown engines {sorted(only - known)}; engines: {', '.join(sorted(known))}")
    if only is not None and only & {"zarrfs@16", "zarrfs-native@16"}:
        args.convoy = True
    results = run(cases, cfg, convoy=args.convoy, only=only) if cases else []
    icechunk_results = run_icechunk(cfg, icechunk_cases)
    print_table(results)
    print_http_peers(results)
    if args.transport_cpu:
        transport_cpu(cfg, min(cfg.repeats, 5))
    print_zarrfs_detail(results)
    ok = print_targets(results)
    ok &= _icechunk_planes.print_results(icechunk_results)
    if only is None or "zarrfs-py" in only:  # (the Python pipeline's per-chunk figure)
        ok &= print_chunk_overhead(cfg)
    print(f"\n{'all targets PASS' if ok else 'some targets FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
