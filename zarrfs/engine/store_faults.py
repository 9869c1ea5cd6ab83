"""What a transport's failure means: transient (retried), a stall, the server unreachable,
access refused; and how long to wait before the next attempt.

fsspec's backends raise their own exceptions (aiohttp's, botocore's, s3fs's, gcsfs's): they are
told apart here by class name and HTTP status, so that nothing else in the engine knows them.
obstore's (one class for most failures, the cause in the text) become the builtin exceptions
they mean first (:func:`plain`).
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

RETRIES = 3
STALL_RETRIES = 1
RETRY_DELAY = 0.2


def status(exc: BaseException):
    """The HTTP status an exception carries (aiohttp's ``status``, gcsfs's ``code``), if any."""
    return getattr(exc, "status", None) or getattr(exc, "code", None)


def is_transient(exc: BaseException) -> bool:
    code = status(exc)
    if isinstance(code, int) and (code >= 500 or code == 429):
        return True
    name = type(exc).__name__
    return isinstance(exc, (TimeoutError, ConnectionError)) or name in (
        "ClientPayloadError",
        "ServerDisconnectedError",
        "ClientOSError",
        "ServerTimeoutError",
        "ClientConnectorError",
        "ContentLengthError",
        "TransferEncodingError",
    )


def retry_delay(key: str, exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying a request (for ``key``) whose attempt number ``attempt``
    (from 0) failed with ``exc``; None when it is not retried (not transient, or out of
    attempts). A stall is retried once only: each attempt waits the whole timeout."""
    if isinstance(exc, RangeIgnored):  # asked again at once, whole (store_obstore)
        return 0.0 if attempt == 0 else None
    limit = STALL_RETRIES if is_stall(exc) else RETRIES
    if attempt >= limit or not is_transient(exc):
        return None
    log.info("retrying %s (attempt %d): %s", key, attempt + 1, describe(exc))
    return RETRY_DELAY * (attempt + 1)


def is_unreachable(exc: BaseException) -> bool:
    """The server cannot be reached at all, or does not answer (as opposed to one bad
    request)."""
    return (
        isinstance(exc, (ConnectionRefusedError, ConnectionAbortedError))
        or is_stall(exc)
        or type(exc).__name__
        in (
            "ClientConnectorError",
            "ServerDisconnectedError",
            "ClientConnectionError",
            "ClientConnectorDNSError",
            "EndpointConnectionError",
        )
    )


def is_forbidden(exc: BaseException) -> bool:
    """The server refused the request: HTTP 403 (aiohttp, gcsfs), or s3fs's PermissionError
    for S3's AccessDenied."""
    return isinstance(exc, PermissionError) or status(exc) == 403


def is_stall(exc: BaseException) -> bool:
    """No answer within the timeout (aiohttp's, botocore's, fsspec's)."""
    return isinstance(exc, TimeoutError) or type(exc).__name__ in (
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "FSTimeoutError",
    )


def is_absent(exc: BaseException, protocols: tuple[str, ...]) -> bool:
    """The narrow set of errors that mean "no such object" (missing is a value, STYLE 6);
    a KeyError only from zip archives, whose members raise it. s3fs and gcsfs raise
    FileNotFoundError for NoSuchKey; a web server answers 404 or 410."""
    if isinstance(exc, KeyError):
        return "zip" in protocols
    return isinstance(exc, FileNotFoundError) or status(exc) in (404, 410)


def describe(exc: BaseException) -> str:
    """An exception as text naming its class once."""
    # obstore's text ends in a dump of its Rust error ("Debug source: ..."): the line says it
    text = str(exc).split("\n\nDebug source", 1)[0].strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


# ---------------------------------------------------------------------------------- obstore


class TransportStatusError(OSError):
    """The server answered with an HTTP error status (obstore's text says which)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class TransportStall(TimeoutError):
    """No data within ``ZARRFS_TIMEOUT`` (obstore's read or connect timeout)."""


class TransportRefused(ConnectionRefusedError):
    """The connection could not be made (refused, no route, DNS)."""


class TransportDropped(ConnectionAbortedError):
    """The connection was dropped before an answer came."""


class RangeIgnored(OSError):
    """The server answered a Range request with the whole object (obstore refuses that)."""


class TransportBodyCut(ConnectionResetError):
    """The answer's body ended before its length (a truncated response)."""


_STATUS = re.compile(r"status code: (\d{3})|status: (\d{3})")
_KIND = re.compile(r"HttpError \{\s*kind: (\w+)")
_KINDS: dict[str, type[OSError]] = {
    "Timeout": TransportStall,
    "Connect": TransportRefused,
    "Request": TransportDropped,
    "Interrupted": TransportBodyCut,
}


def plain(exc: BaseException) -> BaseException:
    """An obstore exception as the builtin exception it means (the others as they are):
    FileNotFoundError and PermissionError stay, a status becomes :class:`TransportStatusError`,
    a timeout, a refused or dropped connection, a cut body their ``Transport*`` class. The
    message is obstore's first line, the original its ``__cause__``."""
    if not type(exc).__module__.startswith("obstore") or isinstance(exc, FileNotFoundError):
        return exc
    text = str(exc)
    first = text.split("\n", 1)[0].strip()
    name = type(exc).__name__
    out: BaseException
    if name == "NotSupportedError" and "Range request not supported" in text:
        out = RangeIgnored(first)
    elif name == "PermissionDeniedError":
        out = PermissionError(first)
    elif name == "UnauthenticatedError":
        out = TransportStatusError(first, 401)
    elif (found := _STATUS.search(text)) is not None:
        out = TransportStatusError(first, int(found.group(1) or found.group(2)))
    elif (kind := _KIND.search(text)) is not None and kind.group(1) in _KINDS:
        out = _KINDS[kind.group(1)](first)
    else:
        return exc
    out.__cause__ = exc
    return out
