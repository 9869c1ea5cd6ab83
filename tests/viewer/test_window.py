"""The main window against real stores: tree, panels, the image equals zarr-python's read."""

from __future__ import annotations

import numpy as np
import zarr

import zarrfs.engine as engine


def open_and_show(window, idle, url, path=None, indices=None):
    window.open_store(str(url), {}, path=path, indices=indices)
    idle(window)


def test_open_expand_select_and_info(window, idle, sample_store):
    path, _ = sample_store
    open_and_show(window, idle, path)
    model = window.model
    top = model.index(0, 0)
    assert model.item(top).children is not None  # expanded on open, listed in background
    assert [model.index(r, 0, top).data() for r in range(model.rowCount(top))] == [
        "images",
        "line",
        "mask",
        "names",
        "scalar",
        "wave",
    ]
    assert window.info.summary_value("kind") == "group"
    attrs = window.info.attributes
    assert {attrs.topLevelItem(i).text(0) for i in range(attrs.topLevelItemCount())} == {
        "title",
        "nested",
    }
    assert '"title": "sample"' in window.info.raw.toPlainText()
    window.select_path("images/volume")
    idle(window)
    info = window.info
    assert info.summary_value("shape") == "[6, 90, 130]"
    assert info.summary_value("chunks") == "[1, 32, 48]"
    assert info.summary_value("data type") == "uint16"
    assert info.summary_value("fill value") == "7"
    assert info.summary_value("dimension names") == '["z", "y", "x"]'
    assert info.summary_value("decoded size") == engine_size_text(6 * 90 * 130 * 2)
    stored = sum(
        f.stat().st_size
        for f in (path / "images" / "volume").rglob("*")
        if f.is_file() and f.name != "zarr.json"
    )
    assert info.summary_value("stored size") == engine_size_text(stored)
    assert info.node_url().endswith("images/volume")
    current = window.proxy.mapToSource(window.tree.currentIndex())
    assert window.model.item(current).path == "images/volume"  # tree expanded to the node


def engine_size_text(n):
    from zarrfs.viewer.info_panel import human_size

    return human_size(n)


def test_image_equals_zarr_read_and_slider_moves(window, idle, sample_store):
    path, data = sample_store
    open_and_show(window, idle, path, "images/volume", indices=[4])
    view = window.image
    assert window.stack.currentWidget() is view
    assert view.state.indices[0] == 4 and view.axes.labels[0].text() == "z:"
    np.testing.assert_array_equal(view.image_item.image, data["volume"][4])
    view.step(-1)  # keyboard arrows do this
    idle(window)
    np.testing.assert_array_equal(view.image_item.image, data["volume"][3])
    assert view.axes.sliders[0].value() == 3
    view.axes.sliders[0].setValue(5)
    idle(window)
    np.testing.assert_array_equal(view.image_item.image, data["volume"][5])
    view.axes.y_combo.setCurrentIndex(0)  # display z down, x across: slider on y
    idle(window)
    assert (view.state.y_axis, view.state.x_axis) == (0, 2)
    np.testing.assert_array_equal(view.image_item.image, data["volume"][:, 0, :])
    text = view.describe_position(2.5, 10.2)
    assert "z=2" in text and "x=10" in text and str(data["volume"][2, 0, 10]) in text


def test_chunk_grid_states_and_manual_levels(window, idle, sample_store):
    path, _ = sample_store
    open_and_show(window, idle, path, "images/volume")
    view = window.image
    view.grid_check.setChecked(True)
    assert view.grid_item.isVisible()
    states = view.grid_item.states()
    assert len(states) == 3 * 3 and set(states.values()) == {"loaded"}
    view.set_levels(100, 200)
    assert not view.auto_levels.isChecked()
    assert tuple(view.image_item.levels) == (100, 200)


def test_other_kinds_of_data(window, idle, sample_store):
    path, _ = sample_store
    open_and_show(window, idle, path, "line")
    assert window.stack.currentWidget() is window.line
    np.testing.assert_allclose(window.line.data, np.sin(np.arange(500) / 20))
    window.select_path("scalar")
    idle(window)
    assert window.stack.currentWidget() is window.scalar
    assert window.scalar.value_label.text() == "42"
    window.select_path("names")
    idle(window)
    assert window.stack.currentWidget() is window.table
    model = window.table.model
    model.data(model.index(5, 0))  # asks for the block
    idle(window)
    assert model.data(model.index(5, 0)) == "name-5"
    window.select_path("wave")
    idle(window)
    wave = (np.arange(2000).reshape(40, 50) * (1 + 2j)).astype(np.complex64)
    np.testing.assert_allclose(window.image.image_item.image, np.abs(wave), rtol=1e-6)
    window.image.complex_combo.setCurrentText("imag")
    idle(window)
    np.testing.assert_allclose(window.image.image_item.image, wave.imag)
    window.select_path("mask")
    idle(window)
    mask = (np.arange(1200).reshape(30, 40) % 3) == 0
    np.testing.assert_array_equal(window.image.image_item.image, mask.astype(np.uint8))


def test_structured_array_table_and_field_image(window, idle, tmp_path):
    from tests.zarr_oracle import write_array

    records = np.zeros((20, 30), dtype=[("a", "<i4"), ("b", "<f8")])
    records["a"] = np.arange(600).reshape(20, 30)
    records["b"] = records["a"] * 0.5
    written = write_array(tmp_path / "rec.zarr", records, path="rec", zarr_format=2, chunks=(8, 8))
    open_and_show(window, idle, tmp_path / "rec.zarr", "rec")
    assert window.show_as_row.isVisible()
    assert [window.show_as.itemText(i) for i in range(window.show_as.count())] == [
        "Table",
        "Field 'a'",
        "Field 'b'",
    ]
    assert window.stack.currentWidget() is window.table
    window.show_as.setCurrentIndex(2)
    idle(window)
    assert window.stack.currentWidget() is window.image
    np.testing.assert_array_equal(window.image.image_item.image, records["b"])
    assert written is not None


