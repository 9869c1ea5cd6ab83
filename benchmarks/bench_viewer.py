"""Drive the viewer offscreen and report: first pixels, slider steps, peak memory.

1. Time from ``view`` (window created, store opened) to the first painted pixels of a plane of a
   10^4 x 10^4 x 10^4 uint16 array served over loopback HTTP with 20 ms per request. The chunks
   are generated on request (nothing that size is stored). First pixels are the coarse
   preview's (a view touching more than 64 chunks) or else the first screen-resolution tile's.
2. Time per slider step on a 4096 x 4096 plane of a local store (warm: stepping through planes
   as a user does, neighbours prefetched; cold: jumping to a far plane).
3. Peak resident memory against the cache budget.
4. The longest the window stops answering while a zoomed-out plane of 40,000 chunks (none
   stored) loads: one chunk event each.
5. An OME-Zarr image of 3 channels as a composite (``bench_viewer_composite.py``): first
   composite pixels over HTTP, toggling a channel, changing a window, z steps.

Run: ``QT_QPA_PLATFORM=offscreen python benchmarks/bench_viewer.py [--cache-mb 512]``.
Targets: first pixels < 0.5 s; slider steps < 50 ms; memory < cache budget + 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402
from _common import close_window, shown_window, wait_for  # noqa: E402

BIG = 10_000
BIG_CHUNK = (1, 1000, 1000)


def big_array_source():
    """``generate(key)``: zarr.json of the huge array and any of its chunks, made on request."""
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [BIG, BIG, BIG],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(BIG_CHUNK)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "fill_value": 0,
        "dimension_names": ["z", "y", "x"],
        "attributes": {},
    }
    yy, xx = np.mgrid[0 : BIG_CHUNK[1], 0 : BIG_CHUNK[2]]
    base = ((yy + xx) % 4096).astype("<u2")

    def generate(key: str) -> bytes | None:
        key = key.strip("/")
        if key == "zarr.json":
            return json.dumps(meta).encode()
        parts = key.split("/")
        if len(parts) == 4 and parts[0] == "c":
            z, cy, cx = (int(p) for p in parts[1:])
            return (base + np.uint16((z * 7 + cy * 131 + cx * 17) % 60000)).tobytes()
        return None

    return generate


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ServedElsewhere:
    """The loopback HTTP server (tests/servers.py) in a child process, so its buffers are not
    counted in this process's memory (the viewer's): ``source`` is a directory, or "big" for
    :func:`big_array_source`. ``url`` and ``close()`` as the server's own."""

    def __init__(self, source: str, latency: float):
        import subprocess

        self._child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(source), str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self._child.stdout.readline().strip()
        if not self.url:
            raise SystemExit(f"the server for {source} did not start")

    def requests(self) -> int:
        """How many requests the server has answered."""
        self._child.stdin.write("requests\n")
        self._child.stdin.flush()
        return int(self._child.stdout.readline())

    def close(self) -> None:
        self._child.stdin.close()  # the child ends when its stdin does
        self._child.wait(timeout=30)


def _serve(source: str, latency: float) -> None:
    from tests.servers import HttpServer

    server = HttpServer(big_array_source() if source == "big" else Path(source), latency=latency)
    server.start()
    print(server.url, flush=True)
    for _line in sys.stdin:  # "requests": how many so far
        print(sum(server.stats.requests.values()), flush=True)
    server.close()


def bench_first_pixels(app, latency: float) -> dict:
    from zarrfs.viewer.main_window import MainWindow

    server = ServedElsewhere("big", latency)
    try:
        painted, exact, finished = [], [], []
        t0 = time.perf_counter()
        window = MainWindow()
        window.resize(1400, 900)
        window.show()
        controller = window.image.controller

        def on_painted(_generation):
            # pixels: the coarse preview's or the screen-resolution read's
            if controller.loaded is not None and controller.loaded.any():
                exact.append(time.perf_counter())
                painted.append(exact[-1])
            elif controller.approx is not None and controller.approx.any():
                painted.append(time.perf_counter())

        controller.painted.connect(on_painted)
        controller.finished.connect(lambda g: finished.append(time.perf_counter()))
        marks = {}
        window.store_opened.connect(lambda u: marks.setdefault("opened", time.perf_counter()))
        window.node_shown.connect(lambda p: marks.setdefault("node_shown", time.perf_counter()))
        window.open_store(server.url, {})
        ok = wait_for(app, lambda: painted, 30)
        wait_for(app, lambda: finished, 60)
        request = controller.request
        result = {
            "first_pixels_s": painted[0] - t0 if ok else None,
            "first_exact_pixels_s": exact[0] - t0 if exact else None,
            "preview_chunks": len({c for t in request.coarse_tiles for c in t.chunk_coords})
            if request
            else 0,
            "full_plane_s": finished[0] - t0 if finished else None,
            "requests": server.requests(),
            "tiles": len(request.tiles) if request else 0,
            "stride": request.geometry.sy if request else None,
            "image_shape": list(controller.display.shape)
            if controller.display is not None
            else None,
        }
        result["store_opened_s"] = marks.get("opened", t0) - t0
        result["node_shown_s"] = marks.get("node_shown", t0) - t0
        close_window(app, window)
        return result
    finally:
        server.close()


def expected_plane(z: int, rows: slice, cols: slice) -> np.ndarray:
    yy, xx = np.mgrid[rows, cols]
    return ((yy * 3 + xx + z * 50) % 4096).astype(np.uint16)


def write_local(path: Path, planes: int) -> None:
    """Write the local store in a child process, so its memory is not counted here (kept
    from an earlier run only when it has ``planes`` planes: the steps assume as many)."""
    import json
    import shutil
    import subprocess

    document = path / "zarr.json"
    if document.exists():
        if json.loads(document.read_text())["shape"][0] == planes:
            return
        shutil.rmtree(path)

    subprocess.run([sys.executable, __file__, "--write-local", str(path), str(planes)], check=True)


