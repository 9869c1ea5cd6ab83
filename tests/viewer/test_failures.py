"""Errors never crash or freeze the viewer; abandoned planes cost a bounded number of decodes."""

from __future__ import annotations

import shutil

import numpy as np
import zarr

import zarrfs.engine as engine


def write_volume(path, shape=(30, 64, 64), chunks=(1, 32, 32)):
    data = (np.arange(np.prod(shape)) % 5000).reshape(shape).astype(np.uint16)
    arr = zarr.create_array(
        path, shape=shape, chunks=chunks, dtype="uint16", dimension_names=["z", "y", "x"]
    )
    arr[:] = data
    return data


def test_corrupt_chunk_shows_error_and_rest_of_plane(window, idle, tmp_path):
    data = write_volume(tmp_path / "c.zarr", shape=(3, 64, 64))
    chunk_file = tmp_path / "c.zarr" / "c" / "0" / "1" / "0"
    chunk_file.write_bytes(b"this is not zstd at all" * 10)
    window.open_store(str(tmp_path / "c.zarr"), {})
    idle(window)
    view = window.image
    assert window.stack.currentWidget() is view
    texts = window.message_bar.messages()
    assert any("Corrupt chunk" in t and "(0, 1, 0)" in t for t in texts), texts
    assert window.message_bar.isVisible()
    image = view.image_item.image
    np.testing.assert_array_equal(image[:32], data[0, :32])  # chunks (0,0) and (0,1)
    np.testing.assert_array_equal(image[32:, 32:], data[0, 32:, 32:])  # chunk (1,1)
    assert view.grid_item.state((1, 0)) == "failed"
    assert view.grid_item.state((0, 0)) == "loaded"
    # the failed chunk's pixels were never decoded: blank, not loaded, no value under the cursor
    assert not view.controller.loaded[32:, :32].any() and view.controller.loaded[:32].all()
    assert (image[32:, :32] == 0).all()
    assert view.controller.value_at(40.5, 10.5) is None


def test_slider_sweep_decodes_a_bounded_number_of_abandoned_chunks(
    window, idle, tmp_path, http_server, qtbot
):
    data = write_volume(tmp_path / "v.zarr")
    server = http_server(tmp_path / "v.zarr", latency=0.08)
    window.open_store(server.url, {})
    idle(window)
    view = window.image
    engine.reset_stats()
    dropped_before = view.controller.loader.dropped_events
    for z in range(1, 25):  # 24 planes x 4 chunks = 96 chunks if nothing were cancelled
        view.axes.sliders[0].setValue(z)
        qtbot.wait(5)
    idle(window, 60)
    decoded = engine.stats()["chunks_decoded"]
    np.testing.assert_array_equal(view.image_item.image, data[24])
    # final plane (4) + its two prefetched neighbours (8) + the planes in flight when moved on
    assert decoded <= 40, decoded
    assert view.controller.loader.dropped_events >= dropped_before


def test_http_server_stopping_mid_load_does_not_crash(window, idle, tmp_path, http_server):
    data = write_volume(tmp_path / "v.zarr", shape=(10, 256, 256), chunks=(1, 32, 32))
    server = http_server(tmp_path / "v.zarr", latency=0.3)
    window.open_store(server.url, {})
    idle(window, 30)
    view = window.image
    np.testing.assert_array_equal(view.image_item.image, data[0])
    view.axes.sliders[0].setValue(2)
    server.close()  # mid-load: requests in flight, the server goes away
    idle(window, 90)
    assert view.state.indices[0] == 2
    view.axes.sliders[0].setValue(8)  # never requested: every read now fails
    idle(window, 90)
    texts = window.message_bar.messages()
    assert any(t.startswith(("Storage error", "Network error")) for t in texts), texts
    assert window.message_bar.isVisible()
    states = set(view.grid_item.states().values())
    assert states == {"failed"}, states
    view.axes.sliders[0].setValue(0)  # still usable: what is cached still shows
    idle(window, 90)


def test_directory_removed_before_reading(window, idle, tmp_path):
    write_volume(tmp_path / "gone.zarr", shape=(2, 64, 64))
    root = zarr.open_group(tmp_path / "g.zarr", mode="w")
    root.create_array("a", shape=(64, 64), chunks=(32, 32), dtype="f4")[:] = 1.5
    window.open_store(str(tmp_path / "g.zarr"), {})
    idle(window)
    shutil.rmtree(tmp_path / "g.zarr")
    window.select_path("a")
    idle(window)
    image = window.image.image_item.image
    # a missing chunk is the fill value (0): the folder is gone, the window is not
    assert image is not None and image.shape == (64, 64) and (image == 0).all()


def test_unopenable_url_is_a_message(window, idle, tmp_path):
    window.open_store(str(tmp_path / "nothing-here.zarr"), {})
    idle(window)
    texts = window.message_bar.messages()
    assert texts and texts[0].startswith("Not found"), texts
