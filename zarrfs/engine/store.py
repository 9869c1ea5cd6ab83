"""Key/value access to a Zarr store through fsspec, and nothing else.

A :class:`Store` is a filesystem plus a root. It knows three reads (whole objects, byte ranges,
listings) and turns every outcome into one of two things: a value (``None`` means the object is
absent, a narrow set of not-found errors) or a :class:`StoreError` chained to its cause. It never
issues a HEAD on the read path: whole objects are a plain GET, suffix ranges (a shard index at the
end) a ``Range: bytes=-N``.

Async filesystems (http, s3, gcs) get every request of a batch in flight at once on fsspec's event
loop, and :meth:`Store.stream` hands results over as they land; sync ones (local, zip, memory) are
read by the caller, which the reader spreads over the thread pool. Each request that fails
transiently is retried on its own, a bounded number of times.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import queue
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import quote, unquote

import fsspec
from fsspec.archive import AbstractArchiveFileSystem
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from . import confine, gcpause, stats
from .errors import (
    AccessDeniedError,
    NodeNotFoundError,
    ReadCancelled,
    StoreError,
    StoreTimeoutError,
    ZarrfsError,
)

log = logging.getLogger(__name__)

#: What a fetch returns per request: bytes, or None where the object does not exist.
Fetched = bytes | None

_RETRIES = 3
_STALL_RETRIES = 1
_S3FS_TRIES = 2
_RETRY_DELAY = 0.2
_DOWN_SECONDS = 5.0  # after a store proved unreachable, fail at once for this long
_POLL_SECONDS = 0.05  # how often a waiting stream asks whether its reader gave up
_END = object()  # the last item of an async stream's queue


def _in_flight_limit() -> int:
    """Requests one stream keeps in flight at once: fsspec's own setting for many small
    requests (``nofiles_gather_batch_size``, 1280 by default)."""
    return int(fsspec.config.conf.get("nofiles_gather_batch_size", 1280))


def _timeout() -> float:
    """Seconds a request may take before it fails (a stalled server must not hang a read)."""
    try:
        return float(os.environ.get("ZARRFS_TIMEOUT", "30"))
    except ValueError:
        return 30.0


class ByteRequest(NamedTuple):
    """One read: a whole object (``start is None``), a range ``[start, end)``, or a suffix
    (``start < 0`` and ``end is None``: the last ``-start`` bytes)."""

    key: str
    start: int | None = None
    end: int | None = None


def _status(exc: BaseException):
    """The HTTP status an exception carries (aiohttp's ``status``, gcsfs's ``code``), if any."""
    return getattr(exc, "status", None) or getattr(exc, "code", None)


def _is_transient(exc: BaseException) -> bool:
    status = _status(exc)
    if isinstance(status, int) and (status >= 500 or status == 429):
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


#: concurrent connections per HTTP client: a plane of small chunks is hundreds of requests,
#: and aiohttp's default of 100 would split them into several round trips
_HTTP_CONNECTIONS = 512


async def _http_client(**kwargs):
    """fsspec's ``get_client`` hook: an aiohttp session with a large connection pool."""
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=_HTTP_CONNECTIONS), **kwargs)


