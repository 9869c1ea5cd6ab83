"""Store URLs: the URL of a node below a store's, and what an fsspec filesystem speaks."""

from __future__ import annotations

import fsspec
from fsspec.archive import AbstractArchiveFileSystem


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


def url_protocol(url: str) -> str:
    """The protocol of a URL's first link ("file" for a plain path)."""
    return url.split("://", 1)[0] if "://" in url.split("::")[0] else "file"


def protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    """The protocols a filesystem answers to (``("http", "https")``, ``("zip",)``...)."""
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _is_archive(protocol: str) -> bool:
    try:
        kind = fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError):
        return False
    return issubclass(kind, AbstractArchiveFileSystem)
