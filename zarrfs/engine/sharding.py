"""The ``sharding_indexed`` codec (v3 sharding codec spec).

A shard is one stored object holding a grid of inner chunks, each encoded with the inner codec
chain, plus an index of ``(offset, nbytes)`` pairs (``2**64-1`` twice for a missing inner chunk)
at the start or the end of the object. The reader uses :meth:`ShardingCodec.index_request` and
:meth:`decode_index` to fetch only the index and the inner chunks a selection needs; a whole-shard
:meth:`decode` exists for nested shards and for chains where array->array codecs come first.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .codec_registry import ChunkSpec, Codec, register
from .codecs import CodecChain, codec_from_json
from .errors import ChunkDecodeError, MetadataError, UnsupportedError
from .store_request import ByteRequest

MISSING = np.uint64(2**64 - 1)
#: a shard index's entries as stored (little-endian), as the reader takes them (native order)
_INDEX_DTYPE = np.dtype("<u8") if np.dtype("<u8") == np.dtype(np.uint64) else None


@register("sharding_indexed")
class ShardingCodec(Codec):
    name = "sharding_indexed"
    kind = "array_bytes"

    def __init__(
        self,
        configuration,
        chunk_shape,
        codecs: CodecChain,
        index_codecs: CodecChain,
        index_location: str,
    ):
        super().__init__(configuration)
        self.chunk_shape: tuple[int, ...] = chunk_shape
        self.codecs = codecs
        self.index_codecs = index_codecs
        self.index_location = index_location
        self._per_shard: dict[tuple[int, ...], tuple[int, ...]] = {}
        #: for the index codecs every writer uses (little-endian bytes, then one crc32c or
        #: none), the index's entries from its stored bytes without the chain; None: others
        self._index_body = _index_body(index_codecs)

    @classmethod
    def from_config(cls, configuration, *, path=None):
        try:
            chunk_shape = tuple(int(n) for n in configuration["chunk_shape"])
            codecs = [codec_from_json(c, path=path) for c in configuration["codecs"]]
            index_codecs = [
                codec_from_json(c, path=path)
                for c in configuration.get("index_codecs", [{"name": "bytes"}, {"name": "crc32c"}])
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise MetadataError(
                f"sharding_indexed: invalid configuration ({exc})", path=path, field="codecs"
            ) from exc
        location = configuration.get("index_location", "end")
        if location not in ("start", "end"):
            raise MetadataError(
                f"sharding_indexed: index_location {location!r}", path=path, field="codecs"
            )
        index_chain = CodecChain.from_codecs(index_codecs, path=path)
        extra = [c.name for c in index_chain.bytes_bytes if c.name != "crc32c"]
        if extra or index_chain.array_array:
            raise UnsupportedError(f"sharding index codecs {extra} have no fixed size", path=path)
        return cls(
            configuration,
            chunk_shape,
            CodecChain.from_codecs(codecs, path=path),
            index_chain,
            location,
        )

    def to_json(self):
        return {
            "name": self.name,
            "configuration": {
                "chunk_shape": list(self.chunk_shape),
                "codecs": self.codecs.to_json(),
                "index_codecs": self.index_codecs.to_json(),
                "index_location": self.index_location,
            },
        }

    # ------------------------------------------------------------ the index
    def chunks_per_shard(self, shard_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Inner chunks along each dimension of a shard; asked three times a shard index
        read (a plane's four cost 0.1 ms), so remembered by shard shape."""
        known = self._per_shard.get(shard_shape) if type(shard_shape) is tuple else None
        if known is None:
            known = self._per_shard[tuple(shard_shape)] = self._chunks_per_shard(shard_shape)
        return known

    def _chunks_per_shard(self, shard_shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shard_shape) != len(self.chunk_shape) or any(
            s % c for s, c in zip(shard_shape, self.chunk_shape, strict=True)
        ):
            raise MetadataError(
                f"shard shape {shard_shape} is not a multiple of the inner chunk "
                f"shape {self.chunk_shape}",
                field="codecs",
            )
        return tuple(s // c for s, c in zip(shard_shape, self.chunk_shape, strict=True))

    def index_size(self, shard_shape: tuple[int, ...]) -> int:
        n = math.prod(self.chunks_per_shard(shard_shape))
        return 16 * n + 4 * len(self.index_codecs.bytes_bytes)

    def index_request(self, key: str, shard_shape: tuple[int, ...]) -> ByteRequest:
        size = self.index_size(shard_shape)
        if self.index_location == "start":
            return ByteRequest(key, 0, size)
        return ByteRequest(key, -size, None)

    def decode_index(self, data: bytes, shard_shape: tuple[int, ...]) -> np.ndarray:
        """``(*chunks_per_shard, 2)`` uint64 offsets and sizes."""
        cps = self.chunks_per_shard(shard_shape)
        if len(data) != self.index_size(shard_shape):
            raise ChunkDecodeError(
                f"shard index has {len(data)} bytes, expected {self.index_size(shard_shape)}",
                codec=self.name,
            )
        body_of = self._index_body
        if body_of is not None:  # (without the chain's Python: a plane's four took 0.1 ms more)
            return np.frombuffer(body_of(data), _INDEX_DTYPE).reshape((*cps, 2))
        spec = ChunkSpec((*cps, 2), np.dtype("<u8"))
        return np.asarray(self.index_codecs.decode(data, spec), dtype=np.uint64)

    def locate(
        self, index: np.ndarray, inner_coords: tuple[int, ...], shard_nbytes: int | None = None
    ) -> tuple[int, int] | None:
        """(offset, nbytes) of an inner chunk in its shard, or None when it is missing."""
        offset, nbytes = index[inner_coords]
        if offset == MISSING and nbytes == MISSING:
            return None
        if shard_nbytes is not None and int(offset) + int(nbytes) > shard_nbytes:
            raise ChunkDecodeError(
                f"inner chunk {inner_coords} lies outside its shard", codec=self.name
            )
        return int(offset), int(nbytes)

    # ------------------------------------------------------- whole shards
    def inner_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return replace(spec, shape=self.chunk_shape)

    def decode(self, data, spec):
        data = memoryview(data).cast("B")
        size = self.index_size(spec.shape)
        if len(data) < size:
            raise ChunkDecodeError(
                f"shard of {len(data)} bytes is shorter than its index", codec=self.name
            )
        raw_index = data[:size] if self.index_location == "start" else data[len(data) - size :]
        index = self.decode_index(bytes(raw_index), spec.shape)
        out = np.empty(spec.shape, dtype=spec.dtype if spec.dtype.kind != "O" else object)
        out[...] = spec.fill_value if spec.fill_value is not None else 0
        inner = self.inner_spec(spec)
        for coords in itertools.product(*(range(n) for n in index.shape[:-1])):
            where = self.locate(index, coords, len(data))
            if where is None:
                continue
            chunk = self.codecs.decode(data[where[0] : where[0] + where[1]], inner)
            region = tuple(
                slice(c * n, (c + 1) * n) for c, n in zip(coords, self.chunk_shape, strict=True)
            )
            out[region] = chunk
        return out


def _index_body(chain: CodecChain) -> Callable[[bytes], memoryview] | None:
    """For a shard index of little-endian ``bytes`` then one ``crc32c`` or none, on a
    little-endian machine: the index's entries from its stored bytes (the crc32c codec's own
    check, and its ChecksumError where the checksum differs). None for any other chain."""
    if _INDEX_DTYPE is None or chain.array_array or chain.array_bytes.name != "bytes":
        return None
    if chain.array_bytes.configuration.get("endian", "little") != "little":
        return None
    if not chain.bytes_bytes:
        return lambda data: memoryview(data).cast("B")
    if [c.name for c in chain.bytes_bytes] == ["crc32c"]:
        return functools.partial(chain.bytes_bytes[0].decode, spec=None)
    return None
