"""Every exception the engine raises.

One base class, :class:`ZarrfsError`, so a front end can catch everything the engine means to
raise in one place (the mount turns these into errnos, the viewer into messages, the CLI into one
line on stderr). Each error carries structured fields (``path``, ``key``, ``codec`` ...) so that a
front end never has to parse a message, and a message that says what went wrong and where.

Context fields: ``store_url`` (the store's URL), ``node_path`` (the node's path inside the store),
``document`` (a metadata document's name), ``key`` (the store key). Each is set where the error
is built, by the layer that knows it; an error is never edited afterwards, and a layer that adds
context raises a new error ``from`` the one it caught.
"""

from __future__ import annotations


class ZarrfsError(Exception):
    """Base of every error the engine raises on purpose. Subclasses add their own fields
    (``field``, ``codec`` ...) and pass the context fields through as keywords."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        key: str | None = None,
        store_url: str | None = None,
        node_path: str | None = None,
        document: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.path = path
        self.key = key
        self.store_url = store_url
        self.node_path = node_path
        self.document = document

    def at(self, where: str) -> ZarrfsError:
        """A new error like this one, about ``where`` (the document it was found in), chained
        to this one: its message starts with ``where`` unless it names it already. An error
        kept with a node (a codec that cannot be built, a document that cannot be used) is
        raised as a fresh instance by every read (``raise kept.at(where) from kept``), so that
        no two reads share one and none is edited once raised."""
        message = self.message if where in self.message else f"{where}: {self.message}"
        return self.renewed(message, path=self.path or where)

    def renewed(self, message: str, **context: str | None) -> ZarrfsError:
        """A new error like this one, saying ``message`` (and the ``context`` fields given),
        chained to this one: what to raise instead of editing an error once raised."""
        fresh = type(self).__new__(type(self), message)
        fresh.__dict__.update({**self.__dict__, "message": message, **context})
        fresh.__cause__ = self
        return fresh


class NodeNotFoundError(ZarrfsError, FileNotFoundError):
    """No group or array at this path (also a ``FileNotFoundError``)."""


class MetadataError(ZarrfsError):
    """A metadata document is malformed: bad JSON, a missing or invalid field."""

    def __init__(self, message: str, *, field: str | None = None, **context: str | None):
        super().__init__(message, **context)
        self.field = field


class UnsupportedError(ZarrfsError):
    """Valid metadata asks for a feature zarrfs does not implement (or refuses, like pickle)."""


class UnknownCodecError(UnsupportedError):
    """A codec name no registered codec answers to."""

    def __init__(self, message: str, *, codec: str, **context: str | None):
        super().__init__(message, **context)
        self.codec = codec


class UnknownDataTypeError(UnsupportedError):
    """A data type zarrfs cannot map to a NumPy dtype."""

    def __init__(self, message: str, *, data_type: object, **context: str | None):
        super().__init__(message, **context)
        self.data_type = data_type


class ChunkDecodeError(ZarrfsError):
    """A stored chunk could not be decoded, or decoded to the wrong size."""

    def __init__(self, message: str, *, codec: str | None = None, **context: str | None):
        super().__init__(message, **context)
        self.codec = codec


class ChecksumError(ChunkDecodeError):
    """A checksum codec found that the stored bytes are not what was written."""


class StoreError(ZarrfsError):
    """The storage backend failed (network, permissions, I/O) after bounded retries."""


class StoreTimeoutError(StoreError):
    """A request got no answer within ``ZARRFS_TIMEOUT``, tried again, and again none (a
    stalled server). The chunk table remembers it for a moment (``cache``)."""


class AccessDeniedError(StoreError):
    """The store refused to serve an object (HTTP 403, S3 ``AccessDenied``). A bucket that
    grants reading objects but not listing them answers so for objects that do not exist, too,
    so this may mean "absent" as well as "forbidden"; only the hierarchy, which knows when the
    difference cannot matter, ever treats it as absent."""


class ReadCancelled(ZarrfsError):
    """A read was cancelled before it finished."""

    def __init__(self, message: str = "read cancelled", **context: str | None):
        super().__init__(message, **context)


class SelectionError(ZarrfsError, IndexError):
    """A selection that does not fit the array (out of range, too many indices, bad type)."""


class ReadTooLargeError(ZarrfsError):
    """A read whose result could not be allocated (more bytes than memory, or than NumPy can
    address); ``nbytes`` is what it asked for."""

    def __init__(self, message: str, *, nbytes: int, **context: str | None):
        super().__init__(message, **context)
        self.nbytes = nbytes
