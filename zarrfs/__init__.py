"""zarrfs: look into Zarr data through a FUSE mount or a desktop viewer.

``zarrfs.open(url)`` is the engine's ``open``; everything else lives in ``zarrfs.engine``.
"""

from .engine import Array, Group, ZarrfsError, open

__version__ = "0.1.0"
__all__ = ["Array", "Group", "ZarrfsError", "open", "__version__"]
