"""Names that cannot be a file name (empty, '.', '..', '/', NUL, over 255 bytes) are left out
of listings, with one warning, and reach nothing, consolidated entries like
``../outside/.zarray`` included."""

from __future__ import annotations

import logging

import pytest

import zarrfs
import zarrfs.engine as engine
from tests.hostile import BAD_NAMES, write_bad_names


def test_unusable_names_are_left_out_once_and_reach_nothing(tmp_path, caplog):
    root = write_bad_names(tmp_path / "s.zarr")
    with caplog.at_level(logging.WARNING, logger="zarrfs.engine.names"):
        group = zarrfs.open(str(root))
        assert group.keys() == ["good"]
        assert group.keys() == ["good"]
    assert len([r for r in caplog.records if "cannot be a file name" in r.message]) == 1
    assert (group["good"][...] == 7).all()
    for name in [*BAD_NAMES, "../outside", "good/../good", "good\0", "e"]:
        with pytest.raises(engine.NodeNotFoundError):
            group[name]
