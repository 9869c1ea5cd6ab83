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
    # each is a node whose metadata cannot be used: its folder holds its documents and an
    # info.txt that ends with the reason, and no data file
    reasons = {
        "huge_attrs": "larger than the 1.0 MiB",
        "deep_attrs": "nested more than 640 levels",
        "deep_codec": "nested more than 640 levels",
        "void_2g": "ZARRFS_MAX_ITEMSIZE",
        "big_chunks": "ZARRFS_MAX_CHUNK_BYTES",
    }
    for name, reason in reasons.items():
        assert sorted(os.listdir(m.path / name)) == ["attrs.json", "info.txt", "meta.json"], name
        assert reason in (m.path / name / "info.txt").read_text(), name
    assert (m.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
    b = mount(str(bomb))
    with pytest.raises(OSError) as caught:
        (b.path / "bomb" / "data.raw").read_bytes()
    assert caught.value.errno == errno.EIO
    assert (b.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
