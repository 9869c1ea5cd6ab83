"""The v3 core codecs that are not compressors: ``bytes``, ``transpose``, ``crc32c``,
``vlen-utf8``/``vlen-bytes``, and ``v2_layout``, the last step of every v2 chain.

v3 core spec sections "bytes", "transpose", "crc32c"; zarr-python's vlen codecs share
numcodecs' VLenUTF8/VLenBytes byte layout.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numcodecs
import numpy as np
from crc32c import crc32c
from numcodecs.compat import ensure_ndarray_like

from .codec_registry import ChunkSpec, Codec, register
from .codecs_numcodecs import check_vlen_header
from .errors import ChecksumError, ChunkDecodeError, MetadataError


def _expect_size(data, spec: ChunkSpec, codec: str) -> None:
    want = math.prod(spec.shape) * spec.dtype.itemsize
    if len(data) != want:
        raise ChunkDecodeError(
            f"chunk holds {len(data)} bytes, expected {want} for shape {spec.shape} "
            f"and {spec.dtype}",
            codec=codec,
        )


@register("bytes", "endian")
class BytesCodec(Codec):
    """Fixed-size elements in little- or big-endian order (array->bytes)."""

    name = "bytes"
    kind = "array_bytes"
    fixed_size = True

    @classmethod
    def from_config(cls, configuration, *, path=None):
        endian = configuration.get("endian", "little")
        if endian not in ("little", "big"):
            raise MetadataError(
                f"bytes codec: endian must be 'little' or 'big', got {endian!r}",
                path=path,
                field="codecs",
            )
        return cls(configuration)

    def decode(self, data, spec):
        dtype = spec.dtype
        if dtype.kind == "O":
            raise ChunkDecodeError(
                "the bytes codec cannot hold variable-length data", codec=self.name
            )
        order = "<" if self.configuration.get("endian", "little") == "little" else ">"
        dtype = dtype.newbyteorder(order) if dtype.itemsize > 1 or dtype.fields else dtype
        buf = data.view("u1") if isinstance(data, np.ndarray) else memoryview(data).cast("B")
        _expect_size(buf, spec, self.name)
        return np.frombuffer(buf, dtype=dtype).reshape(spec.shape)


@register("transpose")
class TransposeCodec(Codec):
    """A permutation of the chunk's axes (array->array)."""

    name = "transpose"
    kind = "array_array"

    def __init__(self, configuration):
        super().__init__(configuration)
        self.permutation: tuple[int, ...] | str = configuration.get("order", ())

    @classmethod
    def from_config(cls, configuration, *, path=None):
        order = configuration.get("order")
        if not (
            order in ("C", "F")
            or (isinstance(order, list) and all(isinstance(i, int) for i in order))
        ):
            raise MetadataError(
                f"transpose codec: invalid order {order!r}", path=path, field="codecs"
            )
        if isinstance(order, list) and sorted(order) != list(range(len(order))):
            raise MetadataError(
                f"transpose codec: order {order} is not a permutation", path=path, field="codecs"
            )
        return cls(configuration)

    def _perm(self, ndim: int) -> tuple[int, ...]:
        p = self.permutation
        if p == "C":
            return tuple(range(ndim))
        if p == "F":
            return tuple(reversed(range(ndim)))
        if len(p) != ndim:
            raise ChunkDecodeError(
                f"transpose order {list(p)} does not fit {ndim} dimensions", codec=self.name
            )
        return tuple(p)

    def resolve(self, spec):
        perm = self._perm(len(spec.shape))
        return replace(spec, shape=tuple(spec.shape[i] for i in perm))

    def decode(self, data, spec):
        perm = self._perm(data.ndim)
        return data.transpose(np.argsort(perm))


@register("crc32c")
class Crc32cCodec(Codec):
    """A CRC-32C (Castagnoli) checksum appended as 4 little-endian bytes (bytes->bytes)."""

    name = "crc32c"

    def decode(self, data, spec):
        view = memoryview(data).cast("B")
        if len(view) < 4:
            raise ChunkDecodeError("chunk too short for its crc32c checksum", codec=self.name)
        body, stored = view[:-4], int.from_bytes(view[-4:], "little")
        actual = crc32c(body)
        if actual != stored:
            raise ChecksumError(
                f"crc32c checksum mismatch (stored {stored:#010x}, computed {actual:#010x}): "
                "the stored chunk is corrupt",
                codec=self.name,
            )
        return body


class _VLenCodec(Codec):
    kind = "array_bytes"
    impl: numcodecs.abc.Codec

    def decode(self, data, spec):
        count = check_vlen_header(data, self.name)
        if count != math.prod(spec.shape):
            raise ChunkDecodeError(
                f"chunk holds {count} items, expected {math.prod(spec.shape)}", codec=self.name
            )
        return self.impl.decode(data).reshape(spec.shape)


@register("vlen-utf8")
class VLenUTF8Codec(_VLenCodec):
    name = "vlen-utf8"
    impl = numcodecs.VLenUTF8()


@register("vlen-bytes")
class VLenBytesCodec(_VLenCodec):
    name = "vlen-bytes"
    impl = numcodecs.VLenBytes()


class V2Layout(Codec):
    """The end of a v2 chain: flat decoded data becomes a chunk of the stored dtype and order.

    Not a v3 name: ``metadata_v2`` builds it from the ``.zarray``'s dtype and order.
    """

    name = "v2_layout"
    kind = "array_bytes"

    @property
    def fixed_size(self) -> bool:
        return np.dtype(self.configuration["dtype"]).kind != "O"

    def decode(self, data, spec):
        arr = ensure_ndarray_like(data)
        if arr.dtype.kind == "O" or spec.dtype.kind == "O":
            if arr.dtype.kind != "O" or arr.size != math.prod(spec.shape):
                raise ChunkDecodeError(
                    f"object chunk holds {arr.size} items of {arr.dtype}, "
                    f"expected {math.prod(spec.shape)} objects",
                    codec=self.name,
                )
            return arr.reshape(spec.shape, order=spec.order)
        if arr.dtype != spec.dtype:
            arr = np.ascontiguousarray(arr).reshape(-1).view("u1")
            _expect_size(arr, spec, self.name)
            arr = arr.view(spec.dtype)
        elif arr.size != math.prod(spec.shape):
            raise ChunkDecodeError(
                f"chunk holds {arr.size} items, expected {math.prod(spec.shape)}", codec=self.name
            )
        return arr.reshape(spec.shape, order=spec.order)
