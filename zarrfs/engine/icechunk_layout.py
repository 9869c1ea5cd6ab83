"""Where each chunk of a version of an Icechunk repository is, read from Icechunk's own
snapshot and manifest files, so that its native chunks read as a plain store's objects (through
the engine's ``Store`` of the repository: local files, S3, GCS, Azure).

Icechunk (1.1) hands over a local plane's chunks more slowly than zarrfs reads a plain copy
whole (64 chunk files: 16-28 ms at load 8, the plain copy's plane 6-15 ms), and every key through
it crosses into its runtime and back. A snapshot is immutable, and its format is Icechunk's
spec 1 (``icechunk/flatbuffers/*.fbs``): a file is a 39-byte header (``ICE🧊CHUNK``, the
writer's name, the spec version, the file type, the compression: zstd) and a FlatBuffer.
The snapshot lists the nodes (path, Zarr document, the manifests of an array with the chunk
ranges each covers); a manifest lists each array's chunk references: a chunk file
(``chunks/<id>``, offset, length), bytes inline, or a virtual location.

:class:`ChunkLayout` answers, for a key: a node's document, a chunk's file range or inline
bytes, absent (no reference: the fill value), or "ask Icechunk" (``ASK``): a virtual chunk (its
file is checked against what was committed, by Icechunk), or anything this reader does not
know, including a file in another spec version or one that does not parse. It never guesses:
every offset is checked against its buffer, and a chunk's range against its object by the
reader of that object.
"""

from __future__ import annotations

import base64
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import zstandard

from .store_request import ByteRequest

MAGIC = "ICE🧊CHUNK".encode()
_HEADER = len(MAGIC) + 24 + 3  # magic, writer's name, spec version, file type, compression
SPEC_VERSION = 1
SNAPSHOT, MANIFEST = 1, 2  # file types
_ZSTD = 1
_MAX_FILE_BYTES = 1 << 30  # a decompressed snapshot or manifest, at most
_KEPT_READS = 1 << 16  # chunk keys a layout remembers the object read of
_CROCKFORD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)


class LayoutError(Exception):
    """A snapshot or manifest this reader cannot read: Icechunk is asked instead."""


def object_id(raw: bytes) -> str:
    """Icechunk's name of an object id: its bytes in Crockford's base32, unpadded."""
    return base64.b32encode(raw).decode().rstrip("=").encode().translate(_CROCKFORD).decode()


# ------------------------------------------------------------------------------ FlatBuffers


class _Table:
    """One FlatBuffers table of ``buf`` at ``pos``: its fields by number (schema order, a
    union two: type, then value)."""

    __slots__ = ("buf", "pos", "_vtable", "_vsize")

    def __init__(self, buf: bytes, pos: int):
        self.buf, self.pos = buf, pos
        self._vtable = pos - _i32(buf, pos)
        self._vsize = _u16(buf, self._vtable)

    def _field(self, n: int) -> int:
        """The position of field ``n``, or 0 when absent."""
        at = 4 + 2 * n
        if at >= self._vsize:
            return 0
        rel = _u16(self.buf, self._vtable + at)
        return self.pos + rel if rel else 0

    def scalar(self, n: int, fmt: str, default=0):
        at = self._field(n)
        return _unpack("<" + fmt, self.buf, at)[0] if at else default

    def struct_bytes(self, n: int, size: int) -> bytes | None:
        at = self._field(n)
        return _slice(self.buf, at, size) if at else None

    def _target(self, n: int) -> int:
        at = self._field(n)
        return at + _u32(self.buf, at) if at else 0

    def table(self, n: int) -> _Table | None:
        at = self._target(n)
        return _Table(self.buf, at) if at else None

    def vector(self, n: int) -> tuple[int, int] | None:
        """(position of the first element, length) of a vector field."""
        at = self._target(n)
        return (at + 4, _u32(self.buf, at)) if at else None

    def bytes_(self, n: int) -> bytes | None:
        vec = self.vector(n)
        return _slice(self.buf, vec[0], vec[1]) if vec else None

    def tables(self, n: int) -> list[_Table]:
        vec = self.vector(n)
        if vec is None:
            return []
        first, count = vec
        _slice(self.buf, first, 4 * count)
        return [_Table(self.buf, p + _u32(self.buf, p)) for p in range(first, first + 4 * count, 4)]

    def u32s(self, n: int) -> tuple[int, ...]:
        vec = self.vector(n)
        if vec is None:
            return ()
        return _unpack(f"<{vec[1]}I", self.buf, vec[0])


