"""OME-Zarr images written by the real tools (ome-zarr-py, ngff-zarr), with what was fed to
them, so that tests compare zarrfs's reading with the writer's input.

``write_ome_zarr_py(dir, version)``: 3 channels x 4 z x 48 x 64 uint16 (``czyx``), 2 levels,
``omero`` with labels, colours, windows (the third channel inactive), ``rdefs`` defaultZ 2, pixel
sizes z 2, y and x 0.5 micrometer, and a label image ``nuclei`` with ``image-label`` colours and
properties. ``write_ngff_zarr(dir, version)``: 2 channels x 4 z x 64 x 64, ngff-zarr's nested
dataset paths (``scale0/image``), no ``omero``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

OMERO = {
    "channels": [
        {
            "label": "DAPI",
            "color": "0000FF",
            "window": {"start": 100, "end": 3000, "min": 0, "max": 65535},
            "active": True,
        },
        {
            "label": "GFP",
            "color": "00FF00",
            "window": {"start": 0, "end": 2000, "min": 0, "max": 65535},
            "active": True,
        },
        {
            "label": "RFP",
            "color": "FF0000",
            "window": {"start": 500, "end": 4000, "min": 0, "max": 65535},
            "active": False,
        },
    ],
    "rdefs": {"defaultZ": 2, "defaultT": 0},
}
SCALE = {"z": 2.0, "y": 0.5, "x": 0.5}
UNITS = {"z": "micrometer", "y": "micrometer", "x": "micrometer"}
LABEL_COLORS = [{"label-value": 7, "rgba": [255, 0, 0, 255]}]
LABEL_PROPERTIES = [{"label-value": 7, "class": "mitotic"}]


@dataclass
class WrittenImage:
    path: Path
    data: np.ndarray  # level 0 as fed to the writer
    labels: np.ndarray | None = None


def image_data() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 4000, (3, 4, 48, 64), dtype=np.uint16)


def label_data() -> np.ndarray:
    labels = np.zeros((4, 48, 64), np.uint32)
    labels[1, 5:10, 5:10] = 7
    labels[2, 20:30, 30:40] = 40
    return labels


def write_ome_zarr_py(directory: Path, version: str) -> WrittenImage:
    import zarr
    from ome_zarr.format import FormatV04, FormatV05
    from ome_zarr.writer import write_image, write_labels

    fmt = {"0.4": FormatV04, "0.5": FormatV05}[version]()
    path = Path(directory) / f"ome_zarr_py_{version}.zarr"
    data, labels = image_data(), label_data()
    root = zarr.open_group(str(path), mode="w", zarr_format=fmt.zarr_format)
    with warnings.catch_warnings():  # "no scale for the channel axis: 1.0"
        warnings.simplefilter("ignore")
        write_image(
            data,
            root,
            axes="czyx",
            fmt=fmt,
            scale_factors=(2,),
            scale=SCALE,
            axes_units=UNITS,
            omero=OMERO,
        )
        write_labels(
            labels,
            root,
            name="nuclei",
            axes="zyx",
            fmt=fmt,
            scale_factors=(2,),
            label_metadata={"colors": LABEL_COLORS, "properties": LABEL_PROPERTIES},
        )
    return WrittenImage(path, data, labels)


def write_ngff_zarr(directory: Path, version: str) -> WrittenImage:
    import ngff_zarr

    path = Path(directory) / f"ngff_zarr_{version}.zarr"
    data = (np.arange(2 * 4 * 64 * 64) % 1000).astype(np.uint16).reshape(2, 4, 64, 64)
    image = ngff_zarr.to_ngff_image(
        data,
        dims=["c", "z", "y", "x"],
        scale=SCALE,
        translation={"z": 0.0, "y": 0.0, "x": 0.0},
        axes_units=UNITS,
    )
    ngff_zarr.to_ngff_zarr(
        str(path), ngff_zarr.to_multiscales(image, scale_factors=[2]), version=version
    )
    return WrittenImage(path, data)


def write_czyx(path: Path, data: np.ndarray, chunks, channels, **omero) -> None:
    """A one-level OME-Zarr 0.4 image (c, z, y, x) written by zarr-python, with an ``omero``
    channel list of ``(color, start, end)``: what the composite tests draw."""
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_array("0", data=data, chunks=chunks)
    axes = [{"name": "c", "type": "channel"}] + [{"name": n, "type": "space"} for n in "zyx"]
    root.attrs.update(
        {
            "multiscales": [{"version": "0.4", "axes": axes, "datasets": [{"path": "0"}]}],
            "omero": {
                "channels": [
                    {"color": color, "window": {"start": start, "end": end}}
                    for color, start, end in channels
                ],
                **omero,
            },
        }
    )
