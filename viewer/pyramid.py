"""Find the resolution levels of an image: an OME-Zarr multiscale pyramid, or just the array.

The engine's ``multiscales(group)`` describes the pyramid; the viewer needs only each level's
array and its downsampling factor, which it takes from the level shapes (robust to missing or
approximate scale transforms). Runs in the background: opening the levels reads metadata.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import zarrfs.engine as engine

from . import label_alone
from .cf_display import CFView, describe
from .tiles import Level, level_factors

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pyramid:
    """What the image view shows: level 0 first, with the group that describes it (if any)."""

    node: object  # the array shown at level 0
    levels: list[Level]
    arrays: list
    group: object | None  # the OME-Zarr image group, or None
    axis_names: tuple[str, ...] = ()  # the array's dimension names, else its OME-Zarr axes
    image: object | None = None  # the engine's OME-Zarr ``Image`` (channels, defaults), if any
    cf: CFView | None = None  # what CF and xarray say about level 0 (values, axes, units)
    labelled: object | None = None  # for a label image: the ``Image`` it labels (its plane)

    @property
    def channels(self) -> tuple:
        """The engine's ``Channel`` of each index along the image's channel axis (``omero``'s,
        else a default palette); empty without one."""
        axis = self.image.channel_axis if self.image is not None else None
        if axis is None or axis >= len(self.levels[0].shape):
            return ()
        return self.image.channels(self.levels[0].shape[axis])


def dataset_paths(group) -> list[str]:
    """Paths of the first multiscale's datasets, finest first ([] if not an OME-Zarr image)."""
    try:
        scales = engine.multiscales(group)
    except engine.ZarrfsError:  # malformed OME metadata: shown as one array, not a pyramid
        logger.debug("multiscales(%s) failed", group.path, exc_info=True)
        return []
    return [dataset.path for dataset in scales[0].datasets] if scales else []


def _parent_path(path: str) -> str | None:
    if not path:
        return None
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _build(node, group, paths: list[str], image) -> Pyramid | None:
    arrays = []
    for path in paths:
        child = group[path]
        if child.kind != "array" or child.ndim != node.ndim:
            return None
        arrays.append(child)
    factors = level_factors([tuple(a.shape) for a in arrays])
    levels = [
        Level(path=a.path, shape=tuple(a.shape), chunks=tuple(a.chunks), factors=f)
        for a, f in zip(arrays, factors, strict=True)
    ]
    return Pyramid(
        node=arrays[0],
        levels=levels,
        arrays=arrays,
        group=group,
        axis_names=_axis_names(group, arrays[0]),
        image=image,
    )


def single(node) -> Pyramid:
    level = Level(
        path=node.path,
        shape=tuple(node.shape),
        chunks=tuple(node.chunks),
        factors=(1.0,) * node.ndim,
    )
    return Pyramid(
        node=node,
        levels=[level],
        arrays=[node],
        group=None,
        axis_names=tuple(node.dimension_names or ()),
    )


def _axis_names(group, node) -> tuple[str, ...]:
    """The array's own dimension names, else the axes of the OME-Zarr image it is a level of
    (a Zarr v2 array, as NGFF 0.4 writes them, has no dimension names of its own)."""
    own = tuple(node.dimension_names or ())
    if any(own):
        return own
    try:
        prefix = group.path + "/" if group.path else ""  # levels may be nested: scale0/image
        relative = node.path[len(prefix) :] if node.path.startswith(prefix) else node.name
        names = engine.axis_names_of_level(group, relative)
    except Exception:  # noqa: BLE001 - malformed OME metadata: plain labels, never a failure
        logger.debug("no OME axes for %s", node.path, exc_info=True)
        return own
    return tuple(names) if names and len(names) == node.ndim else own


def ome_image(group):
    """The engine's OME-Zarr ``Image`` of ``group``; None when it has none or its metadata
    cannot be used (the engine logs why; the pyramid still shows, without channel colours)."""
    try:
        return engine.image(group)
    except engine.ZarrfsError:
        logger.debug("no OME image for %s", group.path, exc_info=True)
        return None


def find_pyramid(root, node) -> Pyramid | None:
    """The pyramid to show for ``node``: an OME-Zarr group, an array inside one, or the array,
    with the CF view of the array shown (``Pyramid.cf``).

    Selecting a coarser level shows that level alone; level 0 (or the group) uses the pyramid.
    Returns ``None`` for a group that is not an OME-Zarr image.
    """
    found = _find_pyramid(root, node)
    if found is None:
        return None
    labelled = None
    if found.image is not None and found.image.image_label is not None:
        labelled = label_alone.labelled_image(root, found.group)
    return replace(found, cf=_cf_view(root, found.node), labelled=labelled)


def _cf_view(root, node) -> CFView | None:
    try:
        return describe(root, node)
    except Exception:  # noqa: BLE001 - a CF view that cannot be had never stops the picture
        logger.warning("no CF view of %s", node.path, exc_info=True)
        return None


def _find_pyramid(root, node) -> Pyramid | None:
    if node.kind == "group":
        paths = dataset_paths(node)
        return _build_safe(node, node, paths) if paths else None
    parent_path = _parent_path(node.path)
    if parent_path is not None and root is not None and root.kind == "group":
        parent = root[parent_path] if parent_path else root
        paths = dataset_paths(parent)
        if paths and paths[0] == node.name:
            pyramid = _build_safe(node, parent, paths)
            if pyramid is not None:
                return pyramid
        if node.name in paths:  # a coarser level, shown alone
            return replace(
                single(node), axis_names=_axis_names(parent, node), image=ome_image(parent)
            )
    return single(node)


def _build_safe(node, group, paths):
    try:
        image = ome_image(group)  # first: it fetches the metadata of every level at once
        first = group[paths[0]]
        return _build(first, group, paths, image)
    except Exception:
        logger.warning("cannot use the multiscales of %s", group.path, exc_info=True)
        return None


def image_group(root, node):
    """The OME-Zarr group ``node`` belongs to (for the info panel), or ``None``."""
    parent_path = _parent_path(node.path)
    if parent_path is None or root is None or root.kind != "group":
        return None
    try:
        parent = root[parent_path] if parent_path else root
    except Exception:
        return None
    return parent if dataset_paths(parent) else None
