"""Codec entries to codec objects, and the chain that runs them (v3 core spec, "Codecs").

A codec entry's name is looked up in the registry (``codec_registry``; the classes register
themselves there), else read as a numcodecs id (``codecs_numcodecs``). The v3 chain is *array->array codecs, one
array->bytes codec, bytes->bytes codecs*; decoding runs it backwards. Zarr v2's filters and
compressor are turned into the same chain by ``metadata_v2`` (filters become codecs over flat
buffers, a ``v2_layout`` codec gives the chunk its shape and memory order).

Only decoding exists: zarrfs is a reader. An array's codecs are resolved when its data is first
read (:class:`CodecSource`), not when it opens: a codec zarrfs cannot build breaks the reads of
that array alone, never its opening, its group or its siblings.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .codec_registry import REGISTRY, BytesSpec, ChunkSpec, Codec
from .codecs_numcodecs import is_numcodecs_id, numcodecs_codec
from .errors import (
    ChunkDecodeError,
    MetadataError,
    UnknownCodecError,
    ZarrfsError,
)
from .limits import MAX_CHUNK_BYTES

log = logging.getLogger(__name__)
#: what building a codec raises on a configuration of the wrong shape (a string for a list...)
_MALFORMED = (TypeError, AttributeError, IndexError, KeyError, ValueError, OverflowError)


def codec_from_json(obj: Any, *, path: str | None = None) -> Codec:
    """A v3 codec entry (a name, or ``{"name", "configuration"}``) to a codec object."""
    if isinstance(obj, str):
        name, config = obj, {}
    elif isinstance(obj, dict) and isinstance(obj.get("name"), str):
        name, config = obj["name"], obj.get("configuration") or {}
        if not isinstance(config, dict):
            raise MetadataError(
                f"codec {name!r}: configuration must be an object", path=path, field="codecs"
            )
    else:
        raise MetadataError(f"invalid codec entry {obj!r}", path=path, field="codecs")
    factory = REGISTRY.get(name)
    if factory is None:
        if name.startswith("numcodecs."):
            return numcodecs_codec(name[len("numcodecs.") :], config, path=path)
        if is_numcodecs_id(name):  # zarrita.js writes numcodecs ids bare: "lz4", "zlib"
            log.warning(
                "%s: codec %r read as numcodecs.%s (a bare numcodecs id, as zarrita.js writes it)",
                path,
                name,
                name,
            )
            return numcodecs_codec(name, config, path=path)
        raise UnknownCodecError(
            f"unknown codec {name!r}; zarrfs knows {', '.join(sorted(REGISTRY))} and "
            f"numcodecs.<id> for any numcodecs codec",
            codec=name,
            path=path,
        )
    return factory.from_config(config, path=path)


@dataclass(frozen=True)
class CodecSource:
    """An array's codecs as its document lists them, and how to build them: resolved on first
    read (:meth:`resolve`), so that a codec zarrfs cannot build fails the reads of this array
    only, with an error naming its ``document``."""

    listed: tuple[dict, ...]  # ``{"name", "configuration"}`` each, as ``Array.codecs`` shows them
    build: Callable[[], CodecChain]
    document: str  # the document (and so the node) the codecs come from

    def resolve(self) -> CodecChain:
        try:
            return self.build()
        except ZarrfsError as exc:
            raise exc.at(self.document) from exc
        except _MALFORMED as exc:
            raise MetadataError(
                f"{self.document}: invalid codec configuration ({type(exc).__name__}: {exc})",
                path=self.document,
                field="codecs",
            ) from exc


def v3_codec_source(entries: list, *, path: str) -> CodecSource:
    """A v3 ``codecs`` list (checked to be a list of names or named objects) to resolve later."""
    listed = []
    for entry in entries:
        if isinstance(entry, str):
            listed.append({"name": entry, "configuration": {}})
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            listed.append(
                {"name": entry["name"], "configuration": entry.get("configuration") or {}}
            )
        else:
            raise MetadataError(f"{path}: invalid codec entry {entry!r}", path=path, field="codecs")

    def build() -> CodecChain:
        return CodecChain.from_codecs([codec_from_json(c, path=path) for c in entries], path=path)

    return CodecSource(tuple(listed), build, path)


@dataclass(frozen=True)
class CodecChain:
    """The codecs of an array (or of the inner chunks of a shard), ready to decode chunks."""

    array_array: tuple[Codec, ...]
    array_bytes: Codec
    bytes_bytes: tuple[Codec, ...]

    @classmethod
    def from_codecs(cls, codecs: list[Codec], *, path: str | None = None) -> CodecChain:
        kinds = [c.kind for c in codecs]
        if kinds.count("array_bytes") != 1:
            raise MetadataError(
                f"a codec chain needs exactly one array->bytes codec, got {[c.name for c in codecs]}",
                path=path,
                field="codecs",
            )
        i = kinds.index("array_bytes")
        if any(k != "array_array" for k in kinds[:i]) or any(
            k != "bytes_bytes" for k in kinds[i + 1 :]
        ):
            raise MetadataError(
                f"codecs out of order: {[c.name for c in codecs]}", path=path, field="codecs"
            )
        return cls(tuple(codecs[:i]), codecs[i], tuple(codecs[i + 1 :]))

    @property
    def codecs(self) -> tuple[Codec, ...]:
        return (*self.array_array, self.array_bytes, *self.bytes_bytes)

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in self.codecs]

    def inner_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec the array->bytes codec sees (after every array->array codec)."""
        for c in self.array_array:
            spec = c.resolve(spec)
        return spec

    def bytes_limits(self, spec: ChunkSpec) -> list[BytesSpec]:
        """The most bytes each bytes->bytes codec may decode to, in chain order. The one next
        to the array->bytes codec decodes exactly what that codec reads, for fixed-size
        elements; the ones further out at most twice that plus 64 KiB (a v2 filter may store a
        wider type, a compressed stream may be larger than its input); chunks of
        variable-length elements or shards at most ``ZARRFS_MAX_CHUNK_BYTES``."""
        inner = self.inner_spec(spec)
        if getattr(self.array_bytes, "fixed_size", False) and inner.dtype.kind != "O":
            nbytes = min(math.prod(inner.shape) * inner.dtype.itemsize, MAX_CHUNK_BYTES)
        else:
            nbytes = MAX_CHUNK_BYTES
        outer = min(2 * nbytes + (64 << 10), MAX_CHUNK_BYTES)
        return [BytesSpec(nbytes if i == 0 else outer) for i in range(len(self.bytes_bytes))]

    def decode_bytes(self, data: Any, limits: list[BytesSpec]) -> Any:
        for codec, limit in zip(reversed(self.bytes_bytes), reversed(limits), strict=True):
            data = _run(codec, data, limit)
        return data

    @functools.cached_property
    def direct(self) -> bool:
        """Whether :meth:`decode_into` applies: fixed-size elements laid out by the
        array->bytes codec, at most one compressor that can decode into a given buffer and
        tell its decoded size first (so a short chunk can never leave stale bytes behind)."""
        if self.array_array or not getattr(self.array_bytes, "fixed_size", False):
            return False
        if not self.bytes_bytes:
            return True
        return len(self.bytes_bytes) == 1 and hasattr(self.bytes_bytes[0], "decode_into")

    def decode_bytes_into(self, data: Any, buf: np.ndarray) -> None:
        """Write the bytes the array->bytes codec would decode (a :attr:`direct` chain) into
        ``buf``, flat uint8 of exactly the chunk's size."""
        if not self.bytes_bytes:
            if len(data) != buf.nbytes:
                raise ChunkDecodeError(
                    f"chunk holds {len(data)} bytes, expected {buf.nbytes}",
                    codec=self.array_bytes.name,
                )
            buf[...] = np.frombuffer(data, dtype=np.uint8)
        else:  # the codec checks the decoded size against buf before it writes
            codec = self.bytes_bytes[0]
            try:  # (not through _run: one call less for every chunk)
                codec.decode_into(data, buf)  # type: ignore[attr-defined]
            except Exception as exc:  # noqa: BLE001 - any codec failure is a decode failure
                named = _named(codec, exc)
                if named is exc:
                    raise
                raise named from exc

    def decoder_into(self, buf: np.ndarray) -> Callable[[Any, int, int], None]:
        """:meth:`decode_bytes_into` bound to ``buf``, for many chunks in a row: ``decode(body,
        start, stop)`` decodes ``body[start:stop]``. The compressor's own function where it has
        one (its checks inline, no Python call per chunk between the caller and the C
        decoder, no copy of the chunk's bytes); it raises as decode_bytes_into does."""

        def checked(data: Any, start: int, stop: int) -> None:
            if start or stop != len(data):
                data = memoryview(data)[start:stop]
            self.decode_bytes_into(data, buf)

        if len(self.bytes_bytes) == 1:
            make = getattr(self.bytes_bytes[0], "decoder_into", None)
            fast = make(buf, checked) if make is not None else None
            if fast is not None:
                return fast
        return checked

    def decode_into(self, data: Any, spec: ChunkSpec, buf: np.ndarray) -> np.ndarray:
        """Like :meth:`decode`, with the decoded bytes written into ``buf`` (flat uint8 of the
        chunk's size); the result is a view of ``buf``."""
        self.decode_bytes_into(data, buf)
        return _run(self.array_bytes, buf, spec)

    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        """Encoded chunk bytes to the decoded chunk array of ``spec.shape``."""
        specs = [spec]
        for c in self.array_array:
            specs.append(c.resolve(specs[-1]))
        data = self.decode_bytes(data, self.bytes_limits(spec))
        arr = _run(self.array_bytes, data, specs[-1])
        for codec, s in zip(reversed(self.array_array), reversed(specs[:-1]), strict=True):
            arr = _run(codec, arr, s)
        if arr.shape != spec.shape:
            raise ChunkDecodeError(f"decoded chunk has shape {arr.shape}, expected {spec.shape}")
        return arr


def _run(codec: Codec, data: Any, spec: ChunkSpec | BytesSpec) -> Any:
    """Run one codec, turning its failures into ChunkDecodeError naming it."""
    try:
        return codec.decode(data, spec)
    except Exception as exc:  # noqa: BLE001 - any codec failure is a decode failure
        named = _named(codec, exc)
        if named is exc:
            raise
        raise named from exc


def _named(codec: Codec, exc: Exception) -> BaseException:
    """What a codec's failure is raised as: a ChunkDecodeError naming the codec (a new error,
    never the caught one edited), or the failure itself where it already names one or is
    not the data's fault (MemoryError)."""
    if isinstance(exc, ChunkDecodeError):
        if exc.codec is not None:
            return exc
        return type(exc)(exc.message, path=exc.path, key=exc.key, codec=codec.name)
    if isinstance(exc, MemoryError):
        return exc
    text = str(exc) or type(exc).__name__
    return ChunkDecodeError(f"codec {codec.name!r} failed: {text}", codec=codec.name)
