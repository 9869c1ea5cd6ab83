"""Write the demo stores shipped in ``resources/``: ``demo.zarr`` (Zarr v3) and ``demo_v2.zarr``.

A dev-time script (it needs zarr-python 3, which zarrfs itself never imports). The output is
committed, so that the README, the tests and a first ``zarrfs view resources/demo.zarr`` all have
something real to look at that was written by an independent implementation. Every random number
comes from a seeded generator, so running the script again rewrites the same bytes.

``demo.zarr`` (v3)::

    /                     root group, attributes
    volumes/              group, attributes
      phantom             64x256x256 uint16, shards of 32x128x128 holding 16x64x64 chunks, zstd
    images/
      cells/              OME-Zarr NGFF 0.5 multiscale image, axes c/y/x, units on y and x
        0 1 2 3           2x512x512 .. 2x64x64 uint8
    tables/               group, attributes
      names               variable-length UTF-8 strings
      records             structured (id int32, x float32, y float32, area float64)
      profile             1-D float64
      answer              0-d int64

Why the v2 data lives in a separate store: a Zarr v3 hierarchy is defined by ``zarr.json``
documents; the v3 core spec has no notion of a v2 subtree, and a directory holding ``.zgroup``
inside a v3 store is, to a v3 reader, either nothing or an implicit group with no metadata.
zarr-python will happily write one there, but no reader is required to find it, so the demo keeps
one format per store and puts the v2 examples in ``demo_v2.zarr``::

    /                     v2 group, attributes
      counts              2-D int32, blosc(lz4, shuffle), dimension_separator "/"
      nested/             v2 group, attributes
        ramp              1-D float32, blosc(zstd), dimension_separator "/"

Run from the repository root: ``python resources/make_demo.py``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20240611


def phantom_volume(shape=(64, 256, 256), seed=SEED, noise=1.0) -> np.ndarray:
    """A smooth 3-D phantom: a hollow ellipsoid and a few blobs on a flat background, with noise.

    Every shape has compact support and the noise grows with the signal (like photon noise) and
    is absent from the background, so any plane looks like an image while the sharded,
    zstd-compressed array stays around a megabyte.
    """
    rng = np.random.default_rng(seed)
    z, y, x = np.meshgrid(
        *(np.linspace(-1, 1, n, dtype=np.float32) for n in shape), indexing="ij", sparse=True
    )
    r = np.sqrt(z**2 + (y * 1.1) ** 2 + (x * 0.9) ** 2)
    vol = 1800.0 * np.clip(1 - ((r - 0.7) / 0.08) ** 2, 0, None)  # the shell
    for _ in range(7):
        cz, cy, cx = rng.uniform(-0.5, 0.5, 3)
        width = rng.uniform(0.12, 0.3)
        height = rng.uniform(1500, 3500)
        d2 = ((z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2) / width**2
        vol = vol + height * np.clip(1 - d2, 0, None) ** 2
    sigma = noise * np.sqrt(vol / 100)
    vol = vol + rng.normal(0, 1, size=shape).astype(np.float32) * sigma + 100
    return np.clip(np.rint(vol), 0, 65535).astype(np.uint16)


def cells_image(size=512, n_cells=40, seed=SEED + 1) -> np.ndarray:
    """A two-channel picture of cells: channel 0 nuclei, channel 1 cytoplasm with a bright rim."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    nuclei = np.zeros((size, size), np.float32)
    cyto = np.zeros((size, size), np.float32)
    for _ in range(n_cells):
        cy, cx = rng.uniform(20, size - 20, 2)
        a, b = rng.uniform(18, 34, 2)
        theta = rng.uniform(0, np.pi)
        c, s = np.cos(theta), np.sin(theta)
        u = ((xx - cx) * c + (yy - cy) * s) / a
        v = (-(xx - cx) * s + (yy - cy) * c) / b
        d = np.sqrt(u * u + v * v)
        cell = np.clip(1.2 - d, 0, 1) ** 0.5 * (d < 1)
        rim = np.exp(-(((d - 0.95) / 0.06) ** 2))
        cyto = np.maximum(cyto, 90 * cell + 120 * rim)
        nucleus = np.clip(1 - (d / 0.45) ** 2, 0, 1)
        nuclei = np.maximum(nuclei, 230 * nucleus**0.6 * rng.uniform(0.7, 1.0))
    img = np.stack([nuclei, cyto]) + 10
    img += rng.normal(0, 1.5, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def downsample2(img: np.ndarray) -> np.ndarray:
    """Mean of 2x2 blocks over the last two axes (the OME pyramid levels)."""
    *lead, h, w = img.shape
    blocks = img[..., : h // 2 * 2, : w // 2 * 2].reshape(*lead, h // 2, 2, w // 2, 2)
    return np.rint(blocks.mean(axis=(-3, -1))).astype(img.dtype)


def ome_attrs(levels: int, pixel_size: float) -> dict:
    """NGFF 0.5 ``ome`` attributes for a c/y/x pyramid halving y and x at each level."""
    datasets = []
    for i in range(levels):
        f = 2**i
        datasets.append(
            {
                "path": str(i),
                "coordinateTransformations": [
                    {"type": "scale", "scale": [1.0, pixel_size * f, pixel_size * f]},
                    {
                        "type": "translation",
                        "translation": [0.0, pixel_size * (f - 1) / 2, pixel_size * (f - 1) / 2],
                    },
                ],
            }
        )
    return {
        "version": "0.5",
        "multiscales": [
            {
                "name": "cells",
                "axes": [
                    {"name": "c", "type": "channel"},
                    {"name": "y", "type": "space", "unit": "micrometer"},
                    {"name": "x", "type": "space", "unit": "micrometer"},
                ],
                "datasets": datasets,
            }
        ],
        "omero": {
            "channels": [
                {"label": "nuclei", "color": "0000FF", "window": {"start": 0, "end": 255}},
                {"label": "cytoplasm", "color": "00FF00", "window": {"start": 0, "end": 255}},
            ],
        },
    }


def write_v3(path: Path) -> None:
    import zarr
    from zarr.codecs import BloscCodec, ZstdCodec

    root = zarr.open_group(
        path,
        mode="w",
        zarr_format=3,
        attributes={
            "title": "zarrfs demo store",
            "description": "Small examples of Zarr v3 features, written by zarr-python 3.",
            "generator": "resources/make_demo.py",
            "seed": SEED,
        },
    )

    volumes = root.create_group("volumes", attributes={"modality": "synthetic", "units": "counts"})
    vol = phantom_volume()
    phantom = volumes.create_array(
        "phantom",
        shape=vol.shape,
        dtype=vol.dtype,
        chunks=(16, 64, 64),
        shards=(32, 128, 128),
        compressors=ZstdCodec(level=5),
        fill_value=0,
        dimension_names=("z", "y", "x"),
        attributes={"description": "hollow sphere with Gaussian blobs", "voxel_size_um": 0.5},
    )
    phantom[...] = vol

    images = root.create_group("images", attributes={"description": "OME-Zarr images"})
    cells = cells_image()
    levels = [cells]
    for _ in range(3):
        levels.append(downsample2(levels[-1]))
    group = images.create_group("cells", attributes={"ome": ome_attrs(len(levels), 0.325)})
    for i, level in enumerate(levels):
        arr = group.create_array(
            str(i),
            shape=level.shape,
            dtype=level.dtype,
            chunks=(1, 128, 128),
            compressors=BloscCodec(cname="zstd", clevel=5, shuffle="bitshuffle"),
            fill_value=0,
            dimension_names=("c", "y", "x"),
        )
        arr[...] = level

    tables = root.create_group("tables", attributes={"description": "non-image arrays"})
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "ünïcödé",
        "🙂 emoji",
        "",
        "omega",
    ]
    names = tables.create_array("names", shape=(len(words),), dtype=str, chunks=(8,))
    names[...] = np.array(words, dtype=object)

    rng = np.random.default_rng(SEED + 2)
    rec_dtype = np.dtype([("id", "<i4"), ("x", "<f4"), ("y", "<f4"), ("area", "<f8")])
    recs = np.zeros(100, rec_dtype)
    recs["id"] = np.arange(100)
    recs["x"] = rng.uniform(0, 512, 100)
    recs["y"] = rng.uniform(0, 512, 100)
    recs["area"] = rng.uniform(200, 1500, 100)
    records = tables.create_array("records", shape=recs.shape, dtype=rec_dtype, chunks=(32,))
    records[...] = recs

    t = np.linspace(0, 4 * np.pi, 1000)
    profile = tables.create_array(
        "profile",
        shape=t.shape,
        dtype="float64",
        chunks=(256,),
        fill_value=float("nan"),
        attributes={"units": "a.u."},
    )
    profile[...] = np.sin(t) * np.exp(-t / 8)

    answer = tables.create_array("answer", shape=(), dtype="int64", fill_value=0)
    answer[...] = 42


def write_v2(path: Path) -> None:
    import numcodecs
    import zarr

    root = zarr.open_group(path, mode="w", zarr_format=2)
    root.attrs.update(
        {"title": "zarrfs demo store (Zarr v2)", "generator": "resources/make_demo.py"}
    )
    counts = root.create_array(
        "counts",
        shape=(100, 120),
        dtype="int32",
        chunks=(32, 40),
        chunk_key_encoding={"name": "v2", "separator": "/"},
        compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        fill_value=-1,
        attributes={"description": "row * 1000 + column"},
    )
    counts[...] = np.arange(100, dtype=np.int32)[:, None] * 1000 + np.arange(120, dtype=np.int32)
    nested = root.create_group("nested")
    nested.attrs.update({"level": 1})
    ramp = nested.create_array(
        "ramp",
        shape=(500,),
        dtype="float32",
        chunks=(128,),
        chunk_key_encoding={"name": "v2", "separator": "/"},
        compressors=numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
        fill_value=0.0,
    )
    ramp[...] = np.linspace(0, 1, 500, dtype=np.float32)


def main(argv: list[str] | None = None) -> int:
    import warnings

    out = Path(argv[0]) if argv else HERE
    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
    warnings.filterwarnings("ignore", message=".*not part of the Zarr format 3.*")
    for name, writer in (("demo.zarr", write_v3), ("demo_v2.zarr", write_v2)):
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        writer(target)
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
        print(f"wrote {target} ({size / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
