"""Every compressor and filter, through numcodecs (never a hand-written compressor).

Three doors lead here: the v3 ``gzip``/``zstd``/``blosc`` codecs, v3 ``numcodecs.<id>`` names
(as zarr-python and numcodecs.zarr3 write them), and v2 ``compressor``/``filters`` entries. Codecs
that could run code on load (``pickle``) are refused, never instantiated.

Lenient where harmless, strict where data would be wrong: a configuration key the numcodecs class
does not take (a writer's own, like GDAL's ``"delta"`` on ``lzma``) is dropped with one warning
for the compressors whose stream says how to decode it (:data:`SELF_DESCRIBING`), and refused
for every other codec, whose decoding follows its configuration.
"""

from __future__ import annotations

import inspect
import logging
import math
from dataclasses import replace

import numcodecs
import numcodecs.registry
import numpy as np
from numcodecs.compat import ensure_contiguous_ndarray, ensure_ndarray_like

from . import blosc_direct, bounded
from .codec_registry import BytesSpec, ChunkSpec, Codec, register
from .errors import ChecksumError, ChunkDecodeError, UnknownCodecError, UnsupportedError
from .frame_headers import blosc_nbytes, lz4_nbytes, zstd_content_size

#: Ids numcodecs knows that zarrfs will not run: unpickling stored bytes can execute code.
REFUSED = frozenset({"pickle"})
#: numcodecs ids that transform arrays element-wise (flat), i.e. v3 array->array codecs.
ARRAY_TO_ARRAY = frozenset(
    {"delta", "fixedscaleoffset", "quantize", "bitround", "astype", "packbits", "categorize"}
)
#: numcodecs ids that turn arrays into bytes (v3 array->bytes); ``pcodec`` and ``zfpy`` are
#: serializers in numcodecs' ``zarr3`` module (as zarr-python 3 writes them)
ARRAY_TO_BYTES = frozenset(
    {"vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2", "pcodec", "zfpy"}
)
#: compressors whose stored stream names everything decoding needs (zlib/gzip/bz2 headers, the
#: zstd, blosc and lz4 frame headers, the xz container's filter chain): configuration keys steer
#: encoding only, so one zarrfs does not know cannot change the values read
SELF_DESCRIBING = frozenset({"zlib", "gzip", "bz2", "zstd", "blosc", "lz4", "lzma"})
#: numcodecs ids of checksums, whose ``decode`` raises RuntimeError when the stored and the
#: computed checksum differ.
CHECKSUMS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})
_BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
log = logging.getLogger(__name__)


def is_numcodecs_id(codec_id: str) -> bool:
    """Whether numcodecs knows ``codec_id`` (its own codecs, and those other packages
    register through entry points, which numcodecs lists once, on import)."""
    return codec_id in numcodecs.registry.codec_registry or codec_id in numcodecs.registry.entries


def _unknown_keys(codec_id: str, config: dict) -> list[str]:
    """Keys of ``config`` the numcodecs class of ``codec_id`` does not take."""
    cls = numcodecs.registry.codec_registry.get(codec_id)
    if cls is None:
        return []
    params = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return []
    taken = {p.name for p in params}
    return sorted(k for k in config if k != "id" and k not in taken)


def _known_keys_only(codec_id: str, config: dict, path: str | None) -> dict:
    """``config`` without the keys numcodecs does not take, where that is harmless."""
    unknown = _unknown_keys(codec_id, config)
    if not unknown:
        return config
    if codec_id not in SELF_DESCRIBING or (codec_id == "lzma" and config.get("format") == 3):
        raise UnknownCodecError(
            f"codec {codec_id!r}: configuration keys {unknown} are unknown to numcodecs "
            f"{numcodecs.__version__}, and decoding {codec_id} follows its configuration: "
            "refused rather than risk wrong values",
            codec=codec_id,
            path=path,
        )
    log.warning(
        "%s: codec %r: ignoring configuration key%s %s unknown to numcodecs (decoding needs "
        "only the stored stream)",
        path,
        codec_id,
        "s" if len(unknown) > 1 else "",
        ", ".join(repr(k) for k in unknown),
    )
    return {k: v for k, v in config.items() if k not in unknown}


