"""The mount speaks OME-Zarr: plane names from the multiscales' axes at every level, whatever
the dataset paths (ngff-zarr's ``scale0/image``), ``info.txt`` naming channels and pixel sizes,
and ``-o composite``: a plane of channels as one RGB ``.tif`` in the channel colours and windows.
Images written by ome-zarr-py and ngff-zarr; values compared with what was fed to them."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile
import zarr

import zarrfs
from tests import ome_writers
from tests.fuse.conftest import needs_fuse
from zarrfs.fuse.options import MountOptions
from zarrfs.fuse.tree import VirtualTree


def numpy_composite(data: np.ndarray, z: int, omero: dict) -> np.ndarray:
    """The oracle: each active channel's window mapped to 0..1, times its colour, summed."""
    height, width = data.shape[-2:]
    total = np.zeros((height, width, 3))
    for k, channel in enumerate(omero["channels"]):
        if channel.get("active", True):
            start, end = channel["window"]["start"], channel["window"]["end"]
            scaled = np.clip((data[k, z].astype(float) - start) / (end - start), 0, 1)
            total += scaled[..., None] * np.array(list(bytes.fromhex(channel["color"])))
    return np.rint(np.clip(total, 0, 255)).astype(np.uint8)


@needs_fuse
@pytest.mark.fuse
@pytest.mark.parametrize("version", ["0.4", "0.5", "0.6"])
def test_nested_dataset_paths_name_planes_by_axes(ome_images, mount, version):
    written = ome_images("ngff-zarr", version)
    mounted = mount(str(written.path))
    planes = mounted.path / "scale0" / "image" / "planes"
    assert sorted(p.name for p in planes.iterdir()) == ["c_0", "c_1"]
    np.testing.assert_array_equal(np.load(planes / "c_1" / "z_3.npy"), written.data[1, 3])
    assert (mounted.path / "scale1" / "image" / "planes" / "c_0" / "z_1.tif").is_file()
    assert not (planes / "composite").exists()  # opt-in


@needs_fuse
@pytest.mark.fuse
@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_composite_tif_is_the_channel_blend(ome_images, mount, version):
    written = ome_images("ome-zarr-py", version)
    mounted = mount(str(written.path), "composite")
    planes = mounted.path / "s0" / "planes"
    assert sorted(p.name for p in planes.iterdir()) == [
        "c_0",
        "c_1",
        "c_2",
        "c_DAPI",  # channel folders are named by label too
        "c_GFP",
        "c_RFP",
        "composite",
    ]
    assert [p.name for p in sorted((planes / "composite").iterdir())] == [
        f"z_{z}.tif" for z in range(4)
    ]
    for z in (0, 2):
        got = tifffile.imread(planes / "composite" / f"z_{z}.tif")
        expected = numpy_composite(written.data, z, ome_writers.OMERO)
        assert got.shape == (48, 64, 3) and got.dtype == np.uint8
        assert np.abs(got.astype(int) - expected).max() <= 1  # one rounding step, float32
    info = (mounted.path / "info.txt").read_text()
    assert "0: DAPI  #0000FF  window 100-3000" in info
    assert "s0: z 2 micrometer, y 0.5 micrometer, x 0.5 micrometer" in info
    labels = mounted.path / "labels" / "nuclei" / "s0" / "planes"
    np.testing.assert_array_equal(np.load(labels / "z_2.npy"), written.labels[2])


def test_malformed_omero_keeps_the_image(tmp_path):
    """A colour that is not hex and a window that is a string: planes and the composite still
    come, in the default palette and automatic windows."""
    root = zarr.open_group(str(tmp_path / "img.zarr"), mode="w", zarr_format=2)
    data = np.arange(2 * 3 * 8 * 8, dtype=np.uint16).reshape(2, 3, 8, 8)
    root.create_array("0", data=data, chunks=(1, 1, 8, 8))
    root.attrs.update(
        {
            "multiscales": [
                {
                    "version": "0.4",
                    "axes": [{"name": n} for n in "czyx"],
                    "datasets": [{"path": "0"}],
                }
            ],
            "omero": {"channels": [{"color": "red", "window": {"start": "low", "end": 1}}]},
        }
    )
    tree = VirtualTree(
        lambda: zarrfs.open(str(tmp_path / "img.zarr")), MountOptions(composite=True)
    )
    assert tree.resolve("/0/planes").names() == ["c_0", "c_1", "composite"]
    rgb = tifffile.imread(
        __import__("io").BytesIO(tree.resolve("/0/planes/composite/z_1.tif").open().content)
    )
    assert rgb.shape == (8, 8, 3) and rgb[..., 0].max() == 255 and rgb[..., 1].max() == 255
    assert rgb[0, 0].tolist() == [0, 0, 0]  # the lowest value of each channel is black


@needs_fuse
@pytest.mark.fuse
def test_channel_folders_are_named_by_channel_too(ome_images, mount):
    """``planes/c_DAPI/`` is ``planes/c_0/``: the ``omero`` label beside the index, at every
    level, as planes are named by coordinate value."""
    written = ome_images("ome-zarr-py", "0.4")
    mounted = mount(str(written.path))
    for level, z in (("s0", 2), ("s1", 1)):
        planes = mounted.path / level / "planes"
        names = sorted(p.name for p in planes.iterdir())
        assert {"c_0", "c_1", "c_2", "c_DAPI", "c_GFP", "c_RFP"} <= set(names)
        np.testing.assert_array_equal(
            np.load(planes / "c_GFP" / f"z_{z}.npy"), np.load(planes / "c_1" / f"z_{z}.npy")
        )
    np.testing.assert_array_equal(
        np.load(mounted.path / "s0" / "planes" / "c_GFP" / "z_2.npy"), written.data[1, 2]
    )
