"""Array and group metadata as frozen dataclasses, and the v3 ``zarr.json`` parser.

Parse once, at the edge (STYLE 2): ``zarr.json`` here and ``.zarray``/``.zgroup``/``.zattrs`` in
``metadata_v2`` both become :class:`ArrayMetadata` / :class:`GroupMetadata`; nothing past the
parsers sees a raw dict. Every error names the document and the field.

v3 core spec sections "Array metadata", "Group metadata", "Chunk key encoding" and
"Extensions" (``must_understand``).

A node whose metadata cannot be used (an unknown data type, a malformed field) becomes
:class:`BrokenMetadata`: what did parse (attributes, the documents) and the error, so that it is
listed and described while only its data is out of reach. Codecs are resolved on first read
(``codecs.CodecSource``), so a codec zarrfs cannot build leaves the rest of the metadata usable.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import codecs_builtin, codecs_numcodecs, limits, sharding  # noqa: F401 - registers codecs
from .cf import dimension_names_from_attrs
from .codec_registry import REGISTRY
from .codecs import CodecChain, CodecSource, v3_codec_source
from .dtypes import DataType, parse_fill_value, parse_v3_data_type
from .errors import MetadataError, UnsupportedError, ZarrfsError

log = logging.getLogger(__name__)
#: what a parser raises on a document of the wrong shape (a string where an object belongs...)
MALFORMED = (TypeError, AttributeError, IndexError, KeyError, ValueError, OverflowError)


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """How chunk coordinates become store keys."""

    name: str  # "default" (c/0/1) or "v2" (0.1)
    separator: str

    def key(self, chunk_coords: tuple[int, ...]) -> str:
        return self.template(len(chunk_coords)) % tuple(chunk_coords)

    def template(self, ndim: int) -> str:
        """The key of every chunk of ``ndim`` dimensions as a ``%``-template of its coords
        (``template % coords == key(coords)``): a read's keys made by C-level formatting."""
        parts = ["%d"] * ndim
        if self.name == "default":
            return self.separator.join(["c", *parts])
        return self.separator.join(parts) if parts else "0"


@dataclass(frozen=True, eq=False)
class ArrayMetadata:
    zarr_format: int
    shape: tuple[int, ...]
    data_type: DataType
    chunk_shape: tuple[int, ...]  # the regular grid's (outer) chunk, i.e. the stored object
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Any  # 0-d ndarray of data_type.dtype, or str/bytes for variable-length types
    codec_source: CodecSource  # resolved into ``codecs`` on first read
    order: str = "C"
    dimension_names: tuple[str | None, ...] | None = None
    attributes: dict = field(default_factory=dict)
    document: dict = field(default_factory=dict)  # the stored documents, by file name

    @functools.cached_property
    def codecs(self) -> CodecChain:
        """The codec chain, built on first use; a codec that cannot be built raises here (a
        fresh error naming the document each time), on every read of this array."""
        return self.codec_source.resolve()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def declared_inner_chunks(self) -> tuple[int, ...] | None:
        """The inner chunk shape a ``sharding_indexed`` entry of the codec listing declares
        (what a summary shows where the codecs cannot be built)."""
        shards = [c for c in self.codec_source.listed if c.get("name") == "sharding_indexed"]
        shape = (shards[0].get("configuration") or {}).get("chunk_shape") if shards else None
        if not isinstance(shape, list) or len(shape) != len(self.shape):
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
            return None
        return tuple(shape)


@dataclass(frozen=True, eq=False)
class GroupMetadata:
    zarr_format: int
    attributes: dict = field(default_factory=dict)
    document: dict = field(default_factory=dict)
    implicit: bool = False
    #: consolidated metadata of every descendant, by path relative to this group
    consolidated: dict[str, ArrayMetadata | GroupMetadata] | None = None


@dataclass(frozen=True, eq=False)
class BrokenMetadata:
    """A node whose metadata zarrfs cannot use: what parsed, and why the rest did not."""

    error: ZarrfsError  # names the node, the document and the reason
    zarr_format: int | None = None
    node_type: str | None = None  # "array" or "group" as the document says, None if unknown
    attributes: dict = field(default_factory=dict)
    document: dict = field(default_factory=dict)  # by file name; text where JSON did not parse