def get_numcodecs(config: dict, *, path: str | None = None) -> numcodecs.abc.Codec:
    """A numcodecs codec for a v2-style ``{"id": ..., **config}``, refusing unsafe ones."""
    codec_id = config.get("id")
    if not isinstance(codec_id, str):
        raise UnknownCodecError(
            f"codec entry without an id: {config!r}", codec=str(codec_id), path=path
        )
    if codec_id in REFUSED:
        raise UnsupportedError(
            f"codec {codec_id!r} is refused: decoding it would unpickle stored data, which can "
            "run arbitrary code",
            path=path,
        )
    config = dict(config)
    if codec_id == "blosc" and isinstance(config.get("shuffle"), str):
        config["shuffle"] = _BLOSC_SHUFFLE.get(config["shuffle"], 1)  # a harmless writer quirk
    if codec_id == "blosc" and config.get("shuffle") == -1:
        config["shuffle"] = 1  # AUTOSHUFFLE: decoding reads the real flag from the blosc header
    if not is_numcodecs_id(codec_id):
        raise UnknownCodecError(
            f"unknown codec {codec_id!r} (not in numcodecs {numcodecs.__version__})",
            codec=codec_id,
            path=path,
        )
    config = _known_keys_only(codec_id, config, path)
    try:
        return numcodecs.get_codec(config)
    except KeyError as exc:
        raise UnknownCodecError(
            f"unknown codec {codec_id!r} (not in numcodecs {numcodecs.__version__})",
            codec=codec_id,
            path=path,
        ) from exc
    except (TypeError, ValueError) as exc:
        raise UnknownCodecError(
            f"codec {codec_id!r}: invalid configuration {config!r}: {exc}",
            codec=codec_id,
            path=path,
        ) from exc


class _Wrapped(Codec):
    """A codec object of numcodecs under the name it was given in the metadata."""

    def __init__(self, name: str, impl: numcodecs.abc.Codec, configuration: dict):
        super().__init__(configuration)
        self.name = name  # type: ignore[misc] - per instance: the codec id it wraps
        self.impl = impl


class NumcodecsBytes(_Wrapped):
    """A numcodecs codec over flat buffers: compressors, checksums, v2 filters."""

    kind = "bytes_bytes"

    def decode(self, data, spec: BytesSpec):
        return bounded.decode(self.impl, data, spec.max_nbytes)


class NumcodecsChecksum(NumcodecsBytes):
    """A numcodecs checksum: a mismatch is a :class:`ChecksumError`, built here, where the
    checksum fails (a bare RuntimeError would say nothing of it)."""

    def decode(self, data, spec):
        try:
            return self.impl.decode(data)
        except RuntimeError as exc:
            raise ChecksumError(
                f"codec {self.name!r}: checksum mismatch ({exc}); the stored chunk is corrupt",
                codec=self.name,
            ) from exc


