"""A real mount of hostile stores answers EIO for the hostile nodes and keeps serving the
others (decompression bomb, metadata past a limit)."""

from __future__ import annotations

import errno
import os

import pytest

from tests.fuse.conftest import needs_fuse
from tests.hostile import write_bomb_store, write_hostile_metadata


@pytest.fixture
def bomb(tmp_path):
    return write_bomb_store(tmp_path / "b.zarr", "zstd")


@pytest.fixture
def hostile(tmp_path):
    return write_hostile_metadata(tmp_path / "h.zarr")


@needs_fuse
@pytest.mark.fuse
def test_mount_answers_eio_and_keeps_serving(bomb, hostile, mount, monkeypatch):
    monkeypatch.setenv("ZARRFS_MAX_METADATA_BYTES", "1M")
    m = mount(str(hostile))
    for name in ("huge_attrs", "deep_attrs", "deep_codec", "void_2g", "big_chunks"):
        with pytest.raises(OSError) as caught:
            os.listdir(m.path / name)
        assert caught.value.errno == errno.EIO, name
    assert (m.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
    b = mount(str(bomb))
    with pytest.raises(OSError) as caught:
        (b.path / "bomb" / "data.raw").read_bytes()
    assert caught.value.errno == errno.EIO
    assert (b.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
