"""How long one ``read()`` of a mounted file takes when some store requests never answer.

Writes a 16 MiB float32 array (zarr-python, zstd, 32 KiB chunks), serves it from the loopback
server of ``tests/servers.py`` with a seeded share of chunk requests stalling forever, mounts it
(``ZARRFS_TIMEOUT`` as given), and times single ``pread`` calls of several sizes at random
offsets of ``data.raw``, dropping the file's page cache before each so that every read asks the
daemon. Prints each read's duration and outcome, then the distribution (median, p90, p99, max)
and the counts: EIO, short reads, wrong bytes (must be 0).

    FUSE_LIBRARY_NAME=fuse3 /work/.venv/bin/python benchmarks/bench_stalls.py \
        [--reads 60] [--fraction 0.2] [--timeout 2] [--seed 1] [-o cache_size=0]
        [--sizes 65536] [--give-up 120]

A read that has not returned after ``--give-up`` seconds ends the run (the mount is then
stopped, which ends the read with EIO).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fuse.conftest import wait_mounted  # noqa: E402
from tests.servers import HttpServer  # noqa: E402

SIZES = (4096, 65536, 200_000, 1 << 20)


def write_store(root: Path) -> np.ndarray:
    import zarr
    import zarr.codecs as zc

    data = np.random.default_rng(0).standard_normal((1024, 4096)).astype("f4")
    array = zarr.create_array(
        str(root), shape=data.shape, chunks=(16, 512), dtype="f4", compressors=zc.ZstdCodec()
    )
    array[:] = data
    return data


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=60)
    parser.add_argument("--fraction", type=float, default=0.2, help="chunk requests stalling")
    parser.add_argument("--timeout", default="2", help="ZARRFS_TIMEOUT for the daemon")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", dest="options", action="append", default=[], help="mount option")
    parser.add_argument("--log", help="keep the daemon's log here")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="bytes per read")
    parser.add_argument("--give-up", type=float, default=120.0, help="seconds")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = write_store(tmp_path / "s.zarr")
        expected = data.tobytes()
        server = HttpServer(tmp_path / "s.zarr").start()
        server.faults.stall(math.inf, pattern=r"^c/", fraction=args.fraction, seed=args.seed)
        mountpoint = tmp_path / "mnt"
        mountpoint.mkdir()
        log_file = args.log or str(tmp_path / "mount.log")
        command = [sys.executable, "-m", "zarrfs.fuse.cli", "mount", server.url, str(mountpoint)]
        command += ["--foreground", "--log-file", log_file]
        for option in args.options:
            command += ["-o", option]
        env = {**os.environ, "ZARRFS_TIMEOUT": args.timeout, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        durations: list[float] = []
        eio = short = wrong = 0
        sizes = [int(size) for size in args.sizes.split(",")]
        pool = ThreadPoolExecutor(1)
        try:
            try:
                wait_mounted(mountpoint, process, Path(log_file))
            except (RuntimeError, TimeoutError) as exc:
                raise SystemExit(f"the mount did not come up: {exc}") from None
            rng = random.Random(args.seed)
            fd = os.open(mountpoint / "data.raw", os.O_RDONLY)
            try:
                for n in range(args.reads):
                    size = rng.choice(sizes)
                    offset = rng.randrange(0, len(expected) - size)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    t0 = time.monotonic()
                    try:
                        got = pool.submit(os.pread, fd, size, offset).result(args.give_up)
                        outcome = f"{len(got)} bytes"
                    except FutureTimeout:
                        durations.append(args.give_up)
                        print(
                            f"read {n:3d}: {size:8d} B at {offset:9d}: no answer after "
                            f"{args.give_up:g} s; giving up"
                        )
                        break
                    except OSError as exc:
                        if exc.errno != errno.EIO:
                            raise
                        got, outcome = None, "EIO"
                        eio += 1
                    dt = time.monotonic() - t0
                    durations.append(dt)
                    if got is not None:
                        wrong += got != expected[offset : offset + len(got)]
                        short += len(got) != size
                    print(f"read {n:3d}: {size:8d} B at {offset:9d}: {dt:6.2f} s  {outcome}")
            finally:
                os.close(fd)
        finally:
            pool.shutdown(wait=False)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
            subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True)
            server.close()
        print(
            f"\nZARRFS_TIMEOUT={args.timeout}, {args.fraction:.0%} of chunk requests stalling, "
            f"{len(durations)} reads (sizes {args.sizes}): median {statistics.median(durations):.2f} s, "
            f"p90 {percentile(durations, 0.9):.2f}, p99 {percentile(durations, 0.99):.2f}, "
            f"max {max(durations):.2f}; {eio} EIO, {short} short, {wrong} wrong"
        )
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
