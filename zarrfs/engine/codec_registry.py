"""The codec base class, what it is told about a chunk, and the one registry of codecs by name
(v3 core spec, "Codecs").

A codec has a ``name``, a ``kind`` (``array_array``, ``array_bytes`` or ``bytes_bytes``),
``from_config`` and a synchronous ``decode``; :func:`register` makes a class available under its
v3 names. This module sits at the bottom of the codec modules: ``codecs_builtin``,
``codecs_numcodecs`` and ``sharding`` define codecs against it, and ``codecs`` looks names up in
it, so none of them imports another to reach the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class ChunkSpec:
    """What a codec needs to know about the chunk it decodes."""

    shape: tuple[int, ...]
    dtype: np.dtype  # the dtype of the decoded array at this point of the chain
    order: str = "C"
    fill_value: Any = None  # what missing inner chunks of a shard read as


@dataclass(frozen=True)
class BytesSpec:
    """What a bytes->bytes codec knows of its decoded side: it holds at most ``max_nbytes``
    bytes. A codec that would produce more raises ChunkDecodeError instead, having decoded at
    most one byte more (a decompression bomb stops there)."""

    max_nbytes: int


class Codec:
    """Base class. Subclasses set ``name`` and ``kind`` and implement ``decode``."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "bytes_bytes"

    def __init__(self, configuration: dict | None = None):
        self.configuration = dict(configuration or {})

    @classmethod
    def from_config(cls, configuration: dict, *, path: str | None = None) -> Codec:
        return cls(configuration)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec of this codec's *encoded* side, given its decoded side (array->array only)."""
        return spec

    def decode(self, data: Any, spec: ChunkSpec) -> Any:
        raise NotImplementedError

    def to_json(self) -> dict:
        return {"name": self.name, "configuration": self.configuration}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.configuration!r})"


REGISTRY: dict[str, Callable[..., Codec]] = {}


def register(*names: str):
    """Class decorator: make a codec class available under one or more v3 names."""

    def wrap(cls):
        for n in names or (cls.name,):
            REGISTRY[n] = cls
        return cls

    return wrap
