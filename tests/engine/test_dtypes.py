"""Data types and fill values, checked bit-exactly against zarr-python 3.1.6 and the corpus.

zarr-python writes the metadata (and reads it back: ``arr.dtype``, ``arr.fill_value``); our parser
must agree on every byte of the fill value. The conformance corpus adds stores from other writers
(zarr-python 2, ome-zarr) and expected values for arrays whose chunks are all missing.
"""

from __future__ import annotations

import base64
import json
import pathlib
import warnings

import numpy as np
import pytest

from zarrfs.engine.dtypes import (
    DataType,
    parse_fill_value,
    parse_v2_dtype,
    parse_v3_data_type,
)

zarr = pytest.importorskip("zarr")
from zarr.core.dtype import VariableLengthBytes  # noqa: E402

CONFORMANCE = pathlib.Path("/work/shared/conformance")
OBJECT_CODECS = ("vlen-utf8", "vlen-bytes", "json2", "categorize", "pickle", "msgpack2")


def bits(value, dtype: np.dtype) -> bytes:
    """The bytes of ``value`` as an element of ``dtype`` (NaN payloads and -0.0 included)."""
    return np.asarray(value).astype(dtype, casting="unsafe").tobytes()


def native_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.fields is not None:
        return np.dtype([(n, native_dtype(dtype.fields[n][0])) for n in dtype.names])
    if dtype.subdtype is not None:
        return np.dtype((native_dtype(dtype.subdtype[0]), dtype.subdtype[1]))
    return dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype


def all_native(dtype: np.dtype) -> bool:
    if dtype.fields is not None:
        return all(all_native(dtype.fields[n][0]) for n in dtype.names)
    if dtype.subdtype is not None:
        return all_native(dtype.subdtype[0])
    return dtype.isnative


def object_codec(meta: dict) -> str | None:
    codecs = (meta.get("filters") or []) + ([meta["compressor"]] if meta.get("compressor") else [])
    return next((c["id"] for c in codecs if c["id"] in OBJECT_CODECS), None)


def parse_document(meta: dict, path: str | None = None) -> tuple[DataType, object]:
    """What the engine's metadata parser does with one stored array document."""
    if meta["zarr_format"] == 2:
        data_type = parse_v2_dtype(meta["dtype"], object_codec=object_codec(meta), path=path)
    else:
        data_type = parse_v3_data_type(meta["data_type"], path=path)
    fill = parse_fill_value(meta["fill_value"], data_type, meta["zarr_format"], path=path)
    return data_type, fill


def assert_same_fill(ours, theirs, data_type: DataType) -> None:
    """Bit-exact comparison; ``theirs`` None means zarr-python's v2 "undefined" (zeros)."""
    if data_type.variable_length:
        empty = "" if data_type.variable_length == "utf8" else b""
        assert ours == (empty if theirs is None else theirs)
        assert type(ours) is type(empty)
        return
    assert isinstance(ours, np.ndarray) and ours.shape == () and ours.dtype == data_type.dtype
    expected = np.zeros((), data_type.dtype) if theirs is None else theirs
    assert ours.tobytes() == bits(expected, data_type.dtype)


# --- oracle: zarr-python writes, we parse --------------------------------------------------

NAN32_PAYLOAD = np.array(0x7FC00001, "u4").view("f4")[()]
NAN64_NEG = np.array(0xFFF8000000000000, "u8").view("f8")[()]
STRUCT = [("x", "<i4"), ("y", "<f8"), ("flag", "?")]
STRUCT_BE = [("a", ">i2"), ("b", ">f4")]
STRUCT_NESTED = [("a", "<i4"), ("b", [("c", "<f8"), ("d", "S2")])]

ORACLE_CASES = [
    ("bool", True),
    ("bool", False),
    ("|i1", -128),
    ("|i1", 127),
    ("|u1", 255),
    ("<i2", -9),
    (">i2", 300),
    ("<i4", -1),
    (">i4", 2**31 - 1),
    ("<i8", -(2**63)),
    ("<i8", 2**53 + 1),
    ("<u8", 2**64 - 1),
    (">u8", 2**63 + 12345),
    ("<u4", 0),
    ("<u2", 65535),
    ("<f2", 1.5),
    ("<f2", np.nan),
    ("<f2", np.inf),
    ("<f2", -np.inf),
    ("<f2", -0.0),
    ("<f2", 65504.0),
    ("<f2", 6e-8),
    ("<f4", 3.4e38),
    ("<f4", 1e-45),
    (">f4", np.nan),
    ("<f4", NAN32_PAYLOAD),
    ("<f4", -0.0),
    ("<f8", -0.0),
    ("<f8", 1e300),
    ("<f8", 5e-324),
    ("<f8", 0.1),
    ("<f8", NAN64_NEG),
    (">f8", -np.inf),
    ("<f4", 0.5),
    ("<c8", 1.5 - 2j),
    ("<c8", complex(np.nan, np.inf)),
    ("<c16", complex(-0.0, 1e300)),
    (">c16", complex(-np.inf, -0.0)),
    ("<M8[s]", np.datetime64("2000-02-29T12:00:00", "s")),
    ("<M8[10s]", np.datetime64(5, "10s")),
    ("<M8[D]", np.datetime64("NaT", "D")),
    (">M8[ns]", np.datetime64(-1, "ns")),
    ("<m8[ms]", np.timedelta64(12345, "ms")),
    ("<m8[h]", np.timedelta64("NaT", "h")),
    ("|S5", b"ab"),
    ("|S3", b"a\x00b"),
    ("|S1", b""),
    ("<U4", "x\u00ff\u20ac"),
    ("<U1", "\U0001f600"),
    (">U3", "ab"),
    ("<U2", ""),
    ("|V4", b"\x01\x02\x03\x04"),
    ("|V3", b"\x00\xff\x00"),
    (STRUCT, (7, 2.5, True)),
    (STRUCT, (-1, np.nan, False)),
    (STRUCT_BE, (-2, -0.0)),
    (STRUCT_NESTED, (3, (np.inf, b"zz"))),
    ("str", "\u2205 missing"),
    ("bytes", b"ab\x00"),
    ("bytes", b""),
    ("str", ""),
]


