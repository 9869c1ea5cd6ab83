"""A huge array costs what its metadata costs, in a real mount: 2**40 planes list lazily
(capped) and every plane is reachable by its name; an array of 2**40 rows is offered as
``.npy``/``.raw`` but not as TIFF (its strip tables would be terabytes); one of 2**62 rows, past
any file size, offers no byte files while its other files work; ``.zarrfs/`` answers at once.
The daemon's resident memory is checked after each."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from tests.fuse.conftest import needs_fuse
from tests.hostile import rss, write_huge_shapes

pytestmark = [needs_fuse, pytest.mark.fuse]

RSS_BOUND = 400 << 20


@pytest.fixture
def huge(tmp_path):
    return write_huge_shapes(tmp_path / "huge.zarr")


def test_two_to_the_forty_planes(huge, mount):
    m = mount(str(huge / "planes"), "max_listed=5000")
    planes = m.path / "planes"
    with os.scandir(planes) as listing:  # the first page only: readdir with offsets
        first = [next(listing).name for _ in range(4)]
    assert first == ["dim0_0000000000000.npy", "dim0_0000000000000.tif"] + [
        "dim0_0000000000001.npy",
        "dim0_0000000000001.tif",
    ]
    last = planes / f"dim0_{(1 << 40) - 1}.npy"
    assert np.load(last).tolist() == [[3, 3], [3, 3]]
    assert not (planes / f"dim0_{1 << 40}.npy").exists()
    assert json.loads((m.path / ".zarrfs" / "mount.json").read_text())["pid"]
    count = subprocess.run(
        f"ls -f {planes} | wc -l", shell=True, capture_output=True, text=True, timeout=120
    )
    assert int(count.stdout) == 5000 + 2  # capped, with "." and ".."
    assert rss(m.process.pid) < RSS_BOUND


@pytest.mark.parametrize("name", ["rows", "rows62"])
def test_rows_past_a_listing_or_a_file(huge, mount, name):
    m = mount(str(huge / name))
    mount_json = json.loads((m.path / ".zarrfs" / "mount.json").read_text())
    assert mount_json["pid"] == m.process.pid
    names = sorted(os.listdir(m.path))
    assert "data.tif" not in names and "info.txt" in names
    assert str(1 << (40 if name == "rows" else 62)) in (m.path / "info.txt").read_text()
    if name == "rows":
        raw = m.path / "data.raw"
        assert raw.stat().st_size == 4 << 40
        with open(raw, "rb") as f:
            f.seek((4 << 40) - 8)
            assert f.read() == bytes([3]) * 8
    else:
        assert "data.raw" not in names and "data.npy" not in names
    assert rss(m.process.pid) < RSS_BOUND