def _unpack(fmt: str, buf: bytes, at: int) -> tuple:
    """``struct.unpack_from``, within the buffer (a negative offset would count from its
    end): else a LayoutError."""
    if at < 0 or at + struct.calcsize(fmt) > len(buf):
        raise LayoutError("an offset outside the file")
    return struct.unpack_from(fmt, buf, at)


def _u16(buf: bytes, at: int) -> int:
    return _unpack("<H", buf, at)[0]


def _u32(buf: bytes, at: int) -> int:
    return _unpack("<I", buf, at)[0]


def _i32(buf: bytes, at: int) -> int:
    return _unpack("<i", buf, at)[0]


def _slice(buf: bytes, at: int, size: int) -> bytes:
    if at < 0 or size < 0 or at + size > len(buf):
        raise LayoutError("an offset past the end of the file")
    return buf[at : at + size]


def read_file(read: Callable[[str], bytes | None], key: str, file_type: int) -> _Table:
    """The root table of an Icechunk file (a snapshot or a manifest) of spec version 1."""
    data = read(key)
    if data is None:
        raise LayoutError(f"{key}: not there")
    name = key
    if len(data) < _HEADER or not data.startswith(MAGIC):
        raise LayoutError(f"{name}: not an Icechunk file")
    version, kind, compression = data[_HEADER - 3 : _HEADER]
    if version != SPEC_VERSION or kind != file_type or compression != _ZSTD:
        raise LayoutError(f"{name}: spec {version}, type {kind}, compression {compression}")
    try:
        with zstandard.ZstdDecompressor().stream_reader(memoryview(data)[_HEADER:]) as reader:
            buf = reader.read(_MAX_FILE_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise LayoutError(f"{name}: {exc}") from exc
    if len(buf) > _MAX_FILE_BYTES:
        raise LayoutError(f"{name}: larger than {_MAX_FILE_BYTES} bytes")
    return _Table(buf, _u32(buf, 0))


# ---------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class FileRange:
    """A native chunk: ``length`` bytes at ``offset`` of the repository's object ``key``."""

    key: str
    offset: int
    length: int


@dataclass(frozen=True)
class _Node:
    document: bytes  # its zarr.json
    node_id: bytes
    ndim: int
    #: (manifest id, per-dimension (from, to) ranges of chunk indices it covers)
    manifests: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]


ABSENT = object()  # no chunk reference: the fill value
#: Zarr v2's documents, never in a repository (a plain open asks for them)
V2_DOCUMENTS = frozenset((".zarray", ".zgroup", ".zattrs", ".zmetadata"))
ASK = object()  # a key for Icechunk to answer


