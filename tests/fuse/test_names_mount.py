"""In a real mount, children that cannot be a file name are not listed, and a phantom never
appears (a child named ``nul\\0z`` once listed as an empty ``nul`` directory)."""

from __future__ import annotations

import os

import pytest

from tests.fuse.conftest import needs_fuse
from tests.hostile import write_bad_names

pytestmark = [needs_fuse, pytest.mark.fuse]


def test_unusable_names_are_not_listed(tmp_path, mount):
    root = write_bad_names(tmp_path / "s.zarr")
    m = mount(str(root))
    assert sorted(os.listdir(m.path)) == [".zarrfs", "attrs.json", "good", "info.txt", "meta.json"]
    assert not (m.path / "nul").exists()
    assert (m.path / "good" / "data.raw").read_bytes() == bytes([7]) * 4096
    assert max(len(n.encode()) for n in os.listdir(m.path)) <= 255