class NumcodecsArray(_Wrapped):
    """A numcodecs filter as a v3 array->array codec: flat decode, then the chunk's shape."""

    kind = "array_array"

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The chunk as stored, after this filter encoded it (what zarr-python's numcodecs
        codecs say): ``packbits`` makes one uint8 of padding count plus a bit per element;
        ``astype`` stores ``encode_dtype``; the others store ``astype`` where given."""
        config = self.configuration
        if self.name == "numcodecs.packbits":
            return replace(
                spec, shape=(1 + math.ceil(math.prod(spec.shape) / 8),), dtype=np.dtype("u1")
            )
        stored = (
            config.get("encode_dtype") if self.name == "numcodecs.astype" else config.get("astype")
        )
        return replace(spec, dtype=np.dtype(stored)) if stored else spec

    def decode(self, data, spec):
        out = ensure_ndarray_like(self.impl.decode(np.ascontiguousarray(data)))
        if out.size != math.prod(spec.shape):
            raise ChunkDecodeError(
                f"{self.name} decoded {out.size} items, expected {math.prod(spec.shape)}",
                codec=self.name,
            )
        return out.reshape(spec.shape)


class NumcodecsArrayBytes(_Wrapped):
    """A numcodecs object codec as a v3 array->bytes codec."""

    kind = "array_bytes"

    def decode(self, data, spec):
        out = ensure_ndarray_like(self.impl.decode(data))
        return out.reshape(spec.shape)


class _CheckedVLen:
    """A vlen codec (``vlen-utf8``, ``vlen-bytes``, ``vlen-array``): its header is checked
    before numcodecs decodes."""

    name: str

    def decode(self, data, spec):
        check_vlen_header(data, self.name)
        return super().decode(data, spec)


class NumcodecsVLen(_CheckedVLen, NumcodecsBytes):
    """A v2 vlen filter."""


class NumcodecsVLenArrayBytes(_CheckedVLen, NumcodecsArrayBytes):
    """A v3 ``numcodecs.vlen-*`` codec."""


#: numcodecs' variable-length layout: a uint32 item count, then per item a uint32 length and
#: its bytes
VLEN = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array"})


def check_vlen_header(data, name: str) -> int:
    """The item count of a vlen chunk, checked against its size before numcodecs allocates
    an object array that large (a corrupt count asked for 32 GiB)."""
    view = memoryview(ensure_contiguous_ndarray(data)).cast("B")
    if len(view) < 4:
        raise ChunkDecodeError(
            f"{name} chunk of {len(view)} bytes is too short for its item count", codec=name
        )
    count = int.from_bytes(view[:4], "little")
    if 4 + 4 * count > len(view):
        raise ChunkDecodeError(
            f"{name} chunk says it holds {count} items, but {len(view)} "
            "bytes cannot (the chunk is corrupt or truncated)",
            codec=name,
        )
    return count


class _SizedMixin:
    """Compressors whose frame header says the decoded size: they decode straight into a given
    buffer, after checking that size against it (a short chunk never leaves stale bytes). A
    frame that does not say (``decoded_size`` None) is decoded, then checked and copied."""

    impl: numcodecs.abc.Codec

    def decoded_size(self, data) -> int | None:
        raise NotImplementedError

    def decode_into(self, data, buf: np.ndarray) -> np.ndarray:
        size = self.decoded_size(data)
        if size == buf.nbytes:  # the common case first: as few calls as can be, per chunk
            self._decompress(data, buf)
            return buf
        decoded = None
        if size is None:  # decoded at most one byte past the buffer's size
            decoded = ensure_contiguous_ndarray(bounded.decode(self.impl, data, buf.nbytes))
            decoded = decoded.view(np.uint8).reshape(-1)
            size = decoded.nbytes
        bounded.check_stated(self.name, size, buf.nbytes)
        if size != buf.nbytes:
            raise ChunkDecodeError(
                f"chunk decodes to {size} bytes, expected {buf.nbytes}", codec=self.name
            )
        if decoded is None:
            self._decompress(data, buf)
        else:
            buf[...] = decoded
        return buf

    def _decompress(self, data, buf: np.ndarray) -> None:
        self.impl.decode(data, out=buf)


class _CheckedBlosc(_SizedMixin):
    #: the header's decoded size (after checking the frame's length against it)
    decoded_size = staticmethod(blosc_nbytes)
    #: c-blosc itself, without numcodecs' Python around it (the header was checked first)
    _decompress = staticmethod(blosc_direct.decompress_into)
    #: decode_into bound to one buffer, for a task's many chunks (``CodecChain.decoder_into``)
    decoder_into = staticmethod(blosc_direct.decoder_into)

    def decode(self, data, spec: BytesSpec):
        bounded.check_stated("blosc", blosc_nbytes(data), spec.max_nbytes)
        return self.impl.decode(data)


class SizedBlosc(_CheckedBlosc, NumcodecsBytes):
    """A v2 blosc compressor (or a v3 numcodecs.blosc)."""


class SizedLZ4(_SizedMixin, NumcodecsBytes):
    def decoded_size(self, data) -> int:
        return lz4_nbytes(data)


class _SizedZstd(_SizedMixin):
    """Zstandard: straight into the buffer when the frame states its size (numcodecs and
    zarr-python write it)."""

    def decoded_size(self, data) -> int | None:
        return zstd_content_size(data)


class SizedZstd(_SizedZstd, NumcodecsBytes):
    """A v2 zstd compressor (or a v3 numcodecs.zstd)."""


_SIZED = {"blosc": SizedBlosc, "lz4": SizedLZ4, "zstd": SizedZstd}


def numcodecs_codec(codec_id: str, configuration: dict, *, path: str | None = None) -> Codec:
    """The v3 ``numcodecs.<id>`` codec."""
    impl = get_numcodecs({"id": codec_id, **configuration}, path=path)
    name = f"numcodecs.{codec_id}"
    if codec_id in _SIZED:
        return _SIZED[codec_id](name, impl, configuration)
    if codec_id in ARRAY_TO_ARRAY:
        return NumcodecsArray(name, impl, configuration)
    if codec_id in VLEN:
        return NumcodecsVLenArrayBytes(name, impl, configuration)
    if codec_id in ARRAY_TO_BYTES:
        return NumcodecsArrayBytes(name, impl, configuration)
    if codec_id in CHECKSUMS:
        return NumcodecsChecksum(name, impl, configuration)
    return NumcodecsBytes(name, impl, configuration)


def v2_codec(config: dict, *, path: str | None = None) -> Codec:
    """A v2 filter or compressor as a codec over flat buffers."""
    impl = get_numcodecs(config, path=path)
    rest = {k: v for k, v in config.items() if k != "id"}
    if config["id"] in CHECKSUMS:
        return NumcodecsChecksum(config["id"], impl, rest)
    kind = NumcodecsVLen if config["id"] in VLEN else _SIZED.get(config["id"], NumcodecsBytes)
    return kind(config["id"], impl, rest)


class _V3Compressor(Codec):
    """Base for the v3 core compressors: decoding needs no configuration."""

    impl: numcodecs.abc.Codec

    def decode(self, data, spec: BytesSpec):
        return bounded.decode(self.impl, data, spec.max_nbytes)


@register("gzip")
class GzipCodec(_V3Compressor):
    name = "gzip"
    impl = numcodecs.GZip()


@register("zstd")
class ZstdCodec(_SizedZstd, _V3Compressor):
    name = "zstd"
    impl = numcodecs.Zstd()


@register("blosc")
class BloscCodec(_CheckedBlosc, _V3Compressor):
    name = "blosc"
    impl = numcodecs.Blosc()
