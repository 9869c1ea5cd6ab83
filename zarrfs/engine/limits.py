"""The sizes past which zarrfs refuses input instead of allocating for it.

A store is data someone else wrote. Each limit stops one way a small hostile document or chunk
could make a reader allocate gigabytes or recurse past Python's stack; each is read once from
the environment (a size such as ``64M``), so a user with unusual data can raise it.

=====================================  ===========================  ==========
limit                                  environment variable         default
=====================================  ===========================  ==========
one metadata document                  ``ZARRFS_MAX_METADATA_BYTES``  64 MiB
one decoded chunk (or shard)           ``ZARRFS_MAX_CHUNK_BYTES``     2 GiB
one element of a data type             ``ZARRFS_MAX_ITEMSIZE``        1 MiB
nesting of JSON arrays and objects     (fixed)                      640
=====================================  ===========================  ==========
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np

from .errors import MetadataError, UnsupportedError
from .sizes import human_size, parse_size

log = logging.getLogger(__name__)

#: JSON nested deeper than this is refused (so is what Python's parser cannot recurse through):
#: whatever walks a document later recurses once per level (``json.dumps`` manages about 950).
#: The spec's documents need fewer than ten levels, attributes seen in the wild a few hundred.
MAX_JSON_DEPTH = 640


def _from_env(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        log.warning("%s: %s; using %s", name, exc, human_size(default))
        return default


MAX_METADATA_BYTES = _from_env("ZARRFS_MAX_METADATA_BYTES", 64 << 20)
MAX_CHUNK_BYTES = _from_env("ZARRFS_MAX_CHUNK_BYTES", 2 << 30)
MAX_ITEMSIZE = _from_env("ZARRFS_MAX_ITEMSIZE", 1 << 20)


def check_document_size(nbytes: int, *, path: str) -> None:
    """MetadataError for a metadata document past ``ZARRFS_MAX_METADATA_BYTES`` (its parse
    would cost several times its size)."""
    if nbytes > MAX_METADATA_BYTES:
        raise MetadataError(
            f"{path}: metadata document is larger than the {human_size(MAX_METADATA_BYTES)} "
            "zarrfs reads (set ZARRFS_MAX_METADATA_BYTES to read it anyway)",
            path=path,
        )


def check_json_depth(doc: object, *, path: str) -> None:
    """MetadataError for JSON nested deeper than :data:`MAX_JSON_DEPTH`: everything that walks
    it later (attribute views, ``json.dumps``) recurses once per level. Walks without
    recursion, and stops at the first level too deep."""
    stack: list[tuple[object, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise MetadataError(
                f"{path}: JSON nested more than {MAX_JSON_DEPTH} levels deep", path=path
            )
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))


def check_item_size(dtype: np.dtype, *, path: str) -> None:
    """UnsupportedError for elements past ``ZARRFS_MAX_ITEMSIZE``, before anything of that size
    (a fill value, a chunk) is allocated."""
    if dtype.itemsize > MAX_ITEMSIZE:
        raise UnsupportedError(
            f"{path}: data type {dtype.str} has elements of {human_size(dtype.itemsize)}, more "
            f"than the {human_size(MAX_ITEMSIZE)} zarrfs reads (ZARRFS_MAX_ITEMSIZE)",
            path=path,
        )


def check_chunk_size(chunk_shape: tuple[int, ...], dtype: np.dtype, *, path: str) -> None:
    """UnsupportedError for chunks of fixed-size elements past ``ZARRFS_MAX_CHUNK_BYTES``:
    decoding one would allocate that much."""
    if dtype.kind == "O":
        return
    nbytes = math.prod(chunk_shape) * dtype.itemsize
    if nbytes > MAX_CHUNK_BYTES:
        raise UnsupportedError(
            f"{path}: chunks of {chunk_shape} x {dtype.str} hold {human_size(nbytes)}, more "
            f"than the {human_size(MAX_CHUNK_BYTES)} zarrfs decodes at once "
            "(ZARRFS_MAX_CHUNK_BYTES)",
            path=path,
        )
