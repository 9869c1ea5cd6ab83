"""Which arrays the native path reads, and the tensorstore spec it opens them with.

Pure rules over the metadata zarrfs has parsed (and the document it came from), plus one walk
of the array's directory for symlinks. An array is read natively only when every part of it is
on a short list that tensorstore reads exactly as the Zarr specs say, and as zarrfs reads it
(the conformance corpus, read both ways, is the check): anything else, a writer's quirk that
zarrfs tolerates included, is a reason to stay on the Python pipeline.
"""

from __future__ import annotations

import functools
import math
import os
import re

from fsspec.implementations.local import LocalFileSystem

#: zarr v3 ``data_type`` names tensorstore's ``zarr3`` driver reads as zarrfs does
V3_DATA_TYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float16", "float32", "float64", "complex64", "complex128"]
)
#: zarr v3 codecs (v3 core spec, section "Codecs"; crc32c and sharding are extensions)
V3_CODECS = frozenset(["bytes", "transpose", "blosc", "gzip", "zstd", "crc32c", "sharding_indexed"])
_ARRAY_TO_BYTES = frozenset(["bytes", "sharding_indexed"])
#: zarr v2 ``compressor`` ids tensorstore's ``zarr`` driver reads (numcodecs' formats)
V2_COMPRESSORS = frozenset(["blosc", "zlib", "gzip", "zstd", "bz2"])
#: zarr v2 ``dtype``: a plain number or bool, any byte order
_V2_DTYPE = re.compile(r"[<>|](b1|[iu][1248]|f[248]|c(8|16))")
_SPECIAL_FLOATS = frozenset(["NaN", "Infinity", "-Infinity"])
#: array directories with more entries than this are not walked for symlinks
WALK_LIMIT = 250_000
#: larger chunks stay on the Python pipeline: their per-chunk Python time is nothing next to
#: their decoding, and a chunk tensorstore cannot allocate ends the process (std::bad_alloc)
#: where zarrfs raises an error naming it
MAX_NATIVE_CHUNK_BYTES = 64 << 20
#: shards of more inner chunks stay on the Python pipeline, which plans them from the shard's
#: index (tensorstore plans every inner chunk: a shard of two million 1-byte chunks ran a
#: process capped at 768 MiB out of memory)
MAX_CHUNKS_PER_SHARD = 1 << 14


def refusal(store, path: str, meta) -> str | None:
    """Why tensorstore must not read this array (None when it may)."""
    for rule in (_store_rule, _format_rule, _size_rule, _confinement_rule):
        reason = rule(store, path, meta)
        if reason:
            return reason
    return None


def acceptance(meta) -> str:
    """Why tensorstore reads it, in one line."""
    if meta.zarr_format == 3:
        doc = meta.document["zarr.json"]
        codecs = ", ".join(_v3_codec_names(doc.get("codecs")))
        encoding = doc.get("chunk_key_encoding", {}).get("name", "default")
        what = f"zarr v3 {doc['data_type']}, codecs {codecs}, {encoding} chunk keys"
    else:
        doc = meta.document[".zarray"]
        compressor = (doc.get("compressor") or {}).get("id", "no compressor")
        what = f"zarr v2 {doc['dtype']}, {compressor}"
    return f"a local store; {what}; read by tensorstore as the spec says"


def spec(store, path: str, meta) -> dict:
    """The tensorstore spec of the array, its metadata given (opened with assume_metadata)."""
    root = store.confined_to.path if store.confined_to is not None else store.root
    base = os.path.abspath(root)
    directory = os.path.join(base, path) if path else base
    if meta.zarr_format == 3:
        doc = meta.document["zarr.json"]
        metadata = {k: v for k, v in doc.items() if k != "attributes"}
        return {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": directory + "/"},
            "metadata": metadata,
        }
    return {
        "driver": "zarr",
        "kvstore": {"driver": "file", "path": directory + "/"},
        "metadata": dict(meta.document[".zarray"]),
    }


# ---------------------------------------------------------------- rules


def _store_rule(store, path: str, meta) -> str | None:
    if type(store.fs) is not LocalFileSystem:
        kind = getattr(store.fs, "protocol", "remote")
        kind = kind[0] if isinstance(kind, tuple) else kind
        return f"a {kind} store: the Python pipeline reads every store but local directories"
    return None


def _format_rule(store, path: str, meta) -> str | None:
    if meta.zarr_format == 3:
        doc = meta.document.get("zarr.json")
        return _v3_reason(doc) if isinstance(doc, dict) else "no zarr.json document"
    doc = meta.document.get(".zarray")
    return _v2_reason(doc) if isinstance(doc, dict) else "no .zarray document"


