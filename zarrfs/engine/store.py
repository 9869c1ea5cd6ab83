"""Key/value access to a Zarr store through fsspec, and nothing else.

A :class:`Store` is a filesystem plus a root. It knows three reads (whole objects, byte ranges,
listings) and turns every outcome into one of two things: a value (``None`` means the object is
absent, a narrow set of not-found errors) or a :class:`StoreError` chained to its cause. It never
issues a HEAD on the read path: whole objects are a plain GET, suffix ranges (a shard index at the
end) a ``Range: bytes=-N``.

Async filesystems (http, s3, gcs) get every request of a batch in flight at once through fsspec's
own ``cat``/``cat_ranges``; sync ones (local, zip, memory) are read by the caller, which the reader
spreads over the thread pool. Transient failures are retried a bounded number of times.
"""

from __future__ import annotations

import builtins
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from . import stats
from .errors import StoreError

log = logging.getLogger(__name__)

#: What a fetch returns per request: bytes, or None where the object does not exist.
Fetched = bytes | None

_RETRIES = 3
_RETRY_DELAY = 0.2
_DOWN_SECONDS = 5.0  # after a store proved unreachable, fail at once for this long


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


def _is_transient(exc: BaseException) -> bool:
    status = getattr(exc, "status", None) or getattr(exc, "code", None)
    if isinstance(status, int) and (status >= 500 or status == 429):
        return True
    name = type(exc).__name__
    return isinstance(exc, (TimeoutError, ConnectionError)) or name in (
        "ClientPayloadError", "ServerDisconnectedError", "ClientOSError", "ServerTimeoutError",
        "ClientConnectorError", "ContentLengthError", "TransferEncodingError",
    )


#: concurrent connections per HTTP client: a plane of small chunks is hundreds of requests,
#: and aiohttp's default of 100 would split them into several round trips
_HTTP_CONNECTIONS = 512


async def _http_client(**kwargs):
    """fsspec's ``get_client`` hook: an aiohttp session with a large connection pool."""
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=_HTTP_CONNECTIONS),
                                 **kwargs)


def _range_length(req: ByteRequest) -> int | None:
    if req.start is None:
        return None
    if req.start < 0:
        return -req.start if req.end is None else None
    return None if req.end is None else req.end - req.start


def _is_unreachable(exc: BaseException) -> bool:
    """The server cannot be reached at all (as opposed to one bad request)."""
    return isinstance(exc, ConnectionRefusedError) or type(exc).__name__ in (
        "ClientConnectorError", "ServerDisconnectedError", "ClientConnectionError",
        "ClientConnectorDNSError", "EndpointConnectionError")


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
        return {"config_kwargs": {"connect_timeout": t, "read_timeout": t,
                                  "retries": {"max_attempts": 2}}}
    return {}


