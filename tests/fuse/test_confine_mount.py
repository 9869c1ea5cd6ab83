"""Who can read what through a root mount with ``allow_other``.

The store holds ``a``, whose chunk is a symlink to a root-only file (mode 0600) outside the
store, and ``b``, an ordinary array. Mounted by root with ``allow_other``, every user reads
``b``; nobody, root included, reads the secret through ``a`` (EIO), unless the mount says
``follow_symlinks``: then every user reads it, which is the risk that option takes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.engine.test_confine import store  # noqa: F401 - the fixture
from tests.fuse.conftest import needs_fuse

pytestmark = [
    needs_fuse,
    pytest.mark.fuse,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root"),
]


def as_nobody(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command],
        capture_output=True,
        timeout=30,
    )


@pytest.fixture
def public_dir():
    """A directory every user may enter (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="zarrfs-allow-other-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def reachable(mount, store, public_dir):  # noqa: F811
    """``reachable(*options)``: the store mounted by root at a directory nobody can enter."""

    def start(*options):
        mounted = mount(str(store), *options)
        point = public_dir / f"mnt{len(list(public_dir.iterdir()))}"
        point.mkdir()
        subprocess.run(["mount", "--bind", str(mounted.path), str(point)], check=True)
        return point

    points = []
    try:
        yield lambda *o: points.append(start(*o)) or points[-1]
    finally:
        for point in points:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def test_allow_other_serves_the_store_but_never_what_a_symlink_leads_to(
    reachable,
    store,  # noqa: F811
):
    point = reachable("allow_other")
    secret = (store.parent / "secret").read_bytes()
    assert as_nobody("cat", str(store.parent / "secret")).returncode != 0  # not theirs to read
    plain = as_nobody("cat", str(point / "b" / "data.raw"))
    assert plain.returncode == 0 and plain.stdout == bytes([9]) * len(secret)
    leaked = as_nobody("cat", str(point / "a" / "data.raw"))
    assert leaked.returncode != 0 and leaked.stdout != secret
    assert b"Input/output error" in leaked.stderr
    with pytest.raises(OSError) as caught:  # root reading through the mount: the same
        (point / "a" / "data.raw").read_bytes()
    assert caught.value.errno == 5


def test_without_allow_other_no_other_user_gets_in(reachable):
    point = reachable()
    denied = as_nobody("ls", str(point))
    assert denied.returncode != 0 and b"Permission denied" in denied.stderr


def test_follow_symlinks_serves_the_linked_file_to_everyone(reachable, store):  # noqa: F811
    point = reachable("allow_other", "follow_symlinks")
    leaked = as_nobody("cat", str(point / "a" / "data.raw"))
    assert leaked.returncode == 0 and leaked.stdout == (store.parent / "secret").read_bytes()