def _size_rule(store, path: str, meta) -> str | None:
    chunk = list(meta.chunk_shape)
    codecs = meta.document["zarr.json"].get("codecs", []) if meta.zarr_format == 3 else []
    shards = [c for c in codecs if c["name"] == "sharding_indexed"]
    if shards:
        inner = shards[0].get("configuration", {}).get("chunk_shape")
        if not isinstance(inner, list) or len(inner) != len(chunk):
            return "a sharding codec without a usable chunk_shape"
        per_shard = math.prod(-(-n // max(1, i)) for n, i in zip(chunk, inner, strict=True))
        if per_shard > MAX_CHUNKS_PER_SHARD:
            return (
                f"{per_shard:,} inner chunks per shard (zarrfs plans large shards from their index)"
            )
        chunk = inner
    nbytes = math.prod(chunk) * meta.data_type.dtype.itemsize
    if nbytes > MAX_NATIVE_CHUNK_BYTES:
        return f"chunks of {nbytes:,} bytes (the native path reads chunks of at most 64 MiB)"
    return None


def _confinement_rule(store, path: str, meta) -> str | None:
    if store.confined_to is None:  # follow_symlinks=true: the user trusts the store
        return None
    root = store.confined_to.path
    parts = [p for p in path.split("/") if p]
    for i in range(1, len(parts) + 1):  # the directories from the root down to the array
        if os.path.islink(os.path.join(root, *parts[:i])):
            return f"{'/'.join(parts[:i])} is a symlink (zarrfs reads symlinks confined)"
    return symlink_in(os.path.join(root, *parts))


@functools.lru_cache(maxsize=4096)
def symlink_in(directory: str) -> str | None:
    """Why a directory tree cannot be read unconfined: a symlink in it (named), or too many
    entries to check; None for a tree without symlinks. Once per directory and process."""
    todo, seen = [directory], 0
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_symlink():
                        where = os.path.relpath(entry.path, directory)
                        return f"it holds a symlink ({where}), which zarrfs reads confined"
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError as exc:
            return f"its directory cannot be listed ({exc.strerror or exc})"
        if seen > WALK_LIMIT:
            return (
                f"it holds more than {WALK_LIMIT:,} files, too many to check for symlinks "
                "(give follow_symlinks=true to trust the store)"
            )
    return None


# ---------------------------------------------------------------- zarr v3


def _v3_reason(doc: dict) -> str | None:
    data_type = doc.get("data_type")
    if not isinstance(data_type, str) or data_type not in V3_DATA_TYPES:
        return f"data type {data_type!r} (the native path reads numbers and bool)"
    if doc.get("storage_transformers"):
        return "storage transformers"
    grid = doc.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        return "a chunk grid other than 'regular'"
    reason = _v3_codecs_reason(doc.get("codecs"))
    if reason:
        return reason
    encoding = doc.get("chunk_key_encoding")
    if not isinstance(encoding, dict) or encoding.get("name") not in ("default", "v2"):
        return f"chunk key encoding {encoding!r}"
    separator = (encoding.get("configuration") or {}).get("separator")
    if separator not in (None, "/", "."):
        return f"chunk key separator {separator!r}"
    if not _v3_fill_ok(doc.get("fill_value"), data_type):
        return f"fill value {doc.get('fill_value')!r} as written (read by zarrfs's own rules)"
    return None


def _v3_codec_names(codecs) -> list[str]:
    return [c.get("name") if isinstance(c, dict) else repr(c) for c in codecs or []]


def _v3_codecs_reason(codecs) -> str | None:
    if not isinstance(codecs, list) or not codecs:
        return "no codec listed (zarrfs reads the quirk as the bytes codec)"
    if not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in codecs):
        return "a codec not written as an object with a name"
    names = [c["name"] for c in codecs]
    other = [n for n in names if n not in V3_CODECS]
    if other:
        return f"codec {other[0]!r} (decoded by zarrfs's Python pipeline)"
    if sum(n in _ARRAY_TO_BYTES for n in names) != 1:
        return "not exactly one array-to-bytes codec"
    for c in codecs:
        if c["name"] == "sharding_indexed":
            config = c.get("configuration") or {}
            for key in ("codecs", "index_codecs"):
                inner = config.get(key)
                if any(
                    isinstance(i, dict) and i.get("name") == "sharding_indexed" for i in inner or []
                ):
                    return "shards inside shards (read by zarrfs's Python pipeline)"
                reason = _v3_codecs_reason(inner)
                if reason:
                    return f"inside the shards: {reason}"
    return None


def _v3_fill_ok(value, data_type: str) -> bool:
    if data_type == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if data_type.startswith(("int", "uint")):
        return isinstance(value, int)
    if data_type.startswith("float"):
        return _float_fill_ok(value)
    return (  # complex: a pair of floats
        isinstance(value, list) and len(value) == 2 and all(_float_fill_ok(v) for v in value)
    )


def _float_fill_ok(value) -> bool:
    if isinstance(value, str):
        return value in _SPECIAL_FLOATS
    return isinstance(value, int | float) and not isinstance(value, bool)


# ---------------------------------------------------------------- zarr v2


def _v2_reason(doc: dict) -> str | None:
    dtype = doc.get("dtype")
    if not isinstance(dtype, str) or not _V2_DTYPE.fullmatch(dtype):
        return f"dtype {dtype!r} (the native path reads numbers and bool)"
    if doc.get("filters"):
        ids = [f.get("id") if isinstance(f, dict) else f for f in doc["filters"]]
        return f"filters {ids} (decoded by zarrfs's Python pipeline)"
    compressor = doc.get("compressor")
    if compressor is not None:
        cid = compressor.get("id") if isinstance(compressor, dict) else compressor
        if cid not in V2_COMPRESSORS:
            return f"compressor {cid!r} (decoded by zarrfs's Python pipeline)"
    if doc.get("order", "C") not in ("C", "F"):
        return f"order {doc.get('order')!r}"
    if "dimension_separator" in doc and doc["dimension_separator"] not in (".", "/"):
        return f"dimension_separator {doc['dimension_separator']!r}"
    fill = doc.get("fill_value")
    kind = dtype[1]
    ok = (
        fill is None
        or (kind == "b" and isinstance(fill, bool))
        or (kind in "iu" and isinstance(fill, int) and not isinstance(fill, bool))
        or (kind == "f" and _float_fill_ok(fill))
    )
    if not ok:
        return f"fill value {fill!r} as written (read by zarrfs's own rules)"
    return None