def _case_id(case) -> str:
    dtype, fill = case
    return f"{dtype if isinstance(dtype, str) else 'struct'}-{fill!r}"[:40]


def _zarr_array(tmp_path, dtype, fill, zarr_format):
    """Create with zarr-python, reopen from disk: (stored metadata, zarr's dtype and fill)."""
    store = tmp_path / "a.zarr"
    variable = {"str": str, "bytes": VariableLengthBytes()}
    np_dtype = variable[dtype] if isinstance(dtype, str) and dtype in variable else np.dtype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(
            str(store),
            shape=(3,),
            chunks=(2,),
            dtype=np_dtype,
            fill_value=fill,
            zarr_format=zarr_format,
        )
        reopened = zarr.open_array(str(store), mode="r")
    name = ".zarray" if zarr_format == 2 else "zarr.json"
    return json.loads((store / name).read_text()), reopened


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("case", ORACLE_CASES, ids=_case_id)
def test_matches_zarr_python(tmp_path, case, zarr_format):
    dtype, fill = case
    if zarr_format == 3 and dtype is STRUCT_BE:
        pytest.skip("zarr-python 3.1.6 writes big-endian structured v3 fills it cannot reread")
    if zarr_format == 2 and dtype is STRUCT_NESTED:
        pytest.skip("zarr-python 3.1.6 cannot reopen nested v2 structured dtypes (corpus has them)")
    meta, arr = _zarr_array(tmp_path, dtype, fill, zarr_format)
    data_type, ours = parse_document(meta, path="a.zarr")
    if data_type.variable_length:
        assert data_type.dtype == np.dtype("O")
        assert data_type.name == ("string" if dtype == "str" else "bytes")
    else:
        assert data_type.dtype == native_dtype(arr.dtype)
        assert all_native(data_type.dtype)
        if zarr_format == 2:
            assert data_type.stored_dtype == arr.dtype
    assert_same_fill(ours, arr.fill_value, data_type)
    # and the value the writer was given, independently of zarr-python's reading; a NaN is
    # written as "NaN", which names the canonical quiet NaN whatever payload the writer had
    if not data_type.variable_length:
        given = np.array(fill, dtype=native_dtype(np.dtype(dtype)))
        if given.dtype.kind == "f" and np.isnan(given):
            given = np.array(np.nan, given.dtype)
        assert ours.tobytes() == bits(given, data_type.dtype)


