"""Local reads through the store: whole objects, ranges and suffixes, as ByteRequest says."""

from __future__ import annotations

import pytest

from zarrfs.engine.store import ByteRequest, Store

DATA = bytes(range(256)) * 40  # 10,240 bytes, every offset distinguishable


@pytest.fixture
def store(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0").write_bytes(DATA)
    (tmp_path / "empty").write_bytes(b"")
    return Store.from_url(str(tmp_path))


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (None, None, DATA),
        (0, 100, DATA[:100]),
        (5000, 5100, DATA[5000:5100]),
        (10_000, 20_000, DATA[10_000:]),  # past the end: what there is
        (20_000, 20_100, b""),
        (-100, None, DATA[-100:]),  # suffix
        (-20_000, None, DATA),  # a suffix longer than the object
        (300, None, DATA[300:]),  # from an offset to the end
    ],
)
def test_local_ranges(store, start, end, expected):
    assert store.fetch([ByteRequest("c/0", start, end)]) == [expected]


def test_local_whole_objects_missing_and_empty(store):
    assert store.fetch([ByteRequest("c/0"), ByteRequest("c/1"), ByteRequest("empty")]) == [
        DATA,
        None,
        b"",
    ]


def test_a_folder_where_an_object_should_be_is_an_error_not_data(store):
    out = store.fetch_each([ByteRequest("c")])
    assert isinstance(out[0], Exception) and "'c'" in str(out[0])
