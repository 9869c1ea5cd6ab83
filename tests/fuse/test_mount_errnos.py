"""The errno table on a real mount: only not-found errors are ENOENT; a bug is EIO, logged."""

from __future__ import annotations

import errno
import sys

import numpy as np
import pytest

from tests.fuse import conftest
from tests.fuse.conftest import needs_fuse

pytestmark = needs_fuse

#: The mount's own CLI, with one bug planted first: reading a small document that names the
#: attribute "plant-a-bug" raises a bare KeyError, as a forgotten dict lookup in the mount would.
PLANTED = """
import sys
from zarrfs.fuse import files

def _planted(original):
    def read(self, *args):
        if b'"plant' + b'-a-bug"' in self.content:
            raise KeyError("planted")
        return original(self, *args)
    return read

files.BytesFile.read = _planted(files.BytesFile.read)
files.BytesFile.readinto = _planted(files.BytesFile.readinto)
sys.argv[0] = "zarrfs"
from zarrfs.fuse.cli import main
sys.exit(main())
"""


@pytest.fixture
def planted_mount(mount, monkeypatch):
    monkeypatch.setattr(
        conftest, "zarrfs_command", lambda *args: [sys.executable, "-c", PLANTED, *args]
    )
    return mount


def test_a_bare_key_error_is_eio_logged_once_with_its_traceback(planted_mount, zarr_writer):
    data = np.arange(12, dtype="u2").reshape(3, 4)
    written = zarr_writer(data, path="kaput", chunks=(2, 2), attributes={"plant-a-bug": True})
    mounted = planted_mount(written.root)
    for _ in range(3):  # the kernel and readers ask again; the log says it once
        with pytest.raises(OSError) as caught:
            (mounted.path / "kaput" / "attrs.json").read_bytes()
        assert caught.value.errno == errno.EIO
    np.testing.assert_array_equal(np.load(mounted.path / "kaput" / "data.npy"), data)
    log = (mounted.path / ".zarrfs" / "log").read_text()
    assert log.count("failed unexpectedly; answering EIO") == 1, log
    assert log.count("Traceback") == 1 and "KeyError: 'planted'" in log, log


def test_only_not_found_errors_are_enoent():
    from zarrfs.engine import NodeNotFoundError
    from zarrfs.fuse.errnos import errno_for

    assert errno_for(NodeNotFoundError("x", path="a")) == errno.ENOENT
    assert errno_for(FileNotFoundError("x")) == errno.ENOENT
    assert errno_for(KeyError("x")) == errno.EIO
    assert errno_for(LookupError("x")) == errno.EIO
