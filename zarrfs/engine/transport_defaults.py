"""The options zarrfs gives each fsspec transport before the user's: timeouts that bound a
stalled server (``ZARRFS_TIMEOUT``), a connection pool large enough for a plane of small chunks,
one GET per S3 object; the user's options are merged into these key by key, not put in their
place."""

from __future__ import annotations

import os

#: tries s3fs makes of its own (a class attribute, 5 by default): once more is enough
S3FS_TRIES = 2
#: concurrent connections per HTTP client: a plane of small chunks is hundreds of requests,
#: and aiohttp's default of 100 would split them into several round trips
_HTTP_CONNECTIONS = 512


def timeout() -> float:
    """Seconds a request may take before it fails (a stalled server must not hang a read)."""
    try:
        return float(os.environ.get("ZARRFS_TIMEOUT", "30"))
    except ValueError:
        return 30.0


async def _http_client(**kwargs):
    """fsspec's ``get_client`` hook: an aiohttp session with a large connection pool."""
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=_HTTP_CONNECTIONS), **kwargs)


def default_options(protocol: str) -> dict:
    """zarrfs's storage options for ``protocol`` (empty where it has none)."""
    if protocol in ("http", "https"):
        try:
            import aiohttp
        except ImportError:  # pragma: no cover - aiohttp comes with the remote extra
            return {}
        t = timeout()
        # sock_read bounds a stall; no total limit, so a slow but healthy download completes
        client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=t, sock_read=t)
        return {"client_kwargs": {"timeout": client_timeout}, "get_client": _http_client}
    if protocol in ("s3", "s3a"):
        t = timeout()
        # one GET per object: with max_concurrency > 1, s3fs asks for every whole object's
        # size first (a HEAD, and a LIST when it is missing); botocore does not retry on its
        # own (s3fs and the store do)
        return {
            "max_concurrency": 1,
            "config_kwargs": {
                "connect_timeout": t,
                "read_timeout": t,
                "retries": {"max_attempts": 1},
            },
        }
    return {}


def merged(defaults: dict, given: dict) -> dict:
    """``given`` over ``defaults``, nested dicts merged key by key (a user's
    ``client_kwargs.headers`` must not drop the default timeout)."""
    out = dict(defaults)
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = merged(out[key], value)
        out[key] = value
    return out