def _retry_delay(req: ByteRequest, exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying a request whose attempt number ``attempt`` (from 0)
    failed with ``exc``; None when it is not retried (not transient, or out of attempts). A
    stall is retried once only: each attempt waits the whole timeout."""
    limit = _STALL_RETRIES if _is_stall(exc) else _RETRIES
    if attempt >= limit or not _is_transient(exc):
        return None
    log.info("retrying %s (attempt %d): %s", req.key, attempt + 1, _describe(exc))
    return _RETRY_DELAY * (attempt + 1)


def _range_length(req: ByteRequest) -> int | None:
    if req.start is None:
        return None
    if req.start < 0:
        return -req.start if req.end is None else None
    return None if req.end is None else req.end - req.start


def _is_unreachable(exc: BaseException) -> bool:
    """The server cannot be reached at all, or does not answer (as opposed to one bad
    request)."""
    return (
        isinstance(exc, ConnectionRefusedError)
        or _is_stall(exc)
        or type(exc).__name__
        in (
            "ClientConnectorError",
            "ServerDisconnectedError",
            "ClientConnectionError",
            "ClientConnectorDNSError",
            "EndpointConnectionError",
        )
    )


def _is_forbidden(exc: BaseException) -> bool:
    """The server refused the request: HTTP 403 (aiohttp, gcsfs), or s3fs's PermissionError
    for S3's AccessDenied."""
    return isinstance(exc, PermissionError) or _status(exc) == 403


def _is_stall(exc: BaseException) -> bool:
    """No answer within the timeout (aiohttp's, botocore's, fsspec's)."""
    return isinstance(exc, TimeoutError) or type(exc).__name__ in (
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "FSTimeoutError",
    )


def _default_options(protocol: str) -> dict:
    if protocol in ("http", "https"):
        try:
            import aiohttp
        except ImportError:  # pragma: no cover - aiohttp comes with the remote extra
            return {}
        t = _timeout()
        # sock_read bounds a stall; no total limit, so a slow but healthy download completes
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=t, sock_read=t)
        return {"client_kwargs": {"timeout": timeout}, "get_client": _http_client}
    if protocol in ("s3", "s3a"):
        t = _timeout()
        # one GET per object: with max_concurrency > 1, s3fs asks for every whole object's
        # size first (a HEAD, and a LIST when it is missing); botocore does not retry on its
        # own (s3fs and this module do)
        return {
            "max_concurrency": 1,
            "config_kwargs": {
                "connect_timeout": t,
                "read_timeout": t,
                "retries": {"max_attempts": 1},
            },
        }
    return {}


def _merged(defaults: dict, given: dict) -> dict:
    """``given`` over ``defaults``, nested dicts merged key by key (a user's
    ``client_kwargs.headers`` must not drop the default timeout)."""
    out = dict(defaults)
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = _merged(out[key], value)
        out[key] = value
    return out


