"""Key/value access to a Zarr store through obstore or fsspec, and nothing else.

A :class:`Store` is a transport plus a root: obstore (``store_obstore``) for S3, GCS, Azure
and HTTP(S); fsspec for every other protocol and chain, for a plain web server's listings, and
for every store with ``-O transport=fsspec`` / ``ZARRFS_TRANSPORT=fsspec``. It knows three
reads (whole objects, byte ranges, listings) and turns every outcome into one of two things: a
value (``None`` means the object is absent, a narrow set of not-found errors) or a
:class:`StoreError` chained to its cause. It never issues a HEAD on the read path (but for a
shard index on Azure, which takes no suffix range): whole objects are one GET, suffix ranges (a
shard index at the end) a ``Range: bytes=-N``.

Remote stores (obstore, or fsspec's async filesystems) get every request of a batch in flight
at once on fsspec's event loop (``store_async``), and :meth:`Store.stream` hands results over
as they land; sync ones (local, zip, memory) are read by the caller, which the reader spreads
over the thread pool. Each request that fails transiently is retried on its own, a bounded
number of times.

Around it: ``store_request`` (what a read asks), ``store_faults`` (what a failure means, retries),
``transport_defaults`` (timeouts and pools), ``store_urls`` (URLs below a store), ``confine``
(local stores never leave their root).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from zarrfs.storage_options import UsageError

from . import confine, stats, store_async, store_obstore
from .errors import (
    AccessDeniedError,
    NodeNotFoundError,
    ReadCancelled,
    StoreError,
    StoreTimeoutError,
    ZarrfsError,
)
from .store_faults import (
    describe,
    is_absent,
    is_forbidden,
    is_stall,
    is_unreachable,
    retry_delay,
    status,
)
from .store_obstore import Objects
from .store_request import Body, ByteRequest, Fetched, asked_bytes
from .store_urls import protocols, url_below, url_protocol
from .transport_defaults import S3FS_TRIES, default_options, merged

log = logging.getLogger(__name__)

_tuple = tuple.__new__
_DOWN_SECONDS = 5.0  # after a store proved unreachable, fail at once for this long


@dataclass
class Store:
    """An fsspec filesystem rooted at ``root``, or obstore's store of the URL (``objects``,
    the HTTP ones with fsspec's for listings); keys are "/"-separated paths below it."""

    fs: fsspec.AbstractFileSystem | None
    root: str
    url: str
    #: obstore's store (its keys are this store's keys), None where fsspec reads
    objects: Objects | None = None
    #: keys go into URLs percent-encoded (HTTP: a '#', '?' or '%' in a name is not syntax)
    quote_keys: bool = False
    #: None: follow symlinks anywhere; else (local stores) the root reads stay under
    confined_to: confine.Root | None = None
    _down_until: float = field(default=0.0, repr=False)
    _down_reason: str = field(default="", repr=False)

    @classmethod
    def from_url(cls, url: str, *, follow_symlinks: bool = False, **storage_options) -> Store:
        """The store at ``url``; ``storage_options`` go to fsspec. ``follow_symlinks``: a local
        store reads symlinks wherever they lead (:mod:`.confine`)."""
        if not isinstance(follow_symlinks, bool):  # "false" would be true
            raise ValueError(f"follow_symlinks must be true or false, got {follow_symlinks!r}")
        protocol = url_protocol(url)
        given = dict(storage_options)
        kind = store_obstore.service(url)
        if store_obstore.transport(given) == "obstore" and kind is not None:
            if store_obstore.available():
                return cls._over_obstore(url, kind, given)
            if kind == "azure":
                raise StoreError(
                    f"cannot open {url!r}: Azure stores need obstore "
                    "(pip install 'zarrfs[remote]')",
                    path=url,
                )
        options = merged(default_options(protocol), given)
        try:
            fs, root = url_to_fs(url, **options)
            if protocol in ("s3", "s3a"):  # a class attribute of s3fs (5): once more is enough
                fs.retries = min(fs.retries, S3FS_TRIES)
        except FileNotFoundError as exc:  # a zip:: chain over a missing archive
            raise NodeNotFoundError(f"no store at {url!r}: {exc}", path=url) from exc
        except Exception as exc:  # noqa: BLE001 - fsspec's and its backends' own errors
            # (a zip:: chain over a file that is not a zip raises zipfile.BadZipFile)
            raise StoreError(f"cannot open store {url!r}: {describe(exc)}", path=url) from exc
        # the file system's root itself ("/", "file:///") keeps its slash: "" is the cwd
        trimmed = url.rstrip("/")
        root = root.rstrip("/") or root
        local = isinstance(fs, LocalFileSystem)
        return cls(
            fs=fs,
            root=root,
            url=url if not trimmed or trimmed.endswith(":") else trimmed,
            quote_keys=bool({"http", "https"} & set(protocols(fs))),
            confined_to=confine.Root(root) if local and not follow_symlinks else None,
        )

    @classmethod
    def _over_obstore(cls, url: str, kind: str, options: dict) -> Store:
        """The store at ``url`` read through obstore; a plain web server also gets fsspec's
        filesystem, for its HTML listings."""
        trimmed = url.rstrip("/")
        try:
            objects = Objects.open(url, kind, options)
            fs, root = (None, "")
            if kind == "http":  # its timeouts, and the headers the user gave
                headers = {k: v for k, v in options.items() if k in ("headers", "client_kwargs")}
                fs, root = url_to_fs(url, **merged(default_options(url_protocol(url)), headers))
        except UsageError:  # an option obstore cannot honour: the user's to mend
            raise
        except Exception as exc:  # noqa: BLE001 - obstore's and fsspec's own errors
            raise StoreError(f"cannot open store {url!r}: {describe(exc)}", path=url) from exc
        return cls(
            fs=fs, root=root.rstrip("/"), url=trimmed, quote_keys=kind == "http", objects=objects
        )

    def _error(self, message: str, key: str, kind: type[StoreError] = StoreError) -> StoreError:
        """A store error about ``key``, with this store's context."""
        return kind(message, path=self.url, store_url=self.url, key=key)

    @property
    def is_async(self) -> bool:
        return self.objects is not None or bool(getattr(self.fs, "async_impl", False))

    @property
    def protocols(self) -> tuple[str, ...]:
        if self.objects is not None:
            return (url_protocol(self.url),)
        return protocols(self.fs)

    def object_key(self, key: str) -> str:
        """A key as obstore's store of this URL takes it; StoreError as in :meth:`full_path`."""
        reason = confine.bad_key_reason(key)
        if reason is not None:
            raise self._error(f"refusing key {key!r} of {self.url}: {reason}", key)
        return key

    def full_path(self, key: str) -> str:
        """The filesystem path of a key ("" is the root itself); StoreError for a key that
        could lead out of the root (``..``, empty names, NUL)."""
        if not key:
            return self.root
        reason = confine.bad_key_reason(key)
        if reason is not None:
            raise self._error(f"refusing key {key!r} of {self.url}: {reason}", key)
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
                out[i] = bytes(r) if isinstance(r, memoryview) else r
        return [
            ReadCancelled(path=self.url, store_url=self.url) if r is unanswered else r for r in out
        ]

    def stream(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None = None
    ) -> Iterator[list[tuple[int, Body | StoreError]]]:
        """Every request at once; yields ``(index, result)`` pairs as results arrive (async
        filesystems: each burst of responses as soon as it lands, so a caller can decode early
        arrivals while later ones are on the wire). Results are as in :meth:`fetch_each`,
        but for bodies, which are handed over as the transport gave them, uncopied (bytes, or
        a read-only memoryview of obstore's buffer).
        ``stop`` is polled while waiting: once it returns True, requests still in flight are
        cancelled and the stream ends (their results never come)."""
        if not requests:
            return
        if time.monotonic() < self._down_until:  # one error per request, naming its key
            yield [(i, self._down_error(r.key)) for i, r in enumerate(requests)]
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
                    r for _, r in raw if isinstance(r, BaseException) and is_unreachable(r)
                ]
                answered += len(out)
                stats.add(
                    requests=len(out),
                    bytes_fetched=sum(len(r) for _, r in out if isinstance(r, bytes | memoryview)),
                )
                yield out
        finally:  # a consumer that stops early stops the requests still in flight
            if isinstance(arrivals, Iterator):
                arrivals.close()
        if unreachable and len(unreachable) == answered == len(requests):
            self._mark_down(unreachable[0])

    def _down_error(self, key: str) -> StoreError:
        return self._error(
            f"{self.url} is unreachable ({self._down_reason}); not retrying for a few seconds",
            key,
        )

    def _mark_down(self, cause: BaseException) -> None:
        """A refused or dropped connection, or no answer at all, to every request of a read:
        every read would wait through the same retries and timeouts, so for a few seconds
        they fail at once."""
        self._down_until = time.monotonic() + _DOWN_SECONDS
        self._down_reason = describe(cause)

    def read_each(self, keys: Sequence[str], expect: int = 0) -> Iterator[Fetched | StoreError]:
        """Whole objects of a sync store, each read only when the caller takes it (then
        decoded while its bytes are still in the CPU's cache): bytes, None where absent, or
        the StoreError of that object alone. ``expect``: their likely size at most."""
        if time.monotonic() < self._down_until:  # as stream(): at once while it is down
            yield from map(self._down_error, keys)
            return
        requests = nbytes = 0
        unreachable: list[BaseException] = []
        read, result = self._read_sync, self._result
        try:
            for key in keys:
                req = _tuple(ByteRequest, (key, None, None))  # (no Python call: per chunk)
                requests += 1
                answer = read(req, expect)
                if type(answer) is bytes:  # a whole object: nothing to check
                    nbytes += len(answer)
                else:
                    if isinstance(answer, BaseException) and is_unreachable(answer):
                        unreachable.append(answer)
                    answer = result(req, answer)
                yield answer
        finally:  # counted once, not per object (a lock each)
            stats.add(requests=requests, bytes_fetched=nbytes)
        if unreachable and len(unreachable) == requests == len(keys):  # as stream()
            self._mark_down(unreachable[0])

    def whole_reader(self, expect: int) -> tuple[bytes, Callable[[bytes], bytes]] | None:
        """For a local store (read by the caller's thread): what goes before a key's bytes to
        name its file, and a function reading a whole file so, in three system calls and no
        Python between them (:func:`confine.whole_file_reader`, under the store's root when
        confined). A key it fails on (absent, longer than ``expect``, refused) is read again
        through :meth:`read_each`, which says why. None for other stores, or while this one
        is down. The caller counts the requests (``stats``) and keeps keys inside the store."""
        if self.objects is not None or not isinstance(self.fs, LocalFileSystem):
            return None
        if time.monotonic() < self._down_until:
            return None
        read = confine.whole_file_reader(self.confined_to, expect)
        if read is None:
            return None
        base = "" if self.confined_to is not None or not self.root else self.root.rstrip("/") + "/"
        return os.fsencode(base), read

    def whole_files(self) -> tuple[int, bytes] | None:
        """For a local store, how the compiled chunk loop (:mod:`.chunkloop`) opens its files
        as :meth:`whole_reader` does: the directory descriptor they are opened below with
        ``openat2(RESOLVE_BENEATH)`` (-1: by their names as they are, a store not confined),
        and what goes before a key's bytes to name its file. None where whole_reader is."""
        if self.objects is not None or not isinstance(self.fs, LocalFileSystem):
            return None
        if time.monotonic() < self._down_until:
            return None
        if self.confined_to is not None:
            return (self.confined_to.fd(), b"") if confine.has_openat2() else None
        return -1, os.fsencode(self.root.rstrip("/") + "/" if self.root else "")

    def _result(self, req: ByteRequest, raw) -> Body | StoreError:
        """What one request gives: the asked bytes, None where the object is absent, or a
        StoreError naming it."""
        if not isinstance(raw, BaseException):
            return asked_bytes(req, raw, self.url)
        if self._is_absent(raw):
            return None
        if req.start is None and status(raw) == 416:  # bytes=0-: nothing to give, so empty
            return b""
        if isinstance(raw, StoreError):
            return raw
        err: StoreError
        if isinstance(raw, confine.OutsideRoot):
            err = self._error(f"refusing {req.key!r} of {self.url}: {raw}", req.key)
        elif is_forbidden(raw):
            err = self._error(
                f"cannot read {req.key!r} from {self.url}: access denied (403 Forbidden; a "
                f"store that lets you read objects but not list them also answers so for "
                f"objects that do not exist)",
                req.key,
                AccessDeniedError,
            )
        else:
            kind = StoreTimeoutError if is_stall(raw) else StoreError
            err = self._error(
                f"cannot read {req.key!r} from {self.url}: {describe(raw)}", req.key, kind
            )
        err.__cause__ = raw  # returned in the request's place, not raised: chained here
        return err

    def _read_sync(self, req: ByteRequest, expect: int = 0):
        """One object or range from a sync filesystem, retried while it fails transiently:
        its bytes, or the exception of the last attempt. ``expect``: a whole object's likely
        size at most (a local file is then read with no ``fstat``)."""
        root = self.confined_to
        try:  # a confined store opens the key itself, under its root: no path to build
            path = self.object_key(req.key) if root is not None else self.full_path(req.key)
        except StoreError as exc:
            return exc
        local = root is not None or isinstance(self.fs, LocalFileSystem)
        for attempt in itertools.count():
            try:
                if root is not None:
                    fd = confine.open_below(root, path)
                    return confine.read_local(path, req.start, req.end, fd, expect)
                if local:
                    return confine.read_local(path, req.start, req.end, expect=expect)
                return self.fs.cat_file(path, start=req.start, end=req.end)
            except Exception as exc:  # noqa: BLE001 - sorted out by stream()
                delay = retry_delay(req.key, exc, attempt)
                if delay is None:
                    return exc
                time.sleep(delay)

    def _arrive_async(
        self, requests: Sequence[ByteRequest], stop: Callable[[], bool] | None
    ) -> Iterator[list[tuple[int, object]]]:
        if self.objects is not None:
            start, loop, path = self.objects.start, None, self.object_key
            get = self.objects.get
        else:
            start, loop, path = store_async.fsspec_start(self.fs), self.fs.loop, self.full_path
            get = None
        return store_async.arrivals(loop, start, self.url, requests, path, stop, get)

    def _is_absent(self, exc: BaseException) -> bool:
        return is_absent(exc, self.protocols)

    # --------------------------------------------------------------- listings
    def _listing_error(self, prefix: str, exc: BaseException) -> StoreError:
        if is_forbidden(exc):
            return self._error(
                f"cannot list {prefix or '/'} in {self.url}: access denied (403 Forbidden); "
                "open its nodes by their paths instead",
                prefix,
                AccessDeniedError,
            )
        return self._error(f"cannot list {prefix or '/'} in {self.url}: {describe(exc)}", prefix)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(child directory names, child object names) directly under ``prefix``."""
        if self.objects is not None and self.objects.lists:
            prefix = prefix.strip("/")
            key = self.object_key(prefix) if prefix else ""
            try:
                return self.objects.list_dir(key)
            except Exception as exc:  # noqa: BLE001 - the transport's own errors
                raise self._listing_error(prefix, exc) from exc
        path = self.full_path(prefix.strip("/"))
        try:
            if self.confined_to is not None:
                confine.check_listed(path, self.confined_to)
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return [], []
        except Exception as exc:  # noqa: BLE001 - the transport's own errors
            raise self._listing_error(prefix, exc) from exc
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
        if self.objects is not None:
            return self.objects.lists
        return not {"http", "https"} & set(protocols(self.fs))

    def list_prefix_sizes(self, prefix: str) -> dict[str, int]:
        """Every object below ``prefix`` with its size (for stored-size summaries)."""
        if self.objects is not None and self.objects.lists:
            prefix = prefix.strip("/")
            try:
                return self.objects.find(self.object_key(prefix) if prefix else "")
            except Exception as exc:  # noqa: BLE001 - the transport's own errors
                raise self._listing_error(prefix, exc) from exc
        path = self.full_path(prefix.strip("/"))
        try:
            found = self.fs.find(path, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:  # noqa: BLE001 - the transport's own errors
            raise self._listing_error(prefix, exc) from exc
        base = self.root.rstrip("/") + "/" if self.root else ""
        return {
            name[len(base) :] if name.startswith(base) else name: int(info.get("size") or 0)
            for name, info in found.items()
        }


__all__ = ["ByteRequest", "Fetched", "Store", "url_below"]  # where the engine imports them from
