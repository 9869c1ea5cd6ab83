"""Opening a URL: the node it names in a Zarr store, or in a version of an Icechunk repository.

A repository is opened as one where the caller says so (an ``icechunk://`` prefix, a version
asked for), where a local path holds one, and where a plain open finds no Zarr node but the URL
is at or below a repository's layout: a plain store costs nothing more (a stat when local), a
remote repository one round trip a level, the first time the process opens it.
"""

from __future__ import annotations

from . import icechunk_repo
from .errors import NodeNotFoundError
from .hierarchy import Array, Group
from .hierarchy import open as open_zarr


def open(  # noqa: A001
    url: str,
    *,
    consolidated: bool | None = None,
    follow_symlinks: bool = False,
    **storage_options,
) -> Group | Array:
    """Open the group or array at ``url`` (see the package docstring). ``follow_symlinks``: a
    local Zarr store's symlinks are followed wherever they lead."""
    url = str(url)
    if (
        icechunk_repo.wants_repository(url, storage_options)
        or icechunk_repo.is_local_repository(url)
        or icechunk_repo.known(url, storage_options)
    ):
        return icechunk_repo.open_url(url, consolidated, storage_options, required=True)
    try:
        return open_zarr(
            url, consolidated=consolidated, follow_symlinks=follow_symlinks, **storage_options
        )
    except NodeNotFoundError:
        found = icechunk_repo.open_url(url, consolidated, storage_options, required=False)
        if found is None:
            raise
        return found
