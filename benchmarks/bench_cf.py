"""The CF view's cost: a decoded plane against the raw plane, and a time series over HTTP.

1. Local: a 4096 x 4096 int16 plane of a packed variable (``scale_factor``, ``add_offset``,
   ``_FillValue``; written by xarray, 512 x 512 chunks, xarray's default compressor), read cold
   (caches cleared) as stored values (``array.read``) and decoded (``engine.cf.read_decoded``),
   interleaved. Target: decoded at most 1.3x the raw time.
2. HTTP (the benchmarks' loopback server, 20 ms per request): a 10,000-step time series at one
   point, decoded. Target: only the chunks under the point, all in one round trip.

Usage: ``python benchmarks/bench_cf.py [--repeats 9] [--workdir DIR]``
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ServedDirectory, median, round_trips, timed  # noqa: E402

import zarrfs.engine as engine  # noqa: E402
from zarrfs.engine import cf, cf_decode  # noqa: E402

PACKING = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32768}


def write_plane_store(path: Path, side: int) -> None:
    import xarray as xr

    rng = np.random.default_rng(3)
    values = np.round(250 + 50 * rng.random((2, side, side)), 2)
    values[:, : side // 8, : side // 4] = np.nan
    ds = xr.Dataset({"tas": (("time", "y", "x"), values)})
    ds.to_zarr(path, encoding={"tas": {**PACKING, "chunks": (1, 512, 512)}}, zarr_format=2)


def write_series_store(path: Path, steps: int) -> None:
    import xarray as xr

    rng = np.random.default_rng(4)
    values = np.round(250 + 50 * rng.random((steps, 16, 16)), 2)
    ds = xr.Dataset({"tas": (("time", "lat", "lon"), values)})
    encoding = {"tas": {**PACKING, "chunks": (1000, 8, 8)}}
    ds.to_zarr(path, encoding=encoding, zarr_format=2, consolidated=True)


def _touch_memory(nbytes: int = 512 << 20) -> None:
    """Touch and free memory before a timed read, as ``bench_mount.py`` does: on this VM the
    host takes back pages the guest freed a while ago, and the first touch of such a page
    costs about 2 ms per MB, charged to whichever read allocates its result (a decoded plane
    allocates 128 MB of float64, the raw plane 32 MB)."""
    np.ones(nbytes, dtype=np.uint8)


def bench_plane(path: Path, repeats: int) -> dict:
    """Medians of interleaved cold reads: stored values, decoded into a new array, decoded
    into a reused one (as a viewer does: no page faults for a fresh 128 MB result); then
    ``cf.decode`` alone of a plane already read, into a reused array. Wall and CPU time (of
    every thread of the process: on a loaded machine the CPU ratio is the steadier one)."""
    array = engine.open(str(path))["tas"]
    var = cf.variable(array)
    reused = np.empty(tuple(array.shape)[1:], dtype=var.decoded_dtype)
    reused.fill(0)
    stored = array.read(1)
    reads = {
        "raw": lambda: array.read(1),
        "decoded": lambda: cf.read_decoded(array, 1, var),
        "decoded_reused": lambda: cf.read_decoded(array, 1, var, out=reused),
        "decode_only": lambda: cf.decode(var, stored, out=reused),
    }
    times: dict[str, list[float]] = {kind: [] for kind in reads}
    cpu: dict[str, list[float]] = {kind: [] for kind in reads}
    for _ in range(repeats):
        for kind, read in reads.items():
            engine.clear_caches()
            gc.collect()
            _touch_memory()
            start = time.process_time()
            seconds, _ = timed(read)
            cpu[kind].append(time.process_time() - start)
            times[kind].append(seconds)
    out = {f"{kind}_ms": median(values) * 1e3 for kind, values in times.items()}
    out |= {f"{kind}_cpu_ms": median(values) * 1e3 for kind, values in cpu.items()}
    out["ratio"] = out["decoded_ms"] / out["raw_ms"]
    out["ratio_reused"] = out["decoded_reused_ms"] / out["raw_ms"]
    out["cpu_ratio"] = out["decoded_cpu_ms"] / out["raw_cpu_ms"]
    out["cpu_ratio_reused"] = out["decoded_reused_cpu_ms"] / out["raw_cpu_ms"]
    return out


def bench_lookup_table(path: Path, repeats: int) -> dict:
    """The lookup table idea, measured: the decoded value of every one of the 65,536 int16
    values (computed by ``cf.decode`` itself, so the same bits), applied with ``np.take`` a
    64 Ki-element block at a time, against the arithmetic ``cf.decode`` applies to each
    block; both on one thread, into a reused array, interleaved."""
    array = engine.open(str(path))["tas"]
    var = cf.variable(array)
    stored = array.read(1).reshape(-1)
    table = cf.decode(var, np.arange(1 << 16, dtype=np.uint16).view(np.int16))
    index = stored.view(np.uint16)
    out = np.zeros(stored.shape, dtype=var.decoded_dtype)
    block = 1 << 16
    blocks = [slice(i, i + block) for i in range(0, stored.size, block)]

    def lookup() -> None:
        for b in blocks:
            np.take(table, index[b], out=out[b], mode="clip")

    numbers = cf_decode._Numbers(var, stored.dtype)  # what every decode applies per block

    def arithmetic() -> None:
        for b in blocks:
            numbers(stored[b], out[b])

    lookup()
    looked_up = out.copy()
    arithmetic()
    if not np.array_equal(looked_up.view(np.uint64), out.view(np.uint64)):
        raise SystemExit("the lookup table's values differ from cf.decode's")
    times: dict[str, list[float]] = {"lookup": [], "arithmetic": []}
    for _ in range(repeats):
        times["lookup"].append(timed(lookup)[0])
        times["arithmetic"].append(timed(arithmetic)[0])
    return {f"{kind}_ms": median(values) * 1e3 for kind, values in times.items()}


def bench_series(path: Path, repeats: int, steps: int) -> dict:
    with ServedDirectory(path, latency=0.02) as server:
        array = engine.open(server.url)["tas"]
        results = []
        for k in range(repeats):
            engine.clear_caches()
            server.reset()
            seconds, series = timed(lambda k=k: cf.read_decoded(array, (slice(None), k % 16, 3)))
            records = server.records()
            results.append((seconds, len(records), round_trips(records)))
        assert series.shape == (steps,)
    return {
        "ms": median(r[0] for r in results) * 1e3,
        "requests": sorted({r[1] for r in results}),
        "round_trips": sorted({r[2] for r in results}),
        "chunks_under_point": steps // 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        plane_path, series_path = Path(tmp) / "plane.zarr", Path(tmp) / "series.zarr"
        write_plane_store(plane_path, args.side)
        write_series_store(series_path, args.steps)
        load = os.getloadavg()[0]
        plane = bench_plane(plane_path, args.repeats)
        print(
            f"plane {args.side}x{args.side} int16 packed, local, cold: raw "
            f"{plane['raw_ms']:.1f} ms, decoded {plane['decoded_ms']:.1f} ms "
            f"(ratio {plane['ratio']:.2f}), into a reused array "
            f"{plane['decoded_reused_ms']:.1f} ms (ratio {plane['ratio_reused']:.2f}); "
            "target <= 1.3"
        )
        print(
            f"  CPU (all threads): raw {plane['raw_cpu_ms']:.1f} ms, decoded "
            f"{plane['decoded_cpu_ms']:.1f} ms (ratio {plane['cpu_ratio']:.2f}), reused "
            f"{plane['decoded_reused_cpu_ms']:.1f} ms (ratio {plane['cpu_ratio_reused']:.2f}); "
            f"cf.decode alone of a read plane into a reused array: "
            f"{plane['decode_only_ms']:.1f} ms (CPU {plane['decode_only_cpu_ms']:.1f} ms); "
            f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
        )
        table = bench_lookup_table(plane_path, args.repeats)
        print(
            f"  one thread, the plane's stored values to float64: lookup table (np.take) "
            f"{table['lookup_ms']:.1f} ms, arithmetic (cf.decode) {table['arithmetic_ms']:.1f} ms"
        )
        series = bench_series(series_path, args.repeats, args.steps)
        print(
            f"time series of {args.steps} steps at a point, HTTP 20 ms: {series['ms']:.1f} ms, "
            f"requests {series['requests']} ({series['chunks_under_point']} chunks under the "
            f"point), round trips {series['round_trips']} (target: 1)"
        )


if __name__ == "__main__":
    main()
