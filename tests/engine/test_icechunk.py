"""Icechunk repositories through the engine: every version reads what was written then
(repositories written by Icechunk at test time, local and on moto's S3 server), history and
refs, chunks changed between versions, virtual chunks, and the errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import zarrfs.engine as engine
from tests.icechunk_repos import (
    write_history,
    write_virtual,
    write_virtual_http,
    write_virtual_s3,
)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("icechunk") / "repo")


def _assert_version(root, expected: dict) -> None:
    for path, values in expected.items():
        got = root[path][...]
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, values)


def test_every_snapshot_reads_what_was_written_then(history):
    for sid, expected in history.values.items():
        root = engine.open(str(history.path), snapshot=sid)
        assert root.url == f"{history.path}@{sid}"
        _assert_version(root, expected)
    assert "g/extra" not in engine.open(str(history.path), branch="main")


def test_branches_and_tags_open_their_snapshots(history):
    for name, sid in history.branches.items():
        _assert_version(engine.open(str(history.path), branch=name), history.values[sid])
    for name, sid in history.tags.items():
        _assert_version(engine.open(str(history.path), tag=name), history.values[sid])


def test_a_repository_is_found_by_its_layout_at_main(history):
    root = engine.open(str(history.path))
    assert root.url == f"{history.path}@{history.branches['main']}"
    assert root.attrs == {"title": "versioned"}
    assert root.keys() == ["counts", "g", "sparse", "stack"]
    repo, version = engine.version_of(root)
    assert (version.kind, version.name) == ("branch", "main")
    assert engine.version_of(root["g/temp"])[1] == version


def test_a_url_names_a_node_inside_a_repository(history):
    arr = engine.open(f"icechunk://{history.path}/g/temp", tag="v1")
    assert arr.path == "g/temp"
    np.testing.assert_array_equal(arr[...], history.values[history.tags["v1"]]["g/temp"])
    arr = engine.open(f"{history.path}/g/extra", branch="experiment")
    np.testing.assert_array_equal(arr[...], np.full(5, 7, "uint8"))


def test_history_refs_and_ancestry(history):
    repo = engine.Repository(str(history.path))
    assert repo.branches() == history.branches
    assert repo.tags() == history.tags
    snaps = repo.history()
    ids = [s.id for s in snaps]
    assert set(history.order) <= set(ids) and len(ids) == len(history.order) + 1  # + the root
    assert [s.written_at for s in snaps] == sorted((s.written_at for s in snaps), reverse=True)
    for s in snaps:
        if s.id in history.messages:
            assert s.message == history.messages[s.id]
    main = [s.id for s in repo.ancestry(branch="main")]
    assert main[:3] == history.order[2::-1]  # double, warm the corner, create
    assert repo.ancestry(branch="experiment")[1].id == history.tags["v1"]
    refs = repo.refs_at()
    assert sorted(refs[history.tags["v1"]]) == ["tag v1"]
    assert refs[history.branches["main"]] == ["branch main"]


def test_changed_chunks_between_versions(history):
    repo = engine.Repository(str(history.path))
    v1, exp = history.tags["v1"], history.branches["experiment"]
    assert repo.changed_chunks("g/temp", v1, exp) == {(1, 1)}
    create, warm = history.order[0], history.order[1]
    assert repo.changed_chunks("g/temp", create, warm) == {(0, 0)}
    assert repo.changed_chunks("counts", create, warm) == set()
    assert repo.changed_chunks("stack", create, warm) == {(2, 1, 1)}
    # siblings: what each side wrote since their common ancestor (v1), in either order
    main = history.branches["main"]
    everything = {(0, 0), (0, 1), (1, 0), (1, 1)}  # main doubled the whole array
    assert repo.changed_chunks("g/temp", main, exp) == everything
    assert repo.changed_chunks("g/temp", exp, main) == everything
    assert repo.changed_chunks("g/temp", main, main) == set()


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ({"branch": "nope"}, "no branch 'nope'"),
        ({"tag": "v9"}, "no tag 'v9'"),
        ({"snapshot": "AAAAAAAAAAAAAAAAAAAA"}, "no snapshot 'AAAAAAAAAAAAAAAAAAAA'"),
    ],
)
def test_a_version_that_does_not_exist(history, version, words):
    with pytest.raises(engine.NodeNotFoundError) as info:
        engine.open(str(history.path), **version)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_two_versions_asked_at_once(history):
    with pytest.raises(engine.UnsupportedError, match="choose one version"):
        engine.open(str(history.path), branch="main", tag="v1")


def test_not_a_repository(tmp_path):
    with pytest.raises(engine.NodeNotFoundError, match="no Icechunk repository"):
        engine.open(f"icechunk://{tmp_path}")
    with pytest.raises(engine.NodeNotFoundError, match="no Zarr group or array"):
        engine.open(str(tmp_path))


def test_a_repository_written_by_a_newer_icechunk(history, tmp_path):
    """A newer Icechunk writes a higher format version in each file's header (byte 36, after
    the magic bytes and the writer's name): the error says to upgrade, never "no node"."""
    newer = tmp_path / "newer"
    shutil.copytree(history.path, newer)
    for snapshot in (newer / "snapshots").iterdir():
        data = bytearray(snapshot.read_bytes())
        assert data.startswith("ICE🧊CHUNK".encode())
        data[36] = 9
        snapshot.write_bytes(bytes(data))
    with pytest.raises(engine.UnsupportedError, match="upgrade") as info:
        engine.open(str(newer))
    assert "more modern version" in str(info.value)


