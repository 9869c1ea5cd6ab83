"""Array and group metadata as frozen dataclasses, and the v3 ``zarr.json`` parser.

Parse once, at the edge (STYLE 2): ``zarr.json`` here and ``.zarray``/``.zgroup``/``.zattrs`` in
``metadata_v2`` both become :class:`ArrayMetadata` / :class:`GroupMetadata`; nothing past the
parsers sees a raw dict. Every error names the document and the field.

v3 core spec sections "Array metadata", "Group metadata", "Chunk key encoding" and
"Extensions" (``must_understand``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import codecs_builtin, codecs_numcodecs, limits, sharding  # noqa: F401 - registers codecs
from .codecs import CodecChain, codec_from_json
from .dtypes import DataType, parse_fill_value, parse_v3_data_type
from .errors import MetadataError, UnsupportedError


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """How chunk coordinates become store keys."""

    name: str  # "default" (c/0/1) or "v2" (0.1)
    separator: str

    def key(self, chunk_coords: tuple[int, ...]) -> str:
        parts = [str(i) for i in chunk_coords]
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
    codecs: CodecChain
    order: str = "C"
    dimension_names: tuple[str | None, ...] | None = None
    attributes: dict = field(default_factory=dict)
    document: dict = field(default_factory=dict)  # the stored documents, by file name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(
            math.ceil(s / c) if c else 0 for s, c in zip(self.shape, self.chunk_shape, strict=True)
        )


@dataclass(frozen=True, eq=False)
class GroupMetadata:
    zarr_format: int
    attributes: dict = field(default_factory=dict)
    document: dict = field(default_factory=dict)
    implicit: bool = False
    #: consolidated metadata of every descendant, by path relative to this group
    consolidated: dict[str, ArrayMetadata | GroupMetadata] | None = None


Metadata = ArrayMetadata | GroupMetadata


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
    codecs = CodecChain.from_codecs(
        [codec_from_json(c, path=path) for c in require(doc, "codecs", list, path=path)], path=path
    )
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
        fill_value=parse_fill_value(doc["fill_value"], data_type, 3, path=path),
        codecs=codecs,
        dimension_names=tuple(names) if names is not None else None,
        attributes=_attributes(doc, path),
        document={"zarr.json": doc},
    )


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
        key.strip("/"): parse_v3(child, path=f"{path}#consolidated/{key}")
        for key, child in members.items()
        if isinstance(child, dict)
    }


def fill_array(meta: ArrayMetadata) -> np.ndarray:
    """The fill value as a 0-d array of the in-memory dtype (objects for variable length)."""
    dtype = meta.data_type.dtype
    if dtype.kind == "O":
        out = np.empty((), dtype=object)
        out[()] = meta.fill_value
        return out
    return np.asarray(meta.fill_value, dtype=dtype)