Metadata = ArrayMetadata | GroupMetadata | BrokenMetadata


def _parsed(parse: Callable[[], Metadata], where: str) -> Metadata:
    """``parse()``, a parser's TypeError or KeyError on a malformed document raised as the
    MetadataError it means."""
    try:
        return parse()
    except MALFORMED as exc:
        raise MetadataError(
            f"{where}: malformed metadata ({type(exc).__name__}: {exc})", path=where
        ) from exc


def contained(
    parse: Callable[[], Metadata], where: str, document: dict, zarr_format: int | None = None
) -> Metadata:
    """``parse()``, or where the node's metadata cannot be used, :class:`BrokenMetadata` with
    what ``document`` (the node's documents by file name) still tells: a broken node stops
    nothing but its own data."""
    try:
        return _parsed(parse, where)
    except (MetadataError, UnsupportedError) as exc:
        error: ZarrfsError = exc.at(exc.path or where)
    main = next((d for n, d in document.items() if n != ".zattrs" and isinstance(d, dict)), {})
    attrs = document.get(".zattrs", main.get("attributes") if isinstance(main, dict) else None)
    node_type = main.get("node_type") if "zarr.json" in document else None
    if ".zarray" in document or ".zgroup" in document:
        node_type = "array" if ".zarray" in document else "group"
    fmt = main.get("zarr_format")
    return BrokenMetadata(
        error=error,
        zarr_format=fmt if fmt in (2, 3) else zarr_format,
        node_type=node_type if node_type in ("array", "group") else None,
        attributes=attrs if isinstance(attrs, dict) else {},
        document=document,
    )


def readable_document(data: bytes) -> Any:
    """A stored document as JSON where it parses within the limits, else as text (to show
    what is there)."""
    try:
        doc = json.loads(data)
        limits.check_json_depth(doc, path="")
        return doc
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, MetadataError):
        return bytes(data).decode("utf-8", errors="replace")


def load_json(data: bytes, *, path: str) -> dict:
    """Bytes of a metadata document to a dict; MetadataError naming the document otherwise
    (malformed, too large, nested too deep: see ``limits``)."""
    limits.check_document_size(len(data), path=path)
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"{path}: malformed JSON ({exc})", path=path) from exc
    except RecursionError as exc:
        raise MetadataError(
            f"{path}: JSON nested more than {limits.MAX_JSON_DEPTH} levels deep", path=path
        ) from exc
    limits.check_json_depth(doc, path=path)
    if not isinstance(doc, dict):
        raise MetadataError(f"{path}: expected a JSON object, got {type(doc).__name__}", path=path)
    return doc


def require(doc: dict, name: str, kind: type | tuple, *, path: str) -> Any:
    if name not in doc:
        raise MetadataError(f"{path}: required field {name!r} is missing", path=path, field=name)
    value = doc[name]
    if (
        not isinstance(value, kind)
        or isinstance(value, bool)
        and bool not in (kind if isinstance(kind, tuple) else (kind,))
    ):
        raise MetadataError(
            f"{path}: field {name!r} has an invalid value {value!r}", path=path, field=name
        )
    return value


def int_tuple(value: Any, name: str, *, path: str, positive: bool = False) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= (1 if positive else 0)
        for v in value
    ):
        raise MetadataError(
            f"{path}: field {name!r} must be a list of "
            f"{'positive' if positive else 'non-negative'} integers, got {value!r}",
            path=path,
            field=name,
        )
    return tuple(value)


_ARRAY_KEYS = {
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "dimension_names",
    "storage_transformers",
}
_GROUP_KEYS = {"zarr_format", "node_type", "attributes", "consolidated_metadata"}


def _check_extensions(doc: dict, known: set[str], path: str) -> None:
    for name, value in doc.items():
        if name in known:
            continue
        if isinstance(value, dict) and value.get("must_understand") is False:
            continue
        raise UnsupportedError(
            f"{path}: unknown field {name!r} (must be understood; mark it "
            '"must_understand": false to let readers ignore it)',
            path=path,
        )


