"""bench_engine's Icechunk cases: a plane from an Icechunk repository next to the same plane
from a plain Zarr copy of that snapshot, read as a script does (``zarrfs.open(url)[k]``: a fresh
handle each time), locally and over moto's S3 server with every request held about 20 ms.

Both copies are written by zarr-python with bench_engine's codec (Blosc zstd, shuffle), one
through Icechunk 1.x into a repository (one commit on ``main``), one into a plain store, under
``benchmarks/_data/icechunk-*`` (git-ignored, reused), in bench_engine's ``large`` (512 KiB) and
``small`` (32 KiB) chunk layouts, 4 planes. zarrfs's decoded-chunk cache is off
(``set_cache_size(0)``) so no plane is served from memory; what zarrfs keeps per process of a
repository (its config, the sessions of snapshots: immutable) is kept, the branch is resolved
at every open. The two copies are read interleaved, a different plane each time, after
``SETTLE_READS`` untimed rounds; every plane is checked against what was written. The target
(issue 31): the repository within 1.3x the plain copy.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _common import median, timed

DEPTH = 4
LIMIT = 1.3
KINDS = ("plain", "icechunk")


@dataclass
class IcechunkResult:
    name: str  # "icechunk-local/large/plane"
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def ratio(self) -> float:
        return median(self.seconds["icechunk"]) / median(self.seconds["plain"])


def build(data: Path, layout, side: int, plane_data: Callable[[int, int], np.ndarray]):
    """(the plain copy, the repository) of one layout, written once."""
    import icechunk
    import zarr
    from zarr.codecs import BloscCodec

    where = data / f"icechunk-{layout.name}-{DEPTH}x{side}x{side}"
    plain, repo = where / "plain.zarr", where / "repo"
    if (where / ".complete").exists():
        return plain, repo
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    spec = dict(
        shape=(DEPTH, side, side),
        dtype="uint16",
        chunks=layout.chunks,
        shards=layout.shards,
        fill_value=0,
        compressors=BloscCodec(cname="zstd", clevel=5, shuffle="shuffle"),
    )
    repository = icechunk.Repository.create(icechunk.local_filesystem_storage(str(repo)))
    session = repository.writable_session("main")
    arrays = [zarr.create_array(str(plain), **spec), zarr.create_array(session.store, **spec)]
    for k in range(DEPTH):
        plane = plane_data(k, side)
        for arr in arrays:
            arr[k] = plane
    session.commit("the planes")
    (where / ".complete").touch()
    return plain, repo


def time_planes(
    name: str,
    urls: dict[str, str],
    options: dict,
    side: int,
    repeats: int,
    settle: int,
    plane_data: Callable[[int, int], np.ndarray],
) -> IcechunkResult:
    import zarrfs

    result = IcechunkResult(name)
    planes = {k: plane_data(k, side) for k in range(DEPTH)}
    for rep in range(settle + repeats):
        k = rep % DEPTH
        order = KINDS if rep % 2 == 0 else KINDS[::-1]
        for kind in order:
            seconds, out = timed(lambda kind=kind, k=k: zarrfs.open(urls[kind], **options)[k])
            if not np.array_equal(out, planes[k]):
                raise SystemExit(f"{name}: {kind} read wrong data in plane {k}")
            if rep >= settle:
                result.seconds.setdefault(kind, []).append(seconds)
    return result


def run(cfg, layouts, data: Path, plane_data, settle: int) -> list[IcechunkResult]:
    """Every Icechunk case: local, then over moto's S3 server (~20 ms a request)."""
    import icechunk

    import zarrfs.engine as engine

    icechunk.set_logs_filter("error")
    engine.set_cache_size(0)
    copies = {lay.name: build(data, lay, cfg.side, plane_data) for lay in layouts}
    results = []
    for lay, (plain, repo) in copies.items():
        name = f"icechunk-local/{lay}/plane"
        t0 = time.perf_counter()
        urls = {"plain": str(plain), "icechunk": str(repo)}
        results.append(time_planes(name, urls, {}, cfg.side, cfg.repeats, settle, plane_data))
        print(f"  {name:<28} {time.perf_counter() - t0:6.1f} s", flush=True)
    results += _over_s3(cfg, copies, plane_data, settle)
    return results


def _over_s3(cfg, copies: dict, plane_data, settle: int) -> list[IcechunkResult]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.s3server
    from tests.s3server import S3Server

    server = S3Server().start()
    results = []
    try:
        urls = {
            lay: {
                "plain": server.upload_dir(plain, prefix="plain.zarr"),
                "icechunk": server.upload_dir(repo, prefix="repo"),
            }
            for lay, (plain, repo) in copies.items()
        }
        server.faults.stall(cfg.latency)  # every request from here on: ~20 ms
        for lay, where in urls.items():
            name = f"icechunk-s3/{lay}/plane"
            t0 = time.perf_counter()
            options = server.storage_options()
            results.append(
                time_planes(name, where, options, cfg.side, cfg.repeats, settle, plane_data)
            )
            print(f"  {name:<28} {time.perf_counter() - t0:6.1f} s", flush=True)
    finally:
        server.close()
    return results


def print_results(results: list[IcechunkResult]) -> bool:
    """The table (medians) and the target's PASS/FAIL lines; whether every case passed."""
    if not results:
        return True
    print("\nIcechunk: a fresh open + one plane (zarrfs.open(url)[k]), medians")
    print(f"  {'case':<28} {'plain ms':>9} {'icechunk ms':>12} {'ratio':>6}")
    for r in results:
        plain, ice = median(r.seconds["plain"]), median(r.seconds["icechunk"])
        print(f"  {r.name:<28} {plain * 1e3:9.1f} {ice * 1e3:12.1f} {r.ratio():6.2f}")
    print("\ntargets (Icechunk)")
    print(f"  a plane from a repository within {LIMIT}x of the plain copy")
    ok = True
    for r in results:
        passed = r.ratio() <= LIMIT
        ok &= passed
        print(f"    {'PASS' if passed else 'FAIL'}  {r.name:<28} icechunk/plain {r.ratio():.2f}")
    return ok
