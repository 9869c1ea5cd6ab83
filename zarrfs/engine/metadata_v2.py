"""Zarr v2 metadata: ``.zarray``, ``.zgroup``, ``.zattrs`` and consolidated ``.zmetadata``.

The v2 spec's filters and compressor become an ordinary codec chain: the compressor and the
filters are bytes->bytes codecs over flat buffers (numcodecs semantics), and ``v2_layout`` gives
the flat result the chunk's shape, stored dtype and memory order (``"C"`` or ``"F"``).
"""

from __future__ import annotations

from . import limits
from .cf import dimension_names_from_attrs
from .codecs import CodecChain, CodecSource
from .codecs_builtin import V2Layout
from .codecs_numcodecs import v2_codec
from .dtypes import OBJECT_CODECS, parse_fill_value, parse_v2_dtype
from .errors import MetadataError
from .metadata import (
    ArrayMetadata,
    ChunkKeyEncoding,
    GroupMetadata,
    Metadata,
    contained,
    int_tuple,
    require,
)


def parse_zarray(doc: dict, attrs: dict | None, *, path: str) -> ArrayMetadata:
    if doc.get("zarr_format") != 2:
        raise MetadataError(f"{path}: zarr_format must be 2", path=path, field="zarr_format")
    shape = int_tuple(require(doc, "shape", list, path=path), "shape", path=path)
    chunks = int_tuple(require(doc, "chunks", list, path=path), "chunks", path=path, positive=True)
    if len(chunks) != len(shape):
        raise MetadataError(
            f"{path}: chunks {chunks} do not match shape {shape}", path=path, field="chunks"
        )
    filters = doc.get("filters") or []
    compressor = doc.get("compressor")
    if not isinstance(filters, list) or not all(isinstance(f, dict) for f in filters):
        raise MetadataError(
            f"{path}: filters must be a list of objects", path=path, field="filters"
        )
    if compressor is not None and not isinstance(compressor, dict):
        raise MetadataError(
            f"{path}: compressor must be an object or null", path=path, field="compressor"
        )
    configs = [*filters, *([compressor] if compressor else [])]
    object_codec = next((c.get("id") for c in configs if c.get("id") in OBJECT_CODECS), None)
    if "dtype" not in doc:
        raise MetadataError(f"{path}: required field 'dtype' is missing", path=path, field="dtype")
    data_type = parse_v2_dtype(doc["dtype"], object_codec=object_codec, path=path)
    limits.check_item_size(data_type.stored_dtype, path=path)
    limits.check_chunk_size(chunks, data_type.stored_dtype, path=path)
    order = doc.get("order", "C")
    if order not in ("C", "F"):
        raise MetadataError(
            f"{path}: order must be 'C' or 'F', got {order!r}", path=path, field="order"
        )
    separator = doc.get("dimension_separator") or "."
    if separator not in (".", "/"):
        raise MetadataError(
            f"{path}: dimension_separator must be '.' or '/'",
            path=path,
            field="dimension_separator",
        )
    layout = V2Layout({"dtype": data_type.stored_dtype, "order": order})

    def build() -> CodecChain:
        return CodecChain((), layout, tuple(v2_codec(c, path=path) for c in configs))

    listed = tuple(
        {"name": c.get("id"), "configuration": {k: v for k, v in c.items() if k != "id"}}
        for c in configs
    )
    if "fill_value" not in doc:
        raise MetadataError(
            f"{path}: required field 'fill_value' is missing", path=path, field="fill_value"
        )
    document = {".zarray": doc, **({".zattrs": attrs} if attrs is not None else {})}
    return ArrayMetadata(
        zarr_format=2,
        shape=shape,
        data_type=data_type,
        chunk_shape=chunks,
        chunk_key_encoding=ChunkKeyEncoding("v2", separator),
        fill_value=parse_fill_value(doc["fill_value"], data_type, 2, path=path),
        codec_source=CodecSource(listed, build, path),
        order=order,
        dimension_names=dimension_names_from_attrs(attrs, len(shape)),
        attributes=attrs or {},
        document=document,
    )


def parse_zgroup(doc: dict, attrs: dict | None, *, path: str) -> GroupMetadata:
    if doc.get("zarr_format") != 2:
        raise MetadataError(f"{path}: zarr_format must be 2", path=path, field="zarr_format")
    document = {".zgroup": doc, **({".zattrs": attrs} if attrs is not None else {})}
    return GroupMetadata(2, attrs or {}, document)


def parse_zmetadata(doc: dict, *, path: str) -> dict[str, Metadata]:
    """Consolidated v2 metadata: every node below the root (the root itself under ""). An
    entry that cannot be used becomes a broken node of its own; the others parse as usual."""
    entries = doc.get("metadata")
    if not isinstance(entries, dict):
        raise MetadataError(f"{path}: 'metadata' must be an object", path=path, field="metadata")
    nodes: dict[str, Metadata] = {}
    for key, value in entries.items():
        node, _, name = key.rpartition("/")
        if name not in (".zarray", ".zgroup"):
            continue
        attrs = entries.get(f"{node}/.zattrs" if node else ".zattrs")
        attrs = attrs if isinstance(attrs, dict) else None
        documents = {name: value, **({".zattrs": attrs} if attrs is not None else {})}
        nodes[node] = contained(
            lambda value=value, attrs=attrs, name=name, where=f"{path}#{key}": _parse_entry(
                name, value, attrs, where
            ),
            f"{path}#{key}",
            documents,
            2,
        )
    return nodes


def _parse_entry(name: str, value, attrs, where: str) -> Metadata:
    if not isinstance(value, dict):
        raise MetadataError(
            f"{where}: expected a JSON object, got {type(value).__name__}", path=where
        )
    parse = parse_zarray if name == ".zarray" else parse_zgroup
    return parse(value, attrs, path=where)