def _write_local(path: Path, planes: int) -> None:
    import zarr

    arr = zarr.create_array(
        path,
        shape=(planes, 4096, 4096),
        chunks=(1, 1024, 1024),
        dtype="uint16",
        dimension_names=["z", "y", "x"],
    )
    yy, xx = np.mgrid[0:4096, 0:4096]
    for z in range(planes):
        arr[z] = ((yy * 3 + xx + z * 50) % 4096).astype(np.uint16)


def bench_slider(app, path: Path, planes: int) -> dict:
    window, done = shown_window(app, str(path))
    view = window.image
    warm, cold = [], []
    for _z in range(1, min(planes, 12)):
        done.clear()
        t = time.perf_counter()
        view.step(1)
        wait_for(app, lambda: done, 30)
        warm.append(time.perf_counter() - t)
        wait_for(
            app, lambda: False, 0.15
        )  # let the prefetch of the next plane run, as a user pauses
    for z in (planes - 1, 0, planes // 2):
        done.clear()
        t = time.perf_counter()
        view.axes.sliders[0].setValue(z)
        wait_for(app, lambda: done, 30)
        cold.append(time.perf_counter() - t)
    g = view.controller.request.geometry
    s = int(g.sy)
    expected = expected_plane(
        planes // 2, slice(g.y0, g.y0 + g.ny * s, s), slice(g.x0, g.x0 + g.nx * s, s)
    )
    correct = np.array_equal(view.image_item.image, expected)
    close_window(app, window)
    return {
        "warm_step_ms_median": 1000 * float(np.median(warm)),
        "warm_step_ms_max": 1000 * max(warm),
        "cold_jump_ms": [1000 * c for c in cold],
        "stride": s,
        "image_correct": bool(correct),
    }


def bench_event_storm(app, path: Path, side: int = 100_000, chunk: int = 500) -> dict:
    """The longest the window stops answering (gaps between ticks of a 5 ms timer) while a
    ``side`` x ``side`` array of chunks none of which is stored opens zoomed out: one chunk
    event per chunk, 40,000 by default."""
    from PySide6.QtCore import QTimer

    from zarrfs.viewer.app import is_idle
    from zarrfs.viewer.main_window import MainWindow

    if not (path / "zarr.json").exists():
        path.mkdir(parents=True, exist_ok=True)
        (path / "zarr.json").write_text(
            json.dumps(
                {
                    "zarr_format": 3,
                    "node_type": "array",
                    "shape": [side, side],
                    "data_type": "uint8",
                    "chunk_grid": {
                        "name": "regular",
                        "configuration": {"chunk_shape": [chunk, chunk]},
                    },
                    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                    "codecs": [{"name": "bytes", "configuration": {}}],
                    "fill_value": 0,
                    "attributes": {},
                }
            )
        )
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    t0 = time.perf_counter()
    window.open_store(str(path), {})
    wait_for(app, lambda: time.perf_counter() - t0 > 0.3 and is_idle(window), 60)
    total = time.perf_counter() - t0
    timer.stop()
    gaps = sorted((b - a for a, b in zip(ticks, ticks[1:], strict=False)), reverse=True)
    states = len(window.image.controller.grid_item.states())
    close_window(app, window)
    return {
        "chunks": states,
        "loaded_s": round(total, 2),
        "longest_freeze_ms": round(1000 * gaps[0]) if gaps else None,
        "third_longest_freeze_ms": round(1000 * gaps[2]) if len(gaps) > 2 else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-mb", type=int, default=512)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--planes", type=int, default=16)
    parser.add_argument("--data", default=str(REPO / "benchmarks" / "_data"))
    args = parser.parse_args()
    t_import = time.perf_counter()
    import zarrfs.engine as engine
    from zarrfs.viewer.app import make_app

    app = make_app()
    import_s = time.perf_counter() - t_import
    engine.set_cache_size(args.cache_mb * 2**20)
    baseline = rss_mb()
    first = bench_first_pixels(app, args.latency)
    after_first = rss_mb()
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    local = data / "slider_4096.zarr"
    write_local(local, args.planes)
    slider = bench_slider(app, local, args.planes)
    after_slider = rss_mb()
    storm = bench_event_storm(app, data / "sparse_100k.zarr")
    after_storm = rss_mb()
    import bench_viewer_composite

    composite = bench_viewer_composite.run(app, data, args.latency)
    peak = rss_mb()  # the process's peak, the composite included
    report = {
        "qt_and_viewer_import_s": round(import_s, 3),
        "first_pixels": first,
        "slider": slider,
        "event_storm": storm,
        "composite": composite,
        "memory": {
            "baseline_rss_mb": round(baseline),
            "peak_rss_mb": round(peak),
            "peak_after_remote_plane_mb": round(after_first),
            "peak_after_slider_mb": round(after_slider),
            "peak_after_event_storm_mb": round(after_storm),
            "cache_budget_mb": args.cache_mb,
            "peak_over_baseline_mb": round(peak - baseline),
        },
        "targets_met": {
            "first_pixels_under_0.5s": bool(
                first["first_pixels_s"] is not None and first["first_pixels_s"] < 0.5
            ),
            "warm_slider_step_under_50ms": slider["warm_step_ms_median"] < 50,
            "memory_under_budget_plus_300MB": peak < args.cache_mb + 300,
        },
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        _serve(sys.argv[2], float(sys.argv[3]))
        raise SystemExit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "--write-local":
        _write_local(Path(sys.argv[2]), int(sys.argv[3]))
        raise SystemExit(0)
    raise SystemExit(main())
