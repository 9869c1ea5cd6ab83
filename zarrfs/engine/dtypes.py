"""Zarr data types and fill values -> NumPy dtypes and bit-exact NumPy scalars.

Implements the data type and ``fill_value`` sections of the Zarr v2 spec ("Data type encoding",
"Fill value encoding"), the v3 core spec ("Data types", "fill_value") and the extension data types
as zarr-python 3.1.6 writes them (``string``, ``variable_length_bytes``, ``fixed_length_utf32``,
``null_terminated_bytes``, ``raw_bytes``, ``numpy.datetime64``/``timedelta64``, ``structured``).

Both formats end in the same :class:`DataType`, so nothing past the parser knows which format a
type came from. The in-memory ``dtype`` is always native byte order (also inside structured
fields); ``stored_dtype`` is what the encoded bytes hold. Fill values are decoded through bit
patterns wherever a float could lose information (hex NaN payloads, -0.0, structured bytes), so
what a reader hands out for a missing chunk is exactly what the writer meant.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import MetadataError, UnknownDataTypeError, UnsupportedError

logger = logging.getLogger(__name__)

__all__ = ["DataType", "parse_fill_value", "parse_v2_dtype", "parse_v3_data_type"]


@dataclass(frozen=True)
class DataType:
    """One array data type, the same for v2 and v3 metadata."""

    name: str
    dtype: np.dtype
    stored_dtype: np.dtype
    variable_length: str | None = None


# --- naming ---------------------------------------------------------------------------------

_KIND_NAMES: dict[str, Callable[[int], str]] = {
    "b": lambda n: "bool",
    "i": lambda n: f"int{8 * n}",
    "u": lambda n: f"uint{8 * n}",
    "f": lambda n: f"float{8 * n}",
    "c": lambda n: f"complex{8 * n}",
    "M": lambda n: "numpy.datetime64",
    "m": lambda n: "numpy.timedelta64",
    "S": lambda n: "null_terminated_bytes",
    "U": lambda n: "fixed_length_utf32",
    "V": lambda n: "raw_bytes",
}
# item sizes NumPy and Zarr agree on (None: any positive length)
_KIND_SIZES: dict[str, tuple[int, ...] | None] = dict(
    b=(1,), i=(1, 2, 4, 8), u=(1, 2, 4, 8), f=(2, 4, 8), c=(8, 16), M=(8,), m=(8,),
    S=None, U=None, V=None,
)  # fmt: skip
_TIME_UNITS = tuple("Y M W D h m s ms us μs ns ps fs as generic".split())


def _native(dtype: np.dtype) -> np.dtype:
    """The same dtype in native byte order, recursing into structured fields and subarrays."""
    if dtype.fields is not None:
        return np.dtype([(n, _native(dtype.fields[n][0])) for n in dtype.names])
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.dtype((_native(base), shape))
    return dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype


def _make(name: str, stored: np.dtype, variable_length: str | None = None) -> DataType:
    return DataType(name, _native(stored), stored, variable_length)


# --- Zarr v2 ---------------------------------------------------------------------------------

_V2_TYPESTR = re.compile(r"^([<>=|]?)([biufcmMSUV])(\d+)(?:\[(\d*)([A-Za-zμ]+)\])?$")
#: v2 codec ids that say what a ``"|O"`` array holds (zarr-python data types guide, "Object"),
#: and the data type zarrfs reads it as; None: an object codec zarrfs does not read (``pickle``
#: is never loaded). The ``.zarray`` parser looks among the filters for these ids.
OBJECT_CODECS: dict[str, str | None] = {
    "vlen-utf8": "string",
    "json2": "string",
    "categorize": "string",
    "msgpack2": "string",
    "vlen-bytes": "bytes",
    "vlen-array": None,
    "pickle": None,
}


def parse_v2_dtype(
    value: Any, *, object_codec: str | None = None, path: str | None = None
) -> DataType:
    """Parse a ``.zarray`` ``dtype`` (typestr or structured list) into a :class:`DataType`.

    ``"|O"`` is ambiguous on its own (spec: any Python object); the object codec among the filters
    and compressor says what the objects are. Pickle is refused: unpickling runs code.
    """
    if value in ("|O", "<O", ">O", "O"):
        kind = OBJECT_CODECS.get(object_codec or "")
        if kind is None:
            readable = ", ".join(name for name, kind in OBJECT_CODECS.items() if kind)
            raise UnsupportedError(
                f"object dtype {value!r} with object codec {object_codec!r} is not supported "
                f"(only {readable}; pickle is never loaded)",
                path=path,
            )
        return DataType(kind, np.dtype("O"), np.dtype("O"), "utf8" if kind == "string" else "bytes")
    stored = _v2_numpy(value, path)
    if stored.fields is not None:
        return _make("structured", stored)
    return _make(_KIND_NAMES[stored.kind](stored.itemsize), stored)


def _v2_numpy(value: Any, path: str | None) -> np.dtype:
    """The stored NumPy dtype of a v2 typestr or structured descr, byte order as written."""
    if isinstance(value, str):
        return _v2_typestr(value, path)
    if isinstance(value, list) and value:
        fields = []
        for field in value:
            if (
                not isinstance(field, list)
                or len(field) not in (2, 3)
                or not isinstance(field[0], str)
            ):
                raise MetadataError(
                    f"bad structured dtype field {field!r}", path=path, field="dtype"
                )
            sub = _v2_numpy(field[1], path)
            if len(field) == 3:
                sub = np.dtype((sub, tuple(_shape(field[2], path, "dtype"))))
            fields.append((field[0], sub))
        return _structured(fields, value, path, "dtype")
    raise UnknownDataTypeError(f"unknown Zarr v2 dtype {value!r}", data_type=value, path=path)


def _v2_typestr(value: str, path: str | None) -> np.dtype:
    """One simple typestr. Quirks accepted: ``<i1``/``>b1`` (order irrelevant for one byte),
    ``=``/``|``/no order on multi-byte types (read as little-endian, what every writer meant)."""
    match = _V2_TYPESTR.match(value)
    if match is None:
        raise UnknownDataTypeError(f"unknown Zarr v2 dtype {value!r}", data_type=value, path=path)
    order, kind, size_text, scale, unit = match.groups()
    size = int(size_text)
    sizes = _KIND_SIZES[kind]
    if (sizes is not None and size not in sizes) or size == 0:
        raise UnknownDataTypeError(f"unknown Zarr v2 dtype {value!r}", data_type=value, path=path)
    if kind in "mM" and unit is not None and unit not in _TIME_UNITS:
        raise UnknownDataTypeError(f"unknown time unit in {value!r}", data_type=value, path=path)
    if kind in "bSV" or (kind in "iu" and size == 1):
        order = "|"
    elif order != "<" and order != ">":
        logger.debug("dtype %r has no byte order at %s: reading it as little-endian", value, path)
        order = "<"
    return np.dtype(order + value[match.start(2) :])


def _structured(fields: list, raw: Any, path: str | None, field: str) -> np.dtype:
    try:
        return np.dtype(fields)
    except (ValueError, TypeError) as exc:
        raise MetadataError(
            f"bad structured data type {raw!r}: {exc}", path=path, field=field
        ) from exc


def _shape(value: Any, path: str | None, field: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value
    ):
        raise MetadataError(f"bad subarray shape {value!r}", path=path, field=field)
    return value


# --- Zarr v3 ---------------------------------------------------------------------------------

# core data types, stored little-endian before the ``bytes`` codec applies its endian
_V3_CORE = {
    _KIND_NAMES[dtype.kind](dtype.itemsize): dtype
    for dtype in map(np.dtype, "|b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 <f2 <f4 <f8 <c8 <c16".split())
}
_V3_VARIABLE = {
    "string": ("string", "utf8"),
    "variable_length_utf8": ("string", "utf8"),
    "bytes": ("bytes", "bytes"),
    "variable_length_bytes": ("bytes", "bytes"),
}


def parse_v3_data_type(value: Any, *, path: str | None = None) -> DataType:
    """Parse a ``zarr.json`` ``data_type`` (a name or ``{"name", "configuration"}``)."""
    if isinstance(value, dict):
        name, config = value.get("name"), value.get("configuration")
    else:
        name, config = value, None
    if not isinstance(name, str):
        raise MetadataError(f"data_type {value!r} has no name", path=path, field="data_type")
    if not config and name in _V3_CORE:
        return _make(name, _V3_CORE[name])
    if not config and name in _V3_VARIABLE:
        kind, vlen = _V3_VARIABLE[name]
        return DataType(kind, np.dtype("O"), np.dtype("O"), vlen)
    raw_bits = re.fullmatch(r"r(\d+)", name)
    if raw_bits and not config:
        bits = int(raw_bits.group(1))
        if bits == 0 or bits % 8:
            raise UnknownDataTypeError(
                f"raw data type {name!r} is not a whole number of bytes", data_type=value, path=path
            )
        return DataType(name, np.dtype(f"V{bits // 8}"), np.dtype(f"V{bits // 8}"))
    if name in _V3_CORE or name in _V3_VARIABLE or raw_bits:
        raise MetadataError(
            f"data type {name!r} takes no configuration, got {config!r}",
            path=path,
            field="data_type",
        )
    parser = _V3_CONFIGURED.get(name)
    if parser is None:
        raise UnknownDataTypeError(
            f"unknown Zarr v3 data type {name!r}", data_type=value, path=path
        )
    if not isinstance(config, dict):
        raise MetadataError(
            f"data type {name!r} needs a configuration object", path=path, field="data_type"
        )
    try:
        stored = parser(config, path)
    except (KeyError, TypeError, ValueError) as exc:
        raise MetadataError(
            f"bad configuration for data type {name!r}: {config!r}", path=path, field="data_type"
        ) from exc
    return _make("structured" if name == "struct" else name, stored)


def _length_bytes(config: dict, multiple: int = 1) -> int:
    length = config["length_bytes"]
    if isinstance(length, bool) or not isinstance(length, int) or length <= 0 or length % multiple:
        raise ValueError(length)
    return length


def _v3_time(code: str) -> Callable[[dict, str | None], np.dtype]:
    def parse(config: dict, path: str | None) -> np.dtype:
        unit, scale = config["unit"], config.get("scale_factor", 1)
        if (
            unit not in _TIME_UNITS
            or isinstance(scale, bool)
            or not isinstance(scale, int)
            or scale < 1
        ):
            raise ValueError(config)
        return np.dtype(f"<{code}8[{scale if scale != 1 else ''}{unit}]")

    return parse


def _v3_fields(config: dict, path: str | None) -> np.dtype:
    """``structured`` fields ``[[name, type], ...]`` (zarr-python) or ``[{name, data_type}]``
    (the zarr-extensions ``struct`` draft); a third list item is a subarray shape."""
    fields = []
    for field in config["fields"]:
        if isinstance(field, dict):
            name, sub_json, shape = field["name"], field["data_type"], None
        else:
            name, sub_json, shape = field[0], field[1], (field[2] if len(field) > 2 else None)
        sub = parse_v3_data_type(sub_json, path=path)
        if sub.variable_length or not isinstance(name, str):
            raise TypeError(field)
        stored = sub.stored_dtype
        if shape is not None:
            stored = np.dtype((stored, tuple(_shape(shape, path, "data_type"))))
        fields.append((name, stored))
    return _structured(fields, config, path, "data_type")


_V3_CONFIGURED: dict[str, Callable[[dict, str | None], np.dtype]] = {
    "fixed_length_utf32": lambda c, p: np.dtype(f"<U{_length_bytes(c, 4) // 4}"),
    "null_terminated_bytes": lambda c, p: np.dtype(f"S{_length_bytes(c)}"),
    "raw_bytes": lambda c, p: np.dtype(f"V{_length_bytes(c)}"),
    "numpy.datetime64": _v3_time("M"),
    "numpy.timedelta64": _v3_time("m"),
    "structured": _v3_fields,
    "struct": _v3_fields,
}


# --- fill values -----------------------------------------------------------------------------

_FILL_ERRORS = (ValueError, TypeError, OverflowError, KeyError, IndexError, binascii.Error)


def parse_fill_value(
    value: Any, data_type: DataType, zarr_format: int, *, path: str | None = None
) -> Any:
    """Decode a metadata ``fill_value`` into a 0-d array of ``data_type.dtype`` (bit-exact),
    or a ``str``/``bytes`` for variable-length types.

    v2 ``null`` means "undefined"; like zarr-python we then fill with the type's zero, or NaT
    for datetimes and timedeltas (zarr-python writes no chunk that is all NaT there, so only
    NaT reads back what it stored). v3 requires a fill value, so ``null`` there is an error.
    """
    if value is None and zarr_format != 2:
        raise MetadataError(
            "fill_value is required in Zarr v3 metadata", path=path, field="fill_value"
        )
    try:
        if data_type.variable_length:
            return _fill_variable(value, data_type.variable_length)
        if value is None:
            dtype = data_type.dtype
            return np.array("NaT", dtype) if dtype.kind in "mM" else np.zeros((), dtype)
        with np.errstate(over="ignore"):
            return _fill(value, data_type.stored_dtype)
    except _FILL_ERRORS as exc:
        raise MetadataError(
            f"fill_value {value!r} is not a valid {data_type.name} ({data_type.stored_dtype.str})",
            path=path,
            field="fill_value",
        ) from exc


def _fill(value: Any, stored: np.dtype) -> np.ndarray:
    """One fill value as a 0-d array of ``_native(stored)``, dispatched on the NumPy kind."""
    if stored.subdtype is not None:
        base, shape = stored.subdtype
        items = np.broadcast_to(np.array(value, dtype=object), shape)
        out = np.empty(shape, _native(base))
        for index in np.ndindex(shape):
            out[index] = _fill(items[index], base)
        return out
    if stored.fields is not None:
        return _fill_structured(value, stored)
    return _FILL_BY_KIND[stored.kind](value, _native(stored))


def _fill_bool(value: Any, dtype: np.dtype) -> np.ndarray:
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return np.array(bool(value), dtype)
    raise TypeError(value)


def _fill_int(value: Any, dtype: np.dtype) -> np.ndarray:
    """JSON integers arrive as exact Python ints (also beyond 2**53); floats must be whole."""
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        value = int(value)
    elif isinstance(value, str):
        value = int(value)
    if not isinstance(value, int):
        raise TypeError(value)
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"{value} outside [{info.min}, {info.max}]")
    return np.array(value, dtype)


_SPECIAL_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_HEX_WIDTHS = {4: np.dtype(">f2"), 8: np.dtype(">f4"), 16: np.dtype(">f8")}


def _fill_float(value: Any, dtype: np.dtype) -> np.ndarray:
    """Numbers round to nearest; ``"0x..."`` is the bit pattern (keeps NaN payloads)."""
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, (int, float)):
        return np.array(value, dtype)
    if not isinstance(value, str):
        raise TypeError(value)
    if value in _SPECIAL_FLOATS:
        return np.array(_SPECIAL_FLOATS[value], dtype)
    hex_digits = re.fullmatch(r"0[xX]([0-9a-fA-F]+)", value)
    if hex_digits:
        digits = hex_digits.group(1)
        # the digit count gives the width, as zarr-python reads it (a float32 pattern on a
        # float64 array is converted); the same width is a pure reinterpretation of the bits
        width = dtype.newbyteorder(">") if len(digits) == 2 * dtype.itemsize else None
        width = width or _HEX_WIDTHS[len(digits)]
        return np.frombuffer(bytes.fromhex(digits), width).astype(dtype).reshape(())
    return np.array(float(value), dtype)


def _fill_complex(value: Any, dtype: np.dtype) -> np.ndarray:
    """``[re, im]``, each a float encoding; assembled from bits so NaN payloads survive."""
    part = np.dtype(f"f{dtype.itemsize // 2}")
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        value = [value, 0.0]
    if not isinstance(value, list) or len(value) != 2:
        raise TypeError(value)
    parts = np.stack([_fill_float(v, part) for v in value])
    return parts.view(dtype).reshape(())


def _fill_time(value: Any, dtype: np.dtype) -> np.ndarray:
    """datetime64/timedelta64 fill values are the int64 count (NaT is -2**63)."""
    if value == "NaT":
        return np.array("NaT", dtype)
    if isinstance(value, str):
        return np.array(value, dtype)
    return _fill_int(value, np.dtype("i8")).view(dtype)


def _decode_bytes(value: Any) -> bytes:
    """Base64 text (v2 spec, and zarr-python for v3) or a JSON list of byte values (v3 ``r*``)."""
    if isinstance(value, str):
        return base64.b64decode(value.encode("ascii"), validate=True)
    if isinstance(value, list) and all(type(b) is int and 0 <= b <= 255 for b in value):
        return bytes(value)
    if value == 0 and not isinstance(value, bool):
        return b""
    raise TypeError(value)


def _fill_fixed_bytes(value: Any, dtype: np.dtype) -> np.ndarray:
    raw = _decode_bytes(value)
    if len(raw) > dtype.itemsize:
        raise ValueError(f"{len(raw)} bytes do not fit {dtype.itemsize}")
    return np.array(raw, dtype)


def _fill_fixed_str(value: Any, dtype: np.dtype) -> np.ndarray:
    if value == 0 and not isinstance(value, bool):
        value = ""
    if not isinstance(value, str):
        raise TypeError(value)
    if len(value) > dtype.itemsize // 4:
        raise ValueError(f"{len(value)} characters do not fit {dtype}")
    return np.array(value, dtype)


def _fill_raw(value: Any, dtype: np.dtype) -> np.ndarray:
    raw = _decode_bytes(value)
    if raw == b"" and value == 0:
        raw = bytes(dtype.itemsize)
    if len(raw) != dtype.itemsize:
        raise ValueError(f"{len(raw)} bytes for a {dtype.itemsize}-byte raw type")
    return np.frombuffer(raw, dtype).reshape(()).copy()


def _fill_structured(value: Any, stored: np.dtype) -> np.ndarray:
    """Base64 of the stored bytes (v2 spec, zarr-python v3), read in the stored byte order and
    converted field by field; or per-field values as an object or list."""
    native = _native(stored)
    if isinstance(value, (dict, list)):
        values = value if isinstance(value, list) else [value[n] for n in stored.names]
        if len(values) != len(stored.names):
            raise ValueError(f"{len(values)} values for {len(stored.names)} fields")
        out = np.zeros((), native)
        for name, item in zip(stored.names, values, strict=True):
            out[name] = _fill(item, stored.fields[name][0])
        return out
    raw = _decode_bytes(value)
    if raw == b"" and value == 0:
        return np.zeros((), native)
    if len(raw) != stored.itemsize:
        raise ValueError(f"{len(raw)} bytes for a {stored.itemsize}-byte structure")
    return np.frombuffer(raw, stored).astype(native).reshape(())


_FILL_BY_KIND: dict[str, Callable[[Any, np.dtype], np.ndarray]] = dict(
    b=_fill_bool, i=_fill_int, u=_fill_int, f=_fill_float, c=_fill_complex,
    M=_fill_time, m=_fill_time, S=_fill_fixed_bytes, U=_fill_fixed_str, V=_fill_raw,
)  # fmt: skip


def _fill_variable(value: Any, variable_length: str) -> str | bytes:
    """Variable-length fills: text as is, bytes as base64; ``null`` (v2) is the empty value.

    zarr-python 2 wrote ``0`` for object arrays by default. For text we read numbers the way
    zarr-python 3 does (``"0"``); for bytes, which it cannot read at all, ``0`` is ``b""``.
    """
    if variable_length == "utf8":
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(value)
        return str(value)
    return b"" if value is None else _decode_bytes(value)