@dataclass
class Store:
    """An fsspec filesystem rooted at ``root``; keys are "/"-separated paths below it."""

    fs: fsspec.AbstractFileSystem
    root: str
    url: str
    #: keys go into URLs percent-encoded (HTTP: a '#', '?' or '%' in a name is not syntax)
    quote_keys: bool = False
    #: None: follow symlinks anywhere; else (local stores) the root reads stay under
    confined_to: confine.Root | None = None
    _down_until: float = field(default=0.0, repr=False)
    _down_reason: str = field(default="", repr=False)

    @classmethod
    def from_url(cls, url: str, **storage_options) -> Store:
        protocol = url.split("://", 1)[0] if "://" in url.split("::")[0] else "file"
        options = _merged(_default_options(protocol), storage_options)
        follow_symlinks = confine.pop_follow_symlinks(options)
        try:
            fs, root = url_to_fs(url, **options)
            if protocol in ("s3", "s3a"):  # a class attribute of s3fs (5): once more is enough
                fs.retries = min(fs.retries, _S3FS_TRIES)
        except FileNotFoundError as exc:  # a zip:: chain over a missing archive
            raise NodeNotFoundError(f"no store at {url!r}: {exc}", path=url) from exc
        except Exception as exc:  # noqa: BLE001 - fsspec's and its backends' own errors
            # (a zip:: chain over a file that is not a zip raises zipfile.BadZipFile)
            raise StoreError(f"cannot open store {url!r}: {_describe(exc)}", path=url) from exc
        # the file system's root itself ("/", "file:///") keeps its slash: "" is the cwd
        trimmed = url.rstrip("/")
        root = root.rstrip("/") or root
        local = isinstance(fs, LocalFileSystem)
        return cls(
            fs=fs,
            root=root,
            url=url if not trimmed or trimmed.endswith(":") else trimmed,
            quote_keys=bool({"http", "https"} & set(_protocols(fs))),
            confined_to=confine.Root(root) if local and not follow_symlinks else None,
        )

    @property
    def is_async(self) -> bool:
        return bool(getattr(self.fs, "async_impl", False))

    def full_path(self, key: str) -> str:
        """The filesystem path of a key ("" is the root itself); StoreError for a key that
        could lead out of the root (``..``, empty names, NUL)."""
        if not key:
            return self.root
        reason = confine.bad_key_reason(key)
        if reason is not None:
            raise StoreError(
                f"refusing key {key!r} of {self.url}: {reason}", path=self.url, key=key
            )
        if self.quote_keys:
            key = quote(key, safe="/")
        return f"{self.root.rstrip('/')}/{key}" if self.root else key

    # ------------------------------------------------------------------ reads
    def get(self, key: str) -> Fetched:
        """One whole object, or None when absent."""
        return self.fetch([ByteRequest(key)])[0]

    def fetch(self, requests: Sequence[ByteRequest]) -> list[Fetched]:
        """Every request at once; absent objects come back as None, failures raise StoreError."""
        out = self.fetch_each(requests)
        for r in out:
            if isinstance(r, StoreError):
                raise r
        return out  # type: ignore[return-value]

    def fetch_each(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None = None
    ) -> list[Fetched | ZarrfsError]:
        """Like :meth:`fetch`, but a failed request gives its StoreError in its place, so one
        unreadable object does not fail the others. ``stop`` as in :meth:`stream`: requests
        it left unanswered give ReadCancelled (never None, which means absent)."""
        unanswered = object()
        out: list = [unanswered] * len(requests)
        for arrived in self.stream(requests, stop):
            for i, r in arrived:
                out[i] = r
        return [ReadCancelled(path=self.url) if r is unanswered else r for r in out]

    def stream(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None = None
    ) -> Iterator[list[tuple[int, Fetched | StoreError]]]:
        """Every request at once; yields ``(index, result)`` pairs as results arrive (async
        filesystems: each burst of responses as soon as it lands, so a caller can decode early
        arrivals while later ones are on the wire). Results are as in :meth:`fetch_each`.
        ``stop`` is polled while waiting: once it returns True, requests still in flight are
        cancelled and the stream ends (their results never come)."""
        if not requests:
            return
        if time.monotonic() < self._down_until:  # one error per request, naming its key
            yield [
                (
                    i,
                    StoreError(
                        f"{self.url} is unreachable ({self._down_reason}); not retrying for a "
                        f"few seconds",
                        path=self.url,
                        key=r.key,
                        store_url=self.url,
                    ),
                )
                for i, r in enumerate(requests)
            ]
            return
        arrivals = (
            self._arrive_async(requests, stop)
            if self.is_async
            else [list(enumerate(map(self._read_sync, requests)))]
        )
        unreachable, answered = [], 0
        try:
            for raw in arrivals:
                out = [(i, self._result(requests[i], r)) for i, r in raw]
                unreachable += [
                    r for _, r in raw if isinstance(r, BaseException) and _is_unreachable(r)
                ]
                answered += len(out)
                stats.add(
                    requests=len(out),
                    bytes_fetched=sum(len(r) for _, r in out if isinstance(r, bytes)),
                )
                yield out
        finally:  # a consumer that stops early stops the requests still in flight
            if isinstance(arrivals, Iterator):
                arrivals.close()
        if unreachable and len(unreachable) == answered == len(requests):
            # a refused or dropped connection, or no answer at all: every read would wait
            # through the same retries and timeouts
            self._down_until = time.monotonic() + _DOWN_SECONDS
            self._down_reason = _describe(unreachable[0])

    def _result(self, req: ByteRequest, raw) -> Fetched | StoreError:
        """What one request gives: the asked bytes, None where the object is absent, or a
        StoreError naming it."""
        if not isinstance(raw, BaseException):
            return self._answer(req, raw)
        if self._is_absent(raw):
            return None
        if isinstance(raw, StoreError):
            return raw
        err: StoreError
        if isinstance(raw, confine.OutsideRoot):
            err = StoreError(
                f"refusing {req.key!r} of {self.url}: {raw}", path=self.url, key=req.key
            )
        elif _is_forbidden(raw):
            err = AccessDeniedError(
                f"cannot read {req.key!r} from {self.url}: access denied (403 Forbidden; a "
                f"store that lets you read objects but not list them also answers so for "
                f"objects that do not exist)",
                path=self.url,
                key=req.key,
            )
        else:
            kind = StoreTimeoutError if _is_stall(raw) else StoreError
            err = kind(
                f"cannot read {req.key!r} from {self.url}: {_describe(raw)}",
                path=self.url,
                key=req.key,
            )
        err.__cause__ = raw
        return err

    def _answer(self, req: ByteRequest, data) -> bytes:
        """The asked bytes of a response body."""
        data = bytes(data) if not isinstance(data, bytes) else data
        want = _range_length(req)
        if want is not None and len(data) > want:
            # a server may ignore Range and answer 200 with the whole object (RFC 9110,
            # 14.2): the asked bytes are then a slice of it, never its first bytes
            log.info("%s ignored a Range request for %s; using the whole object", self.url, req.key)
            data = data[req.start : req.end] if req.start >= 0 else data[req.start :]
        return data

    def _read_sync(self, req: ByteRequest):
        """One object or range from a sync filesystem, retried while it fails transiently:
        its bytes, or the exception of the last attempt."""
        local = isinstance(self.fs, LocalFileSystem)
        try:
            path = self.full_path(req.key)
        except StoreError as exc:
            return exc
        for attempt in itertools.count():
            try:
                if local and self.confined_to is not None:
                    fd = confine.open_below(self.confined_to, req.key)
                    return confine.read_local(path, req.start, req.end, fd)
                if local:
                    return confine.read_local(path, req.start, req.end)
                return self.fs.cat_file(path, start=req.start, end=req.end)
            except Exception as exc:  # noqa: BLE001 - sorted out by stream()
                delay = _retry_delay(req, exc, attempt)
                if delay is None:
                    return exc
                time.sleep(delay)

    def _arrive_async(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None
    ) -> Iterator[list[tuple[int, object]]]:
        """Raw results (bytes or the exception of the last attempt) of every request, all in
        flight at once on fsspec's event loop, each retried on its own while it fails
        transiently; yielded in bursts as they land."""
        arrived: queue.SimpleQueue = queue.SimpleQueue()
        fs = self.fs

        async def one(i: int, req: ByteRequest, gate: asyncio.Semaphore) -> None:
            try:
                path = self.full_path(req.key)
            except StoreError as exc:
                arrived.put((i, exc))
                return
            for attempt in itertools.count():
                try:
                    async with gate:
                        data = await fs._cat_file(path, start=req.start, end=req.end)
                except Exception as exc:  # noqa: BLE001 - sorted out by stream()
                    delay = _retry_delay(req, exc, attempt)
                    if delay is not None:
                        await asyncio.sleep(delay)
                        continue
                    arrived.put((i, exc))
                else:
                    arrived.put((i, data))
                return

        async def every() -> None:
            try:
                gate = asyncio.Semaphore(_in_flight_limit())
                gcpause.hold()  # released once every request had its first turn (sent)
                try:
                    tasks = [asyncio.ensure_future(one(i, r, gate)) for i, r in enumerate(requests)]
                finally:
                    asyncio.get_running_loop().call_soon(gcpause.release)
                await asyncio.gather(*tasks)
            finally:
                arrived.put(_END)

        left = set(range(len(requests)))
        try:
            loop = fs.loop
            future = asyncio.run_coroutine_threadsafe(every(), loop)
        except Exception as exc:  # noqa: BLE001 - e.g. a filesystem used across fork()
            yield [(i, exc) for i in sorted(left)]
            return
        try:
            while left:
                try:
                    item = arrived.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if stop is not None and stop():
                        return
                    if not loop.is_running():  # its thread died: nothing more will come
                        break
                    continue
                burst = []
                while item is not _END:
                    burst.append(item)
                    left.discard(item[0])
                    try:
                        item = arrived.get_nowait()
                    except queue.Empty:
                        break
                if burst:
                    yield burst
                if item is _END:
                    break
                if stop is not None and stop():
                    return
        finally:
            future.cancel()
        if left:  # the loop gave up on the batch: never report those objects as absent
            exc = future.exception() if future.done() and not future.cancelled() else None
            yield [
                (
                    i,
                    StoreError(
                        f"cannot read {requests[i].key!r} from {self.url}: "
                        f"{_describe(exc) if exc else 'the request was dropped'}",
                        path=self.url,
                        key=requests[i].key,
                    ),
                )
                for i in sorted(left)
            ]

    def _is_absent(self, exc: BaseException) -> bool:
        """The narrow set of errors that mean "no such object" (missing is a value, STYLE 6);
        a KeyError only from zip archives, whose members raise it."""
        if isinstance(exc, KeyError):
            return "zip" in _protocols(self.fs)
        if isinstance(exc, FileNotFoundError):
            return True
        return _status(exc) in (
            404,
            410,
        )  # s3fs/gcsfs already raise FileNotFoundError for NoSuchKey

    # --------------------------------------------------------------- listings
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(child directory names, child object names) directly under ``prefix``."""
        path = self.full_path(prefix.strip("/"))
        try:
            if self.confined_to is not None:
                confine.check_listed(path, self.confined_to)
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return [], []
        except Exception as exc:  # noqa: BLE001
            if _is_forbidden(exc):
                raise AccessDeniedError(
                    f"cannot list {prefix or '/'} in {self.url}: access denied (403 Forbidden);"
                    f" open its nodes by their paths instead",
                    path=self.url,
                    key=prefix,
                ) from exc
            raise StoreError(
                f"cannot list {prefix or '/'} in {self.url}: {_describe(exc)}",
                path=self.url,
                key=prefix,
            ) from exc
        dirs, files = [], []
        base = path.rstrip("/")
        for e in entries:
            name = e["name"].rstrip("/")
            if name.startswith(base + "/"):
                name = name[len(base) + 1 :]
            name = name.rsplit("/", 1)[-1]
            if not name or name == base.rsplit("/", 1)[-1] and e["type"] != "directory":
                continue
            if self.quote_keys:  # an index page links to names percent-encoded
                name = unquote(name)
            (dirs if e["type"] == "directory" else files).append(name)
        return sorted(set(dirs)), sorted(set(files))

    @property
    def lists_sizes(self) -> bool:
        """Whether a listing tells object sizes cheaply. A web server's HTML index does not
        (and walking it costs a round trip per directory), so HTTP stores say no."""
        return not {"http", "https"} & set(_protocols(self.fs))

    def list_prefix_sizes(self, prefix: str) -> dict[str, int]:
        """Every object below ``prefix`` with its size (for stored-size summaries)."""
        path = self.full_path(prefix.strip("/"))
        try:
            found = self.fs.find(path, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:  # noqa: BLE001
            raise StoreError(
                f"cannot list {prefix or '/'} in {self.url}: {_describe(exc)}",
                path=self.url,
                key=prefix,
            ) from exc
        base = self.root.rstrip("/") + "/" if self.root else ""
        return {
            name[len(base) :] if name.startswith(base) else name: int(info.get("size") or 0)
            for name, info in found.items()
        }


def _protocols(fs) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def url_below(url: str, path: str) -> str:
    """The URL of ``path`` under the store at ``url``: a local path keeps its leading ``/``; in
    an fsspec chain the path goes into the archive link it is inside (``zip::a.zip`` ->
    ``zip://g::a.zip``), and past wrappers such as ``simplecache::`` to the link they wrap."""
    path = path.strip("/")
    if not path:
        return url
    if "::" in url:
        head, rest = url.split("::", 1)
        protocol, _, inner = head.partition("://")
        if not _is_archive(protocol):
            return f"{head}::{url_below(rest, path)}"
        inner = inner.strip("/")
        return f"{protocol}://{inner + '/' if inner else ''}{path}::{rest}"
    return f"{url.rstrip('/')}/{path}"


def _is_archive(protocol: str) -> bool:
    try:
        kind = fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError):
        return False
    return issubclass(kind, AbstractArchiveFileSystem)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
