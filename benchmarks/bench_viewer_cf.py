"""The viewer on a CF-packed variable (issue 21's target: slider steps with decoded values,
median under 50 ms on local data), offscreen, window 1400 x 900.

A local store of ``tas`` (time 12, lat 4096, lon 4096) int16 with ``scale_factor`` 0.01,
``add_offset`` 273.15 and ``_FillValue`` -32768 over a third of the plane (an "ocean"), chunks
1 x 1024 x 1024, written by zarr-python with CF attributes. Slider steps (warm, each neighbour
prefetched, as a user pauses) drawn decoded (the default), then with "Raw" on (the stored
integers, fill still masked), then decoded again; and the same steps on an unpacked uint16 copy
without CF attributes (the viewer's ordinary path) as the yardstick.

Run: ``QT_QPA_PLATFORM=offscreen python benchmarks/bench_viewer_cf.py``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402
from _common import viewer_bench_main, wait_for  # noqa: E402

SHAPE = (12, 4096, 4096)
CHUNKS = (1, 1024, 1024)
ATTRS = {
    "scale_factor": 0.01,
    "add_offset": 273.15,
    "_FillValue": -32768,
    "units": "K",
    "long_name": "Near-Surface Air Temperature",
}


def stored_plane(t: int) -> np.ndarray:
    yy, xx = np.mgrid[0 : SHAPE[1], 0 : SHAPE[2]].astype(np.float32)
    kelvin = 260 + 30 * np.sin(yy / 700 + t / 5) * np.cos(xx / 900) + t * 0.1
    packed = np.rint((kelvin - 273.15) / 0.01).astype(np.int16)
    ocean = (yy - 2500) ** 2 + (xx - 2000) ** 2 < 1300**2
    packed[ocean] = -32768
    return packed


def write(path: Path, cf: bool) -> None:
    import zarr

    if (path / "zarr.json").exists():
        return
    arr = zarr.create_array(
        str(path),
        shape=SHAPE,
        chunks=CHUNKS,
        dtype="int16" if cf else "uint16",
        fill_value=-32768 if cf else 0,
        dimension_names=["time", "lat", "lon"],
        attributes=ATTRS if cf else {},
    )
    for t in range(SHAPE[0]):
        plane = stored_plane(t)
        arr[t] = plane if cf else plane.view(np.uint16)


def steps(app, view, done, count=10) -> list[tuple[float, float]]:
    """(wall seconds, GUI-thread CPU seconds) per step: the CPU time is what the viewer's own
    work costs, less moved by other processes on a loaded machine than the wall time."""
    times = []
    for _ in range(count):
        done.clear()
        t, cpu = time.perf_counter(), time.thread_time()
        view.step(1 if view.state.indices[0] < SHAPE[0] - 1 else -SHAPE[0] + 1)
        wait_for(app, lambda: done, 30)
        times.append((time.perf_counter() - t, time.thread_time() - cpu))
        wait_for(app, lambda: False, 0.15)  # the prefetch of the next plane, as a user pauses
    return times


def shown_correctly(view) -> bool:
    """The decoded plane on screen equals the stored values decoded by hand (fill: NaN)."""
    g, t = view.controller.request.geometry, view.state.indices[0]
    s = int(g.sy)
    stored = stored_plane(t)[g.y0 : g.y0 + g.ny * s : s, g.x0 : g.x0 + g.nx * s : s]
    expected = np.where(stored == -32768, np.nan, stored * 0.01 + 273.15)
    return bool(np.array_equal(view.image_item.image, expected, equal_nan=True))


def run(app, data: Path, rounds: int = 2) -> dict:
    """Rounds of steps on the plain copy, the packed variable decoded, and raw, in turn (every
    chunk in the cache after the first round: what is compared is the viewer's own work)."""
    import zarrfs.engine as engine
    from zarrfs.viewer.main_window import MainWindow

    packed, plain = data / "cf_tas_4096.zarr", data / "cf_plain_4096.zarr"
    write(packed, True)
    write(plain, False)
    engine.set_cache_size(2 * 2**30)  # both stores stay in the cache
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    view = window.image
    done = []
    view.controller.finished.connect(lambda g: done.append(g))
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "decoded": [], "raw": []}
    correct = []
    for _round in range(rounds):
        for label, path in (("plain", plain), ("decoded", packed), ("raw", packed)):
            done.clear()
            window.open_store(str(path), {})
            wait_for(app, lambda: done and view.state is not None, 60)
            if label == "raw":
                done.clear()
                view.cf_tools.raw_check.setChecked(True)
                wait_for(app, lambda: done, 30)
            times[label] += steps(app, view, done)
            if label == "decoded":
                correct.append(shown_correctly(view))
    stride = int(view.controller.request.geometry.sy)
    window.close()

    def median_ms(values, which: int) -> float:
        return round(1000 * float(np.median([v[which] for v in values])), 1)

    medians = {f"{k}_step_median_ms": median_ms(v, 0) for k, v in times.items()}
    return {
        **medians,
        **{f"{k}_step_gui_cpu_median_ms": median_ms(v, 1) for k, v in times.items()},
        "last_round_ms": {
            k: [round(1000 * wall) for wall, _ in v[len(v) // rounds :]] for k, v in times.items()
        },
        "decoded_image_correct": all(correct),
        "stride": stride,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "target_met": {"decoded_step_median_under_50ms": medians["decoded_step_median_ms"] < 50},
    }


def main() -> int:
    return viewer_bench_main(run)


if __name__ == "__main__":
    raise SystemExit(main())
