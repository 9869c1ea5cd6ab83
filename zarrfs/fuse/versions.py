"""Versions as folders: a mounted Icechunk repository's other versions beside its hierarchy.

At the root of a mount of a repository (the chosen version's hierarchy, as for any store):

* ``@branches/<name>/`` and ``@tags/<name>/``: the hierarchy at each branch's tip, each tag;
* ``@snapshots/<time>_<id>/``: every snapshot a branch or tag reaches (the ancestry of every
  branch), named by its commit time (UTC, ISO 8601 basic, to the microsecond) so that ``ls``
  sorts them by time.

Each is the whole hierarchy as of that version, opened when first looked into (a listing of
``@snapshots/`` reads the history, no snapshot). Its ``info.txt`` says which version it is:
snapshot id, time, message, parent, and the branches and tags at it, then the root node's
summary as in any folder; so does the mount's own ``info.txt``, of the version mounted.
"""

from __future__ import annotations

from collections.abc import Callable

import zarrfs.engine as engine

from . import layout

BRANCHES_DIR = "@branches"
TAGS_DIR = "@tags"
SNAPSHOTS_DIR = "@snapshots"


def snapshot_dir_name(snapshot: engine.Snapshot) -> str:
    """``20261127T095741.774722Z_<id>``: sorts by time as text."""
    return f"{snapshot.written_at.strftime('%Y%m%dT%H%M%S.%fZ')}_{snapshot.id}"


def ref_dir_name(name: str) -> str:
    """A branch or tag name as one path component (a ``/`` in it is ``%2F``)."""
    return name.replace("%", "%25").replace("/", "%2F")


def version_text(repo: engine.Repository, version: engine.Version) -> str:
    """The lines of a version folder's ``info.txt`` that say which version it is."""
    snap = repo.snapshot(version.snapshot_id)
    refs = repo.refs_at().get(snap.id, [])
    lines = [
        f"version       {version.label}",
        f"snapshot      {snap.id}",
        f"time          {snap.written_at.strftime('%Y-%m-%d %H:%M:%S.%f UTC')}",
        f"message       {' '.join(snap.message.split())}",
        f"parent        {snap.parent_id or '(none: the first snapshot)'}",
        f"refs          {', '.join(refs) or '(none)'}",
        f"repository    {repo.url}",
    ]
    return "\n".join(lines) + "\n\n"


def shown_version_text(root) -> Callable[[], str] | None:
    """For a root node from a repository, what its ``info.txt`` starts with (else None)."""
    found = engine.version_of(root)
    if found is None:
        return None
    repo, version = found
    return lambda: version_text(repo, version)


def version_folders(root, build_version, directory) -> dict:
    """The ``@`` folders of a mount whose root node came from a repository (else none).
    ``build_version(open_root, preface)`` makes a version's folder: ``open_root()`` its root
    node, ``preface()`` the text its ``info.txt`` starts with; ``directory(build)`` a folder
    whose entries ``build()`` makes on first use."""
    found = engine.version_of(root)
    if found is None:
        return {}
    repo = found[0]

    def folder(**version):
        def preface() -> str:
            return version_text(repo, repo.resolve(**version))

        return build_version(lambda: repo.open(**version), preface)

    return {
        BRANCHES_DIR: directory(
            lambda: {ref_dir_name(n): folder(branch=n) for n in repo.branches()}
        ),
        TAGS_DIR: directory(lambda: {ref_dir_name(n): folder(tag=n) for n in repo.tags()}),
        SNAPSHOTS_DIR: directory(
            lambda: {
                snapshot_dir_name(s): folder(snapshot=s.id)
                for s in sorted(repo.history(), key=lambda s: (s.written_at, s.id))
            }
        ),
    }


def add_to(entries: dict, folders: dict) -> dict:
    """``entries`` with the version folders, under names no child takes."""
    for name, folder in folders.items():
        entries[layout.unique_name(name, entries)] = folder
    return entries
