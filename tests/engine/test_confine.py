"""Local stores never leave their root: a chunk or metadata document that is a symlink to a file
outside the store, and keys with ``..``, are refused with a StoreError naming the key, unless the
user opts in with ``follow_symlinks=true``."""

from __future__ import annotations

import os

import pytest

import zarrfs
import zarrfs.engine as engine
from tests.hostile import CHUNK, write_v2_array
from zarrfs.engine import confine
from zarrfs.engine.store import Store
from zarrfs.engine.store_request import ByteRequest


@pytest.fixture(params=["openat2", "proc"], ids=["openat2", "without-openat2"])
def store(request, tmp_path, monkeypatch):
    """``s.zarr`` with ``a`` (its chunk a symlink to ``secret`` beside the store), ``b`` (a
    plain chunk), ``c`` (its chunk a symlink to b's chunk, inside the store) and ``d`` (its
    ``.zarray`` a symlink out of the store); checked by openat2, and by the fallback where the
    kernel lacks it."""
    if request.param == "proc":
        monkeypatch.setattr(confine, "_openat2", lambda: None)
    secret = tmp_path / "secret"
    secret.write_bytes(bytes(range(256)) * (CHUNK // 256))
    secret.chmod(0o600)
    root = tmp_path / "s.zarr"
    root.mkdir()
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    for name in "abc":
        write_v2_array(root, name, bytes([9]) * CHUNK, None)
    (root / "a" / "0").unlink()
    (root / "a" / "0").symlink_to(secret)
    (root / "c" / "0").unlink()
    (root / "c" / "0").symlink_to("../b/0")
    outside = tmp_path / "outside"
    write_v2_array(outside, "x", bytes(CHUNK), None)
    (root / "d").mkdir()
    (root / "d" / ".zarray").symlink_to(outside / "x" / ".zarray")
    return root


def test_a_chunk_symlinked_out_of_the_store_is_refused(store):
    engine.clear_caches()
    group = zarrfs.open(str(store))
    with pytest.raises(engine.StoreError, match="outside the store's root") as caught:
        group["a"][...]
    assert caught.value.key == "a/0"
    assert "follow_symlinks=true" in str(caught.value)
    assert (group["b"][...] == 9).all()
    assert (group["c"][...] == 9).all()  # a symlink that stays inside is an ordinary key


def test_metadata_symlinked_out_of_the_store_is_refused(store):
    with pytest.raises(engine.StoreError, match="outside") as caught:
        zarrfs.open(str(store / "d"))
    assert caught.value.key.endswith(".zarray")


def test_follow_symlinks_opts_in(store):
    engine.clear_caches()
    group = zarrfs.open(str(store), follow_symlinks=True)
    assert group["a"][...].tobytes() == (store.parent / "secret").read_bytes()
    assert zarrfs.open(str(store / "d"), follow_symlinks=True).shape == (CHUNK,)
    for value in ("true", "false", 1):  # an explicit argument: "false" must not mean True
        with pytest.raises(ValueError, match="follow_symlinks must be true or false"):
            zarrfs.open(str(store), follow_symlinks=value)


def test_a_directory_symlinked_out_of_the_store_is_refused(store, tmp_path):
    (store / "e").symlink_to(tmp_path / "outside")
    group = zarrfs.open(str(store))
    with pytest.raises(engine.StoreError, match="outside"):
        group["e/x"]
    with pytest.raises(engine.StoreError, match="outside"):
        group.store.list_dir("e")


def test_a_dotdot_key_is_refused_everywhere(store):
    group = zarrfs.open(str(store))
    for path in ("../outside/x", "b/../b", "./b", "b//c"):
        with pytest.raises((engine.StoreError, engine.NodeNotFoundError)):
            group[path]


def test_a_swapped_symlink_is_checked_at_open(store):
    """The check is on the file the kernel opened, not on a name resolved beforehand."""
    engine.clear_caches()
    link = store / "b" / "0"
    link.unlink()
    os.symlink(store.parent / "secret", link)
    with pytest.raises(engine.StoreError, match="outside"):
        zarrfs.open(str(store))["b"][...]


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("a/../x", "'..'"),
        ("../x", "'..'"),
        ("..", "'..'"),
        ("a/./x", "'.'"),
        ("a//x", "empty"),
        ("a/", "empty"),
        ("a\0x", "NUL"),
    ],
)
def test_bad_key_reason_names_what_is_wrong(key, words):
    reason = confine.bad_key_reason(key)
    assert reason is not None and words in reason


@pytest.mark.parametrize("key", ["a/b/c", "c/0/1", ".zarray", "a..b/x", "...", "a/.b"])
def test_bad_key_reason_passes_ordinary_keys(key):
    assert confine.bad_key_reason(key) is None


SECRET = b"not for the store's readers"
BAD_KEYS = ["a/../../secret", "../secret", "a/../x"]


def _refused(store, key):
    with pytest.raises(engine.StoreError, match="refusing key") as err:
        store.get(key)
    assert err.value.key == key
    with pytest.raises(engine.StoreError, match="refusing key"):
        store.fetch([ByteRequest(key, 0, 4)])


def test_a_dotdot_key_never_reaches_an_http_server(http_server):
    """A remote store receives the raw key: a server (or a client normalising the URL) would
    answer ``store/../secret`` with the object beside the store."""
    server = http_server(
        {"store/.zgroup": b'{"zarr_format": 2}', "store/x": b"x", "secret": SECRET}
    )
    store = Store.from_url(server.url_for("store"))
    assert store.get(".zgroup") is not None
    before = sum(server.stats.requests.values())
    for key in BAD_KEYS:
        _refused(store, key)
    assert sum(server.stats.requests.values()) == before  # not one request went out


def test_a_dotdot_key_never_reaches_s3(s3_server, tmp_path):
    local = tmp_path / "bucket"
    (local / "store").mkdir(parents=True)
    (local / "store" / ".zgroup").write_text('{"zarr_format": 2}')
    (local / "store" / "x").write_bytes(b"x")
    (local / "secret").write_bytes(SECRET)
    url = s3_server.upload_dir(local)
    store = Store.from_url(f"{url.rstrip('/')}/store", **s3_server.storage_options())
    assert store.get(".zgroup") is not None
    for key in BAD_KEYS:
        _refused(store, key)
