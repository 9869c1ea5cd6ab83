"""The bytes of array files at any offset: reads that start inside an element, and the planes
of 4-D and 5-D arrays. Through a mount, the page cache turns most reads into page-aligned ones,
so a mistake in where a read starts inside an element hides there: the file objects are read
here directly, at every offset within an element, and through a mount with a 3-byte item
(where pages start inside elements)."""

from __future__ import annotations

import io
import itertools
import os

import numpy as np
import pytest

import zarrfs.engine as engine
from zarrfs.fuse import layout
from zarrfs.fuse.options import MountOptions
from zarrfs.fuse.tree import VirtualTree

ITEMS = {  # item size: dtype
    1: "u1",
    2: "<i2",
    3: "S3",
    4: "<f4",
    8: "<i8",
    12: [("a", "<i4"), ("b", "<f8")],
}


def _values(dtype, count: int) -> np.ndarray:
    """Values whose every byte differs from its neighbours."""
    raw = np.random.default_rng(7).integers(0, 256, count * np.dtype(dtype).itemsize, np.uint8)
    return raw.view(np.dtype(dtype)).copy()


def _tree(root) -> VirtualTree:
    engine.clear_caches()
    return VirtualTree(lambda: engine.open(str(root)), MountOptions())


@pytest.mark.parametrize("itemsize", list(ITEMS))
def test_reads_starting_inside_an_element(zarr_writer, itemsize):
    data = _values(ITEMS[itemsize], 40)
    written = zarr_writer(data, chunks=(7,), zarr_format=2, compressors=None)
    tree = _tree(written.root)
    stored = data.tobytes()
    for name in ("data.raw", "data.npy"):
        file = tree.resolve(f"/array/{name}")
        header = file.size - len(stored)
        content = file.open().read(0, file.size)
        assert content[header:] == stored
        for element in (0, 1, 6, 7, 20, 39):  # the first, inside a chunk, at a chunk's edge
            for shift in range(itemsize):
                offset = header + element * itemsize + shift
                for size in (1, itemsize, itemsize * 9 + 1):
                    expected = content[offset : offset + size]
                    got = file.read(offset, size)  # a fresh handle: no read-ahead
                    assert got == expected, (name, element, shift, size)


@pytest.mark.parametrize(
    "shape", [(2, 3, 4, 5), (3, 2, 1, 4, 6), (2, 2, 3, 3, 4)], ids=["4-D", "5-D", "5-D-square"]
)
def test_every_plane_of_a_4d_and_5d_array(zarr_writer, shape):
    data = _values("<u2", int(np.prod(shape))).reshape(shape)
    written = zarr_writer(data, chunks=(1,) * (len(shape) - 2) + (2, 3))
    tree = _tree(written.root)
    labels = layout.axis_labels(len(shape), None)
    for index in itertools.product(*(range(n) for n in shape[:-2])):
        names = [layout.plane_entry_name(labels[d], i, shape[d]) for d, i in enumerate(index)]
        file = tree.resolve("/".join(["/array", layout.PLANES_DIR, *names]) + ".npy")
        plane = np.load(io.BytesIO(file.open().read(0, file.size)))
        np.testing.assert_array_equal(plane, data[index], err_msg=str(index))


@pytest.mark.fuse
def test_a_mount_reads_3_byte_items_from_pages_that_start_inside_one(mount, zarr_writer):
    """4096 is not a multiple of 3: every page but the first starts inside an element."""
    data = _values("S3", 20_000)
    written = zarr_writer(data, chunks=(2_500,), zarr_format=2)
    mounted = mount(written.root)
    stored = data.tobytes()
    fd = os.open(mounted.path / "array" / "data.raw", os.O_RDONLY)
    try:
        for offset in (4096 * 5, 4096 * 2 + 1, 4096 * 11 + 2, 4096):  # out of order: no run
            assert os.pread(fd, 100, offset) == stored[offset : offset + 100], offset
        assert os.pread(fd, len(stored), 0) == stored
    finally:
        os.close(fd)