@pytest.mark.parametrize(
    ("dtype", "fill_json", "pattern"),
    [
        ("<f4", "0x7fc00001", 0x7FC00001),
        ("<f4", "0xffc00000", 0xFFC00000),
        ("<f4", "0x80000000", 0x80000000),
        ("<f4", "0x7f800000", 0x7F800000),
        ("<f2", "0x7e01", 0x7E01),
        ("<f2", "0xfc00", 0xFC00),
        ("<f8", "0x7ff8000000000001", 0x7FF8000000000001),
        ("<f8", "0x0000000000000001", 1),
        ("<f4", "NaN", 0x7FC00000),
        ("<f2", "NaN", 0x7E00),
        ("<f8", "NaN", 0x7FF8000000000000),
        ("<f8", "-Infinity", 0xFFF0000000000000),
        ("<f4", -0.0, 0x80000000),
    ],
)
def test_v3_float_bit_patterns(tmp_path, dtype, fill_json, pattern):
    """Hex fill values are bit patterns (zarr-python never writes them, but reads them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(
            str(tmp_path / "a.zarr"), shape=(3,), chunks=(2,), dtype=dtype, zarr_format=3
        )
    doc = tmp_path / "a.zarr" / "zarr.json"
    meta = json.loads(doc.read_text())
    meta["fill_value"] = fill_json
    doc.write_text(json.dumps(meta))
    arr = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    data_type, ours = parse_document(meta)
    size = np.dtype(dtype).itemsize
    assert ours.tobytes() == np.array(pattern, f"<u{size}").tobytes()
    if fill_json != "0x7e01":  # zarr-python goes through a Python float: loses f2 payloads
        assert ours.tobytes() == bits(arr.fill_value, data_type.dtype)


@pytest.mark.parametrize(
    ("fill", "expected"),
    [
        (["0x7fc00001", "-Infinity"], (0x7FC00001, 0xFF800000)),
        (["NaN", -0.0], (0x7FC00000, 0x80000000)),
        ([1.5, "0x00000001"], (0x3FC00000, 1)),
    ],
)
def test_complex_fill_keeps_component_bits(fill, expected):
    data_type = parse_v3_data_type("complex64")
    ours = parse_fill_value(fill, data_type, 3)
    assert ours.dtype == np.complex64
    assert ours.tobytes() == np.array(expected, "<u4").tobytes()


def test_structured_fill_keeps_nan_payload_through_byte_swap():
    data_type = parse_v2_dtype([["a", ">f4"], ["b", "<u2"]])
    raw = bytes.fromhex("7fc00001") + bytes.fromhex("0201")
    ours = parse_fill_value(base64.b64encode(raw).decode(), data_type, 2)
    assert ours.dtype == np.dtype([("a", "=f4"), ("b", "=u2")])
    assert ours["a"].tobytes() == np.array(0x7FC00001, "=u4").tobytes()
    assert int(ours["b"]) == 0x0102


# --- the corpus: every document parses, all-missing arrays fill bit-exactly ------------------


def _manifest() -> dict:
    return json.loads((CONFORMANCE / "manifest.json").read_text())


def _array_documents() -> list[pathlib.Path]:
    corpus = CONFORMANCE / "corpus"
    docs = sorted(corpus.rglob(".zarray")) + sorted(corpus.rglob("zarr.json"))
    return [d for d in docs if json.loads(d.read_text()).get("node_type", "array") == "array"]


def _corpus_array_entries() -> list[dict]:
    return [e for e in _manifest()["entries"] if e["kind"] == "array"]


def _meta_for(entry: dict) -> dict:
    base = CONFORMANCE / entry["store"] / entry["path"]
    for name in ("zarr.json", ".zarray"):
        if (base / name).exists():
            return json.loads((base / name).read_text())
    raise FileNotFoundError(base)


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="conformance corpus not available")
def test_every_corpus_document_parses():
    documents = _array_documents()
    assert len(documents) > 300
    for doc in documents:
        data_type, fill = parse_document(json.loads(doc.read_text()), path=str(doc))
        assert all_native(data_type.dtype), doc
        if not data_type.variable_length:
            assert fill.dtype == data_type.dtype and fill.shape == (), doc


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="conformance corpus not available")
@pytest.mark.parametrize(
    "entry", _corpus_array_entries() if CONFORMANCE.exists() else [], ids=lambda e: e["id"]
)
def test_corpus_dtype_matches_manifest(entry):
    data_type, _ = parse_document(_meta_for(entry), path=entry["id"])
    expected = entry["dtype"]
    if expected == "StringDType" or (expected == "|O" and data_type.variable_length):
        assert data_type.variable_length in ("utf8", "bytes")
        assert data_type.dtype == np.dtype("O")
        return
    if isinstance(expected, list):
        expected = [
            tuple(f[:1]) + (_descr(f[1]),) + tuple(tuple(s) for s in f[2:]) for f in expected
        ]
    assert data_type.dtype == native_dtype(np.dtype(expected))


def _descr(value):
    if isinstance(value, list):
        return [tuple(f[:1]) + (_descr(f[1]),) + tuple(tuple(s) for s in f[2:]) for f in value]
    return value


ALL_MISSING = [
    e
    for e in (_corpus_array_entries() if CONFORMANCE.exists() else [])
    if "chunks:all-missing" in e["features"]
]


@pytest.mark.parametrize("entry", ALL_MISSING, ids=lambda e: e["id"])
def test_corpus_all_missing_fill_is_bit_exact(entry):
    data_type, fill = parse_document(_meta_for(entry), path=entry["id"])
    expected = np.load(CONFORMANCE / entry["expected"]["file"])
    assert expected.size > 0
    flat = expected.reshape(-1)
    assert all(flat[i : i + 1].tobytes() == flat[:1].tobytes() for i in range(flat.size))
    assert fill.tobytes() == flat[:1].astype(data_type.dtype).tobytes()


def test_corpus_fills_match_zarr_python_reading():
    """zarr-python reads each corpus array it can open; its fill must equal ours, bit for bit."""
    checked = 0
    for doc in _array_documents():
        meta = json.loads(doc.read_text())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arr = zarr.open_array(str(doc.parent), mode="r", zarr_format=meta["zarr_format"])
                theirs = arr.fill_value
        except Exception:  # zarr-python 3.1.6 cannot open some (documented in the corpus README)
            continue
        data_type, ours = parse_document(meta, path=str(doc))
        assert_same_fill(ours, theirs, data_type)
        checked += 1
    assert checked > 300
