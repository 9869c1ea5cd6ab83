"""Reads from S3, Google Cloud Storage, Azure Blob Storage and HTTP(S) through obstore (the
Rust ``object_store`` crate): requests leave from Rust without the GIL, so the hundreds of
requests of a plane are all in flight at once even on a busy machine.

An :class:`Objects` is one obstore store rooted at the store's URL (its keys are the Zarr
keys) and says how one GET starts (``store_async`` keeps every request of a read in flight and
retries each on its own: obstore's own retries are off) and how a prefix is listed. obstore
answers a plain web server's listing with WebDAV, which such servers do not speak: HTTP stores
list through fsspec's HTML index pages (the store keeps an fsspec filesystem for that).

Options come from ``zarrfs.storage_options.obstore_options`` (fsspec's spellings translated);
zarrfs adds its timeouts (``ZARRFS_TIMEOUT`` for a request that gets no data), AWS profiles
and shared credential files (through botocore, which s3fs brings), and Azure's
``AZURE_STORAGE_*`` variables that object_store does not read itself.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import itertools
import logging
import os
import threading
import time
from collections.abc import Awaitable
from urllib.parse import unquote, urlsplit

from zarrfs.storage_options import (
    TRANSPORTS,
    StorageOptionError,
    azure_connection_string,
    obstore_options,
)

from .store_faults import RangeIgnored, describe, plain, retry_delay
from .store_request import ByteRequest
from .transport_defaults import timeout

log = logging.getLogger(__name__)

#: the obstore service of each protocol zarrfs reads through obstore
_SERVICES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "http": "http",
    "https": "http",
}
_AZURE_HOSTS = (".blob.core.windows.net", ".dfs.core.windows.net")
#: what each obstore store depends on in the environment (a new value: a new store)
_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_")
#: obstore stores by everything they were made from; emptied in a forked child, where the
#: parent's runtime and connections are gone
_SHARED: dict[str, object] = {}
_SHARED_LOCK = threading.Lock()
os.register_at_fork(after_in_child=_SHARED.clear)
#: the process whose requests started obstore's Rust runtime: a forked child inherits the
#: runtime without its threads, where a request would never be answered
_RUNTIME_PID: int | None = None
#: the end of the range that asks for a whole object (RFC 9110: an end past the object's
#: is its end)
_PAST_ANY_END = 2**62
#: a whole request may take this long (each read of it is bounded by ZARRFS_TIMEOUT instead):
#: a slow but healthy download completes
_WHOLE_REQUEST = datetime.timedelta(days=1)


def transport(options: dict) -> str:
    """The transport a store is read with: ``options["transport"]`` (taken out of them), else
    ``ZARRFS_TRANSPORT``, else obstore."""
    name = str(options.pop("transport", None) or os.environ.get("ZARRFS_TRANSPORT") or "obstore")
    if name not in TRANSPORTS:
        raise StorageOptionError(
            f"transport={name!r}: expected one of {', '.join(TRANSPORTS)} "
            "(-O transport=... or ZARRFS_TRANSPORT)"
        )
    return name


def available() -> bool:
    """Whether obstore is installed (it comes with the ``remote`` extra; without it, fsspec
    reads every store it can)."""
    return importlib.util.find_spec("obstore") is not None


def service(url: str) -> str | None:
    """The obstore service of a store URL (s3, gcs, azure, http), None where fsspec reads it
    (local paths, chains such as ``zip::``, other protocols)."""
    if "::" in url or "://" not in url:
        return None
    protocol = url.split("://", 1)[0].lower()
    kind = _SERVICES.get(protocol)
    if kind == "http" and (urlsplit(url).hostname or "").endswith(_AZURE_HOSTS):
        return "azure"
    return kind


class Objects:
    """One obstore store rooted at a store URL: GETs, and listings where the service lists.
    The obstore store (its client, its connection pool) is that of the bucket, container or
    web server, shared by every store of the process below it with the same options, as
    fsspec shares its filesystems: a new store reuses the connections the last one opened."""

    def __init__(self, store, service: str, prefix: str = ""):
        import obstore

        self._obs = obstore
        self.store = store
        self.service = service
        #: the path of the store's URL in the bucket, container or server ("" at its root)
        self.prefix = prefix
        #: whether the service lists (a plain web server lists through fsspec)
        self.lists = service != "http"
        #: whether the server answers Range requests (False once it was seen ignoring one)
        self.ranges = True

    @classmethod
    def open(cls, url: str, service: str, options: dict) -> Objects:
        """The store at ``url`` with fsspec-style ``options``."""
        base, prefix = _split(url, service)
        config, client, profile = obstore_options(service, options)
        environment = tuple(
            sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
        )
        identity = repr((service, base, config, client, profile, environment, timeout()))
        with _SHARED_LOCK:
            store = _SHARED.get(identity)
        if store is None:
            store = _new_store(base, service, config, client, profile)
            with _SHARED_LOCK:
                store = _SHARED.setdefault(identity, store)
        return cls(store, service, prefix)

    def key(self, key: str) -> str:
        """A key of the store as a path in the bucket, container or server."""
        if not self.prefix:
            return key
        return f"{self.prefix}/{key}" if key else self.prefix

    # ------------------------------------------------------------------ reads
    def start(self, key: str, req: ByteRequest) -> Awaitable:
        """One GET, started on the event loop's thread: an awaitable of its body. A whole
        object is asked as the range from 0 to far past any end (one future from Rust instead
        of two: the response, then its body); the object is empty where that is answered 416
        (the store's concern). A server that ignores ranges fails such a request once
        (:class:`~.store_faults.RangeIgnored`, retried at once): from then on its objects are
        read whole, and the store slices the ranges it asked."""
        _check_runtime()
        if self.prefix:
            key = f"{self.prefix}/{key}"
        if not self.ranges:
            return self._whole(key, req)
        if req.start is None or req.start >= 0:
            if req.end is not None and req.end <= req.start:
                return self._nothing()
            future = self._obs.get_range_async(
                self.store,
                key,
                start=req.start or 0,
                end=_PAST_ANY_END if req.end is None else req.end,
            )
        else:
            future = asyncio.ensure_future(self._suffix(key, -req.start))
        future.add_done_callback(self._ranges_ignored)
        return future

    def get(self, key: str, req: ByteRequest):
        """One GET on the calling thread, which waits for it without the GIL: its body, as
        :meth:`start` gives it (``store_async`` calls this on its request threads: the body
        reaches Python on the thread that waited for it, with no hop through the event
        loop). Not for suffix ranges (some services need two requests for one)."""
        _check_runtime()
        if self.prefix:
            key = f"{self.prefix}/{key}"
        if not self.ranges:
            return _sliced(self._obs.get(self.store, key).bytes(), req)
        if req.end is not None and req.end <= (req.start or 0):
            return b""
        end = _PAST_ANY_END if req.end is None else req.end
        try:
            return self._obs.get_range(self.store, key, start=req.start or 0, end=end)
        except Exception as exc:
            self._note_failure(exc)
            raise

    def _ranges_ignored(self, future: asyncio.Future) -> None:
        exc = None if future.cancelled() else future.exception()
        if exc is not None:
            self._note_failure(exc)

    def _note_failure(self, exc: BaseException) -> None:
        if isinstance(plain(exc), RangeIgnored):
            log.info("%s ignores Range requests: reading its objects whole", self.store)
            self.ranges = False

    async def _whole(self, key: str, req: ByteRequest):
        """The whole object, sliced as ``req`` asks (a server that ignores ranges)."""
        result = await self._obs.get_async(self.store, key)
        return _sliced(await result.bytes_async(), req)

    async def _suffix(self, key: str, length: int):
        if self.service == "azure":  # Blob Storage takes no suffix range: its size first
            size = (await self._obs.head_async(self.store, key))["size"]
            if size == 0:
                return b""
            start = max(0, size - length)
            return await self._obs.get_range_async(self.store, key, start=start, end=size)
        result = await self._obs.get_async(self.store, key, options={"range": {"suffix": length}})
        return await result.bytes_async()

    async def _nothing(self) -> bytes:
        return b""

    # --------------------------------------------------------------- listings
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(child prefixes, child objects) directly under ``prefix``, names only."""
        path = self.key(prefix)
        found = self._retried(
            prefix, lambda: self._obs.list_with_delimiter(self.store, path or None)
        )
        dirs = [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]
        files = [m["path"].rsplit("/", 1)[-1] for m in found["objects"]]
        return sorted(set(filter(None, dirs))), sorted(set(filter(None, files)))

    def find(self, prefix: str) -> dict[str, int]:
        """Every object below ``prefix`` (keys of this store) with its size."""

        path, cut = self.key(prefix), len(self.prefix) + 1 if self.prefix else 0

        def every() -> dict[str, int]:
            stream = self._obs.list(self.store, path or None, chunk_size=1000)
            return {m["path"][cut:]: int(m["size"]) for batch in stream for m in batch}

        return self._retried(prefix, every)

    def _retried(self, prefix: str, call):
        """``call()``, retried while it fails transiently; its last failure translated."""
        for attempt in itertools.count():
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 - obstore's own errors
                failure = plain(exc)
                delay = retry_delay(prefix or "/", failure, attempt)
                if delay is None:
                    if failure is exc:
                        raise
                    raise failure from exc
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _check_runtime() -> None:
    """Refuse requests in a forked child of a process whose requests started obstore's
    runtime (it inherited the runtime without its threads: nothing would answer)."""
    global _RUNTIME_PID
    if _RUNTIME_PID != os.getpid():
        if _RUNTIME_PID is not None:
            raise RuntimeError(
                "obstore's runtime was started before this process was forked; read "
                "remote stores in a process that did not inherit it (multiprocessing "
                "'spawn' or 'forkserver')"
            )
        _RUNTIME_PID = os.getpid()


def _sliced(data, req: ByteRequest):
    """What ``req`` asks of a whole object's body (a server that ignores ranges)."""
    if req.start is None:
        return data
    data = bytes(data)
    return data[req.start :] if req.start < 0 else data[req.start : req.end]


def forget_stores() -> None:
    """Drop the shared obstore stores (their connections close once no store uses them)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def _new_store(base: str, service: str, config: dict, client: dict, profile: str | None):
    """obstore's store of ``base`` (a bucket, container or web server), with zarrfs's
    timeouts, obstore's retries off, and the credentials of an AWS profile."""
    from obstore.store import from_url

    config = {**_environment(service), **config}
    credentials = None
    if service == "s3":
        credentials, region = _aws_profile(profile, config)
        if not (region or _endpoint(service, config) or _aws_region(config)):
            region = bucket_region(urlsplit(base).netloc)  # s3fs finds it too
        if region:
            config.setdefault("region", region)
    t = datetime.timedelta(seconds=timeout())
    client = {
        "connect_timeout": t,
        "read_timeout": t,
        "timeout": _WHOLE_REQUEST,
        "pool_idle_timeout": datetime.timedelta(seconds=60),
        **client,
    }
    if urlsplit(_endpoint(service, config) or base).scheme == "http":
        client.setdefault("allow_http", True)
    try:
        return from_url(
            base,
            config=config or None,
            client_options=client,
            retry_config={"max_retries": 0, "retry_timeout": _WHOLE_REQUEST},
            credential_provider=credentials,
        )
    except Exception as exc:
        if type(exc).__name__ == "UnknownConfigurationKeyError" or "Invalid key" in str(exc):
            raise StorageOptionError(
                f"{describe(exc)}; obstore's names for {service} stores, or fsspec's "
                "where zarrfs translates them, or -O transport=fsspec"
            ) from exc
        raise


def _split(url: str, service: str) -> tuple[str, str]:
    """``(base, prefix)``: the URL of the bucket, container or web server that obstore opens
    (``s3a``/``gcs`` as ``s3``/``gs``, adlfs' ``abfs://container/path`` as ``az://``), and
    the store's path inside it."""
    protocol, rest = url.split("://", 1)
    protocol = {"s3a": "s3", "gcs": "gs"}.get(protocol.lower(), protocol.lower())
    if service == "azure" and protocol in ("abfs", "abfss") and "@" not in rest.split("/")[0]:
        protocol = "az"
    parts = urlsplit(f"{protocol}://{rest}")
    origin, path = f"{protocol}://{parts.netloc}", unquote(parts.path).strip("/")
    if service == "azure" and protocol in ("http", "https"):  # the container is the path's first
        container, _, path = path.partition("/")
        origin = f"{origin}/{container}"
    return origin, path


def _endpoint(service: str, config: dict) -> str | None:
    """The endpoint the options or (S3) ``AWS_ENDPOINT_URL`` name, if any."""
    env = os.environ
    if service == "s3":
        return config.get("endpoint") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
    return config.get("endpoint")


#: where AWS tells any bucket's region (in a header, whatever the answer's status)
REGION_URL = "https://{bucket}.s3.amazonaws.com"


def _aws_region(config: dict) -> str | None:
    env = os.environ
    return config.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")


def bucket_region(bucket: str) -> str | None:
    """The region of an AWS bucket (one HEAD, as s3fs does on a redirect): object_store signs
    for us-east-1 unless told, and AWS refuses requests signed for another region than the
    bucket's. None when AWS cannot be asked (the reads then say what is wrong)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(REGION_URL.format(bucket=bucket), method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=min(timeout(), 10)) as answer:
            headers = answer.headers
    except urllib.error.HTTPError as exc:  # 403 and 301 name the region too
        headers = exc.headers
    except (OSError, ValueError) as exc:
        log.info("cannot ask AWS for the region of bucket %s: %s", bucket, exc)
        return None
    return headers.get("x-amz-bucket-region") if headers is not None else None


def _environment(service: str) -> dict[str, str]:
    """Azure's variables that object_store does not read itself: the connection string (the
    az CLI's and Azurite's), adlfs' ``AZURE_STORAGE_SAS_TOKEN``, the az CLI's
    ``AZURE_STORAGE_ACCOUNT`` and ``AZURE_STORAGE_KEY``; the options given win over them."""
    if service != "azure":
        return {}
    env = os.environ
    config: dict[str, str] = {}
    if env.get("AZURE_STORAGE_CONNECTION_STRING"):
        config.update(azure_connection_string(env["AZURE_STORAGE_CONNECTION_STRING"]))
    names = {
        "AZURE_STORAGE_ACCOUNT_NAME": "account_name",
        "AZURE_STORAGE_ACCOUNT": "account_name",
        "AZURE_STORAGE_ACCOUNT_KEY": "account_key",
        "AZURE_STORAGE_KEY": "account_key",
        "AZURE_STORAGE_SAS_TOKEN": "sas_key",
        "AZURE_STORAGE_SAS_KEY": "sas_key",
    }
    for name, key in names.items():
        if env.get(name):
            config.setdefault(key, env[name])
    if "sas_key" in config:
        config["sas_key"] = config["sas_key"].lstrip("?")
    return config


def _aws_profile(profile: str | None, config: dict):
    """An AWS profile's (or the shared credential files') credentials, through botocore, as
    obstore's credential provider; and the profile's region. None where object_store's own
    chain (keys in the options or ``AWS_*`` variables, web identity, instance metadata)
    serves."""
    explicit = {"access_key_id", "skip_signature"} & set(config)
    env = os.environ
    if explicit or (profile is None and "AWS_PROFILE" not in env and env.get("AWS_ACCESS_KEY_ID")):
        return None, None
    try:
        import botocore.session
    except ImportError:  # pragma: no cover - botocore comes with s3fs (the remote extra)
        return None, None
    session = botocore.session.Session(profile=profile)
    try:
        credentials = session.get_credentials()
        region = session.get_config_variable("region")
    except Exception as exc:  # noqa: BLE001 - botocore's ProfileNotFound and friends
        raise StorageOptionError(f"AWS profile {profile!r}: {exc}") from exc
    if credentials is None:
        if profile is not None:
            raise StorageOptionError(f"AWS profile {profile!r} has no credentials")
        return None, region
    return _BotocoreCredentials(credentials), region


class _BotocoreCredentials:
    """obstore's S3 credential provider over botocore's (refreshed a few minutes ahead)."""

    def __init__(self, credentials):
        self._credentials = credentials

    def __call__(self) -> dict:
        frozen = self._credentials.get_frozen_credentials()
        refreshes = hasattr(self._credentials, "refresh_needed")
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": (
                datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
                if refreshes
                else None
            ),
        }
