"""Open as a file: the plane on screen as its .tif under a zarrfs mount of the same store, an
existing mount found, else one made on request and unmounted when the window closes."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

from tests.fuse.conftest import mount, needs_fuse  # noqa: F401 - the mount fixture
from zarrfs.fuse.daemon import is_mounted

pytestmark = [needs_fuse, pytest.mark.fuse]


def located(window, qtbot, make_mount: bool):
    found, failed = [], []
    window.plane_as_file(make_mount, found.append, failed.append)
    qtbot.waitUntil(lambda: bool(found or failed), timeout=60_000)
    if failed:
        raise failed[0]
    return found[0]


def test_mounts_on_request_and_unmounts_on_exit(qtbot, idle, sample_store, monkeypatch):
    """The mount made is unmounted (and its folder removed) after the window closes, by a
    process of its own: closing never waits on ``zarrfs unmount`` on the GUI thread."""
    import subprocess

    from viewer.app import make_app
    from viewer.main_window import MainWindow

    path, arrays = sample_store
    make_app()
    window = MainWindow()
    qtbot.addWidget(window)
    window.resize(1000, 700)
    window.show()
    made = []
    try:
        window.open_store(str(path), {}, path="images/volume", indices=[3])
        idle(window)
        with pytest.raises(FileNotFoundError, match="no zarrfs mount"):
            located(window, qtbot, make_mount=False)
        plane = located(window, qtbot, make_mount=True)
        made = list(window.mounts.made)
        assert len(made) == 1 and plane.name == "z_3.tif" and str(plane).startswith(str(made[0]))
        np.testing.assert_array_equal(tifffile.imread(plane), arrays["volume"][3])
        assert located(window, qtbot, make_mount=False) == plane  # found again, not remade
    finally:
        with monkeypatch.context() as patch:

            def waited(*args, **kwargs):
                raise AssertionError(f"the window waited on {args[0]}")

            patch.setattr(subprocess, "run", waited)
            window.close()
        if window.unmounting is not None:
            assert window.unmounting.wait(timeout=90) == 0
        for point in made:  # the window unmounted them; a failed test must not leave one
            if is_mounted(str(point)):
                subprocess.run(["fusermount3", "-uz", str(point)], check=False)
    assert made and window.unmounting is not None
    assert not is_mounted(str(made[0])) and not made[0].exists()


def test_finds_an_existing_mount(window, idle, qtbot, ome_images, mount):  # noqa: F811
    """A composite on screen is the mount's composite file; one channel, its plane file. A
    mount without ``-o composite`` has no composite: the viewer asks to make one that has."""
    written = ome_images("ome-zarr-py", "0.4")
    plain = mount(str(written.path))
    window.open_store(str(written.path), {})
    idle(window)
    with pytest.raises(FileNotFoundError, match="no zarrfs mount of .* with -o composite"):
        located(window, qtbot, make_mount=False)  # a composite opens first
    with_composite = mount(str(written.path), "composite")  # listed after the plain one
    composite = located(window, qtbot, make_mount=False)
    assert composite == with_composite.path / "s0" / "planes" / "composite" / "z_2.tif"
    window.image.channel_panel.toggle_composite()  # one channel
    idle(window)
    plane = located(window, qtbot, make_mount=False)
    assert plane == plain.path / "s0" / "planes" / "c_0" / "z_2.tif"  # defaultZ 2
    assert not window.mounts.made
    np.testing.assert_array_equal(tifffile.imread(plane), written.data[0, 2])


def test_tiff_export_is_the_file_opened(window, idle, qtbot, ome_images, mount, tmp_path):  # noqa: F811
    """File > Export plane as TIFF writes the bytes of the file "Open plane as a file" finds:
    for the composite on screen, the mount's composite (OME-XML, valid, naming the channels
    it blends); for one channel, its plane's .tif, calibrated alike (ImageJ's unit)."""
    from ome_types import from_xml

    written = ome_images("ome-zarr-py", "0.4")
    mounted = mount(str(written.path), "composite")
    window.open_store(str(written.path), {})
    idle(window)
    for name, composite in (("composite.tif", True), ("plane.tif", False)):
        if not composite:
            window.image.channel_panel.toggle_composite()
            idle(window)
        saved = []
        window.export_tiff(str(tmp_path / name), on_done=saved.append)
        qtbot.waitUntil(lambda saved=saved: bool(saved), timeout=60_000)  # a loaded machine
        plane = located(window, qtbot, make_mount=False)
        folder = "composite" if composite else "c_0"
        assert plane == mounted.path / "s0" / "planes" / folder / "z_2.tif"
        assert (tmp_path / name).read_bytes() == plane.read_bytes()
        with tifffile.TiffFile(tmp_path / name) as f:
            if composite:
                ome = from_xml(f.ome_metadata, validate=True)
                channels = ome.images[0].pixels.channels
                assert [c.name for c in channels] == ["composite of DAPI, GFP"]
                assert f.asarray().shape == written.data.shape[2:] + (3,)
            else:
                assert f.imagej_metadata["unit"] == "micron"
                np.testing.assert_array_equal(f.asarray(), written.data[0, 2])
