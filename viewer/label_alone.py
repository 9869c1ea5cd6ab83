"""A label image opened on its own (``--node image.zarr/labels/nuclei``): drawn as labels, each
id in its ``image-label`` colour or a stable random one, 0 transparent (``labels_overlay``, at
full opacity), never as grey ids under automatic contrast; and at the default plane of the
image it labels (``omero`` ``defaultZ``/``defaultT`` of the group two levels up, OME-Zarr's
``labels/<name>`` layout), since its own first plane is often empty.
"""

from __future__ import annotations

import logging

import numpy as np

import zarrfs.engine as engine

logger = logging.getLogger(__name__)


def is_label_image(image, dtype) -> bool:
    """``image`` (an engine ``Image``) is a label image of integer ids."""
    return image is not None and image.image_label is not None and np.dtype(dtype).kind in "iu"


def labelled_image(root, group):
    """The engine ``Image`` that the label image ``group`` labels (``<image>/labels/<name>``),
    or None (blocking: metadata reads; run it in the background)."""
    parts = group.path.split("/") if group is not None else []
    if len(parts) < 2 or parts[-2] != "labels" or root is None or root.kind != "group":
        return None
    path = "/".join(parts[:-2])
    try:
        return engine.image(root[path] if path else root)
    except engine.ZarrfsError:  # no image above: the label image keeps its own first plane
        logger.debug("no image labelled by %s", group.path, exc_info=True)
        return None


def source(group, node, image):
    """The array on screen as its own label overlay (every axis its own), named after its
    label group."""
    name = group.path.rsplit("/", 1)[-1] if group is not None and group.path else node.name
    # (imported here: this module is imported by the store's early open, on a thread of its
    # own, and labels_overlay imports pyqtgraph, whose import there deadlocked with the GUI
    # thread making the QApplication)
    from .labels_overlay import LabelSource

    return LabelSource(name, node, tuple(range(node.ndim)), image.image_label)
