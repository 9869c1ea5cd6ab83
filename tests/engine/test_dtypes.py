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

from tests.conftest import find_corpus_dir
from zarrfs.engine.dtypes import (
    DataType,
    parse_fill_value,
    parse_v2_dtype,
    parse_v3_data_type,
)
from zarrfs.engine.errors import MetadataError, UnknownDataTypeError, UnsupportedError

zarr = pytest.importorskip("zarr")
from zarr.core.dtype import VariableLengthBytes  # noqa: E402

CONFORMANCE = find_corpus_dir()
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
    """Bit-exact comparison; ``theirs`` None means zarr-python's v2 "undefined"."""
    if data_type.variable_length:
        empty = "" if data_type.variable_length == "utf8" else b""
        assert ours == (empty if theirs is None else theirs)
        assert type(ours) is type(empty)
        return
    assert isinstance(ours, np.ndarray) and ours.shape == () and ours.dtype == data_type.dtype
    if theirs is None:  # zarr-python: NaT for datetimes and timedeltas, else zeros
        kind = data_type.dtype.kind
        theirs = np.array("NaT", data_type.dtype) if kind in "mM" else np.zeros((), data_type.dtype)
    expected = theirs
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


def test_every_corpus_document_parses():
    documents = _array_documents()
    assert len(documents) > 300
    for doc in documents:
        data_type, fill = parse_document(json.loads(doc.read_text()), path=str(doc))
        assert all_native(data_type.dtype), doc
        if not data_type.variable_length:
            assert fill.dtype == data_type.dtype and fill.shape == (), doc


@pytest.mark.parametrize("entry", _corpus_array_entries(), ids=lambda e: e["id"])
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


ALL_MISSING = [e for e in (_corpus_array_entries()) if "chunks:all-missing" in e["features"]]


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


# --- names, quirks and per-field forms --------------------------------------------------------


@pytest.mark.parametrize(
    ("typestr", "name", "stored"),
    [
        ("<i1", "int8", "|i1"),
        (">u1", "uint8", "|u1"),
        ("<b1", "bool", "|b1"),
        (">b1", "bool", "|b1"),
        ("=i4", "int32", "<i4"),
        ("|i4", "int32", "<i4"),
        ("f8", "float64", "<f8"),
        ("|U2", "fixed_length_utf32", "<U2"),
        (">S3", "null_terminated_bytes", "|S3"),
        ("<V2", "raw_bytes", "|V2"),
        (">m8[ns]", "numpy.timedelta64", ">m8[ns]"),
        ("<M8[25ms]", "numpy.datetime64", "<M8[25ms]"),
        (">c8", "complex64", ">c8"),
        ("<f2", "float16", "<f2"),
    ],
)
def test_v2_typestrs_and_writer_quirks(typestr, name, stored):
    data_type = parse_v2_dtype(typestr)
    assert data_type.name == name
    assert data_type.stored_dtype == np.dtype(stored)
    assert data_type.dtype == native_dtype(np.dtype(stored)) and data_type.dtype.isnative
    assert data_type.variable_length is None


@pytest.mark.parametrize(
    ("codec", "name", "vlen"),
    [
        ("vlen-utf8", "string", "utf8"),
        ("json2", "string", "utf8"),
        ("categorize", "string", "utf8"),
        ("vlen-bytes", "bytes", "bytes"),
    ],
)
def test_v2_object_dtype_is_decided_by_its_codec(codec, name, vlen):
    data_type = parse_v2_dtype("|O", object_codec=codec)
    assert (data_type.name, data_type.variable_length) == (name, vlen)
    assert data_type.dtype == data_type.stored_dtype == np.dtype("O")


def test_v2_structured_keeps_written_order_and_reads_native():
    data_type = parse_v2_dtype(
        [["a", ">i8"], ["b", [["c", ">f4", [2]], ["d", "<U2"]]], ["e", "|S1", [1, 2]]]
    )
    assert data_type.name == "structured"
    stored = np.dtype(
        [("a", ">i8"), ("b", [("c", ">f4", (2,)), ("d", "<U2")]), ("e", "S1", (1, 2))]
    )
    assert data_type.stored_dtype == stored
    assert data_type.dtype == native_dtype(stored) and all_native(data_type.dtype)
    assert data_type.dtype.itemsize == stored.itemsize == 8 + 8 + 8 + 2


@pytest.mark.parametrize(
    ("value", "name", "dtype"),
    [
        ("int32", "int32", "<i4"),
        ({"name": "int32"}, "int32", "<i4"),
        ({"name": "uint64", "configuration": {}}, "uint64", "<u8"),
        ("r16", "r16", "|V2"),
        ("r8", "r8", "|V1"),
        ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 20}}, None, "<U5"),
        ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 7}}, None, "|S7"),
        ({"name": "raw_bytes", "configuration": {"length_bytes": 6}}, None, "|V6"),
        ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}, None, "<M8[10s]"),
        ({"name": "numpy.timedelta64", "configuration": {"unit": "h", "scale_factor": 1}}, None, "<m8[h]"),
    ],
)  # fmt: skip
def test_v3_data_type_names(value, name, dtype):
    data_type = parse_v3_data_type(value)
    assert data_type.name == (name or value["name"])
    assert data_type.dtype == data_type.stored_dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    "value",
    ["string", "variable_length_utf8", "bytes", "variable_length_bytes", {"name": "string"}],
)
def test_v3_variable_length_names(value):
    data_type = parse_v3_data_type(value)
    assert data_type.dtype == np.dtype("O")
    expected = "utf8" if "string" in str(value) or "utf8" in str(value) else "bytes"
    assert data_type.variable_length == expected