def test_an_unreadable_manifest_is_an_error_not_the_fill_value(history, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(history.path, broken)
    for manifest in (broken / "manifests").iterdir():
        manifest.write_bytes(b"junk")
    root = engine.open(str(broken))
    for path in ("g/temp", "stack", "sparse"):
        with pytest.raises(engine.StoreError, match="I/O error"):
            root[path][...]


def test_without_icechunk_one_line_says_what_to_install(history):
    code = (
        "import sys; sys.modules['icechunk'] = None\n"
        "import zarrfs.engine as e\n"
        f"try: e.open({str(history.path)!r})\n"
        "except e.UnsupportedError as x: print(x)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip().endswith("pip install 'zarrfs[icechunk]'")
    assert out.count("\n") == 1


def test_versions_over_s3(history, s3_server):
    url = s3_server.upload_dir(history.path, prefix="repos/history")
    options = s3_server.storage_options()
    for sid in history.order:
        _assert_version(engine.open(url, snapshot=sid, **options), history.values[sid])
    root = engine.open(url, **options)  # found by its layout over S3 too
    _assert_version(root, history.values[history.branches["main"]])
    exp = engine.open(f"icechunk://{url}/g", branch="experiment", **options)
    np.testing.assert_array_equal(exp["extra"][...], np.full(5, 7, "uint8"))


# ------------------------------------------------------------------ virtual chunks
def test_virtual_chunks_read_the_netcdf_file(tmp_path):
    virtual = write_virtual(tmp_path / "repo", tmp_path / "data")
    arr = engine.open(str(virtual.path))["temperature"]
    np.testing.assert_array_equal(arr[...], virtual.values)
    np.testing.assert_array_equal(arr[3, 1:4], virtual.values[3, 1:4])


def test_a_virtual_chunk_whose_file_changed_is_an_error(tmp_path):
    virtual = write_virtual(tmp_path / "repo", tmp_path / "data")
    later = time.time() + 3600
    os.utime(virtual.data_file, (later, later))
    arr = engine.open(str(virtual.path))["temperature"]
    with pytest.raises(engine.StoreError, match="has changed"):
        arr[...]


def test_a_virtual_chunk_whose_file_vanished_is_an_error(tmp_path):
    virtual = write_virtual(tmp_path / "repo", tmp_path / "data")
    virtual.data_file.unlink()
    arr = engine.open(str(virtual.path))["temperature"]
    with pytest.raises(engine.StoreError, match="not found") as info:
        arr[0]
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("endpoint", [True, False], ids=["container-endpoint", "reader-endpoint"])
def test_virtual_chunks_in_a_bucket_read_with_the_storage_options(tmp_path, s3_server, endpoint):
    virtual, _ = write_virtual_s3(
        tmp_path / "repo", tmp_path / "data", s3_server, endpoint=endpoint
    )
    arr = engine.open(str(virtual.path), **s3_server.storage_options())["temperature"]
    np.testing.assert_array_equal(arr[...], virtual.values)
    np.testing.assert_array_equal(arr[1:3, 2], virtual.values[1:3, 2])


def test_a_virtual_chunk_whose_object_changed_or_vanished_is_an_error(tmp_path, s3_server):
    virtual, url = write_virtual_s3(tmp_path / "repo", tmp_path / "data", s3_server)
    bucket, key = url.removeprefix("s3://").split("/", 1)
    client = s3_server.client()
    changed = bytearray(virtual.data_file.read_bytes())
    changed[-1] ^= 0xFF  # same size, other bytes: a new ETag
    client.put_object(Bucket=bucket, Key=key, Body=bytes(changed))
    arr = engine.open(str(virtual.path), **s3_server.storage_options())["temperature"]
    with pytest.raises(engine.StoreError, match="has changed") as info:
        arr[...]
    assert "\n" not in str(info.value)
    client.delete_object(Bucket=bucket, Key=key)
    with pytest.raises(engine.StoreError, match="temperature/c/0/0"):
        arr[0]


def test_virtual_chunks_over_http(tmp_path, http_server):
    virtual, server = write_virtual_http(tmp_path / "repo", tmp_path / "data", http_server)
    arr = engine.open(str(virtual.path))["temperature"]
    np.testing.assert_array_equal(arr[...], virtual.values)
    np.testing.assert_array_equal(arr[2:, 3:5], virtual.values[2:, 3:5])
    got = server.stats.records()
    assert {r.path for r in got} >= {"/surface.nc"}
    assert all(r.range for r in got if r.method == "GET")  # ranges of the file, not all of it


def test_a_virtual_chunk_over_http_whose_file_changed_or_vanished_is_an_error(
    tmp_path, http_server
):
    virtual, _ = write_virtual_http(tmp_path / "repo", tmp_path / "data", http_server)
    changed = bytearray(virtual.data_file.read_bytes())
    changed[-1] ^= 0xFF
    virtual.data_file.write_bytes(bytes(changed))
    arr = engine.open(str(virtual.path))["temperature"]
    with pytest.raises(engine.StoreError, match="has changed"):
        arr[...]
    virtual.data_file.unlink()
    with pytest.raises(engine.StoreError, match="temperature/c/1/0.*not found"):
        arr[3]


class _NoLookups:
    """Icechunk's repository with its branch lookup refused (everything else passed on)."""

    def __init__(self, repo):
        self._repo = repo

    def lookup_branch(self, name):
        raise AssertionError(f"asked Icechunk for branch {name!r}")

    def __getattr__(self, name):
        return getattr(self._repo, name)


def test_a_branch_tip_is_read_from_its_ref_file_every_open(tmp_path):
    """A branch resolves from its ref file (no round trip into Icechunk), anew at every open:
    a commit since opens at the new tip; a deleted branch (its ref file gone) and a ref file
    not as spec 1 writes it are Icechunk's to answer."""
    from tests.icechunk_repos import icechunk, zarr
    from zarrfs.engine import icechunk_repo

    path = tmp_path / "repo"
    writer = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    session = writer.writable_session("main")
    zarr.create_array(session.store, name="x", shape=(4,), chunks=(2,), dtype="int8")[:] = 1
    first = session.commit("ones")
    writer.create_branch("dev", first)
    repo = icechunk_repo.opened(str(path), {})
    kept = repo._repo
    repo._repo = _NoLookups(kept)
    try:
        assert repo.resolve().snapshot_id == first
        assert repo.branches() == {"dev": first, "main": first}
        session = writer.writable_session("main")
        zarr.open_array(session.store, path="x")[:] = 2
        second = session.commit("twos")
        root = engine.open(str(path))
        assert engine.version_of(root)[1].snapshot_id == second
        np.testing.assert_array_equal(root["x"][...], [2, 2, 2, 2])
        np.testing.assert_array_equal(engine.open(str(path), branch="dev")["x"][...], [1] * 4)
        writer.delete_branch("dev")
        with pytest.raises(engine.StoreError, match="asked Icechunk for branch 'dev'"):
            repo.resolve(branch="dev")
    finally:
        repo._repo = kept
    with pytest.raises(engine.NodeNotFoundError, match="no branch 'dev'"):
        engine.open(str(path), branch="dev")
    (path / "refs" / "branch.main" / "ref.json").write_text('{"snapshot": 7}')
    with pytest.raises(engine.ZarrfsError):  # Icechunk reads it, and says what is wrong
        engine.open(str(path))