def parse_v3(doc: dict, *, path: str) -> Metadata:
    """A parsed ``zarr.json`` (array or group)."""
    if doc.get("zarr_format") != 3:
        raise MetadataError(f"{path}: zarr_format must be 3", path=path, field="zarr_format")
    node_type = doc.get("node_type")
    if node_type == "group":
        _check_extensions(doc, _GROUP_KEYS, path)
        return GroupMetadata(
            3, _attributes(doc, path), {"zarr.json": doc}, consolidated=_consolidated_v3(doc, path)
        )
    if node_type != "array":
        raise MetadataError(
            f"{path}: node_type must be 'array' or 'group', got {node_type!r}",
            path=path,
            field="node_type",
        )
    _check_extensions(doc, _ARRAY_KEYS, path)
    return _parse_v3_array(doc, path)


def _parse_v3_array(doc: dict, path: str) -> ArrayMetadata:
    shape = int_tuple(require(doc, "shape", list, path=path), "shape", path=path)
    data_type = parse_v3_data_type(require(doc, "data_type", (str, dict), path=path), path=path)
    limits.check_item_size(data_type.stored_dtype, path=path)
    grid = require(doc, "chunk_grid", dict, path=path)
    if grid.get("name") != "regular":
        raise UnsupportedError(
            f"{path}: chunk grid {grid.get('name')!r} is not supported (only 'regular')", path=path
        )
    chunk_shape = int_tuple(
        _configuration(grid, "chunk_grid", path).get("chunk_shape"),
        "chunk_grid.configuration.chunk_shape",
        path=path,
        positive=True,
    )
    if len(chunk_shape) != len(shape):
        raise MetadataError(
            f"{path}: chunk_shape {chunk_shape} does not match shape {shape}",
            path=path,
            field="chunk_grid",
        )
    limits.check_chunk_size(
        _decoded_chunk_shape(doc, chunk_shape), data_type.stored_dtype, path=path
    )
    codec_entries, quirks = _codec_entries(doc, path)
    fill_value = doc.get("fill_value")
    kind = data_type.dtype.kind
    if "fill_value" in doc and fill_value is None and kind in "biuf" and not data_type.dtype.names:
        fill_value = False if kind == "b" else 0  # zarrita.js and GDAL write null for zero
        quirks.append('"fill_value": null read as 0')
    if quirks:  # one warning an array, naming every quirk
        log.warning("%s: %s (as zarrita.js and GDAL mean them)", path, "; ".join(quirks))
    if doc.get("storage_transformers"):
        raise UnsupportedError(f"{path}: storage transformers are not supported", path=path)
    names = doc.get("dimension_names")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != len(shape)
        or not all(n is None or isinstance(n, str) for n in names)
    ):
        raise MetadataError(
            f"{path}: invalid dimension_names {names!r}", path=path, field="dimension_names"
        )
    if "fill_value" not in doc:
        raise MetadataError(
            f"{path}: required field 'fill_value' is missing", path=path, field="fill_value"
        )
    return ArrayMetadata(
        zarr_format=3,
        shape=shape,
        data_type=data_type,
        chunk_shape=chunk_shape,
        chunk_key_encoding=_chunk_key_encoding(doc, path),
        fill_value=parse_fill_value(fill_value, data_type, 3, path=path),
        codec_source=v3_codec_source(codec_entries, path=path),
        dimension_names=tuple(names)
        if names is not None
        else dimension_names_from_attrs(_attributes(doc, path), len(shape)),
        attributes=_attributes(doc, path),
        document={"zarr.json": doc},
    )


