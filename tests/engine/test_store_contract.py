"""The store contract, one test class run against every store kind: memory, local, zip, HTTP
(the loopback server), S3 (moto) and Azure (Azurite), HTTP and S3 through obstore and through
fsspec (``-O transport=fsspec``). Gets, byte ranges, absent keys and listings hold for all;
refusals (403) and faults are injected where a server answers (HTTP, S3), timeouts short.

A new transport joins by adding a kind to ``KINDS`` and a maker to ``_MAKERS``.
"""

from __future__ import annotations

import uuid
import zipfile
from dataclasses import dataclass

import fsspec
import pytest

from zarrfs.engine import AccessDeniedError, StoreError
from zarrfs.engine.store import ByteRequest, Store

DATA = bytes(range(256)) * 40  # 10,240 bytes, every offset distinguishable
FILES = {
    "c/0": DATA,
    "empty": b"",
    "sub/a": b"alpha",
    "sub/b": b"beta",
    "sub/deep/z": b"zed",
}
KINDS = ["memory", "local", "zip", "http", "s3", "http-fsspec", "s3-fsspec", "azure"]


@dataclass
class Kind:
    """A store over ``FILES``; ``faults`` is the server's fault switchboard (None: no server)."""

    open: object  # () -> Store, a fresh one each call
    faults: object = None


def _local(tmp_path, request) -> Kind:
    for key, value in FILES.items():
        (tmp_path / "store" / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "store" / key).write_bytes(value)
    return Kind(lambda: Store.from_url(str(tmp_path / "store")))


def _memory(tmp_path, request) -> Kind:
    root = f"memory://contract-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    for key, value in FILES.items():
        fs.pipe(f"{root}/{key}", value)
    request.addfinalizer(lambda: fs.rm(root, recursive=True))
    return Kind(lambda: Store.from_url(root))


def _zip(tmp_path, request) -> Kind:
    path = tmp_path / "store.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for key, value in FILES.items():
            archive.writestr(key, value)
    return Kind(lambda: Store.from_url(f"zip::{path}"))


def _http(tmp_path, request, **options) -> Kind:
    _local(tmp_path, request)
    server = request.getfixturevalue("http_server")(tmp_path / "store")
    return Kind(lambda: Store.from_url(server.url, **options), server.faults)


def _s3(tmp_path, request, **more) -> Kind:
    _local(tmp_path, request)
    url, options = request.getfixturevalue("s3_store")(tmp_path / "store")
    faults = request.getfixturevalue("s3_server").faults
    request.addfinalizer(faults.clear)
    return Kind(lambda: Store.from_url(url, **options, **more), faults)


def _azure(tmp_path, request) -> Kind:
    _local(tmp_path, request)
    url, options = request.getfixturevalue("azure_store")(tmp_path / "store")
    return Kind(lambda: Store.from_url(url, **options))


_MAKERS = {
    "memory": _memory,
    "local": _local,
    "zip": _zip,
    "http": _http,
    "s3": _s3,
    "http-fsspec": lambda *a: _http(*a, transport="fsspec"),
    "s3-fsspec": lambda *a: _s3(*a, transport="fsspec"),
    "azure": _azure,
}


@pytest.fixture(params=KINDS)
def kind(request, tmp_path, monkeypatch) -> Kind:
    monkeypatch.setenv("ZARRFS_TIMEOUT", "0.5")  # a stall fails in about a second, not 60
    return _MAKERS[request.param](tmp_path, request)


def _server(kind: Kind):
    if kind.faults is None:
        pytest.skip("no server in front of this store to refuse or fail")
    return kind.faults


class TestStoreContract:
    def test_gets_whole_objects(self, kind):
        store = kind.open()
        assert store.get("c/0") == DATA
        assert store.get("empty") == b""
        assert store.fetch([ByteRequest("sub/a"), ByteRequest("sub/deep/z")]) == [b"alpha", b"zed"]

    @pytest.mark.parametrize(
        ("start", "end", "expected"),
        [
            (0, 100, DATA[:100]),
            (5000, 5100, DATA[5000:5100]),
            (10_000, 20_000, DATA[10_000:]),  # past the end: what there is
            (-100, None, DATA[-100:]),  # a suffix
            (300, None, DATA[300:]),  # from an offset to the end
        ],
    )
    def test_byte_ranges(self, kind, start, end, expected):
        assert kind.open().fetch([ByteRequest("c/0", start, end)]) == [expected]

    def test_absent_keys_are_none_not_errors(self, kind):
        store = kind.open()
        requests = [ByteRequest("c/1"), ByteRequest("nothing/here"), ByteRequest("c/1", 0, 10)]
        assert store.fetch(requests) == [None, None, None]

    def test_listings(self, kind):
        store = kind.open()
        assert store.list_dir("") == (["c", "sub"], ["empty"])
        assert store.list_dir("sub") == (["deep"], ["a", "b"])
        assert store.list_dir("sub/deep") == ([], ["z"])

    def test_a_refused_object_is_access_denied_never_absent(self, kind):
        _server(kind).status(403, pattern=r"c/0")
        store = kind.open()
        [refused, fine] = store.fetch_each([ByteRequest("c/0"), ByteRequest("sub/a")])
        assert isinstance(refused, AccessDeniedError) and refused.key == "c/0"
        assert fine == b"alpha"

    def test_a_refused_listing_is_access_denied(self, kind):
        _server(kind).status(403, pattern=r"(^|/)sub/?$|prefix=.*sub")
        with pytest.raises(AccessDeniedError):
            kind.open().list_dir("sub")

    def test_a_passing_fault_is_retried(self, kind):
        _server(kind).status(503, count=1, pattern=r"c/0")
        assert kind.open().get("c/0") == DATA

    def test_a_lasting_fault_is_a_store_error_naming_the_key(self, kind):
        faults = _server(kind)
        faults.status(503, pattern=r"c/0")
        [failed] = kind.open().fetch_each([ByteRequest("c/0")])
        assert isinstance(failed, StoreError) and not isinstance(failed, AccessDeniedError)
        assert failed.key == "c/0"
        faults.clear()
        assert kind.open().get("c/0") == DATA  # a fresh store: the server answers again

    def test_a_stalled_request_times_out(self, kind):
        _server(kind).stall(60, pattern=r"c/0")
        [stalled, fine] = kind.open().fetch_each([ByteRequest("c/0"), ByteRequest("sub/b")])
        assert isinstance(stalled, StoreError) and stalled.key == "c/0"
        assert fine == b"beta"
