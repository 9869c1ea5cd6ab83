"""OME-Zarr rendering metadata (``omero``, ``image-label``, labels, pixel sizes) and nested
dataset paths, read from images written by ome-zarr-py and ngff-zarr and compared with what was
fed to them; malformed hints fall back, logged once; the composite blend and automatic window."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import zarrfs
import zarrfs.engine as engine
from tests import ome_writers
from zarrfs.engine.ome import parse_omero


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_zarr_py_image(ome_images, version):
    written = ome_images("ome-zarr-py", version)
    image = engine.image(zarrfs.open(str(written.path)))
    given = ome_writers.OMERO["channels"]
    assert [c.label for c in image.omero.channels] == [c["label"] for c in given]
    assert [c.color for c in image.omero.channels] == [
        tuple(bytes.fromhex(c["color"])) for c in given
    ]
    assert [
        (c.window.start, c.window.end, c.window.min, c.window.max) for c in image.omero.channels
    ] == [
        (c["window"]["start"], c["window"]["end"], c["window"]["min"], c["window"]["max"])
        for c in given
    ]
    assert [c.active for c in image.omero.channels] == [True, True, False]
    assert (image.omero.default_z, image.omero.default_t) == (2, 0)
    assert image.channel_axis == 0 and image.labels == ("nuclei",)
    assert image.pixel_size(0) == (1.0, 2.0, 0.5, 0.5)
    assert [a.unit for a in image.multiscale.axes[1:]] == ["micrometer"] * 3
    level0 = engine.levels(zarrfs.open(str(written.path)), image.multiscale)[0]
    np.testing.assert_array_equal(level0[...], written.data)
    labels = engine.image(zarrfs.open(str(written.path / "labels" / "nuclei")))
    assert dict(labels.image_label.colors) == {7: (255, 0, 0, 255)}
    assert dict(labels.image_label.properties[7]) == {"class": "mitotic"}


@pytest.mark.parametrize("version", ["0.4", "0.5", "0.6"])
def test_ngff_zarr_nested_levels(ome_images, version):
    """ngff-zarr's ``scale0/image`` paths: every level found, with the image's axes and
    transforms (0.6: axes in coordinateSystems, transforms in a sequence)."""
    written = ome_images("ngff-zarr", version)
    group = zarrfs.open(str(written.path))
    found = engine.image_levels(group)
    assert sorted(found) == ["scale0/image", "scale1/image"]
    level = found["scale0/image"]
    assert level.axis_names == ("c", "z", "y", "x") and level.index == 0
    assert level.dataset.scale == (1.0, 2.0, 0.5, 0.5)
    assert level.image.multiscale.version == version
    assert level.image.channels(2)[0].window is None  # no omero: windows from the data
    np.testing.assert_array_equal(group["scale0/image"][...], written.data)


def test_malformed_hints_fall_back_logged_once(caplog):
    attrs = {
        "omero": {
            "channels": [
                {"label": "a", "color": "blue", "window": {"start": "0", "end": 9}},
                {"label": 3, "color": "00FF00", "active": "yes"},
                "not a channel",
            ],
            "rdefs": {"defaultZ": -1, "defaultT": "0"},
        }
    }
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine.ome"):
        omero = parse_omero(attrs, path="img-malformed")
        again = parse_omero(attrs, path="img-malformed")
    assert omero == again
    a, b, c = omero.channels
    assert a.label == "a" and a.color == (255, 0, 0) and a.window is None  # palette, auto
    assert b.label == "1" and b.color == (0, 255, 0) and b.active is True
    assert c.label == "2" and c.color == (0, 0, 255)
    assert omero.default_z is None and omero.default_t is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == len(set(messages)) == 7  # each once, though parsed twice
    assert any("color 'blue'" in m for m in messages)


def test_malformed_multiscales_leave_no_levels(zarr_writer, caplog):
    import zarr

    w = zarr_writer(np.zeros((2, 4, 4), "u1"), path="img/0")
    attrs = {"multiscales": [{"axes": [{"name": "c"}], "datasets": [{"path": 0}]}]}
    zarr.open_group(str(w.root / "img"), mode="r+").attrs.update(attrs)
    group = zarrfs.open(str(w.root))["img"]
    with pytest.raises(engine.MetadataError):
        engine.image(group)
    assert engine.image_levels(group) == {}
    assert "OME-Zarr multiscales cannot be used" in caplog.text
    assert "cannot be used" in engine.format_summary(engine.summary(group))


def test_auto_window_suits_sparse_data():
    """99.9% background: the 0.5-99.5 percentile of all values would be (0, 0); the window
    reaches the bright objects instead."""
    values = np.zeros((1000, 1000), np.uint16)
    values[:30, :30] = np.arange(900).reshape(30, 30) + 1000
    start, end = engine.auto_window(values)
    assert start == 0 and 1850 < end <= 1899
    assert engine.auto_window(np.full((4, 4), 7.0)) == (7.0, 8.0)
    assert engine.auto_window(np.array([np.nan, np.inf, 2.0, 3.0, 4.0]))[0] >= 2.0


def test_blend_adds_tinted_windows():
    red = np.array([[0, 50, 100, 200]], np.uint16)
    green = np.array([[100, 100, 0, np.nan]], np.float32)
    rgb = engine.blend([red, green], [(255, 0, 0), (0, 128, 255)], [(0, 100), (0, 100)])
    assert rgb.dtype == np.uint8 and rgb.shape == (1, 4, 3)
    np.testing.assert_array_equal(
        rgb[0], [[0, 128, 255], [128, 128, 255], [255, 0, 0], [255, 0, 0]]
    )


def test_info_names_channels_pixel_sizes_and_units(ome_images):
    written = ome_images("ome-zarr-py", "0.4")
    text = engine.format_summary(engine.summary(zarrfs.open(str(written.path))))
    assert "0: DAPI  #0000FF  window 100-3000" in text
    assert "2: RFP  #FF0000  window 500-4000  (inactive)" in text
    assert "s0: z 2 micrometer, y 0.5 micrometer, x 0.5 micrometer" in text
    assert "default plane  z 2, t 0" in text and "nuclei" in text


def test_blender_keeps_its_buffers_and_blends_the_same_pixels():
    """One Blender for planes of several sizes, regions of a larger picture included: each
    result equals ``blend`` of the same planes, and a float64 oracle within one rounding step."""

    def oracle(planes, colors, windows):
        total = np.zeros(planes[0].shape + (3,))
        for plane, color, (start, end) in zip(planes, colors, windows, strict=True):
            scaled = np.clip((plane.astype(float) - start) / (end - start), 0, 1)
            total += np.nan_to_num(scaled)[..., None] * np.array(color, float)
        return np.rint(np.clip(total, 0, 255)).astype(np.uint8)

    rng = np.random.default_rng(3)
    colors = [(0, 0, 255), (255, 128, 0), (200, 50, 255)]
    windows = [(100, 3000), (0, 2000), (4000, 500)]  # the last one inverted
    blender = engine.Blender()
    picture = np.zeros((40, 50, 3), np.uint8)
    for shape in ((40, 50), (7, 9), (40, 50), (20, 25)):
        planes = list(rng.integers(0, 4000, (3, *shape), dtype=np.uint16))
        if shape == (20, 25):  # into a region of a larger picture
            got = blender(planes, colors, windows, out=picture[10:30, 5:30])
            assert got.base is picture or got.base is picture.base
            np.testing.assert_array_equal(picture[:10], 0)
        else:
            got = blender(planes, colors, windows)
        np.testing.assert_array_equal(got, engine.blend(planes, colors, windows))
        assert np.abs(got.astype(int) - oracle(planes, colors, windows)).max() <= 1
    floats = rng.random((2, 6, 6)).astype(np.float32) * 10
    floats[0, 0, :3] = [np.nan, np.inf, -np.inf]
    got = blender(list(floats), colors[:2], [(0, 10), (0, 10)])
    assert np.abs(got.astype(int) - oracle(list(floats), colors[:2], [(0, 10)] * 2)).max() <= 1


def test_image_fetches_its_levels_and_labels_in_one_round_trip(ome_images, http_server):
    """Over HTTP, ``image`` asks for the documents of every level and of the labels group at
    once; opening the levels afterwards fetches nothing more (one after another, a viewer
    opening a remote image took a round trip per level)."""
    written = ome_images("ome-zarr-py", "0.4")
    server = http_server(written.path, latency=0.05)
    root = zarrfs.open(server.url)
    server.stats.reset()
    found = engine.image(root)
    assert found.labels == ("nuclei",)
    assert server.stats.round_trips() == 1
    asked = len(server.stats.records())
    arrays = engine.levels(root, found.multiscale)
    assert [a.shape for a in arrays] == [(3, 4, 48, 64), (3, 4, 24, 32)]
    assert len(server.stats.records()) == asked
    np.testing.assert_array_equal(arrays[0][:, 2], written.data[:, 2])


def test_an_image_without_labels_asks_for_them_once(ome_images, http_server, tmp_path):
    """The labels group's documents come with the levels'; found absent there, they are not
    asked for again (only the listing that would find an implicit group follows)."""
    import shutil

    written = ome_images("ome-zarr-py", "0.5")
    copy = tmp_path / "no_labels.zarr"
    shutil.copytree(written.path, copy)
    shutil.rmtree(copy / "labels")
    server = http_server(copy, latency=0.2)
    root = zarrfs.open(server.url)
    server.stats.reset()
    found = engine.image(root)
    assert found.labels == ()
    documents = server.stats.records(r"/labels/(zarr\.json|\.zarray|\.zgroup|\.zattrs)$")
    assert len(documents) == 4  # each asked for once
    assert server.stats.round_trips() <= 2  # the documents with the levels', then a listing


def test_a_large_picture_blends_in_bands_to_the_same_pixels(monkeypatch):
    """A picture larger than a band (the last band short, a region of a larger picture, a
    strided view of the channels) equals the same blend done whole, pixel for pixel."""
    rng = np.random.default_rng(5)
    stack = rng.integers(0, 4000, (3, 701, 333), dtype=np.uint16)
    planes = [p[::1, 1:] for p in stack]  # 701 x 332: 197 rows a band, four bands
    colors = [(0, 0, 255), (255, 128, 0), (200, 50, 255)]
    windows = [(100, 3000), (0, 2000), (4000, 500)]
    picture = np.zeros((710, 340, 3), np.uint8)
    banded = engine.Blender()(planes, colors, windows, out=picture[5:706, 4:336])
    monkeypatch.setattr(engine.Blender, "BAND_PIXELS", 10**9)
    whole = engine.Blender()(planes, colors, windows)
    np.testing.assert_array_equal(banded, whole)
    np.testing.assert_array_equal(picture[:5], 0)
    np.testing.assert_array_equal(picture[706:], 0)
    assert whole[..., 1].any() and whole[..., 2].any()
