"""Children a store cannot list, named by a convention's metadata: the hierarchy's plug-ins.

A web server without directory pages, S3 over HTTPS, or S3 without ListBucket cannot list a
group, yet its nodes open by their paths. A convention whose metadata names a group's children
(OME-Zarr's pyramid levels, labels, plate wells, bioformats2raw series) lets such a group show
them all the same; the hierarchy checks that each one's documents are there before showing it.

A declarer is ``declare(path, attributes) -> names``: the names of the children of the node at
``path`` that the metadata known so far declares, where ``attributes(p)`` is the attributes of
the node at ``p`` (None where it is not known yet). It is pure; the hierarchy asks it again
after fetching the children it named, whose own metadata may name more. The hierarchy knows no
convention: every declarer is listed here, in :data:`DECLARERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import ome

Declarer = Callable[[str, Callable[[str], dict | None]], Iterable[str]]

DECLARERS: tuple[Declarer, ...] = (ome.declared_children,)
