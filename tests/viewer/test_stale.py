"""Results of work the user moved away from are dropped, never drawn, and never hold up what
the user looks at next."""

from __future__ import annotations

import numpy as np
import zarr

from zarrfs.viewer import loader as loader_module
from zarrfs.viewer import pyramid
from zarrfs.viewer.view_state import ViewState


def test_generations_are_unique_across_states():
    """Each array gets a new state: its generations must not repeat an earlier state's."""
    first, second = ViewState(shape=(4, 5)), ViewState(shape=(4, 5))
    seen = {first.generation, first.bump(), second.generation, second.bump(), first.bump()}
    assert len(seen) == 5


def test_late_event_of_previous_array_is_dropped(window, tmp_path, http_server, qtbot):
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    root.create_array("A", shape=(256, 256), chunks=(32, 32), dtype="f4")[:] = 1.0
    root.create_array("B", shape=(64, 64), chunks=(32, 32), dtype="f4")[:] = 2.0
    server = http_server(tmp_path / "s.zarr", latency=0.3)
    server.faults.stall(600, pattern=r"^B/c/")  # B's chunks never arrive during the test
    window.open_store(server.url, {}, path="A")
    ctl, loader = window.image.controller, window.image.controller.loader
    qtbot.waitUntil(
        lambda: ctl.request is not None and ctl.node_path == "A" and loader.busy, timeout=20000
    )
    generation_a = ctl.request.generation  # A's first request, still loading
    land_a, tile_a, landing_a = loader._land, ctl.request.tiles[0], ctl.landing
    window._show_view(pyramid.single(window.root["B"]), None)  # what selecting B ends with
    assert ctl.node_path == "B" and ctl.request.generation != generation_a
    dropped = loader.dropped_events
    late = engine_event((0, 0))
    out = np.full((32, 32), 7.0, "f4")  # A's chunk, decoded by A's worker after all
    raw_a = landing_a.raw.copy()
    loader_module._chunk_event(loader._handle, generation_a, 0, land_a, tile_a, out, late)
    np.testing.assert_array_equal(landing_a.raw, raw_a)  # A's buffers are closed: not written
    assert not (ctl.raw == 7.0).any()
    qtbot.waitUntil(lambda: loader.dropped_events > dropped, timeout=10000)
    # none of B's chunks arrived: nothing may be marked loaded or counted as landed
    assert not ctl.loaded.any()
    assert loader._seen == [0] * len(loader._seen)
    assert loader.busy
    assert window.image.grid_item.state((0, 0)) != "loaded"


def test_stale_event_with_an_index_beyond_the_plane_is_dropped(window, idle, tmp_path):
    path = tmp_path / "b.zarr"
    zarr.create_array(path, shape=(40, 40), chunks=(20, 20), dtype="u1")[:] = 3
    window.open_store(str(path), {})
    idle(window)
    loader = window.image.controller.loader
    dropped = loader.dropped_events
    loader._on_event(loader.generation, 10_000, engine_event((0, 0)))
    assert loader.dropped_events == dropped + 1
    np.testing.assert_array_equal(window.image.image_item.image, np.full((40, 40), 3, "u1"))


def engine_event(coords):
    from zarrfs.engine import ChunkEvent

    return ChunkEvent(
        chunk_coords=coords, status="loaded", out_selection=(slice(0, 32), slice(0, 32))
    )


def test_stalled_values_and_tables_do_not_starve_the_next_node(
    window, idle, tmp_path, http_server, qtbot, monkeypatch
):
    """Six reads that never answer (more than the background workers), then a healthy image."""
    monkeypatch.setenv("ZARRFS_TIMEOUT", "300")  # a stalled read would hold a worker that long
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    for i in range(4):
        root.create_array(f"s{i}", shape=(), dtype="f4")[()] = i
    for i in range(2):
        root.create_array(f"t{i}", shape=(10,), chunks=(5,), dtype=str)[:] = ["x"] * 10
    root.create_array("img", shape=(64, 64), chunks=(32, 32), dtype="u1")[:] = 9
    server = http_server(tmp_path / "s.zarr")
    server.faults.stall(600, pattern=r"^[st]\d/c")
    window.open_store(server.url, {})
    idle(window)
    futures = []
    for name in ("s0", "s1", "t0", "s2", "s3", "t1"):  # the user clicks through them
        window.select_path(name)
        view = window.table if name.startswith("t") else window.scalar
        qtbot.waitUntil(lambda v=view: window.stack.currentWidget() is v, timeout=20000)
        if view is window.table:
            window.table.table.grab()  # paint: the table asks for its rows
            qtbot.waitUntil(lambda: window.table.model.busy, timeout=20000)
            futures += list(window.table.model._futures.values())
        else:
            qtbot.waitUntil(lambda: window.scalar.busy, timeout=20000)
            futures.append(window.scalar._future)
    window.select_path("img")
    image = window.image.image_item

    def shown():
        return (
            window.stack.currentWidget() is window.image
            and image.image is not None
            and (image.image == 9).all()
        )

    qtbot.waitUntil(shown, timeout=30000)
    assert len(futures) == 6 and all(f.cancelled() for f in futures)
    assert not window.scalar.busy and not window.table.busy
