"""What the loopback HTTP server serves: a directory, a dict, a generator, or layers of these.

A source answers ``get(key) -> bytes | None`` (None: 404) and ``list_dir(key) -> names | None``
(names end in "/" for subdirectories; None: not a directory), which is all a static web server
or an object store needs to answer GET, HEAD and an HTML index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path


class DirSource:
    """Files under ``root``; keys are '/'-separated paths relative to it."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    def _resolve(self, key: str) -> Path | None:
        path = (self.root / key).resolve()
        return path if path == self.root or self.root in path.parents else None

    def get(self, key: str) -> bytes | None:
        path = self._resolve(key)
        return path.read_bytes() if path is not None and path.is_file() else None

    def list_dir(self, key: str) -> list[str] | None:
        path = self._resolve(key)
        if path is None or not path.is_dir():
            return None
        return sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())


class DictSource:
    """An in-memory mapping of key -> bytes; directories are implied by '/' in keys."""

    def __init__(self, objects: Mapping[str, bytes]):
        self.objects = objects

    def get(self, key: str) -> bytes | None:
        value = self.objects.get(key)
        return bytes(value) if value is not None else None

    def list_dir(self, key: str) -> list[str] | None:
        prefix = key.strip("/") + "/" if key.strip("/") else ""
        names = set()
        for k in list(self.objects):
            if k.startswith(prefix) and len(k) > len(prefix):
                head, sep, _ = k[len(prefix) :].partition("/")
                names.add(head + sep)
        return sorted(names) if names else None


class CallableSource:
    """Objects produced on request by ``generate(key)`` (None means 404); no listings."""

    def __init__(self, generate: Callable[[str], bytes | None]):
        self.generate = generate

    def get(self, key: str) -> bytes | None:
        return self.generate(key)

    def list_dir(self, key: str) -> list[str] | None:
        return None


class LayeredSource:
    """Several sources consulted in order: e.g. fixed metadata documents over a chunk generator."""

    def __init__(self, layers: Iterable[object]):
        self.layers = [make_source(layer) for layer in layers]

    def get(self, key: str) -> bytes | None:
        for layer in self.layers:
            value = layer.get(key)
            if value is not None:
                return value
        return None

    def list_dir(self, key: str) -> list[str] | None:
        listings = [layer.list_dir(key) for layer in self.layers]
        found = [names for names in listings if names is not None]
        return sorted(set().union(*found)) if found else None


def make_source(source: object):
    """Wrap a directory path, a mapping, a callable or a list of those as a source."""
    if hasattr(source, "get") and hasattr(source, "list_dir"):
        return source
    if isinstance(source, str | Path):
        return DirSource(source)
    if isinstance(source, Mapping):
        return DictSource(source)
    if callable(source):
        return CallableSource(source)
    if isinstance(source, list | tuple):
        return LayeredSource(source)
    raise TypeError(f"cannot serve {type(source).__name__}: give a path, dict, callable or list")
