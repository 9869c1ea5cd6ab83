"""A mounted Icechunk repository (written by Icechunk at test time): the chosen version at the
root, every branch, tag and snapshot as a folder that reads back exact ``.npy``, ``info.txt``
of a snapshot folder, and EIO (the daemon staying up) for a virtual chunk whose file changed."""

from __future__ import annotations

import errno
import os
import time

import numpy as np
import pytest

from tests.icechunk_repos import write_history, write_virtual
from zarrfs.fuse.versions import snapshot_dir_name

pytestmark = pytest.mark.fuse


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("icechunk_mount") / "repo")


def _assert_folder(folder, expected: dict) -> None:
    for path, values in expected.items():
        got = np.load(folder / path / "data.npy")
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, values)


def test_every_version_is_a_folder(history, mount):
    mnt = mount(str(history.path)).path
    names = os.listdir(mnt)
    assert {"counts", "g", "info.txt", "@branches", "@tags", "@snapshots"} <= set(names)
    _assert_folder(mnt, history.values[history.branches["main"]])
    assert sorted(os.listdir(mnt / "@branches")) == ["experiment", "main"]
    assert os.listdir(mnt / "@tags") == ["v1"]
    for name, sid in history.branches.items():
        _assert_folder(mnt / "@branches" / name, history.values[sid])
    _assert_folder(mnt / "@tags" / "v1", history.values[history.tags["v1"]])
    assert not (mnt / "@tags" / "v1" / "g" / "extra").exists()
    snapshots = os.listdir(mnt / "@snapshots")
    assert len(snapshots) == len(history.order) + 1  # and the repository's first, empty
    by_id = {name.rsplit("_", 1)[1]: name for name in snapshots}
    assert sorted(snapshots)[1:] == [by_id[sid] for sid in history.order]  # ls sorts by time
    for sid in history.order:
        _assert_folder(mnt / "@snapshots" / by_id[sid], history.values[sid])
    first = sorted(snapshots)[0]
    assert os.listdir(mnt / "@snapshots" / first) == ["info.txt"]


def test_a_snapshot_folder_says_which_version(history, mount):
    mnt = mount(str(history.path)).path
    warm = history.tags["v1"]
    folder = next(n for n in os.listdir(mnt / "@snapshots") if n.endswith(warm))
    text = (mnt / "@snapshots" / folder / "info.txt").read_text()
    assert f"snapshot      {warm}\n" in text
    assert "message       warm the corner\n" in text
    assert f"parent        {history.order[0]}\n" in text
    assert "tag v1" in text
    assert "url" in text and "group (Zarr v3)" in text  # then the root's summary, as anywhere
    assert folder.startswith(text.split("time          ")[1][:10].replace("-", ""))


def test_a_mount_at_a_chosen_version(history, mount):
    mnt = mount(str(history.path), storage_options={"branch": "experiment"}).path
    _assert_folder(mnt, history.values[history.branches["experiment"]])
    text = (mnt / "info.txt").read_text()
    assert "version       branch experiment\n" in text
    assert f"snapshot      {history.branches['experiment']}\n" in text
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "@branches" / "nope")


def test_snapshot_folder_names_sort_by_time():
    import datetime

    import zarrfs.engine as engine

    def snap(t, sid):
        return engine.Snapshot(sid, None, t, "", {})

    early = datetime.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC)
    late = early + datetime.timedelta(microseconds=1)
    names = [snapshot_dir_name(snap(late, "AAAA")), snapshot_dir_name(snap(early, "ZZZZ"))]
    assert sorted(names) == names[::-1]
    assert names[1] == "20260102T030405.000006Z_ZZZZ"


def test_a_virtual_chunk_whose_file_changed_is_eio(tmp_path, mount):
    virtual = write_virtual(tmp_path / "repo", tmp_path / "data")
    mnt = mount(str(virtual.path)).path
    np.testing.assert_array_equal(np.load(mnt / "temperature" / "data.npy"), virtual.values)
    mnt2 = mount(str(virtual.path)).path  # a fresh daemon: nothing of the file in its caches
    later = time.time() + 3600
    os.utime(virtual.data_file, (later, later))
    with pytest.raises(OSError) as info:
        (mnt2 / "temperature" / "data.npy").read_bytes()
    assert info.value.errno == errno.EIO
    assert "info.txt" in os.listdir(mnt2 / "temperature")  # the daemon is still up
