"""One read asked of a store, and the bytes of its answer."""

from __future__ import annotations

import logging
from typing import NamedTuple

log = logging.getLogger(__name__)

#: What a fetch returns per request: bytes, or None where the object does not exist.
Fetched = bytes | None
#: What a stream hands over per request: the body as the transport gave it, without a copy
#: (bytes, or a read-only memoryview of obstore's buffer), or None where the object does not
#: exist.
Body = bytes | memoryview | None


class ByteRequest(NamedTuple):
    """One read: a whole object (``start is None``), a range ``[start, end)``, or a suffix
    (``start < 0`` and ``end is None``: the last ``-start`` bytes)."""

    key: str
    start: int | None = None
    end: int | None = None


def _range_length(req: ByteRequest) -> int | None:
    if req.start is None:
        return None
    if req.start < 0:
        return -req.start if req.end is None else None
    return None if req.end is None else req.end - req.start


def asked_bytes(req: ByteRequest, data, url: str) -> bytes | memoryview:
    """The asked bytes of a response body from the store at ``url``: ``bytes`` as they are,
    any other buffer (obstore's) as a memoryview of it, not copied (a plane of 512 KiB chunks
    spent more CPU copying obstore's bodies into ``bytes`` than obstore spent getting them);
    but for the asked range of a whole object a server sent instead."""
    if not isinstance(data, bytes):
        data = memoryview(data)
    want = _range_length(req)
    if want is not None and len(data) > want:
        # a server may ignore Range and answer 200 with the whole object (RFC 9110,
        # 14.2): the asked bytes are then a slice of it, never its first bytes (a copy:
        # a kept chunk must not hold the whole object)
        log.info("%s ignored a Range request for %s; using the whole object", url, req.key)
        data = bytes(data[req.start : req.end] if req.start >= 0 else data[req.start :])
    return data


def piece(body: bytes | memoryview, start: int, stop: int) -> bytes | memoryview:
    """``body[start:stop]``: the body itself where that is all of it, else a copy of its own (a
    decoded chunk that the cache keeps may be a view of its stored bytes, and must not keep a
    whole shard or a coalesced range alive)."""
    if start == 0 and stop >= len(body):
        return body
    return bytes(body[start:stop])