class ChunkLayout:
    """The chunks of one snapshot of a repository whose objects ``read(key)`` gives (None:
    absent). Thread-safe; the snapshot is read on first use, each manifest once, when a chunk
    it holds is asked for."""

    def __init__(self, read: Callable[[str], bytes | None], snapshot_id: str):
        self.read = read
        self.snapshot_id = snapshot_id
        self._lock = threading.Lock()
        self._nodes: dict[str, _Node] | None = None
        #: (manifest id, node id) -> that array's references in that manifest
        self._refs: dict[tuple[str, bytes], ArrayRefs] = {}
        #: chunk key -> the read of its native chunk's object (``chunk_read``)
        self._reads: dict[str, ByteRequest] = {}

    def nodes(self) -> dict[str, _Node]:
        with self._lock:
            if self._nodes is None:
                try:
                    self._nodes = self._read_snapshot()
                except (UnicodeDecodeError, struct.error) as exc:
                    raise LayoutError(f"snapshot {self.snapshot_id}: {exc}") from exc
            return self._nodes

    def _read_snapshot(self) -> dict[str, _Node]:
        snap = read_file(self.read, f"snapshots/{self.snapshot_id}", SNAPSHOT)
        if object_id(snap.struct_bytes(0, 12) or b"") != self.snapshot_id:
            raise LayoutError(f"snapshot {self.snapshot_id}: its id differs")
        nodes = {}
        for node in snap.tables(2):
            path = (node.bytes_(1) or b"").decode()
            data_type, data = node.scalar(3, "B"), node.table(4)
            manifests: list = []
            ndim = 0
            if data_type == 1 and data is not None:  # an array
                ndim = (data.vector(0) or (0, 0))[1]
                for ref in data.tables(2):
                    extents = ref.vector(1) or (0, 0)
                    _slice(ref.buf, extents[0], 8 * extents[1])
                    ranges = tuple(
                        _unpack("<II", ref.buf, extents[0] + 8 * i) for i in range(extents[1])
                    )
                    manifests.append((object_id(ref.struct_bytes(0, 12) or b""), ranges))
            elif data_type != 2:
                raise LayoutError(f"snapshot {self.snapshot_id}: node data of type {data_type}")
            nodes[path.strip("/")] = _Node(
                node.bytes_(2) or b"", node.struct_bytes(0, 8) or b"", ndim, tuple(manifests)
            )
        return nodes

    def document(self, node_path: str) -> bytes | None:
        """A node's ``zarr.json``, or None where there is no node."""
        node = self.nodes().get(node_path.strip("/"))
        return node.document if node is not None else None

    def chunk(self, node_path: str, index: tuple[int, ...]):
        """A chunk's :class:`FileRange`, its bytes (inline), ``ABSENT``, or None: ask Icechunk
        (a virtual chunk)."""
        node = self.nodes().get(node_path.strip("/"))
        if node is None or len(index) != node.ndim:
            return ABSENT
        for manifest, extents in node.manifests:
            if not extents or all(
                lo <= i < hi for i, (lo, hi) in zip(index, extents, strict=False)
            ):
                return self._refs_of(manifest, node.node_id).get(index, ABSENT)
        return ABSENT

    def _refs_of(self, manifest: str, node_id: bytes) -> ArrayRefs:
        key = (manifest, node_id)
        with self._lock:
            known = self._refs.get(key)
        if known is not None:
            return known
        try:
            refs = self._read_manifest(manifest, node_id)
        except (UnicodeDecodeError, struct.error) as exc:
            raise LayoutError(f"manifest {manifest}: {exc}") from exc
        with self._lock:
            self._refs[key] = refs
        return refs

    def _read_manifest(self, manifest: str, node_id: bytes) -> ArrayRefs:
        root = read_file(self.read, f"manifests/{manifest}", MANIFEST)
        for array in root.tables(1):
            if array.struct_bytes(0, 8) == node_id:
                return ArrayRefs.read(array, f"manifest {manifest}")
        return ArrayRefs.read(None, f"manifest {manifest}")

    def chunk_read(self, key: str) -> ByteRequest | None:
        """The read of a chunk object that answers a whole read of ``key``, where an earlier
        :func:`answer` found ``key`` to be a native chunk (a dict lookup: a plane's every
        chunk asks, on every read)."""
        return self._reads.get(key)

    def _remember(self, key: str, found: FileRange) -> None:
        if len(self._reads) >= _KEPT_READS:
            self._reads.clear()  # (a bound, not an LRU: a plane's reads fit many times over)
        self._reads[key] = ByteRequest(found.key, found.offset, found.offset + found.length)


