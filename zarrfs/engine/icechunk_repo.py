"""Icechunk repositories: versions of a Zarr hierarchy (snapshots, branches, tags).

An Icechunk repository (``refs/``, ``snapshots/``, ``manifests/``: not a Zarr store) holds
snapshots of a Zarr hierarchy; a branch names a moving tip, a tag a fixed snapshot. A
:class:`Repository` is one opened repository: its refs, the ancestry of its branches, the chunks
that changed between two snapshots, and any version opened as the engine's ``Group``/``Array``
(through Icechunk's own read-only store, ``icechunk_store``).

A repository is found at any URL the engine takes: with an ``icechunk://`` prefix, or where a
plain open finds no Zarr node but the repository's layout (``refs/branch.main/ref.json``). The
version is chosen by the storage options ``branch``, ``tag`` or ``snapshot`` (default: the
branch ``main``). Storage options for the object store (``anon``, ``key``/``secret``/``token``,
``endpoint_url``, ``client_kwargs.region_name``; GCS ``token``; Azure ``account_name``,
``account_key``, ``sas_token``) become Icechunk's, and are the credentials of the containers its
virtual chunks point into (``icechunk_storage``).

Icechunk is optional (``zarrfs[icechunk]``): without it a repository is a one-line error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import icechunk_storage
from .errors import NodeNotFoundError, StoreError, UnsupportedError, ZarrfsError
from .hierarchy import open_store
from .icechunk_layout import ChunkLayout
from .icechunk_store import SessionFileSystem, VersionStore, reason
from .store import Store
from .store_urls import url_protocol

log = logging.getLogger(__name__)

PREFIX = "icechunk://"
#: the object every Icechunk repository has (its default branch's ref)
MARKER = "refs/branch.main/ref.json"
VERSION_OPTIONS = ("branch", "tag", "snapshot")
DEFAULT_BRANCH = "main"
#: Icechunk's words for a ref, snapshot or repository that is not there
_ABSENT = ("not found", "doesn't exist", "No such file", "NoSuchKey", "invalid snapshot id")
_MAX_DEPTH = 8
_KEPT_SESSIONS = 16  # snapshots' sessions a repository keeps open
_KEPT_REPOSITORIES = 8  # repositories the process keeps open (by URL and storage options)
_opened: dict[str, Repository] = {}
_opened_lock = threading.Lock()  # levels above a node's URL searched for its repository
INSTALL_HINT = "pip install 'zarrfs[icechunk]'"
#: a snapshot id as a ref file names it (12 bytes in Crockford's base32)
_SNAPSHOT_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{20}")


@dataclass(frozen=True)
class Snapshot:
    """One commit: ``id``, ``parent_id`` (None for the first), ``written_at`` (UTC),
    ``message``, ``metadata`` (the writer's commit properties)."""

    id: str
    parent_id: str | None
    written_at: datetime
    message: str
    metadata: dict


@dataclass(frozen=True)
class Version:
    """What a store shows: ``kind`` ("branch" | "tag" | "snapshot"), ``name`` (the branch or
    tag name, or the snapshot id) and the ``snapshot_id`` it resolved to."""

    kind: str
    name: str
    snapshot_id: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


def _icechunk(url: str):
    try:
        import icechunk
    except ImportError as exc:
        raise UnsupportedError(
            f"{url} is an Icechunk repository; reading it needs Icechunk: {INSTALL_HINT}",
            path=url,
        ) from exc
    icechunk.set_logs_filter("error")  # not its warnings about local commits on every open
    return icechunk


def wants_repository(url: str, storage_options: dict) -> bool:
    """Whether an open is of a repository whatever the URL's layout: the ``icechunk://``
    prefix, or a version asked for."""
    return url.startswith(PREFIX) or any(k in storage_options for k in VERSION_OPTIONS)


def pop_version(storage_options: dict) -> dict:
    """The version options (``branch``/``tag``/``snapshot``) taken out of storage options."""
    return {k: storage_options.pop(k) for k in VERSION_OPTIONS if k in storage_options}


class Repository:
    """An opened Icechunk repository at ``url``. Thread-safe; its versions open lazily."""

    def __init__(self, url: str, **storage_options):
        self.url = url[len(PREFIX) :] if url.startswith(PREFIX) else url
        self.storage_options = storage_options
        ic = _icechunk(self.url)
        storage = icechunk_storage.storage(ic, self.url, self.storage_options)
        config = icechunk_storage.reader_config(ic, self.url)
        self._objects = _objects(self.url, storage_options)
        #: a branch's tip read from its ref file directly (spec 1: ``refs/branch.NAME/ref.json``),
        #: where the installed Icechunk writes spec 1 only (so the repository it opened is)
        self._direct_refs = self._objects is not None and getattr(ic, "spec_version", int)() == 1
        try:
            self._repo = ic.Repository.open(storage, config=config)
            containers = self._repo.config.virtual_chunk_containers or {}
            self.virtual = bool(containers)
            if containers:  # Icechunk reads no virtual chunk of a container not authorized
                authorized = icechunk_storage.container_credentials(
                    ic, containers, self.storage_options
                )
                readable = icechunk_storage.readable_containers(ic, containers, storage_options)
                if readable is not None:  # replaces the stored containers for this reader
                    config = config or ic.RepositoryConfig()
                    for container in readable:
                        config.set_virtual_chunk_container(container)
                self._repo = ic.Repository.open(
                    storage, config=config, authorize_virtual_chunk_access=authorized
                )
        except Exception as exc:  # noqa: BLE001 - IcechunkError: Icechunk's one class
            raise self._error(f"cannot open the Icechunk repository {self.url}", exc) from exc
        self._lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self._sessions: dict[str, SessionFileSystem] = {}  # snapshot id -> its store, oldest first

    def _error(self, what: str, exc: BaseException):
        """The engine's error for Icechunk's ``exc`` while doing ``what`` (``"no branch 'x'"``
        for a lookup: said so only when Icechunk says it is not there)."""
        text = reason(exc)
        absent = any(words in text for words in _ABSENT)
        kind: type[ZarrfsError] = NodeNotFoundError if absent else StoreError
        if "version" in text and any(w in text for w in ("newer", "modern", "unsupported")):
            kind = UnsupportedError
            text += " (written by a newer Icechunk? upgrade it: pip install -U icechunk)"
        if kind is not NodeNotFoundError and what.startswith("no "):
            what = "cannot read " + what[3:]
        return kind(f"{what}: {text}", path=self.url, store_url=self.url)

    def _call(self, what: str, fn: Callable[[], Any]):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - IcechunkError: Icechunk's one class
            raise self._error(what, exc) from exc

    # ------------------------------------------------------------------ refs
    def branches(self) -> dict[str, str]:
        """Branch name -> the snapshot id at its tip, sorted by name."""
        names = self._call("cannot list branches", self._repo.list_branches)
        return {n: self._branch_tip(n, f"no branch {n!r}") for n in sorted(names)}

    def _branch_tip(self, name: str, what: str) -> str:
        """The snapshot id a branch points at: read from its ref file (a branch moves: read
        anew every time; one small read, where Icechunk's lookup crosses into its runtime and
        back, 0.1-7 ms as its threads are awake or not), else Icechunk's answer (a ref file
        absent or not as spec 1 writes it: Icechunk says what is wrong)."""
        if self._direct_refs and "/" not in name and name.strip("."):
            try:
                data = self._objects.get(f"refs/branch.{name}/ref.json")  # type: ignore[union-attr]
                sid = json.loads(bytes(data))["snapshot"] if data is not None else None
            except (ZarrfsError, ValueError, TypeError, KeyError) as exc:
                log.info("%s: branch %r read through Icechunk (%s)", self.url, name, exc)
                sid = None
            if isinstance(sid, str) and _SNAPSHOT_ID.fullmatch(sid):
                return sid
        return self._call(what, lambda: self._repo.lookup_branch(name))

    def tags(self) -> dict[str, str]:
        """Tag name -> its snapshot id, sorted by name."""
        names = self._call("cannot list tags", self._repo.list_tags)
        return {
            n: self._call(f"no tag {n!r}", lambda n=n: self._repo.lookup_tag(n))
            for n in sorted(names)
        }

    def resolve(
        self, branch: str | None = None, tag: str | None = None, snapshot: str | None = None
    ) -> Version:
        """The version asked for (at most one of the three; none: the branch ``main``)."""
        asked = [(k, v) for k, v in (("branch", branch), ("tag", tag), ("snapshot", snapshot)) if v]
        if len(asked) > 1:
            raise UnsupportedError(
                "choose one version: a branch, a tag or a snapshot, not "
                + " and ".join(k for k, _ in asked),
                path=self.url,
            )
        kind, name = asked[0] if asked else ("branch", DEFAULT_BRANCH)
        if kind == "branch":
            sid = self._branch_tip(name, f"no branch {name!r} in {self.url}")
        elif kind == "tag":
            sid = self._call(f"no tag {name!r} in {self.url}", lambda: self._repo.lookup_tag(name))
        else:
            sid = self.snapshot(name).id
        return Version(kind, str(name), sid)

    # -------------------------------------------------------------- history
    def snapshot(self, snapshot_id: str) -> Snapshot:
        """One snapshot's commit (NodeNotFoundError when there is none by that id)."""
        with self._lock:
            known = self._snapshots.get(snapshot_id)
        if known is not None:
            return known
        info = self._call(
            f"no snapshot {snapshot_id!r} in {self.url}",
            lambda: self._repo.lookup_snapshot(snapshot_id),
        )
        return self._keep(info)

    def _keep(self, info) -> Snapshot:
        snap = Snapshot(
            id=info.id,
            parent_id=info.parent_id,
            written_at=info.written_at,
            message=info.message or "",
            metadata=dict(info.metadata or {}),
        )
        with self._lock:
            self._snapshots[snap.id] = snap
        return snap

    def ancestry(
        self, branch: str | None = None, tag: str | None = None, snapshot: str | None = None
    ) -> list[Snapshot]:
        """A version's snapshot and its ancestors, newest first."""
        version = self.resolve(branch, tag, snapshot)
        infos = self._call(
            f"cannot read the history of {version.label}",
            lambda: list(self._repo.ancestry(snapshot_id=version.snapshot_id)),
        )
        return [self._keep(i) for i in infos]

    def history(self) -> list[Snapshot]:
        """Every snapshot some branch or tag reaches, newest first (ancestries merged)."""
        seen: dict[str, Snapshot] = {}
        tips = {*self.branches().values(), *self.tags().values()}
        for tip in sorted(tips):
            if tip in seen:
                continue
            for snap in self.ancestry(snapshot=tip):
                if snap.id in seen:
                    break  # the rest of this line is known already
                seen[snap.id] = snap
        return sorted(seen.values(), key=lambda s: (s.written_at, s.id), reverse=True)

    def refs_at(self) -> dict[str, list[str]]:
        """Snapshot id -> the refs pointing at it (``branch main``, ``tag v1``)."""
        out: dict[str, list[str]] = {}
        for kind, refs in (("branch", self.branches()), ("tag", self.tags())):
            for name, sid in refs.items():
                out.setdefault(sid, []).append(f"{kind} {name}")
        return out

    def changed_chunks(
        self, node_path: str, from_snapshot: str, to_snapshot: str
    ) -> set[tuple[int, ...]]:
        """Chunk coordinates (of stored chunks: shards when sharded) of the array at
        ``node_path`` written between two snapshots, in either order: Icechunk's diff (from
        its transaction logs) from their last common ancestor to each."""
        if from_snapshot == to_snapshot:
            return set()
        older = [s.id for s in self.ancestry(snapshot=from_snapshot)]
        newer = {s.id for s in self.ancestry(snapshot=to_snapshot)}
        common = next((sid for sid in older if sid in newer), None)
        if common is None:
            raise UnsupportedError(
                f"snapshots {from_snapshot} and {to_snapshot} of {self.url} share no ancestor",
                path=self.url,
            )
        key = "/" + node_path.strip("/")
        out: set[tuple[int, ...]] = set()
        for tip in {from_snapshot, to_snapshot} - {common}:
            diff = self._call(
                f"cannot compare {common} with {tip}",
                lambda tip=tip: self._repo.diff(from_snapshot_id=common, to_snapshot_id=tip),
            )
            out |= {tuple(int(i) for i in c) for c in diff.updated_chunks.get(key, ())}
        return out

    # --------------------------------------------------------------- opening
    def store(self, version: Version) -> VersionStore:
        """The engine's store over one version."""
        sid = version.snapshot_id
        with self._lock:
            fs = self._sessions.get(sid)
        if fs is None:  # a snapshot never changes: its session (manifests read) is kept
            # read first on its own: Icechunk (1.1) gives a session over a snapshot it cannot
            # read (a newer format) whose every key is absent, which would read as no node
            self.snapshot(sid)
            session = self._call(
                f"cannot open {version.label} of {self.url}",
                lambda: self._repo.readonly_session(snapshot_id=sid),
            )
            fs = SessionFileSystem(session.store, batched=not self.virtual)
            if self._objects is not None:  # its documents and native chunks read directly
                fs.layout = ChunkLayout(self._objects.get, sid)
            with self._lock:
                self._sessions[sid] = fs
                while len(self._sessions) > _KEPT_SESSIONS:
                    self._sessions.pop(next(iter(self._sessions)))
        return VersionStore(
            fs=fs,
            root="",
            url=f"{self.url}@{sid}",
            repository=self,
            version=version,
            layout=fs.layout,
            repo_store=self._objects,
        )

    def open(
        self,
        branch: str | None = None,
        tag: str | None = None,
        snapshot: str | None = None,
        *,
        consolidated: bool | None = None,
    ):
        """The root node of a version (default: the branch ``main``)."""
        return open_store(self.store(self.resolve(branch, tag, snapshot)), consolidated)


def _objects(url: str, storage_options: dict) -> Store | None:
    """The engine's own store of a repository's objects (its snapshots, manifests and chunks
    are read through it: ``icechunk_layout``), or None where it has none (Icechunk reads
    everything then)."""
    if url_protocol(url) not in ("file", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"):
        return None
    try:
        return Store.from_url(url, **storage_options)
    except ZarrfsError as exc:
        log.info("%s: chunks read through Icechunk (%s)", url, exc)
        return None


def _is_repository(url: str, storage_options: dict) -> bool:
    """Whether ``url`` holds a repository's layout (one GET; no answer is a no)."""
    try:
        return Store.from_url(url, **storage_options).get(MARKER) is not None
    except ZarrfsError:
        return False


def _key(url: str, storage_options: dict) -> str:
    return url + "\0" + json.dumps(storage_options, sort_keys=True, default=str)


def known(url: str, storage_options: dict) -> bool:
    """Whether this process opened a repository at or above ``url`` already (so no plain
    open first)."""
    return _known_location(url, storage_options) is not None


def _known_location(url: str, storage_options: dict) -> tuple[str, str] | None:
    """``(repository URL, node path)`` of a URL at or below a repository this process opened
    with the same storage options (no request: a script's every open of a repository it
    opened before), or None."""
    options = {k: v for k, v in storage_options.items() if k not in VERSION_OPTIONS}
    base, below = url.rstrip("/") or url, list[str]()
    with _opened_lock:
        for _ in range(_MAX_DEPTH):
            if _key(base, options) in _opened:
                return base, "/".join(reversed(below))
            head, sep, name = base.rpartition("/")
            if not sep or not head:
                return None
            below.append(name)
            base = head
    return None


def opened(url: str, storage_options: dict) -> Repository:
    """The repository at ``url``, opened once per process (as fsspec keeps its filesystems):
    its config read once, its snapshots' sessions kept. Refs are read anew on every open, so
    a branch that moved opens at its new tip."""
    key = _key(url, storage_options)
    with _opened_lock:
        repo = _opened.pop(key, None)
        if repo is not None:
            _opened[key] = repo  # most recently used last
            return repo
    repo = Repository(url, **storage_options)
    with _opened_lock:
        _opened[key] = repo
        while len(_opened) > _KEPT_REPOSITORIES:
            _opened.pop(next(iter(_opened)))
    return repo


def is_local_repository(url: str) -> bool:
    """Whether ``url`` is a local path holding a repository (a stat: asked before a plain open
    would list the repository's folders looking for Zarr nodes)."""
    if url_protocol(url) != "file" or "::" in url:
        return False
    return os.path.isfile(os.path.join(url.removeprefix("file://"), *MARKER.split("/")))


def locate(url: str, storage_options: dict) -> tuple[str, str] | None:
    """``(repository URL, node path inside it)`` for a URL at or below a repository (the
    URL names a node, as for any store: ``s3://b/repo/group/array``), or None. One GET a
    level, at most ``_MAX_DEPTH`` levels up; only asked where a plain open found nothing."""
    base, below = url.rstrip("/") or url, list[str]()
    for _ in range(_MAX_DEPTH):
        if _is_repository(base, storage_options):
            return base, "/".join(reversed(below))
        head, sep, name = base.rpartition("/")
        if not sep or not head or head.endswith((":", ":/")) or "::" in base:
            return None
        below.append(name)
        base = head
    return None


def open_url(url: str, consolidated: bool | None, storage_options: dict, *, required: bool):
    """The node a URL names at or below a repository, at the version its options ask for;
    None where there is no repository and none was ``required``."""
    options = dict(storage_options)
    version = pop_version(options)
    bare = url[len(PREFIX) :] if url.startswith(PREFIX) else url
    found = _known_location(bare, options) or locate(bare, options)
    if found is None:
        if not required:
            return None
        raise NodeNotFoundError(
            f"no Icechunk repository at {bare} (nor above it): no {MARKER}", path=bare
        )
    repo_url, node_path = found
    root = opened(repo_url, options).open(**version, consolidated=consolidated)
    return root[node_path] if node_path else root


def version_of(node) -> tuple[Repository, Version] | None:
    """The repository and version a node was opened from, or None (a plain Zarr store)."""
    hierarchy = getattr(node, "_hierarchy", None)  # (a stand-in node has none)
    store = getattr(hierarchy, "store", None)
    if isinstance(store, VersionStore):
        return store.repository, store.version
    return None
