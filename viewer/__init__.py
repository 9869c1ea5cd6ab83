"""The zarrfs desktop viewer (PySide6 + pyqtgraph) over the shared engine.

Installed as ``zarrfs.viewer`` (the repository keeps it in ``viewer/``). Importing this package
imports no Qt; ``zarrfs.viewer.app.run`` and ``zarrfs.viewer.cli`` do, lazily, so that
``zarrfs --help`` stays fast and works without the ``viewer`` extra.
"""