@pytest.mark.parametrize("name", ["structured", "struct"])
def test_v3_structured_field_forms(name):
    list_form = {
        "name": name,
        "configuration": {
            "fields": [["x", "int16"], ["v", "float32", [3]], ["s", {"name": "structured", "configuration": {"fields": [["t", "bool"]]}}]]
        },
    }  # fmt: skip
    dict_form = {
        "name": name,
        "configuration": {
            "fields": [
                {"name": "x", "data_type": "int16"},
                {"name": "v", "data_type": "float32"},
            ]
        },
    }
    expected = np.dtype([("x", "<i2"), ("v", "<f4", (3,)), ("s", [("t", "?")])])
    assert parse_v3_data_type(list_form).stored_dtype == expected
    assert parse_v3_data_type(list_form).name == "structured"
    assert parse_v3_data_type(dict_form).dtype == np.dtype([("x", "<i2"), ("v", "<f4")])


def test_structured_fill_per_field_forms():
    data_type = parse_v3_data_type(
        {"name": "structured", "configuration": {"fields": [["x", "int32"], ["y", "float32"]]}}
    )
    by_name = parse_fill_value({"x": -7, "y": "0x7fc00001"}, data_type, 3)
    by_position = parse_fill_value([-7, "0x7fc00001"], data_type, 3)
    expected = np.array(-7, "<i4").tobytes() + np.array(0x7FC00001, "<u4").tobytes()
    assert by_name.tobytes() == by_position.tobytes() == expected


