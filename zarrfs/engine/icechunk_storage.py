"""The engine's storage options (fsspec's names) as Icechunk's storage and credentials.

One rule set for the repository itself and for the containers its virtual chunks point into
(an S3 container the writer gave no endpoint takes the storage options' ``endpoint_url``; an
``http://`` container is allowed plain HTTP, which Icechunk's HTTP store refuses by default):
``anon``, ``key``/``secret``/``token``, ``endpoint_url`` (or ``client_kwargs.endpoint_url``),
``client_kwargs.region_name``/``region`` for S3; ``token`` (a service-account file) or ``anon``
for GCS; ``account_name``, ``account_key``, ``sas_token`` for Azure. Nothing given: the
environment's credentials, as fsspec would take them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .errors import UnsupportedError


def _s3_options(options: dict) -> dict[str, Any]:
    client = options.get("client_kwargs") or {}
    endpoint = options.get("endpoint_url") or client.get("endpoint_url")
    anon = bool(options.get("anon"))
    key, secret = options.get("key"), options.get("secret")
    return {
        "region": client.get("region_name") or options.get("region"),
        "endpoint_url": endpoint,
        "allow_http": bool(endpoint and endpoint.startswith("http:")),
        "force_path_style": bool(endpoint),
        "anonymous": anon or None,
        "access_key_id": key if not anon else None,
        "secret_access_key": secret if not anon else None,
        "session_token": options.get("token") if not anon else None,
        "from_env": None if anon or key else True,
    }


def _bucket_prefix(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.netloc, parts.path.strip("/")


def storage(ic, url: str, options: dict):
    """Icechunk's ``Storage`` for the repository at ``url``."""
    scheme = urlsplit(url).scheme if "://" in url else "file"
    if scheme == "file":
        return ic.local_filesystem_storage(url.removeprefix("file://"))
    bucket, prefix = _bucket_prefix(url)
    if scheme in ("s3", "s3a"):
        s3 = {k: v for k, v in _s3_options(options).items() if v is not None}
        return ic.s3_storage(bucket=bucket, prefix=prefix, **s3)
    if scheme in ("gs", "gcs"):
        anon = bool(options.get("anon") or options.get("token") == "anon")
        token = options.get("token")
        file = token if isinstance(token, str) and token != "anon" else None
        return ic.gcs_storage(
            bucket=bucket,
            prefix=prefix,
            anonymous=anon or None,
            service_account_file=file,
            from_env=None if anon or file else True,
        )
    if scheme in ("az", "abfs", "abfss"):
        return ic.azure_storage(
            account=options.get("account_name", ""),
            container=bucket,
            prefix=prefix,
            access_key=options.get("account_key"),
            sas_token=options.get("sas_token"),
            from_env=None if options.get("account_key") or options.get("sas_token") else True,
        )
    raise UnsupportedError(
        f"cannot open an Icechunk repository over {scheme}:// ({url}); Icechunk reads "
        "repositories on local disk, s3://, gs:// and az://",
        path=url,
    )


def reader_config(ic, url: str):
    """What this reader changes of a repository's config (None: nothing). On local disk, one
    read a chunk: Icechunk's local storage cuts every object past 4 KiB into up to 5 ranges
    read at once, which costs a plane of 64 chunks of 20 KiB 28 ms instead of 17 (load 8)."""
    if (urlsplit(url).scheme if "://" in url else "file") != "file":
        return None
    whole = ic.StorageConcurrencySettings(
        max_concurrent_requests_for_object=1, ideal_concurrent_request_size=1 << 40
    )
    return ic.RepositoryConfig(storage=ic.StorageSettings(concurrency=whole))


def container_credentials(ic, containers: dict, options: dict) -> dict[str, Any]:
    """Every virtual-chunk container of a repository, authorized (Icechunk reads no virtual
    chunk of a container not named here), with credentials from the same storage options:
    S3 containers get the S3 ones, others (local files, HTTP, GCS, Azure) those of their
    environment."""
    out: dict[str, Any] = {}
    for prefix in containers:
        if prefix.startswith(("s3://", "s3a://")):
            s3 = _s3_options(options)
            out[prefix] = ic.s3_credentials(
                access_key_id=s3["access_key_id"],
                secret_access_key=s3["secret_access_key"],
                session_token=s3["session_token"],
                anonymous=s3["anonymous"],
                from_env=s3["from_env"] if not s3["access_key_id"] else None,
            )
        else:
            out[prefix] = None
    return ic.containers_credentials(out)


def readable_containers(ic, containers: dict, options: dict) -> list | None:
    """The containers of a repository as this reader can reach them, where that differs from
    what the writer stored (else None): an ``http://`` container allowed plain HTTP (Icechunk's
    HTTP store refuses it unless told), an S3 container without an endpoint given the storage
    options' one (the same object store as the repository, as fsspec would reach it)."""
    out, changed = [], False
    endpoint = _s3_options(options)["endpoint_url"]
    for prefix, container in containers.items():
        store = container.store
        if isinstance(store, ic.ObjectStoreConfig.Http) and prefix.startswith("http://"):
            opts = dict(store[0] or {})
            if "allow_http" not in opts:
                store, changed = ic.http_store({**opts, "allow_http": "true"}), True
        elif (
            isinstance(store, ic.ObjectStoreConfig.S3 | ic.ObjectStoreConfig.S3Compatible)
            and endpoint
            and not store[0].endpoint_url
        ):
            s3 = store[0]
            store, changed = (
                ic.s3_store(
                    region=s3.region or _s3_options(options)["region"],
                    endpoint_url=endpoint,
                    allow_http=endpoint.startswith("http:"),
                    anonymous=s3.anonymous,
                    s3_compatible=True,
                    force_path_style=True,
                    network_stream_timeout_seconds=s3.network_stream_timeout_seconds,
                    requester_pays=s3.requester_pays,
                ),
                True,
            )
        out.append(ic.VirtualChunkContainer(prefix, store))
    return out if changed else None
