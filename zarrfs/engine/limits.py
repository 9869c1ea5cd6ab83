"""The sizes past which zarrfs refuses input instead of allocating for it.

A store is data someone else wrote. Each limit stops one way a small hostile document or chunk
could make a reader allocate gigabytes or recurse past Python's stack; each is read once from
the environment (a size such as ``64M``), so a user with unusual data can raise it.

=====================================  ===========================  ==========
limit                                  environment variable         default
=====================================  ===========================  ==========
one metadata document                  ``ZARRFS_MAX_METADATA_BYTES``  64 MiB
one decoded chunk (or shard)           ``ZARRFS_MAX_CHUNK_BYTES``     2 GiB
one element of a data type             ``ZARRFS_MAX_ITEMSIZE``        16 MiB
nesting of JSON arrays and objects     (fixed)                      200
=====================================  ===========================  ==========
"""

from __future__ import annotations

import logging
import os

from .sizes import human_size, parse_size

log = logging.getLogger(__name__)

#: JSON nested deeper than this is refused before it is parsed: Python's parser recurses once per
#: level, and the spec's documents need fewer than ten.
MAX_JSON_DEPTH = 200


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
MAX_ITEMSIZE = _from_env("ZARRFS_MAX_ITEMSIZE", 16 << 20)