class ArrayRefs:
    """One array's chunk references in one manifest, read from the manifest's FlatBuffer with
    NumPy over its vectors (a reference a table of its own: 36 µs a reference in Python,
    36 ms for a 1,024-chunk array on its first read), each offset checked against the buffer.
    The object ids are named all at once (base32 of the ids padded to 15 bytes, each name the
    first 20 characters of its 24: a 12-byte id's name, unpadded)."""

    def __init__(self, grid, lines, offsets, lengths, ids, kinds, inline):
        self._grid = grid  # per dimension: the largest index + 1 (lines are row-major in it)
        self._lines = lines  # sorted linear indices; row i of the rest describes _lines[i]
        self._offsets, self._lengths, self._kinds = offsets, lengths, kinds
        padded = np.zeros((len(ids), 15), np.uint8)
        padded[:, :12] = ids
        self._names = base64.b32encode(padded.tobytes()).translate(_CROCKFORD).decode()
        self._inline = inline  # row -> bytes, for inline chunks

    @classmethod
    def read(cls, array: _Table | None, what: str) -> ArrayRefs:
        vec = array.vector(1) if array is not None else None
        if array is None or vec is None or vec[1] == 0:
            empty = np.zeros(0, np.int64)
            return cls((), empty, empty, empty, np.zeros((0, 12), np.uint8), empty, {})
        buf, (first, count) = array.buf, vec
        data = np.frombuffer(buf, np.uint8)
        slots = first + 4 * np.arange(count, dtype=np.int64)
        tables = slots + _gather(data, slots, "<u4")
        vtables = tables - _gather(data, tables, "<i4")
        vsizes = _gather(data, vtables, "<u2")

        def field(n: int) -> np.ndarray:
            """Each reference's position of field ``n`` (0: absent)."""
            there = 4 + 2 * n < vsizes
            rel = _gather(data, np.where(there, vtables + 4 + 2 * n, 0), "<u2")
            return np.where(there & (rel > 0), tables + rel, 0)

        def target(at: np.ndarray) -> np.ndarray:  # an offset field's target (0: absent)
            return np.where(at > 0, at + _gather(data, at, "<u4"), 0)

        index = target(field(0))
        if not index.all():
            raise LayoutError(f"{what}: a reference without a chunk index")
        ndims = _gather(data, index, "<u4")
        ndim = int(ndims[0])
        if (ndims != ndim).any():
            raise LayoutError(f"{what}: chunk indices of different lengths")
        coords = np.zeros((count, ndim), np.int64)
        for d in range(ndim):
            coords[:, d] = _gather(data, index + 4 + 4 * d, "<u4")
        grid = tuple(int(n) + 1 for n in coords.max(axis=0)) if ndim else ()
        lines: np.ndarray = np.zeros(count, np.int64)
        try:
            if ndim:
                lines = np.asarray(np.ravel_multi_index(tuple(coords.T), grid), np.int64)
        except ValueError as exc:  # a grid of more than 2**63 chunks
            raise LayoutError(f"{what}: chunk indices up to {grid}") from exc
        order = np.argsort(lines, kind="stable")
        lines = lines[order]
        if count > 1 and (np.diff(lines) == 0).any():
            raise LayoutError(f"{what}: a chunk referred to twice")
        ids_at, location, inline_at = field(4), field(5), target(field(1))
        kinds = np.where(ids_at > 0, _NATIVE, np.where(location > 0, _VIRTUAL, _INLINE))
        if ((kinds == _INLINE) & (inline_at == 0)).any():
            raise LayoutError(f"{what}: a reference to nothing")
        inline = {}
        for row in np.flatnonzero(kinds[order] == _INLINE).tolist():
            at = int(inline_at[order[row]])
            inline[row] = _slice(buf, at + 4, _u32(buf, at))
        ids = data[_spans(data, ids_at[order], 12)]
        offsets = _gather(data, field(2)[order], "<u8", absent_zero=True)
        lengths = _gather(data, field(3)[order], "<u8", absent_zero=True)
        return cls(grid, lines, offsets, lengths, ids, kinds[order], inline)

    def get(self, index: tuple[int, ...], default=None):
        """A chunk's :class:`FileRange`, its bytes (inline), None (virtual), or ``default``
        (no reference)."""
        if len(index) != len(self._grid) or not all(
            0 <= i < n for i, n in zip(index, self._grid, strict=True)
        ):
            return default
        line = 0
        for i, n in zip(index, self._grid, strict=True):
            line = line * n + i
        row = int(self._lines.searchsorted(line))
        if row == len(self._lines) or self._lines[row] != line:
            return default
        return self._row(row)

    def _row(self, row: int):
        kind = self._kinds[row]
        if kind == _INLINE:
            return self._inline[row]
        if kind == _VIRTUAL:
            return None
        name = self._names[24 * row : 24 * row + 20]
        return FileRange(f"chunks/{name}", int(self._offsets[row]), int(self._lengths[row]))

    def values(self) -> Iterator:
        """Every reference (FileRange, bytes, None), in index order."""
        return (self._row(row) for row in range(len(self._lines)))