def test_recent_stores_and_drop_target(window, idle, sample_store, tmp_path):
    from PySide6.QtCore import QMimeData, QUrl

    from zarrfs.viewer.main_window import dropped_target
    from zarrfs.viewer.open_dialog import recent_stores

    path, _ = sample_store
    open_and_show(window, idle, path)
    assert recent_stores(window.settings)[0][0] == str(path)
    assert window.recent_menu.actions()[0].text() == str(path)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path / "zarr.json"))])
    assert dropped_target(mime) == str(path)


def test_ome_zarr_pyramid_level_choice(window, idle, corpus_dir):
    store = corpus_dir / "corpus" / "ome-zarr" / "ngff_0.5_zyx_float32.zarr"
    open_and_show(window, idle, store)
    group = engine.open(str(store))
    assert window.info.summary_value("kind") == "group"
    assert window.stack.currentWidget() is window.image  # the image group shows its level 0
    levels = window.image.controller.levels
    assert len(levels) >= 2 and levels[0].factors[-1] == 1.0
    assert levels[1].factors[-1] > 1.0
    level0 = zarr.open_array(str(store / levels[0].path.split("/")[-1]), mode="r")
    request = window.image.controller.request
    if request.level == 0 and request.geometry.sy == 1:
        z = window.image.state.indices[0]
        np.testing.assert_array_equal(window.image.image_item.image, level0[z])
    # zoomed far out, a coarser level is read: pixels no smaller than the screen's
    shape = window.image.state.shape
    window.image.controller.update_view((0, shape[1] * 8, 0, shape[2] * 8), (10, 10))
    idle(window)
    assert window.image.controller.request.level == len(levels) - 1
    assert group.kind == "group"


def test_keyboard_filter_status_and_copy(window, idle, qtbot, sample_store):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    path, data = sample_store
    open_and_show(window, idle, path, "images/volume")
    view = window.image
    qtbot.keyClick(view.graphics, Qt.Key.Key_Up)
    qtbot.keyClick(view.graphics, Qt.Key.Key_PageUp)  # +10, clamped to the last plane
    idle(window)
    assert view.state.indices[0] == 5 and view.axes.spins[0].value() == 5
    np.testing.assert_array_equal(view.image_item.image, data["volume"][5])
    qtbot.keyClick(view.graphics, Qt.Key.Key_Down)
    idle(window)
    assert view.state.indices[0] == 4
    window.status.refresh()
    assert window.status.cache.text().startswith("cache ")
    assert window.status.fetched.text().startswith("fetched ")
    assert window.status.progress.value() == window.status.progress.maximum()
    window.info.copy_path.click()
    assert QApplication.clipboard().text() == "/images/volume"
    window.filter.setText("vol")
    idle(window)
    proxy = window.proxy
    top = proxy.index(0, 0)
    assert proxy.rowCount(top) == 1 and proxy.index(0, 0, top).data() == "images"
    assert proxy.index(0, 0, proxy.index(0, 0, top)).data() == "volume"
    window.settings.setValue("cache_mb", 64)
    window.apply_cache_setting()
    assert engine.cache_info()["capacity"] == 64 * 2**20
    window.settings.remove("cache_mb")
    engine.set_cache_size(512 * 2**20)


def test_stored_size_of_a_remote_array_is_computed_on_demand(
    window, idle, sample_store, http_server
):
    from zarrfs.viewer.info_panel import STORED_SIZE_ON_DEMAND, human_size, is_remote

    path, _ = sample_store
    server = http_server(path)
    open_and_show(window, idle, server.url, "images/volume")
    info = window.info
    assert info.summary_value("stored size") == STORED_SIZE_ON_DEMAND
    requests = sum(server.stats.requests.values())
    info.compute_stored_size()  # what double-clicking the row does
    idle(window)
    # (the engine's own figure: HTTP directory listings carry no sizes)
    stored = engine.open(server.url)["images/volume"].stored_size()
    assert info.summary_value("stored size") == human_size(stored)
    assert sum(server.stats.requests.values()) > requests  # it listed the store only now
    assert is_remote("s3://b/x.zarr") and is_remote("simplecache::https://h/x.zarr")
    assert not is_remote("/data/x.zarr") and not is_remote("zip::file:///data/x.zip")


def test_command_line_cache_size_wins_over_the_saved_one_for_this_run(qtbot):
    """``--cache-size`` (MainWindow's cache_size) beats View > Cache size for the run; the saved
    value stays for the next run, and choosing in the menu still applies at once."""
    from zarrfs.viewer.app import make_app
    from zarrfs.viewer.main_window import MainWindow
    from zarrfs.viewer.open_dialog import settings

    make_app()
    saved = settings()
    saved.setValue("cache_mb", 64)
    saved.sync()
    try:
        win = MainWindow(cache_size=200 * 2**20)
        qtbot.addWidget(win)
        assert engine.cache_info()["capacity"] == 200 * 2**20
        assert int(win.settings.value("cache_mb")) == 64  # kept for the next run
        win.close()
        again = MainWindow()  # the next run, without --cache-size
        qtbot.addWidget(again)
        assert engine.cache_info()["capacity"] == 64 * 2**20
        again.close()
    finally:
        saved.remove("cache_mb")
        engine.set_cache_size(512 * 2**20)