@pytest.mark.parametrize(
    ("value", "zarr_format", "data_type_json", "expected"),
    [
        ([1, 2], 3, "r16", b"\x01\x02"),
        ("AQI=", 3, "r16", b"\x01\x02"),
        (2**63 - 1, 3, "int64", np.array(2**63 - 1, "<i8").tobytes()),
        (-(2**63), 3, {"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1}}, np.array(-(2**63), "<i8").tobytes()),
        ("NaT", 2, "<M8[D]", np.array(-(2**63), "<i8").tobytes()),
        (7.0, 3, "int8", b"\x07"),
        ("5", 2, "<u2", b"\x05\x00"),
        (1, 2, "|b1", b"\x01"),
        (3, 3, "float32", np.array(3.0, "<f4").tobytes()),
        ("2.5", 3, "float64", np.array(2.5, "<f8").tobytes()),
        (1e10, 3, "float16", np.array(np.inf, "<f2").tobytes()),
        (1.5, 3, "complex64", np.array(1.5 + 0j, "<c8").tobytes()),
        ("0x7fc00001", 3, "float64", np.array(np.float32(np.array(0x7FC00001, "u4").view("f4")), "<f8").tobytes()),
        (None, 2, "<f8", bytes(8)),
        (None, 2, "<M8[s]", np.array(-(2**63), "<i8").tobytes()),  # NaT, as zarr-python
        (None, 2, ">m8[ms]", np.array(-(2**63), "<i8").tobytes()),
        (None, 2, "<U2", bytes(8)),
        (None, 2, [["a", ">i2"], ["b", "|S2"]], bytes(4)),
        (0, 2, [["a", ">i2"], ["b", "|S2"]], bytes(4)),
        (0, 2, "|S2", bytes(2)),
        (0, 2, "<U2", bytes(8)),
        (0, 2, "|V2", bytes(2)),
    ],
)  # fmt: skip
def test_fill_value_encodings(value, zarr_format, data_type_json, expected):
    if zarr_format == 2:
        data_type = parse_v2_dtype(data_type_json)
    else:
        data_type = parse_v3_data_type(data_type_json)
    fill = parse_fill_value(value, data_type, zarr_format)
    assert fill.shape == () and fill.dtype == data_type.dtype
    assert fill.tobytes() == expected


@pytest.mark.parametrize(
    ("value", "codec", "expected"),
    [
        (None, "vlen-utf8", ""),
        (0, "vlen-utf8", "0"),  # zarr-python 2's object default, read as zarr-python 3 does
        ("", "json2", ""),
        (None, "vlen-bytes", b""),
        (0, "vlen-bytes", b""),
        ("AAE=", "vlen-bytes", b"\x00\x01"),
    ],
)
def test_variable_length_v2_fills(value, codec, expected):
    fill = parse_fill_value(value, parse_v2_dtype("|O", object_codec=codec), 2)
    assert fill == expected and type(fill) is type(expected)


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["int128", "float128", "r12", "r0", "complex32", {"name": "bfloat16"}, "unknown.ext.type"],
)
def test_unknown_v3_data_type_is_named(value):
    with pytest.raises(UnknownDataTypeError) as info:
        parse_v3_data_type(value, path="grp/arr")
    assert info.value.data_type == value and info.value.path == "grp/arr"
    assert str(value if isinstance(value, str) else value["name"]) in str(info.value)


@pytest.mark.parametrize(
    "value", ["<i16", "<x4", "|b2", "<f16", "<U0", "int32", "<M8[fortnight]", 5]
)
def test_unknown_v2_dtype_is_named(value):
    with pytest.raises(UnknownDataTypeError) as info:
        parse_v2_dtype(value, path="arr")
    assert info.value.data_type == value and info.value.path == "arr"


@pytest.mark.parametrize("codec", ["pickle", None, "vlen-array", "msgpack"])
def test_object_dtype_without_a_readable_codec_is_refused(codec):
    with pytest.raises(UnsupportedError) as info:
        parse_v2_dtype("|O", object_codec=codec, path="arr")
    assert info.value.path == "arr" and "pickle" in str(info.value)


@pytest.mark.parametrize(
    "value",
    [
        {"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}},
        {"name": "fixed_length_utf32", "configuration": {}},
        {"name": "raw_bytes", "configuration": {"length_bytes": 0}},
        {"name": "numpy.datetime64", "configuration": {"unit": "fortnight", "scale_factor": 1}},
        {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}},
        {"name": "numpy.datetime64"},
        {"name": "structured", "configuration": {"fields": [["a", "string"]]}},
        {"name": "structured", "configuration": {"fields": [["a", "int8"], ["a", "int8"]]}},
        {"name": "int32", "configuration": {"endian": "big"}},
        {"configuration": {}},
        [["a", "<i4"]],
    ],
)
def test_bad_v3_data_type_configuration(value):
    with pytest.raises((MetadataError, UnknownDataTypeError)) as info:
        parse_v3_data_type(value, path="arr")
    assert info.value.path == "arr"


@pytest.mark.parametrize(
    ("value", "data_type_json", "zarr_format"),
    [
        (128, "int8", 3),
        (-129, "int8", 3),
        (-1, "uint8", 3),
        (2**64, "uint64", 3),
        (2**63, "int64", 3),
        (1.5, "int32", 3),
        ("abc", "int32", 3),
        (True, "float32", 3),
        ("0x7fc0000", "float32", 3),
        ("0xZZZZZZZZ", "float32", 3),
        ("0x7fc00000ff", "float32", 3),
        ("0x7fc0_001", "float32", 3),
        ("0x7f c0 00 01", "float32", 3),
        ("0x-7fc0001", "float32", 3),
        ([True, 1], "r16", 3),
        ("nope", "float64", 3),
        (10**400, "float64", 3),
        ([1.0], "complex64", 3),
        ([1.0, 2.0, 3.0], "complex128", 3),
        ([1.0, "0x12"], "complex128", 3),
        ("yes", "bool", 3),
        (2, "bool", 3),
        (None, "int32", 3),
        (2**63, {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, 3),
        ("!!!!", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}, 3),
        ("YWJj", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2}}, 3),
        ("abc", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}, 3),
        (5, {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}, 3),
        ("AQID", {"name": "raw_bytes", "configuration": {"length_bytes": 4}}, 3),
        ([1, 256], "r16", 3),
        ([1], "r16", 3),
        ("AAAA", {"name": "structured", "configuration": {"fields": [["a", "int64"]]}}, 3),
        ({"b": 1}, {"name": "structured", "configuration": {"fields": [["a", "int64"]]}}, 3),
        (["a"], "string", 3),
        ("not base64!", "bytes", 3),
        ("YWI=", "|S1", 2),
        ("AAA", "|V2", 2),
        (300, "|u1", 2),
    ],
)
def test_bad_fill_values_name_path_and_field(value, data_type_json, zarr_format):
    if zarr_format == 2:
        data_type = parse_v2_dtype(data_type_json)
    else:
        data_type = parse_v3_data_type(data_type_json)
    with pytest.raises(MetadataError) as info:
        parse_fill_value(value, data_type, zarr_format, path="grp/arr")
    assert info.value.path == "grp/arr" and info.value.field == "fill_value"


@pytest.mark.parametrize(
    ("data_type_json", "fill", "pattern"),
    [
        ("float16", "0x7c01", 0x7C01),
        ("float32", "0x7f800001", 0x7F800001),
        ("float32", "0xFF800002", 0xFF800002),
        ("float64", "0x7ff0000000000001", 0x7FF0000000000001),
        ("float64", "0x8000000000000000", 0x8000000000000000),
    ],
)
def test_signaling_nan_patterns_are_not_quieted(data_type_json, fill, pattern):
    """zarr-python goes through Python floats (which quiet signaling NaNs); we keep the bits."""
    data_type = parse_v3_data_type(data_type_json)
    ours = parse_fill_value(fill, data_type, 3)
    assert ours.tobytes() == np.array(pattern, f"=u{data_type.dtype.itemsize}").tobytes()