_NATIVE, _VIRTUAL, _INLINE = 0, 1, 2


def _spans(data: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
    """Positions of ``size`` bytes at each of ``at`` (rows), each span within ``data``."""
    if len(at) and (at.min() < 0 or at.max() + size > len(data)):
        raise LayoutError("an offset outside the file")
    return at[:, None] + np.arange(size)


def _gather(data: np.ndarray, at: np.ndarray, dtype: str, absent_zero: bool = False):
    """The little-endian numbers of ``dtype`` at each of ``at``, as int64 (``absent_zero``:
    0 where ``at`` is 0, an absent field's default)."""
    size = np.dtype(dtype).itemsize
    got = data[_spans(data, at, size)].view(dtype).reshape(len(at)).astype(np.int64)
    if dtype == "<u8" and (got < 0).any():
        raise LayoutError("an offset or length past 2**63")
    return np.where(at > 0, got, 0) if absent_zero else got


def _chunk_key(key: str) -> tuple[str, tuple[int, ...]] | None:
    """(node path, chunk index) of a chunk key (Zarr v3's default encoding, as Icechunk
    keeps them: ``path/c/0/1``, ``c/0`` at the root, ``path/c`` for a 0-d array)."""
    if key == "c" or key.endswith("/c"):
        return key[:-2], ()
    node, sep, index = key.rpartition("/c/")
    if not sep and key.startswith("c/"):  # the root array's
        node, sep, index = "", "c/", key[2:]
    parts = index.split("/")
    if not sep or not all(p.isdigit() for p in parts):
        return None
    return node, tuple(int(p) for p in parts)


def _range(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    """The bytes ``[start, end)`` asked of an object of ``size`` (a negative start: the
    last ``-start``), within it."""
    if start is None:
        return 0, size
    if start < 0:
        return max(0, size + start), size
    return min(start, size), size if end is None else max(min(end, size), min(start, size))


def answer(layout: ChunkLayout, key: str, start: int | None, end: int | None):
    """What ``layout`` says of a read of ``key``: its bytes, None (absent), a ``FileRange``
    of the repository's object to read (the range asked, within the chunk), or ``ASK``
    (Icechunk answers: a virtual chunk, a key this reader does not know)."""
    name = key.rsplit("/", 1)[-1]
    if name == "zarr.json":
        doc = layout.document(key[: -len(name)])
        if doc is None:
            return None
        lo, hi = _range(len(doc), start, end)
        return doc[lo:hi]
    if name in V2_DOCUMENTS:  # Icechunk holds Zarr v3 only: it answers "not found" to these
        return None
    parsed = _chunk_key(key)
    if parsed is None or parsed[0].strip("/") not in layout.nodes():
        return ASK
    found = layout.chunk(*parsed)
    if found is ABSENT:
        return None
    if found is None:
        return ASK
    if isinstance(found, bytes):
        lo, hi = _range(len(found), start, end)
        return found[lo:hi]
    if start is None:
        layout._remember(key, found)
    lo, hi = _range(found.length, start, end)
    return FileRange(found.key, found.offset + lo, hi - lo)