@dataclass
class Store:
    """An fsspec filesystem rooted at ``root``; keys are "/"-separated paths below it."""

    fs: fsspec.AbstractFileSystem
    root: str
    url: str
    _down_until: float = field(default=0.0, repr=False)
    _down_reason: str = field(default="", repr=False)

    @classmethod
    def from_url(cls, url: str, **storage_options) -> Store:
        protocol = url.split("://", 1)[0] if "://" in url.split("::")[0] else "file"
        options = {**_default_options(protocol), **storage_options}
        try:
            fs, root = url_to_fs(url, **options)
        except (ImportError, ValueError) as exc:
            raise StoreError(f"cannot open store {url!r}: {exc}", path=url) from exc
        return cls(fs=fs, root=root.rstrip("/"), url=url.rstrip("/"))

    @property
    def is_async(self) -> bool:
        return bool(getattr(self.fs, "async_impl", False))

    def full_path(self, key: str) -> str:
        """The filesystem path of a key ("" is the root itself)."""
        if not key:
            return self.root
        return f"{self.root}/{key}" if self.root else key

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

    def fetch_each(self, requests: Sequence[ByteRequest]) -> list[Fetched | StoreError]:
        """Like :meth:`fetch`, but a failed request gives its StoreError in its place, so one
        unreadable object does not fail the others."""
        if not requests:
            return []
        if time.monotonic() < self._down_until:
            err = StoreError(f"{self.url} is unreachable ({self._down_reason}); not retrying "
                             f"for a few seconds", path=self.url, key=requests[0].key)
            return [err] * len(requests)
        results: list[Fetched | BaseException] = self._fetch_once(requests)
        for attempt in range(1, _RETRIES + 1):
            retry = [i for i, r in enumerate(results)
                     if isinstance(r, BaseException) and _is_transient(r)]
            if not retry:
                break
            log.info("retrying %d of %d requests (attempt %d)", len(retry), len(requests), attempt)
            time.sleep(_RETRY_DELAY * attempt)
            again = self._fetch_once([requests[i] for i in retry])
            for i, r in zip(retry, again, strict=True):
                results[i] = r
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures and len(failures) == len(results) and all(map(_is_unreachable, failures)):
            # a refused or dropped connection: every read would wait through the same retries
            self._down_until = time.monotonic() + _DOWN_SECONDS
            self._down_reason = _describe(failures[0])
        out: list[Fetched | StoreError] = []
        for req, r in zip(requests, results, strict=True):
            if isinstance(r, BaseException) and not isinstance(r, StoreError):
                err = StoreError(f"cannot read {req.key!r} from {self.url}: {_describe(r)}",
                                 path=self.url, key=req.key)
                err.__cause__ = r
                r = err
            out.append(r)
        return out

    def _fetch_once(self, requests: Sequence[ByteRequest]) -> list[Fetched | BaseException]:
        paths = [self.full_path(r.key) for r in requests]
        try:
            raw = self._cat_ranges(paths, [r.start for r in requests], [r.end for r in requests])
        except Exception as exc:  # noqa: BLE001 - the whole batch failed (e.g. connection refused)
            # never "absent" for a whole batch: that would read every chunk as the fill value
            raw = [exc if not self._is_absent(exc) else
                   StoreError(f"reading {len(paths)} objects from {self.url} failed: "
                              f"{_describe(exc)}", path=self.url)] * len(paths)
        out: list[Fetched | BaseException] = []
        fetched = 0
        for req, r in zip(requests, raw, strict=True):
            if isinstance(r, BaseException):
                out.append(None if self._is_absent(r) else r)
                continue
            data = bytes(r) if not isinstance(r, bytes) else r
            fetched += len(data)
            want = _range_length(req)
            if want is not None and len(data) > want:
                # a server may ignore Range and answer 200 with the whole object (RFC 9110,
                # 14.2): the asked bytes are then a slice of it, never its first bytes
                log.info("%s ignored a Range request for %s; using the whole object", self.url,
                         req.key)
                data = data[req.start:req.end] if req.start >= 0 else data[req.start:]
            out.append(data)
        stats.add(requests=len(requests), bytes_fetched=fetched)
        return out

    def _is_absent(self, exc: BaseException) -> bool:
        """The narrow set of errors that mean "no such object" (missing is a value, STYLE 6);
        a KeyError only from zip archives, whose members raise it."""
        if isinstance(exc, KeyError):
            return "zip" in _protocols(self.fs)
        if isinstance(exc, FileNotFoundError):
            return True
        status = getattr(exc, "status", None) or getattr(exc, "code", None)
        return status in (404, 410)  # s3fs/gcsfs already raise FileNotFoundError for NoSuchKey

    def _cat_ranges(self, paths, starts, ends) -> list:
        if self.is_async:  # cat_ranges, unlike cat, never expands glob characters in names
            return self.fs.cat_ranges(paths, starts, ends, on_error="return")
        read = _read_local if isinstance(self.fs, LocalFileSystem) else self.fs.cat_file
        out = []
        for p, s, e in zip(paths, starts, ends, strict=True):
            try:
                out.append(read(p, start=s, end=e))
            except Exception as exc:  # noqa: BLE001 - sorted out by the caller
                out.append(exc)
        return out

    # --------------------------------------------------------------- listings
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(child directory names, child object names) directly under ``prefix``."""
        path = self.full_path(prefix.strip("/"))
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return [], []
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"cannot list {prefix or '/'} in {self.url}: {_describe(exc)}",
                             path=self.url, key=prefix) from exc
        dirs, files = [], []
        base = path.rstrip("/")
        for e in entries:
            name = e["name"].rstrip("/")
            if name.startswith(base + "/"):
                name = name[len(base) + 1:]
            name = name.rsplit("/", 1)[-1]
            if not name or name == base.rsplit("/", 1)[-1] and e["type"] != "directory":
                continue
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
            raise StoreError(f"cannot list {prefix or '/'} in {self.url}: {_describe(exc)}",
                             path=self.url, key=prefix) from exc
        base = self.root.rstrip("/") + "/" if self.root else ""
        return {name[len(base):] if name.startswith(base) else name: int(info.get("size") or 0)
                for name, info in found.items()}


def _protocols(fs) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _read_local(path: str, start: int | None = None, end: int | None = None) -> bytes:
    """A local file or a range of it, without fsspec's per-call overhead (it adds up over
    hundreds of small chunks)."""
    with builtins.open(path, "rb") as f:
        if start is None:
            return f.read()
        if start < 0:
            f.seek(0, os.SEEK_END)
            start = max(0, f.tell() + start)
        f.seek(start)
        return f.read() if end is None else f.read(max(0, end - start))


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
