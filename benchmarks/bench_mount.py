"""Reading through the mount vs. reading through the engine directly, in one run.

Writes a large synthetic store (zarr-python, zstd, a few hundred MB decoded), then prints medians
of repeats for: the engine's ``read_flat`` over the whole array in a fresh process (the state of a
fresh mount daemon), with glibc's default allocator thresholds and with the daemon's;
``cat data.npy > /dev/null`` and ``numpy.load`` through a fresh mount
(cold page cache, cold engine cache); a warm re-read (page cache); ``ls -lR`` of a 1,000-node consolidated hierarchy over the loopback
HTTP server with 20 ms latency; and the first byte of a plane file over that server.

    /work/.venv/bin/python benchmarks/bench_mount.py [--size-mb 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import zarrfs.engine as engine  # noqa: E402
from tests.servers import HttpServer  # noqa: E402
from zarrfs.fuse.daemon import is_mounted  # noqa: E402


def write_big(root: Path, size_mb: int, chunk_rows: int = 256) -> tuple[str, int]:
    import zarr

    rows = size_mb * (1 << 20) // (4096 * 4)
    array = zarr.create_array(
        str(root),
        name="big",
        shape=(rows, 4096),
        chunks=(chunk_rows, 1024),  # 4 KiB a row of a chunk: 256 rows 1 MiB, 8 rows 32 KiB
        dtype="float32",
        overwrite=True,
    )
    rng = np.random.default_rng(0)
    block = rng.normal(size=(256, 4096)).astype(np.float32).round(2)
    for start in range(0, rows, 256):
        array[start : start + 256] = block[: min(256, rows - start)]
    return "big", rows * 4096 * 4


def write_hierarchy(root: Path, nodes: int = 1000) -> None:
    import zarr

    group = zarr.open_group(str(root), mode="w")
    for g in range(nodes // 10):
        sub = group.create_group(f"g{g:03d}")
        for a in range(9):
            sub.create_array(f"a{a}", shape=(8, 64, 64), chunks=(1, 64, 64), dtype="uint16")
    zarr.consolidate_metadata(str(root))


class Mount:
    def __init__(self, url: str, *options: str):
        self.path = Path(tempfile.mkdtemp(prefix="zarrfs-bench-"))
        args = [sys.executable, "-m", "zarrfs.fuse.cli", "mount", url, str(self.path)]
        for option in options:
            args += ["-o", option]
        subprocess.run(args, check=True)

    def daemon_peak_mb(self) -> float | None:
        """The mount daemon's peak resident memory so far (VmHWM), MiB."""
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if b"mount" not in argv or str(self.path).encode() not in argv:
                    continue
                for line in (proc / "status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
            except OSError:
                continue
        return None

    def close(self) -> None:
        subprocess.run(["fusermount3", "-u", str(self.path)], check=False)
        deadline = time.monotonic() + 10
        while is_mounted(str(self.path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.rmdir(self.path)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def median_of(repeats: int, action, setup=None) -> float:
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        times.append(timed(action))
    return statistics.median(times)


def engine_direct(url: str, name: str) -> None:
    array = engine.open(url)[name]
    step = (32 << 20) // 4
    for start in range(0, array.size, step):
        array.read_flat(start, min(array.size, start + step))


def engine_direct_fresh(url: str, name: str, daemon_allocator: bool = False) -> float:
    """Seconds of ``engine_direct`` in a fresh process, as a fresh mount daemon is one: the
    same empty chunk cache *and* no memory already faulted in by an earlier repeat (in one
    process, repeats 2+ reuse freed chunk buffers and run up to ~25% faster). With
    ``daemon_allocator``, the process first sets glibc's thresholds as the daemon does
    (``zarrfs.fuse.allocator``), so that the mount is also compared with an engine tuned alike."""
    code = (
        "import sys, time; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "from bench_mount import engine_direct, warm_memory\n"
        "if sys.argv[5] == '1':\n"
        "    from zarrfs.fuse.allocator import keep_freed_memory; keep_freed_memory()\n"
        "warm_memory()\n"
        "start = time.perf_counter(); engine_direct(sys.argv[3], sys.argv[4])\n"
        "print(time.perf_counter() - start)"
    )
    args = [
        sys.executable,
        "-c",
        code,
        str(REPO),
        str(REPO / "benchmarks"),
        url,
        name,
        "1" if daemon_allocator else "0",
    ]
    result = subprocess.run(args, check=True, capture_output=True, text=True)
    return float(result.stdout.split()[-1])


def back_memory(gib: int = 3) -> None:
    """Touch ``gib`` GiB once in a child process, before anything is timed.

    On a VM whose host backs guest memory lazily (this Firecracker guest), the first touch of a
    page the guest never used costs ~2 ms per MB, 20x the cost of reusing a freed page; which
    process gets fresh pages is luck, and a 256 MB ``numpy.load`` then ranged 300-680 MB/s from
    run to run. Touching memory once makes later allocations reuse backed pages, so the figures
    measure zarrfs, not the host.
    """
    code = f"import numpy as np; a = np.ones({gib} << 30, np.uint8); del a"
    subprocess.run([sys.executable, "-c", code], check=False)


def warm_memory(mib: int = 512) -> None:
    """Touch and free ``mib`` MiB in this process just before a timed read that allocates its
    result (``numpy.load``, the engine's output). The host takes back guest pages freed a while
    ago, and zeroing them again then took ``numpy.load`` 0.68 s of CPU instead of 0.12 in one
    run of four; freshly touched pages are what the next allocation gets."""
    touched = np.ones(mib << 20, np.uint8)
    del touched


def read_mounted(root: Path, name: str, options: list[str], command: str):
    """Seconds of one cold read of ``data.npy`` through a fresh mount (``cat`` or
    ``numpy.load``), the daemon's peak RSS, and for ``cat`` a warm re-read's seconds."""
    mounted = Mount(str(root), *options)
    path = mounted.path / name / "data.npy"
    cat = f"cat {path} > /dev/null"
    try:
        if command == "cat":
            seconds = timed(lambda: subprocess.run(cat, shell=True, check=True))
            warm = timed(lambda: subprocess.run(cat, shell=True, check=True))
        else:
            warm_memory()
            seconds, warm = timed(lambda: np.load(path)), None
        return seconds, mounted.daemon_peak_mb(), warm
    finally:
        mounted.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--chunk-kib",
        type=int,
        default=1024,
        help="chunk size of the big array, a multiple of 4 (rows of 1024 float32): 1024 "
        "(default) or 32 for small chunks, where per-chunk costs dominate",
    )
    parser.add_argument(
        "-o",
        dest="options",
        action="append",
        default=[],
        help="a mount option for the data.npy mounts, e.g. kernel_readahead=0 "
        "(what a mount by a user other than root gets)",
    )
    parser.add_argument(
        "--http-only", action="store_true", help="only the HTTP mounts (ls -lR, first byte)"
    )
    parser.add_argument("--no-http", action="store_true", help="only data.npy (no HTTP mounts)")
    args = parser.parse_args()
    if args.http_only:
        with tempfile.TemporaryDirectory(prefix="zarrfs-bench-") as scratch:
            for label, value, unit in bench_http(Path(scratch), args.repeats):
                print(f"{label:45s} {value:10.1f} {unit}")
        return 0
    with tempfile.TemporaryDirectory(prefix="zarrfs-bench-") as scratch:
        root = Path(scratch) / "big.zarr"
        name, nbytes = write_big(root, args.size_mb, max(1, args.chunk_kib // 4))
        mb = nbytes / 1e6
        back_memory()
        report: list[tuple[str, float, str]] = []
        # the state of a fresh mount daemon: empty chunk cache, fresh memory, warm OS page
        # cache. The four readers take turns in a new (seeded) order every repeat, so that a
        # quieter or busier minute of the machine falls on all of them alike.
        readers = {
            "engine": lambda: engine_direct_fresh(str(root), name),
            "tuned": lambda: engine_direct_fresh(str(root), name, daemon_allocator=True),
            "cat": lambda: read_mounted(root, name, args.options, "cat"),
            "np": lambda: read_mounted(root, name, args.options, "np"),
        }
        times: dict[str, list[float]] = {k: [] for k in readers}
        peaks: dict[str, list] = {"cat": [], "np": []}
        warm = 0.0
        order = random.Random(0)
        for _ in range(args.repeats):
            turns = list(readers)
            order.shuffle(turns)
            for reader in turns:
                got = readers[reader]()
                if reader in peaks:
                    seconds, peak, warm_seconds = got
                    peaks[reader].append(peak)
                    warm = warm_seconds or warm
                else:
                    seconds = got
                times[reader].append(seconds)
        direct, tuned = (statistics.median(times[k]) for k in ("engine", "tuned"))
        report.append(("engine read_flat (cold, fresh process)", mb / direct, "MB/s"))
        report.append(("  the same, daemon's allocator settings", mb / tuned, "MB/s"))
        for label, reader in (("cat data.npy (cold)", "cat"), ("numpy.load data.npy (cold)", "np")):
            value = statistics.median(times[reader])
            report.append(
                (
                    label,
                    mb / value,
                    f"MB/s  ratio to engine {direct / value:.2f}, "
                    f"to the tuned engine {tuned / value:.2f}",
                )
            )
            if None not in peaks[reader]:
                report.append(("  the mount daemon's peak RSS", max(peaks[reader]), "MiB"))
            if reader == "cat":
                report.append(("cat data.npy (warm re-read, page cache)", mb / warm, "MB/s"))
        if not args.no_http:
            report += bench_http(Path(scratch), args.repeats)
        for label, value, unit in report:
            print(f"{label:45s} {value:10.1f} {unit}")
    return 0


def bench_http(scratch: Path, repeats: int) -> list[tuple[str, float, str]]:
    """``ls -lR`` and a plane file's first byte over HTTP, through obstore (the default) and
    through fsspec (``-o so.transport=fsspec``), mounts of the two interleaved."""
    tree = scratch / "tree.zarr"
    write_hierarchy(tree)
    server = HttpServer(tree, latency=0.020).start()
    transports = {"obstore": (), "fsspec": ("so.transport=fsspec",)}
    times: dict[str, list[float]] = {t: [] for t in transports}
    first_bytes: dict[str, list[float]] = {t: [] for t in transports}
    try:
        for _ in range(repeats):
            for transport, options in transports.items():
                mounted = Mount(server.url_for(""), *options)
                try:
                    times[transport].append(
                        timed(
                            lambda root=mounted.path: subprocess.run(
                                f"ls -lR {root} > /dev/null", shell=True, check=True
                            )
                        )
                    )
                    plane = mounted.path / "g050" / "a3" / "planes" / "dim0_5.tif"
                    first_bytes[transport].append(
                        timed(lambda plane=plane: plane.open("rb").read(1))
                    )
                finally:
                    mounted.close()
    finally:
        server.close()
    results = []
    for transport in transports:
        results.append(
            (
                f"ls -lR 1,000 nodes, HTTP 20 ms, {transport}",
                statistics.median(times[transport]),
                "s",
            )
        )
        results.append(
            (
                f"first byte of a plane file, HTTP 20 ms, {transport}",
                statistics.median(first_bytes[transport]) * 1000,
                "ms",
            )
        )
    return results


if __name__ == "__main__":
    sys.exit(main())
