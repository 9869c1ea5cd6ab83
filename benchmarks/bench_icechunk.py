"""How fast zarrfs reads an Icechunk repository, next to a plain Zarr copy of the same snapshot;
and how fast the mount lists ``@snapshots/`` of a repository with many commits.

Run from the repository root::

    .venv/bin/python benchmarks/bench_icechunk.py            # planes of 2048 x 2048, 1,000 commits
    .venv/bin/python benchmarks/bench_icechunk.py --quick    # smaller, fewer commits

Planes: one array (4 x 2048 x 2048 uint16, chunks 1 x 256 x 256, zarr-python's default zstd)
written by Icechunk into a repository and by zarr-python into a plain store, under
``benchmarks/_data`` (git-ignored, reused). A fresh open of the array each time (timed apart),
then a cold read of a plane (``set_cache_size(0)``; a different plane each time), the two stores
interleaved read by read; each read is checked against the data written. Local, and over moto's S3 server on 127.0.0.1 with every
request held about 20 ms (a stall fault of 20 ms, slept in 20 ms steps). The target: the
repository within 1.3x the plain copy.

Listing: a repository of N commits on ``main`` (one chunk changed each), the mount's virtual tree
(no FUSE) over it; the time to list ``@snapshots/`` from a fresh open (reading the history).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = Path(__file__).resolve().parent / "_data" / "icechunk"
CHUNK = (1, 256, 256)


def plane_data(depth: int, side: int) -> np.ndarray:
    values = np.arange(depth * side * side, dtype=np.uint32).reshape(depth, side, side)
    return (values % 4099).astype("uint16")


def build(depth: int, side: int) -> tuple[Path, Path, np.ndarray]:
    import icechunk
    import zarr

    data = plane_data(depth, side)
    where = DATA / f"{depth}x{side}"
    plain, repo = where / "plain.zarr", where / "repo"
    if not plain.exists():
        zarr.create_array(str(plain), shape=data.shape, chunks=CHUNK, dtype="uint16")[:] = data
    if not repo.exists():
        r = icechunk.Repository.create(icechunk.local_filesystem_storage(str(repo)))
        session = r.writable_session("main")
        arr = zarr.create_array(
            session.store, name="a", shape=data.shape, chunks=CHUNK, dtype="uint16"
        )
        arr[:] = data
        session.commit("the data")
    return plain, repo, data


def time_planes(urls: dict[str, tuple[str, str]], data, repeats: int, options: dict) -> dict:
    """Median seconds per store of opening the array, and of then reading a plane (cold
    cache, a different plane each time), the stores interleaved read by read."""
    import zarrfs.engine as engine

    engine.set_cache_size(0)
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(repeats + 1):
        k = r % data.shape[0]
        for name, (url, path) in urls.items():
            start = time.perf_counter()
            node = engine.open(url, **options)
            arr = node[path] if path else node
            opened = time.perf_counter()
            out = arr[k]
            read = time.perf_counter()
            if not np.array_equal(out, data[k]):
                raise SystemExit(f"{name}: plane {k} differs from what was written")
            if r:  # the first round settles pools and connections
                times.setdefault((name, "open"), []).append(opened - start)
                times.setdefault((name, "read"), []).append(read - opened)
    return {key: statistics.median(t) for key, t in times.items()}


def report(where: str, medians: dict) -> bool:
    """The plane read within 1.3x; the open shown beside it."""
    ok = True
    for what in ("read", "open"):
        plain, ice = medians[("plain", what)], medians[("icechunk", what)]
        ratio = ice / plain
        verdict = ("ok" if ratio <= 1.3 else "OVER 1.3x") if what == "read" else ""
        ok &= what != "read" or ratio <= 1.3
        print(
            f"{where:6s} {what:5s} plain {plain * 1e3:7.1f} ms   icechunk {ice * 1e3:7.1f} ms"
            f"   ratio {ratio:.2f}  {verdict}"
        )
    return ok


def planes_over_s3(plain: Path, repo: Path, data, repeats: int) -> dict:
    from tests.s3server import S3Server

    server = S3Server().start()
    try:
        plain_url = server.upload_dir(plain, prefix="plain.zarr")
        repo_url = server.upload_dir(repo, prefix="repo")
        server.faults.stall(0.02)  # every request from here on: ~20 ms
        urls = {"plain": (plain_url, ""), "icechunk": (repo_url, "a")}
        return time_planes(urls, data, repeats, server.storage_options())
    finally:
        server.close()


def build_history(commits: int) -> Path:
    import icechunk
    import zarr

    repo_path = DATA / f"history{commits}"
    if repo_path.exists():
        return repo_path
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(repo_path)))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="a", shape=(64,), chunks=(1,), dtype="int32")
    session.commit("create")
    for i in range(commits - 1):
        session = repo.writable_session("main")
        zarr.open_array(session.store, path="a")[i % 64] = i
        session.commit(f"commit {i}")
    return repo_path


def time_snapshot_listing(repo_path: Path) -> tuple[float, int]:
    import zarrfs.engine as engine
    from zarrfs.fuse.options import parse_mount_options
    from zarrfs.fuse.tree import VirtualTree

    tree = VirtualTree(lambda: engine.open(str(repo_path)), parse_mount_options([]))
    tree.resolve("/")
    start = time.perf_counter()
    names = tree.resolve("/@snapshots").names()
    return time.perf_counter() - start, len(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer commits")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    side, commits = (1024, 200) if args.quick else (2048, 1000)
    repeats = args.repeats or (3 if args.quick else 9)
    import icechunk

    icechunk.set_logs_filter("error")
    plain, repo, data = build(4, side)
    ok = report(
        "local",
        time_planes({"plain": (str(plain), ""), "icechunk": (str(repo), "a")}, data, repeats, {}),
    )
    ok &= report("s3", planes_over_s3(plain, repo, data, repeats))
    took, count = time_snapshot_listing(build_history(commits))
    print(f"listing @snapshots/ of {count} snapshots: {took * 1e3:.0f} ms")
    ok &= took < 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
