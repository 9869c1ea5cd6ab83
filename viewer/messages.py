"""The one place where exceptions become text a user reads (STYLE rule 8).

Every error the viewer shows, whether from opening a store, listing a group or decoding a chunk,
goes through :func:`describe`, so wording stays consistent and no widget formats an exception
itself. The engine's errors carry structured fields (``path``, ``key``, ``codec``), which are used
instead of parsing messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import zarrfs.engine as engine

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UserMessage:
    """What to show: a short title, one or two sentences, and the technical detail on demand."""

    title: str
    text: str
    detail: str = ""
    severity: str = "error"  # "error" | "warning" | "info"

    def one_line(self) -> str:
        return f"{self.title}: {self.text}"


def _where(
    exc: BaseException, node: str | None, chunk: tuple[int, ...] | None, url: str | None = None
) -> str:
    """Where it happened: a store's URL as given, else a node's path inside the store; what
    the caller does not say, the error's own fields (``node_path`` below the store's root, else
    ``store_url`` or ``path``: a URL or a file, never shown as a node)."""
    parts = []
    if node is None and not url:
        node = getattr(exc, "node_path", None) or None
        if node is None:
            url = getattr(exc, "store_url", None) or getattr(exc, "path", None)
    if url:
        parts.append(f"'{url}'")
    elif node is not None:
        parts.append(f"node '/{node.strip('/')}'")
    if chunk is not None:
        parts.append("chunk (" + ", ".join(str(c) for c in chunk) + ")")
    key = getattr(exc, "key", None)
    if key:
        parts.append(f"key '{key}'")
    return " ".join(parts)


def _codec(exc, where):
    return (
        "Unsupported codec",
        f"{where} uses codec '{exc.codec}', which zarrfs cannot decode. "
        "Install the codec's numcodecs plugin or convert the data.",
    )


def _data_type(exc, where):
    return (
        "Unsupported data type",
        f"{where} has data type {exc.data_type!r}, which zarrfs cannot represent.",
    )


def _unsupported(exc, where):
    return "Unsupported feature", f"{where}: {exc.message}"


def _checksum(exc, where):
    return (
        "Corrupt chunk",
        f"{where} failed its checksum: the stored bytes are not what was written. "
        "The rest of the array is shown.",
    )


def _decode(exc, where):
    codec = getattr(exc, "codec", None)
    via = f" by codec '{codec}'" if codec else ""
    return (
        "Corrupt chunk",
        f"{where} could not be decoded{via}: {exc.message}. The rest of the array is shown.",
    )


def _metadata(exc, where):
    field = getattr(exc, "field", None)
    extra = f" (field '{field}')" if field else ""
    return "Invalid metadata", f"{where}{extra}: {exc.message}"


def _not_found(exc, where):
    return "Not found", f"Nothing at {where or 'that location'}: {exc}"


def _store(exc, where):
    return (
        "Storage error",
        f"Reading {where} failed: {getattr(exc, 'message', exc)}. "
        "Check the network connection, the URL and the credentials.",
    )


def _selection(exc, where):
    return "Invalid selection", f"{where}: {exc}"


def _permission(exc, where):
    return "Permission denied", f"Reading {where} was refused: {exc}. Check the credentials."


def _network(exc, where):
    return ("Network error", f"Reading {where} failed: {exc}. Is the server reachable?")


def _memory(exc, where):
    return (
        "Out of memory",
        f"Reading {where} needed more memory than is available. Lower the cache size or zoom in.",
    )


def _generic(exc, where):
    return (
        "Unexpected error",
        f"{where}: {type(exc).__name__}: {exc}" if where else f"{type(exc).__name__}: {exc}",
    )


# Most specific first: the first matching class wins.
_TABLE: list[tuple[type, Callable]] = [
    (engine.UnknownCodecError, _codec),
    (engine.UnknownDataTypeError, _data_type),
    (engine.UnsupportedError, _unsupported),
    (engine.ChecksumError, _checksum),
    (engine.ChunkDecodeError, _decode),
    (engine.MetadataError, _metadata),
    (engine.NodeNotFoundError, _not_found),
    (engine.StoreError, _store),
    (engine.SelectionError, _selection),
    (PermissionError, _permission),
    (FileNotFoundError, _not_found),
    (ConnectionError, _network),
    (TimeoutError, _network),
    (OSError, _network),
    (MemoryError, _memory),
]


def is_cancellation(exc: BaseException) -> bool:
    """A cancelled read is the viewer's own doing and is never shown."""
    import concurrent.futures

    return isinstance(exc, engine.ReadCancelled | concurrent.futures.CancelledError)


def describe(
    exc: BaseException,
    *,
    node: str | None = None,
    chunk: tuple[int, ...] | None = None,
    url: str | None = None,
) -> UserMessage:
    """Turn ``exc`` (raised while working on ``node``/``chunk``, or opening the store at
    ``url``) into a :class:`UserMessage`."""
    where = _where(exc, node, chunk, url)
    for kind, make in _TABLE:
        if isinstance(exc, kind):
            title, text = make(exc, where)
            break
    else:
        title, text = _generic(exc, where)
    chain = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(chain) < 4:
        chain.append(f"caused by {type(cause).__name__}: {cause}")
        cause = cause.__cause__ or cause.__context__
    detail = "\n".join([f"{type(exc).__name__}: {exc}", *chain])
    return UserMessage(title=title, text=text, detail=detail)
