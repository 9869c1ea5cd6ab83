"""A view touching many chunks is first drawn from a coarse preview of a few of them, then refined.

Chunk counts come from the engine's counters and the loader's chunk events, never from timings.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import zarrfs.engine as engine
from zarrfs.viewer.tiles import coarse_stride, plan_plane


def test_coarse_stride_reads_a_few_chunks_and_is_a_multiple_of_the_fine_one():
    where = dict(
        shape=(10_000, 10_000),
        chunks=(100, 100),
        y_axis=0,
        x_axis=1,
        view_rect=(0, 10_000, 0, 10_000),
        screen=(1000, 1000),
    )
    fine, fine_tiles = plan_plane(indices=[0, 0], **where)
    stride = coarse_stride(**where)
    assert stride % fine.sy == 0 and stride > fine.sy
    coarse, tiles = plan_plane(indices=[0, 0], stride=stride, **where)
    touched = {c for t in fine_tiles for c in t.chunk_coords}
    read = {c for t in tiles for c in t.chunk_coords}
    assert len(touched) == 10_000
    assert 0 < len(read) <= len(touched) // 8
    assert read <= touched
    # a small view is read at once, with no preview
    assert coarse_stride(**{**where, "view_rect": (0, 500, 0, 500), "screen": (500, 500)}) is None


@pytest.mark.usefixtures("python_pipeline")  # counts decoded chunks, and the cache's hits
def test_first_picture_comes_from_a_few_chunks_then_the_plane_is_refined(window, idle, tmp_path):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 50_000, size=(2000, 2400), dtype=np.uint16)
    arr = zarr.create_array(
        tmp_path / "wide.zarr", shape=data.shape, chunks=(100, 100), dtype="uint16"
    )
    arr[:] = data
    controller = window.image.controller
    first = []

    def painted(_generation):
        landing = controller.landing
        if first or landing is None:
            return
        # the buffers as one picture: the engine's workers go on landing preview chunks
        # meanwhile, each its pixels and then its mark under this lock (copied one after the
        # other without it, a chunk that landed in between was marked drawn and not there)
        with landing.lock:
            if controller.approx is not None and controller.approx.any():
                first.append(
                    (
                        engine.stats()["chunks_decoded"],
                        controller.display.copy(),
                        controller.approx.copy(),
                        controller.loaded.any(),
                        controller.request,
                    )
                )

    # opened once first: the tree and the metadata panel, once filled, widen and the image
    # narrows, which asks for the plane again; shown again, the window keeps its layout
    window.open_store(str(tmp_path / "wide.zarr"), {})
    idle(window, 60)
    controller.painted.connect(painted)
    engine.clear_caches()
    engine.reset_stats()
    window.image.clear()
    window.show_node(window.root)
    idle(window, 60)
    assert first, "no preview was drawn"
    decoded, picture, drawn, any_fine, request = first[0]
    assert request is controller.request  # the view did not move meanwhile
    touched = {c for t in request.tiles for c in t.chunk_coords}
    preview = {c for t in request.coarse_tiles for c in t.chunk_coords}
    assert len(touched) > 64
    assert not any_fine  # the fine pass starts after the preview
    assert decoded <= len(preview) <= len(touched) // 8
    # the preview is the strided read at the coarse stride, each sample drawn over its area
    c, g = request.coarse_geometry, request.geometry
    cs, fs = int(c.sy), int(g.sy)
    coarse = data[c.y0 : c.y0 + c.ny * cs : cs, c.x0 : c.x0 + c.nx * cs : cs]
    rows = np.minimum((g.y0 + np.arange(g.ny) * fs - c.y0) // cs, c.ny - 1)
    cols = np.minimum((g.x0 + np.arange(g.nx) * fs - c.x0) // cs, c.nx - 1)
    np.testing.assert_array_equal(picture[drawn], coarse[np.ix_(rows, cols)][drawn])
    # then the whole plane at screen resolution: zarr-python's strided read
    final = window.image.image_item.image
    np.testing.assert_array_equal(
        final, data[g.y0 : g.y0 + g.ny * fs : fs, g.x0 : g.x0 + g.nx * fs : fs]
    )
    assert controller.loaded.all()
    # the preview's chunks were decoded once for both passes
    assert engine.stats()["chunks_decoded"] == len(touched)


def test_a_preview_with_nothing_to_draw_still_starts_the_fine_pass(window, idle, tmp_path):
    """Every preview chunk corrupt: no paint can start the refinement, so the loader does once
    the preview has reported; the chunks the preview did not touch still draw."""
    data = np.arange(2000 * 2400, dtype=np.uint16).reshape(2000, 2400)
    arr = zarr.create_array(
        tmp_path / "wide.zarr", shape=data.shape, chunks=(100, 100), dtype="uint16"
    )
    arr[:] = data
    controller = window.image.controller
    engine.clear_caches()
    window.open_store(str(tmp_path / "wide.zarr"), {})
    idle(window, 60)
    request = controller.request
    preview = {c for t in request.coarse_tiles for c in t.chunk_coords}
    assert preview  # the view is large enough for a preview
    for coords in preview:  # corrupt exactly the preview's chunks, then show the plane again
        (tmp_path / "wide.zarr" / "c" / str(coords[0]) / str(coords[1])).write_bytes(b"junk")
    engine.clear_caches()
    window.image.refresh(force=True)
    idle(window, 60)
    loader = controller.loader
    fine = len(controller.request.tiles)
    assert controller.request.coarse_tiles, "the reload was previewed again"
    assert all(f is not None for f in loader.futures[:fine]), "the fine pass never started"
    touched = {c for t in controller.request.tiles for c in t.chunk_coords}
    assert controller.loaded.any() and len(touched) > len(preview)
