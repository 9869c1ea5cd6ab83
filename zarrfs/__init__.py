"""zarrfs: look into Zarr data through a FUSE mount or a desktop viewer."""

__version__ = "0.1.0"

