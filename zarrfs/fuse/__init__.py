"""The read-only FUSE mount: a Zarr hierarchy as a folder of ordinary files.

``tree`` builds a virtual tree (directories and files with exact sizes and ``read(offset, size)``)
over ``zarrfs.engine`` nodes; ``operations`` is a thin FUSE layer over it; ``daemon`` mounts;
``cli`` adds the ``mount`` / ``unmount`` subcommands. Importing this package does not load libfuse.
"""
