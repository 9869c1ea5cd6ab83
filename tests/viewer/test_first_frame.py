"""The first composite of a remote image, as ``zarrfs view URL`` opens it: the store opened
before the window exists (``early_open``), every chunk of the plane's channels in flight at
once (counted by the loopback server), the pixels a numpy blend of what was written; a store
that cannot be opened is reported, never waited on."""

from __future__ import annotations

import numpy as np

from tests.ome_writers import write_czyx
from tests.viewer.test_composite import assert_close, numpy_blend
from zarrfs.viewer import early_open

COLORS = [(0, 0, 255), (0, 255, 0), (255, 0, 0)]
WINDOWS = [(0, 3000), (0, 2000), (500, 4000)]


def write_image(path, data) -> None:
    """3 channels x 3 z of 64 x 96 in 32 x 32 chunks: 6 chunks per channel and plane (a tile
    each; the engine's I/O pool has 8 threads on 2 CPUs, and each tile's read holds one while
    its requests are on the wire: more tiles than that would go in two waves)."""
    channels = [
        ("".join(f"{v:02X}" for v in c), s, e) for c, (s, e) in zip(COLORS, WINDOWS, strict=True)
    ]
    write_czyx(path, data, (1, 1, 32, 32), channels, rdefs={"defaultZ": 1})


def test_channels_of_the_first_plane_are_fetched_at_once(window, idle, tmp_path, http_server):
    data = np.random.default_rng(4).integers(0, 4000, (3, 3, 64, 96), dtype=np.uint16)
    write_image(tmp_path / "image.zarr", data)
    server = http_server(tmp_path / "image.zarr", latency=0.3)
    opening = early_open.start(server.url, {})
    window.open_store(server.url, {}, opening=opening)
    idle(window)
    view = window.image
    assert view.state.indices[1] == 1  # defaultZ
    assert_close(view.composite_item, numpy_blend(list(data[:, 1]), COLORS, WINDOWS))

    plane = r"/0/\d\.1\.\d\.\d$"  # v2 chunk keys c.z.y.x of the plane z = 1
    keys = [r.path for r in server.stats.records(plane)]
    assert sorted(keys) == sorted(
        f"/0/{c}.1.{y}.{x}" for c in range(3) for y in range(2) for x in range(3)
    )
    assert server.stats.max_in_flight(plane) == 18  # 3 channels x 6 chunks, all at once
    assert server.stats.round_trips(plane) == 1


def test_a_store_that_cannot_be_opened_is_reported(window, idle, tmp_path):
    missing = str(tmp_path / "nothing-here.zarr")
    opening = early_open.start(missing, {})
    window.open_store(missing, {}, opening=opening)
    idle(window)
    assert opening.exception() is not None
    assert window.root is None
    assert any("nothing-here.zarr" in line for line in window.message_bar.messages())


def test_the_likely_first_plane_is_read_ahead(ome_images):
    """``zarrfs view`` starts reading the plane a new window shows first: the default z,
    every channel, at the level that screen needs."""
    import zarrfs
    from zarrfs.viewer import pyramid

    root = zarrfs.open(str(ome_images("ome-zarr-py", "0.4").path))
    found = pyramid.find_pyramid(root, root)
    everything = slice(None)
    assert early_open.first_plane(found) == (0, (everything, 2, everything, everything))
    # a screen of 20 x 20 pixels: the 24 x 32 level is the coarsest that still fills it
    assert early_open.first_plane(found, (20, 20)) == (1, (everything, 2, everything, everything))
