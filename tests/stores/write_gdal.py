"""Writes tests/stores/gdal/lzma.zarr with GDAL's Zarr driver (run with Debian's system Python,
which has the python3-gdal binding: ``/usr/bin/python3 tests/stores/write_gdal.py``).

A consolidated Zarr v2 group of small int16 and float32 arrays, one per compressor GDAL offers,
among them LZMA with a delta filter (``{"id": "lzma", "preset": 6, "delta": 1}``, which
numcodecs' LZMA does not take). ``values.npz`` beside the store holds what was written.
"""

import shutil
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
HERE = Path(__file__).resolve().parent
OUT = HERE / "gdal" / "lzma.zarr"
COMPRESSORS = {
    "lzma_delta": ["COMPRESS=LZMA", "LZMA_PRESET=6", "LZMA_DELTA=1"],
    "lzma": ["COMPRESS=LZMA"],
    "zlib": ["COMPRESS=ZLIB"],
    "blosc": ["COMPRESS=BLOSC"],
    "none": ["COMPRESS=NONE"],
}


def values(name: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, name)))
    return (rng.normal(size=(5, 7)) * 1000).astype(dtype)


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    ds = gdal.GetDriverByName("ZARR").CreateMultiDimensional(str(OUT), [], ["FORMAT=ZARR_V2"])
    root = ds.GetRootGroup()
    dims = [root.CreateDimension("y", None, None, 5), root.CreateDimension("x", None, None, 7)]
    written = {}
    for name, options in COMPRESSORS.items():
        for dtype, gdal_type in (("int16", gdal.GDT_Int16), ("float32", gdal.GDT_Float32)):
            key = f"{name}_{dtype}"
            array = root.CreateMDArray(
                key, dims, gdal.ExtendedDataType.Create(gdal_type), [*options, "BLOCKSIZE=3,4"]
            )
            written[key] = values(key, dtype)
            array.Write(written[key])
    del root, ds  # closing writes .zmetadata
    np.savez(OUT.parent / "values.npz", **written)
    print(f"GDAL {gdal.__version__}, Python {sys.version.split()[0]}: wrote {OUT}")


if __name__ == "__main__":
    main()