_LITTLE_ENDIAN_BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _codec_entries(doc: dict, path: str) -> tuple[list, list[str]]:
    """The ``codecs`` list, with the array->bytes codec its writer left out put back, and the
    quirks read. zarrita.js writes ``[]`` for an array made without codecs; GDAL (up to at
    least 3.10) leaves ``codecs`` out for an uncompressed array and writes only array->array
    and bytes->bytes codecs (``[transpose, gzip]``), meaning the little-endian ``bytes``
    codec between them (v3 core spec, "Codecs": exactly one array->bytes codec). Only a list
    of codecs all known to be array->array or bytes->bytes is completed; any other chain is
    built as written, and fails as it must."""
    if "codecs" not in doc:
        return [dict(_LITTLE_ENDIAN_BYTES)], ['no "codecs" read as [bytes (little-endian)]']
    entries = require(doc, "codecs", list, path=path)
    names = [e.get("name") if isinstance(e, dict) else e for e in entries]
    kinds = [getattr(REGISTRY.get(n), "kind", None) if isinstance(n, str) else None for n in names]
    if not entries:
        return [dict(_LITTLE_ENDIAN_BYTES)], ['"codecs": [] read as [bytes (little-endian)]']
    if not all(k in ("array_array", "bytes_bytes") for k in kinds):
        return entries, []
    at = kinds.count("array_array")
    if kinds[:at] != ["array_array"] * at:  # out of order: built as written, refused there
        return entries, []
    completed = [*entries[:at], dict(_LITTLE_ENDIAN_BYTES), *entries[at:]]
    shown = [*names[:at], "bytes (little-endian)", *names[at:]]
    return completed, [f'"codecs" {names} without an array->bytes codec read as {shown}']


def _decoded_chunk_shape(doc: dict, chunk_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of what one decode allocates: the inner chunks of a shard (a shard is read
    in parts), else the chunk itself."""
    for codec in doc.get("codecs") or ():
        if isinstance(codec, dict) and codec.get("name") == "sharding_indexed":
            inner = (codec.get("configuration") or {}).get("chunk_shape")
            if isinstance(inner, list) and all(isinstance(n, int) for n in inner):
                return tuple(inner)
    return chunk_shape


def _chunk_key_encoding(doc: dict, path: str) -> ChunkKeyEncoding:
    enc = require(doc, "chunk_key_encoding", (dict, str), path=path)
    if isinstance(enc, str):
        enc = {"name": enc}
    name = enc.get("name")
    sep = _configuration(enc, "chunk_key_encoding", path).get(
        "separator", "/" if name == "default" else "."
    )
    if name not in ("default", "v2") or sep not in ("/", "."):
        raise UnsupportedError(f"{path}: chunk key encoding {enc!r} is not supported", path=path)
    return ChunkKeyEncoding(name, sep)


def _configuration(named: dict, field: str, path: str) -> dict:
    """The ``configuration`` object of a named field (``{}`` when absent)."""
    config = named.get("configuration")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise MetadataError(
            f"{path}: {field}.configuration must be an object, not {config!r}",
            path=path,
            field=field,
        )
    return config


def _attributes(doc: dict, path: str) -> dict:
    attrs = doc.get("attributes", {})
    if not isinstance(attrs, dict):
        raise MetadataError(f"{path}: attributes must be an object", path=path, field="attributes")
    return attrs


def _consolidated_v3(doc: dict, path: str) -> dict[str, Metadata] | None:
    """zarr-python's inline consolidated metadata (``consolidated_metadata.metadata``)."""
    cm = doc.get("consolidated_metadata")
    if not isinstance(cm, dict) or cm.get("kind", "inline") != "inline":
        return None
    members = cm.get("metadata")
    if not isinstance(members, dict):
        return None
    return {
        key.strip("/"): _consolidated_member(child, f"{path}#consolidated/{key}")
        for key, child in members.items()
    }


def _consolidated_member(child: Any, where: str) -> Metadata:
    """One member of inline consolidated metadata; a broken one is contained to itself."""
    if not isinstance(child, dict):
        error = MetadataError(
            f"{where}: expected a JSON object, got {type(child).__name__}", path=where
        )
        return BrokenMetadata(error, 3, document={"zarr.json": child})
    return contained(lambda: parse_v3(child, path=where), where, {"zarr.json": child}, 3)


def fill_array(meta: ArrayMetadata) -> np.ndarray:
    """The fill value as a 0-d array of the in-memory dtype (objects for variable length)."""
    dtype = meta.data_type.dtype
    if dtype.kind == "O":
        out = np.empty((), dtype=object)
        out[()] = meta.fill_value
        return out
    return np.asarray(meta.fill_value, dtype=dtype)
